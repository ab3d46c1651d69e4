"""Counting what a work-item of an OpenCL kernel executes at one launch, on average, and
classifying its memory accesses (docs/opencl.md defines every rule).

The walk (walker.py) checks names and types, folds constants, counts operations by
kind and type (``"mul:float"``), accesses by address space, direction and class
(``"global:read:coalesced"``) and barriers, at one work-item: its branches and loop
trips are decided by the scalar arguments given, its position and the launch's sizes
(concrete.py). A launch whose decisions read no position is walked once; otherwise
``work_items`` samples the work-items where a decision may turn (near the values the
kernel compares with) and the stretches between, and the counts are their weighted
mean. Without a launch, a branch on the position counts both sides (a SIMD machine
runs both when work-items diverge).

Public names: count_kernel, access_class, work_items, KernelCounts, Argument, Access,
ACCESS_CLASSES, OP_KINDS, INTERVAL_ELEMENTS, MAX_DEPTH, MAX_SAMPLES, RELATED_PIECES.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace

from .errors import OpenCLSourceError
from .expressions import INTERVAL_ELEMENTS
from .parser import OpenCLUnit, parse_opencl
from .results import ACCESS_CLASSES, OP_KINDS, Access, Argument, KernelCounts
from .walker import MAX_DEPTH, Walker

__all__ = ["ACCESS_CLASSES", "INTERVAL_ELEMENTS", "MAX_DEPTH", "OP_KINDS", "Access",
           "Argument", "KernelCounts", "access_class", "count_kernel"]


def count_kernel(source, kernel: str | None = None, path: str = "<source>",
                 options: str = "", *,
                 scalars: Mapping[str, float] | None = None, global_size=None,
                 local_size=None, stats: Mapping[int, float] | None = None) -> KernelCounts:
    """Count one kernel of ``source`` (OpenCL C text or an :class:`OpenCLUnit`):
    operations and accesses per work-item, averaged over the launch's work-items.
    ``kernel`` names it; it may be left out when the source holds one kernel.
    ``scalars`` gives scalar arguments' values ({"n": 4096}); ``global_size`` and
    ``local_size`` the launch (one number per dimension), which branches and loop trips
    that follow the work-item's position need; ``stats`` ({line: value}) the probability
    that a data-dependent ``if`` on that line is taken, or the mean trip count of a
    data-dependent loop there. ``options`` are OpenCL build options (``-D TILE=16``)
    for a text; a unit keeps those it was parsed with."""
    if isinstance(source, OpenCLUnit):
        if options and options != source.options:
            raise OpenCLSourceError(source.path, None, None, "build options apply when the "
                                    "source is parsed: give them to parse_opencl")
        unit = source
    else:
        unit = parse_opencl(source, path, options)
    path = unit.path
    if kernel is None:
        if len(unit.kernels) > 1:
            raise OpenCLSourceError(path, 1, 1, f"the source has {len(unit.kernels)} kernels "
                                                f"({', '.join(unit.kernels)}); name one")
        kernel = unit.kernels[0]
    elif kernel not in unit.kernel_trees:
        raise OpenCLSourceError(path, 1, 1, f"no kernel named '{kernel}' (kernels: "
                                            f"{', '.join(unit.kernels)})")
    launch = _launch(path, global_size, local_size)
    scalars = dict(scalars or {})

    def walk(at):
        walker = Walker(unit, scalars, launch, at, stats)
        try:
            return walker, walker.run(kernel)
        except RecursionError:
            raise OpenCLSourceError(path, 1, 1, "expression nested too deeply") from None

    middle = tuple(g // 2 for g in launch[0]) if launch else ()
    probe, counts = walk(middle)
    unknown = sorted(set(scalars) - probe.arguments)
    if unknown:
        raise OpenCLSourceError(path, 1, 1, f"the kernel {kernel} has no argument named "
                                            f"'{unknown[0]}' (its arguments: "
                                            f"{', '.join(sorted(probe.arguments))})")
    if not probe.consulted:
        return counts
    ints = [int(v) for v in scalars.values() if float(v).is_integer()]
    ints += [v for v in counts.defines.values() if isinstance(v, int)]
    ints += sorted({int(m) for m in _LITERAL.findall(unit.text)})  # `lid < 10`
    consulted, runs = set(probe.consulted), []
    for _ in range(2):  # once more if a sample's branches consulted other positions
        runs = [(weight, *walk(at)) for at, weight in work_items(consulted, launch, ints,
                                                                  middle)]
        seen = set().union(*(w.consulted for _, w, _ in runs))
        if seen <= consulted:
            break
        consulted |= seen
    return _average(counts, [(weight, c) for weight, _, c in runs])


_LITERAL = re.compile(r"(?<![\w.])[0-9]{1,9}(?![\w.])")
#: Along an axis whose position a decision compares with another axis's (``j <= i``),
#: every stretch is at most this fraction of the axis: such a share is estimated to
#: about a percent
RELATED_PIECES = 32
#: At most this many work-items are walked for one launch
MAX_SAMPLES = 4096


def _launch(path, global_size, local_size):
    if global_size is None:
        if local_size is not None:
            raise OpenCLSourceError(path, 1, 1, "a local size needs a global size")
        return None
    grid = tuple(int(g) for g in global_size)
    group = tuple(int(g) for g in (local_size or (1,) * len(grid)))
    if not 1 <= len(grid) <= 3 or len(group) != len(grid) or min(grid + group) < 1:
        raise OpenCLSourceError(path, 1, 1, f"a launch needs 1 to 3 global sizes and as many "
                                            f"local sizes, all at least 1 (got {grid} and "
                                            f"{group})")
    return grid, group


def _points(size: int, marks, near: int = 4, powers: bool = False,
            pieces: int = 1) -> list[tuple[int, int]]:
    """(position, weight) over 0..size-1: every position within *near* of a mark (where
    a branch on the position may turn) and next to a power of two where *powers*, the
    middle of each stretch between them for the rest, a stretch longer than
    size/*pieces* cut into pieces that long."""
    if size <= 2 * near + 8:
        return [(i, 1) for i in range(size)]
    edges = {0, size} | {m + k for m in marks for k in range(-near, near + 2)
                         if 0 < m + k < size}
    if powers:
        edges |= {p + k for p in _powers(size) for k in (0, 1) if 0 < p + k < size}
    if pieces > 1:
        edges |= {size * k // pieces for k in range(1, pieces)}
    edges = sorted(edges)
    points = []
    for a, b in zip(edges, edges[1:]):  # the mean of what is linear in the position
        if (a + b - 1) % 2:
            points += [((a + b - 1) // 2, (b - a) / 2), ((a + b) // 2, (b - a) / 2)]
        else:
            points.append(((a + b - 1) // 2, b - a))
    return points


def _powers(size: int) -> list[int]:
    return [1 << k for k in range(size.bit_length() + 1)]


def work_items(consulted, launch, ints, middle) -> list[tuple[tuple, int]]:
    """The sampled work-items' global ids and the work-items each stands for: along
    each dimension a decision consulted, positions near the sizes and values the kernel
    compares with, their remainders (where a grid-stride loop's trips turn) and powers
    of two (halving loops, tree reductions); as a work-group and a position in it
    where local or group ids were consulted; elsewhere the middle work-item."""
    grid, group = launch
    axes = []
    for d, (size, local) in enumerate(zip(grid, group)):
        kinds = {name for name, dim in consulted if dim == d}
        pieces = RELATED_PIECES if "related" in kinds else 1
        kinds.discard("related")
        if not kinds:
            axes.append([(middle[d], size)])
        elif kinds <= {"get_global_id"}:
            axes.append(_points(size, [0, *ints, *(v % size for v in ints)], powers=True,
                                pieces=pieces))
        else:
            lids = _points(local, [0, local, *(v % local for v in ints)], 1, powers=True)
            groups = -(-size // local)
            gs = _points(groups, [0, groups - 1, *(v // local for v in ints)], 1,
                         pieces=pieces)
            axes.append([(g * local + lid, gw * lw) for g, gw in gs for lid, lw in lids
                         if g * local + lid < size])
    samples = [((), 1)]
    for axis in axes:
        samples = [(at + (p,), w * pw) for at, w in samples for p, pw in axis]
    if len(samples) > MAX_SAMPLES:
        step = -(-len(samples) // MAX_SAMPLES)
        samples = [(at, sum(w for _, w in samples[i:i + step]))
                   for i, (at, _) in enumerate(samples) if i % step == 0]
    return samples


def _average(first: KernelCounts, runs) -> KernelCounts:
    """The counts of several sampled work-items, weighted; accesses merged by site
    (line, array, direction, class and stride), their index, loop counters and
    expression nodes from the walk that ran the most sites (the first, of equals): the
    middle work-item may run none of a loop that others run."""
    walks = [first] + [c for _, c in runs]
    first = max(walks, key=lambda c: sum(a.index is not None for a in c.access_list))
    total = sum(w for w, _ in runs)
    ops, accesses, barriers, records, recurrences = {}, {}, 0.0, {}, {}
    index = {(a.line, a.array, a.direction, a.access_class, a.stride): a
             for a in first.access_list}
    for w, c in runs:
        share = w / total
        for k, v in c.ops.items():
            ops[k] = ops.get(k, 0.0) + v * share
        for k, v in c.accesses.items():
            accesses[k] = accesses.get(k, 0.0) + v * share
        barriers += c.barriers * share
        for k, v in c.recurrences.items():
            recurrences[k] = recurrences.get(k, 0.0) + v * share
        for a in c.access_list:
            site = (a.line, a.array, a.direction, a.access_class, a.stride)
            known = records.get(site)
            base = index.get(site)
            if known is None:
                known = a._replace(count=0.0, index=base.index if base else None)
            records[site] = known._replace(count=known.count + a.count * share)
    order = sorted(records.values(), key=lambda a: a.line)
    return replace(first, ops=dict(sorted(ops.items())), accesses=dict(sorted(accesses.items())),
                   barriers=barriers, access_list=tuple(a for a in order if a.count > 0),
                   recurrences=dict(sorted(recurrences.items())))


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
