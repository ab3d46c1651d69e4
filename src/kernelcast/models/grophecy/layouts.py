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

A whole layout is a ``Layout``; ``describe`` puts each factor in words.

Public names: Layout, MAX_TASKS, block_shapes, foldings.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kernelcast.errors import UsageError


@dataclass(frozen=True)
class Layout:
    """One GROPHECY code layout {B, F, S, O, cached accesses, ShMem, L} (§6.1).

    ``block`` and ``fold`` give one extent per parallel loop (B and F). ``stages`` lists
    the staged streaming loops as (index, iterations per stage), S; a streaming loop not
    listed runs in one stage. The streaming loops are the skeleton's and, for every
    parallel loop folded more than once, the loop over the thread's tasks (named by the
    parallel index; one iteration of it covers ``block`` tasks of that loop). ``cached``
    names the arrays whose loads read shared memory (the cached accesses Ā; every other
    access is uncached, Â); ShMem(D, k) follows from B, F, S and these by Eq. (5).
    ``unroll``: L maximal (every loop with a static trip count unrolled in groups of 16,
    as GROPHECY does) or no unrolling. O, the order of interchangeable streaming loops,
    is the skeleton's (docs/grophecy.md: no count of Eqs. (1)–(17) depends on it).
    """

    block: tuple[int, ...]
    fold: tuple[int, ...]
    stages: tuple[tuple[str, int], ...] = ()
    cached: tuple[str, ...] = ()
    unroll: bool = True

    def describe(self, indices: Sequence[str] | None = None) -> dict[str, str]:
        """Each factor in words, for tables."""
        over = f" over {', '.join(indices)}" if indices else ""
        tasks = math.prod(self.fold)
        return {
            "block": "×".join(map(str, self.block)) + over
                     + f" ({math.prod(self.block)} threads)",
            "folding": ("none" if tasks == 1 else "×".join(map(str, self.fold))
                        + f" ({tasks} tasks per thread)"),
            "staging": ", ".join(f"{k} in stages of {s}" for k, s in self.stages) or "none",
            "caching": ("shared memory for " + ", ".join(self.cached)) if self.cached
                       else "none (global memory only)",
            "unrolling": "loops unrolled by 16" if self.unroll else "none",
        }


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
