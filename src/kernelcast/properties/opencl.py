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
  the indices evaluated at every work-item (kernelcast.frontends.opencl.indices). An
  identical access counts like the first (the paper has no such class).
- local accesses ``load_local``/``store_local``, ``barrier``, ``workgroup`` and
  ``launch``, as extraction counts them.
- the extent the extended and Hong–Kim models read: ``work_items``; per array its size
  (``read a``, ``written a``) and the bytes its accesses move (``… accessed``): with
  warp strides, each access moves its share of its warp's 32-byte sectors (a lane of a
  warp of stride s moves min(s × element, 32) bytes, an irregular one a sector), as
  DRAM moves whole sectors; in the paper's reading, its elements. OpenCL C does not
  declare an array's size: it is *array_elements* where given, else the highest element
  the kernel's indices reach plus one where they can be evaluated, else the bytes
  accessed. Recurrences are counted from the source (KernelCounts.recurrences).

Loops count at their trips, decided branches at the work-items that take them, and
branches on data by the statistics given (kernelcast.frontends.opencl.count_kernel);
an index in a loop reaches what every value of its counter reaches.

Public names: opencl_properties, warp_stride, sectors_stride, counter_nodes, counter_range,
launch_geometry, COMPARE, WARP_AGREEMENT.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
import math
import warnings
from fractions import Fraction

import islpy as isl
import numpy as np

from kernelcast.errors import UncountedWarning, UsageError
from kernelcast.frontends.opencl.counts import KernelCounts, count_kernel
from kernelcast.frontends.opencl.indices import index_values
from kernelcast.properties.footprint import utilization
from kernelcast.properties.result import AccessInfo, Properties
from kernelcast.properties.vocabulary import (ACCESS_BITS, ORDER, RECURRENCE_KINDS,
                                              SERIAL_KINDS, arith_name, global_name,
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


def launch_geometry(counts, global_size, local_size) -> tuple[tuple, tuple]:
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
                      array_elements: dict | None = None,
                      stats: dict | None = None, warp_strides: bool = True) -> Properties:
    """The Properties of one launch of an OpenCL C kernel (a source text or its
    KernelCounts) over *global_size* work-items in groups of *local_size* (default 1 in
    each dimension). They take no parameters: evaluate them with ``{}``. *scalars* gives
    scalar arguments by name (for loop bounds, branches and indices that read them);
    *array_elements* the elements of arrays by name (else inferred, see the module
    docstring); *stats* the statistics of data-dependent branches and loops
    (kernelcast.frontends.opencl.count_kernel). *warp_strides*: an index the affine
    analysis leaves irregular takes the stride its warps' lanes share (``warp_stride``);
    False keeps the paper's reading (Loopy's extraction of a twin)."""
    counts = source if isinstance(source, KernelCounts) else count_kernel(
        source, kernel, path=path, scalars=scalars, global_size=global_size,
        local_size=local_size, stats=stats)
    global_size, local_size = launch_geometry(counts, global_size, local_size)
    if warp_strides:
        counts = replace(counts, access_list=tuple(
            a if a.stride is not None or a.space in ("local", "private") else a._replace(
                stride=warp_stride(counts, a, global_size, local_size, scalars))
            for a in counts.access_list))
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
        site = (a.index, a.guards)
        if a.space != "local" and site not in values:
            values[site] = _reach(counts, a, global_size, local_size, scalars, memo)
    accesses = []
    touched = _footprints(sites, {k: v and v[0] for k, v in values.items()})
    for a in sites:
        bits, direction = 8 * a.element_bytes, _DIRECTION[a.direction]
        if a.space == "local":
            add(local_name(direction, bits), Fraction(a.count) * items)
            continue
        stride, util = a.stride, None
        if stride is not None and abs(stride) > 1:
            footprint = touched.get((a.array, a.direction))
            if values[(a.index, a.guards)] is None or footprint is None:
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
              **{f"recurrence_{k}": Fraction(counts.recurrences.get(k, 0)) * items
                 for k in RECURRENCE_KINDS},
              **{f"serial_{k}": 0 for k in SERIAL_KINDS}, "work_items": items,
              **_array_extent(counts, sites, values, items, array_elements or {},
                              sectors=warp_strides)}
    return Properties(
        counts.name, (), {n: _constant(v) for n, v in sorted(
            totals.items(), key=lambda kv: ORDER[kv[0]]) if v},
        minls, isl.BasicSet("{ : }"), {}, {}, tuple(accesses),
        {n: _constant(v) for n, v in extent.items()})


def _reach(counts, access, global_size, local_size, scalars, memo):
    """The values of an index at every work-item, for every value of the loop counters
    it reads (one array) where that is at most UNION_POINTS values, else one array per
    corner of the counters' ranges (the lowest first: an affine index reaches its
    extremes there); None where they are not known before run time."""
    index = access.index
    if index is None:  # an access the walked work-item does not run
        return None
    mine = list(dict.fromkeys(k for root in (index, *(g for g, _ in access.guards))
                              for k in counter_nodes(counts, root)))
    if len(mine) > 4:
        return None
    ranges = {k: counter_range(counts, k, global_size, local_size, scalars) for k in mine}
    if any(r is None for r in ranges.values()):
        return None
    reached = _union(counts, access, mine, ranges, global_size, local_size, scalars)
    if reached is not None:
        return [reached]
    arrays = []
    ends = {k: _ends(counts, k, global_size, local_size, scalars) or ranges[k] for k in mine}
    for corner in itertools.product(*(ends[k] for k in mine)):
        fixed = dict(zip(mine, corner))
        cache = memo if not fixed else {}
        v = index_values(counts.nodes, index, global_size, local_size, scalars, cache, fixed)
        if v is None:
            return None
        arrays.append(_where(counts, access, v, global_size, local_size, scalars, cache,
                             fixed))
    return arrays


def _union(counts, access, mine, ranges, global_size, local_size, scalars):
    """The values of an access's index over every value of the loop counters *mine*
    (their *ranges*) at the work-items that run it (``_where``; each value once where
    they take several passes), or None where that takes more than CHUNKED_POINTS values.
    A pass takes at most UNION_POINTS values: the first counter's values are cut into
    chunks, whose values are gathered in a bitmap."""
    if not mine:
        return None

    def on_axes(values):  # each counter's values on an axis of its own, ahead of the grid
        return {k: np.asarray(values[k]).reshape((-1,) + (1,) * (len(mine) - 1 - i + 3))
                for i, k in enumerate(mine)}

    spans = {k: ranges[k][1] - ranges[k][0] + 1 for k in mine}
    probe = index_values(counts.nodes, access.index, global_size, local_size, scalars, {},
                         on_axes({k: [ranges[k][0]] for k in mine}))
    if probe is None:
        return None
    per_value = math.prod(probe.shape[-3:]) * math.prod(spans[k] for k in mine[1:])
    if per_value * spans[mine[0]] > CHUNKED_POINTS or per_value > UNION_POINTS:
        return None
    step = max(1, UNION_POINTS // per_value)
    first, last = ranges[mine[0]]
    lowest, seen = None, None
    for start in range(first, last + 1, step):
        values = {k: np.arange(start, min(start + step, last + 1)) if k == mine[0]
                  else np.arange(ranges[k][0], ranges[k][1] + 1) for k in mine}
        axes = on_axes({k: a[(a - ranges[k][0]) % counts.counter_steps[k] == 0]
                        if k in counts.counter_steps and len(counts.counters[k]) == 2
                        else a for k, a in values.items()})
        reached = _reached(counts, access, mine, axes, global_size, local_size, scalars)
        if reached is None or step > last - first:
            return reached
        if not reached.size:
            continue
        lo, hi = int(reached.min()), int(reached.max())
        if max(hi, lowest + len(seen) - 1 if seen is not None else hi) \
                - min(lo, lowest if seen is not None else lo) >= MOST_ELEMENTS:
            return None  # a bitmap of over MOST_ELEMENTS elements
        if seen is None:
            lowest, seen = lo, np.zeros(hi - lo + 1, dtype=bool)
        if lo < lowest or hi >= lowest + len(seen):  # grow the bitmap
            grown_lo, grown_hi = min(lo, lowest), max(hi, lowest + len(seen) - 1)
            grown = np.zeros(grown_hi - grown_lo + 1, dtype=bool)
            grown[lowest - grown_lo:lowest - grown_lo + len(seen)] = seen
            lowest, seen = grown_lo, grown
        seen[reached - lowest] = True
    return np.zeros(0, dtype=np.int64) if seen is None else np.flatnonzero(seen) + lowest


def _reached(counts, access, mine, axes, global_size, local_size, scalars):
    """The values of an access's index at the counter values *axes*, where the work-item's
    loops run them and its guards hold (None where that takes more than UNION_POINTS)."""
    v = index_values(counts.nodes, access.index, global_size, local_size, scalars, {}, axes)
    if v is None:
        return None
    inside = np.ones((), dtype=bool)  # counter values a work-item's own loop runs
    for k in mine:
        if len(counts.counters[k]) == 3:
            first_key, bound_key, op = counts.counters[k]
            first, bound = (index_values(counts.nodes, n, global_size, local_size, scalars)
                            for n in (first_key, bound_key))
            if math.prod(np.broadcast_shapes(inside.shape, axes[k].shape, first.shape,
                                             bound.shape)) > UNION_POINTS:
                return None
            rising = op in ("<", "<=")
            inside = inside & COMPARE[op](axes[k], bound) & (
                (axes[k] >= first) if rising else (axes[k] <= first))
            if k in counts.counter_steps:  # the values its own first value steps to
                inside = inside & ((axes[k] - first) % counts.counter_steps[k] == 0)
    return _where(counts, access, v, global_size, local_size, scalars, {}, axes, inside,
                  most=UNION_POINTS)


#: A stride is the warps' where at least this share of the sampled warps step by it
WARP_AGREEMENT = 0.9
#: work-groups sampled for a warp stride (evenly over the launch)
WARP_GROUPS = 256


def warp_stride(counts, access, global_size, local_size, scalars=None) -> int | None:
    """The step, in elements, from each lane of a warp to the next at *access*, from
    the lanes of the warps of WARP_GROUPS work-groups spread over the launch (None where
    the index's values are not known before run time): warps are 32 consecutive
    work-items of a group numbered with local axis 0 fastest (CUDA's layout), and a loop
    counter the index reads is at its lowest value. It is the step at least
    WARP_AGREEMENT of the warps share where there is one: ``x & 0x7F`` steps by 1 in every
    warp of a group of 128, and so does a row of ``i = gid / n; j = gid % n``, where the
    affine analysis gives up. Otherwise it is the step whose warp touches as many 32-byte
    sectors as the index's warps do on average (``sectors_stride``): a bilinear resize's
    source pixels ``floor(1.5 * x)`` step by 1 or 2 and take a stride of 2."""
    if access.index is None:
        return None
    counters = {}
    for k in counter_nodes(counts, access.index):
        known = counter_range(counts, k, global_size, local_size, scalars)
        if known is None:
            return None
        counters[k] = known[0]
    v = index_values(counts.nodes, access.index, global_size, local_size, scalars, {},
                     counters)
    if v is None:
        return None
    g = tuple(global_size) + (1,) * (3 - len(global_size))
    lo = tuple(local_size) + (1,) * (3 - len(local_size))
    groups = [n // size for n, size in zip(g, lo)]
    per_axis = max(1, int(WARP_GROUPS ** (1 / max(1, sum(n > 1 for n in groups)))))
    picked = [np.linspace(0, n - 1, min(n, per_axis)).astype(int) for n in groups]
    rows = [(p[:, None] * size + np.arange(size)).ravel() for p, size in zip(picked, lo)]
    chosen = np.broadcast_to(v, (g[2], g[1], g[0]))[np.ix_(rows[2], rows[1], rows[0])]
    lanes = chosen.reshape(len(picked[2]), lo[2], len(picked[1]), lo[1], len(picked[0]),
                           lo[0]).transpose(0, 2, 4, 1, 3, 5).reshape(-1, lo[0] * lo[1] * lo[2])
    full = lanes.shape[1] // 32 * 32
    if not full:
        return None
    warps = lanes[:, :full].reshape(-1, 32).astype(np.int64)
    steps = np.diff(warps, axis=1)
    even = (steps == steps[:, :1]).all(axis=1)
    if even.any():
        values, seen = np.unique(steps[even, 0], return_counts=True)
        if seen.max() >= WARP_AGREEMENT * len(warps):
            return int(values[seen.argmax()])
    return sectors_stride(warps, access.element_bytes) if access.element_bytes else None


def sectors_stride(warps, element_bytes: int) -> int:
    """The stride, in elements, at which a warp of 32 lanes touches as many 32-byte
    sectors as the warps (rows of element indices) do on average: a warp of stride s
    touches s * element_bytes sectors up to 32 (CUDA C++ Best Practices Guide,
    "Coalesced Access to Global Memory"), so the mean sectors over the element's bytes,
    rounded; 0 where a warp keeps to about one sector."""
    sectors = np.sort(warps * element_bytes // 32, axis=1)
    distinct = 1 + (np.diff(sectors, axis=1) != 0).sum(axis=1)
    return int(round(float(distinct.mean()) / element_bytes))


def counter_nodes(counts, index) -> list:
    """The loop counters' nodes an index reads."""
    seen, stack, found = set(), [index], []
    while stack:
        k = stack.pop()
        if k in seen:
            continue
        seen.add(k)
        if k in counts.counters:
            found.append(k)
        stack.extend(c for c in counts.nodes[k][1:] if isinstance(c, int)
                     and c < len(counts.nodes) and counts.nodes[k][0] in _OPERANDS)
    return found


def counter_range(counts, key, global_size, local_size, scalars):
    """(lowest, highest) value of a loop counter over the launch: recorded where the loop
    runs alike everywhere, else from its first and last value at every work-item."""
    known = counts.counters[key]
    if len(known) == 2:
        return known
    ends = _ends(counts, key, global_size, local_size, scalars)
    if ends is None:
        return None
    lo, hi = int(min(e.min() for e in ends)), int(max(e.max() for e in ends))
    return (lo, hi) if lo <= hi else None


def _ends(counts, key, global_size, local_size, scalars):
    """(first, last) value of a loop counter at each work-item, where its loop's range
    differs among them (arrays over the grid; None where it does not, or where they are
    not known before run time)."""
    known = counts.counters[key]
    if len(known) == 2:
        return None
    first_key, bound_key, op = known
    first, bound = (index_values(counts.nodes, k, global_size, local_size, scalars)
                    for k in (first_key, bound_key))
    if first is None or bound is None:
        return None
    return first, bound + {"<": -1, "<=": 0, ">": 1, ">=": 0, "!=": 0}[op]


COMPARE = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
            "!=": np.not_equal}


def _where(counts, access, v, global_size, local_size, scalars, memo, counters,
           held=None, most=None):
    """The values *v* of an access's index at the work-items that run it: where each of
    its guards holds (a guard whose value is not known before run time is left out), and
    *held* where given. Each distinct value once per position of the axes *v* varies on:
    a work-item axis *v* does not read only says whether some work-item along it runs
    the access. None where that takes more than *most* values (where given)."""
    held = np.ones((), dtype=bool) if held is None else held
    for key, holds in access.guards:
        c = index_values(counts.nodes, key, global_size, local_size, scalars, memo, counters)
        if c is not None:
            held = held & ((c != 0) == holds)
            if most is not None and held.size > most:
                return None
    if held.ndim == 0:
        return v if held else v[:0]
    rank = max(v.ndim, held.ndim)
    v, held = v.reshape((1,) * (rank - v.ndim) + v.shape), \
        held.reshape((1,) * (rank - held.ndim) + held.shape)
    held = held.any(axis=tuple(i for i in range(rank) if v.shape[i] == 1 < held.shape[i]),
                    keepdims=True)
    shape = np.broadcast_shapes(v.shape, held.shape)
    if most is not None and math.prod(shape) > most:
        return None
    return np.broadcast_to(v, shape)[np.broadcast_to(held, shape)]


#: An index is evaluated at every value of the loop counters it reads where that makes at
#: most CHUNKED_POINTS values, at most UNION_POINTS at a time (else at their ranges'
#: corners)
UNION_POINTS = 1 << 22
CHUNKED_POINTS = 1 << 26
#: the widest range of elements whose reached values are gathered in a bitmap
MOST_ELEMENTS = 1 << 28
# node tags whose later integer fields are operand nodes (the forms of
# kernelcast.frontends.opencl.values)
_OPERANDS = {"b", "u", "cv", "?", "f"}


def _footprints(sites, values) -> dict:
    """(touched, filled) addresses per (array, direction) with a strided access, over
    its accesses whose indices evaluate."""
    strided = {(a.array, a.direction) for a in sites if a.space != "local"
               and a.stride is not None and abs(a.stride) > 1}
    result = {}
    for key in strided:
        arrays = [values[(a.index, a.guards)] for a in sites
                  if (a.array, a.direction) == key
                  and values.get((a.index, a.guards)) is not None]
        arrays = [v for v in arrays if v.size]
        if not arrays:
            continue
        lo, hi = min(int(v.min()) for v in arrays), max(int(v.max()) for v in arrays)
        mask = np.zeros(hi - lo + 1, dtype=bool)
        for v in arrays:
            mask[v - lo if lo else v] = True
        result[key] = (int(mask.sum()), hi - lo + 1)
    return result


#: bytes of a sector, what DRAM and the L2 move for a warp's request (CUDA C++ Best
#: Practices Guide, "Coalesced Access to Global Memory")
SECTOR_BYTES = 32


def _moved(access, sectors: bool) -> int:
    """Bytes one work-item's *access* moves: its element, or with *sectors* its share of
    the sectors its warp touches (a warp of stride s touches min(32 s e, 32 × 32) bytes
    of elements of e bytes; an irregular one a sector a lane)."""
    e = access.element_bytes
    if not sectors or (access.stride is not None and abs(access.stride) <= 1):
        return e
    if access.stride is None:
        return max(e, SECTOR_BYTES)
    return max(e, min(abs(access.stride) * e, SECTOR_BYTES))


def _array_extent(counts, sites, values, items, array_elements, sectors) -> dict:
    """Per array and direction, its bytes and the bytes its accesses move (``_moved``);
    the totals (bytes_read, bytes_written) of the arrays' bytes."""
    extent = {"bytes_read": 0, "bytes_written": 0}
    for array in dict.fromkeys(a.array for a in sites if a.space != "local"):
        mine = [a for a in sites if a.array == array]
        reach = [v for a in mine for v in (values.get((a.index, a.guards)) or [None])]
        element = mine[0].element_bytes
        accessed = {d: sum(Fraction(a.count) * items * _moved(a, sectors) for a in mine
                           if a.direction == d) for d in ("read", "write")}
        if array in array_elements:
            size = int(array_elements[array]) * element
        elif all(v is not None for v in reach):
            size = (max((int(v.max()) for v in reach if v.size), default=-1) + 1) * element
        elif counts.loops:
            raise UsageError(f"kernel {counts.name!r}: the elements of array {array!r} "
                             "cannot be worked out from its indices (they read data, or a "
                             "loop whose range differs among work-items): give them "
                             f"(--array {array}=ELEMENTS)")
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
