"""Access footprints and the data utilization ratio of §2.1 (the paper's Algorithm 2).

The footprint F_v of an array is the union, over every access site of one direction, of
the index map applied to the site's instruction domain. Its filled-in counterpart is every
cell of the array whose address lies between the lowest and highest address of F_v: the
lexicographic range of F_v with the array's axes ordered slowest to fastest, which for a
dense layout is exactly the range of flattened addresses. Both are counted with barvinok
at one parameter point (the kernel's reference size), where index maps such as ``n*i``
become affine.

Public names: Footprint, utilization.
"""

from __future__ import annotations

from fractions import Fraction

import islpy as isl
from loopy.symbolic import get_access_map
from pymbolic.mapper.substitutor import substitute

dim_type = isl.dim_type


def _layout_order(array) -> list[int]:
    """Axes of *array* from slowest to fastest varying."""
    tags = getattr(array, "dim_tags", None) or ()
    levels = [getattr(t, "layout_nesting_level", None) for t in tags]
    if len(levels) != len(array.shape or ()) or None in levels:
        return list(range(len(array.shape or ())))
    return sorted(range(len(levels)), key=lambda k: -levels[k])


def _constant_card(s: isl.Set) -> int:
    return int(s.card().eval_with_dict({}))


class Footprint:
    """Accumulates the footprint of one array in one direction at the reference point."""

    def __init__(self, array, reference: dict[str, int]):
        self.array = array
        self.reference = reference
        self.order = _layout_order(array)
        self.cells: isl.Set | None = None

    def add(self, domain: isl.Set, index: tuple, assumptions: isl.BasicSet) -> bool:
        """Add one access site; False when its index map is not affine."""
        domain = isl.Set.from_basic_set(domain) if isinstance(domain, isl.BasicSet) else domain
        for name, value in self.reference.items():
            pos = domain.find_dim_by_name(dim_type.param, name)
            if pos >= 0:
                domain = domain.fix_val(dim_type.param, pos, value)
        index = tuple(substitute(ix, self.reference) for ix in index)
        index = tuple(index[k] for k in self.order) if len(index) == len(self.order) else index
        try:
            cells = get_access_map(domain, index, assumptions).range()
        except Exception:  # loopy raises several types for non-affine maps
            return False
        cells = cells.project_out(dim_type.param, 0, cells.dim(dim_type.param))
        self.cells = cells if self.cells is None else self.cells | cells
        return True

    def _bounds(self) -> isl.Set:
        """The array's index box, from its shape or else the footprint's bounding box."""
        shape = tuple(self.array.shape or ())
        space = self.cells.space
        box = isl.Set.universe(space)
        for pos in range(space.dim(dim_type.set)):
            if len(shape) == len(self.order):
                extent = substitute(shape[self.order[pos]], self.reference)
                if isinstance(extent, int):
                    box = box.lower_bound_val(dim_type.set, pos, 0)
                    box = box.upper_bound_val(dim_type.set, pos, extent - 1)
                    continue
            lo = self.cells.dim_min_val(pos).to_python()
            hi = self.cells.dim_max_val(pos).to_python()
            box = box.lower_bound_val(dim_type.set, pos, lo)
            box = box.upper_bound_val(dim_type.set, pos, hi)
        return box

    def counts(self) -> tuple[int, int]:
        """(cells touched, cells in the filled-in footprint)."""
        cells = self.cells.coalesce()
        box = self._bounds()
        above_min = cells.lex_le_set(box).range()
        below_max = cells.lex_ge_set(box).range()
        filled = above_min & below_max
        return _constant_card(cells), _constant_card(filled)


def utilization(touched: int, filled: int, stride: int) -> Fraction:
    """Touched cells over filled cells, the filled count extended by ``stride - 1``.

    The extension removes the fencepost of a strided pattern: ``x[2*i]`` for ``i < n``
    fills ``2n - 1`` cells, and counting the gap after the last access gives exactly 1/2.
    """
    stride = abs(stride)
    return Fraction(touched, filled + stride - 1)
