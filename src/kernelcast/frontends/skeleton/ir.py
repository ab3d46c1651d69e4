"""The typed intermediate representation of a GROPHECY code skeleton.

Plain frozen dataclasses, built by :mod:`.semantics` from the parse tree and read by
whatever comes next (code layouts, characterization, projection). Macros are already
resolved: every size, bound, count and hint is an ``int``; index expressions are either
:class:`Affine` (a linear form over loop indices) or :class:`Indirect` (a value read from
an index array, as in ``A[j][M[i][n]][0]`` or ``r = I[n]`` then ``B[r][i]``).

Public names: Affine, Indirect, Index, Macro, Array, Access, Comp, Assign, Loop,
ParallelFor, Statement, Skeleton, iter_statements, ELEMENT_BYTES, BOUND_KINDS, INT_MAX,
MAX_PARALLEL_DIMS, MAX_STATEMENTS.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

#: Bytes per element of each element type a skeleton may declare (ElemBytes(D), §6.3).
ELEMENT_BYTES = {"char": 1, "short": 2, "int": 4, "long": 8, "float": 4, "double": 8}

#: How a loop's trip count is known: from literals, from macros, from loop indices of
#: enclosing loops (affine), or from data read at run time (a hint then gives it).
BOUND_KINDS = ("constant", "macro", "affine", "data_dependent")

#: The largest magnitude of a skeleton's integers. A skeleton describes C code, whose
#: widest integer type (a size, bound or index) has 64 bits. The same bound holds for
#: an array's bytes (64-bit address arithmetic) and for how often a statement runs over
#: all tasks: a GPU's counters are 64-bit, and 2^63 instructions would keep a whole GPU
#: busy for days.
INT_MAX = 2**63 - 1

#: Dimensions a parallel_for may have: GROPHECY maps each parallel loop onto one
#: dimension of the thread block and grid (§6.1), and GPUs have three (CUDA's x, y, z,
#: OpenCL's work dimensions); the paper's skeletons use at most two.
MAX_PARALLEL_DIMS = 3

#: Statements (ld, st, comp, assignments, loops) a parallel_for may hold: the paper's
#: skeletons need at most 15 (ispinex_complex.sk), and the layout search's time grows
#: faster than the count; repeated work belongs in a loop or a larger comp.
MAX_STATEMENTS = 64


@dataclass(frozen=True)
class Affine:
    """``sum(coeff * index for index, coeff in terms) + const``; terms (given as pairs or
    a mapping) are kept sorted by index name, without zero coefficients. The data-usage
    algebra (kernelcast.models.grophecy.sections) uses the same class."""

    terms: tuple[tuple[str, int], ...] = ()
    const: int = 0

    def __post_init__(self) -> None:
        items = self.terms.items() if isinstance(self.terms, Mapping) else self.terms
        pairs = tuple(sorted((str(n), c) for n, c in items if c != 0))
        for name, c in pairs:
            if not isinstance(c, int) or isinstance(c, bool):
                raise TypeError(f"coefficient of {name!r} must be an integer, not {c!r}")
        if len({n for n, _ in pairs}) != len(pairs):
            raise TypeError(f"an affine index names a loop index twice: {pairs}")
        if not isinstance(self.const, int) or isinstance(self.const, bool):
            raise TypeError(f"affine constant must be an integer, not {self.const!r}")
        object.__setattr__(self, "terms", pairs)

    def value(self, point: Mapping[str, int]) -> int:
        """The index at the loop indices *point*."""
        return self.const + sum(c * point[n] for n, c in self.terms)

    @property
    def is_constant(self) -> bool:
        return not self.terms

    def coeff(self, index: str) -> int:
        """The coefficient of ``index`` (0 when absent)."""
        return dict(self.terms).get(index, 0)

    def __str__(self) -> str:
        parts = [(f"{c}*{n}" if c not in (1, -1) else ("-" if c < 0 else "") + n)
                 for n, c in self.terms]
        if self.const or not parts:
            parts.append(str(self.const))
        return "+".join(parts).replace("+-", "-")


@dataclass(frozen=True)
class Indirect:
    """``scale * array[indices] + offset``: an index (or bound) read from data.

    ``via`` names the variable it came through (``r`` in ``r = I[n]``), or is None when
    the element is written inline (``M[i][n]``)."""

    array: str
    indices: tuple[Index, ...]
    scale: int = 1
    offset: Affine = Affine()
    via: str | None = None

    def __str__(self) -> str:
        s = self.array + "".join(f"[{i}]" for i in self.indices)
        if self.scale != 1:
            s = f"{self.scale}*{s}"
        if self.offset != Affine():
            s = f"{s}+{self.offset}".replace("+-", "-")
        return s


Index = Affine | Indirect


@dataclass(frozen=True)
class Macro:
    """``#define name value``; ``line`` is None for a value given to the parser."""

    name: str
    value: int
    line: int | None = None


@dataclass(frozen=True)
class Array:
    """A declared array: element type, dimensions (macros resolved) and an optional
    ``hints<sample="file">`` path, as written (relative to the skeleton's folder)."""

    name: str
    dtype: str
    dims: tuple[int, ...]
    sample: str | None = None
    line: int = 0
    column: int = 0

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.dims)

    @property
    def elem_bytes(self) -> int:
        return ELEMENT_BYTES[self.dtype]


@dataclass(frozen=True)
class Access:
    """``ld``/``st`` of one element of ``array``; one index per dimension."""

    kind: str  # "ld" or "st"
    array: str
    indices: tuple[Index, ...]
    line: int = 0
    column: int = 0

    @property
    def is_indirect(self) -> bool:
        return any(isinstance(i, Indirect) for i in self.indices)


@dataclass(frozen=True)
class Comp:
    """``comp N``: N functional instructions in this basic block (§7.3)."""

    count: int
    line: int = 0
    column: int = 0


@dataclass(frozen=True)
class Assign:
    """``name = value``: names a value read from data (``r = I[n]``, ``begin = J[j]``)
    for later indices and bounds. It is not a load: the skeleton lists loads with ld."""

    name: str
    value: Index
    line: int = 0
    column: int = 0


@dataclass(frozen=True)
class Loop:
    """``for``/``stream index = lower:upper (hint:N) { body }`` (upper exclusive).

    ``bound_kind`` is one of BOUND_KINDS; ``hint`` is the average trip count the user
    gave (required when the bounds are data dependent)."""

    kind: str  # "for" or "stream"
    index: str
    lower: Index
    upper: Index
    bound_kind: str
    hint: int | None
    body: tuple[Statement, ...]
    line: int = 0
    column: int = 0

    @property
    def trip_count(self) -> int | None:
        """Iterations: exact for constant and macro bounds, else the hint (or None)."""
        if self.bound_kind in ("constant", "macro"):
            return max(0, self.upper.const - self.lower.const)
        return self.hint


Statement = Access | Comp | Assign | Loop


@dataclass(frozen=True)
class ParallelFor:
    """``parallel_for(dims) : indices { body }``: one task per point of the loop space;
    ``indices[k]`` runs over ``0 .. dims[k]-1``."""

    dims: tuple[int, ...]
    indices: tuple[str, ...]
    body: tuple[Statement, ...]
    line: int = 0
    column: int = 0

    def accesses(self) -> list[Access]:
        """Every ld/st in the body, in source order, loops included."""
        return [s for s, _ in iter_statements(self.body) if isinstance(s, Access)]

    def loops(self) -> list[Loop]:
        return [s for s, _ in iter_statements(self.body) if isinstance(s, Loop)]


@dataclass(frozen=True)
class Skeleton:
    """A parsed skeleton: macros, arrays and parallel regions, in source order."""

    path: str
    macros: tuple[Macro, ...]
    arrays: tuple[Array, ...]
    kernels: tuple[ParallelFor, ...]

    def array(self, name: str) -> Array:
        for a in self.arrays:
            if a.name == name:
                return a
        raise KeyError(name)

    def macro(self, name: str) -> int:
        for m in self.macros:
            if m.name == name:
                return m.value
        raise KeyError(name)


def iter_statements(body, loops: tuple[Loop, ...] = ()) -> Iterator[tuple[Statement, tuple[Loop, ...]]]:
    """Yield ``(statement, enclosing loops outermost first)`` depth first, in order."""
    for stmt in body:
        yield stmt, loops
        if isinstance(stmt, Loop):
            yield from iter_statements(stmt.body, loops + (stmt,))
