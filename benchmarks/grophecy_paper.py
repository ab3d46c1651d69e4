"""GROPHECY's results next to the paper's (shared/seeds/004, §9); writes
data/grophecy/paper.json, which scripts/results.py turns into docs/results.md's
"GROPHECY" section.

For each of the paper's skeletons (examples/skeletons) on the FX5600 and the C1060
(GROPHECY's Table 5, packaged hardware files), and on the H100 and H200 (kernelcast's
measured hardware files):

- the whole layout space is searched without hints (and, for IspinEx, with the paper's
  hint, a folding of 132 along j, §9.3), timed on this machine; its size is recorded next
  to the paper's;
- the layout the paper names (its Table/figure captions: MatMul Stage+LoopUnroll 16 x 16,
  stage 16; HotSpot ShM+Fold 2 x 4; IspinEx R.Blk-64/256+Stage; SpinFlap 1 x 256, 1 x 32
  folded 44 x 1) is projected; the projected GFLOP/s (the skeleton's FLOPS macro over the
  projected time) are compared with the paper's measured GFLOP/s of that layout:
  deviation = |projected / measured − 1|;
- MatMul without unrolling, and IspinEx's uncoalesced instructions per thread and
  projected gain from Listing 4 to Listing 5.

Run:  .venv/bin/python benchmarks/grophecy_paper.py   (about a minute, no GPU)
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from kernelcast.frontends.skeleton import load_skeleton  # noqa: E402
from kernelcast.models.grophecy.characterize import Characterizer  # noqa: E402
from kernelcast.models.grophecy.layouts import Layout  # noqa: E402
from kernelcast.models.grophecy.search import Hints, search  # noqa: E402
from kernelcast.models.hong_kim import load_hardware  # noqa: E402
from kernelcast.models.hong_kim.equations import estimate  # noqa: E402

EXAMPLES = ROOT / "examples" / "skeletons"
OUT = ROOT / "data" / "grophecy" / "paper.json"
GPUS = ("fx5600", "c1060", "h100", "h200")

# What the paper reports (§9), to set our numbers beside; not used by any model.
PAPER = {
    "matmul": {"space": 6372, "measured_gflops": {"fx5600": 167, "c1060": 375},
               "deviation": {"fx5600": 0.02, "c1060": 0.23},
               "suggested": "Stage+LoopUnroll, 16×16, stage 16"},
    "hotspot": {"space": 3804, "measured_gflops": {"fx5600": 5, "c1060": 11},
                "deviation": {"fx5600": 0.31, "c1060": 0.27},
                "suggested": "ShM+Fold 2×4 (16×16 block)"},
    "ispinex_real": {"space": 2448, "measured_gflops": {"fx5600": 13, "c1060": 13},
                     "deviation": {"fx5600": 0.28, "c1060": 0.25},
                     "suggested": "R.Blk-256+Stage on FX5600, R.Blk-64+Stage on C1060"},
    "spinflap": {"space": 16113, "measured_gflops": {"fx5600": 16, "c1060": 50},
                 "deviation": {"fx5600": 0.30, "c1060": 0.10},
                 "suggested": "1×32 folded 44×1 on FX5600, 1×256 on C1060"},
}

# The paper's layouts as hints: what §9 fixes (block, folding, caching, staging); what it
# leaves open (IspinEx's staging sizes, SpinFlap's caching) is the best projection among
# the layouts the hints allow, with IspinEx's "+Stage" layouts staged.
PAPER_LAYOUTS = {
    "matmul": {gpu: Hints(block=((16, 16),), fold=((1, 1),), cache=(("A", "B"),),
                          stage={"k": (16,)}) for gpu in ("fx5600", "c1060")},
    "hotspot": {gpu: Hints(block=((16, 16),), fold=((2, 4),), cache=(("TIN",),),
                           stage={"i": (2,), "j": (4,)})  # the whole fold: unstaged
                for gpu in ("fx5600", "c1060")},
    "ispinex_real": {"fx5600": Hints(block=((1, 256),), fold=((132, 1),),
                                     cache=(("I", "J", "T"),)),
                     "c1060": Hints(block=((1, 64),), fold=((132, 1),),
                                    cache=(("I", "J", "T"),))},
    # SpinFlap's layouts are Naïve or ShM (M cached), §9.4
    "spinflap": {"fx5600": Hints(block=((1, 32),), fold=((44, 1),), cache=((), ("M",))),
                 "c1060": Hints(block=((1, 256),), fold=((1, 1),), cache=((), ("M",)))},
}
# §9.3: "we force a thread to process all tasks in columns by setting the folding degree
# in the first dimension (corresponding to index j) as 132"
PAPER_HINTS = {"ispinex_real": Hints(fold=((132, 1),)),
               "ispinex_complex": Hints(fold=((132, 1),))}


def _projection_row(skeleton, projection) -> dict:
    est, w = projection.estimate, projection.characteristics.workload
    flops = skeleton.macro("FLOPS")
    return {"layout": projection.layout.describe(skeleton.kernels[0].indices),
            "seconds": est.seconds, "gflops": flops / est.seconds / 1e9,
            "verdict": est.verdict, "mwp": est.mwp, "cwp": est.cwp, "n": est.n,
            "comp_insts": w.comp_insts, "coal_mem_insts": w.coal_mem_insts,
            "uncoal_mem_insts": w.uncoal_mem_insts, "uncoal_per_mw": w.uncoal_per_mw,
            "shared_mem_per_block": w.shared_mem_per_block}


def _search(name: str, gpu: str, hints=None) -> tuple[dict, object, object]:
    skeleton = load_skeleton(EXAMPLES / f"{name}.sk")
    started = time.perf_counter()
    result = search(skeleton, load_hardware(gpu), hints=hints)
    seconds = time.perf_counter() - started
    return ({"searched": result.searched, "feasible": len(result.projections),
             "infeasible": result.infeasible, "search_seconds": seconds,
             "best": _projection_row(skeleton, result.best)}, skeleton, result)


def main() -> int:
    warnings.simplefilter("ignore")
    started = time.perf_counter()
    doc = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
           "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
                      f"Python {platform.python_version()}",
           "skeletons": {}}
    names = ("matmul", "hotspot", "ispinex_complex", "ispinex_real", "spinflap")
    for name in names:
        entry = {"searches": {}, "hinted": {}, "paper_layout": {}}
        for gpu in GPUS:
            row, skeleton, _ = _search(name, gpu)
            entry["searches"][gpu] = row
            print(f"{name:16s} {gpu:7s} {row['searched']:6d} layouts "
                  f"{row['search_seconds']:5.1f} s  best {row['best']['gflops']:8.1f} GFLOP/s"
                  f"  {row['best']['verdict']}", flush=True)
            if name in PAPER_HINTS:
                entry["hinted"][gpu], _, _ = _search(name, gpu, PAPER_HINTS[name])
            hints = PAPER_LAYOUTS.get(name, {}).get(gpu)
            if hints is not None:
                _, _, result = _search(name, gpu, hints)
                staged = [p for p in result.projections if p.layout.stages]
                projection = (staged if name == "ispinex_real" and staged
                              else result.projections)[0]
                row = _projection_row(skeleton, projection)
                measured = PAPER[name]["measured_gflops"][gpu]
                row["paper_measured_gflops"] = measured
                row["deviation"] = abs(row["gflops"] / measured - 1)
                row["paper_deviation"] = PAPER[name]["deviation"][gpu]
                entry["paper_layout"][gpu] = row
        if name in PAPER:
            entry["paper"] = {k: v for k, v in PAPER[name].items() if k != "deviation"}
        doc["skeletons"][name] = entry

    # §9.1: MatMul's Stage layout without unrolling
    matmul = load_skeleton(EXAMPLES / "matmul.sk")
    doc["unrolling"] = {}
    for gpu in ("fx5600", "c1060"):
        hw = load_hardware(gpu)
        ch = Characterizer(matmul, matmul.kernels[0], hw)
        pair = {}
        for unroll in (True, False):
            c = ch.characterize(Layout((16, 16), (1, 1), (("k", 16),), ("A", "B"), unroll))
            pair["unrolled" if unroll else "rolled"] = {
                "comp_insts": c.workload.comp_insts,
                "seconds": estimate(hw, c.workload).seconds}
        doc["unrolling"][gpu] = pair

    # §9.3: IspinEx from Listing 4 (complex B) to Listing 5 (real B), same layout
    doc["ispinex"] = {}
    for gpu in ("fx5600", "c1060"):
        hw = load_hardware(gpu)
        block = (1, 256) if gpu == "fx5600" else (1, 64)
        pair = {}
        for name in ("ispinex_complex", "ispinex_real"):
            skeleton = load_skeleton(EXAMPLES / f"{name}.sk")
            result = search(skeleton, hw, hints=Hints(block=(block,), fold=((132, 1),),
                                                      cache=(("I", "J", "T"),)))
            staged = [p for p in result.projections if p.layout.stages]
            best = (staged or result.projections)[0]
            pair[name] = {"uncoal_mem_insts": best.characteristics.workload.uncoal_mem_insts,
                          "seconds": best.seconds,
                          "layout": best.layout.describe(skeleton.kernels[0].indices)}
        pair["gain"] = pair["ispinex_complex"]["seconds"] / pair["ispinex_real"]["seconds"]
        doc["ispinex"][gpu] = pair
    doc["paper_ispinex"] = {"uncoal_mem_insts": [4050, 0], "gain": 3.7}
    doc["seconds"] = time.perf_counter() - started
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)} in {doc['seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
