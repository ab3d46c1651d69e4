"""Check every kernel of both suites against its NumPy reference on a device.

Prints, per kernel, the relative error of each output (or the failure) and the time the
check took (code generation, compile, one run). Run:
    .venv/bin/python benchmarks/check_kernels.py --backend opencl --device NVIDIA
"""

import argparse
import time
import warnings

from kernelcast.measure.backends import make_backend
from kernelcast.suites.paper import MEASUREMENT, TEST
from kernelcast.measure.verify import TOLERANCE, check_case


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="opencl")
    parser.add_argument("--device")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    backend = make_backend(args.backend, args.device)
    print(f"{backend.device.name} ({backend.name}, driver {backend.device.driver})")
    failures = 0
    for suite in (MEASUREMENT, TEST):
        seen = set()
        for case in suite.cases():
            key = (case.class_name, case.variant, case.dtype)
            if key in seen:
                continue
            seen.add(key)
            start = time.perf_counter()
            try:
                errors = check_case(case.check_case(), backend)
                worst = max(errors.values(), default=0.0)
                ok = worst <= TOLERANCE[case.dtype]
                what = ", ".join(f"{k} {v:.2e}" for k, v in errors.items()) or "no outputs"
            except Exception as err:  # noqa: BLE001 - report and go on
                ok, what = False, f"{type(err).__name__}: {err}"
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {case.kernel_name:<44} "
                  f"{time.perf_counter() - start:5.2f} s  {what}", flush=True)
    print(f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
