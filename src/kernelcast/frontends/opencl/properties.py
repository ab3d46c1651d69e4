"""The paper's properties (kernelcast.properties) of an OpenCL C kernel at one launch
geometry, from the front-end's counts: so that the fitted models (paper, extended,
Hong–Kim) predict OpenCL source directly, without a Loopy kernel.

For straight-line code every work-item does what the front-end counts for one, so each
total is the per-work-item count times the work-items (docs/opencl.md, "The paper's
properties of OpenCL source", says which count becomes which property):

- floating-point operations of type float (f32) or double (f64): ``+`` and ``-`` are
  ``add``, ``*`` and unary ``-`` are ``mul`` (as Loopy counts ``-x``), ``/`` is ``div``,
  ``pow``/``pown``/``powr`` are ``pow``, every other math built-in is ``special``.
  Integer operations, comparisons, selections and conversions are not properties.
- global and ``__constant`` accesses: ``load``/``store`` of the element's bits, in the
  stride class of §2.1 (vocabulary.stride_class): the stride is the index's step along
  dimension 0 when it is affine in the dimension-0 ids (``Access.stride``), otherwise
  the access is irregular. A stride above 1 needs the utilization ratio: the addresses
  that all the accesses of the array (in that direction) touch over the NDRange, over
  the filled-in range between the lowest and the highest (footprint.utilization), from
  the indices evaluated at every work-item (indices.py). An identical access counts like
  the first (the paper has no such class).
- local accesses ``load_local``/``store_local``, ``barrier``, ``workgroup`` and
  ``launch``, as extraction counts them.
- the extent the extended and Hong–Kim models read: ``work_items``; per array its size
  (``read a``, ``written a``) and the bytes its accesses cover (``… accessed``). OpenCL
  C does not declare an array's size: it is *array_elements* where given, else the
  highest element the kernel's indices reach plus one where they can be evaluated, else
  the bytes accessed. Straight-line code has no recurrences: those extents are 0.

Kernels with ``for`` loops are refused (the extended model's loop-carried counts would be
missing); both branches of an ``if`` count in full, as the front-end counts them.

Public names: opencl_properties.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import islpy as isl
import numpy as np

from kernelcast.errors import UncountedWarning, UsageError
from kernelcast.frontends.opencl.counts import KernelCounts, count_kernel
from kernelcast.frontends.opencl.indices import index_values
from kernelcast.properties.footprint import utilization
from kernelcast.properties.recurrence import RECURRENCE_KINDS, SERIAL_KINDS
from kernelcast.properties.result import AccessInfo, Properties
from kernelcast.properties.vocabulary import (ACCESS_BITS, ORDER, arith_name, global_name,
                                              local_name, minls_name, stride_class)

_FLOAT = {"float": "f32", "double": "f64"}
_OPS = {"add": "add", "sub": "add", "mul": "mul", "neg": "mul", "div": "div",
        "call.pow": "pow", "call.pown": "pow", "call.powr": "pow"}
_DIRECTION = {"read": "load", "write": "store"}


def _flop(key: str) -> str | None:
    kind, _, ctype = key.rpartition(":")
    precision = _FLOAT.get(ctype)
    if precision is None:
        return None
    op = _OPS.get(kind) or ("special" if kind.startswith("call.") else None)
    return arith_name(op, precision) if op else None


def _geometry(counts, global_size, local_size) -> tuple[tuple, tuple]:
    global_size = tuple(int(g) for g in global_size)
    local_size = tuple(int(s) for s in (local_size or (1,) * len(global_size)))
    if not 1 <= len(global_size) <= 3 or len(local_size) != len(global_size):
        raise UsageError("a launch has 1 to 3 dimensions, with as many local sizes as "
                         "global sizes")
    if len(global_size) < counts.work_dims:
        raise UsageError(f"kernel {counts.name!r} uses {counts.work_dims} dimensions; the "
                         f"global size has {len(global_size)}")
    for g, s in zip(global_size, local_size):
        if g < 1 or s < 1 or g % s:
            raise UsageError(f"the global size {g} is not a positive multiple of the local "
                             f"size {s}")
    return global_size, local_size


def _constant(value) -> isl.PwQPolynomial:
    value = Fraction(value)
    text = str(value.numerator) if value.denominator == 1 else \
        f"{value.numerator}/{value.denominator}"
    return isl.PwQPolynomial(f"{{ {text} }}")


def opencl_properties(source, global_size, local_size=None, *, kernel: str | None = None,
                      path: str = "<source>", scalars: dict | None = None,
                      array_elements: dict | None = None) -> Properties:
    """The Properties of one launch of an OpenCL C kernel (a source text or its
    KernelCounts) over *global_size* work-items in groups of *local_size* (default 1 in
    each dimension). They take no parameters: evaluate them with ``{}``. *scalars* gives
    integer scalar arguments by name (for indices that read them); *array_elements* the
    elements of arrays by name (else inferred, see the module docstring)."""
    counts = source if isinstance(source, KernelCounts) else count_kernel(
        source, kernel, path=path)
    if counts.loops:
        raise UsageError(f"kernel {counts.name!r} has loops: its paper properties are "
                         "defined for straight-line OpenCL C only (use the poppl-herz model)")
    global_size, local_size = _geometry(counts, global_size, local_size)
    items = math.prod(global_size)
    groups = items // math.prod(local_size)
    totals: dict[str, Fraction] = {}

    def add(name, amount):
        totals[name] = totals.get(name, Fraction(0)) + amount

    for key, per_item in counts.ops.items():
        name = _flop(key)
        if name:
            add(name, Fraction(per_item) * items)
    memo: dict = {}
    values, sites = {}, []
    for a in counts.access_list:
        if a.space == "private":
            continue
        if 8 * (a.element_bytes or 0) not in ACCESS_BITS:
            warnings.warn(f"kernel {counts.name!r}: {8 * (a.element_bytes or 0)}-bit accesses "
                          f"to {a.array!r} are outside the vocabulary and are not counted",
                          UncountedWarning, stacklevel=2)
            continue
        sites.append(a)
        if a.space != "local" and a.index not in values:
            values[a.index] = index_values(counts.nodes, a.index, global_size, local_size,
                                           scalars, memo)
    accesses = []
    touched = _footprints(sites, values)
    for a in sites:
        bits, direction = 8 * a.element_bytes, _DIRECTION[a.direction]
        if a.space == "local":
            add(local_name(direction, bits), Fraction(a.count) * items)
            continue
        stride, util = a.stride, None
        if stride is not None and abs(stride) > 1:
            footprint = touched.get((a.array, a.direction))
            if values[a.index] is None or footprint is None:
                warnings.warn(f"kernel {counts.name!r}: the footprint of {a.array!r} at "
                              f"line {a.line} cannot be evaluated; the access is counted as "
                              "irregular", UncountedWarning, stacklevel=2)
                stride = None
            else:
                util = utilization(*footprint, stride)
        info = AccessInfo(f"line {a.line}", a.array, direction, bits, stride, util,
                          stride_class(stride, util))
        accesses.append(info)
        add(info.property_name, Fraction(a.count) * items)
    if counts.barriers:
        add("barrier", Fraction(counts.barriers) * items)
    add("workgroup", Fraction(groups))
    add("launch", Fraction(1))
    minls = {}
    for info in {(a.bits, a.stride_class) for a in accesses}:
        load, store = global_name("load", *info), global_name("store", *info)
        if load in totals and store in totals:
            minls[minls_name(*info)] = (load, store)
    extent = {"local_conflicts": 0, "varying_global_loads": 0,
              **{f"recurrence_{k}": 0 for k in RECURRENCE_KINDS},
              **{f"serial_{k}": 0 for k in SERIAL_KINDS}, "work_items": items,
              **_array_extent(counts, sites, values, items, array_elements or {})}
    return Properties(
        counts.name, (), {n: _constant(v) for n, v in sorted(
            totals.items(), key=lambda kv: ORDER[kv[0]]) if v},
        minls, isl.BasicSet("{ : }"), {}, {}, tuple(accesses),
        {n: _constant(v) for n, v in extent.items()})


def _footprints(sites, values) -> dict:
    """(touched, filled) addresses per (array, direction) with a strided access, over
    its accesses whose indices evaluate."""
    strided = {(a.array, a.direction) for a in sites if a.space != "local"
               and a.stride is not None and abs(a.stride) > 1}
    result = {}
    for key in strided:
        arrays = [values[a.index] for a in sites if (a.array, a.direction) == key
                  and values.get(a.index) is not None]
        if not arrays:
            continue
        lo, hi = min(int(v.min()) for v in arrays), max(int(v.max()) for v in arrays)
        mask = np.zeros(hi - lo + 1, dtype=bool)
        for v in arrays:
            mask[v - lo if lo else v] = True
        result[key] = (int(mask.sum()), hi - lo + 1)
    return result


def _array_extent(counts, sites, values, items, array_elements) -> dict:
    """Per array and direction, its bytes and the bytes its accesses cover; the totals
    (bytes_read, bytes_written) of the arrays' bytes."""
    extent = {"bytes_read": 0, "bytes_written": 0}
    for array in dict.fromkeys(a.array for a in sites if a.space != "local"):
        mine = [a for a in sites if a.array == array]
        element = mine[0].element_bytes
        reach = [values.get(a.index) for a in mine]
        accessed = {d: sum(Fraction(a.count) * items * element for a in mine
                           if a.direction == d) for d in ("read", "write")}
        if array in array_elements:
            size = int(array_elements[array]) * element
        elif all(v is not None for v in reach):
            size = (max(int(v.max()) for v in reach) + 1) * element
        else:
            size = None
        for direction, word in (("read", "read"), ("write", "written")):
            if not any(a.direction == direction for a in mine):
                continue
            nbytes = accessed[direction] if size is None else size
            extent[f"bytes_{word}"] += nbytes
            extent[f"{word} {array}"] = nbytes
            extent[f"{word} {array} accessed"] = accessed[direction]
    return extent
