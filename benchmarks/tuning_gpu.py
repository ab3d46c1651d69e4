"""Ground truth for tuning: every valid variant of the tuning families
(kernelcast.tune.families) measured on a GPU.

  measure (on the GPU machine): for each family, every variant of its space that the
      device can run (work-group size, local memory) is made and timed through a
      measurement campaign into OUT/tuning-BACKEND.sqlite (resumable; one row per variant,
      named FAMILY/KEY), and, with --repeat N, N variants of each family spread over the
      space are timed again into OUT/tuning-repeat-BACKEND.sqlite (another campaign, so
      the run-to-run noise can be measured).

These rows are never fitted on: they judge the tuners. With --corpus the families are the
training corpus instead (kernelcast.tune.corpus), timed into OUT/tuning-corpus-BACKEND.sqlite:
the rows the learned model is fitted from (benchmarks/tuning_learned.py).

Run:  python benchmarks/tuning_gpu.py measure --out DIR [--corpus] [--families matmul ...]
          [--repeat 20] [--workers 5]
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


def measure(args) -> int:
    from kernelcast.measure.backends import make_backend
    from kernelcast.measure.campaign import run_campaign
    from kernelcast.measure.store import Store
    from kernelcast.tune.corpus import corpus_family
    from kernelcast.tune.families import family

    if args.corpus:
        family = corpus_family  # noqa: F811 - the corpus's families instead
    stem = "tuning-corpus" if args.corpus else "tuning"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    backend = make_backend(args.backend)
    summary = {}
    with backend:
        with Store(out / f"{stem}-{args.backend}.sqlite", backend.identity) as store:
            for name in args.families:
                fam = family(name)
                jobs, skipped = _jobs(fam, backend.device)
                result = run_campaign(jobs, backend, store, verify=False, progress=None,
                                      workers=args.workers)
                summary[name] = {"variants": len(jobs), "skipped": skipped,
                                 "statuses": result.statuses}
                print(f"{name}: {len(jobs)} variants ({skipped} too big for the device), "
                      f"{result.statuses}, {time.perf_counter() - started:.0f} s", flush=True)
        if args.repeat:
            with Store(out / f"{stem}-repeat-{args.backend}.sqlite",
                       backend.identity) as store:
                for name in args.families:
                    jobs, _ = _jobs(family(name), backend.device)
                    step = max(1, len(jobs) // args.repeat)
                    run_campaign(jobs[::step][:args.repeat], backend, store, verify=False,
                                 progress=None)
            print(f"repeated, {time.perf_counter() - started:.0f} s", flush=True)
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                                 "--format=csv,noheader"], capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        driver = None
    (out / f"{stem}-{args.backend}.json").write_text(json.dumps(
        {"families": summary, "nvidia_driver": driver, "seconds": time.perf_counter() - started},
        indent=1) + "\n")
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
    p.add_argument("--families", nargs="+", help="which families (default: all)")
    p.add_argument("--workers", type=int, default=0,
                   help="processes generating and compiling kernels ahead of the timing")
    p.add_argument("--repeat", type=int, default=0,
                   help="variants per family to time again, for the noise")
    p.set_defaults(run=measure)
    args = parser.parse_args()
    if args.families is None:
        from kernelcast.tune.corpus import CORPUS
        from kernelcast.tune.families import FAMILIES

        args.families = list(CORPUS if args.corpus else FAMILIES)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
