"""The interface every measurement backend implements, and the errors a backend raises.

A backend takes a GeneratedKernel (kernelcast.measure.codegen), compiles it with the
vendor's compiler, allocates its arrays on the device (random inputs in [0.5, 1.5), outputs
poisoned with NaN), launches it with device events around each launch, reads arrays back
for checking, and frees everything after each case.

Failures raise CompileError, OutOfMemory or LaunchError, which a campaign records as the
statuses compile_error, out_of_memory and launch_error.

Public names: Backend, CompileError, OutOfMemory, LaunchError, check_fits, host_view.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from kernelcast.errors import KernelcastError
from kernelcast.measure.arrays import ArraySpec
from kernelcast.measure.devices import DeviceInfo


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


def host_view(flat: np.ndarray, spec: ArraySpec) -> np.ndarray:
    """The host copy *flat* of a device buffer, viewed with the shape and strides of
    *spec*."""
    item = spec.dtype.itemsize
    return np.lib.stride_tricks.as_strided(flat, spec.shape,
                                           tuple(s * item for s in spec.strides))


class Backend(ABC):
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

    @property
    def identity(self) -> dict:
        return {"backend": self.name, "device": self.device.name,
                "driver": self.device.driver, "compute_units": self.device.compute_units}
