"""The interface every measurement backend implements, and the errors a backend raises.

A backend takes a GeneratedKernel (kernelcast.measure.codegen), compiles it with the
vendor's compiler, allocates its arrays on the device (random inputs in [0.5, 1.5), outputs
poisoned with NaN), launches it with device events around each launch, reads arrays back
for checking, and frees everything after each case.

Failures raise CompileError (its message holds the compiler's own log), OutOfMemory or
LaunchError, which a campaign records as the statuses compile_error, out_of_memory and
launch_error.

A campaign uses only compile, run_once and time_case, so a backend can equally run in this
process or in a worker process (kernelcast.measure.backends.isolated) that may crash
without taking the campaign with it. A backend may hold its device's lock (kernelcast.measure.lock) until
closed.

Public names: Backend, DeviceHolder, CompileError, OutOfMemory, LaunchError, check_fits, host_view,
compiler_log, captured_stderr.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from abc import ABC, abstractmethod

import numpy as np

from kernelcast.errors import KernelcastError
from kernelcast.measure import protocol
from kernelcast.measure.devices import DeviceInfo
from kernelcast.measure.launch import ArraySpec


class CompileError(KernelcastError):
    """The device compiler rejected the generated code."""


class OutOfMemory(KernelcastError):
    """The arrays of a case do not fit on the device."""


class LaunchError(KernelcastError):
    """The kernel failed while running."""


def check_fits(device: DeviceInfo, specs: list[ArraySpec]) -> None:
    """Raise OutOfMemory unless the arrays *specs* fit in the memory of *device*."""
    total = sum(s.nbytes for s in specs)
    largest = max((s.nbytes for s in specs), default=0)
    if total > device.global_mem_bytes or largest > device.max_alloc_bytes:
        raise OutOfMemory(
            f"needs {total / 2**30:.2f} GiB (largest array {largest / 2**30:.2f} GiB); "
            f"{device.name} has {device.global_mem_bytes / 2**30:.2f} GiB "
            f"(largest allocation {device.max_alloc_bytes / 2**30:.2f} GiB)")


@contextlib.contextmanager
def captured_stderr():
    """What is written to file descriptor 2 during the block (a device compiler writes its
    diagnostics there, past Python), as the one string in the yielded list."""
    out = []
    with tempfile.TemporaryFile(mode="w+b") as capture:
        saved = os.dup(2)
        os.dup2(capture.fileno(), 2)
        try:
            yield out
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            out.append(capture.read().decode("utf-8", "replace"))


_NOISE = re.compile(r"^(Build on <.*>:|\(options: .*\))$")


def compiler_log(summary: str, error_text: str, captured: str = "", limit: int = 4000) -> str:
    """One message for a failed build: *summary*, the first error line, then the log
    (the error's own text, minus repetitions and object addresses, and what the compiler
    printed), at most *limit* characters."""
    head, _, rest = error_text.partition("\n")
    head = " - ".join(dict.fromkeys(part.strip() for part in head.split(" - ")))
    lines = [line for line in (rest + "\n" + captured).splitlines()
             if line.strip() and not _NOISE.match(line.strip())]
    first = next((line.strip() for line in lines if "error" in line.lower()), head)
    log = "\n".join(dict.fromkeys(lines))
    return f"{summary}: {first}\n{head}\n{log}"[:limit]


def host_view(flat: np.ndarray, spec: ArraySpec) -> np.ndarray:
    """The host copy *flat* of a device buffer, viewed with the shape and strides of
    *spec*."""
    item = spec.dtype.itemsize
    return np.lib.stride_tricks.as_strided(flat, spec.shape,
                                           tuple(s * item for s in spec.strides))


class DeviceHolder:
    """What every backend, in this process or in a worker, shares: the device's identity
    and lock, released by close() or at the end of a ``with`` block."""

    name = ""
    device: DeviceInfo
    lock = None  # the device's DeviceLock, if this backend holds it

    @property
    def identity(self) -> dict:
        return {"backend": self.name, "device": self.device.name,
                "driver": self.device.driver, "compute_units": self.device.compute_units}

    def close(self) -> None:
        """Release the device (and its lock)."""
        if self.lock is not None:
            self.lock.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Backend(DeviceHolder, ABC):
    """One device through one vendor API; see the module docstring. Subclasses set
    ``name``, ``device`` and ``build_options`` and implement the four abstract methods."""

    name = ""
    device: DeviceInfo
    build_options = ""

    @abstractmethod
    def compile(self, kernel):
        """The compiled form of the GeneratedKernel *kernel*; raises CompileError."""

    @abstractmethod
    def allocate(self, specs: list[ArraySpec], scalars: dict, seed: int = 0) -> dict:
        """Device arrays for *specs* (inputs random from *seed*, outputs poisoned) and the
        scalar values *scalars*, by argument name; raises OutOfMemory."""

    @abstractmethod
    def time_launches(self, compiled, kernel, args: dict, params: dict,
                      count: int) -> list[float]:
        """Launch *compiled* *count* times back to back at *params*; each launch's device
        time in seconds. Raises LaunchError (or OutOfMemory where the device says so)."""

    @abstractmethod
    def read(self, args: dict, specs: list[ArraySpec]) -> dict:
        """Host copies of the arrays *specs* of *args*, by name."""

    def release(self, args: dict) -> None:
        """Free the device arrays of *args*."""
        args.clear()

    def run_once(self, compiled, kernel, specs: list[ArraySpec], scalars: dict,
                 params: dict, seed: int = 0) -> dict:
        """Launch *compiled* once on fresh arrays; host copies of the arrays, by name."""
        args = self.allocate(specs, scalars, seed)
        try:
            self.time_launches(compiled, kernel, args, params, 1)
            return self.read(args, specs)
        finally:
            self.release(args)

    def time_case(self, compiled, kernel, specs: list[ArraySpec], scalars: dict,
                  params: dict, seed: int = 0, **timing) -> protocol.Timing:
        """Time *compiled* at *params* by the §4.2 protocol (*timing*: runs, drop,
        tolerance, retries) on fresh arrays."""
        args = {}
        try:
            args = self.allocate(specs, scalars, seed)
            return protocol.time_with_protocol(
                lambda count: self.time_launches(compiled, kernel, args, params, count),
                **timing)
        finally:
            self.release(args)

