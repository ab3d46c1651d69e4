"""A GROPHECY code layout (Meng et al., SC'11, §6.1): how a skeleton's loop space is mapped
onto threads (thread blocks, folding, staging, caching, unrolling). With a parsed skeleton
it makes GROPHECY's workload; kernelcast.models.grophecy.layouts enumerates the layouts
its search explores.

Public names: Layout.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


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
