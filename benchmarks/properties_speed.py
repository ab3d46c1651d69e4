"""Extraction and evaluation speed of kernel properties for the paper's kernels.

Prints, per kernel: the wall time of the first extract_properties in a fresh process
(Loopy's disk cache disabled, so nothing is reused from earlier runs), the median of
--repeat further extractions in that process (fresh kernel objects each time), and the
mean time of Properties.evaluate for new parameter values. Targets: extraction <= 2 s on
a 2-core machine, evaluation <= 50 µs. Run:  .venv/bin/python benchmarks/properties_speed.py

With --families [STEP], instead: per tuning family (kernelcast.tune.families), the CPU
time per variant (every STEP-th valid variant at a group size of at most 1024) of making
it with Loopy's transformations, and of cached_properties on a cold cache (a fresh folder)
followed by one evaluate_with_extent at the family's sizes: what ranking a variant costs
besides the model (issue 23: 1,000 variants in 60 s on two cores, about 120 ms each).
"""

import os

os.environ["LOOPY_NO_CACHE"] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import kernelcast as kc  # noqa: E402
from kernelcast.suites import kernels  # noqa: E402

CASES = {
    "scale (§3.1)": lambda: kernels.scale(256),
    "matmul tiled 16x16 (§4.1)": lambda: kernels.matmul_tiled((16, 16)),
    "matmul tiled 16x12 (§4.1)": lambda: kernels.matmul_tiled((16, 12)),
    "finite differences (§5)": lambda: kernels.finite_difference((16, 16)),
    "N-body (§5)": lambda: kernels.nbody(256),
    "convolution (§5)": lambda: kernels.convolution((16, 16)),
}


def time_extraction(factory, repeat):
    times = []
    for _ in range(repeat):
        knl = factory()
        start = time.perf_counter()
        props = kc.extract_properties(knl)
        times.append(time.perf_counter() - start)
    return props, statistics.median(times), max(times)


def time_evaluation(props, calls):
    sizes = [{p: 1024 + 16 * ((i * 7 + j) % 97) for j, p in enumerate(props.params)}
             for i in range(calls)]
    start = time.perf_counter()
    for params in sizes:
        props.evaluate(params)
    return (time.perf_counter() - start) / calls


def measure_one(name, repeat, calls):
    """All measurements for one kernel, in this (fresh) process."""
    warnings.simplefilter("ignore")
    knl = CASES[name]()
    start = time.perf_counter()
    kc.extract_properties(knl)
    first = time.perf_counter() - start
    props, median, _worst = time_extraction(CASES[name], repeat)
    return {"first": first, "median": median, "names": len(props.names),
            "evaluate": time_evaluation(props, calls)}


def time_families(step):
    """CPU seconds per variant, by family: (make, cold cached_properties + evaluate)."""
    import tempfile

    from kernelcast.properties import cached_properties
    from kernelcast.tune.families import FAMILIES
    from kernelcast.tune.space import apply, invalid

    warnings.simplefilter("ignore")
    folder = tempfile.mkdtemp(prefix="kernelcast-cold-")
    print(f"{'family':10s} {'variants':>8s} {'make':>9s} {'properties':>11s} {'worst':>9s}")
    total = []
    for name, fam in FAMILIES.items():
        variants = [v for v in fam.space.variants()
                    if invalid(v, fam.space, max_group_size=1024) is None][::step]
        made, counted = [], []
        for variant in variants:
            start = time.process_time()
            knl = apply(fam.build(), variant, fam.space)
            middle = time.process_time()
            cached_properties(knl, cache_dir=folder).evaluate_with_extent(fam.params)
            made.append(middle - start)
            counted.append(time.process_time() - middle)
        total += [m + c for m, c in zip(made, counted)]
        print(f"{name:10s} {len(variants):8d} {1e3 * statistics.mean(made):6.1f} ms "
              f"{1e3 * statistics.mean(counted):8.1f} ms {1e3 * max(counted):6.0f} ms")
    print(f"{'all':10s} {len(total):8d} {'':>9s} {1e3 * statistics.mean(total):8.1f} ms "
          "(make + properties)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--families", type=int, nargs="?", const=1, metavar="STEP")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.families:
        time_families(args.families)
        return
    if args.one:
        print(json.dumps(measure_one(args.one, args.repeat, args.calls)))
        return
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}")
    print(f"{'kernel':28s} {'properties':>10s} {'first extract':>14s} {'then median':>12s} "
          f"{'evaluate':>10s}")
    for name in CASES:
        out = subprocess.run([sys.executable, __file__, "--one", name, "--repeat",
                              str(args.repeat), "--calls", str(args.calls)],
                             capture_output=True, text=True, check=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        print(f"{name:28s} {r['names']:10d} {r['first']:12.3f} s {r['median']:10.3f} s "
              f"{r['evaluate'] * 1e6:7.1f} µs")


if __name__ == "__main__":
    main()
