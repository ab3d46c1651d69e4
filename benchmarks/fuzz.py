"""The command-line fuzz of tests/test_fuzz.py, larger: how often kernelcast lies.

Seeded random invocations of every verb (tests/fuzzing.py and its fuzz_* modules generate
them: malformed sizes and statistics, bad and non-regular paths, kernel files that fail
in every way, and every input kind damaged: profiles of every model, hardware, registers
and hints files, stores, code skeletons, OpenCL C source, Nsight Compute CSVs, search
spaces), each run in a forked child and judged: exit status 0, 1 or 2, no death by a
signal, no hang, no traceback, a failure ends in exactly one "kernelcast: error:" line, no
warning printed twice, no NaN, infinity or negative time in the output, every input file
and data/ left as they were. Prints the invocations per verb and outcome, the findings
per check, and every distinct finding (its argv, the checks it failed, the innermost
kernelcast frame and the last line of its traceback; "known" ones are in code being fixed
elsewhere, see KNOWN_ELSEWHERE), and writes a JSON summary with the date, the machine and
the git commit. Exits 1 if any invocation failed or data/ changed.

    .venv/bin/python benchmarks/fuzz.py [OUT.json] [--invocations 5000] [--seconds 1800]
        [--seed 21] [--real-measures 6] [--timeout 120]

OUT.json defaults to data/reliability/fuzz.json. Nothing is measured for real except
--real-measures single kernels or tunes of a few variants on this machine's device.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fuzzing import CHECKS, KNOWN_ELSEWHERE, VERBS, Budget, fuzz  # noqa: E402

OUTCOMES = ("ok", "help", "usage", "error 1", "error 2", "known", "failure")


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def _table(summary: dict) -> str:
    seen = [o for o in OUTCOMES if o in summary["outcomes"]]
    seen += sorted(set(summary["outcomes"]) - set(seen))
    lines = [f"{'verb':<11}" + "".join(f"{o:>9}" for o in seen) + f"{'total':>8}{'s':>8}"]
    for verb in VERBS:
        counts = summary["by_verb"][verb]
        lines.append(f"{verb:<11}" + "".join(f"{counts.get(o, 0):>9}" for o in seen)
                     + f"{sum(counts.values()):>8}{summary['seconds_by_verb'][verb]:>8.1f}")
    lines.append(f"{'all':<11}" + "".join(f"{summary['outcomes'].get(o, 0):>9}" for o in seen)
                 + f"{summary['invocations']:>8}{summary['seconds']:>8.1f}")
    return "\n".join(lines)


def _checks(finding: dict) -> tuple[str, ...]:
    return tuple(sorted({p.split(":")[0] for p in finding["problems"]}))


def _signature(problem: str) -> str:
    """A problem without its paths, numbers and lists: what it says of any input."""
    problem = re.sub(r"/\S+", "PATH", re.sub(r"\([^)]*\)|\[[^]]*\]", "(...)", problem))
    return re.sub(r"\d+", "N", problem)[:120]


def _distinct(findings: list[dict]) -> list[dict]:
    """One finding per (outcome, checks failed, innermost kernelcast frame, exception
    type), counted; where there is no traceback (a lie in the output of a command that
    succeeded), per verb and what its first problem says instead of the frame."""
    groups: dict[tuple, dict] = {}
    for f in findings:
        kind = f["traceback_tail"].split(":")[0]
        where = f["innermost_frame"] or (f["verb"], _signature(f["problems"][0]))
        key = (f["outcome"], _checks(f), where, kind)
        if key not in groups:
            groups[key] = {**f, "count": 0}
        groups[key]["count"] += 1
    return sorted(groups.values(), key=lambda g: (g["outcome"], -g["count"]))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", default=str(ROOT / "data" / "reliability" /
                                                       "fuzz.json"),
                        help="the JSON summary to write (default: data/reliability/fuzz.json)")
    parser.add_argument("--invocations", type=int, default=5000,
                        help="invocations to run at most (default 5000)")
    parser.add_argument("--seconds", type=float, default=1800.0,
                        help="stop generating after this many seconds (default 1800)")
    parser.add_argument("--seed", type=int, default=21, help="the generator's seed")
    parser.add_argument("--real-measures", type=int, default=6,
                        help="single kernels measured, or small spaces tuned, for real on "
                             "this machine's device (default 6)")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds after which an invocation is killed as hung "
                             "(default 120)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    budget = Budget(fits=60, evaluations=60, reports=12, real_measures=args.real_measures,
                    devices=40, searches=20, figures=12)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    with tempfile.TemporaryDirectory(prefix="kernelcast-fuzz-") as scratch:
        summary = fuzz(Path(scratch) / "workspace", seed=args.seed,
                       invocations=args.invocations, seconds=args.seconds, budget=budget,
                       timeout=args.timeout, progress=sys.stderr)
    print(_table(summary))
    print("\ninvocations with a damaged input, by kind: " + ", ".join(
        f"{kind} {n}" for kind, n in summary["damaged"].items()))
    print("\nfailed invocations per check: " + (", ".join(
        f"{c} {summary['by_check'][c]}" for c in CHECKS if c in summary["by_check"]) or
        "none"))
    distinct = _distinct(summary["findings"])
    for f in distinct:
        print(f"\n{f['outcome']} x{f['count']} ({f['owner'] or 'not known elsewhere'}): "
              f"{', '.join(_checks(f))}\n  argv: {' '.join(f['argv'])[:600]}\n"
              f"  {f['problems'][0][:300]}\n  {f['innermost_frame']}\n"
              f"  {f['traceback_tail'] or f['stderr_tail']}")
    if summary["data_changed"]:
        print(f"\ndata/ changed: {summary['data_changed']}")
    doc = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
           "git_commit": _commit(),
           "machine": {"platform": platform.platform(), "python": platform.python_version(),
                       "cores": os.cpu_count()},
           "known_elsewhere": [{"pattern": p, "owner": o} for p, o in KNOWN_ELSEWHERE],
           **{k: v for k, v in summary.items() if k != "findings"},
           "distinct_findings": distinct}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"\n{summary['invocations']} invocations in {summary['seconds']} s; summary "
          f"written to {out}")
    failed = summary["outcomes"].get("failure", 0)
    return 1 if failed or summary["data_changed"] else 0


if __name__ == "__main__":
    sys.exit(main())
