"""Choose the extended model's overlap exponent q by leave-one-class-out cross-validation
on its fitting suites (measurement + extension) alone, on every committed GPU store.

For each q and each store, fits ExtendedModel(q=q) once per held-out class and prints the
geometric mean of relative error over all held-out cases; appends one CSV row per store
and q to the --out file (data/cv/overlap-exponent-<gpu>.csv, read by scripts/results.py),
skipping pairs it already holds, so an interrupted run resumes. The q with the lowest
mean over the stores is the model's default (kernelcast.models.extended.OVERLAP_Q).
About 2 minutes per store and q on one core. Run:
    .venv/bin/python benchmarks/overlap_exponent.py [--q 1 1.25 ...] [--stores ...]
"""

import argparse
import csv
import time
import warnings
from pathlib import Path

from kernelcast.evaluation.crossval import cross_validate
from kernelcast.fitting.dataset import PropertyCache, load_dataset
from kernelcast.measure.store import Store
from kernelcast.metrics import geometric_mean
from kernelcast.models import ExtendedModel

STORES = ["data/h100/opencl.sqlite", "data/h100/cuda.sqlite", "data/h200/opencl.sqlite",
          "data/h200/cuda.sqlite"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--q", nargs="+", type=float, default=[1, 1.25, 1.5, 2, 3],
                        help="exponents to try")
    parser.add_argument("--stores", nargs="+", default=STORES, help="measurement stores")
    parser.add_argument("--out", default="data/cv/overlap-exponent.csv",
                        help="CSV to append rows to")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    new = not out.exists()
    done = set() if new else {(r["store"], float(r["q"]))
                              for r in csv.DictReader(out.open())}
    datasets = {}
    cache = PropertyCache()
    with out.open("a", newline="") as handle:
        writer = csv.writer(handle)
        if new:
            writer.writerow(["store", "device", "backend", "q", "cases", "cv_geomean",
                             "seconds"])
        for q, path in ((q, path) for q in args.q for path in args.stores):
            if (path, q) in done:
                continue
            if path not in datasets:
                with Store(path) as store:
                    datasets[path] = load_dataset(store, ("measurement", "extension"),
                                                  suite="measurement", cache=cache)
            dataset = datasets[path]
            ident = dataset.identity
            start = time.perf_counter()
            cv = cross_validate(ExtendedModel(q=q), dataset)
            error = geometric_mean(cv.rel_error)
            seconds = time.perf_counter() - start
            writer.writerow([path, ident["device"], ident["backend"], q, len(cv),
                             f"{error:.6f}", f"{seconds:.0f}"])
            handle.flush()
            print(f"{ident['device']} {ident['backend']} q={q}: CV {error:.2%} "
                  f"({seconds:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
