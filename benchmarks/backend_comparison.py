"""Compare the OpenCL and CUDA timings of the same kernels on the same GPU, from data/.

Reads two measurement stores of one device (default: data/h100/opencl.sqlite and
data/h100/cuda.sqlite), pairs the cases both timed, and prints in markdown, per kernel class,
variant and precision, the geometric mean, minimum and maximum of CUDA time / OpenCL time
over cases whose OpenCL time exceeds --above (default 50 µs, clear of launch overhead), and
the same for the shortest cases. No GPU needed. Run:
    .venv/bin/python benchmarks/backend_comparison.py
"""

import argparse

import numpy as np

from kernelcast.measure.store import read_measurements


def geomean(values):
    return float(np.exp(np.log(values).mean()))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--opencl", default="data/h100/opencl.sqlite")
    parser.add_argument("--cuda", default="data/h100/cuda.sqlite")
    parser.add_argument("--above", type=float, default=50e-6)
    args = parser.parse_args()
    cl, cu = read_measurements(args.opencl), read_measurements(args.cuda)
    pairs = cl.merge(cu, on="case_name", suffixes=("_cl", "_cu"))
    pairs = pairs[pairs.min_s_cl.notna() & pairs.min_s_cu.notna()].copy()
    pairs["ratio"] = pairs.min_s_cu / pairs.min_s_cl
    pairs["kernel"] = (pairs.kernel_class_cl + pairs.variant_cl.map(lambda v: f"[{v}]" if v else "")
                       + " " + pairs.dtype_cl.fillna("-"))
    print(f"OpenCL: {cl.device[0]} driver {cl.driver[0]}, {len(cl)} rows, "
          f"{cl.recorded_at.min()[:10]}; CUDA: driver {cu.driver[0]}, {len(cu)} rows")
    print(f"paired cases: {len(pairs)}; CUDA/OpenCL geometric mean {geomean(pairs.ratio):.3f}")
    long = pairs[pairs.min_s_cl > args.above]
    print(f"cases above {args.above * 1e6:.0f} µs: {len(long)}, geometric mean "
          f"{geomean(long.ratio):.3f}\n")
    print("| kernel | cases | CUDA/OpenCL geo. mean | min | max | median OpenCL time |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for kernel, group in long.groupby("kernel"):
        print(f"| {kernel} | {len(group)} | {geomean(group.ratio):.3f} | {group.ratio.min():.3f} "
              f"| {group.ratio.max():.3f} | {group.min_s_cl.median() * 1e6:.0f} µs |")
    empty = pairs[pairs.kernel_class_cl == "empty"].sort_values("min_s_cl")
    print(f"\nshortest empty kernel: OpenCL {empty.min_s_cl.iloc[0] * 1e6:.1f} µs, "
          f"CUDA {empty.min_s_cu.iloc[0] * 1e6:.1f} µs")
    for name, frame in (("OpenCL", cl), ("CUDA", cu)):
        unstable = frame[frame.status == "unstable"]
        print(f"{name}: {len(unstable)} of {len(frame)} cases unstable (median > min + 10%), "
              f"all with min below {unstable.min_s.max() * 1e6:.1f} µs")


if __name__ == "__main__":
    main()
