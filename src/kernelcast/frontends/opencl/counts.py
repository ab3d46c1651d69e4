"""Counting what one work-item of an OpenCL kernel executes, and classifying its memory
accesses, for the Pöppl–Herz static model (docs/opencl.md defines every rule).

The walk (walker.py) checks names and types, folds constants, counts operations by
kind and type (``"mul:float"``), accesses by address space, direction and class
(``"global:read:coalesced"``) and barriers. Loops multiply what their body counts by
their constant trip count; both branches of an ``if`` are counted (a SIMD machine runs
both when work-items diverge).

Public names: count_kernel, access_class, KernelCounts, Argument, Access, ACCESS_CLASSES,
OP_KINDS, INTERVAL_ELEMENTS, MAX_DEPTH.
"""

from __future__ import annotations

from collections.abc import Mapping

from .errors import OpenCLSourceError
from .expressions import INTERVAL_ELEMENTS
from .parser import OpenCLUnit, parse_opencl
from .results import ACCESS_CLASSES, OP_KINDS, Access, Argument, KernelCounts
from .walker import MAX_DEPTH, Walker

__all__ = ["ACCESS_CLASSES", "INTERVAL_ELEMENTS", "MAX_DEPTH", "OP_KINDS", "Access",
           "Argument", "KernelCounts", "access_class", "count_kernel"]


def count_kernel(source, kernel: str | None = None, path: str = "<source>") -> KernelCounts:
    """Count one kernel of ``source`` (OpenCL C text or an :class:`OpenCLUnit`):
    operations and accesses per work-item. ``kernel`` names it; it may be left out when
    the source holds one kernel."""
    unit = source if isinstance(source, OpenCLUnit) else parse_opencl(source, path)
    path = unit.path
    if kernel is None:
        if len(unit.kernels) > 1:
            raise OpenCLSourceError(path, 1, 1, f"the source has {len(unit.kernels)} kernels "
                                                f"({', '.join(unit.kernels)}); name one")
        kernel = unit.kernels[0]
    elif kernel not in unit.kernel_trees:
        raise OpenCLSourceError(path, 1, 1, f"no kernel named '{kernel}' (kernels: "
                                            f"{', '.join(unit.kernels)})")
    try:
        return Walker(unit).run(kernel)
    except RecursionError:
        raise OpenCLSourceError(path, 1, 1, "expression nested too deeply") from None


_PRELUDE = ("int x = get_global_id(0); int y = get_global_id(1); int z = get_global_id(2); "
            "int lx = get_local_id(0); int ly = get_local_id(1);")


def access_class(index: str, prelude: str = "",
                 defines: Mapping[str, object] | None = None) -> str:
    """The class of a global read ``a[index]`` in a kernel with scalar arguments ``int n``
    and ``uint m`` whose body declares x, y, z (get_global_id(0..2)) and lx, ly
    (get_local_id(0..1)), all int, then runs ``prelude``; ``defines`` become #define
    lines. Example: ``access_class("y * 64 + x")`` is "coalesced"."""
    lines = [f"#define {k} {v}" for k, v in (defines or {}).items()]
    lines += ["__kernel void access_class_(__global const float *a, int n, uint m) {",
              _PRELUDE, prelude, f"float value_ = a[{index}];", "}"]
    counts = count_kernel("\n".join(lines) + "\n", path="<access_class>")
    line = len(lines) - 1
    return next(a.access_class for a in counts.access_list
                if a.array == "a" and a.line == line)
