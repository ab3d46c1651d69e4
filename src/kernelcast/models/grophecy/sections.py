"""Bounded regular sections (BRS; Havlak & Kennedy) as GROPHECY §6.3 uses them.

A *range* ⟨l, u, s⟩ is an arithmetic progression of integers, a *tile* gives each loop index
a range, an *access* is one load or store of an array with one index expression per
dimension, a *section* gives each array dimension a range, the *pattern* P(A, T) is the
section an access touches over a tile, and the *footprint* H(D, T) is the union of the
patterns of all accesses to array D, kept as pairwise disjoint sections.

What is exact and what is not (docs/grophecy.md, "Data usage"):

- ``intersect`` is exact; ``union`` returns the smallest single section containing both
  (per dimension, the smallest progression containing both ranges: a bounding box), so it
  over-approximates unless the two differ in one dimension and their ranges join into one
  progression (§6.7 says UNION over-approximates; this follows it).
- ``pattern`` always contains every element the access touches. Its size is exact when each
  dimension's index varies with at most one loop index of the tile and no varying loop
  index appears in two dimensions; otherwise the box (and, for sums of indices, the gcd
  stride) may add elements.
- The size of a footprint is the summed size of its disjoint sections, so it is at least
  the number of distinct elements touched; equal when every pattern is exact and every
  merge was.

Public names: Range, Tile, meet, Affine, Indirect, Access, Section, Footprint, pattern,
intersect, union, footprint, size.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from math import gcd, prod

from kernelcast.errors import UsageError
from kernelcast.frontends.skeleton.ir import Affine  # one affine index for both


@dataclass(frozen=True)
class Range:
    """⟨lower, upper, stride⟩: the paper's range, upper exclusive.

    §6.3 gives size(⟨l, u, s⟩) = ⌊(u − l) ÷ s⌋; this follows it exactly and reads the range
    as those ⌊(u − l) ÷ s⌋ values l, l + s, …, l + (n − 1)s (none when u ≤ l). When s
    divides u − l — every range in the paper and every range this module builds — that is
    Python's ``range(l, u, s)``; otherwise the floor leaves out the last, partial step.
    """

    lower: int
    upper: int
    stride: int = 1

    def __post_init__(self) -> None:
        for name in ("lower", "upper", "stride"):
            if not isinstance(getattr(self, name), int) or isinstance(getattr(self, name), bool):
                raise UsageError(f"Range {name} must be an integer, not "
                                 f"{getattr(self, name)!r}")
        if self.stride < 1:
            raise UsageError(f"Range stride must be at least 1, not {self.stride}")

    @property
    def count(self) -> int:
        """⌊(upper − lower) ÷ stride⌋, at least 0 (the paper's size of a range)."""
        return max(0, (self.upper - self.lower) // self.stride)

    @property
    def last(self) -> int:
        """The largest value of a nonempty range."""
        if not self.count:
            raise UsageError(f"{self} is empty and has no last value")
        return self.lower + (self.count - 1) * self.stride

    def values(self) -> range:
        """The values, as a Python range."""
        return range(self.lower, self.lower + self.count * self.stride, self.stride)

    def __contains__(self, value: int) -> bool:
        return (self.count > 0 and self.lower <= value <= self.last
                and (value - self.lower) % self.stride == 0)

    def __str__(self) -> str:
        return f"⟨{self.lower}, {self.upper}, {self.stride}⟩"


EMPTY = Range(0, 0, 1)


def _span(first: int, last: int, stride: int) -> Range:
    """The progression first, first + stride, …, last (canonical: upper = last + stride)."""
    return Range(first, last + stride, stride) if first <= last else EMPTY


def _stride(r: Range) -> int:
    """The stride that matters: 0 for a single value (it constrains nothing), else stride."""
    return r.stride if r.count > 1 else 0


@dataclass(frozen=True)
class Tile:
    """A mapping loop index → Range (the paper's T = {t_1, …, t_n}); ``Tile.of(i=…, k=…)``."""

    ranges: tuple[tuple[str, Range], ...] = ()

    def __post_init__(self) -> None:
        items = self.ranges.items() if isinstance(self.ranges, Mapping) else self.ranges
        pairs = tuple(sorted((str(n), r) for n, r in items))
        for name, r in pairs:
            if not isinstance(r, Range):
                raise UsageError(f"tile index {name!r} needs a Range, not {r!r}")
        if len({n for n, _ in pairs}) != len(pairs):
            raise UsageError(f"a tile names an index twice: {[n for n, _ in pairs]}")
        object.__setattr__(self, "ranges", pairs)

    @classmethod
    def of(cls, **ranges: Range) -> Tile:
        return cls(ranges)

    def __getitem__(self, name: str) -> Range:
        for n, r in self.ranges:
            if n == name:
                return r
        raise UsageError(f"the tile gives no range for loop index {name!r} "
                         f"(it has {[n for n, _ in self.ranges]})")

    def __contains__(self, name: object) -> bool:
        return any(n == name for n, _ in self.ranges)

    def as_dict(self) -> dict[str, Range]:
        return dict(self.ranges)

    def __and__(self, other: Tile) -> Tile:
        return meet(self, other)

    def __str__(self) -> str:
        return "[" + "; ".join(f"{n} : {r}" for n, r in self.ranges) + "]"


def meet(x: Tile, y: Tile) -> Tile:
    """The paper's X ∧ Y: X with the ranges of the indices Y names set to Y's.

    Indices of Y that X lacks are added, so the paper's "B + [k : …]" (§6.3) is the same
    operation.
    """
    return Tile({**x.as_dict(), **y.as_dict()})


@dataclass(frozen=True)
class Indirect:
    """A data-dependent index (e.g. B[I[n]]): anywhere in the dimension (§6.3's worst
    case) unless ``bound``, a user's hint, gives its range."""

    bound: Range | None = None


@dataclass(frozen=True)
class Access:
    """One access statement 𝔸(D, Θ, I): array name, one index per dimension, the
    dimensions' extents (elements; valid indices 0 … extent − 1) and bytes per element."""

    array: str
    indices: tuple[Affine | Indirect, ...]
    dims: tuple[int, ...]
    elem_bytes: int = 4

    def __post_init__(self) -> None:
        object.__setattr__(self, "indices", tuple(self.indices))
        object.__setattr__(self, "dims", tuple(self.dims))
        if len(self.indices) != len(self.dims):
            raise UsageError(f"access to {self.array} has {len(self.indices)} indices for "
                             f"{len(self.dims)} dimensions")
        for ix in self.indices:
            if not isinstance(ix, (Affine, Indirect)):
                raise UsageError(f"an index of {self.array} must be Affine or Indirect, "
                                 f"not {ix!r}")
        if any(not isinstance(d, int) or d < 1 for d in self.dims):
            raise UsageError(f"extents of {self.array} must be positive integers: {self.dims}")
        if not isinstance(self.elem_bytes, int) or self.elem_bytes < 1:
            raise UsageError(f"elem_bytes of {self.array} must be a positive integer")


@dataclass(frozen=True)
class Section:
    """A BRS of one array: one Range per dimension (the set is their Cartesian product)."""

    array: str
    ranges: tuple[Range, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "ranges", tuple(self.ranges))

    def __contains__(self, point: tuple[int, ...]) -> bool:
        return len(point) == len(self.ranges) and all(
            v in r for v, r in zip(point, self.ranges))

    def __str__(self) -> str:
        return self.array + "".join(f"[{r}]" for r in self.ranges)


@dataclass(frozen=True)
class Footprint:
    """H(D, T): pairwise disjoint sections of one array (none when no access)."""

    array: str | None
    sections: tuple[Section, ...] = ()


def size(x: Range | Tile | Section | Footprint) -> int:
    """Number of elements: ⌊(u − l) ÷ s⌋ for a range; the product over a tile's or a
    section's ranges; the sum over a footprint's disjoint sections (§6.3)."""
    if isinstance(x, Range):
        return x.count
    if isinstance(x, Tile):
        return prod(r.count for _, r in x.ranges)
    if isinstance(x, Section):
        return prod(r.count for r in x.ranges)
    if isinstance(x, Footprint):
        return sum(size(s) for s in x.sections)
    raise UsageError(f"size() takes a Range, Tile, Section or Footprint, not {type(x).__name__}")


def _affine_range(index: Affine, tile: Tile) -> Range:
    """The values of an affine index over the box of the tile's ranges, as one progression.

    Lower and upper ends come from the coefficients' signs (exact); the stride is the gcd of
    |coefficient| × stride over the indices that take more than one value. Every value lies
    on that progression; it is exactly the set of values when one index varies (or, e.g.,
    when all products are 1), and may hold more otherwise (3i + 5j over i, j ∈ {0, 1}
    gives {0, 3, 5, 8}, covered by ⟨0, 9, 1⟩).
    """
    lo = hi = index.const
    g = 0
    for name, c in index.terms:
        r = tile[name]
        if not r.count:
            return EMPTY
        a, b = c * r.lower, c * r.last
        lo, hi = lo + min(a, b), hi + max(a, b)
        g = gcd(g, abs(c) * _stride(r))
    return _span(lo, hi, g or 1)


def _clip(r: Range, extent: int) -> Range:
    """The values of r within 0 … extent − 1 (exact for a progression)."""
    if not r.count:
        return EMPTY
    s = r.stride
    first = r.lower if r.lower >= 0 else r.lower + (-r.lower + s - 1) // s * s
    last = r.last if r.last < extent else r.lower + (extent - 1 - r.lower) // s * s
    return _span(first, last, s)


def pattern(access: Access, tile: Tile, *, clip: bool = True) -> Section:
    """P(A, T): each loop index in the access's indices replaced by its range in the tile.

    An indirect index covers its hinted range, or else the whole dimension. With ``clip``
    (the default) each dimension is cut to the array's bounds; the paper's sizes assume a
    tile away from the edges ("X and Y … can be assumed to be 0"). A pattern with an empty
    dimension is empty (size 0). Raises UsageError when the tile lacks an index it needs.
    """
    out = []
    for index, extent in zip(access.indices, access.dims):
        if isinstance(index, Indirect):
            r = index.bound if index.bound is not None else Range(0, extent, 1)
            r = _span(r.lower, r.last, r.stride if r.count > 1 else 1) if r.count else EMPTY
        else:
            r = _affine_range(index, tile)
        out.append(_clip(r, extent) if clip else r)
    return Section(access.array, tuple(out))


def _egcd(a: int, b: int) -> tuple[int, int, int]:
    """(g, p, q) with p·a + q·b = g = gcd(a, b)."""
    if b == 0:
        return a, 1, 0
    g, p, q = _egcd(b, a % b)
    return g, q, p - (a // b) * q


def _intersect_ranges(a: Range, b: Range) -> Range | None:
    if not a.count or not b.count:
        return None
    sa, sb = _stride(a) or 1, _stride(b) or 1
    g, p, _ = _egcd(sa, sb)
    d = b.lower - a.lower
    if d % g:
        return None
    step = sa // g * sb
    x0 = a.lower + sa * (p * (d // g) % (sb // g))  # ≡ a.lower (mod sa), ≡ b.lower (mod sb)
    lo, hi = max(a.lower, b.lower), min(a.last, b.last)
    first = lo + (x0 - lo) % step
    if first > hi:
        return None
    return _span(first, first + (hi - first) // step * step, step)


def _union_ranges(a: Range, b: Range) -> Range:
    if not a.count:
        return b
    if not b.count:
        return a
    g = gcd(_stride(a), _stride(b), abs(a.lower - b.lower)) or 1
    return _span(min(a.lower, b.lower), max(a.last, b.last), g)


def intersect(a: Section, b: Section) -> Section | None:
    """INTERSECT: the elements in both sections (exact), or None when disjoint."""
    if a.array != b.array or len(a.ranges) != len(b.ranges):
        return None
    out = []
    for ra, rb in zip(a.ranges, b.ranges):
        r = _intersect_ranges(ra, rb)
        if r is None:
            return None
        out.append(r)
    return Section(a.array, tuple(out))


def union(a: Section, b: Section) -> Section:
    """UNION: the smallest single BRS containing both sections.

    Per dimension the smallest progression containing both ranges (lowest first value,
    highest last, stride the gcd of both strides and the distance between first values);
    the section is the product of those, so it over-approximates (§6.7).
    """
    if a.array != b.array or len(a.ranges) != len(b.ranges):
        raise UsageError(f"cannot unite sections of {a.array} and {b.array}")
    return Section(a.array, tuple(_union_ranges(ra, rb) for ra, rb in zip(a.ranges, b.ranges)))


def footprint(accesses: Iterable[Access], tile: Tile, *, clip: bool = True) -> Footprint:
    """H(D, T): the patterns of all accesses to one array, merged until pairwise disjoint.

    As §6.3 says: INTERSECT finds overlapping patterns, UNION merges them, until only
    non-overlapping ones remain. Order: the first overlapping pair (i < j, in access order)
    merges into place i, and the scan starts again. Empty patterns are left out.
    """
    accesses = list(accesses)
    arrays = {a.array for a in accesses}
    if len(arrays) > 1:
        raise UsageError(f"a footprint is of one array; got accesses to {sorted(arrays)}")
    sections = [p for p in (pattern(a, tile, clip=clip) for a in accesses) if size(p)]
    while True:
        pair = next(((i, j) for i in range(len(sections)) for j in range(i + 1, len(sections))
                     if intersect(sections[i], sections[j]) is not None), None)
        if pair is None:
            break
        i, j = pair
        sections[i] = union(sections[i], sections[j])
        del sections[j]
    return Footprint(arrays.pop() if arrays else None, tuple(sections))
