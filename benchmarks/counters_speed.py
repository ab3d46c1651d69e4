"""What one kernel's predicted counters cost (kernelcast.facts.predict_counters), on the
launches of data/counters-plan.json.xz: every STEP-th launch, each kernel built first
(not timed), then

  cold: its first prediction in this process, the compiler's results already cached on
        disk (a first compile adds a few tenths of a second, once per kernel variant);
  again: the same launch asked again (answered from memory);
  resized: the same kernel at other sizes, where its sizes are parameters (a new launch).

  python benchmarks/counters_speed.py [--step 5] [--out data/counters-speed.json]

Prints the median and the largest of each, and writes them with the machine's description.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))


def _timed(call) -> float:
    began = time.perf_counter()
    call()
    return time.perf_counter() - began


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--step", type=int, default=5, help="time every STEP-th launch "
                        "of the plan (default 5)")
    parser.add_argument("--out", type=Path, default=ROOT / "data" / "counters-speed.json",
                        help="where to write the timings (default data/counters-speed.json)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    from counters_gpu import load

    from kernelcast.facts import predict_counters
    from kernelcast.tune.launches import launch_kernel

    plan = [e for e in load(ROOT / "data" / "counters-plan.json.xz") if "error" not in e]
    chosen = plan[::args.step]
    # the compiler's cache first, so that "cold" times the facts and not the compile
    for entry in chosen:
        knl, params = launch_kernel(entry)
        predict_counters(knl, {} if entry["kind"] == "random" else params, "h100")
    from kernelcast.facts.counters import forget

    forget()
    rows = []
    for entry in chosen:
        knl, params = launch_kernel(entry)
        params = {} if entry["kind"] == "random" else params
        cold = _timed(lambda: predict_counters(knl, params, "h100"))
        again = _timed(lambda: predict_counters(knl, params, "h100"))
        resized = None
        if params:
            half = {k: max(v // 2, 1) for k, v in params.items()}
            try:
                resized = _timed(lambda: predict_counters(knl, half, "h100"))
            except Exception:  # noqa: BLE001 - a size the kernel refuses: not timed
                resized = None
        rows.append({"launch": entry["label"], "cold": cold, "again": again,
                     "resized": resized})
        print(f"{cold:7.3f} s {again * 1e3:7.2f} ms "
              f"{'-' if resized is None else f'{resized:7.3f} s'}  {entry['label']}",
              flush=True)
    summary = {}
    for key in ("cold", "again", "resized"):
        values = sorted(r[key] for r in rows if r[key] is not None)
        summary[key] = {"median": statistics.median(values), "max": values[-1],
                        "within_0.5s": sum(v <= 0.5 for v in values) / len(values),
                        "launches": len(values)}
        print(f"{key}: median {summary[key]['median']:.4f} s, largest "
              f"{summary[key]['max']:.3f} s, {summary[key]['within_0.5s']:.0%} within 0.5 s "
              f"({len(values)} launches)")
    doc = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
                      f"{platform.python_version()}",
           "date": time.strftime("%Y-%m-%d"), "step": args.step, "summary": summary,
           "launches": rows}
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
