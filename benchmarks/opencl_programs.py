"""Time the OpenCL programs of kernelcast.suites.opencl_programs on one OpenCL device.

  measure: each launch of the chosen sizes (the two "gpu" sizes of every kernel, or the
      "pocl" size) is built with its options, run once on its inputs and checked against
      its NumPy reference (a wrong answer is stored as such and not timed), then timed by
      the paper's protocol (kernelcast.measure.protocol: 30 runs, the first 4 dropped,
      the minimum kept, up to 2 more attempts while the median is more than 10% above the
      minimum) with the OpenCL backend's event timer. Rows go to the measurement store
      DIR/opencl-programs.sqlite, committed one by one; launches already stored there are
      skipped, so a killed run resumes. DIR/opencl-programs.json records the device, its
      driver, the date and how many rows of each status the store holds.

  evaluate (anywhere, no device): every model that takes OpenCL source predicts every
      launch timed in DIR/opencl-programs.sqlite from the source alone, with the
      committed OpenCL profiles of the store's device (data/profiles/): Pöppl–Herz (its
      classes and its simple variant) from the front-end's counts, the paper, extended
      and Hong–Kim models from the paper's properties of the source. Each launch is
      counted at its launch, scalar arguments, build options, array lengths and, for the
      one loop that reads data (spmv's rows), the mean trip count of its matrix
      (Launch.stats). Writes DIR/opencl-programs-eval.json: per model the share of
      launches with 0.7 < predicted/measured < 1.3, the geometric-mean relative error and
      every ratio. None of these kernels is in any fitting set.

Run:  python benchmarks/opencl_programs.py measure --out data/h100 [--device NVIDIA]
          [--sizes gpu|pocl] [--only KERNEL ...] [--runs 30 --drop 4]
      python benchmarks/opencl_programs.py evaluate --dir data/h100
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import math
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

SUITE = {"gpu": "opencl-programs", "pocl": "opencl-programs-cpu"}


def measure(args) -> int:
    from kernelcast.measure.backends import make_backend
    from kernelcast.measure.store import Store, measurement_key
    from kernelcast.suites.opencl_programs import PROGRAMS, measure_launch, source
    from kernelcast.version import __version__

    out = Path(args.out)
    launches = [launch for launch in PROGRAMS if launch.size == args.sizes
                and (not args.only or launch.kernel in args.only)]
    if not launches:
        print(f"no launch of size {args.sizes} is named by --only", file=sys.stderr)
        return 2
    path = out / "opencl-programs.sqlite"
    start = time.monotonic()
    with make_backend("opencl", args.device, isolated=False) as backend, \
            Store(path, backend.identity, create_dirs=True) as store:
        device = backend.device
        print(f"{device.name} ({device.platform}, driver {device.driver}): "
              f"{len(launches)} launches into {path}", flush=True)
        done = store.keys()
        for i, launch in enumerate(launches, 1):
            text = source(launch)
            sha = hashlib.sha256(text.encode()).hexdigest()
            key = measurement_key(launch.name, sha, launch.options, launch.params,
                                  backend.identity, __version__)
            head = f"[{i}/{len(launches)} {time.monotonic() - start:.0f}s] {launch.name}"
            if key in done:
                print(f"{head}: already in store", flush=True)
                continue
            row = {"key": key, "case_name": launch.name, "suite": SUITE[launch.size],
                   "kernel_class": launch.kernel, "variant": launch.program,
                   "dtype": launch.dtype, "group_size": list(launch.local_size),
                   "params": launch.params, "kernelcast_version": __version__,
                   "code_sha256": sha, "build_options": launch.options,
                   **measure_launch(backend, launch, text, args.runs, args.drop)}
            store.add_code(sha, "opencl", text)
            store.add(row)
            if row.get("min_s") is not None:
                what = (f"{row['status']} min {row['min_s'] * 1e6:.1f} µs, median "
                        f"+{(row['median_s'] / row['min_s'] - 1) * 100:.1f}%")
            else:
                what = f"{row['status']}: {(row.get('message') or '')[:200]}"
            print(f"{head}: {what}", flush=True)
        rows = store.rows()
        info = {"device": device.name, "driver": device.driver, "platform": device.platform,
                "compute_units": device.compute_units, "instance": device.instance,
                "sizes": args.sizes,
                "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                "count": len(rows), "statuses": dict(Counter(r["status"] for r in rows)),
                "kernels": len({r["kernel_class"] for r in rows})}
    (out / "opencl-programs.json").write_text(json.dumps(info, indent=1) + "\n")
    print(json.dumps(info), f"{time.monotonic() - start:.0f} s", flush=True)
    return 0


MODELS = ("poppl-herz", "poppl-herz-simple", "paper", "extended", "hong-kim")


def predictions(launch, profiles: dict) -> dict:
    """{model: seconds or the error's text} of one launch, from its source alone."""
    import warnings

    from kernelcast.errors import KernelcastError
    from kernelcast.frontends.opencl import count_kernel
    from kernelcast.properties.opencl import opencl_properties
    from kernelcast.suites.opencl_programs import source

    out = {}
    try:
        counts = count_kernel(source(launch), launch.kernel, path=launch.program,
                              options=launch.options, scalars=launch.scalars,
                              global_size=launch.global_size, local_size=launch.local_size,
                              stats=launch.stats)
    except KernelcastError as err:
        return {m: f"{type(err).__name__}: {err}" for m in profiles}
    params = {"global_size": list(launch.global_size), "local_size": list(launch.local_size)}
    props = None
    for name, model in profiles.items():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if name.startswith("poppl-herz"):
                    out[name] = float(model.predict(counts, params))
                else:
                    if props is None:
                        props = opencl_properties(
                            counts, launch.global_size, launch.local_size,
                            scalars=launch.scalars,
                            array_elements={a: n for a, (_, n) in launch.arrays.items()})
                    out[name] = float(model.predict(props, {}))
        except (KernelcastError, ArithmeticError, ValueError) as err:
            out[name] = f"{type(err).__name__}: {err}"
    return out


def summary(ratios: list[float]) -> dict:
    import numpy as np
    from statistics import geometric_mean

    r = np.array(ratios, dtype=float)
    return {"launches": len(r), "within_30pct": float(np.mean((r > 0.7) & (r < 1.3))),
            "geomean_rel_error": float(geometric_mean(np.maximum(np.abs(r - 1), 1e-12))),
            "median_ratio": float(np.median(r))}


def evaluate(args) -> int:
    from kernelcast.measure.store import Store
    from kernelcast.profile import load_profile
    from kernelcast.suites.opencl_programs import PROGRAMS

    folder = Path(args.dir)
    with Store(folder / "opencl-programs.sqlite") as store:
        device = store.identity["device"]
        rows = [r for r in store.rows() if not r["damage"]]
    timed = {r["case_name"]: r["min_s"] for r in rows if r["status"] in ("ok", "unstable")}
    profiles, sources = {}, {}
    for name in args.models:  # poppl-herz-simple: the poppl-herz model without classes
        found = [p for p in sorted((ROOT / "data" / "profiles").glob(f"*-opencl-{name}.json"))
                 if json.loads(p.read_text())["device"] == device]
        if not found:
            print(f"{name}: no committed OpenCL profile of {device}; left out")
            continue
        path = found[0]
        profiles[name], sources[name] = load_profile(path), str(path.relative_to(ROOT))
    launches = [launch for launch in PROGRAMS if launch.name in timed]
    per_launch, started = [], time.monotonic()
    for i, launch in enumerate(launches, 1):
        predicted = predictions(launch, profiles)
        per_launch.append({"launch": launch.name, "kernel": launch.kernel,
                           "program": launch.program, "measured_s": timed[launch.name],
                           "predicted_s": predicted})
        print(f"[{i}/{len(launches)} {time.monotonic() - started:.0f}s] {launch.name}: "
              f"measured {timed[launch.name] * 1e6:.1f} µs; " + ", ".join(
                  f"{m} {v / timed[launch.name]:.2f}" if isinstance(v, float) else
                  f"{m} failed" for m, v in predicted.items()), flush=True)
    models = {}
    for name in profiles:
        ratios = [e["predicted_s"][name] / e["measured_s"] for e in per_launch
                  if isinstance(e["predicted_s"][name], float)]
        failed = [e["launch"] for e in per_launch if not isinstance(e["predicted_s"][name], float)]
        models[name] = {"profile": sources[name], **summary(ratios), "failed": failed}
        print(f"{name}: {models[name]['within_30pct']:.0%} within 0.7-1.3, geomean error "
              f"{models[name]['geomean_rel_error']:.0%}, median ratio "
              f"{models[name]['median_ratio']:.2f} over {len(ratios)} launches"
              + (f"; {len(failed)} not predicted" if failed else ""))
    best = [min((abs(math.log(e["predicted_s"][m] / e["measured_s"])), m)
                for m in profiles if isinstance(e["predicted_s"][m], float))
            for e in per_launch
            if any(isinstance(e["predicted_s"][m], float) for m in profiles)]
    info = json.loads((folder / "opencl-programs.json").read_text())
    doc = {"device": device, "driver": info.get("driver"), "measured": info.get("date"),
           "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
           "launches": len(per_launch), "kernels": len({e["kernel"] for e in per_launch}),
           "models": models,
           "best_per_launch": {"within_30pct": float(sum(b[0] < math.log(1.3) and
                                                        b[0] < -math.log(0.7)
                                                        for b in best) / len(per_launch)),
                               "models": dict(Counter(b[1] for b in best))},
           "per_launch": per_launch}
    (folder / "opencl-programs-eval.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {folder / 'opencl-programs-eval.json'}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    m = verbs.add_parser("measure", help="check and time every launch into DIR")
    m.add_argument("--out", required=True, help="folder of the store and the JSON summary")
    m.add_argument("--device", help="a substring of the OpenCL platform or device name")
    m.add_argument("--sizes", choices=("gpu", "pocl"), default="gpu")
    m.add_argument("--only", nargs="+", metavar="KERNEL", help="only these kernels")
    m.add_argument("--runs", type=int, default=30, help="launches per attempt (30)")
    m.add_argument("--drop", type=int, default=4, help="first launches dropped (4)")
    e = verbs.add_parser("evaluate", help="predict every timed launch with every model")
    e.add_argument("--dir", required=True, help="folder of opencl-programs.sqlite")
    e.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    args = parser.parse_args()
    return measure(args) if args.verb == "measure" else evaluate(args)


if __name__ == "__main__":
    sys.exit(main())
