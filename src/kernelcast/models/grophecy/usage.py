"""GROPHECY's data-usage equations (1)–(6), §6.4–6.6, over the sections of
kernelcast.models.grophecy.sections.

Inputs are explicit: the accesses of one array D, the tiles F̂ (one thread plus the full
ranges of its inner-task loops) and B̂ (the thread block plus F̂), size(B) (threads per
block), and a streaming loop as its index name with its range k : ⟨K_l, K_u, K_s⟩. Ratios are
exact Fractions; the model decides how to round a suggested staging size.

Two readings of the extracted text (docs/grophecy.md says why):

- the paper's one-iteration tile [k : ⟨0, 1, 1⟩] and one-stage tile [k : ⟨0, StageSize, 1⟩]
  are taken as the first iteration ⟨K_l, K_l + K_s, K_s⟩ and the first stage
  ⟨K_l, K_l + s·K_s, K_s⟩: the same as the paper's when K_l = 0 and K_s = 1, and the same
  sizes wherever no clipping at the array's edges intervenes;
- NumStages(k) (4) and ShMem(D, k) (5) take the layout's staging size s_k of loop k (the
  paper writes StageSize(k) without D there), which (3) only suggests.

Public names: shr_degree, stage_shr_degree, stage_size, num_stages, shmem, shmem_alloc.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fractions import Fraction
from math import ceil

from kernelcast.errors import UsageError
from kernelcast.models.grophecy.sections import (
    Access,
    Footprint,
    Range,
    Tile,
    footprint,
    size,
)


def _ratio(num: int, den: int, what: str) -> Fraction:
    if den == 0:
        raise UsageError(f"{what}: the footprint in the denominator is empty (no access "
                         "of the array touches the tile)")
    return Fraction(num, den)


def _first(k_range: Range, iterations: int = 1) -> Range:
    """The first *iterations* iterations of the streaming loop k : ⟨K_l, K_u, K_s⟩ (all of
    them when the loop has fewer)."""
    n = min(iterations, size(k_range))
    return Range(k_range.lower, k_range.lower + n * k_range.stride, k_range.stride)


def shr_degree(accesses: Sequence[Access], f_hat: Tile, b_hat: Tile, threads: int) -> Fraction:
    """(1) Degree of sharing: the average number of a block's threads that use one element
    of D; above 1, D is a candidate for shared memory."""
    # (1) ShrDegree(D) = size(H(D, F̂)) × size(B) / size(H(D, B̂))
    return _ratio(size(footprint(accesses, f_hat)) * threads,
                  size(footprint(accesses, b_hat)), "ShrDegree (1)")


def stage_shr_degree(accesses: Sequence[Access], b_hat: Tile, k: str,
                     k_range: Range) -> Fraction:
    """(2) Sharing of D across the iterations of streaming loop k: elements touched by one
    iteration × iterations, over elements touched by all iterations."""
    # (2) StageShrDegree(D, k) = size(H(D, B̂ ∧ [k : ⟨0, 1, 1⟩])) × size([k : ⟨K_l, K_u, K_s⟩])
    #                            / size(H(D, B̂ ∧ [k : ⟨K_l, K_u, K_s⟩]))
    one = size(footprint(accesses, b_hat & Tile({k: _first(k_range)})))
    every = size(footprint(accesses, b_hat & Tile({k: k_range})))
    return _ratio(one * size(k_range), every, "StageShrDegree (2)")


def stage_size(accesses: Sequence[Access], b_hat: Tile, k: str, k_range: Range,
               threads: int) -> Fraction:
    """(3) Suggested staging size of loop k for D: the iterations per stage that let every
    thread of the block load a different element (a multiple of size(B) per stage)."""
    # (3) StageSize(D, k) = size(B) × StageShrDegree(D, k) / size(H(D, B̂ ∧ [k : ⟨0, 1, 1⟩]))
    one = size(footprint(accesses, b_hat & Tile({k: _first(k_range)})))
    return _ratio(threads, one, "StageSize (3)") * stage_shr_degree(accesses, b_hat, k, k_range)


def num_stages(k_range: Range | None, stage: int | None = None) -> int:
    """(4) Stages of streaming loop k with staging size *stage*; 1 for the global scope
    (k = 0, given as ``k_range=None``)."""
    # (4) NumStages(k) = ⌈size([k : ⟨K_l, K_u, K_s⟩]) / StageSize(D, k)⌉ if k > 0; 1 if k = 0
    if k_range is None:
        return 1
    if stage is None or stage < 1:
        raise UsageError(f"NumStages (4) needs a staging size of at least 1, not {stage!r}")
    return ceil(Fraction(size(k_range), stage))


def shmem(accesses: Sequence[Access], b_hat: Tile, k: str | None = None,
          k_range: Range | None = None, stage: int | None = None) -> Footprint:
    """(5) ShMem(D, k): the elements of D a block caches in one stage of loop k (the first
    stage), or, with ``k=None``, the elements cached outside any streaming loop.

    Give the accesses that are cached within loop k (for k = None, those outside every
    streaming loop): the paper's Σ_k in (6) adds one such footprint per loop.
    """
    # (5) ShMem(D, k) = H(D, B̂ ∧ [k : ⟨0, StageSize(k), 1⟩]) if k > 0;  H(D, B̂) if k = 0
    if k is None:
        return footprint(accesses, b_hat)
    if k_range is None or stage is None or stage < 1:
        raise UsageError("ShMem (5) of a streaming loop needs its range and a staging size "
                         f"of at least 1 (got {k_range!r}, {stage!r})")
    return footprint(accesses, b_hat & Tile({k: _first(k_range, stage)}))


def shmem_alloc(elem_bytes: int, per_loop: Iterable[Footprint]) -> int:
    """(6) Bytes of shared memory allocated for D: one buffer per ShMem(D, k), none reused
    across loops (as GROPHECY does)."""
    # (6) ShMemAlloc(D) = ElemBytes(D) × Σ_k size(ShMem(D, k))
    return elem_bytes * sum(size(f) for f in per_loop)
