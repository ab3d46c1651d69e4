"""An OpenCL C front-end for the Pöppl–Herz static model: parse a scalar subset of
OpenCL C 1.2, count what one work-item executes (operations by kind and type, memory
accesses by address space, direction and class, barriers) and classify each array
access as coalesced, constant, interval, identical or complex. docs/opencl.md describes
the subset and every rule. Every problem raises :class:`OpenCLSourceError`
(``path:line:column: message``).

Public names: parse_opencl, load_opencl, count_kernel, access_class, OpenCLUnit, Macro,
KernelCounts, Argument, Access, OpenCLSourceError, ACCESS_CLASSES, OP_KINDS,
INTERVAL_ELEMENTS, MAX_DEPTH, MAX_SOURCE_CHARS, TYPE_BYTES.
"""

from .counts import (
    ACCESS_CLASSES,
    INTERVAL_ELEMENTS,
    MAX_DEPTH,
    OP_KINDS,
    Access,
    Argument,
    KernelCounts,
    access_class,
    count_kernel,
)
from .errors import OpenCLSourceError
from .parser import MAX_SOURCE_CHARS, Macro, OpenCLUnit, load_opencl, parse_opencl
from .results import TYPE_BYTES

__all__ = [
    "ACCESS_CLASSES",
    "INTERVAL_ELEMENTS",
    "MAX_DEPTH",
    "MAX_SOURCE_CHARS",
    "OP_KINDS",
    "Access",
    "Argument",
    "KernelCounts",
    "Macro",
    "OpenCLSourceError",
    "OpenCLUnit",
    "TYPE_BYTES",
    "access_class",
    "count_kernel",
    "load_opencl",
    "parse_opencl",
]
