"""An independent brute-force count of kernel properties, for checking the symbolic ones.

Nothing here uses kernelcast's counting: it enumerates every integer point of every
instruction's domain at fixed small sizes (isl's point enumeration, not barvinok), evaluates
each array index numerically at each point, flattens it with the array's strides, takes the
stride along local axis 0 as the difference of addresses between neighbouring work-items,
takes footprints as Python sets of addresses, and counts operations with its own expression
walk. It shares with kernelcast only Loopy's preprocessing and linearization, type
inference, and the documented binning rule ``stride_class``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from fractions import Fraction

import islpy as isl
import loopy as lp
import numpy as np
from loopy.kernel.data import AddressSpace, GroupInameTag, LocalInameTag
from loopy.kernel.instruction import MultiAssignmentBase
from loopy.schedule import Barrier, EnterLoop, LeaveLoop
from loopy.type_inference import TypeReader
from pymbolic import evaluate
from pymbolic.mapper import WalkMapper
from pymbolic.mapper.stringifier import StringifyMapper

from kernelcast.frontends.loopy import prepare_kernel
from kernelcast.properties.vocabulary import stride_class

FLOAT = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}


def _points(knl, inames, params):
    """All points of the domain of *inames* at fixed *params*, as dicts."""
    if not inames:
        return [{}]
    dom = knl.get_inames_domain(frozenset(inames)).project_out_except(
        frozenset(inames), [isl.dim_type.set]).to_set()
    for name, value in params.items():
        pos = dom.find_dim_by_name(isl.dim_type.param, name)
        if pos >= 0:
            dom = dom.fix_val(isl.dim_type.param, pos, value)
    names = [dom.get_dim_name(isl.dim_type.set, i) for i in range(dom.dim(isl.dim_type.set))]
    result = []

    def take(point):
        result.append({n: point.get_coordinate_val(isl.dim_type.set, i).to_python()
                       for i, n in enumerate(names)})

    dom.foreach_point(take)
    return result


def _compile(expr):
    """A fast numeric evaluator of *expr* taking a dict of variable values."""
    src = StringifyMapper()(expr)
    code = compile(src, "<bruteforce>", "eval")
    return lambda values: eval(code, {}, values)  # noqa: S307


class _Ops(WalkMapper):
    def __init__(self, type_of):
        super().__init__()
        self.type_of, self.counts = type_of, Counter()

    def _op(self, name, expr, n=1):
        kind = FLOAT.get(self.type_of(expr).numpy_dtype)
        if kind and n > 0:
            self.counts[f"{name}_{kind}"] += n

    def map_sum(self, expr):
        self._op("add", expr, len(expr.children) - 1)
        for c in expr.children:
            self.rec(c)

    def map_product(self, expr):
        factors = [c for c in expr.children if not (np.isscalar(c) and c == -1)]
        self._op("mul", expr, len(factors) - 1)
        for c in expr.children:
            self.rec(c)

    def map_quotient(self, expr):
        self._op("div", expr)
        self.rec(expr.numerator)
        self.rec(expr.denominator)

    map_floor_div = map_remainder = map_quotient

    def map_power(self, expr):
        if np.isscalar(expr.exponent) and expr.exponent in (0, 1, 2):
            if expr.exponent == 2:
                self._op("mul", expr)
            if expr.exponent:
                self.rec(expr.base)
            return
        self._op("pow", expr)
        self.rec(expr.base)
        self.rec(expr.exponent)

    def map_call(self, expr):
        self._op("special", expr)
        for p in expr.parameters:
            self.rec(p)

    def map_min(self, expr):
        self._op("special", expr, len(expr.children) - 1)
        for c in expr.children:
            self.rec(c)

    map_max = map_min

    def map_subscript(self, expr):
        pass  # index arithmetic is not counted

    def map_type_cast(self, expr):
        self.rec(expr.child)

    def map_variable(self, expr):
        pass

    map_tagged_variable = map_constant = map_variable


class _Refs(WalkMapper):
    def __init__(self, direction):
        super().__init__()
        self.direction, self.refs = direction, []

    def map_subscript(self, expr):
        index = expr.index if isinstance(expr.index, tuple) else (expr.index,)
        self.refs.append((expr.aggregate.name, index, self.direction))
        inner = _Refs("load")
        for ix in index:
            inner(ix)
        self.refs += inner.refs

    def map_variable(self, expr):
        self.refs.append((expr.name, (), self.direction))

    map_tagged_variable = map_variable

    def map_type_cast(self, expr):
        self.rec(expr.child)

    def map_constant(self, expr):
        pass

    def map_resolved_function(self, expr):
        pass


def _space(knl, name):
    if name in knl.temporary_variables:
        return {AddressSpace.GLOBAL: "global", AddressSpace.LOCAL: "local"}.get(
            knl.temporary_variables[name].address_space)
    return "global" if isinstance(knl.arg_dict.get(name), (lp.ArrayArg, lp.ConstantArg)) \
        else None


def _axis_sizes(knl, point_sets):
    """Grid extent of each hardware axis: one more than the largest index seen."""
    sizes = {}
    for insn, points in point_sets:
        for iname in insn.within_inames:
            for tag in knl.iname_tags_of_type(iname, (GroupInameTag, LocalInameTag)):
                key = ("g" if isinstance(tag, GroupInameTag) else "l", tag.axis)
                top = max((p[iname] for p in points), default=-1) + 1
                sizes[key] = max(sizes.get(key, 0), top)
    return sizes


def brute_force_properties(tu, params: dict, statistics: dict | None = None) -> dict:
    """Count every property of *tu* at *params* by enumeration."""
    statistics = statistics or {}
    prepared = prepare_kernel(tu)
    knl = prepared.kernel
    type_of = TypeReader(knl, prepared.callables_table)
    totals: Counter = Counter()
    insns = [i for i in knl.instructions if isinstance(i, MultiAssignmentBase)]
    point_sets = []
    for insn in insns:
        points = _points(knl, insn.within_inames, params)
        kept = []
        for p in points:
            env = {**params, **p}
            if all(evaluate(pred, env) for pred in insn.predicates):
                kept.append(p)
        point_sets.append((insn, kept))
    axes = _axis_sizes(knl, point_sets)

    footprints = defaultdict(set)  # (array, direction) -> addresses
    site_records = []  # (name, bits, direction, stride, weight*count)
    for insn, points in point_sets:
        used = set()
        for iname in insn.within_inames:
            for tag in knl.iname_tags_of_type(iname, (GroupInameTag, LocalInameTag)):
                used.add(("g" if isinstance(tag, GroupInameTag) else "l", tag.axis))
        weight = 1
        for axis, size in axes.items():
            if axis not in used:
                weight *= size
        runs = len(points) * weight

        ops = _Ops(type_of)
        ops(insn.expression)
        for name, n in ops.counts.items():
            totals[name] += n * runs

        refs = []
        for assignee in insn.assignees:
            r = _Refs("store")
            r(assignee)
            refs += r.refs
        r = _Refs("load")
        r(insn.expression)
        for pred in insn.predicates:
            r(pred)
        refs += r.refs

        lid0 = next((i for i in insn.within_inames
                     for t in knl.iname_tags_of_type(i, LocalInameTag) if t.axis == 0), None)
        for name, index, direction in refs:
            space = _space(knl, name)
            if space is None:
                continue
            desc = knl.get_var_descriptor(name)
            bits = desc.dtype.numpy_dtype.itemsize * 8
            if space == "local":
                totals[f"{direction}_local_{bits}"] += runs
                continue
            strides = [evaluate(t.stride, params) for t in desc.dim_tags] if index else []
            fns = [_compile(ix) for ix in index]
            try:
                addr = {tuple(sorted(p.items())): sum(s * f({**params, **p})
                                                     for s, f in zip(strides, fns))
                        for p in points}
            except NameError:  # the index reads data
                site_records.append((name, bits, direction, None, runs))
                continue
            footprints[name, direction] |= set(addr.values())
            diffs = set()
            if lid0 is not None:
                for p in points:
                    q = dict(p)
                    q[lid0] += 1
                    key = tuple(sorted(q.items()))
                    if key in addr:
                        diffs.add(addr[key] - addr[tuple(sorted(p.items()))])
            stride = 0 if lid0 is None or not diffs else (
                diffs.pop() if len(diffs) == 1 else None)
            site_records.append((name, bits, direction, stride, runs))

    for name, bits, direction, stride, runs in site_records:
        util = None
        if stride is not None and abs(stride) > 1:
            cells = footprints[name, direction]
            util = Fraction(len(cells), max(cells) - min(cells) + abs(stride))
        totals[f"{direction}_global_{bits}_{stride_class(stride, util)}"] += runs

    groups = 1
    items = 1
    for (kind, _axis), size in axes.items():
        if kind == "g":
            groups *= size
        items *= size
    totals["workgroup"] = groups
    totals["launch"] = 1

    lin = lp.get_one_linearized_kernel(knl, prepared.callables_table)
    loops = []
    for item in lin.linearization:
        if isinstance(item, EnterLoop):
            loops.append(item.iname)
        elif isinstance(item, LeaveLoop):
            loops.pop()
        elif isinstance(item, Barrier):
            totals["barrier"] += len(_points(knl, loops, params)) * items

    for key in list(totals):
        if key.startswith("load_global_"):
            store = "store" + key[4:]
            if totals.get(store):
                totals["minls" + key[4:]] = min(totals[key], totals[store])
    return {k: float(v) for k, v in totals.items() if v}

