"""The PTX that NVIDIA's OpenCL compiler makes of a few suite kernels, to see how it
schedules their loops (docs/results.md, issue 6: why N-body's iterations do not overlap,
whether the guarded microbenchmarks' do, how convolution's loops are scheduled, and how
the fetch loops of a tile with halo are: finite differences, the halo microbenchmarks).

Writes OUTDIR/<kernel>.cl (kernelcast's generated code) and OUTDIR/<kernel>.ptx (the
program binary NVIDIA's OpenCL returns, which is PTX text) and prints, per kernel, the
shared-memory loads, rsqrt instructions and branches in the PTX. Needs the NVIDIA GPU.
Run on the device: python3 benchmarks/device_ptx.py OUTDIR

PTX does not show which branches the compilers later predicate away: for the machine code
that runs, see benchmarks/device_sass.py.
"""

import sys
from pathlib import Path

import pyopencl as cl

from kernelcast.measure.codegen import generate
from kernelcast.suites.extension import chain, guarded, halo, parallelism
from kernelcast.suites.kernels import convolution, finite_difference, nbody

KERNELS = {"nbody": nbody(), "convolution": convolution(),
           "finite_difference": finite_difference(), "parallelism_local": parallelism("local"),
           "parallelism_columns": parallelism("columns"), "chain_special": chain("special"),
           **{f"guarded_{v}": guarded(v) for v in ("local", "special", "global")},
           "halo_r2": halo("r2", (32, 8)), "halo_r8": halo("r8", (64, 4))}


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    platform = next(p for p in cl.get_platforms() if "NVIDIA" in p.name)
    ctx = cl.Context(platform.get_devices())
    for name, knl in KERNELS.items():
        code = generate(knl, "opencl").code
        ptx = cl.Program(ctx, code).build().binaries[0].decode(errors="replace").rstrip("\x00")
        (out / f"{name}.cl").write_text(code)
        (out / f"{name}.ptx").write_text(ptx)
        print(name, "ld.shared", ptx.count("ld.shared"), "rsqrt", ptx.count("rsqrt"),
              "branches", ptx.count("bra "),
              "ld.global", ptx.count("ld.global"))


if __name__ == "__main__":
    main()
