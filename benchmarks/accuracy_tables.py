"""The paper's tables from a committed measurement store, without a GPU.

For each store given (default: the H100 OpenCL and CUDA stores in data/h100), fits the
linear model to the measurement suite (unconstrained as in the paper, and non-negative),
and prints in markdown: Table 1 (every test case, predicted vs measured), the geometric
mean of relative error per test kernel and overall, Table 2 (the weights) and
leave-one-class-out cross-validation over the measurement classes. Run:
    .venv/bin/python benchmarks/accuracy_tables.py [STORE ...]
"""

import argparse
import warnings

from kernelcast.evaluate import PropertyCache, cross_validate, fit_profile, summarize, table1
from kernelcast.measure.store import Store
from kernelcast.report import format_summary, format_table1, format_table2


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("stores", nargs="*",
                        default=["data/h100/opencl.sqlite", "data/h100/cuda.sqlite"])
    parser.add_argument("--weights", action="store_true", help="print Table 2 too")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    cache = PropertyCache()
    for path in args.stores:
        with Store(path) as store:
            ident = store.identity
            print(f"# {ident['device']} ({ident['backend']}, driver {ident['driver']}): {path}\n")
            for nonnegative in (False, True):
                profile = fit_profile(store, nonnegative=nonnegative, cache=cache)
                table = table1(profile, store, cache=cache)
                kind = "non-negative weights" if nonnegative else "unconstrained (the paper's fit)"
                print(f"## {kind}: fitted on {profile.fit['cases']} cases, training "
                      f"geometric-mean relative error {profile.fit['training_geomean_rel_error']:.1%}")
                if profile.fit["negative_weights"]:
                    print(f"negative weights: {', '.join(profile.fit['negative_weights'])}")
                print()
                if not nonnegative:
                    print(format_table1(table, markdown=True) + "\n")
                print(format_summary(summarize(table), markdown=True) + "\n")
                if args.weights:
                    print(format_table2(profile, markdown=True) + "\n")
            cv = cross_validate(store, cache=cache)
            print("## leave-one-class-out cross-validation (unconstrained)\n")
            print(format_summary(summarize(cv), markdown=True) + "\n")


if __name__ == "__main__":
    main()
