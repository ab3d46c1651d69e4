"""How many memory transactions one SIMD global-memory instruction of a warp costs, and
whether it is coalesced, by compute capability (GROPHECY §7.2 and its footnote 3).

The input is the byte address each thread of the warp touches (what GROPHECY generates
from the first warp_size elements of a shared-memory object, or from a warp's tile W of
a direct access). Three rules:

- compute capability below 1.3 (the FX5600 is 1.0), footnote 3 as written: per half-warp,
  two transactions for the warp — one per half-warp — if and only if the threads access
  adjacent elements in order and the half-warp's first address is aligned to its 16
  elements; otherwise one transaction per thread. (The CUDA Programming Guide 2.3, §G.3.2.1,
  draws this line at 1.2; the paper says 1.3, and its two GPUs are 1.0 and 1.3.)
- compute capability 1.3 (the C1060), footnote 3: per half-warp, the address span in
  transactions, one more where it is not aligned, at most one per thread. Read literally
  ("span / size, plus one if the first address is not aligned") the second half-warp of a
  perfectly contiguous warp, which starts 64 bytes into a 128-byte segment, would pay an
  extra transaction; so the span is counted as the CUDA Programming Guide 2.3 (§G.3.2.2)
  does, in the segments it touches: 32 bytes for 1-byte words, 64 for 2-byte, 128 for 4-
  and 8-byte. Coalesced means one transaction per half-warp.
- compute capability 6.0 and higher (the H100 and H200 are 9.0): the warp's accesses are
  served in as many 32-byte sectors as they touch (CUDA C++ Best Practices Guide,
  "Coalesced Access to Global Memory": "the concurrent accesses of the threads of a warp
  will coalesce into a number of transactions equal to the number of 32-byte transactions
  necessary to service all of the threads of the warp"). Coalesced means no more sectors
  than the same number of adjacent, aligned elements would touch.

Public names: Access, warp_access, rule_for.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from kernelcast.errors import UsageError

SECTOR_BYTES = 32  # compute capability >= 6.0


@dataclass(frozen=True)
class Access:
    """One SIMD memory instruction of a warp: coalesced or not, and its transactions."""

    coalesced: bool
    transactions: int


def rule_for(compute_capability: str | None) -> str:
    """"cc1.0", "cc1.3" or "sectors" for a "major.minor" compute capability."""
    try:
        major, minor = (int(part) for part in str(compute_capability).split("."))
    except ValueError:
        raise UsageError(f"compute capability {compute_capability!r} is not major.minor "
                         "(the hardware description's compute_capability)") from None
    if (major, minor) < (1, 3):
        return "cc1.0"
    if major == 1:
        return "cc1.3"
    if major >= 6:
        return "sectors"
    raise UsageError(f"no coalescing rule for compute capability {compute_capability} "
                     "(GROPHECY's footnote 3 covers 1.x; kernelcast adds 6.0 and higher)")


def _segment(elem_bytes: int) -> int:
    return {1: 32, 2: 64}.get(elem_bytes, 128)


def warp_access(addresses: Sequence[int], elem_bytes: int, rule: str) -> Access:
    """The transactions of one warp's instruction touching the byte *addresses* (one per
    thread, in thread order) of *elem_bytes*-byte elements under *rule* (rule_for)."""
    if not addresses:
        return Access(True, 0)
    if rule == "sectors":
        sectors = {a // SECTOR_BYTES for a in addresses}
        best = math.ceil(len(addresses) * elem_bytes / SECTOR_BYTES)
        return Access(len(sectors) <= best, len(sectors))
    halves = [addresses[i:i + 16] for i in range(0, len(addresses), 16)]
    total, coalesced = 0, True
    for half in halves:
        if rule == "cc1.0":
            ordered = all(b - a == elem_bytes for a, b in itertools.pairwise(half))
            aligned = half[0] % (16 * elem_bytes) == 0
            ok = ordered and aligned
            total += 1 if ok else len(half)
        elif rule == "cc1.3":
            size = _segment(elem_bytes)
            first, last = min(half) // size, (max(half) + elem_bytes - 1) // size
            count = min(last - first + 1, len(half))
            ok = count == 1
            total += count
        else:
            raise UsageError(f"unknown coalescing rule {rule!r}")
        coalesced = coalesced and ok
    return Access(coalesced, total)
