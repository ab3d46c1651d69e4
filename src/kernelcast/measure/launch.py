"""What one launch of a generated kernel needs, without Loopy: the device code, its
arguments, its launch geometry and the arrays it runs on.

These are the objects a measuring worker process (kernelcast.measure.backends.isolated)
receives, so this module imports neither Loopy nor a GPU library.

Public names: KernelArgument, GeneratedKernel, ArraySpec.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class KernelArgument:
    name: str
    dtype: np.dtype
    is_array: bool


@dataclass(frozen=True)
class GeneratedKernel:
    """Generated device code with what a launch needs."""

    name: str
    target: str  # "opencl" or "cuda"
    code: str
    arguments: tuple[KernelArgument, ...]
    grid: tuple  # group counts per axis, expressions in the parameters
    block: tuple  # work-items per group per axis

    @property
    def code_sha256(self) -> str:
        return hashlib.sha256(self.code.encode()).hexdigest()

    def launch_sizes(self, params: dict) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(groups per axis, work-items per group per axis), both with the same number
        of axes (at least one)."""
        from pymbolic import evaluate

        grid = [int(evaluate(g, params)) for g in self.grid]
        block = [int(evaluate(b, params)) for b in self.block]
        axes = max(len(grid), len(block), 1)
        return (tuple(grid + [1] * (axes - len(grid))),
                tuple(block + [1] * (axes - len(block))))



@dataclass(frozen=True)
class ArraySpec:
    """One global array argument at fixed sizes; strides in elements."""

    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    written: bool

    @property
    def size(self) -> int:
        """Elements of the flat buffer that holds the array."""
        if any(s == 0 for s in self.shape):
            return 0
        return 1 + sum((n - 1) * s for n, s in zip(self.shape, self.strides, strict=True))

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize
