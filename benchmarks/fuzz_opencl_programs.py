"""The OpenCL front-end fuzzed on real programs: seeded mutations (token and character
edits, tests/test_opencl_fuzz.py's) of the programs of kernelcast.suites.opencl_programs,
each counted at a launch of its kernel (its scalar arguments, build options, sizes and
statistics, sometimes made extreme). Every case must count, with finite non-negative
counts, or raise an OpenCLSourceError of one short line; any other exception is a
finding. Prints progress and the findings; writes a JSON summary (cases, counted,
typed errors, findings, seconds, the machine, the git commit and whether src/ or tests/
had uncommitted changes). Exits 1 on a finding.

Run:  .venv/bin/python benchmarks/fuzz_opencl_programs.py [--cases 10000] [--seed 20261127]
          [--out data/reliability/opencl-programs-fuzz.json]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import random
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))


def main() -> int:
    from tests.test_opencl_fuzz import check_program, program_case

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10_000, help="cases to run (10,000)")
    parser.add_argument("--seed", type=int, default=20261127, help="the generator's seed")
    parser.add_argument("--out", default=str(ROOT / "data" / "reliability" /
                                             "opencl-programs-fuzz.json"))
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    changed = subprocess.run(["git", "status", "--porcelain", "--", "src", "tests"], cwd=ROOT,
                             capture_output=True, text=True).stdout.strip()
    rng = random.Random(args.seed)
    counted, findings, started = 0, [], time.perf_counter()
    for case_number in range(1, args.cases + 1):
        case = program_case(rng)
        try:
            counted += check_program(case)
        except AssertionError as err:
            findings.append({"case": case_number, "finding": str(err)[:2000]})
        if case_number % 500 == 0 or case_number == args.cases:
            print(f"{case_number}/{args.cases} cases, {counted} counted, {len(findings)} "
                  f"findings, {time.perf_counter() - started:.0f} s", flush=True)
    doc = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "commit": commit,
           "uncommitted_changes": bool(changed),
           "machine": f"{platform.machine()}, {platform.python_version()}",
           "seed": args.seed, "cases": args.cases, "counted": counted,
           "typed_errors": args.cases - counted - len(findings), "findings": findings,
           "seconds": round(time.perf_counter() - started, 1)}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    for f in findings[:20]:
        print(f"finding in case {f['case']}: {f['finding'][:600]}")
    print(f"wrote {out}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
