"""GROPHECY's data-usage algebra (§6.3–6.6): bounded regular sections and equations (1)–(6).

Every expected value is worked by hand in the comment beside it. The brute-force tests at
the end enumerate loop points independently and check which claims are exact (pattern
size for one-to-one accesses; INTERSECT) and which are bounds (pattern and footprint
sizes in general, UNION).
"""

from __future__ import annotations

import itertools
import random
from fractions import Fraction
from math import gcd

import pytest

from kernelcast.errors import UsageError
from kernelcast.models.grophecy.sections import (Access, Affine, Footprint, Indirect, Range,
                                                 Section, Tile, footprint, intersect, meet,
                                                 pattern, size, union)
from kernelcast.models.grophecy.usage import (num_stages, shmem, shmem_alloc, shr_degree,
                                              stage_shr_degree, stage_size)


def A1(c: dict, const: int = 0) -> Affine:
    return Affine(c, const)


# --- ranges and tiles ---------------------------------------------------------------------

def test_range_size_is_the_papers_floor():
    assert size(Range(0, 16, 1)) == 16          # ⌊(16 − 0) ÷ 1⌋
    assert size(Range(3, 19, 4)) == 4           # ⌊16 ÷ 4⌋: 3, 7, 11, 15
    assert size(Range(0, 10, 3)) == 3           # ⌊10 ÷ 3⌋ = 3: 0, 3, 6 (9 is left out)
    assert list(Range(0, 10, 3).values()) == [0, 3, 6]
    assert 9 not in Range(0, 10, 3) and 6 in Range(0, 10, 3)
    assert size(Range(5, 5, 1)) == 0            # u = l: empty
    assert size(Range(7, 3, 1)) == 0            # u < l: empty, not negative
    with pytest.raises(UsageError):
        Range(0, 4, 0)
    with pytest.raises(UsageError):
        Range(0, 4.0, 1)


def test_tile_size_and_meet():
    b = Tile.of(i=Range(0, 16), j=Range(0, 8))
    assert size(b) == 128                                   # 16 × 8
    b_hat = b & Tile.of(k=Range(0, 1024))                   # the paper's B + [k : …]
    assert size(b_hat) == 131072                            # 16 × 8 × 1024
    one = meet(b_hat, Tile.of(k=Range(0, 1, 1)))            # B̂ ∧ [k : ⟨0, 1, 1⟩]
    assert one["k"] == Range(0, 1, 1) and one["i"] == Range(0, 16)
    assert size(one) == 128                                 # 16 × 8 × 1
    assert size(Tile()) == 1                                # empty product
    with pytest.raises(UsageError):
        one["z"]


# --- patterns -------------------------------------------------------------------------------

K = 1024
MM_A = Access("A", (A1({"i": 1}), A1({"k": 1})), (2048, K))     # ld A[i][k]
MM_B = Access("B", (A1({"k": 1}), A1({"j": 1})), (K, 2048))     # ld B[k][j]
MM_C = Access("C", (A1({"i": 1}), A1({"j": 1})), (2048, 2048))  # st C[i][j]


def test_papers_matmul_pattern_and_footprint():
    # §6.3: a 16 × 8 block at [i = X, j = Y]; X = 32, Y = 64 stand for any interior place
    X, Y = 32, 64
    b_hat = Tile.of(i=Range(X, X + 16, 1), j=Range(Y, Y + 8, 1)) & Tile.of(k=Range(0, K, 1))
    p = pattern(MM_A, b_hat)
    assert p == Section("A", (Range(X, X + 16, 1), Range(0, K, 1)))  # A[⟨X, X+16, 1⟩][⟨0, K, 1⟩]
    h = footprint([MM_A], b_hat)
    assert h == Footprint("A", (p,))                        # one access: H(A, B̂) = P
    assert size(h) == 16 * 1024 == 16384                    # 16 rows × K = 1024 columns
    at0 = Tile.of(i=Range(0, 16), j=Range(0, 8), k=Range(0, K))
    assert size(footprint([MM_A], at0)) == 16384            # "X and Y … assumed to be 0"


def test_affine_ranges():
    t = Tile.of(i=Range(0, 4), j=Range(0, 3))
    acc = lambda ix: Access("A", (ix,), (100,))
    # 2i + 4j: lowest 0, highest 2·3 + 4·2 = 14, stride gcd(2·1, 4·1) = 2 → ⟨0, 16, 2⟩
    assert pattern(acc(A1({"i": 2, "j": 4})), t).ranges == (Range(0, 16, 2),)
    assert size(pattern(acc(A1({"i": 2, "j": 4})), t)) == 8   # 0, 2, …, 14 (exact here)
    # 10 − i: values 10, 9, 8, 7 → ⟨7, 11, 1⟩ (negative coefficient swaps the ends)
    assert pattern(acc(A1({"i": -1}, 10)), t).ranges == (Range(7, 11, 1),)
    # 3i + 5j over i, j ∈ {0, 1}: true values {0, 3, 5, 8}; ⟨0, 9, 1⟩ of size 9 covers them
    small = Tile.of(i=Range(0, 2), j=Range(0, 2))
    assert pattern(acc(A1({"i": 3, "j": 5})), small).ranges == (Range(0, 9, 1),)
    # a constant index A[5] → ⟨5, 6, 1⟩, one element
    assert pattern(acc(A1({}, 5)), t).ranges == (Range(5, 6, 1),)
    # 2i + k with k fixed at 3: k adds no stride → 3, 5, 7, 9 = ⟨3, 11, 2⟩ (not stride 1)
    tk = Tile.of(i=Range(0, 4), k=Range(3, 4))
    assert pattern(acc(A1({"i": 2, "k": 1})), tk).ranges == (Range(3, 11, 2),)
    # strided loop: i : ⟨1, 9, 2⟩ (1, 3, 5, 7), index 3i → 3, 9, 15, 21: built as
    # ⟨3, 21 + 6, 6⟩ = ⟨3, 27, 6⟩ (⌊24 ÷ 6⌋ = 4; ⟨3, 24, 6⟩ would hold only ⌊21 ÷ 6⌋ = 3)
    p = pattern(acc(A1({"i": 3})), Tile.of(i=Range(1, 9, 2)))
    assert p.ranges == (Range(3, 27, 6),) and size(p) == 4
    with pytest.raises(UsageError):                          # the tile lacks k
        pattern(acc(A1({"k": 1})), t)


def test_pattern_clips_to_the_array():
    t = Tile.of(i=Range(0, 16))
    # A[i − 1] over i ∈ 0..15: values −1..14; −1 is outside → ⟨0, 15, 1⟩, 15 elements
    p = pattern(Access("A", (A1({"i": 1}, -1),), (1024,)), t)
    assert p.ranges == (Range(0, 15, 1),) and size(p) == 15
    # A[3i − 4], i ∈ 0..4: −4, −1, 2, 5, 8 in an array of 7 → 2, 5 = ⟨2, 8, 3⟩
    a = Access("A", (A1({"i": 3}, -4),), (7,))
    assert pattern(a, Tile.of(i=Range(0, 5))).ranges == (Range(2, 8, 3),)
    assert pattern(a, Tile.of(i=Range(0, 5)), clip=False).ranges == (Range(-4, 11, 3),)  # 5
    # wholly outside → empty
    assert size(pattern(Access("A", (A1({"i": 1}, 100),), (50,)), t)) == 0


def test_indirect_accesses_with_and_without_a_hint():
    # IspinEx-like ld B[I[n]][i]; B is 132 × 2048, a block of 64 along i, n over 14 values
    b = lambda bound: Access("B", (Indirect(bound), A1({"i": 1})), (132, 2048))
    t = Tile.of(i=Range(0, 64), n=Range(0, 14))
    assert size(pattern(b(None), t)) == 132 * 64 == 8448         # worst case: every row
    assert size(pattern(b(Range(0, 10)), t)) == 10 * 64 == 640   # hint: rows 0..9
    assert size(pattern(b(Range(120, 140)), t)) == 12 * 64 == 768  # hint clipped: 120..131
    assert size(pattern(b(Range(0, 20, 4)), t)) == 5 * 64 == 320   # rows 0, 4, 8, 12, 16


# --- INTERSECT and UNION --------------------------------------------------------------------

def S(*ranges: Range, array: str = "A") -> Section:
    return Section(array, ranges)


def test_intersect():
    # {0,4,8,12,16} ∩ {2,8,14,20} (⟨2,30,6⟩ has ⌊28 ÷ 6⌋ = 4 values) = {8}
    assert intersect(S(Range(0, 20, 4)), S(Range(2, 30, 6))) == S(Range(8, 20, 12))
    # even ∩ odd = nothing
    assert intersect(S(Range(0, 20, 2)), S(Range(1, 21, 2))) is None
    # [0, 10) ∩ [5, 15) = 5..9; 2-D: [0,4)×[0,4) ∩ [2,6)×[3,8) = [2,4)×[3,4), 2 elements
    assert intersect(S(Range(0, 10)), S(Range(5, 15))) == S(Range(5, 10))
    both = intersect(S(Range(0, 4), Range(0, 4)), S(Range(2, 6), Range(3, 8)))
    assert both == S(Range(2, 4), Range(3, 4)) and size(both) == 2
    # stride 3 from 1 (1,4,7,10,13) ∩ stride 2 from 0 (0..14) = {4, 10} = ⟨4, 16, 6⟩
    assert intersect(S(Range(1, 16, 3)), S(Range(0, 16, 2))) == S(Range(4, 16, 6))
    # different arrays never overlap
    assert intersect(S(Range(0, 4)), S(Range(0, 4), array="B")) is None


def test_union_is_the_smallest_covering_section():
    # {0,4,…,16} ∪ {2,8,14,20}: stride gcd(4, 6, 2) = 2, from 0 to 20 → ⟨0, 22, 2⟩, 11 ≥ 8
    u = union(S(Range(0, 20, 4)), S(Range(2, 30, 6)))
    assert u == S(Range(0, 22, 2)) and size(u) == 11
    # adjacent: [0, 8) ∪ [8, 16) = [0, 16) exactly
    assert union(S(Range(0, 8)), S(Range(8, 16))) == S(Range(0, 16))
    # evens ∪ odds of one span = all: gcd(2, 2, 1) = 1
    assert union(S(Range(0, 16, 2)), S(Range(1, 17, 2))) == S(Range(0, 16, 1))
    # 2-D bounding box: [0,2)² ∪ [2,4)² = [0,4)², 16 elements for 8 real ones (§6.7)
    box = union(S(Range(0, 2), Range(0, 2)), S(Range(2, 4), Range(2, 4)))
    assert box == S(Range(0, 4), Range(0, 4)) and size(box) == 16
    with pytest.raises(UsageError):
        union(S(Range(0, 4)), S(Range(0, 4), array="B"))


# --- footprints -----------------------------------------------------------------------------

STENCIL = [Access("A", (A1({"i": 1}, c),), (1024,)) for c in (-1, 0, 1)]  # A[i−1], A[i], A[i+1]


def test_stencil_footprint_merges_overlaps():
    # block of 16 at i = 16..31: ⟨15,31⟩ ∪ ⟨16,32⟩ ∪ ⟨17,33⟩ = ⟨15, 33, 1⟩ → 33 − 15 = 18
    h = footprint(STENCIL, Tile.of(i=Range(16, 32)))
    assert h.sections == (S(Range(15, 33, 1)),) and size(h) == 18
    # at the array's edge (i = 0..15) the −1 falls outside: 0..16 → 17; unclipped 18
    assert size(footprint(STENCIL, Tile.of(i=Range(0, 16)))) == 17
    assert size(footprint(STENCIL, Tile.of(i=Range(0, 16)), clip=False)) == 18


def test_footprint_keeps_disjoint_patterns_apart():
    # A[2i] and A[2i+1], i ∈ 0..7: evens 0..14 and odds 1..15 never intersect → 8 + 8 = 16
    acc = [Access("A", (A1({"i": 2}, c),), (64,)) for c in (0, 1)]
    h = footprint(acc, Tile.of(i=Range(0, 8)))
    assert len(h.sections) == 2 and size(h) == 16
    # A[i], A[i+10], A[i+3], A[i+7], i ∈ 0..3: ⟨0,4⟩ ⟨10,14⟩ ⟨3,7⟩ ⟨7,11⟩
    # ⟨0,4⟩ meets ⟨3,7⟩ at 3 → ⟨0,7⟩; ⟨10,14⟩ meets ⟨7,11⟩ at 10 → ⟨7,14⟩; disjoint → 7 + 7
    acc = [Access("A", (A1({"i": 1}, c),), (64,)) for c in (0, 10, 3, 7)]
    h = footprint(acc, Tile.of(i=Range(0, 4)))
    assert h.sections == (S(Range(0, 7)), S(Range(7, 14))) and size(h) == 14


def test_footprint_cascade_over_approximates():
    # A[i][j], A[i+1][j+1] over i, j ∈ {0, 1}, and A[2][0]: the first two meet at (1, 1)
    # and merge into [0,3)×[0,3); the point (2, 0) lies in that box → merged: 9 elements,
    # while only 4 + 4 − 1 + 1 = 8 are touched (UNION's over-approximation, §6.7)
    acc = [Access("A", (A1({"i": 1}), A1({"j": 1})), (8, 8)),
           Access("A", (A1({"i": 1}, 1), A1({"j": 1}, 1)), (8, 8)),
           Access("A", (A1({}, 2), A1({}, 0)), (8, 8))]
    h = footprint(acc, Tile.of(i=Range(0, 2), j=Range(0, 2)))
    assert h.sections == (S(Range(0, 3), Range(0, 3)),) and size(h) == 9


def test_footprint_edge_cases():
    assert footprint([], Tile()) == Footprint(None, ())
    assert size(footprint([], Tile())) == 0
    with pytest.raises(UsageError):
        footprint([MM_A, MM_B], Tile.of(i=Range(0, 1), j=Range(0, 1), k=Range(0, 1)))
    with pytest.raises(UsageError):
        Access("A", (A1({"i": 1}),), (4, 4))


# --- equations (1)–(6) on MatMul, 16 × 16 block ---------------------------------------------

THREADS = 256                                                   # size(B) = 16 × 16
KR = Range(0, K, 1)                                             # k : ⟨0, 1024, 1⟩
B_HAT = Tile.of(i=Range(0, 16), j=Range(0, 16), k=KR)          # block + full k
F_HAT = Tile.of(i=Range(0, 1), j=Range(0, 1), k=KR)            # one thread + full k


def test_eq1_shr_degree_matmul():
    # A: H(A, F̂) = 1 × 1024; H(A, B̂) = 16 × 1024 → 1024 × 256 / 16384 = 16
    assert shr_degree([MM_A], F_HAT, B_HAT, THREADS) == 16
    # B: H(B, F̂) = 1024 × 1; H(B, B̂) = 1024 × 16 → 16
    assert shr_degree([MM_B], F_HAT, B_HAT, THREADS) == 16
    # C: H(C, F̂) = 1; H(C, B̂) = 16 × 16 → 1 × 256 / 256 = 1: not cacheable
    assert shr_degree([MM_C], F_HAT, B_HAT, THREADS) == 1


def test_eq2_to_eq6_matmul_stage_16():
    for acc in (MM_A, MM_B):
        # (2) one iteration: 16 × 1 elements; all 1024: 16 × 1024 → 16 × 1024 / 16384 = 1
        assert stage_shr_degree([acc], B_HAT, "k", KR) == 1
        # (3) 256 × 1 / 16 = 16 — the paper's §9.1 stage size for MatMul
        assert stage_size([acc], B_HAT, "k", KR, THREADS) == 16
        # (5) k : ⟨0, 16, 1⟩ → a 16 × 16 tile of A (rows i, columns k) or of B
        sh = shmem([acc], B_HAT, "k", KR, 16)
        assert size(sh) == 256                                  # 16 × 16
        # (6) 4 bytes × 256 = 1024 bytes (Listing 3's __shared__ float a[16][16])
        assert shmem_alloc(acc.elem_bytes, [sh]) == 1024
    assert shmem([MM_A], B_HAT, "k", KR, 16).sections == (S(Range(0, 16), Range(0, 16)),)
    # (4) ⌈1024 / 16⌉ = 64 stages; Table 4's K = 400: ⌈400 / 16⌉ = 25; global scope: 1
    assert num_stages(KR, 16) == 64
    assert num_stages(Range(0, 400), 16) == 25
    assert num_stages(None) == 1
    # (5) with k = 0: H(D, B̂); C over the block: 16 × 16 = 256, 4 × 256 = 1024 bytes
    assert size(shmem([MM_C], B_HAT)) == 256
    assert shmem_alloc(4, [shmem([MM_C], B_HAT)]) == 1024
    # (6) sums over loops: a buffer for k plus one for the global scope, 4 × (256 + 256)
    assert shmem_alloc(4, [shmem([MM_A], B_HAT, "k", KR, 16), shmem([MM_C], B_HAT)]) == 2048


def test_equations_with_reuse_across_iterations():
    # 1-D convolution ld A[i + k], block i ∈ 0..15 (16 threads), k : ⟨0, 16, 1⟩
    conv = [Access("A", (A1({"i": 1, "k": 1}),), (4096,))]
    kr = Range(0, 16)
    b_hat = Tile.of(i=Range(0, 16), k=kr)
    f_hat = Tile.of(i=Range(0, 1), k=kr)
    # (1) H(F̂) = 0..15 = 16; H(B̂) = 0..30 = 31 → 16 × 16 / 31 = 256/31
    assert shr_degree(conv, f_hat, b_hat, 16) == Fraction(256, 31)
    # (2) one iteration: 16; all: 31 → 16 × 16 / 31 = 256/31
    assert stage_shr_degree(conv, b_hat, "k", kr) == Fraction(256, 31)
    # (3) 16 × (256/31) / 16 = 256/31 (≈ 8.26; the model rounds it)
    assert stage_size(conv, b_hat, "k", kr, 16) == Fraction(256, 31)
    # (5) stage 4: k ∈ 0..3 → A[0..18], 19 elements; (6) 4 × 19 = 76 bytes
    assert size(shmem(conv, b_hat, "k", kr, 4)) == 19
    assert shmem_alloc(4, [shmem(conv, b_hat, "k", kr, 4)]) == 76
    # a stage longer than the loop caches the whole loop: 0..30 = 31
    assert size(shmem(conv, b_hat, "k", kr, 100)) == 31
    # (4) ⌈16 / 5⌉ = 4
    assert num_stages(kr, 5) == 4


def test_equations_with_a_strided_streaming_loop():
    # A[i][k], k : ⟨0, 32, 2⟩ (16 iterations: 0, 2, …, 30), block of 16 along i
    kr = Range(0, 32, 2)
    b_hat = Tile.of(i=Range(0, 16), k=kr)
    # (2) one iteration ⟨0, 2, 2⟩: 16 × 1; all: 16 × 16 → 16 × 16 / 256 = 1
    assert stage_shr_degree([MM_A], b_hat, "k", kr) == 1
    # (3) 16 × 1 / 16 = 1 iteration per stage
    assert stage_size([MM_A], b_hat, "k", kr, 16) == 1
    # (5) stage of 4 iterations: k ∈ {0, 2, 4, 6} → A[0..15][⟨0, 8, 2⟩], 16 × 4 = 64
    sh = shmem([MM_A], b_hat, "k", kr, 4)
    assert sh.sections == (S(Range(0, 16), Range(0, 8, 2)),) and size(sh) == 64
    # (4) ⌈16 / 4⌉ = 4
    assert num_stages(kr, 4) == 4


def test_equations_refuse_what_they_cannot_compute():
    empty = Tile.of(i=Range(0, 0), j=Range(0, 16), k=KR)      # no thread → empty footprint
    with pytest.raises(UsageError):
        shr_degree([MM_A], F_HAT, empty, THREADS)
    with pytest.raises(UsageError):
        num_stages(KR, 0)
    with pytest.raises(UsageError):
        shmem([MM_A], B_HAT, "k", KR, None)


# --- brute force ----------------------------------------------------------------------------

NAMES = ("i", "j", "k")


def _random_tile(rng: random.Random) -> Tile:
    ranges = {}
    for n in NAMES:
        lo, count, s = rng.randint(-3, 6), rng.randint(1, 5), rng.randint(1, 3)
        ranges[n] = Range(lo, lo + count * s + rng.randint(0, s - 1), s)  # some not canonical
    return Tile(ranges)


def _points(tile: Tile):
    """Every loop point of the tile, by the paper's floor reading, enumerated directly."""
    axes = [[r.lower + m * r.stride for m in range((r.upper - r.lower) // r.stride)]
            for _, r in tile.ranges]
    names = [n for n, _ in tile.ranges]
    for values in itertools.product(*axes):
        yield dict(zip(names, values))


def _touched(accesses, tile):
    """The distinct in-bounds elements the accesses touch, evaluated point by point."""
    out = set()
    for point in _points(tile):
        for a in accesses:
            elem = tuple(ix.const + sum(c * point[n] for n, c in ix.terms) for ix in a.indices)
            if all(0 <= e < d for e, d in zip(elem, a.dims)):
                out.add(elem)
    return out


def _elements(section: Section):
    return set(itertools.product(*(r.values() for r in section.ranges)))


def test_pattern_is_exact_for_one_to_one_accesses():
    """Exact: each dimension is a constant or one loop index (any nonzero coefficient), and
    no loop index is used by two dimensions; then size(P) = distinct elements."""
    rng = random.Random(4)
    for _ in range(400):
        tile = _random_tile(rng)
        ndim = rng.randint(1, 3)
        names = rng.sample(NAMES, ndim)
        indices = tuple(A1({} if rng.random() < 0.2 else {n: rng.choice((-2, -1, 1, 2, 3))},
                           rng.randint(-4, 6)) for n in names)
        acc = Access("A", indices, tuple(rng.randint(1, 12) for _ in range(ndim)))
        p = pattern(acc, tile)
        truth = _touched([acc], tile)
        assert size(p) == len(truth) == len(_elements(p)), (acc, tile)
        assert truth == _elements(p)


def test_patterns_and_footprints_are_upper_bounds():
    """Bounds: for any affine accesses every touched element lies in the pattern and in the
    footprint, the footprint's sections are pairwise disjoint, and size(H) ≥ distinct."""
    rng = random.Random(6)
    over = 0
    for _ in range(300):
        tile = _random_tile(rng)
        ndim = rng.randint(1, 2)
        dims = tuple(rng.randint(3, 14) for _ in range(ndim))
        accesses = [Access("A", tuple(A1({n: rng.randint(-2, 2) for n in NAMES},
                                         rng.randint(-3, 8)) for _ in range(ndim)), dims)
                    for _ in range(rng.randint(1, 3))]
        for a in accesses:
            assert _touched([a], tile) <= _elements(pattern(a, tile))
        h = footprint(accesses, tile)
        truth = _touched(accesses, tile)
        parts = [_elements(s) for s in h.sections]
        assert all(len(e) == size(s) for e, s in zip(parts, h.sections))  # sizes exact
        assert all(not (x & y) for x, y in itertools.combinations(parts, 2))  # disjoint
        assert all(intersect(x, y) is None for x, y in itertools.combinations(h.sections, 2))
        assert truth <= set().union(*parts)
        assert size(h) >= len(truth)
        over += size(h) > len(truth)
    assert over > 0   # the bound is not always tight: these cases do over-approximate


def test_intersect_is_exact_and_union_covers():
    rng = random.Random(8)
    for _ in range(500):
        a, b = (Range(lo := rng.randint(-5, 10), lo + rng.randint(0, 20), rng.randint(1, 4))
                for _ in range(2))
        ea, eb = set(a.values()), set(b.values())
        got = intersect(S(a), S(b))
        assert (set() if got is None else set(got.ranges[0].values())) == ea & eb
        u = union(S(a), S(b)).ranges[0] if ea and eb else None
        if u is not None:
            assert ea | eb <= set(u.values())
            # smallest progression: same first and last values, stride the gcd of the gaps
            assert u.lower == min(ea | eb) and u.last == max(ea | eb)
            assert u.stride == (gcd(*(x - u.lower for x in ea | eb)) or 1)


def test_docs_example_runs():
    import doctest
    from pathlib import Path
    page = Path(__file__).resolve().parents[1] / "docs" / "grophecy.md"
    result = doctest.testfile(str(page), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted >= 5
