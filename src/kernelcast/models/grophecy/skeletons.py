"""From a parsed code skeleton (kernelcast.frontends.skeleton) to the accesses of the
data-usage algebra (kernelcast.models.grophecy.sections), with where each one sits.

Each load or store of a ``parallel_for`` becomes a ``sections.Access`` (the array's
dimensions and element bytes from its declaration) together with the streaming loops
around it, which is what the equations need: ShMem(D, k) is built from D's accesses inside
streaming loop k, ShMem(D, 0) from those outside every streaming loop (§6.6). A
data-dependent index is ``sections.Indirect``: anywhere in its dimension (§6.3's worst
case), unless the index array has a sample file (``hints<sample=...>``), whose smallest
and largest values bound it.

A streaming loop with data-dependent bounds (IspinEx's ``stream n = begin:end (hint:14)``
with ``begin = J[j]``) runs its hinted trip count from a start that moves with the task:
its index is read as ``hint × e + n`` for n in 0 … hint − 1, where e is the index of the
one-dimensional array its lower bound reads (J[e]). For an offsets array such as CSR's
row pointers that is the average row, so tasks touch disjoint runs of the arrays the loop
indexes, as they do at run time. A bound of any other form keeps n in 0 … hint − 1.

Public names: PlacedAccess, placed_accesses, loop_space, loop_range.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kernelcast.frontends.skeleton.ir import Access as SkeletonAccess
from kernelcast.frontends.skeleton.ir import (
    Affine,
    Loop,
    ParallelFor,
    Skeleton,
    iter_statements,
)
from kernelcast.frontends.skeleton.ir import Indirect as SkeletonIndirect
from kernelcast.frontends.skeleton.sample import read_sample
from kernelcast.models.grophecy.sections import Access, Indirect, Range


@dataclass(frozen=True)
class PlacedAccess:
    """One load or store: its section-algebra form, whether it stores, the loops around
    it (outermost first) and the innermost streaming loop's index ("" outside any)."""

    access: Access
    store: bool
    loops: tuple[Loop, ...]
    stream: str
    line: int
    statement: SkeletonAccess  # the skeleton's own, indices rewritten as above


def loop_range(loop: Loop) -> Range:
    """The values a loop's index takes within one task: its bounds when they are
    constants or macros, else 0 … hint − 1 (or, lacking a hint, the bounds with enclosing
    indices at 0)."""
    if loop.bound_kind in ("constant", "macro"):
        return Range(loop.lower.const, max(loop.lower.const, loop.upper.const), 1)
    if loop.hint is not None:
        return Range(0, loop.hint, 1)
    lower = loop.lower.const if isinstance(loop.lower, Affine) else 0
    upper = loop.upper.const if isinstance(loop.upper, Affine) else lower
    return Range(lower, max(lower, upper), 1)


def _start(loop: Loop) -> Affine | None:
    """hint × e for a data-dependent loop whose lower bound reads X[e], X one-dimensional
    with an affine e; None otherwise."""
    low = loop.lower
    if (loop.bound_kind != "data_dependent" or loop.hint is None
            or not isinstance(low, SkeletonIndirect) or len(low.indices) != 1
            or not isinstance(low.indices[0], Affine)):
        return None
    e = low.indices[0]
    return Affine({n: c * loop.hint * low.scale for n, c in e.terms}, 0)


def _shift(index, name: str, by: Affine):
    """*index* with loop index *name* replaced by name + by."""
    if isinstance(index, SkeletonIndirect):
        return replace(index, indices=tuple(_shift(i, name, by) for i in index.indices),
                       offset=_shift(index.offset, name, by))
    c = index.coeff(name)
    if not c:
        return index
    terms = dict(index.terms)
    for n, k in by.terms:
        terms[n] = terms.get(n, 0) + c * k
    return Affine(terms, index.const + c * by.const)

def loop_space(kernel: ParallelFor) -> dict[str, int]:
    """The parallel loop indices and their extents: size(Loop_space) is their product."""
    return dict(zip(kernel.indices, kernel.dims, strict=True))


def _bound(skeleton: Skeleton, index: SkeletonIndirect) -> Range | None:
    if skeleton.array(index.array).sample is None:
        return None
    values = read_sample(skeleton, index.array)
    if not values or index.offset.terms:  # an offset moving with loop indices: no bound
        return None
    ends = sorted(v * index.scale + index.offset.const for v in (min(values), max(values)))
    return Range(ends[0], ends[1] + 1, 1)


def placed_accesses(skeleton: Skeleton, kernel: ParallelFor) -> list[PlacedAccess]:
    """Every load and store of *kernel*, in order, as PlacedAccess."""
    placed = []
    for stmt, loops in iter_statements(kernel.body):
        if not isinstance(stmt, SkeletonAccess):
            continue
        for loop in loops:
            start = _start(loop)
            if start is not None:
                stmt = replace(stmt, indices=tuple(_shift(i, loop.index, start)
                                                   for i in stmt.indices))
        array = skeleton.array(stmt.array)
        indices = tuple(Indirect(_bound(skeleton, ix)) if isinstance(ix, SkeletonIndirect)
                        else ix for ix in stmt.indices)
        streams = [loop.index for loop in loops if loop.kind == "stream"]
        placed.append(PlacedAccess(Access(array.name, indices, array.dims, array.elem_bytes),
                                   stmt.kind == "st", loops, streams[-1] if streams else "",
                                   stmt.line, stmt))
    return placed
