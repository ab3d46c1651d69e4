"""From a parsed code skeleton (kernelcast.frontends.skeleton) to the accesses of the
data-usage algebra (kernelcast.models.grophecy.sections), with where each one sits.

Each load or store of a ``parallel_for`` becomes a ``sections.Access`` (the array's
dimensions and element bytes from its declaration) together with the streaming loops
around it, which is what the equations need: ShMem(D, k) is built from D's accesses inside
streaming loop k, ShMem(D, 0) from those outside every streaming loop (§6.6). A
data-dependent index is ``sections.Indirect``: anywhere in its dimension (§6.3's worst
case), unless the index array has a sample file (``hints<sample=...>``), whose smallest
and largest values bound it.

Public names: PlacedAccess, placed_accesses, loop_space.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelcast.frontends.skeleton.ir import Access as SkeletonAccess
from kernelcast.frontends.skeleton.ir import Indirect as SkeletonIndirect
from kernelcast.frontends.skeleton.ir import (
    Loop,
    ParallelFor,
    Skeleton,
    iter_statements,
)
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
        array = skeleton.array(stmt.array)
        indices = tuple(Indirect(_bound(skeleton, ix)) if isinstance(ix, SkeletonIndirect)
                        else ix for ix in stmt.indices)
        streams = [loop.index for loop in loops if loop.kind == "stream"]
        placed.append(PlacedAccess(Access(array.name, indices, array.dims, array.elem_bytes),
                                   stmt.kind == "st", loops, streams[-1] if streams else "",
                                   stmt.line))
    return placed
