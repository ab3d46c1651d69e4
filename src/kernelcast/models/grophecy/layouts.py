"""The first two factors of a GROPHECY code layout (§6.1, §6.2): thread-block shapes B
and foldings F, enumerated in the paper's dependency order (B → F → {S, O} → caching,
unrolling; the later factors come with the layout search).

Without hints the space is autopruned as §6.2 allows ("different B's and F's with values
that are reasonably far apart are explored"): each side of a block and each folding
degree is a power of two; a block holds whole warps (all the paper's blocks do: a
partial warp idles SIMD lanes) unless the loop space is smaller than a warp; a thread
takes at most MAX_TASKS tasks (GROPHECY does not model registers, §7.1, so nothing else
would stop it from folding hundreds of tasks' state into one thread). A block has at most
the device's maximum threads per block, and no side longer than its loop (a thread block
past the loop space has nothing to do); a folding keeps each side of block × folding
within its loop, which implies the paper's size(B) × size(F) ≤ size(Loop_space). Hints name the blocks or foldings to explore
instead (any sides, not only powers of two); one that breaks those limits is refused,
naming the limit.

A whole layout is a ``Layout`` (kernelcast.frontends.skeleton.layout, importable from
here too); ``describe`` puts each factor in words.

Public names: Layout, MAX_TASKS, block_shapes, foldings.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence

from kernelcast.errors import UsageError
from kernelcast.frontends.skeleton.layout import Layout

__all__ = ["MAX_TASKS", "Layout", "block_shapes", "foldings"]

#: Tasks per thread the autopruned space allows (hints may ask for more).
MAX_TASKS = 16


def _powers_of_two(limit: int) -> list[int]:
    return [1 << e for e in range(limit.bit_length()) if 1 << e <= limit]


def block_shapes(space: Sequence[int], max_threads: int,
                 hints: Iterable[Sequence[int]] | None = None,
                 warp_size: int = 1) -> list[tuple[int, ...]]:
    """Thread-block shapes B over the loop space *space* (one extent per parallel loop):
    the hinted ones, checked, or every power-of-two shape of at most *max_threads* and of
    whole warps of *warp_size* threads (where the loop space has that many tasks)."""
    space = tuple(space)
    if hints is not None:
        shapes = [tuple(h) for h in hints]
        for shape in shapes:
            if len(shape) != len(space) or any(b < 1 for b in shape):
                raise UsageError(f"block {shape} does not fit a {len(space)}-D loop space")
            if math.prod(shape) > max_threads:
                raise UsageError(f"block {shape} has {math.prod(shape)} threads; the device "
                                 f"runs at most {max_threads} per block")
            if any(b > n for b, n in zip(shape, space, strict=True)):
                raise UsageError(f"block {shape} is longer than the loop space {space}")
        return list(dict.fromkeys(shapes))
    sides = [_powers_of_two(min(n, max_threads)) for n in space]
    least = min(warp_size, math.prod(_powers_of_two(n)[-1] for n in space))
    return [shape for shape in itertools.product(*sides)
            if least <= math.prod(shape) <= max_threads]


def foldings(space: Sequence[int], block: Sequence[int],
             hints: Iterable[Sequence[int]] | None = None) -> list[tuple[int, ...]]:
    """Foldings F for *block* over *space*: tasks per thread along each loop, with
    block × folding within the loop on every side; the hinted ones, checked, or every
    power-of-two one of at most MAX_TASKS tasks."""
    space, block = tuple(space), tuple(block)
    limits = [n // b for n, b in zip(space, block, strict=True)]
    if hints is not None:
        folds = [tuple(h) for h in hints]
        for fold in folds:
            if len(fold) != len(space) or any(f < 1 for f in fold):
                raise UsageError(f"folding {fold} does not fit a {len(space)}-D loop space")
            if any(f > limit for f, limit in zip(fold, limits, strict=True)):
                raise UsageError(f"folding {fold} with block {block} covers more than the "
                                 f"loop space {space}")
        return list(dict.fromkeys(folds))
    return [fold for fold in itertools.product(*(_powers_of_two(limit) for limit in limits))
            if math.prod(fold) <= MAX_TASKS]
