"""Backends that compile, run and time generated kernels: OpenCL (pyopencl) and CUDA (cupy).

``Backend`` (base.py) is the abstract interface: compile, allocate, time_launches and read
are abstract; release and identity are shared. opencl.py and cuda.py implement it; neither
imports its GPU library until a backend is made, so importing this package loads neither
pyopencl nor cupy. make_backend gives a backend that holds its device's lock and, by
default, runs in a worker process that may crash without taking the caller with it.

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
from kernelcast.measure.devices import DeviceInfo, find_device, find_instance

__all__ = ["Backend", "CompileError", "CudaBackend", "LaunchError", "OpenCLBackend",
           "OutOfMemory", "check_fits", "make_backend"]


def make_backend(backend: str = "opencl", device: str | None = None,
                 build_options: str = "", *, isolated: bool = True, wait: float = 0.0,
                 locked: bool = True):
    """A backend on the device whose name contains *device* (the best one if None; a
    DeviceInfo: that device),
    holding the device's lock (waiting up to *wait* seconds for it) until closed; in a
    worker process (kernelcast.measure.backends.isolated) unless *isolated* is False.
    Without *locked*, no lock: for a process that only names the device to workers
    that hold their own (kernelcast.tune.distributed)."""
    from kernelcast.measure.lock import DeviceLock

    if isinstance(device, DeviceInfo):  # that very device (#INDEX is per platform)
        info = find_instance(device.instance, backend, device.name)
    else:
        info = find_device(device, backend)
    lock = DeviceLock(info, wait) if locked else None
    try:
        if isolated:
            from kernelcast.measure.backends.isolated import IsolatedBackend

            return IsolatedBackend(backend, info, build_options, lock)
        made = (CudaBackend if backend == "cuda" else OpenCLBackend)(info, build_options)
    except BaseException:
        if lock is not None:
            lock.release()
        raise
    made.lock = lock
    return made
