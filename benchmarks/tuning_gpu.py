"""Ground truth for tuning: every valid variant of the tuning families
(kernelcast.tune.families) measured on a GPU.

  measure (on the GPU machine): for each family, every variant of its space that the
      device can run (work-group size, local memory) is made and timed through a
      measurement campaign into OUT/tuning-BACKEND.sqlite (resumable; one row per variant,
      named FAMILY/KEY), and, with --repeat N, N variants of each family spread over the
      space are timed again into OUT/tuning-repeat-BACKEND.sqlite (another campaign, so
      the run-to-run noise can be measured). OUT/tuning-BACKEND.json sums it up: each
      family's variants and statuses (those of families measured by earlier runs kept).

These rows are never fitted on: they judge the tuners. The families named in
SEARCH_FAMILIES (``--families conv2d nbody``), larger spaces for judging search
strategies, are timed the same way into their own stores, OUT/tuning-search-BACKEND.sqlite
(and tuning-search-repeat-BACKEND.sqlite), so that the judged families' stores hold what
they held. With --corpus the families are the training corpus instead
(kernelcast.tune.corpus), timed into OUT/tuning-corpus-BACKEND.sqlite: the rows the learned
model is fitted from (benchmarks/tuning_learned.py). With --seconds S no kernel starts
after S seconds; run the same command again to go on where it stopped.

Run:  python benchmarks/tuning_gpu.py measure --out DIR [--corpus] [--families matmul ...]
          [--repeat 20] [--workers 5] [--seconds 540]
"""

from __future__ import annotations

import argparse
import functools
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))


def _jobs(fam, device):
    from corpus_gpu import variant_of

    from kernelcast.measure.campaign import Job
    from kernelcast.tune.space import invalid, variant_key

    jobs, skipped = [], 0
    for variant in fam.space.variants():
        if invalid(variant, fam.space, max_group_size=device.max_group_size):
            skipped += 1
            continue
        name = f"{fam.name}/{variant_key(variant)}"
        jobs.append(Job(name, name, functools.partial(variant_of, fam.name,
                                                      tuple(variant.items())),
                        dict(fam.params)))
    return jobs, skipped


def _stem(name: str, corpus: bool) -> str:
    """The stores' name for family *name*: tuning, tuning-search or tuning-corpus."""
    from kernelcast.tune.families import SEARCH_FAMILIES

    if corpus:
        return "tuning-corpus"
    return "tuning-search" if name in SEARCH_FAMILIES else "tuning"


def _measure_stem(stem, names, find, backend, args, deadline, started) -> tuple[dict, bool]:
    """Time *names* into OUT/STEM-BACKEND.sqlite (and the repeats); their summary, and
    whether the deadline stopped it."""
    from kernelcast.measure.campaign import run_campaign
    from kernelcast.measure.store import Store

    out, summary, stopped = Path(args.out), {}, False
    with Store(out / f"{stem}-{args.backend}.sqlite", backend.identity) as store:
        for name in names:
            jobs, skipped = _jobs(find(name), backend.device)
            result = run_campaign(jobs, backend, store, verify=False, progress=None,
                                  workers=args.workers, deadline=deadline)
            summary[name] = {"variants": len(jobs), "skipped": skipped,
                             "statuses": result.statuses}
            print(f"{name}: {len(jobs)} variants ({skipped} too big for the device), "
                  f"{result.statuses}, {time.perf_counter() - started:.0f} s", flush=True)
            if result.stopped:
                return summary, True
    if args.repeat:
        with Store(out / f"{stem}-repeat-{args.backend}.sqlite", backend.identity) as store:
            for name in names:
                jobs, _ = _jobs(find(name), backend.device)
                step = max(1, len(jobs) // args.repeat)
                result = run_campaign(jobs[::step][:args.repeat], backend, store,
                                      verify=False, progress=None, deadline=deadline)
                stopped = stopped or result.stopped
        print(f"repeated, {time.perf_counter() - started:.0f} s", flush=True)
    return summary, stopped


def measure(args) -> int:
    from kernelcast.measure.backends import make_backend
    from kernelcast.tune.corpus import corpus_family
    from kernelcast.tune.families import family

    find = corpus_family if args.corpus else family
    for name in args.families:
        find(name)  # an unknown name fails before the device is opened
    stems = {}
    for name in args.families:
        stems.setdefault(_stem(name, args.corpus), []).append(name)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    deadline = None if args.seconds is None else time.monotonic() + args.seconds
    backend = make_backend(args.backend)
    results = {}
    with backend:
        for stem, names in stems.items():
            results[stem] = _measure_stem(stem, names, find, backend, args, deadline,
                                          started)
            if results[stem][1]:
                print(f"stopped after {args.seconds:g} s: run the same command again to go "
                      "on", flush=True)
                break
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                                 "--format=csv,noheader"], capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        driver = None
    for stem, (summary, stopped) in results.items():
        path = out / f"{stem}-{args.backend}.json"
        earlier = json.loads(path.read_text()).get("families", {}) if path.is_file() else {}
        path.write_text(json.dumps(
            {"families": {**earlier, **summary}, "nvidia_driver": driver, "stopped": stopped,
             "seconds": time.perf_counter() - started}, indent=1) + "\n")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    p = sub.add_parser("measure", help="time every variant (on the GPU machine)")
    p.add_argument("--out", required=True, help="folder for the stores")
    p.add_argument("--backend", default="cuda", help="measurement backend")
    p.add_argument("--corpus", action="store_true",
                   help="the training corpus's families (kernelcast.tune.corpus), not the "
                        "judged ones")
    p.add_argument("--families", nargs="+",
                   help="which families (default: every judged one, FAMILIES); the search "
                        "families (SEARCH_FAMILIES) only by name")
    p.add_argument("--workers", type=int, default=0,
                   help="processes generating and compiling kernels ahead of the timing")
    p.add_argument("--repeat", type=int, default=0,
                   help="variants per family to time again, for the noise")
    p.add_argument("--seconds", type=float, default=None,
                   help="start no kernel after this many seconds (the stores resume)")
    p.set_defaults(run=measure)
    args = parser.parse_args()
    if args.families is None:
        from kernelcast.tune.corpus import CORPUS
        from kernelcast.tune.families import FAMILIES

        args.families = list(CORPUS if args.corpus else FAMILIES)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
