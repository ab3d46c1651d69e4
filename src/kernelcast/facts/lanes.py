"""The byte address of every lane at every memory access of one launch of a Loopy kernel.

What the hardware is asked for, computed without running the kernel: for one work-group of
a launch at fixed parameters, the address that each work-item (lane) gives at each global
and local (shared) memory access site, at every instance of the site's instruction, in the
order the group executes them. kernelcast.facts.warps turns these into warp requests,
sectors and shared-memory wavefronts.

How a launch is laid out (CUDA C++ Programming Guide, "Thread Hierarchy" and "SIMT
Architecture"): the work-items of a group are numbered with local axis 0 fastest,
tid = l0 + L0*(l1 + L1*l2), and warps are consecutive runs of 32 of them. A hardware-tagged
iname is its axis index plus the lower bound of its domain, as Loopy's code generation
sets it. Every point of an instruction's other inames (sequential loops, ``unr``, ``ilp``)
is one instance of it per warp, and instances run in the order of the linearized kernel;
a lane is active at an instance where the instruction's domain and predicates hold. An
iname tagged ``vec`` whose every use in the instruction's accesses is the index of an
array axis tagged ``vec`` makes one vector access per lane (width × element bytes); any
other ``vec`` iname is unrolled by Loopy, so each of its values is an instance.

Indices are evaluated with numpy over all lanes and instances at once: anything pymbolic
can state (affine expressions, ``%``, ``//``, ``&``, min/max, if-expressions). A private
scalar temporary set once from inames and parameters (``<> t = 2*i + 1``) is substituted
into the indices that read it. An index that reads data (another array, or a temporary set
from data) cannot be known without running: its values are drawn uniformly at random over
the axis it indexes (numpy's generator with a fixed seed per site and group), and the site
says so (``Site.random``). A predicate that reads data keeps each lane of each instance
with the probability ``data_statistics[insn_id]`` (as kernelcast.properties takes it),
drawn the same way; a loop bound read from data takes ``data_statistics[name]``.

Global arrays lie one after another in one address space, each at a base aligned to 256
bytes (cudaMalloc's alignment, CUDA C++ Programming Guide, "Device Memory Accesses"), in
the order of the kernel's arguments; local arrays likewise in the group's shared memory,
from 0. Addresses are bytes from those origins.

A predicate's own loads run in every lane of the instruction's domain (a part of their
own); the body's accesses where the predicate holds. A load of the element an earlier load
of the same lane read in the same loop iteration, with no store to the array (nor, for a
local array, a barrier) between, is marked ``Site.repeats``: compilers reuse such loads.

``LaunchTrace`` prepares the launch once; ``group_addresses``/``group_trace`` give one
group's addresses in execution order (instances ranked by the linearized kernel's loop
entries and positions); ``blocks``, ``instruction_block``, ``separable`` and
``lane_addresses`` give the factored form kernelcast.facts.warps counts from.

Public names: LaunchTrace, Site, GroupTrace, InstructionBlock, ALIGNMENT.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from fractions import Fraction

import islpy as isl
import loopy as lp
import numpy as np
from islpy import dim_type
from loopy.kernel.array import FixedStrideArrayDimTag, VectorArrayDimTag
from loopy.kernel.data import (
    AddressSpace,
    GroupInameTag,
    LocalInameTag,
    VectorizeTag,
)
from loopy.kernel.instruction import MultiAssignmentBase
from loopy.kernel.tools import get_hw_axis_base_for_codegen
from loopy.schedule import EnterLoop, LeaveLoop, RunInstruction
from loopy.symbolic import (
    CoefficientCollector,
    StringifyMapper,
    condition_to_set,
    constraint_to_cond_expr,
    get_dependencies,
)
from pymbolic import evaluate, flatten, substitute
from pymbolic.mapper.stringifier import PREC_NONE
from pymbolic.primitives import Variable

from kernelcast.errors import (
    DataDependentError,
    ParameterError,
    UnsupportedKernelError,
    UsageError,
)
from kernelcast.frontends.loopy import prepare_kernel
from kernelcast.properties.accesses import find_access_sites

#: Alignment of each array's base, bytes: cudaMalloc returns addresses aligned to at least
#: 256 bytes (CUDA C++ Programming Guide, "Device Memory Accesses").
ALIGNMENT = 256


@dataclass(frozen=True)
class Site:
    """One reference to a global or local array in one instruction.

    ``bytes`` is the element's size, ``width`` the elements one lane moves at once (a
    ``vec`` access; 1 otherwise); ``affine`` says the byte address is affine in the inames
    at the launch's parameters; ``random`` that some index is read from data and drawn;
    ``repeats`` names an earlier load site whose element this load reads again in the same
    loop iteration, with no store to the array (nor, for a local array, a barrier) between:
    a load compilers usually reuse (counted here all the same). ``hoisted`` names the
    enclosing loops a load of an array the kernel never writes does not change along
    (neither its index nor its guards; the loops inside them that it does change along
    short enough to unroll): the compiler loads it once, before them."""

    id: int
    insn_id: str
    array: str
    space: str  # "global" or "local"
    direction: str  # "load" or "store"
    bytes: int
    width: int
    affine: bool
    random: bool
    repeats: int | None = None
    hoisted: tuple[str, ...] = ()

    @property
    def access_bytes(self) -> int:
        """Bytes one lane moves at one instance."""
        return self.bytes * self.width


@dataclass(frozen=True)
class GroupTrace:
    """One group's addresses: per site id, an int64 array (instances, threads per group) of
    byte addresses, -1 where a lane is inactive, instances in execution order; ``order``
    gives each instance's rank in the group's execution order (over all instructions);
    ``scale`` the instances of the site over those kept (1.0: all of them)."""

    group: tuple[int, ...]
    addresses: dict[int, np.ndarray]
    order: dict[int, np.ndarray]
    scale: dict[int, float]


# {{{ numpy evaluation of pymbolic expressions

class _NumpySource(StringifyMapper):
    """Python source evaluating an expression with numpy arrays for its variables."""

    def map_variable(self, expr, enclosing_prec, *args, **kwargs):
        return f"_e[{expr.name!r}]"

    def map_constant(self, expr, enclosing_prec, *args, **kwargs):
        if isinstance(expr, (bool, np.bool_)):
            return repr(bool(expr))
        if isinstance(expr, (int, np.integer)):
            return repr(int(expr))
        if isinstance(expr, (float, np.floating)):
            return repr(float(expr))
        raise UnsupportedKernelError(f"constant {expr!r} in an index is not supported")

    def _call(self, name, children):
        return f"{name}({', '.join(self.rec(c, PREC_NONE) for c in children)})"

    def map_if(self, expr, enclosing_prec, *args, **kwargs):
        return self._call("_np.where", (expr.condition, expr.then, expr.else_))

    def map_min(self, expr, enclosing_prec, *args, **kwargs):
        return f"_reduce(_np.minimum, {self._call('', expr.children)})"

    def map_max(self, expr, enclosing_prec, *args, **kwargs):
        return f"_reduce(_np.maximum, {self._call('', expr.children)})"

    def map_logical_and(self, expr, enclosing_prec, *args, **kwargs):
        return f"_reduce(_np.logical_and, {self._call('', expr.children)})"

    def map_logical_or(self, expr, enclosing_prec, *args, **kwargs):
        return f"_reduce(_np.logical_or, {self._call('', expr.children)})"

    def map_logical_not(self, expr, enclosing_prec, *args, **kwargs):
        return self._call("_np.logical_not", (expr.child,))

    def map_quotient(self, expr, enclosing_prec, *args, **kwargs):
        return self._call("_np.true_divide", (expr.numerator, expr.denominator))

    def map_type_cast(self, expr, enclosing_prec, *args, **kwargs):
        return self.rec(expr.child, enclosing_prec)

    def map_call(self, expr, enclosing_prec, *args, **kwargs):
        name = getattr(expr.function, "name", None)
        name = getattr(name, "name", name)
        functions = {"abs": "_np.abs", "min": "_np.minimum", "max": "_np.maximum",
                     "floor": "_np.floor", "ceil": "_np.ceil"}
        if name not in functions:
            raise UnsupportedKernelError(f"function {name!r} in an index is not supported")
        if name in ("min", "max"):
            return f"_reduce({functions[name]}, {self._call('', expr.parameters)})"
        return self._call(functions[name], expr.parameters)

    def map_subscript(self, expr, enclosing_prec, *args, **kwargs):
        raise UnsupportedKernelError(f"an index that reads {expr} was not replaced")


def _reduce(function, args):
    result = args[0]
    for arg in args[1:]:
        result = function(result, arg)
    return result


_GLOBALS = {"_np": np, "_reduce": _reduce}


def _compiled(expr):
    """A function of an environment dict evaluating *expr* with numpy."""
    code = compile(_NumpySource()(expr, PREC_NONE), "<kernelcast.facts.lanes>", "eval")
    return lambda env: eval(code, _GLOBALS, {"_e": env})

# }}}


# {{{ preparation

def _vec_inames(knl) -> list[str]:
    kernel = knl.default_entrypoint if isinstance(knl, lp.TranslationUnit) else knl
    if not isinstance(kernel, lp.LoopKernel):
        return []
    return sorted(i for i in kernel.all_inames() if kernel.iname_tags_of_type(i, VectorizeTag))


def _prepare(knl):
    """(kernel, callables table) preprocessed and type-inferred. prepare_kernel refuses
    ``vec`` inames (the models cannot count them); here they are wanted, so a kernel with
    them is prepared the same way without that check."""
    if not _vec_inames(knl):
        prepared = prepare_kernel(knl)
        return prepared.kernel, prepared.callables_table
    from loopy.preprocess import infer_unknown_types, preprocess_program

    tu = knl if isinstance(knl, lp.TranslationUnit) else (
        lp.make_program(knl).with_entrypoints(knl.name))
    try:
        tu = lp.infer_unknown_types(tu, expect_completion=False)
        pre = infer_unknown_types(preprocess_program(tu), expect_completion=True)
    except lp.LoopyError as err:
        raise UnsupportedKernelError(f"Loopy could not preprocess the kernel: {err}") from err
    return pre[next(iter(pre.entrypoints))], pre.callables_table


def _int(value, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        if isinstance(value, (float, Fraction)) and float(value).is_integer():
            return int(value)
        raise ParameterError(f"{what} must be an integer, got {value!r}")
    return int(value)


def _evaluated(expr, params: dict, what: str) -> int:
    try:
        value = evaluate(flatten(expr), params)
    except Exception as err:  # noqa: BLE001 - an unknown name or a bad expression
        raise ParameterError(f"cannot evaluate {what} ({expr}) at {params}: {err}") from None
    return _int(value, what)


def _number(expr):
    """*expr* as a number where it has no variables (an integer where integral), else
    None."""
    if get_dependencies(expr):
        return None
    value = evaluate(expr, {})
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return int(value)
    return value


def _aff_value(aff, params: dict) -> int:
    """The value of an isl (Pw)Aff in parameters only, at *params*."""
    from loopy.symbolic import pw_aff_to_expr

    return _evaluated(pw_aff_to_expr(aff, int_ok=True), params, "a hardware axis base")

# }}}


# {{{ per instruction

@dataclass
class _SitePlan:
    site: Site
    base: int  # byte address of the array's element 0
    coefficients: dict | None  # iname -> element stride; None where not affine
    constant: int  # element offset where affine
    function: object  # numpy evaluator of the element offset (random axes as _r0, ...)
    random_axes: tuple  # (variable name, extent)
    deps: frozenset  # the names the element offset reads
    index_key: str  # the index, as text
    in_condition: bool


@dataclass
class _Constraint:
    function: object
    kind: str  # "scalar" (group inames, parameters), "inst", "lane" or "mixed"
    deps: frozenset


class _Instruction:
    """What one instruction needs for evaluation at any group of the launch."""

    def __init__(self, trace: LaunchTrace, insn, position: int, path: list,
                 condition: bool = False):
        """*condition*: the part of *insn* that evaluates its predicates' loads (run by
        every lane of its domain); otherwise its body (run where the predicates hold)."""
        knl, params = trace.kernel, trace.params
        self.insn, self.id, self.position = insn, insn.id, position
        self.predicates = () if condition else tuple(insn.predicates)
        self.group_inames, self.local_inames = {}, {}
        within = insn.within_inames
        vec = {i for i in within if knl.iname_tags_of_type(i, VectorizeTag)}
        for iname in within:
            for tag in knl.iname_tags_of_type(iname, (GroupInameTag, LocalInameTag)):
                base = _aff_value(get_hw_axis_base_for_codegen(knl, iname), params)
                table = (self.group_inames if isinstance(tag, GroupInameTag)
                         else self.local_inames)
                table[iname] = (tag.axis, base)
        sites = find_access_sites(knl, insn)
        # execution order within an instance: the condition's loads, the loads, the stores
        sites = ([s for s in sites if s.in_condition] if condition else
                 [s for s in sites if s.direction == "load" and not s.in_condition]
                 + [s for s in sites if s.direction == "store"])
        self.vectorized = bool(vec) and all(
            _vector_use_ok(knl, s, vec) for s in sites)
        if self.vectorized:  # Loopy schedules a vec iname as a loop; here it is a lane's
            path = [(enter, iname) for enter, iname in path if iname not in vec]
        loops = [iname for _, iname in path]
        self.seq = loops + sorted(vec - set(loops) if not self.vectorized else ())
        hardware = set(self.group_inames) | set(self.local_inames)
        missing = set(within) - hardware - set(self.seq) - (vec if self.vectorized else set())
        if missing:
            raise UnsupportedKernelError(
                f"instruction {insn.id!r}: inames {sorted(missing)} are neither hardware "
                "axes nor loops of the linearized kernel")
        # the ranks of the instruction's enclosing loops' entries, for execution order
        self.path_positions = [enter for enter, _ in path]
        self._domain(trace)
        self.sites_raw = sites

    # {{{ domain

    def _domain(self, trace: LaunchTrace) -> None:
        knl, params = trace.kernel, trace.params
        within = self.insn.within_inames
        dom = knl.get_inames_domain(within).project_out_except(within, [dim_type.set])
        self.numeric_predicates, self.data_predicates = [], []
        names = set(within) | set(params)
        for pred in self.predicates:
            pred = trace.substituted(pred, self.insn)
            cond = condition_to_set(dom.space, pred)
            if cond is not None:
                dom = dom & cond
            elif get_dependencies(pred) <= names:
                self.numeric_predicates.append(pred)
            else:
                self.data_predicates.append(pred)
        if self.data_predicates:
            fraction = trace.statistics.get(self.id)
            if fraction is None:
                raise DataDependentError(
                    f"instruction {self.id!r} runs only where "
                    f"{' and '.join(map(str, self.data_predicates))}, which depends on "
                    f"data; supply the fraction of its executions that run, e.g. "
                    f"data_statistics={{{self.id!r}: 0.5}}")
            self.fraction = float(fraction)
        # counts resting on a loop bound or a predicate's fraction from data_statistics
        # are assumed, not exact
        self.assumed = bool(self.data_predicates) or bool(
            set(dom.get_var_names(dim_type.param)) & trace.data_params)
        dom = _fixed(dom, params)
        self.domain = dom
        self.empty = dom.is_empty()
        self.boxes = {}
        if self.empty:
            return
        for iname in self.seq:
            self.boxes[iname] = _range(dom, iname, self.id)
        self.vector_lower = {}
        if self.vectorized:
            for iname in within:
                if knl.iname_tags_of_type(iname, VectorizeTag):
                    self.vector_lower[iname] = _range(dom, iname, self.id)[0]
        # constraints every basic set has, factored by what they depend on; the rest
        # as alternatives (a union, as ``i != j`` makes), evaluated together
        sets = []
        for basic in dom.compute_divs().get_basic_sets():
            exprs = [constraint_to_cond_expr(cns) for cns in basic.get_constraints()]
            sets.append({str(e): e for e in exprs})
        common = set.intersection(*(set(s) for s in sets))
        self.common = [self._constraint(e) for k, e in sets[0].items() if k in common]
        rest = [[e for k, e in s.items() if k not in common] for s in sets]
        self.alternatives = [] if len(rest) < 2 or not all(rest) else [
            [self._constraint(e) for e in alt] for alt in rest]
        deps = set()
        for e in (e for alt in rest for e in alt) if self.alternatives else ():
            deps |= get_dependencies(e)
        self.alternative_kind = self._kind(deps)
        self.numeric = [self._constraint(p) for p in self.numeric_predicates]
        mixed = set()
        for c in self.common + self.numeric:
            if c.kind == "mixed":
                mixed |= c.deps
        if self.alternative_kind == "mixed":
            mixed |= deps
        if self.data_predicates:
            mixed |= set(self.seq) | set(self.local_inames)
        self.mixed_inames = [i for i in self.seq if i in mixed]
        self.has_mixed = bool(mixed & set(self.local_inames)) and bool(mixed & set(self.seq))

    def _kind(self, deps) -> str:
        inst = bool(deps & set(self.seq))
        lane = bool(deps & set(self.local_inames))
        return "mixed" if inst and lane else "inst" if inst else "lane" if lane else "scalar"

    def mixed_size(self, sizes: list, lanes: int) -> int:
        """Elements of the mixed activity mask over instances of *sizes* (0: none)."""
        if not self.has_mixed:
            return 0
        return lanes * math.prod(n for i, n in zip(self.seq, sizes, strict=True)
                                 if i in self.mixed_inames)

    def _constraint(self, expr) -> _Constraint:
        deps = get_dependencies(expr)
        return _Constraint(_compiled(expr), self._kind(deps), deps)

    # }}}

    def environment(self, trace: LaunchTrace, group: tuple, values: list) -> dict:
        """Inames and parameters as broadcastable arrays: one axis per sequential iname
        (*values*, in loop order) and a last axis of the group's lanes."""
        depth = len(self.seq)
        env = dict(trace.params)
        for iname, (axis, base) in self.group_inames.items():
            env[iname] = (group[axis] if axis < len(group) else 0) + base
        for iname, (axis, base) in self.local_inames.items():
            env[iname] = (trace.lane_ids[axis] + base).reshape((1,) * depth + (-1,))
        for d, (iname, vals) in enumerate(zip(self.seq, values, strict=True)):
            shape = [1] * (depth + 1)
            shape[d] = -1
            env[iname] = np.asarray(vals, dtype=np.int64).reshape(shape)
        env.update(self.vector_lower)
        return env

    def masks(self, env: dict, shape: tuple, rng_seed: tuple):
        """(runs, instance mask, lane mask, mixed mask or None): *runs* False where the
        group runs no instance; the masks broadcast to *shape* (instances..., lanes)."""
        depth = len(shape) - 1
        lane_shape = (1,) * depth + (shape[-1],)
        parts = {"scalar": True, "inst": True, "lane": True, "mixed": True}
        for c in self.common + self.numeric:
            parts[c.kind] = np.logical_and(parts[c.kind], c.function(env))
        if self.alternatives:
            union = False
            for alternative in self.alternatives:
                conj = True
                for c in alternative:
                    conj = np.logical_and(conj, c.function(env))
                union = np.logical_or(union, conj)
            kind = self.alternative_kind
            parts[kind] = np.logical_and(parts[kind], union)
        if self.data_predicates:
            rng = np.random.default_rng(rng_seed)
            parts["mixed"] = np.logical_and(parts["mixed"], rng.random(shape) < self.fraction)
        runs, inst, lane, mixed = (parts["scalar"], parts["inst"], parts["lane"],
                                   parts["mixed"])
        mixed = None if mixed is True else mixed
        inst = np.broadcast_to(inst, shape[:-1] + (1,)) if np.ndim(inst) else \
            np.full(shape[:-1] + (1,), bool(inst))
        lane = np.broadcast_to(lane, lane_shape) if np.ndim(lane) else \
            np.full(lane_shape, bool(lane))
        return bool(np.all(runs)), inst, lane, mixed


def _vector_use_ok(knl, site, vec: set) -> bool:
    """Whether *site* uses the vec inames only as the index of a ``vec`` array axis."""
    desc = knl.get_var_descriptor(site.array)
    tags = desc.dim_tags or ()
    for axis, ix in enumerate(site.index):
        if not get_dependencies(ix) & vec:
            continue
        tag = tags[axis] if axis < len(tags) else None
        if not (isinstance(tag, VectorArrayDimTag) and isinstance(ix, Variable)
                and ix.name in vec):
            return False
    return True


def _fixed(dom: isl.Set, params: dict) -> isl.Set:
    """*dom* at the parameter values, without parameter dimensions."""
    dom = dom.to_set() if isinstance(dom, isl.BasicSet) else dom
    for name, value in params.items():
        pos = dom.find_dim_by_name(dim_type.param, name)
        if pos >= 0:
            dom = dom.fix_val(dim_type.param, pos, int(value))
    nparam = dom.dim(dim_type.param)
    left = [dom.get_dim_name(dim_type.param, i) for i in range(nparam)]
    if dom.is_empty():
        return dom.project_out(dim_type.param, 0, nparam)
    unknown = [n for n in left if n not in params]
    if unknown:
        raise ParameterError(f"no value for {', '.join(sorted(unknown))}")
    return dom.project_out(dim_type.param, 0, nparam)


def _range(dom: isl.Set, iname: str, insn_id: str) -> tuple[int, int]:
    dom = dom.to_set() if isinstance(dom, isl.BasicSet) else dom
    pos = dom.find_dim_by_name(dim_type.set, iname)
    lo, hi = dom.dim_min_val(pos), dom.dim_max_val(pos)
    if not (lo.is_int() and hi.is_int()):
        raise UnsupportedKernelError(
            f"instruction {insn_id!r}: the loop over {iname} is unbounded at these "
            "parameters")
    return lo.to_python(), hi.to_python()

# }}}


@dataclass
class InstructionBlock:
    """One instruction at one group: its sequential inames (loop order, outer first)
    and their values, and the factors of its activity: ``runs`` (False: no lane of the
    group runs it), ``instance_mask`` (over the instance axes, last axis 1),
    ``lane_mask`` (over the lanes) and ``mixed_mask`` (over both, or None); a lane of an
    instance is active where all of them hold."""

    insn_id: str
    inames: list
    values: list
    runs: bool
    instance_mask: np.ndarray
    lane_mask: np.ndarray
    mixed_mask: np.ndarray | None
    env: dict

    @property
    def shape(self) -> tuple:
        return tuple(len(v) for v in self.values) + (self.lane_mask.shape[-1],)

    def active(self) -> np.ndarray:
        """The full activity mask, (instances, lanes)."""
        shape = self.shape
        mask = np.logical_and(self.instance_mask, self.lane_mask)
        if self.mixed_mask is not None:
            mask = np.logical_and(mask, self.mixed_mask)
        if not self.runs:
            mask = np.zeros((), bool)
        return np.broadcast_to(mask, shape).reshape(-1, shape[-1])


class LaunchTrace:
    """One launch of *knl* at *params*, prepared for address evaluation at any group.

    ``grid``: groups along each group axis (g.0 first); ``block``: work-items along each
    local axis (l.0 first); ``sites``: every global and local access site, numbered in
    execution order within the kernel (instructions in linearized order; in each, the
    condition's loads, the loads, then the stores); ``array_bytes`` and ``array_base``: the
    size and the base address of every array (global ones in the device address space,
    local ones in the group's shared memory).
    """

    def __init__(self, knl, params: dict, data_statistics: dict | None = None):
        kernel, ctab = _prepare(knl)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kernel = lp.get_one_linearized_kernel(kernel, ctab)
        self.kernel, self.callables_table = kernel, ctab
        self.statistics = dict(data_statistics or {})
        self.params = self._parameters(dict(params))
        self._temporaries = self._substitutable_temporaries()
        gsize, lsize = kernel.get_grid_size_upper_bounds_as_exprs(ctab)
        self.grid = tuple(_evaluated(n, self.params, "the grid size") for n in gsize)
        self.block = tuple(_evaluated(n, self.params, "the group size") for n in lsize)
        self.num_groups = math.prod(self.grid)
        self.threads_per_group = math.prod(self.block)
        tid = np.arange(self.threads_per_group, dtype=np.int64)
        sizes = (*self.block, 1, 1, 1)
        self.lane_ids = (tid % sizes[0], tid // sizes[0] % sizes[1],
                         tid // (sizes[0] * sizes[1]) % sizes[2])
        self._layout()
        self._instructions = []
        sites = []
        path = []
        for position, item in enumerate(kernel.linearization):
            if isinstance(item, EnterLoop):
                path.append((position, item.iname))
            elif isinstance(item, LeaveLoop):
                path.pop()
            elif isinstance(item, RunInstruction):
                insn = kernel.id_to_insn[item.insn_id]
                if not isinstance(insn, MultiAssignmentBase):
                    continue
                for condition in (True, False):
                    if condition and not any(s.in_condition
                                             for s in find_access_sites(kernel, insn)):
                        continue
                    plan = _Instruction(self, insn, position, list(path), condition)
                    plan.sites = [self._site(plan, s, len(sites) + k)
                                  for k, s in enumerate(plan.sites_raw)]
                    sites += [p.site for p in plan.sites]
                    self._instructions.append(plan)
        self._plans = {p.site.id: (insn, p) for insn in self._instructions for p in insn.sites}
        self._mark_repeats()
        self._mark_hoisted()
        self._invariant: dict = {}
        self.sites = tuple(p.site for insn in self._instructions for p in insn.sites)

    def _mark_repeats(self) -> None:
        """Set Site.repeats (see Site)."""
        from dataclasses import replace

        from loopy.schedule import Barrier

        barriers = [i for i, item in enumerate(self.kernel.linearization)
                    if isinstance(item, Barrier)]
        stores: dict = {}
        for insn, plan in self._plans.values():
            if plan.site.direction == "store":
                stores.setdefault(plan.site.array, []).append(insn.position)
        seen = {}
        for site_id in sorted(self._plans):
            insn, plan = self._plans[site_id]
            site = plan.site
            if site.direction != "load":
                continue
            key = (site.array, plan.index_key, tuple(insn.path_positions),
                   frozenset(insn.insn.within_inames))
            earlier = seen.get(key)
            if earlier is not None:
                first = self._plans[earlier][0].position
                blocked = any(first <= p < insn.position for p in stores.get(site.array, ()))
                if site.space == "local":
                    blocked = blocked or any(first < b < insn.position for b in barriers)
                if not blocked:
                    plan.site = replace(site, repeats=earlier)
                    continue
            seen[key] = site_id

    def _mark_hoisted(self) -> None:
        """Set Site.hoisted (see Site)."""
        from dataclasses import replace

        written = {p.site.array for _, p in self._plans.values()
                   if p.site.direction == "store"}
        for insn, plan in self._plans.values():
            site = plan.site
            if (site.direction != "load" or site.space != "global" or site.random
                    or site.array in written or site.repeats is not None):
                continue
            guards = set()
            for pred in insn.predicates:
                guards |= {str(d) for d in get_dependencies(pred)}
            reads = set(plan.deps)
            hoisted = []
            for d, loop in enumerate(insn.seq):
                inner = insn.seq[d + 1:]
                if loop in reads or loop in guards or any(
                        n in reads and insn.boxes[n][1] - insn.boxes[n][0] + 1 > UNROLLED
                        for n in inner):
                    continue
                hoisted.append(loop)
            if hoisted:
                plan.site = replace(site, hoisted=tuple(hoisted))

    # {{{ set-up

    def _parameters(self, params: dict) -> dict:
        knl = self.kernel
        value_args = {a.name: a for a in knl.args if isinstance(a, lp.ValueArg)}
        domain_params = set(knl.all_params())
        data_params = sorted(p for p in knl.outer_params() if p not in value_args)
        self.data_params = set(data_params)
        for name in data_params:
            if name not in params:
                if name not in self.statistics:
                    raise DataDependentError(
                        f"kernel {knl.name!r}: loop bound {name} is read from data; supply "
                        f"its typical value, e.g. data_statistics={{{name!r}: 16}}")
                params[name] = round(self.statistics[name])
        known = domain_params | set(value_args)
        unknown = sorted(set(params) - known)
        if unknown:
            raise ParameterError(f"kernel {knl.name!r} has no parameter "
                                 f"{', '.join(unknown)}; its parameters: "
                                 f"{', '.join(sorted(known)) or 'none'}")
        integer = {n for n, a in value_args.items() if a.dtype is not None
                   and np.issubdtype(a.dtype.numpy_dtype, np.integer)}
        missing = sorted((domain_params | integer) - set(params))
        if missing:
            raise ParameterError(f"kernel {knl.name!r}: no value for "
                                 f"{', '.join(missing)}")
        out = {}
        for name, value in params.items():
            if name in value_args and name not in integer and name not in domain_params:
                continue  # a float argument: not a size
            value = _int(value, f"parameter {name}")
            if value < 0:
                raise ParameterError(f"parameter {name} must not be negative, got {value}")
            out[name] = value
        assumed = _fixed(isl.Set.from_basic_set(knl.assumptions), out) \
            if knl.assumptions.dim(dim_type.param) else None
        if assumed is not None and assumed.is_empty():
            raise ParameterError(f"kernel {knl.name!r}: {out} violate its assumptions "
                                 f"{knl.assumptions}")
        return out

    def _substitutable_temporaries(self) -> dict:
        """Private scalar temporaries written once, from inames and parameters only:
        name -> (expression, the writer's inames)."""
        knl = self.kernel
        writers: dict = {}
        for insn in knl.instructions:
            for name in insn.assignee_var_names():
                writers.setdefault(name, []).append(insn)
        out = {}
        for name, temp in knl.temporary_variables.items():
            if temp.address_space not in (AddressSpace.PRIVATE, lp.auto) or temp.shape:
                continue
            insns = writers.get(name, [])
            if len(insns) != 1 or not isinstance(insns[0], lp.Assignment):
                continue
            out[name] = (insns[0].expression, frozenset(insns[0].within_inames))
        # keep those whose expressions reach only inames, parameters and other kept ones
        names = set(knl.all_inames()) | set(self.params)
        changed = True
        while changed:
            changed = False
            for name, (expr, _) in list(out.items()):
                if not get_dependencies(expr) <= names | set(out):
                    del out[name]
                    changed = True
        return out

    def substituted(self, expr, insn):
        """*expr* with the substitutable temporaries that *insn* may read replaced."""
        for _ in range(8):
            deps = get_dependencies(expr)
            usable = {n: e for n, (e, inames) in self._temporaries.items()
                      if n in deps and inames <= insn.within_inames}
            if not usable:
                return expr
            expr = substitute(expr, {Variable(n): e for n, e in usable.items()})
        return expr

    def _layout(self) -> None:
        knl = self.kernel
        self.array_bytes, self.array_base = {}, {}
        self._strides, self._shapes = {}, {}
        globals_ = [a.name for a in knl.args if isinstance(a, (lp.ArrayArg, lp.ConstantArg))]
        globals_ += [t.name for t in knl.temporary_variables.values()
                     if t.address_space == AddressSpace.GLOBAL]
        locals_ = [t.name for t in knl.temporary_variables.values()
                   if t.address_space == AddressSpace.LOCAL]
        for names in (globals_, locals_):
            top = 0
            for name in names:
                desc = knl.get_var_descriptor(name)
                strides, shape = self._array_strides(desc)
                self._strides[name], self._shapes[name] = strides, shape
                itemsize = desc.dtype.numpy_dtype.itemsize
                elements = 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True)
                                   if n > 0) if all(n > 0 for n in shape) else 0
                self.array_bytes[name] = elements * itemsize
                self.array_base[name] = top
                top += -(-self.array_bytes[name] // ALIGNMENT) * ALIGNMENT

    def _array_strides(self, desc) -> tuple[list[int], list[int]]:
        """Element strides and shape of an array at the parameters: its fixed strides
        (a ``vec`` axis has stride 1), else row-major over its storage shape."""
        if desc.shape is None or desc.shape is lp.auto:
            raise UnsupportedKernelError(f"array {desc.name!r} has no known shape")
        shape_exprs = desc.shape if isinstance(desc.shape, tuple) else (desc.shape,)
        shape = [_evaluated(n, self.params, f"the shape of {desc.name}") for n in shape_exprs]
        tags = desc.dim_tags or ()
        if len(tags) == len(shape) and all(
                isinstance(t, VectorArrayDimTag) or (isinstance(t, FixedStrideArrayDimTag)
                                                     and t.stride is not lp.auto)
                for t in tags):
            strides = [1 if isinstance(t, VectorArrayDimTag) else
                       _evaluated(t.stride, self.params, f"a stride of {desc.name}")
                       for t in tags]
            return strides, shape
        storage = getattr(desc, "storage_shape", None) or shape_exprs
        storage = [_evaluated(n, self.params, f"the storage of {desc.name}") for n in storage]
        strides = [math.prod(storage[d + 1:]) for d in range(len(storage))]
        return strides, shape

    def _site(self, plan: _Instruction, access, site_id: int) -> _SitePlan:
        knl = self.kernel
        desc = knl.get_var_descriptor(access.array)
        itemsize = desc.dtype.numpy_dtype.itemsize
        strides, shape = self._strides[access.array], self._shapes[access.array]
        tags = desc.dim_tags or ()
        known = set(knl.all_inames()) | set(self.params)
        width = 1
        terms, random_axes, index = [], [], []
        for axis, ix in enumerate(access.index):
            ix = self.substituted(ix, plan.insn)
            index.append(ix)
            tag = tags[axis] if axis < len(tags) else None
            if plan.vectorized and isinstance(tag, VectorArrayDimTag) and \
                    isinstance(ix, Variable) and ix.name in plan.vector_lower:
                width = shape[axis]
                ix = plan.vector_lower[ix.name]
            if not get_dependencies(ix) <= known:
                name = f"_r{axis}"
                random_axes.append((name, shape[axis]))
                ix = Variable(name)
            terms.append(ix * strides[axis])
        offset = flatten(substitute(sum(terms, 0), dict(self.params)))
        coefficients, constant = None, 0
        if not random_axes:
            try:
                collected = CoefficientCollector()(offset)
            except Exception:  # noqa: BLE001 - not affine: %, //, &, a product of inames
                collected = None
            if collected is not None:
                collected = {k: _number(v) for k, v in collected.items()}
            if collected is not None and all(
                    isinstance(v, (int, np.integer)) for v in collected.values()):
                constant = int(collected.pop(1, 0))
                coefficients = {k.name: int(v) for k, v in collected.items() if v}
        site = Site(site_id, plan.id, access.array, access.space, access.direction,
                    itemsize, width, coefficients is not None, bool(random_axes))
        return _SitePlan(site, self.array_base[access.array], coefficients, constant,
                         _compiled(offset), tuple(random_axes),
                         frozenset(get_dependencies(offset)), str(tuple(index)),
                         access.in_condition)

    # }}}

    # {{{ groups

    def group_index(self, group) -> tuple[int, ...]:
        """*group* (a linear index, g.0 fastest, or one index per grid axis) as a tuple."""
        if isinstance(group, (int, np.integer)) and not isinstance(group, bool):
            if not 0 <= group < self.num_groups:
                raise UsageError(f"group {group} is outside the launch's {self.num_groups} "
                                 "groups")
            out, rest = [], int(group)
            for size in self.grid:
                out.append(rest % size)
                rest //= size
            return tuple(out)
        group = tuple(int(g) for g in group)
        if len(group) != len(self.grid) or not all(
                0 <= g < n for g, n in zip(group, self.grid, strict=True)):
            raise UsageError(f"group {group} is not in the grid {self.grid}")
        return group

    def blocks(self, group, *, max_mixed: int | None = None
               ) -> list[tuple[InstructionBlock, float, list]]:
        """Per instruction that has sites and runs somewhere: its InstructionBlock at
        *group*, the factor of its instances over those kept, and its site plans. An
        instruction whose activity mixes lanes and instances over more than *max_mixed*
        elements keeps an evenly spread subset of its instances (see group_trace)."""
        group = self.group_index(group)
        out = []
        for insn in self._instructions:
            if insn.empty or not insn.sites:
                continue
            sizes = [hi - lo + 1 for lo, hi in (insn.boxes[i] for i in insn.seq)]
            mixed = insn.mixed_size(sizes, self.threads_per_group)
            cap = max_mixed if max_mixed is not None and mixed > max_mixed else None
            out.append(self.instruction_block(insn, group, max_addresses=cap)
                       + (insn.sites,))
        return out

    def instruction_block(self, insn, group: tuple, *, max_addresses: int | None = None,
                          values: list | None = None) -> tuple[InstructionBlock, float]:
        """The InstructionBlock of *insn* (see instruction_of) at *group*, over all its
        instances, or with *max_addresses* an evenly spread subset (see group_trace), or
        the loop values *values*; and the factor of its instances over those kept."""
        sizes = [hi - lo + 1 for lo, hi in (insn.boxes[i] for i in insn.seq)]
        if values is None:
            values, factor = _kept(insn, sizes, self.threads_per_group, max_addresses,
                                   self._seed(insn.position, group, 1))
        else:
            factor = 1.0
        env = insn.environment(self, group, values)
        shape = tuple(len(v) for v in values) + (self.threads_per_group,)
        runs, inst, lane, mixed = insn.masks(env, shape, self._seed(insn.position, group))
        return (InstructionBlock(insn.id, list(insn.seq), values, runs, inst, lane, mixed,
                                 env), factor)

    def _seed(self, *key) -> tuple:
        flat = []
        for k in key:
            flat += list(k) if isinstance(k, tuple) else [k]
        return (20251126, *[int(k) for k in flat])

    def lane_addresses(self, block: InstructionBlock, plan: _SitePlan, group: tuple
                       ) -> np.ndarray:
        """Byte addresses of *plan*'s site over *block*, broadcastable to block.shape
        (the activity masks not applied)."""
        env = block.env
        if plan.random_axes:
            rng = np.random.default_rng(self._seed(plan.site.id, group))
            env = dict(env)
            for name, extent in plan.random_axes:
                env[name] = rng.integers(0, max(extent, 1), size=block.shape)
        offset = np.asarray(plan.function(env))
        if offset.dtype.kind == "f":
            offset = np.floor(offset)
        return plan.base + plan.site.bytes * offset.astype(np.int64)

    def separable(self, block: InstructionBlock, plan: _SitePlan
                  ) -> tuple[np.ndarray, np.ndarray] | None:
        """For an affine site: (instance part over block's instance axes, lane part over
        its lanes) of the byte addresses, whose sum is the address; None otherwise."""
        if plan.coefficients is None:
            return None
        insn = self._plans[plan.site.id][0]
        sizes = tuple(len(v) for v in block.values)
        inst = np.full(sizes, plan.base + plan.site.bytes * plan.constant, dtype=np.int64)
        lane = np.zeros(block.shape[-1], dtype=np.int64)
        for name, c in plan.coefficients.items():
            step = plan.site.bytes * c
            if name in insn.local_inames:
                lane += step * np.ravel(block.env[name])
            elif name in insn.seq:
                d = insn.seq.index(name)
                shape = [1] * len(sizes)
                shape[d] = -1
                inst += step * block.values[d].reshape(shape)
            else:
                inst += step * int(block.env[name])
        return inst, lane

    def group_trace(self, group, *, max_addresses: int | None = None,
                    window: int | None = None) -> GroupTrace:
        """Addresses of every site at *group*. With *max_addresses*, where the group's
        addresses (instances × lanes × sites, over all instructions) would exceed it,
        each instruction keeps an evenly spread subset of its instances in proportion to
        its share (outer loops thinned first, one value drawn within each equal stretch
        with a fixed seed), and ``scale`` says by how much to multiply. With *window*
        instead, the loops keep an unbroken stretch of their iterations from their
        middle, the same share of every loop (outer loops first), so that the
        addresses stay near *window*: what a cache sees of a long loop."""
        group = self.group_index(group)
        insns = [i for i in self._instructions if not i.empty and i.sites]
        sizes = [len(i.sites) * self.threads_per_group * math.prod(
            hi - lo + 1 for lo, hi in (i.boxes[n] for n in i.seq)) for i in insns]
        caps = [None] * len(insns)
        if max_addresses is not None and sum(sizes) > max_addresses:
            caps = [max(max_addresses * size // (sum(sizes) * len(i.sites)),
                        self.threads_per_group) for i, size in zip(insns, sizes, strict=True)]
        share = 1.0
        if window is not None:  # what a cache sees: the global sites
            wide = sum(size * sum(p.site.space == "global" for p in i.sites) // len(i.sites)
                       for i, size in zip(insns, sizes, strict=True))
            share = min(1.0, window / wide) if wide else 1.0
        addresses, scale, stamps, owners = {}, {}, [], []
        for insn, cap in zip(insns, caps, strict=True):
            if share < 1.0:
                values = _stretch(insn, share)
                block, _ = self.instruction_block(insn, group, values=values)
                factor = math.prod(hi - lo + 1 for lo, hi in (insn.boxes[n] for n in insn.seq)
                                   ) / math.prod(len(v) for v in values)
            else:
                block, factor = self.instruction_block(insn, group, max_addresses=cap)
            values = block.values
            active = block.active()
            rows = active.any(axis=1)
            stamps.append(_stamps(insn, values)[rows])
            owners.append((insn, int(rows.sum())))
            for plan in insn.sites:
                addr = np.broadcast_to(self.lane_addresses(block, plan, group), block.shape)
                addr = addr.reshape(-1, block.shape[-1])[rows]
                live = active[rows]
                kept = factor
                if plan.site.hoisted:  # loaded at the first iteration of those loops only
                    firsts, share = hoisted_values(insn, values, plan.site.hoisted)
                    first = np.ones(block.shape[:-1], bool)
                    for d, (v, f) in enumerate(zip(values, firsts, strict=True)):
                        shape = [1] * len(values)
                        shape[d] = -1
                        first = first & np.isin(v, f).reshape(shape)
                    live = live & first.reshape(-1)[rows][:, None]
                    kept *= share
                addresses[plan.site.id] = np.where(live, addr, -1)
                scale[plan.site.id] = kept
        order = {}
        if stamps:
            width = max(s.shape[1] for s in stamps)
            table = np.concatenate([np.pad(s, ((0, 0), (0, width - s.shape[1])))
                                    for s in stamps])
            rank = np.empty(len(table), dtype=np.int64)
            rank[np.lexsort(table.T[::-1])] = np.arange(len(table))
            start = 0
            for insn, count in owners:
                for plan in insn.sites:
                    order[plan.site.id] = rank[start:start + count]
                start += count
        return GroupTrace(group, addresses, order, scale)

    def group_addresses(self, group, *, max_addresses: int | None = None
                        ) -> dict[int, np.ndarray]:
        """Site id -> int64 array (instances, threads per group) of byte addresses at
        *group*, -1 where a lane is inactive, instances in execution order (see
        group_trace for *max_addresses*)."""
        return self.group_trace(group, max_addresses=max_addresses).addresses

    def site_plan(self, site_id: int) -> _SitePlan:
        """How the site's addresses are evaluated (for kernelcast.facts.warps)."""
        return self._plans[site_id][1]

    def instruction_of(self, site_id: int) -> _Instruction:
        """The instruction of a site, as instruction_block takes it."""
        return self._plans[site_id][0]

    def group_invariant(self, site_id: int, lows: tuple, highs: tuple) -> bool:
        """Whether the site's active lanes and instances are the same at every group whose
        indices lie within [lows, highs] per grid axis (its domain restricted there is a
        product with the box), and its predicates do not read the group index."""
        insn, _ = self._plans[site_id]
        key = (id(insn), tuple(lows), tuple(highs))
        if key not in self._invariant:
            self._invariant[key] = self._group_invariant(insn, lows, highs)
        return self._invariant[key]

    def _group_invariant(self, insn, lows, highs) -> bool:
        if insn.empty:
            return True
        if insn.data_predicates or any(
                get_dependencies(p) & set(insn.group_inames) for p in insn.numeric_predicates):
            return False
        dom = insn.domain
        dom = dom.to_set() if isinstance(dom, isl.BasicSet) else dom
        box = dom.universe(dom.space)
        positions = []
        for iname, (axis, base) in insn.group_inames.items():
            pos = dom.find_dim_by_name(dim_type.set, iname)
            lo, hi = lows[axis] + base, highs[axis] + base
            box = box.lower_bound_val(dim_type.set, pos, lo).upper_bound_val(
                dim_type.set, pos, hi)
            positions.append((pos, iname))
        restricted = dom & box
        lifted = restricted
        for pos, iname in sorted(positions, reverse=True):
            lifted = lifted.project_out(dim_type.set, pos, 1).insert_dims(
                dim_type.set, pos, 1).set_dim_name(dim_type.set, pos, iname)
        return restricted.is_equal(lifted & box)

    # }}}


def _kept(insn: _Instruction, sizes: list, lanes: int, cap: int | None, seed: tuple):
    """Values kept of each sequential iname, outer first, so that instances × lanes stay
    within *cap*, and the factor of instances over those kept."""
    values = [np.arange(lo, hi + 1, dtype=np.int64)
              for lo, hi in (insn.boxes[i] for i in insn.seq)]
    if cap is None or math.prod(sizes) * lanes <= cap:
        return values, 1.0
    rng = np.random.default_rng(seed)
    budget = max(cap // max(lanes, 1), 1)
    kept = []
    for d, n in enumerate(sizes):
        inner = math.prod(sizes[d + 1:])
        m = int(min(max(budget // max(inner, 1), 1), n))
        if m < n:
            edges = (np.arange(m + 1) * n) // m
            pick = edges[:-1] + (rng.random(m) * (edges[1:] - edges[:-1])).astype(np.int64)
            kept.append(values[d][pick])
        else:
            kept.append(values[d])
        budget = max(budget // m, 1)
    factor = math.prod(sizes) / math.prod(len(v) for v in kept)
    return kept, factor


def hoisted_values(insn: _Instruction, values: list, loops) -> tuple[list, float]:
    """*values* (of the instruction's sequential inames) with each of *loops* kept at
    its first value, and the share of the loops' instances those stand for (Site.hoisted:
    a load made once before them)."""
    values, share = list(values), 1.0
    for loop in loops:
        d = insn.seq.index(loop)
        lo, hi = insn.boxes[loop]
        share *= len(values[d]) / (hi - lo + 1)
        values[d] = values[d][:1]
    return values, share


#: the trip counts up to which the compiler is taken to unroll a loop whole (Site.hoisted)
UNROLLED = 32

#: a loop is seen through a stretch only where it is longer than twice this, and the
#: stretch keeps at least this many iterations: reuse between nearby iterations stays whole
STRETCH_MIN = 32


def _stretch(insn: _Instruction, share: float) -> list:
    """Values kept of each sequential iname, outer first: an unbroken stretch from the
    middle of each long loop, about *share* of the instances in all (an outer loop kept
    to fewer than that share passes the rest on to the loops inside it)."""
    kept, left = [], share
    for lo, hi in (insn.boxes[i] for i in insn.seq):
        n = hi - lo + 1
        m = n if n <= 2 * STRETCH_MIN else min(n, max(STRETCH_MIN, round(n * left)))
        first = lo + (n - m) // 2
        kept.append(np.arange(first, first + m, dtype=np.int64))
        left = min(1.0, left * n / m)
    return kept


def _stamps(insn: _Instruction, values: list) -> np.ndarray:
    """Execution-order keys of the instruction's instances (C order over *values*):
    per enclosing loop its entry's position in the linearization and the iname's value,
    then the instruction's position (an unrolled vec iname's value after it)."""
    loops = len(insn.path_positions)
    grids = np.meshgrid(*values, indexing="ij") if values else []
    count = math.prod(len(v) for v in values)
    columns = []
    for d in range(loops):
        columns.append(np.full(count, insn.path_positions[d], dtype=np.int64))
        columns.append(grids[d].ravel())
    columns.append(np.full(count, insn.position, dtype=np.int64))
    for d in range(loops, len(values)):
        columns.append(grids[d].ravel())
    return np.stack(columns, axis=1)
