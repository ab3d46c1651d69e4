"""What a serialized iteration's index arithmetic costs: five hand-written OpenCL kernels.

Each work-item of two work-groups sums m terms, every term under the condition that skips
its own index (the ``guarded`` microbenchmarks' and N-body's structure), reading a local
tile either through a masked index, ``tile[(lid + k) & 255]`` as ``guarded`` does, or
through an index affine in an unrolled loop, ``tile[lid + ki]`` over tiles of 256 as
N-body's ``tile[k, j]`` is:

- ``mask`` and ``affine``: a term is the rsqrt of one tile value;
- ``affine_broadcast``: as ``affine``, every work-item reading ``tile[ki]``;
- ``mask_3d`` and ``affine_3d``: a term is the rsqrt of a squared distance of three
  coordinates, N-body's pair term.

Prints the time per term (from m = 512 and m = 4096) and, from the PTX compiled by the
``ptxas`` on the PATH, each kernel's convergence barriers (``BSSY``: iterations that stay
branches), loads and special-function instructions (device_sass.summary). Needs NVIDIA's OpenCL, ``ptxas``
and ``cuobjdump``. Run on the device: python3 benchmarks/device_index_probe.py
"""

import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pyopencl as cl

from device_sass import sass_of, summary  # beside this file

_HEAD = ("__kernel void __attribute__((reqd_work_group_size(256, 1, 1))) NAME("
         "__global float *out, __global const float *a, int m) {\n"
         "  int lid = get_local_id(0), g = get_group_id(0); float acc = 0.0f;\n")
_ONE = ("  __local float tile[512]; tile[lid] = a[256*g + lid]; tile[256 + lid] = tile[lid];\n"
        "  barrier(CLK_LOCAL_MEM_FENCE);\n")
_THREE = ("  __local float tx[256], ty[256], tz[256]; tx[lid] = a[256*g + lid];\n"
          "  ty[lid] = 2.0f*tx[lid]; tz[lid] = 3.0f*tx[lid]; barrier(CLK_LOCAL_MEM_FENCE);\n"
          "  float x = tx[lid], y = ty[lid] + 0.5f, z = tz[lid] + 0.25f;\n")
_MASK = "  for (int k = 0; k < m; ++k) if (k != lid) { int j = (lid + k) & 255;\n"
_AFFINE = ("  for (int ko = 0; ko < m / 256; ++ko) for (int ki = 0; ki < 256; ++ki)\n"
           "    if (256*ko + ki != lid) { int j = J;\n")
_TERM = "    acc = acc + rsqrt(tile[j]); }\n"
_PAIR = ("    float s = (x - tx[j])*(x - tx[j]); s = s + (y - ty[j])*(y - ty[j]);\n"
         "    s = s + (z - tz[j])*(z - tz[j]); acc = acc + rsqrt(s); }\n")
_TAIL = "  out[256*g + lid] = acc;\n}\n"

KERNELS = {
    "mask": _HEAD + _ONE + _MASK + _TERM + _TAIL,
    "affine": _HEAD + _ONE + _AFFINE.replace("J", "lid + ki") + _TERM + _TAIL,
    "affine_broadcast": _HEAD + _ONE + _AFFINE.replace("J", "ki") + _TERM + _TAIL,
    "mask_3d": _HEAD + _THREE + _MASK + _PAIR + _TAIL,
    "affine_3d": _HEAD + _THREE + _AFFINE.replace("J", "ki") + _PAIR + _TAIL,
}


def main():
    platform = next(p for p in cl.get_platforms() if "NVIDIA" in p.name)
    ctx = cl.Context(platform.get_devices())
    queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    source = "".join(text.replace("NAME", name) for name, text in KERNELS.items())
    program = cl.Program(ctx, source).build()
    ng = 2
    values = (np.random.default_rng(0).random(256 * ng) + 0.5).astype(np.float32)
    a = cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=values)
    out = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, 4 * 256 * ng)
    for name in KERNELS:
        kernel = getattr(program, name)
        best = {}
        for m in (512, 4096):
            kernel.set_args(out, a, np.int32(m))
            events = [cl.enqueue_nd_range_kernel(queue, kernel, (256 * ng,), (256,))
                      for _ in range(30)]
            cl.wait_for_events(events)
            best[m] = min((e.profile.end - e.profile.start) * 1e-9 for e in events[4:])
        print(f"{name}: m = 512 {best[512] * 1e6:.1f} µs, m = 4096 {best[4096] * 1e6:.1f} µs,"
              f" {(best[4096] - best[512]) / 3584 * 1e9:.1f} ns per term")
    with tempfile.TemporaryDirectory() as tmp:
        ptx = Path(tmp) / "probe.ptx"
        ptx.write_bytes(program.binaries[0].rstrip(b"\0"))
        subprocess.run(["ptxas", "-arch=sm_90", str(ptx), "-o", str(ptx.with_suffix(".cubin"))],
                       check=True)
        for name, sass in sass_of(ptx.with_suffix(".cubin")).items():
            print(f"{name}: {summary(sass)}")


if __name__ == "__main__":
    main()
