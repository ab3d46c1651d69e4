"""GROPHECY beyond the paper: realize layouts of skeletons as Loopy kernels, measure them
on a GPU, and compare what each method projects with what they take.

  measure (on the GPU machine): for each skeleton, search its layout space on the GPU's
      hardware file, pick layouts spread over GROPHECY's ranking (its top ones, then every
      n-th, and a naive one: no folding, staging or caching) among those whose shared
      memory a kernel may declare statically (Loopy's kernels do), realize those that can be
      realized (kernelcast.models.grophecy.realize) and time them through the measurement
      campaign into a store (one per skeleton set, with the device, driver and date).
  report (anywhere, no GPU): for every measured layout, GROPHECY's projection (the layout
      characterized, Hong–Kim on the hardware file), the fitted profiles' predictions of
      the realized kernel (data/profiles/<device>-cuda-<model>.json) and Hong–Kim on the
      realized kernel's hardware facts (hong-kim-facts, from the hardware file); writes
      data/<gpu>/grophecy.json: per skeleton and method, the geometric-mean deviation
      exp(mean |log(predicted / measured)|) − 1 and whether the layout the method ranks
      first (among the measured ones) is within 95% of the best measured time.

Run:  python benchmarks/grophecy_gpu.py measure --gpu h100 --out DIR [--per-skeleton 24]
      .venv/bin/python benchmarks/grophecy_gpu.py report --gpu h100
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

SKELETONS = ("matmul", "hotspot", "rowsum", "transpose")
EXAMPLES = ROOT / "examples" / "skeletons"


def _selection(projections, count: int):
    """GROPHECY's top layouts and every n-th of the rest, *count* in all, fastest first;
    plus the naive layout (no folding, staging or caching) of the most threads."""
    top = max(1, count // 3)
    rest = projections[top:]
    step = max(1, len(rest) // max(1, count - top))
    chosen = list(projections[:top]) + list(rest[::step])[:count - top]
    naive = [p for p in projections
             if math.prod(p.layout.fold) == 1 and not p.layout.cached and not p.layout.stages]
    if naive and naive[0] not in chosen:
        chosen.append(naive[0])
    return chosen


def measure(args) -> int:
    from kernelcast.frontends.skeleton import load_skeleton
    from kernelcast.measure.backends import make_backend
    from kernelcast.measure.campaign import Job, run_campaign
    from kernelcast.measure.store import Store
    from kernelcast.models.grophecy.realize import UnrealizableLayout, realize
    from kernelcast.models.grophecy.search import search
    from kernelcast.models.hong_kim import load_hardware

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    hardware = load_hardware(args.gpu)
    static = _static_shared_bytes(args.backend)
    layouts, refused = {}, {}
    jobs = []
    started = time.perf_counter()
    for name in args.skeletons:
        skeleton = load_skeleton(EXAMPLES / f"{name}.sk")
        result = search(skeleton, hardware)
        # Loopy declares shared memory statically: a block cannot have more than the
        # device's static limit, though the search allows the opt-in maximum
        over = [p for p in result.projections if p.characteristics.shared_mem_per_block > static]
        if over:
            why = f"more shared memory than the {static} bytes a kernel may declare statically"
            refused.setdefault(name, {})[why] = len(over)
        fitting = [p for p in result.projections
                   if p.characteristics.shared_mem_per_block <= static]
        for projection in _selection(fitting, args.per_skeleton):
            try:
                case = realize(skeleton, projection.layout)
            except UnrealizableLayout as err:
                reasons = refused.setdefault(name, {})
                reasons[str(err)] = reasons.get(str(err), 0) + 1
                continue
            layouts[case.name] = {"skeleton": name,
                                  "layout": _layout_json(projection.layout)}
            jobs.append(Job(case.name, case.name, case.kernel, case.params))
        print(f"{name}: {sum(1 for v in layouts.values() if v['skeleton'] == name)} "
              f"layouts realized, {sum(refused.get(name, {}).values())} left out, "
              f"{time.perf_counter() - started:.0f} s", flush=True)
    (out / "grophecy-layouts.json").write_text(json.dumps(
        {"gpu": args.gpu, "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
         "nvidia_driver": _nvidia_driver(), "static_shared_bytes": static,
         "layouts": layouts, "refused": refused},
        indent=1) + "\n")
    backend = make_backend(args.backend)
    with backend, Store(out / f"grophecy-{args.backend}.sqlite", backend.identity) as store:
        result = run_campaign(jobs, backend, store, verify=False)
    print(f"measured {result.measured}, statuses {result.statuses}, "
          f"{time.perf_counter() - started:.0f} s", flush=True)
    return 0


def _nvidia_driver() -> str | None:
    """The NVIDIA driver's version, as nvidia-smi reports it."""
    import subprocess

    try:
        run = subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return run.stdout.strip().splitlines()[0]


def _static_shared_bytes(backend: str) -> int:
    """The shared memory one kernel may declare statically on the device."""
    if backend == "cuda":
        import cupy

        return int(cupy.cuda.runtime.getDeviceProperties(0)["sharedMemPerBlock"])
    import pyopencl as cl

    gpus = [d for p in cl.get_platforms() for d in p.get_devices()
            if d.type & cl.device_type.GPU]
    return int(gpus[0].local_mem_size)


def _layout_json(layout) -> dict:
    return {"block": list(layout.block), "fold": list(layout.fold),
            "stages": [list(s) for s in layout.stages], "cached": list(layout.cached),
            "unroll": layout.unroll}


def _layout(doc):
    from kernelcast.models.grophecy.layouts import Layout

    return Layout(tuple(doc["block"]), tuple(doc["fold"]),
                  tuple((k, s) for k, s in doc["stages"]), tuple(doc["cached"]),
                  doc["unroll"])


def _deviation(pairs) -> float:
    """exp(mean |log(predicted / measured)|) − 1 over (predicted, measured) pairs."""
    logs = [abs(math.log(p / m)) for p, m in pairs if p > 0 and m > 0]
    return math.exp(sum(logs) / len(logs)) - 1 if logs else float("nan")


def report(args) -> int:
    from kernelcast.frontends.skeleton import load_skeleton
    from kernelcast.measure.store import Store
    from kernelcast.models import get_model
    from kernelcast.models.grophecy.model import GrophecyModel
    from kernelcast.models.grophecy.realize import realize
    from kernelcast.profile import load_profile

    warnings.simplefilter("ignore")
    folder = ROOT / "data" / args.gpu
    doc_layouts = json.loads((folder / "grophecy-layouts.json").read_text())
    store_path = folder / f"grophecy-{args.backend}.sqlite"
    with Store(store_path) as store:
        identity, rows = store.identity, store.rows()
    measured = {r["case_name"]: r for r in rows if r["status"] in ("ok", "unstable")}
    statuses = {}
    for r in rows:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    device = identity["device"].lower().replace(" ", "-")
    profiles = {}
    for model in args.models:
        path = ROOT / "data" / "profiles" / f"{device}-{args.backend}-{model}.json"
        if model == "hong-kim-facts":  # analytical: the hardware file is all it needs
            profiles[model] = get_model(model, hardware=args.gpu).fit()
        elif path.exists():
            profiles[model] = load_profile(path)
    grophecy = GrophecyModel(hardware=args.gpu).fit()
    skeletons = {n: load_skeleton(EXAMPLES / f"{n}.sk") for n in args.skeletons}
    cases = []
    for case_name, info in doc_layouts["layouts"].items():
        if case_name not in measured or info["skeleton"] not in skeletons:
            continue
        skeleton = skeletons[info["skeleton"]]
        layout = _layout(info["layout"])
        row = {"skeleton": info["skeleton"], "case": case_name, "layout": info["layout"],
               "measured_s": measured[case_name]["min_s"],
               "predicted_s": {"grophecy": grophecy.predict((skeleton, layout), {})}}
        realized = realize(skeleton, layout)
        for model, profile in profiles.items():
            try:
                # sizes are fixed in a realized kernel: it takes no size parameters; the
                # models that compile it need the scalars a run passes (one, zero)
                params = ({k: v for k, v in realized.params.items()
                           if k in realized.kernel().default_entrypoint.arg_dict}
                          if getattr(profile, "needs_kernel", False) else {})
                row["predicted_s"][model] = profile.seconds(realized.kernel(), params)
            except Exception as err:  # noqa: BLE001 - recorded, the report goes on
                row.setdefault("errors", {})[model] = f"{type(err).__name__}: {err}"
        cases.append(row)
        print(f"{case_name}: measured {row['measured_s'] * 1e6:.1f} µs, " + ", ".join(
            f"{m} {v * 1e6:.1f} µs" for m, v in row["predicted_s"].items()), flush=True)
    summary = {}
    for name in args.skeletons:
        mine = [c for c in cases if c["skeleton"] == name]
        if not mine:
            continue
        best = min(c["measured_s"] for c in mine)
        entry = {"layouts": len(mine), "best_measured_s": best}
        for method in ["grophecy", *profiles]:
            have = [c for c in mine if method in c["predicted_s"]]
            if not have:
                continue
            chosen = min(have, key=lambda c: c["predicted_s"][method])
            entry[method] = {
                "deviation": _deviation((c["predicted_s"][method], c["measured_s"])
                                        for c in have),
                "chosen": chosen["case"], "chosen_measured_s": chosen["measured_s"],
                "chosen_vs_best": best / chosen["measured_s"],
                "within_95": best / chosen["measured_s"] >= 0.95}
        summary[name] = entry
    out = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
           "measured_on": doc_layouts["date"], "store": str(store_path.relative_to(ROOT)),
           "identity": identity, "statuses": statuses,
           "left_out": doc_layouts["refused"],
           "static_shared_bytes": doc_layouts.get("static_shared_bytes"),
           "nvidia_driver": doc_layouts.get("nvidia_driver"),
           "summary": summary, "cases": cases}
    target = folder / "grophecy.json"
    target.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {target.relative_to(ROOT)}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    p = sub.add_parser("measure", help="realize and time layouts (on the GPU machine)")
    p.add_argument("--gpu", default="h100", help="hardware file for the search")
    p.add_argument("--out", required=True, help="folder for the store and layouts")
    p.add_argument("--backend", default="cuda", help="measurement backend")
    p.add_argument("--per-skeleton", type=int, default=24, help="layouts per skeleton")
    p.add_argument("--skeletons", nargs="+", default=list(SKELETONS), help="which")
    p.set_defaults(run=measure)
    p = sub.add_parser("report", help="projections against measurements (no GPU)")
    p.add_argument("--gpu", default="h100", help="data/<gpu>/ holds the measurements")
    p.add_argument("--backend", default="cuda", help="the store's backend")
    p.add_argument("--models", nargs="+",
                   default=["paper", "extended", "hong-kim", "facts", "hong-kim-facts"],
                   help="fitted profiles to compare (hong-kim-facts: GROPHECY's layouts "
                        "realized, projected by Hong–Kim on their hardware facts)")
    p.add_argument("--skeletons", nargs="+", default=list(SKELETONS), help="which")
    p.set_defaults(run=report)
    args = parser.parse_args()
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
