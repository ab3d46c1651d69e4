"""Operations on loop-carried dependency paths: what one step of a recurrence must wait for.

An instruction inside a sequential loop that reads the private scalar it writes
(``acc = acc + a[k]``, ``x = rsqrt(x) + c``, ``j = tile[j]``) is a recurrence: each step
starts only when the step before has finished. The operations between the old value and
the new one are on its path, and their latencies, not their throughputs, bound a work-item
that runs such a loop: in ``acc = acc + a[k]*b[k]`` only the add is on the path (the loads
and the multiply of the next steps can start early); in ``j = tile[j]`` the local load is.

``recurrence_ops(knl, insn)`` counts them per execution of *insn*: floating-point
operations (for a float recurrence), special functions, and loads from local and global
memory whose address depends on the recurrence. Integer arithmetic is not counted.

A loop whose body holds an instruction under a condition on the loop's own index
(``if (j != i) acc += rsqrt(tile[j])``) has a branch in every iteration. NVIDIA's
compilers unroll such a loop but keep each iteration in its own branch (``BSSY``/``BSYNC``
in the SASS, data/h100/sass/: N-body, the ``guarded`` special and polynomial
microbenchmarks) and move no load above it, so an iteration waits for its own loads and
special functions too, not only for the step before. ``serial_ops(knl, insn)`` counts, per
execution of a recurrence in such a loop, the loads and special functions on the longest
path through one iteration, following the private temporaries the iteration computes
(N-body: tile load → difference → square → sum over k → rsqrt → add). Flops on that path
are left to the other counts.

The counts treat every such loop alike, although the compilers do not: an iteration that
only adds a load into the recurrence (``acc += tile[k]``) becomes predicated code whose
loads issue back to back, and so does ``acc += rsqrt(tile[k])`` where the rsqrt is one
instruction (flush-to-zero, as cupy builds the CUDA backend's kernels); the fitted weights
absorb the difference. The integer arithmetic an iteration spends on an index not affine
in the loop indices is not counted either. docs/history.md records the alternatives that
were measured.

A loop whose trip count differs among a work-group's work-items (Loopy's fetch of a tile
larger than its work-group: ``for (k = 0; k <= 1 + (15*lid + 1)/16 - lid; ++k)``) has a
branch in every iteration for the same reason, on the work-item's own bound: the compiler
unrolls it into iterations that each wait for their own load before the next is issued
(finite differences' fetch in data/h100/ptx/: a global load, a local store and a branch,
four times over). ``varying_loops(knl, insn, reference)`` finds such loops of *insn*; the
extraction counts the global loads of the work-item that runs the most of their
iterations (kernelcast.properties.extract), since its work-group waits for it at the
barrier that follows a fetch.

Public names: recurrence_ops, serial_ops, varying_loops,
sequential_inames.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import islpy as isl
import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from loopy.kernel.data import AddressSpace, GroupInameTag, LocalInameTag
from loopy.kernel.instruction import Assignment
from loopy.symbolic import get_dependencies



def _space(knl: lp.LoopKernel, name: str) -> str:
    temp = knl.temporary_variables.get(name)
    if temp is not None and temp.address_space == AddressSpace.LOCAL:
        return "local_loads"
    if temp is not None:
        return ""  # private: a register
    return "global_loads"


def _children(expr):
    args = ([getattr(expr, f.name) for f in dataclasses.fields(expr)]
            if dataclasses.is_dataclass(expr) else expr.__getinitargs__())
    for arg in args:
        if isinstance(arg, tuple):
            yield from (a for a in arg if isinstance(a, prim.ExpressionNode))
        elif isinstance(arg, prim.ExpressionNode):
            yield arg


def _path(knl, expr, var: str, is_float: bool, counts: Counter) -> bool:
    """Whether *expr* depends on *var*; adds the operations on the path to *counts*."""
    if isinstance(expr, prim.Variable):
        return expr.name == var
    if not isinstance(expr, prim.ExpressionNode):
        return False
    if isinstance(expr, prim.Subscript):
        on = any([_path(knl, ix, var, is_float, counts) for ix in expr.index_tuple])
        kind = _space(knl, expr.aggregate.name) if on else ""
        if kind:
            counts[kind] += 1
        return on
    on = any([_path(knl, child, var, is_float, counts) for child in _children(expr)])
    if on and isinstance(expr, prim.Call):
        counts["special"] += 1
    elif on and is_float and isinstance(expr, (prim.Sum, prim.Product, prim.Quotient,
                                               prim.Power)):
        counts["flops"] += 1
    return on


def sequential_inames(knl: lp.LoopKernel, insn) -> set[str]:
    return {i for i in insn.within_inames
            if not knl.iname_tags_of_type(i, lp.kernel.data.HardwareConcurrentTag)}


def _recurrence_var(knl: lp.LoopKernel, insn) -> str | None:
    """The private scalar *insn* updates from itself inside a sequential loop, or None."""
    if not isinstance(insn, Assignment) or not isinstance(insn.assignee, prim.Variable):
        return None
    var = insn.assignee.name
    if (var not in knl.temporary_variables or not sequential_inames(knl, insn)
            or var not in get_dependencies(insn.expression)):
        return None
    return var


def recurrence_ops(knl: lp.LoopKernel, insn) -> Counter:
    """Operations on the loop-carried path of *insn*, per execution (empty if it is no
    recurrence)."""
    var = _recurrence_var(knl, insn)
    if var is None:
        return Counter()
    temp = knl.temporary_variables[var]
    dtype = temp.dtype.numpy_dtype if temp.dtype not in (None, lp.auto) else None
    is_float = dtype is not None and np.issubdtype(dtype, np.floating)
    counts: Counter = Counter()
    _path(knl, insn.expression, var, is_float, counts)
    return counts


def _carried(knl: lp.LoopKernel, insn, var: str) -> set[str]:
    """The loops over which *var* carries from step to step: those of *insn* that do not
    also enclose a fresh start of *var* (``acc_k = 0`` inside the j loop: acc_k carries
    over k only)."""
    starts = [w for w in knl.instructions if w.id != insn.id and var in w.assignee_var_names()
              and var not in w.read_dependency_names()]
    enclosing = set().union(*(sequential_inames(knl, w) for w in starts))
    return sequential_inames(knl, insn) - enclosing


def branching_loops(knl: lp.LoopKernel) -> frozenset[str]:
    """Sequential loops with an instruction under a condition on the loop's own index: a
    branch in every iteration."""
    return frozenset(
        iname for insn in knl.instructions for pred in insn.predicates
        for iname in sequential_inames(knl, insn) & get_dependencies(pred))


def _longest(paths) -> Counter:
    return max(paths, key=lambda c: (sum(c.values()), c["global_loads"], c["local_loads"]),
               default=Counter())


class _SerialPath:
    """Longest paths through one iteration of the loops *inames*, by expression."""

    def __init__(self, knl: lp.LoopKernel, inames: set[str]):
        self.knl = knl
        self.writers = {}  # private temporaries written within the iteration
        for insn in knl.instructions:
            if (isinstance(insn, Assignment) and isinstance(insn.assignee, prim.Variable)
                    and inames <= sequential_inames(knl, insn)
                    and insn.assignee.name in knl.temporary_variables):
                self.writers.setdefault(insn.assignee.name, []).append(insn)
        self.visiting: set[str] = set()

    def of_variable(self, name: str, own: str | None) -> Counter:
        if name == own or name in self.visiting or name not in self.writers:
            return Counter()
        self.visiting.add(name)
        path = _longest(self.of(w.expression, w.assignee.name) for w in self.writers[name])
        self.visiting.discard(name)
        return path

    def of(self, expr, own: str | None) -> Counter:
        if isinstance(expr, prim.Variable):
            return self.of_variable(expr.name, own)
        if not isinstance(expr, prim.ExpressionNode):
            return Counter()
        if isinstance(expr, prim.Subscript):
            path = _longest(self.of(ix, own) for ix in expr.index_tuple)
            kind = _space(self.knl, expr.aggregate.name)
            return path + Counter({kind: 1}) if kind else path
        path = _longest(self.of(child, own) for child in _children(expr))
        if isinstance(expr, prim.Call):
            path = path + Counter({"special": 1})
        return path


def serial_ops(knl: lp.LoopKernel, insn, loops: frozenset[str] | None = None) -> Counter:
    """Loads and special functions on the longest path through one iteration of a loop
    with a branch in every iteration, per execution of the recurrence *insn* in it (empty
    for any other instruction). *loops* is branching_loops(knl), if known."""
    var = _recurrence_var(knl, insn)
    if var is None:
        return Counter()
    inames = _carried(knl, insn, var) & (branching_loops(knl) if loops is None else loops)
    if not inames:
        return Counter()
    return +_SerialPath(knl, inames).of(insn.expression, var)


# a size at which the tiles of every group size a kernel is likely to use fit exactly
_DIVISIBLE_SIZE = 2 ** 8 * 3 ** 2 * 5 * 7


def varying_loops(knl: lp.LoopKernel, insn, reference: dict[str, int]) -> frozenset[str]:
    """Sequential loops of *insn* whose trip count differs among the work-items of an
    interior work-group: the first work-group, with every size a multiple of the tiles
    (or at the *reference* sizes where the kernel's assumptions do not allow that), so
    that loops and iterations cut short only at the edge of the data do not count, nor
    conditions on single iterations (the domain here leaves out the predicates)."""
    dim = isl.dim_type
    local = [i for i in insn.within_inames if knl.iname_tags_of_type(i, LocalInameTag)]
    seq = sequential_inames(knl, insn)
    if not local or not seq:
        return frozenset()
    domain = knl.get_inames_domain(insn.within_inames).project_out_except(
        insn.within_inames, [dim.set])
    if isinstance(domain, isl.BasicSet):
        domain = domain.to_set()
    for name in insn.within_inames:
        if knl.iname_tags_of_type(name, GroupInameTag):
            domain = domain.fix_val(dim.set, domain.find_dim_by_name(dim.set, name), 0)
    for sizes in (dict.fromkeys(reference, _DIVISIBLE_SIZE), reference):
        fixed = domain
        for name, value in sizes.items():
            pos = fixed.find_dim_by_name(dim.param, name)
            if pos >= 0:
                fixed = fixed.fix_val(dim.param, pos, value)
        if not fixed.is_empty():
            break
    domain = fixed
    varying = set()
    for iname in seq:
        pair = domain.project_out_except([iname, *local], [dim.set])
        for name in local:  # the local ids become parameters of the loop's bounds
            pair = pair.move_dims(dim.param, pair.dim(dim.param), dim.set,
                                  pair.find_dim_by_name(dim.set, name), 1)
        pos = pair.find_dim_by_name(dim.set, iname)
        context = pair.params()
        ids = [pair.find_dim_by_name(dim.param, name) for name in local]
        for bound in (pair.dim_max(pos), pair.dim_min(pos)):
            bound = bound.gist_params(context).coalesce()
            if any(bound.involves_dims(dim.param, i, 1) for i in ids):
                varying.add(iname)
    return frozenset(varying)
