"""Does measuring in a worker process change the times? Writes a JSON summary.

Times --cases cases of the test suite (the classes' smallest sizes) on one device twice
over, alternating a backend in a worker process (what make_backend gives) and one in this
process, --rounds rounds, each into its own fresh store; then reports, per case, the
ratio of the medians over rounds of the minimum times (worker / in-process), and how long
starting a worker takes.

Run:  python benchmarks/isolation_check.py --backend cuda --device H100 --out iso.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", default="opencl", help="opencl or cuda")
    parser.add_argument("--device", help="a substring of the device name")
    parser.add_argument("--cases", type=int, default=12, help="test-suite cases timed")
    parser.add_argument("--rounds", type=int, default=3, help="alternations")
    parser.add_argument("--out", required=True, help="where the JSON summary goes")
    args = parser.parse_args()

    from kernelcast.measure.backends import make_backend
    from kernelcast.measure.campaign import run_campaign, suite_jobs
    from kernelcast.measure.store import Store
    from kernelcast.suites.paper import get_suite

    suite = get_suite("test")
    sizes = {c.name: min(c.p_choices) for c in suite.classes}
    cases = [c for c in suite.cases(sizes, ["float32"])][:: max(1, len(list(
        suite.cases(sizes, ["float32"]))) // args.cases)][:args.cases]
    times = {"worker": {}, "in-process": {}}
    starts = []
    with tempfile.TemporaryDirectory() as tmp:
        for rnd in range(args.rounds):
            for mode in ("worker", "in-process"):
                started = time.monotonic()
                backend = make_backend(args.backend, args.device, isolated=mode == "worker")
                with backend, Store(Path(tmp) / f"{mode}-{rnd}.sqlite",
                                    backend.identity) as store:
                    result = run_campaign(suite_jobs(cases), backend, store, progress=None)
                    if mode == "worker":
                        starts.append(time.monotonic() - started)
                    for row in store.rows():
                        if row["min_s"] is not None:
                            times[mode].setdefault(row["case_name"], []).append(row["min_s"])
                print(mode, rnd, result.statuses, file=sys.stderr)
        device = backend.device
    ratios = {name: statistics.median(times["worker"][name])
              / statistics.median(times["in-process"][name])
              for name in times["worker"] if name in times["in-process"]}
    summary = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
               "device": device.name, "driver": device.driver, "backend": args.backend,
               "rounds": args.rounds, "cases": len(ratios),
               "ratio_median": statistics.median(ratios.values()),
               "ratio_min": min(ratios.values()), "ratio_max": max(ratios.values()),
               "campaign_with_worker_s": starts, "ratios": ratios, "times": times}
    Path(args.out).write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k not in ("ratios", "times")},
                     indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
