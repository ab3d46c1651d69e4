"""Realizing a GROPHECY code layout as a real Loopy kernel (docs/grophecy-realize.md).

A skeleton has no arithmetic, so a realized kernel computes one deterministic function
its statements stand for. Each task keeps an accumulator ``acc`` (float32, float64 where
a stored array is double), starting at 0:

- a basic block's loads (consecutive ``ld`` of value arrays, ended by ``comp``, ``st`` or
  a loop's start or end) add the product of their values: MatMul's ``ld A[i][k]; ld B[k][j]``
  in ``stream k`` is ``acc += A[i][k] * B[k][j]``, HotSpot's neighbourhood a 3×3 box sum;
- ``comp N`` is N dependent multiply-adds ``acc = acc*one + zero`` by the integer kernel
  arguments one = 1 and zero = 0 (exact; a compiler cannot remove them);
- ``st X[...]`` writes acc.

Index arrays (read through indirect indices or loop bounds) are not multiplied in: their
``ld`` is realized by the subscripts and bounds that read them. One with a sample file is
baked into the kernel as a read-only constant array holding the sample; one without is a
kernel argument. Data-dependent bounds become Loopy domains whose parameters are read
from the index array in the enclosing loops.

A layout maps to Loopy transformations: parallel loop d (the last is "l.0"/"g.0") is
split by b·f into groups and by b into the fold loop and threads (task = group·b·f +
m·b + t); a staged loop is split by its stage size; a cached array is fetched into local
memory by ``lp.add_prefetch`` (the block's footprint for one stage of every staged loop
around its reads, all of it where none is); unrolling tags every loop with a static trip
count "unr" (split by 16 first when longer). Where a fetch sits inside a staged skeleton
loop, the fold loops run inside it as "ilp" loops (each task keeps its own accumulator).

``UnrealizableLayout`` says in one line why a skeleton or layout cannot be realized
(a cached array read through an index array or inside a data-dependent loop, stores
that may collide, an in-place update, what Loopy itself refuses); ``realizable`` gives
the reason that holds for every layout, or None.

Public names: UnrealizableLayout, RealizedCase, realizable, realize, CONSTANT_BYTES.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import loopy as lp
import numpy as np
from loopy.diagnostic import LoopyError
from pymbolic.mapper import WalkMapper
from pymbolic.mapper.dependency import DependencyMapper

from kernelcast.errors import KernelcastError, UsageError
from kernelcast.frontends.skeleton.ir import (
    Access,
    Affine,
    Assign,
    Comp,
    Indirect,
    Loop,
    ParallelFor,
    Skeleton,
    iter_statements,
)
from kernelcast.frontends.skeleton.sample import read_sample
from kernelcast.models.grophecy.layouts import Layout

#: Bytes of constant memory a CUDA device has (64 KiB); a baked sample must fit.
CONSTANT_BYTES = 65536

_DTYPES = {"char": np.int8, "short": np.int16, "int": np.int32, "long": np.int64,
           "float": np.float32, "double": np.float64}
_UNROLL = 16  # GROPHECY unrolls in groups of 16
_MANGLED = ("FLT_", "DBL_", "M_", "INT_", "LONG_")  # names Loopy takes for constants
_COMP_CHUNK = 16  # multiply-adds per Loopy instruction (keeps expressions shallow)


class UnrealizableLayout(KernelcastError):
    """A skeleton or layout that cannot be realized as a Loopy kernel; the message says
    why in one line."""


@dataclass(frozen=True)
class RealizedCase:
    """A layout realized: ``kernel()`` builds nothing new (the kernel is made once),
    ``reference(args)`` computes the expected outputs from the host arguments; ``params``
    holds the skeleton's macros and the scalar arguments one = 1 and zero = 0, which a
    run must pass (kernelcast.measure.verify.check_case takes them from here)."""

    name: str
    layout: Layout
    params: dict
    _kernel: object = field(repr=False)
    _reference: Callable[[dict], dict] = field(repr=False)

    def kernel(self):
        """The Loopy TranslationUnit."""
        return self._kernel

    def reference(self, args: dict) -> dict:
        """Expected outputs by name (NaN, or -1 for integers, where nothing is stored)."""
        return self._reference(args)


# -- analysis of a parallel loop --------------------------------------------------------

def _pick(skeleton: Skeleton, kernel: ParallelFor | None) -> ParallelFor:
    if kernel is not None:
        return kernel
    if len(skeleton.kernels) != 1:
        raise UsageError(f"{skeleton.path} has {len(skeleton.kernels)} parallel_for loops; "
                         "name one")
    return skeleton.kernels[0]


def _indirects(index):
    """Every Indirect inside an index (itself and nested ones)."""
    if isinstance(index, Indirect):
        yield index
        for i in index.indices:
            yield from _indirects(i)


def _index_arrays(kernel: ParallelFor) -> set[str]:
    """Arrays read through indirect indices or bounds."""
    out = set()
    for stmt, _ in iter_statements(kernel.body):
        indices = (stmt.indices if isinstance(stmt, Access) else
                   (stmt.value,) if isinstance(stmt, Assign) else
                   (stmt.lower, stmt.upper) if isinstance(stmt, Loop) else ())
        for index in indices:
            out.update(ind.array for ind in _indirects(index))
    return out


def _is_injective(access: Access, kernel: ParallelFor) -> bool:
    """Whether distinct tasks surely store to distinct elements: every parallel index
    with more than one value has a dimension indexed by it alone."""
    alone = {i.terms[0][0] for i in access.indices
             if isinstance(i, Affine) and len(i.terms) == 1}
    return all(d in alone for d, n in zip(kernel.indices, kernel.dims) if n > 1)


def _reason(skeleton: Skeleton, kernel: ParallelFor) -> str | None:
    stmts = [s for s, _ in iter_statements(kernel.body)]
    loaded = {s.array for s in stmts if isinstance(s, Access) and s.kind == "ld"}
    stored = {s.array for s in stmts if isinstance(s, Access) and s.kind == "st"}
    index_arrays = _index_arrays(kernel)
    if not stored:
        return "the kernel stores nothing, so there is no output to compute"
    for array in skeleton.arrays:
        if array.name in loaded | stored | index_arrays and array.name.startswith(_MANGLED):
            return (f"array {array.name} starts with {array.name.split('_')[0]}_, a prefix "
                    "Loopy's OpenCL target reads as a built-in constant")
    both = sorted((loaded | index_arrays) & stored)
    if both:
        return (f"array {both[0]} is both read and stored (an in-place update: its inputs "
                "would be overwritten before they could be checked)")
    for name in sorted(index_arrays):
        array = skeleton.array(name)
        if np.dtype(_DTYPES[array.dtype]).kind != "i":
            return f"index array {name} holds {array.dtype}, not integers"
        if array.sample and array.size * array.elem_bytes > CONSTANT_BYTES:
            return (f"the sample of index array {name} takes {array.size * array.elem_bytes} "
                    f"bytes, more than the {CONSTANT_BYTES} of constant memory it is baked into")
    conflicting = [s for s in stmts if isinstance(s, Access) and s.kind == "st"
                   and not _is_injective(s, kernel)]
    if conflicting:
        missing = sorted(a for a in index_arrays if skeleton.array(a).sample is None)
        if missing:
            return (f"tasks may store to the same element of {conflicting[0].array}: no "
                    f"sample of {', '.join(missing)} to check its index against")
        element = _Evaluator(skeleton, kernel, _samples(skeleton, index_arrays)).conflict()
        if element:
            return f"two tasks store to the same element {element}"
    return None


def _samples(skeleton: Skeleton, names) -> dict[str, np.ndarray]:
    out = {}
    for name in names:
        array = skeleton.array(name)
        if array.sample:
            out[name] = np.array(read_sample(skeleton, name),
                                 _DTYPES[array.dtype]).reshape(array.dims)
    return out


def realizable(skeleton: Skeleton, *, kernel: ParallelFor | None = None) -> str | None:
    """Why no layout of *kernel* (the skeleton's only parallel loop by default) can be
    realized, or None when layouts can be (a layout may still be refused by realize)."""
    return _reason(skeleton, _pick(skeleton, kernel))


# -- the NumPy reference ----------------------------------------------------------------

class _Evaluator:
    """Runs a parallel loop's statements over every task at once with NumPy: the
    reference computation, or (``conflict``) the elements each task stores."""

    def __init__(self, skeleton: Skeleton, kernel: ParallelFor, arrays: dict):
        self.skeleton, self.kernel, self.arrays = skeleton, kernel, arrays
        self.index_arrays = _index_arrays(kernel)
        self.shape = tuple(kernel.dims)

    def _value(self, index, env, mask) -> np.ndarray:
        if isinstance(index, Affine):
            v = index.const + sum(c * env[n] for n, c in index.terms)
            return np.broadcast_to(np.asarray(v, np.int64), self.shape)
        inner = tuple(np.where(mask, self._value(i, env, mask), 0) for i in index.indices)
        data = self.arrays[index.array][inner].astype(np.int64)
        return index.scale * data + self._value(index.offset, env, mask)

    def _subscript(self, access: Access, env, mask) -> tuple:
        return tuple(np.where(mask, self._value(i, env, mask), 0) for i in access.indices)

    def run(self, on_store, one: float = 1.0, zero: float = 0.0, values: bool = True):
        env = dict(zip(self.kernel.indices,
                       np.meshgrid(*(np.arange(n) for n in self.shape), indexing="ij")))
        self.acc = np.zeros(self.shape)
        self._body(self.kernel.body, env, np.ones(self.shape, bool), on_store,
                   one, zero, values)

    def _body(self, body, env, mask, on_store, one, zero, values):
        block = []

        def flush():
            if block and values:
                self.acc = np.where(mask, self.acc + math.prod(block), self.acc)
            block.clear()

        for stmt in body:
            if isinstance(stmt, Access) and stmt.kind == "ld":
                if stmt.array not in self.index_arrays and values:
                    data = self.arrays[stmt.array][self._subscript(stmt, env, mask)]
                    block.append(data.astype(np.float64))
                continue
            if isinstance(stmt, Assign):
                continue
            flush()
            if isinstance(stmt, Comp):
                if values and stmt.count:
                    acc = self.acc
                    for _ in range(stmt.count):
                        acc = acc * one + zero
                    self.acc = np.where(mask, acc, self.acc)
            elif isinstance(stmt, Access):
                on_store(stmt, self._subscript(stmt, env, mask), mask)
            else:
                lo, hi = (self._value(b, env, mask) for b in (stmt.lower, stmt.upper))
                if not mask.any():
                    continue
                saved = env.get(stmt.index)
                for v in range(int(lo[mask].min()), int(hi[mask].max())):
                    env[stmt.index] = v
                    self._body(stmt.body, env, mask & (lo <= v) & (v < hi), on_store,
                               one, zero, values)
                if saved is None:
                    env.pop(stmt.index, None)
                else:
                    env[stmt.index] = saved
        flush()

    def reference(self, outputs: dict, one: float, zero: float) -> dict:
        def store(access, subscript, mask):
            out = outputs[access.array]
            out[tuple(s[mask] for s in subscript)] = self.acc[mask].astype(out.dtype)
        self.run(store, one, zero)
        return outputs

    def conflict(self) -> str | None:
        """An element two tasks store to (as ``X[i][j]``), or None."""
        tasks = np.arange(math.prod(self.shape)).reshape(self.shape)
        seen = []

        def store(access, subscript, mask):
            dims = self.skeleton.array(access.array).dims
            flat = np.ravel_multi_index(tuple(s[mask] for s in subscript), dims)
            seen.append((access.array, flat, tasks[mask]))
        self.run(store, values=False)
        for name in dict.fromkeys(a for a, _, _ in seen):
            flat = np.concatenate([f for a, f, _ in seen if a == name])
            task = np.concatenate([t for a, _, t in seen if a == name])
            pairs = np.unique(np.stack([flat, task]), axis=1)
            elements, counts = np.unique(pairs[0], return_counts=True)
            if (counts > 1).any():
                where = np.unravel_index(elements[counts > 1][0],
                                         self.skeleton.array(name).dims)
                return name + "".join(f"[{int(w)}]" for w in where)
        return None


# -- building the Loopy kernel ----------------------------------------------------------

class _Names:
    """Fresh identifiers that collide with nothing in the skeleton or each other."""

    def __init__(self, taken):
        self.taken = set(taken)

    def __call__(self, base: str) -> str:
        name, n = base, 0
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name


def _format(index, names: dict) -> str:
    if isinstance(index, Affine):
        parts = [(names[n] if c == 1 else f"{c}*{names[n]}") for n, c in index.terms]
        if index.const or not parts:
            parts.append(str(index.const))
        return " + ".join(parts)
    text = f"{index.array}[{', '.join(_format(i, names) for i in index.indices)}]"
    if index.scale != 1:
        text = f"{index.scale}*{text}"
    if index.offset != Affine():
        text = f"{text} + {_format(index.offset, names)}"
    return text


def _subscript(access: Access, names: dict) -> str:
    return f"{access.array}[{', '.join(_format(i, names) for i in access.indices)}]"


@dataclass
class _Insn:
    text: str
    loops: tuple[str, ...]  # inames of the enclosing skeleton loops, outermost first
    indirect_store: bool = False  # Loopy cannot see that its tasks store apart


@dataclass
class _Program:
    """A parallel loop as Loopy instructions and domains, before any transformation."""

    domains: list[str] = field(default_factory=list)
    insns: list[_Insn] = field(default_factory=list)
    loops: dict[str, Loop] = field(default_factory=dict)  # iname -> skeleton loop
    loads: dict[str, list[tuple[str, ...]]] = field(default_factory=dict)  # array -> loops


def _program(kernel: ParallelFor, index_arrays: set[str], fresh: _Names,
             acc: str, one: str, zero: str, acc_dtype: str) -> _Program:
    prog = _Program()
    box = [f"0 <= {d} < {n}" for d, n in zip(kernel.indices, kernel.dims)]
    root = list(kernel.indices)

    def emit(text, loops, indirect_store=False):
        prog.insns.append(_Insn(text, loops, indirect_store))

    def body(stmts, names, loops):
        block = []

        def flush():
            if block:
                emit(f"{acc} = {acc} + {' * '.join(block)}", loops)
            block.clear()

        for stmt in stmts:
            if isinstance(stmt, Access) and stmt.kind == "ld":
                for index in stmt.indices:
                    for ind in _indirects(index):
                        prog.loads.setdefault(ind.array, []).append(loops)
                prog.loads.setdefault(stmt.array, []).append(loops)
                if stmt.array not in index_arrays:
                    block.append(_subscript(stmt, names))
                continue
            if isinstance(stmt, Assign):
                continue
            flush()
            if isinstance(stmt, Comp):
                left = stmt.count
                while left:
                    n = min(left, _COMP_CHUNK)
                    expr = acc
                    for _ in range(n):
                        expr = f"({expr})*{one} + {zero}"
                    emit(f"{acc} = {expr}", loops)
                    left -= n
            elif isinstance(stmt, Access):
                for index in stmt.indices:
                    for ind in _indirects(index):
                        prog.loads.setdefault(ind.array, []).append(loops)
                emit(f"{_subscript(stmt, names)} = {acc}", loops, stmt.is_indirect)
            elif stmt.trip_count == 0:
                continue  # a loop that never runs (its empty range would empty the box)
            else:
                iname = fresh(stmt.index)
                prog.loops[iname] = stmt
                lo, hi = _format(stmt.lower, names), _format(stmt.upper, names)
                if stmt.bound_kind == "data_dependent":
                    for b in (stmt.lower, stmt.upper):
                        for ind in _indirects(b):
                            prog.loads.setdefault(ind.array, []).append(loops)
                    lo_name, hi_name = fresh("lo_" + iname), fresh("hi_" + iname)
                    emit(f"<int32> {lo_name} = {lo}", loops)
                    emit(f"<int32> {hi_name} = {hi}", loops)
                    lo, hi = lo_name, hi_name
                if stmt.bound_kind in ("constant", "macro"):
                    root.append(iname)
                    box.append(f"{lo} <= {iname} < {hi}")
                else:
                    # a domain of its own: a loop empty for some tasks leaves the rest of
                    # their work alone (in one box it would empty the whole task)
                    params = sorted({n for b in (lo, hi)
                                     for n in re.findall(r"[A-Za-z_]\w*", b)})
                    prog.domains.append(f"[{', '.join(params)}] -> "
                                        f"{{[{iname}]: {lo} <= {iname} < {hi}}}")
                body(stmt.body, {**names, stmt.index: iname}, loops + (iname,))
        flush()

    emit(f"<{acc_dtype}> {acc} = 0", ())
    body(kernel.body, {d: d for d in kernel.indices}, ())
    prog.domains.insert(0, f"{{[{', '.join(root)}]: {' and '.join(box)}}}")
    return prog


def _instructions(prog: _Program, kernel: ParallelFor) -> str:
    lines = []
    for n, insn in enumerate(prog.insns):
        inames = ":".join((*kernel.indices, *insn.loops))
        dep = f", dep=s{n - 1}" if n else ""
        lines.append(f"{insn.text} {{id=s{n}{dep}, inames={inames}}}")
    return "\n".join(lines)


class _Realizer:
    """The transformations of one layout, applied in order (see the module docstring)."""

    def __init__(self, skeleton, kernel, layout, prog, fresh):
        self.skeleton, self.kernel, self.layout = skeleton, kernel, layout
        self.prog, self.fresh = prog, fresh
        self.groups: set[str] = set()         # group inames
        self.threads: dict[str, str] = {}      # parallel index -> thread iname
        self.fold: dict[str, str] = {}         # parallel index -> fold iname (f > 1)
        self.fold_outer: dict[str, str] = {}   # staged fold: stage iname
        self.stage: dict[str, tuple[str, str]] = {}  # skeleton loop -> (outer, inner)
        self.fetch_loops: set[str] = set()     # skeleton-loop inames a fetch sits in

    def check(self) -> None:
        k, layout = self.kernel, self.layout
        n = len(k.dims)
        if len(layout.block) != n or len(layout.fold) != n or \
                any(v < 1 for v in (*layout.block, *layout.fold)):
            raise UsageError(f"layout block {layout.block} and fold {layout.fold} do not fit "
                             f"the {n}-D loop space {k.dims}")
        folded = {d for d, f in zip(k.indices, layout.fold) if f > 1}
        streams = {lp_.index for lp_ in self.prog.loops.values() if lp_.kind == "stream"}
        for loop, s in layout.stages:
            if loop not in folded | streams or s < 1:
                raise UsageError(f"layout stages {loop} in stages of {s}; streaming loops are "
                                 f"{', '.join(sorted(folded | streams)) or 'none'}")
        unknown = sorted(set(layout.cached) - set(self.prog.loads))
        if unknown:
            raise UsageError(f"layout caches {', '.join(unknown)}, which the kernel never reads")

    def apply(self, knl):
        layout, k = self.layout, self.kernel
        n = len(k.dims)
        for pos, (d, b, f) in enumerate(zip(k.indices, layout.block, layout.fold)):
            axis = n - 1 - pos
            group, thread = self.fresh(d + "_g"), self.fresh(d + "_t")
            self.threads[d] = thread
            self.groups.add(group)
            if f == 1:
                knl = lp.split_iname(knl, d, b, outer_iname=group, inner_iname=thread,
                                     outer_tag=f"g.{axis}", inner_tag=f"l.{axis}")
                continue
            inner, fold = self.fresh(d + "_x"), self.fresh(d + "_f")
            knl = lp.split_iname(knl, d, b * f, outer_iname=group, inner_iname=inner,
                                 outer_tag=f"g.{axis}")
            knl = lp.split_iname(knl, inner, b, outer_iname=fold, inner_iname=thread,
                                 inner_tag=f"l.{axis}")
            self.fold[d] = fold
        stages = dict(layout.stages)
        for d, fold in list(self.fold.items()):
            s = stages.get(d, layout.fold[k.indices.index(d)])
            if s < layout.fold[k.indices.index(d)]:
                outer, inner = self.fresh(fold + "s"), self.fresh(fold + "i")
                knl = lp.split_iname(knl, fold, s, outer_iname=outer, inner_iname=inner)
                self.fold_outer[d], self.fold[d] = outer, inner
        for iname, loop in self.prog.loops.items():
            s = stages.get(loop.index) if loop.kind == "stream" else None
            if s is not None and (loop.bound_kind == "data_dependent"
                                  or loop.trip_count is None or s < loop.trip_count):
                outer, inner = self.fresh(iname + "_s"), self.fresh(iname + "_i")
                knl = lp.split_iname(knl, iname, s, outer_iname=outer, inner_iname=inner)
                self.stage[iname] = (outer, inner)
        for array in layout.cached:
            knl = self._prefetch(knl, array)
        ilp = bool(self.fetch_loops)
        if ilp and self.fold:
            # one ilp loop: Loopy orders the private axes of several ilp loops by iterating
            # a set of their names, so the generated code would change with Python's hash
            # seed (and a store's keys with it); joined, in the folding's order, it cannot
            folds = list(self.fold.values())
            if len(folds) > 1:
                joined = self.fresh("fold")
                knl = lp.join_inames(knl, folds, new_iname=joined)
                folds = [joined]
            knl = lp.tag_inames(knl, {folds[0]: "ilp.unr" if layout.unroll else "ilp.seq"})
        for d, fold in self.fold.items():
            trip = stages[d] if d in self.fold_outer else layout.fold[k.indices.index(d)]
            if not ilp and layout.unroll:
                knl = self._unroll(knl, fold, trip)
        if layout.unroll:
            for iname, loop in self.prog.loops.items():
                if loop.bound_kind not in ("constant", "macro") or iname in self.fetch_loops:
                    continue
                if iname in self.stage:
                    knl = self._unroll(knl, self.stage[iname][1],
                                       min(stages[loop.index], loop.trip_count))
                else:
                    knl = self._unroll(knl, iname, loop.trip_count)
        return knl

    def _unroll(self, knl, iname, trip):
        if trip <= 1:
            return knl
        if trip <= _UNROLL:
            return lp.tag_inames(knl, {iname: "unr"})
        return lp.split_iname(knl, iname, _UNROLL, outer_iname=self.fresh(iname + "_o"),
                              inner_iname=self.fresh(iname + "_u"), inner_tag="unr")

    def _prefetch(self, knl, array):
        """Fetch *array*'s block footprint into local memory for one stage of every staged
        loop around its reads."""
        k = self.kernel
        if any(isinstance(i, Indirect) for s, _ in iter_statements(k.body)
               if isinstance(s, Access) and s.array == array for i in s.indices):
            raise UnrealizableLayout(f"cached array {array} is read through an index array: "
                                     "its footprint depends on data, and Loopy's prefetch "
                                     "needs affine subscripts")
        outers, sweeps = set(), set()
        for loops in self.prog.loads[array]:
            for iname in loops:
                if self.prog.loops[iname].bound_kind == "data_dependent":
                    raise UnrealizableLayout(
                        f"cached array {array} is read inside loop "
                        f"{self.prog.loops[iname].index}, whose bounds are data: its footprint "
                        "depends on data")
            outer, sweep = set(), set()
            staged_inside = [i for i, name in enumerate(loops) if name in self.stage]
            last = staged_inside[-1] if staged_inside else -1
            for pos, iname in enumerate(loops):
                if iname in self.stage:
                    outer.add(self.stage[iname][0])
                    sweep.add(self.stage[iname][1])
                elif pos < last:
                    outer.add(iname)
                else:
                    sweep.add(iname)
            outers.add(frozenset(outer))
            sweeps |= sweep
        if len(outers) != 1:
            raise UnrealizableLayout(f"cached array {array} is read in places nested "
                                     "differently in staged loops; one fetch cannot serve "
                                     "them all")
        outer = set(next(iter(outers)))
        self.fetch_loops |= {i for i in outer if i in self.prog.loops}
        self.fetch_loops |= {o for o, _ in self.stage.values() if o in outer}
        sweeps |= set(self.threads.values()) | set(self.fold.values())
        outer |= self.groups | set(self.fold_outer.values())
        used = _subscript_inames(knl, array)
        name = self.fresh("cached_" + array)
        rank = self.skeleton.array(array).rank
        options = {"sweep_inames": sorted(sweeps & used),
                   "fetch_outer_inames": frozenset(outer), "default_tag": "l.auto",
                   "temporary_name": name, "rule_name": name + "_rule",
                   "prefetch_insn_id": name + "_fetch",
                   "temporary_address_space": lp.AddressSpace.LOCAL,
                   "dim_arg_names": [self.fresh(f"{name}_{k}") for k in range(rank)]}
        try:
            knl = lp.add_prefetch(knl, array, **options)
        except NotImplementedError:  # a footprint that is not convex: fetch its box
            knl = lp.add_prefetch(knl, array, fetch_bounding_box=True, **options)
        # a fetch that needs fewer threads than the block still runs on all of them
        return lp.add_inames_for_unused_hw_axes(knl, within=f"id:{name}_fetch")


def _subscript_inames(knl, array: str) -> set[str]:
    """The names the subscripts of *array* depend on, over every instruction."""
    deps = DependencyMapper(composite_leaves=False)
    found = set()

    class Walk(WalkMapper):
        def map_subscript(self, expr, *args):
            if getattr(expr.aggregate, "name", None) == array:
                found.update(v.name for v in deps(expr.index))
            super().map_subscript(expr, *args)

    walk = Walk()
    for insn in knl.default_entrypoint.instructions:
        walk(insn.assignee)
        walk(insn.expression)
    return found


def _kernel_name(skeleton: Skeleton, kernel: ParallelFor) -> str:
    """The file's stem (an identifier), with the loop's position where there are several."""
    stem = re.sub(r"\W", "_", Path(skeleton.path).stem) or "skeleton"
    stem = stem if not stem[0].isdigit() else "k_" + stem
    if len(skeleton.kernels) > 1:
        stem += f"_{[k is kernel for k in skeleton.kernels].index(True)}"
    return stem


def _layout_name(layout: Layout) -> str:
    parts = ["block=" + "x".join(map(str, layout.block)),
             "fold=" + "x".join(map(str, layout.fold))]
    if layout.stages:
        parts.append("stage=" + ",".join(f"{k}:{s}" for k, s in layout.stages))
    if layout.cached:
        parts.append("cache=" + "+".join(layout.cached))
    parts.append("unroll" if layout.unroll else "no-unroll")
    return "/".join(parts)


def realize(skeleton: Skeleton, layout: Layout, *,
            kernel: ParallelFor | None = None) -> RealizedCase:
    """Realize *layout* of *kernel* (the skeleton's only parallel loop by default) as a
    Loopy kernel with its NumPy reference; UnrealizableLayout says why it cannot be, a
    UsageError that the layout does not fit the skeleton."""
    kernel = _pick(skeleton, kernel)
    reason = _reason(skeleton, kernel)
    if reason:
        raise UnrealizableLayout(reason)
    index_arrays = _index_arrays(kernel)
    used = {s.array for s, _ in iter_statements(kernel.body) if isinstance(s, Access)}
    used |= index_arrays
    # loops take their own names first come (a sibling loop of the same name gets k_1)
    fresh = _Names({a.name for a in skeleton.arrays} | {m.name for m in skeleton.macros}
                   | set(kernel.indices))
    acc, one, zero = fresh("acc"), fresh("one"), fresh("zero")
    stored = {s.array for s, _ in iter_statements(kernel.body)
              if isinstance(s, Access) and s.kind == "st"}
    acc_dtype = ("float64" if any(skeleton.array(a).dtype == "double" for a in stored)
                 else "float32")
    prog = _program(kernel, index_arrays, fresh, acc, one, zero, acc_dtype)
    realizer = _Realizer(skeleton, kernel, layout, prog, fresh)
    realizer.check()
    samples = _samples(skeleton, index_arrays)
    args = []
    for array in skeleton.arrays:
        if array.name not in used:
            continue
        dtype = _DTYPES[array.dtype]
        if array.name in samples:
            args.append(lp.TemporaryVariable(
                array.name, dtype, array.dims, initializer=samples[array.name],
                read_only=True, address_space=lp.AddressSpace.GLOBAL))
        else:
            args.append(lp.GlobalArg(array.name, dtype, array.dims))
    has_comp = any(isinstance(s, Comp) and s.count for s, _ in iter_statements(kernel.body))
    if has_comp:
        args += [lp.ValueArg(one, np.int32), lp.ValueArg(zero, np.int32)]
    knl = lp.make_kernel(prog.domains, _instructions(prog, kernel), args,
                         name=_kernel_name(skeleton, kernel), lang_version=(2018, 2),
                         silenced_warnings=[
                             "v1_scheduler_fallback",
                             # a fetch smaller than the block repeats its writes on the
                             # spare threads; stores through index arrays were checked
                             # apart above (_reason)
                             "write_race(cached_*)",
                             *(f"write_race(s{n})" for n, insn in enumerate(prog.insns)
                               if insn.indirect_store)])
    try:
        knl = realizer.apply(knl)
        lp.generate_code_v2(knl)
    except (LoopyError, NotImplementedError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UnrealizableLayout(f"Loopy cannot realize this layout: {first}") from exc

    def reference(host: dict) -> dict:
        arrays = {**{a: np.asarray(host[a]) for a in used - stored if a not in samples},
                  **samples}
        outputs = {}
        for name in sorted(stored):
            array = skeleton.array(name)
            dtype = np.dtype(_DTYPES[array.dtype])
            outputs[name] = np.full(array.dims, np.nan if dtype.kind == "f" else -1, dtype)
        return _Evaluator(skeleton, kernel, arrays).reference(
            outputs, float(host[one]) if has_comp else 1.0,
            float(host[zero]) if has_comp else 0.0)

    params = {m.name: m.value for m in skeleton.macros} | ({one: 1, zero: 0} if has_comp else {})
    name = f"{_kernel_name(skeleton, kernel)}/{_layout_name(layout)}"
    return RealizedCase(name, layout, params, knl, reference)
