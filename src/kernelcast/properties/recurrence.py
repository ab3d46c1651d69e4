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

Public names: RECURRENCE_KINDS, recurrence_ops.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from loopy.kernel.data import AddressSpace
from loopy.kernel.instruction import Assignment
from loopy.symbolic import get_dependencies

RECURRENCE_KINDS = ("flops", "special", "local_loads", "global_loads")


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


def recurrence_ops(knl: lp.LoopKernel, insn) -> Counter:
    """Operations on the loop-carried path of *insn*, per execution (empty if it is no
    recurrence)."""
    if not isinstance(insn, Assignment) or not isinstance(insn.assignee, prim.Variable):
        return Counter()
    var = insn.assignee.name
    temp = knl.temporary_variables.get(var)
    sequential = [i for i in insn.within_inames
                  if not knl.iname_tags_of_type(i, lp.kernel.data.HardwareConcurrentTag)]
    if temp is None or not sequential or var not in get_dependencies(insn.expression):
        return Counter()
    dtype = temp.dtype.numpy_dtype if temp.dtype not in (None, lp.auto) else None
    is_float = dtype is not None and np.issubdtype(dtype, np.floating)
    counts: Counter = Counter()
    _path(knl, insn.expression, var, is_float, counts)
    return counts
