"""Cost of predictions and of a calibration.

1. predict: mean wall time of kernelcast.predict for a kernel whose properties are already
   extracted (Properties.evaluate + the inner product with the profile), for the paper's
   test kernels at new sizes each call, with the H100 profiles of both models in
   data/profiles. Target <= 50 µs.
2. fit: wall time of fitting both models' H100 profiles from data/h100/opencl.sqlite
   (property extraction of the suites' kernels included, then without it).
3. calibration: wall time of `kernelcast calibrate` on this machine's best OpenCL device in
   a fresh folder (PoCL without a GPU: the measurement-cpu suite), unless --no-calibrate;
   and the device time the H100 campaigns took, from the stores' timestamps.
Run:  .venv/bin/python benchmarks/model_speed.py
"""

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import pandas as pd

import kernelcast as kc
from kernelcast.evaluate import PropertyCache, fit_profile
from kernelcast.measure.store import Store, read_measurements
from kernelcast.suites import kernels

ROOT = Path(__file__).resolve().parent.parent
KERNELS = {
    "finite differences": (lambda: kernels.finite_difference((16, 16)), lambda i: {"n": 1024 + i}),
    "skinny matmul": (lambda: kernels.matmul_tiled((16, 16)),
                      lambda i: {"n": 512 + i, "l": 512 + i, "m": 4096 + 8 * i}),
    "N-body": (lambda: kernels.nbody(256), lambda i: {"n": 1024 + i}),
    "convolution": (lambda: kernels.convolution((16, 16)), lambda i: {"n": 64 + i}),
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--no-calibrate", action="store_true")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    print(f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print("\npredict with properties extracted beforehand:")
    for model, suffix in (("paper", ""), ("kernelcast", "-kernelcast")):
        profile = kc.load_profile(
            ROOT / f"data/profiles/nvidia-h100-80gb-hbm3-opencl{suffix}.json")
        for name, (build, sizes) in KERNELS.items():
            props = kc.extract_properties(build())
            start = time.perf_counter()
            for i in range(args.calls):
                kc.predict(props, sizes(i % 1000), profile)
            per_call = (time.perf_counter() - start) / args.calls
            print(f"  {model:<10} {name:<20} {per_call * 1e6:6.1f} µs per prediction")

    with Store(ROOT / "data/h100/opencl.sqlite") as store:
        cache = PropertyCache()
        for model in ("paper", "kernelcast"):
            start = time.perf_counter()
            fitted = fit_profile(store, cache=cache, model=model)
            first = time.perf_counter() - start
            start = time.perf_counter()
            fit_profile(store, cache=cache, model=model)
            again = time.perf_counter() - start
            print(f"\nfit of the H100 {model} profile ({fitted.fit['cases']} cases): "
                  f"{first:.1f} s with property extraction of what it has not seen, "
                  f"{again:.2f} s without")

    for backend in ("opencl", "cuda"):
        frame = read_measurements(ROOT / f"data/h100/{backend}.sqlite")
        first = frame[frame.p.notna()].head(800)
        stamps = pd.to_datetime(first.recorded_at)
        gaps = stamps.diff().dt.total_seconds().fillna(0)
        campaign = first[(gaps.cumsum() < 60) | (gaps.cumsum() == 0)]
        seconds = (pd.to_datetime(campaign.recorded_at).max()
                   - pd.to_datetime(campaign.recorded_at).min()).total_seconds()
        print(f"H100 {backend}: first measurement campaign, {len(campaign)} cases in "
              f"{seconds:.0f} s (from the store's timestamps)")

    if not args.no_calibrate:
        with tempfile.TemporaryDirectory() as folder:
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "kernelcast", "calibrate"], cwd=folder,
                           check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            elapsed = time.perf_counter() - start
        print(f"\ncalibration on this machine's best OpenCL device, fresh folder: "
              f"{elapsed:.0f} s wall time")


if __name__ == "__main__":
    main()
