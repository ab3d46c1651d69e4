"""Backends that compile, run and time generated kernels: OpenCL (pyopencl) and CUDA (cupy).

``Backend`` (base.py) is the abstract interface: compile, allocate, time_launches and read
are abstract; release and identity are shared. opencl.py and cuda.py implement it; neither
imports its GPU library until a backend is made, so importing this package loads neither
pyopencl nor cupy.

Failures raise CompileError, OutOfMemory or LaunchError, which a campaign records as the
statuses compile_error, out_of_memory and launch_error.

Public names: Backend, OpenCLBackend, CudaBackend, make_backend, check_fits, CompileError,
OutOfMemory, LaunchError.
"""

from __future__ import annotations

from kernelcast.measure.backends.base import (
    Backend,
    CompileError,
    LaunchError,
    OutOfMemory,
    check_fits,
)
from kernelcast.measure.backends.cuda import CudaBackend
from kernelcast.measure.backends.opencl import OpenCLBackend
from kernelcast.measure.devices import find_device

__all__ = ["Backend", "CompileError", "CudaBackend", "LaunchError", "OpenCLBackend",
           "OutOfMemory", "check_fits", "make_backend"]


def make_backend(backend: str = "opencl", device: str | None = None,
                 build_options: str = "") -> Backend:
    """A backend on the device whose name contains *device* (the best one if None)."""
    info = find_device(device, backend)
    if backend == "cuda":
        return CudaBackend(info, build_options)
    return OpenCLBackend(info, build_options)
