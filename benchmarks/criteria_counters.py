"""Kernelcast's symbolic counts against Nsight Compute's hardware counters: the command
line of kernelcast.evaluation.criteria_counters, which plans, measures and compares
(its module docstring says how).

  plan (no GPU): the cases, one per kernel of the measurement, test and validation
      suites, at the largest parameters the H100 CUDA campaign measured for it
      (data/h100/cuda.sqlite). Prints them; --json FILE writes them.
  run PLAN_JSON (what ncu profiles; needs cupy): each case of the plan launched once;
      nothing on stdout (ncu writes its CSV there), a case that fails is one line on
      stderr. --log FILE records each case just before its launch.
  measure OUTDIR (on the GPU machine: cupy, ncu): the plan with each case's counts, then
      ncu over ``run`` in chunks of cases; writes OUTDIR/plan.json, launches.jsonl,
      ncu.tar.xz and counters.json (or counters.json.xz), then prints the comparison.
  compare COUNTERS_JSON (no GPU): the comparison table of a counters document (.json or
      .json.xz), and with --worst N the N cases furthest off per quantity.

Run on the device (the kernel stack from shared/device/prepare.sh):
    source .device/setup.sh && python3 benchmarks/criteria_counters.py measure OUTDIR
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from kernelcast.evaluation import criteria_counters as counters  # noqa: E402

STORE = ROOT / "data" / "h100" / "cuda.sqlite"


def plan(json_path: Path | None) -> int:
    import json

    cases = counters.plan_cases(STORE)
    suites = counters.SUITES
    print(f"{len(cases)} cases ("
          + ", ".join(f"{s} {sum(c['suite'] == s for c in cases)}" for s in suites)
          + "; parameters from "
          + ", ".join(f"{src} {sum(c['source'] == src for c in cases)}"
                      for src in ("store", "suite")) + ")")
    for entry in cases:
        print(f"{entry['index']:4d} {counters.plan_label(entry)}")
    if json_path is not None:
        json_path.write_text(json.dumps(cases, indent=1) + "\n")
    return 0


def _run_command(plan_path: Path, log_path: Path, first: int, count: int) -> list[str]:
    """This script's ``run`` of plan entries first to first + count: what ncu profiles."""
    return [sys.executable, __file__, "run", str(plan_path), "--log", str(log_path),
            "--first", str(first), "--count", str(count)]


def measure(out: Path, chunk: int, budget: float, only: str | None) -> int:
    document, _ = counters.measure_counters(out, _run_command, STORE, chunk=chunk,
                                            budget=budget, only=only, progress=sys.stdout)
    print_comparison(document)
    return 0


def print_comparison(document: dict, worst: int = 0) -> None:
    def share(x):
        return "-" if x is None else f"{x * 100:.0f}%"

    print(f"{'quantity':<26}{'cases':>6}{'±10%':>7}{'×2':>6}{'median':>9}{'only':>6}  reason")
    for row in counters.agreement(document):
        median = "-" if row["median_ratio"] is None else f"{row['median_ratio']:.3g}"
        print(f"{row['quantity']:<26}{row['cases']:>6}{share(row['within_10pct']):>7}"
              f"{share(row['within_2x']):>6}{median:>9}{row['counter_only']:>6}  "
              f"{row['reason']}")
    if not worst:
        return
    for quantity in counters.QUANTITIES:
        compared, _ = counters.pairs(document, quantity)
        compared.sort(key=lambda c: -abs(math.log(max(c[2], 1e-30) / c[1])))
        if compared:
            print(f"\n{quantity.name} ({quantity.unit}): counter / count, furthest off")
        for label, predicted, measured in compared[:worst]:
            print(f"  {measured / predicted:9.3g}  {label}  ({measured:.4g} / {predicted:.4g})")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    p = verbs.add_parser("plan", help="list the cases (one per kernel of the three suites)")
    p.add_argument("--json", type=Path, metavar="FILE", help="also write the plan there")
    r = verbs.add_parser("run", help="launch every case of a plan once (what ncu profiles)")
    r.add_argument("plan", type=Path, help="the plan (plan --json, or measure's plan.json)")
    r.add_argument("--log", type=Path, metavar="FILE",
                   help="append each case's index, function, grid and block before its launch")
    r.add_argument("--first", type=int, default=0, help="the first plan entry to run")
    r.add_argument("--count", type=int, help="how many entries to run (default: the rest)")
    m = verbs.add_parser("measure", help="plan, count, profile every case with ncu, compare")
    m.add_argument("out", type=Path, help="folder of the results")
    m.add_argument("--chunk", type=int, default=50, help="cases per ncu run (default 50)")
    m.add_argument("--budget", type=float, default=540,
                   help="seconds for the whole measurement; chunks past it are skipped "
                        "(default 540)")
    m.add_argument("--only", metavar="REGEX",
                   help="only the cases whose label (suite:kernel/params) matches")
    c = verbs.add_parser("compare", help="the comparison table of a counters.json")
    c.add_argument("counters", type=Path, help="counters.json or counters.json.xz")
    c.add_argument("--worst", type=int, default=0, metavar="N",
                   help="also list the N cases furthest off per quantity")
    args = parser.parse_args(argv)
    if args.verb == "plan":
        return plan(args.json)
    if args.verb == "run":
        return counters.run_plan(args.plan, args.log, args.first, args.count)
    if args.verb == "measure":
        return measure(args.out, args.chunk, args.budget, args.only)
    print_comparison(counters.load_document(args.counters), args.worst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
