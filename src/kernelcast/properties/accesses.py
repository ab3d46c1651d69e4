"""Memory access sites of a Loopy kernel and their stride along local axis 0.

An access site is one array reference in one instruction. Its stride is the address step,
in elements of the array, from one work-item to the next along local axis 0 (the paper's
"abstract SIMD lane"), found from the coefficient of that axis's iname in each index and
the array's axis strides. A site whose index depends on data (a temporary, another array)
or is not affine in the iname has no stride: it is irregular.

A local-memory site's bank passes are the wavefronts that the first 32 work-items of a
group (a warp) need to serve it: local memory is 32 banks of 4-byte words on NVIDIA
GPUs since Fermi and on AMD's GCN and later, and a bank delivers one word per pass.

Public names: AccessSite, find_access_sites, lid0_stride, local_bank_passes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import loopy as lp
from loopy.kernel.data import AddressSpace, LocalInameTag
from loopy.symbolic import CoefficientCollector, get_dependencies
from pymbolic import evaluate, flatten
from pymbolic.mapper.evaluator import UnknownVariableError
from pymbolic.mapper import WalkMapper
from pymbolic.primitives import Sum, Variable

from kernelcast.errors import UnsupportedKernelError

BANKS = 32  # 4-byte banks of local memory, and the work-items served together


@dataclass(frozen=True)
class AccessSite:
    """One reference to a global or local array in one instruction."""

    insn_id: str
    array: str
    index: tuple
    direction: str  # "load" or "store"
    space: str  # "global" or "local"
    bits: int
    in_condition: bool = False  # read by the instruction's condition, not its body


def _memory_space(knl: lp.LoopKernel, name: str) -> str | None:
    if name in knl.temporary_variables:
        aspace = knl.temporary_variables[name].address_space
        return {AddressSpace.GLOBAL: "global", AddressSpace.LOCAL: "local"}.get(aspace)
    arg = knl.arg_dict.get(name)
    if isinstance(arg, (lp.ArrayArg, lp.ConstantArg)):
        return "global"
    return None


class _SiteCollector(WalkMapper):
    """Finds array references. Loopy's own walk mappers cache, visiting a repeated
    subexpression once; every reference costs an access, so this walk does not."""

    def __init__(self, knl, insn_id, direction):
        super().__init__()
        self.knl, self.insn_id, self.direction = knl, insn_id, direction
        self.sites: list[AccessSite] = []

    def _add(self, name, index):
        space = _memory_space(self.knl, name)
        if space is not None:
            dtype = self.knl.get_var_descriptor(name).dtype.numpy_dtype
            self.sites.append(AccessSite(self.insn_id, name, index, self.direction,
                                         space, dtype.itemsize * 8))

    def map_subscript(self, expr, *args, **kwargs):
        index = expr.index if isinstance(expr.index, tuple) else (expr.index,)
        self._add(expr.aggregate.name, index)
        loads = _SiteCollector(self.knl, self.insn_id, "load")
        for ix in index:
            loads(ix)
        self.sites.extend(loads.sites)

    def map_variable(self, expr, *args, **kwargs):
        self._add(expr.name, ())

    map_tagged_variable = map_variable

    def map_type_cast(self, expr, *args, **kwargs):
        self.rec(expr.child)

    def map_reduction(self, expr, *args, **kwargs):
        self.rec(expr.expr)

    def _leaf(self, expr, *args, **kwargs):
        pass

    map_resolved_function = map_literal = map_array_literal = _leaf
    map_group_hw_index = map_local_hw_index = map_nan = _leaf

    def map_linear_subscript(self, expr, *args, **kwargs):
        raise UnsupportedKernelError(f"linear subscripts such as {expr} are not supported")

    map_sub_array_ref = map_linear_subscript


def find_access_sites(knl: lp.LoopKernel, insn) -> list[AccessSite]:
    """All global- and local-memory references of *insn*, loads and stores."""
    sites = []
    for assignee in insn.assignees:
        stores = _SiteCollector(knl, insn.id, "store")
        stores(assignee)
        sites += stores.sites
    loads = _SiteCollector(knl, insn.id, "load")
    loads(insn.expression)
    sites += loads.sites
    for pred in insn.predicates:
        cond = _SiteCollector(knl, insn.id, "load")
        cond(pred)
        sites += [replace(site, in_condition=True) for site in cond.sites]
    return sites


def _lid0_iname(knl: lp.LoopKernel, insn) -> str | None:
    for iname in insn.within_inames:
        for tag in knl.iname_tags_of_type(iname, LocalInameTag):
            if tag.axis == 0:
                return iname
    return None


def lid0_stride(knl: lp.LoopKernel, insn, site: AccessSite,
                reference: dict[str, int]) -> int | None:
    """The site's stride along local axis 0 at the reference parameters, None if irregular."""
    lid0 = _lid0_iname(knl, insn)
    deps = set().union(*(get_dependencies(ix) for ix in site.index)) if site.index else set()
    if not deps <= (set(knl.all_inames()) | set(reference)):
        return None  # the index reads data: a temporary or another array
    if lid0 is None or lid0 not in deps:
        return 0
    array = knl.get_var_descriptor(site.array)
    tags = array.dim_tags or ()
    total = 0
    for axis, ix in enumerate(site.index):
        terms = ix.children if isinstance(ix, Sum) else (ix,)
        for term in terms:
            if lid0 not in get_dependencies(term):
                continue
            try:
                coeffs = CoefficientCollector([lid0])(term)
            except Exception:  # non-affine: floor division, product of inames, ...
                return None
            coeff = coeffs.get(Variable(lid0), 0)
            if get_dependencies(coeff) - set(reference):
                return None  # the step depends on another iname
            axis_stride = getattr(tags[axis], "stride", None) if axis < len(tags) else 1
            if axis_stride is None or axis_stride is lp.auto:
                return None
            total += evaluate(flatten(coeff * axis_stride), reference)
    if total != int(total):
        return None
    return int(total)



def _local_iname(knl: lp.LoopKernel, insn, axis: int) -> str | None:
    for iname in insn.within_inames:
        for tag in knl.iname_tags_of_type(iname, LocalInameTag):
            if tag.axis == axis:
                return iname
    return None


def _word_strides(array, reference: dict[str, int]) -> list[int]:
    """The element strides of *array*: its fixed strides where Loopy has them (a padded
    local array's storage is wider than its shape), else row-major over its shape, as
    Loopy lays out temporaries."""
    from loopy.kernel.array import FixedStrideArrayDimTag

    tags = getattr(array, "dim_tags", None) or ()
    if len(tags) == len(array.shape) and all(
            isinstance(t, FixedStrideArrayDimTag) and t.stride is not lp.auto for t in tags):
        try:
            return [int(evaluate(flatten(t.stride), reference)) for t in tags]
        except (UnknownVariableError, TypeError):
            pass
    shape = [evaluate(flatten(n), reference) for n in array.shape]
    strides = [1] * len(shape)
    for axis in range(len(shape) - 2, -1, -1):
        strides[axis] = strides[axis + 1] * shape[axis + 1]
    return strides


def local_bank_passes(knl: lp.LoopKernel, insn, site: AccessSite, local_size: tuple,
                      reference: dict[str, int]) -> int:
    """Passes of local memory that one warp's access at *site* takes: the most distinct
    4-byte words any one bank must deliver, per word of the element (an 8-byte element
    fills two banks per work-item; 32 of them take two passes without any conflict).

    The warp is the first 32 work-items (local axis 0 fastest) at the first iteration of
    every loop (each iname at 0). A site whose address depends on data counts as one pass.
    Addresses follow the array's strides, so padding (kernelcast.tune.space's
    pad_local_array) counts.
    """
    array = knl.get_var_descriptor(site.array)
    strides = _word_strides(array, reference)
    words = max(site.bits // 32, 1)
    axes = [_local_iname(knl, insn, a) for a in range(3)]
    sizes = [int(n) for n in local_size] + [1, 1, 1]
    context = {iname: 0 for iname in knl.all_inames()} | dict(reference)
    banks: dict[int, set[int]] = {}
    for lane in range(min(BANKS, sizes[0] * sizes[1] * sizes[2])):
        ids = (lane % sizes[0], lane // sizes[0] % sizes[1], lane // (sizes[0] * sizes[1]))
        lane_context = context | {iname: i for iname, i in zip(axes, ids, strict=True)
                                  if iname is not None}
        try:
            offset = sum(evaluate(ix, lane_context) * st
                         for ix, st in zip(site.index, strides, strict=True))
        except UnknownVariableError:
            return 1  # the address depends on data
        for word in range(int(offset) * words, int(offset) * words + words):
            banks.setdefault(word % BANKS, set()).add(word)
    most = max(map(len, banks.values()))
    return max(1, -(-most // words))
