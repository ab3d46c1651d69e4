"""The paper's model against kernelcast's, on every GPU store in data/, without a GPU.

For each store (default: OpenCL and CUDA on the H100 and the H200) fits both models —
the paper's (its measurement suite, unconstrained relative least squares) and kernelcast's
(measurement + extension suites, non-negative) — and prints in markdown:

1. geometric-mean relative error per test kernel and per validation kernel, both models;
   and, for OpenCL, Table 1 with every test case and both models' predictions;
2. leave-one-class-out cross-validation over each model's fitting classes;
3. cross-GPU: profiles fitted on the H100 predicting the H200's measurements;
4. the kernelcast weights of the two GPUs side by side;
5. the device wall time of each campaign step (data/<gpu>/campaign*.txt).

``--profiles DIR`` also writes every fitted profile there. Run:
    .venv/bin/python benchmarks/model_comparison.py [--profiles data/profiles]
"""

import argparse
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from kernelcast.evaluate import (PropertyCache, cross_validate, fit_profile, geometric_mean,
                                 summarize, table1)
from kernelcast.measure.store import Store
from kernelcast.workflow import _slug

MODELS = ("paper", "kernelcast")
GPUS = ("h100", "h200")
BACKENDS = ("opencl", "cuda")


def _pct(x):
    return f"{x:.1%}"


def _per_kernel(tables: dict) -> pd.DataFrame:
    """One column per model: geometric-mean relative error per kernel, and overall."""
    return pd.DataFrame({m: summarize(t).geomean_rel_error for m, t in tables.items()})


def _markdown(frame: pd.DataFrame, fmt=_pct, first="kernel") -> str:
    cols = list(frame.columns)
    lines = [f"| {first} | " + " | ".join(map(str, cols)) + " |",
             "| --- |" + " ---: |" * len(cols)]
    for index, row in frame.iterrows():
        lines.append(f"| {index} | " + " | ".join(
            fmt(v) if isinstance(v, float) and not np.isnan(v) else str(v) if isinstance(
                v, str) else "–" for v in row) + " |")
    return "\n".join(lines)


def _side_by_side(paper: pd.DataFrame, ours: pd.DataFrame) -> str:
    """One row per test case: measured, and each model's prediction and relative error."""
    lines = ["| kernel | sizes | measured | paper | error | kernelcast | error |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for a, b in zip(paper.itertuples(), ours.itertuples(), strict=True):
        assert a.case_name == b.case_name
        sizes = ", ".join(f"{k}={v}" for k, v in a.params.items())
        lines.append(f"| {a.kernel_class} | {sizes} | {a.measured_s * 1e6:.1f} | "
                     f"{a.predicted_s * 1e6:.1f} | {_pct(a.rel_error)} | "
                     f"{b.predicted_s * 1e6:.1f} | {_pct(b.rel_error)} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="data")
    parser.add_argument("--profiles", help="write the fitted profiles into this folder")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    cache = PropertyCache()
    profiles = {}
    for gpu in GPUS:
        for backend in BACKENDS:
            path = Path(args.data) / gpu / f"{backend}.sqlite"
            if not path.exists():
                continue
            with Store(path) as store:
                ident = store.identity
                print(f"## {ident['device']}, {backend} (driver {ident['driver']})\n")
                tables = {}
                for model in MODELS:
                    profile = fit_profile(store, model=model, cache=cache)
                    profiles[gpu, backend, model] = profile
                    tables[model] = {s: table1(profile, store, s, cache)
                                     for s in ("test", "validation")}
                    print(f"- {model}: fitted on {profile.fit['cases']} cases of "
                          f"{' + '.join(profile.fit['suites'])}, training error "
                          f"{_pct(profile.fit['training_geomean_rel_error'])}")
                    if args.profiles:
                        name = f"{_slug(ident['device'])}-{backend}"
                        name += "" if model == "paper" else f"-{model}"
                        profile.save(Path(args.profiles) / f"{name}.json")
                for suite in ("test", "validation"):
                    print(f"\n{suite} kernels, geometric mean of relative error:\n")
                    print(_markdown(_per_kernel({m: tables[m][suite] for m in MODELS})))
                if backend == "opencl":
                    print("\nTable 1, every test case, both models (times in µs):\n")
                    print(_side_by_side(tables["paper"]["test"], tables["kernelcast"]["test"]))
                print("\nleave-one-class-out cross-validation over the fitting classes:\n")
                cv = {m: summarize(cross_validate(store, cache=cache, model=m))
                      for m in MODELS}
                frame = pd.DataFrame({m: cv[m].geomean_rel_error for m in MODELS})
                print(_markdown(frame) + "\n")

    print("## Cross-GPU: H100 profiles predicting H200 measurements\n")
    rows = {}
    for backend in BACKENDS:
        path = Path(args.data) / "h200" / f"{backend}.sqlite"
        if not path.exists() or ("h100", backend, "paper") not in profiles:
            continue
        with Store(path) as store:
            for model in MODELS:
                for suite in ("test", "validation"):
                    own = table1(profiles["h200", backend, model], store, suite, cache)
                    other = table1(profiles["h100", backend, model], store, suite, cache,
                                   other_device=True)
                    rows[f"{backend} {model} {suite}"] = {
                        "H200 profile": geometric_mean(own.rel_error),
                        "H100 profile": geometric_mean(other.rel_error),
                        "H100 predicted / H200 measured": "{:.2f}".format(geometric_mean(
                            other.predicted_s / other.measured_s))}
    print(_markdown(pd.DataFrame(rows).T, first="backend, model, suite"))

    print("\n## kernelcast weights (OpenCL), H100 and H200\n")
    if ("h100", "opencl", "kernelcast") in profiles and ("h200", "opencl", "kernelcast") in profiles:
        a = profiles["h100", "opencl", "kernelcast"].weights
        b = profiles["h200", "opencl", "kernelcast"].weights
        names = [n for n in a if a[n] or b.get(n)]
        frame = pd.DataFrame({"H100 (s per unit)": [a[n] for n in names],
                              "H200 (s per unit)": [b.get(n, 0.0) for n in names]},
                             index=names)
        frame["H200 / H100"] = frame.iloc[:, 1] / frame.iloc[:, 0].replace(0, np.nan)
        print(_markdown(frame, fmt=lambda v: f"{v:.3g}", first="property"))
        for gpu, w in (("H100", a), ("H200", b)):
            if w.get("bytes_read"):
                print(f"\n{gpu}: 1/bytes_read = {1 / w['bytes_read'] / 1e12:.2f} TB/s")

    print("\n## Campaign wall time on the device\n")
    for gpu in GPUS:
        for log in sorted((Path(args.data) / gpu).glob("campaign*.txt")):
            steps = re.findall(r"^(\S+ \S+(?: \S+)? p=\S+): (\d+) ms wall", log.read_text(), re.M)
            for step, ms in steps:
                print(f"- {gpu} {step}: {int(ms) / 1000:.1f} s ({log.name})")


if __name__ == "__main__":
    main()
