"""The Hong–Kim model next to the fitted models, on committed measurements, without a GPU.

For each GPU (default: the H100 and the H200, OpenCL stores in data/<gpu>/) prints in
markdown:

1. Table 1 of the test suite: measured time, the paper model's, kernelcast's and the
   Hong–Kim model's predictions and errors, and Hong–Kim's bottleneck verdict;
2. the geometric-mean relative error per kernel class of the test, validation and
   measurement suites for the three models (the fitted models are fitted on the
   measurement suite, so their numbers there are training errors; Hong–Kim fits nothing);
3. per class, Hong–Kim's verdicts and the range of MWP, CWP and N.

The Hong–Kim hardware comes from src/kernelcast/hardware/<gpu>.json
(benchmarks/hong_kim_hardware.py), registers per thread from data/<gpu>/registers.json.
Run: .venv/bin/python benchmarks/hong_kim_comparison.py [--gpus h100 h200]
"""

import argparse
import json
import warnings
from pathlib import Path

import pandas as pd

from kernelcast.evaluate import (PropertyCache, fit_profile, geometric_mean, hong_kim_table,
                                 table1)
from kernelcast.measure.store import Store
from kernelcast.models.hardware import load_hardware

SUITES = ("test", "validation", "measurement")


def _pct(x):
    return "–" if pd.isna(x) else f"{x:.1%}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", nargs="+", default=["h100", "h200"])
    parser.add_argument("--data", default="data")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    cache = PropertyCache()
    for gpu in args.gpus:
        hw = load_hardware(gpu)
        registers = json.loads((Path(args.data) / gpu / "registers.json").read_text())
        with Store(Path(args.data) / gpu / "opencl.sqlite") as store:
            profiles = {m: fit_profile(store, model=m, cache=cache)
                        for m in ("paper", "kernelcast")}
            tables = {}
            for suite in SUITES:
                tables[suite] = {m: table1(p, store, suite, cache)
                                 for m, p in profiles.items()}
                tables[suite]["hong-kim"] = hong_kim_table(hw, store, suite, cache,
                                                           registers)
        print(f"## {hw.name} (OpenCL measurements)\n")
        print("Table 1, test suite (times in µs):\n")
        print("| kernel | sizes | measured | paper | error | kernelcast | error | "
              "Hong–Kim | error | Hong–Kim verdict |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
        t = tables["test"]
        for a, b, c in zip(t["paper"].itertuples(), t["kernelcast"].itertuples(),
                           t["hong-kim"].itertuples(), strict=True):
            assert a.case_name == b.case_name == c.case_name
            sizes = ", ".join(f"{k}={v}" for k, v in a.params.items())
            print(f"| {a.kernel_class} | {sizes} | {a.measured_s * 1e6:.1f} | "
                  f"{a.predicted_s * 1e6:.1f} | {_pct(a.rel_error)} | "
                  f"{b.predicted_s * 1e6:.1f} | {_pct(b.rel_error)} | "
                  f"{c.predicted_s * 1e6:.1f} | {_pct(c.rel_error)} | {c.verdict} |")
        for suite in SUITES:
            print(f"\n{suite} suite, geometric mean of relative error per class:\n")
            print("| class | cases | paper | kernelcast | Hong–Kim | Hong–Kim verdicts | "
                  "MWP | CWP | N |")
            print("| --- | ---: | ---: | ---: | ---: | --- | --- | --- | --- |")
            frames = tables[suite]
            hk = frames["hong-kim"]
            for cls, group in hk.groupby("kernel_class"):
                errors = [geometric_mean(frames[m][frames[m].kernel_class == cls].rel_error)
                          for m in ("paper", "kernelcast")]
                verdicts = group.verdict.value_counts()
                verdict = ", ".join(f"{v} {n}" for v, n in verdicts.items())
                ranges = [f"{group[q].min():.3g}–{group[q].max():.3g}"
                          for q in ("mwp", "cwp", "n")]
                print(f"| {cls} | {len(group)} | {_pct(errors[0])} | {_pct(errors[1])} | "
                      f"{_pct(geometric_mean(group.rel_error))} | {verdict} | "
                      + " | ".join(ranges) + " |")
            overall = [geometric_mean(frames[m].rel_error)
                       for m in ("paper", "kernelcast", "hong-kim")]
            print(f"| overall | {len(hk)} | " + " | ".join(map(_pct, overall))
                  + " | | | | |")
        print()


if __name__ == "__main__":
    main()
