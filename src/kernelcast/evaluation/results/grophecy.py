"""GROPHECY: projections from code skeletons. data/grophecy/paper.json
(benchmarks/grophecy_paper.py): the layout space searched without hints per skeleton and
GPU, the paper's layouts projected against the paper's measurements, MatMul without
unrolling and IspinEx's two listings; data/<gpu>/grophecy.json (benchmarks/grophecy_gpu.py):
layouts realized as Loopy kernels and measured, each method's deviation and the speed of
the layout it ranks first.

Public names: GROPHECY_NAMES, GROPHECY_GPUS, section_grophecy.
"""

from __future__ import annotations

import json

from kernelcast.evaluation.results.common import (GPU_LABEL, GPUS, Data, seconds_text, stamp,
                                                  table)

GROPHECY_NAMES = {"matmul": "MatMul", "hotspot": "HotSpot", "ispinex_complex":
                  "IspinEx (Listing 4)", "ispinex_real": "IspinEx (Listing 5)",
                  "spinflap": "SpinFlap", "rowsum": "RowSum", "transpose": "Transpose"}
GROPHECY_GPUS = {"fx5600": "FX5600", "c1060": "C1060", "h100": "H100", "h200": "H200"}


def _layout_words(layout: dict) -> str:
    parts = [layout["block"].split(" (")[0]]
    if layout["folding"] != "none":
        parts.append("fold " + layout["folding"].split(" (")[0])
    if layout["staging"] != "none":
        parts.append(layout["staging"])
    if not layout["caching"].startswith("none"):
        parts.append(layout["caching"].replace("shared memory for ", "ShM "))
    if layout["unrolling"] == "none":
        parts.append("no unrolling")
    return ", ".join(parts)


def section_grophecy(data: Data) -> list[str]:
    path = data / "grophecy" / "paper.json"
    out = ["## GROPHECY: projections from code skeletons", ""]
    doc = data.load(path)
    if doc is None:
        return out + [data.missing(path, "grophecy_paper.py")]
    try:
        out += [f"`benchmarks/grophecy_paper.py`, {stamp(doc)}, "
                f"on {doc['machine']}, {doc['seconds']:.0f} s. Data: `{data.rel(path)}` "
                f"({data.file_commit(path)}). Skeletons: `examples/skeletons/`; the FX5600 and "
                "C1060 are GROPHECY's Table 5, the H100 and H200 kernelcast's measured "
                "hardware files. How the search and the characterization read the paper: "
                "[docs/grophecy.md](grophecy.md).", "",
                "**The layout space, searched without hints.** Layouts: those enumerated "
                "(§6.2's dependency order; a layout needing more shared memory than a block "
                "may have is counted and left out). Time: the whole search and projection "
                "on this machine.", ""]
        rows = []
        for name, entry in doc["skeletons"].items():
            paper = entry.get("paper", {})
            for gpu, row in entry["searches"].items():
                best = row["best"]
                rows.append([GROPHECY_NAMES.get(name, name), GROPHECY_GPUS[gpu],
                             f"{row['searched']}", (f"{paper['space']}" if paper and gpu in
                                                    ("fx5600", "c1060") else "–"),
                             f"{row['search_seconds']:.1f} s",
                             _layout_words(best["layout"]), f"{best['gflops']:.1f}",
                             best["verdict"]])
        out += [table(["skeleton", "GPU", "layouts", "paper's", "time", "best layout",
                       "GFLOP/s", "bottleneck"], rows,
                      ["l", "l", "r", "r", "r", "l", "r", "l"]), ""]
        hinted = [(name, gpu, row) for name, entry in doc["skeletons"].items()
                  for gpu, row in entry.get("hinted", {}).items()]
        if hinted:
            out += ["With the paper's hint for IspinEx (a folding of 132 along j, §9.3): "
                    + "; ".join(f"{GROPHECY_NAMES[n]} on {GROPHECY_GPUS[g]}: "
                                f"{r['searched']} layouts, {r['search_seconds']:.2f} s, best "
                                f"{_layout_words(r['best']['layout'])} "
                                f"({r['best']['gflops']:.1f} GFLOP/s)"
                                for n, g, r in hinted if g in ("fx5600", "c1060")) + ".", ""]
        out += ["**The paper's layouts, projected, against the paper's measurements.** "
                "Projected GFLOP/s: the skeleton's `FLOPS` macro over the projected time. "
                "Deviation: |projected / measured − 1|; the paper's is its own projection's "
                "(§9).", ""]
        rows = []
        for name, entry in doc["skeletons"].items():
            for gpu, row in entry.get("paper_layout", {}).items():
                rows.append([GROPHECY_NAMES.get(name, name), GROPHECY_GPUS[gpu],
                             _layout_words(row["layout"]), f"{row['gflops']:.1f}",
                             f"{row['paper_measured_gflops']}",
                             f"{row['deviation']:.0%}", f"{row['paper_deviation']:.0%}",
                             row["verdict"]])
        out += [table(["skeleton", "GPU", "the paper's layout", "projected", "measured",
                       "deviation", "paper's", "bottleneck"], rows,
                      ["l", "l", "l", "r", "r", "r", "r", "l"]), ""]
        unroll = doc["unrolling"]
        out.append("**MatMul without unrolling** (Stage, 16×16, stage 16): "
                   + "; ".join(f"{GROPHECY_GPUS[g]}: {u['rolled']['comp_insts']:.0f} "
                               f"computation instructions per thread instead of "
                               f"{u['unrolled']['comp_insts']:.0f} "
                               f"(×{u['rolled']['comp_insts'] / u['unrolled']['comp_insts']:.2f}), "
                               f"projected time ×{u['rolled']['seconds'] / u['unrolled']['seconds']:.2f}"
                               for g, u in unroll.items())
                   + " (paper: the instructions about double).")
        isp, paper = doc["ispinex"], doc["paper_ispinex"]
        out.append("**IspinEx, Listing 4 → Listing 5** (the paper's R.Blk layout, folded "
                   "132 along j, T, I, J in shared memory): uncoalesced instructions per "
                   "thread " + "; ".join(
                       f"{GROPHECY_GPUS[g]}: {v['ispinex_complex']['uncoal_mem_insts']:.0f} → "
                       f"{v['ispinex_real']['uncoal_mem_insts']:.0f}, projected gain "
                       f"×{v['gain']:.1f}" for g, v in isp.items())
                   + f" (paper: {paper['uncoal_mem_insts'][0]} → "
                   f"{paper['uncoal_mem_insts'][1]}, ×{paper['gain']}).")
        out += ["", "Why ours differ from the paper's: docs/grophecy.md, \"Reproducing the "
                "paper\"."]
        out += ["", *_grophecy_gpu(data)]
    except (KeyError, TypeError, ValueError) as err:
        out.append(f"*Not generated: `{data.rel(path)}` is not in the expected form ({err}).*")
    return out


def _grophecy_gpu(data: Data) -> list[str]:
    """Realized layouts measured on today's GPUs (benchmarks/grophecy_gpu.py)."""
    out = []
    for gpu in GPUS:
        path = data / gpu / "grophecy.json"
        if not path.exists():
            out.append(f"**Realized layouts on the {GPU_LABEL[gpu]}**: " + data.missing(path)
                       + " Measure with `benchmarks/grophecy_gpu.py measure` on the GPU, "
                       "then run its `report`.")
            continue
        doc = json.loads(path.read_text(encoding="utf-8"))
        ident = doc["identity"]
        statuses = ", ".join(f"{n} {k}" for k, n in sorted(doc["statuses"].items()))
        out += [f"**Realized layouts on the {GPU_LABEL[gpu]}** (`benchmarks/grophecy_gpu.py`): "
                f"layouts of each skeleton spread over GROPHECY's ranking, realized as Loopy "
                f"kernels and measured on {ident['device']} through {ident['backend']} "
                f"({ident['driver']}, NVIDIA driver {doc.get('nvidia_driver') or 'unknown'}), "
                f"{doc['measured_on'][:10]} (`{doc['store']}`, "
                f"{data.file_commit(data.repo / doc['store'])}; {statuses}). Deviation: "
                "exp(mean |log(predicted / measured)|) − 1 over the measured layouts (the "
                "paper: 17% in geometric mean over its hand-tuned codes); chosen: the "
                "measured time of the layout the method ranks first, as a fraction of the "
                "best measured layout's speed (the paper: its suggested layouts reach at least "
                "95% of the hand-tuned ones).", ""]
        methods = ["grophecy", *[m for m in ("paper", "extended", "hong-kim", "facts",
                                             "hong-kim-facts")
                                 if any(m in e for e in doc["summary"].values())]]
        label = {"grophecy": "GROPHECY + HK (skeleton)", "paper": "paper profile",
                 "extended": "extended profile", "hong-kim": "Hong–Kim (kernel)",
                 "facts": "facts profile", "hong-kim-facts": "Hong–Kim on the facts"}
        rows = []
        for name, entry in doc["summary"].items():
            cells = [GROPHECY_NAMES.get(name, name), str(entry["layouts"]),
                     seconds_text(entry["best_measured_s"])]
            for m in methods:
                e = entry.get(m)
                cells.append("–" if e is None else
                             f"{e['deviation']:.0%} / {e['chosen_vs_best']:.0%}"
                             + ("" if e["within_95"] else " ✗"))
            rows.append(cells)
        out += [table(["skeleton", "layouts", "best measured",
                       *(f"{label[m]}: deviation / chosen" for m in methods)], rows,
                      ["l", "r", "r", *("r" for _ in methods)]), ""]
    return out
