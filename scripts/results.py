"""Write docs/results.md from data/: every number on that page comes from here.

The page is kernelcast.evaluation.results's (one module per topic; its docstring lists
them): this script gives it the repository's data/ folder, the figure drawers of
kernelcast.report (which write docs/figures/) and the profile reader of kernelcast.profile,
shows progress on stderr and writes the file. The page reads only data/ (the measurement
stores data/<gpu>/<backend>.sqlite, the campaign logs, device files, SASS listings and
the index probe under data/<gpu>/, data/cv/*.csv, the benchmarks' JSON documents) and the
packaged hardware descriptions; it fits every registered model (kernelcast.models) to
each store, evaluates it on the test and validation suites and cross-validates it over
the classes it is fitted on. No GPU needed. A missing input leaves its section saying so.
The narrative of what was tried and not adopted is docs/history.md, not here.

    .venv/bin/python scripts/results.py [--jobs N] [--no-cv] [--out docs/results.md]

--jobs runs the stores in that many processes (default 1; each worker extracts the
suites' properties again, so on two shared cores two workers gain little); --no-cv skips
the cross-validation (a draft: its sections say it was skipped).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

STARTED = time.perf_counter()
# One BLAS thread per process (before numpy is imported, here and in the workers, which
# inherit it): on a shared 2-core machine OpenBLAS's default threads made the extended
# model's fit 5 to 30 times slower. Set OPENBLAS_NUM_THREADS to override.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"


def log(message: str) -> None:
    """Progress on stderr, with the seconds since this process started (a worker's since
    its own start)."""
    print(f"[results {time.perf_counter() - STARTED:6.0f} s] {message}", file=sys.stderr,
          flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "results.md"))
    parser.add_argument("--jobs", type=int, default=1,
                        help="worker processes for the stores (default: 1, in-process)")
    parser.add_argument("--no-cv", action="store_true",
                        help="skip cross-validation (a quick draft)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    from kernelcast import report
    from kernelcast.evaluation.results import Figures, build
    from kernelcast.profile import load_profile

    figures = Figures(ROOT / "docs" / "figures",
                      random_kernels=report.random_kernels_figure,
                      characterization=report.characterization_figure,
                      tuning_methodology=report.tuning_methodology_figure,
                      advice=report.advice_figure, save=report.save_figure)
    page = build(DATA, args.jobs, not args.no_cv, figures=figures,
                 load_profile=load_profile, progress=log, started=STARTED)
    elapsed = time.perf_counter() - STARTED
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    shown = (out.resolve().relative_to(ROOT) if out.resolve().is_relative_to(ROOT)
             else out)
    log(f"wrote {shown} in {elapsed:.0f} s")
    print(f"{shown}: generated in {elapsed:.0f} s wall time", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
