"""Symbolic extraction of the paper's kernel properties from a Loopy kernel (§2, §3).

Each count follows the paper's Algorithm 1: for every instruction, the number of
work-items that execute it (its domain projected onto its inames, counted with barvinok,
times the sizes of hardware axes it does not use, since every work-item of those axes runs
it too) multiplies what one execution does. Loopy's ExpressionOpCounter supplies the
operations of one execution; kernelcast's own walk finds the memory accesses, their
stride along local axis 0 and their footprint (footprint.py), since Loopy counts broadcast
accesses per sub-group and has no utilization ratio. Barriers come from Loopy's
linearization.

Public names: extract_properties.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from fractions import Fraction

import islpy as isl
import loopy as lp
import numpy as np
from loopy.kernel.instruction import (
    BarrierInstruction,
    CInstruction,
    MultiAssignmentBase,
    NoOpInstruction,
)
from loopy.schedule import Barrier, CallKernel, EnterLoop, LeaveLoop
from loopy.symbolic import pwaff_from_expr
from loopy.statistics import (
    ExpressionOpCounter,
    Op,
    get_kernel_parameter_space,
    get_unused_hw_axes_factor,
)
from loopy.symbolic import condition_to_set
from pymbolic import evaluate, flatten
from pymbolic.primitives import is_constant

from kernelcast.errors import (
    DataDependentError,
    MissingDependencyError,
    ParameterError,
    UncountedWarning,
    UnsupportedKernelError,
)
from kernelcast.frontends.loopy import PreparedKernel, prepare_kernel
from kernelcast.properties.accesses import find_access_sites, lid0_stride, local_bank_passes
from kernelcast.properties.footprint import Footprint, utilization
from kernelcast.properties.recurrence import (branching_loops, recurrence_ops,
                                              sequential_inames, serial_ops, varying_loops)
from kernelcast.properties.result import AccessInfo, Properties
from kernelcast.properties.vocabulary import (
    ACCESS_BITS,
    RECURRENCE_KINDS,
    SERIAL_KINDS,
    arith_name,
    global_name,
    local_name,
    minls_name,
    stride_class,
)

dim_type = isl.dim_type

REFERENCE_SIZE = 1024
_FLOAT_KINDS = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_OP_KINDS = {"add": "add", "mul": "mul", "div": "div", "pow": "pow", "maxmin": "special"}


class _OpCounter(ExpressionOpCounter):
    """Loopy's operation counter, with powers counted as Loopy's code generator emits
    them: ``x**2`` is ``x*x`` (one multiplication), ``x**1`` and ``x**0`` cost nothing."""

    def map_power(self, expr):
        if is_constant(expr.exponent) and expr.exponent in (0, 1, 2):
            base = self.rec(expr.base) if expr.exponent else self.new_zero_poly_map()
            if expr.exponent != 2:
                return base
            return base + self.new_poly_map({Op(dtype=self.type_inf(expr), name="mul",
                                                count_granularity="workitem",
                                                kernel_name=self.knl.name): self.one})
        return super().map_power(expr)


def _require_barvinok() -> None:
    if not hasattr(isl.BasicSet, "card"):
        raise MissingDependencyError(
            "islpy is built without barvinok, so counts would be approximate; install "
            "it over islpy: pip install --no-deps --force-reinstall "
            "islpy-barvinok==2025.2.5.post1")


def extract_properties(knl, *, data_statistics: dict | None = None) -> Properties:
    """Count the properties of one launch of *knl* symbolically in its size parameters.

    *knl* is a Loopy TranslationUnit with dtypes fixed and hardware axes tagged.
    *data_statistics* supplies what depends on data, as the paper allows (§2): for a loop
    bound read from data, its typical value (``{"rowlen": 12.5}``); for an instruction
    guarded by a data-dependent condition, the fraction of its executions that run
    (``{"insn_id": 0.3}``).
    """
    _require_barvinok()
    prepared = prepare_kernel(knl)
    return _Extraction(prepared, dict(data_statistics or {})).run()


class _Extraction:
    def __init__(self, prepared: PreparedKernel, statistics: dict):
        self.prepared = prepared
        self.knl = knl = prepared.kernel
        self.ctab = prepared.callables_table
        self.space = get_kernel_parameter_space(knl)
        self.zero = isl.PwQPolynomial.zero(self.space.insert_dims(dim_type.out, 0, 1))
        self.one = self.zero + 1
        self.statistics = statistics
        value_args = prepared.value_args()
        self.data_params = sorted(p for p in knl.outer_params() if p not in value_args)
        self._check_statistics()
        self.assumptions = knl.assumptions
        size_params = set(self.space.get_var_dict(dim_type.param)) | set(
            self.assumptions.get_var_dict(dim_type.param))
        self.params = tuple(sorted(size_params - set(self.data_params)))
        self.reference = self._reference_point(value_args)
        self.totals: dict[str, isl.PwQPolynomial] = defaultdict(lambda: self.zero)
        self._point_counts: dict[tuple, isl.PwQPolynomial] = {}
        # for the extended model: local-memory passes beyond one per access (bank
        # conflicts), operations on loop-carried paths and on the paths through iterations
        # that a branch serializes (kernelcast.properties.recurrence); and, not a total
        # but per work-item, the global loads of the work-item that runs the most
        # iterations of loops whose trip count varies among work-items
        self.extent: dict[str, isl.PwQPolynomial] = {
            "local_conflicts": self.zero, "varying_global_loads": self.zero,
            **{f"recurrence_{kind}": self.zero for kind in RECURRENCE_KINDS},
            **{f"serial_{kind}": self.zero for kind in SERIAL_KINDS}}
        self.local_size = tuple(
            evaluate(flatten(n), self.reference) for n in
            knl.get_grid_size_upper_bounds_as_exprs(self.ctab)[1])

    # {{{ inputs

    def _check_statistics(self) -> None:
        missing = [p for p in self.data_params if p not in self.statistics]
        if missing:
            raise DataDependentError(
                f"kernel {self.knl.name!r}: loop bounds {', '.join(missing)} are read from "
                f"data; supply their typical values, e.g. data_statistics="
                f"{{{missing[0]!r}: 16}}")
        for key, value in self.statistics.items():
            if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)) \
                    or value < 0:
                raise ParameterError(
                    f"data statistic {key!r} must be a non-negative number, got {value!r}")

    def _reference_point(self, value_args: set[str]) -> dict[str, int]:
        """The size at which strides and utilization are judged: the smallest point with
        every size parameter at least REFERENCE_SIZE that satisfies the assumptions."""
        int_args = {a.name for a in self.knl.args
                    if isinstance(a, lp.ValueArg) and a.dtype is not None
                    and np.issubdtype(a.dtype.numpy_dtype, np.integer)}
        names = sorted((set(self.params) | int_args) - set(self.data_params))
        fixed = {p: int(round(self.statistics[p])) for p in self.data_params}
        for bound in (REFERENCE_SIZE, 1, 0):
            point = self._lexmin_point(names, fixed, bound)
            if point is not None:
                return {**point, **fixed}
        raise UnsupportedKernelError(
            f"kernel {self.knl.name!r}: no parameter values satisfy its assumptions "
            f"{self.assumptions}")

    def _lexmin_point(self, names, fixed, bound):
        all_names = names + sorted(fixed)
        conds = [f"{n} >= {bound}" for n in names] + [f"{n} = {v}" for n, v in fixed.items()]
        ctx = self.knl.isl_context
        box = isl.Set.read_from_str(
            ctx, f"{{ [{', '.join(all_names)}] : {' and '.join(conds) or 'true'} }}")
        params = isl.Set.read_from_str(ctx, f"[{', '.join(all_names)}] -> {{ : }}")
        assumed = isl.Set.from_basic_set(self.assumptions).align_params(params.space)
        assumed = assumed.move_dims(dim_type.set, 0, dim_type.param, 0,
                                    assumed.dim(dim_type.param))
        candidates = (assumed & box.align_params(assumed.space)).lexmin()
        if candidates.is_empty():
            return None
        point = candidates.sample_point()
        return {all_names[i]: point.get_coordinate_val(dim_type.set, i).to_python()
                for i in range(len(all_names)) if all_names[i] in names}

    # }}}

    # {{{ per-instruction counts

    def _instruction_domain(self, insn) -> tuple[isl.Set, Fraction]:
        """The instruction's domain with its affine conditions, and the fraction of runs
        that data-dependent conditions let through."""
        inames = insn.within_inames
        domain = self.knl.get_inames_domain(inames).project_out_except(
            inames, [dim_type.set])
        fraction = Fraction(1)
        data_conditions = []
        for pred in insn.predicates:
            cond = condition_to_set(domain.space, pred)
            if cond is None:
                data_conditions.append(str(pred))
            else:
                domain = domain & cond
        if data_conditions:
            if insn.id not in self.statistics:
                raise DataDependentError(
                    f"instruction {insn.id!r} runs only where {' and '.join(data_conditions)}"
                    f", which depends on data; supply the fraction of its executions that "
                    f"run, e.g. data_statistics={{{insn.id!r}: 0.5}}")
            fraction = Fraction(self.statistics[insn.id]).limit_denominator(10**6)
        return domain, fraction

    def _points(self, inames: frozenset, predicates: tuple,
                domain: isl.Set) -> isl.PwQPolynomial:
        """The points of *domain*, the domain of *inames* under the affine conditions
        among *predicates* (in the order _instruction_domain took them): counted once
        per kernel for each, since instructions (and barriers) often share them."""
        key = (inames, predicates)
        count = self._point_counts.get(key)
        if count is None:
            count = self._point_counts[key] = (
                self.zero + domain.align_params(self.space).card())
        return count

    def _runs(self, insn, domain: isl.Set) -> isl.PwQPolynomial:
        """Work-items that reach *insn*: its domain's points times the sizes of the
        hardware axes it does not use."""
        count = self._points(frozenset(insn.within_inames), tuple(insn.predicates),
                             domain)
        unused = get_unused_hw_axes_factor(self.knl, self.ctab, insn,
                                           disregard_local_axes=False).pwqpolynomial
        return count * (self.zero + unused)

    def _count_ops(self, insn, runs) -> None:
        counter = _OpCounter(self.knl, self.ctab, kernel_rec=None,
                             count_within_subscripts=False)
        ops = counter(insn.expression) + counter(insn.assignees)
        for op, per_run in ops.count_map.items():
            dtype = op.dtype.numpy_dtype
            kind = _FLOAT_KINDS.get(dtype)
            opname = "special" if op.name.startswith("func:") else _OP_KINDS.get(op.name)
            if kind is None or opname is None:
                if not (np.issubdtype(dtype, np.integer) or np.issubdtype(dtype, np.bool_)):
                    warnings.warn(
                        f"kernel {self.knl.name!r}, instruction {insn.id!r}: {op.name} on "
                        f"{dtype} is outside the property vocabulary and is not counted",
                        UncountedWarning, stacklevel=4)
                continue
            name = arith_name(opname, kind)
            self.totals[name] = self.totals[name] + runs * (self.zero + per_run)

    def _most_iterations(self, insn, domain: isl.Set) -> isl.PwQPolynomial:
        """An upper bound of the executions of *insn* by one work-item, if it lies in a
        loop whose trip count varies among work-items (zero otherwise): the product of
        the ranges of its sequential loops, exact for the rectangular fetch loops that
        Loopy generates."""
        if not varying_loops(self.knl, insn, self.reference):
            return self.zero
        if isinstance(domain, isl.BasicSet):
            domain = domain.to_set()
        most = self.one
        for iname in sequential_inames(self.knl, insn):
            pos = domain.find_dim_by_name(dim_type.set, iname)
            span = (isl.PwQPolynomial.from_pw_aff(domain.dim_max(pos).align_params(self.space))
                    - isl.PwQPolynomial.from_pw_aff(domain.dim_min(pos).align_params(self.space)))
            most = most * (span + self.one)
        return most

    # }}}

    def run(self) -> Properties:
        sites = []  # (site, runs, domain, stride)
        branching = branching_loops(self.knl)
        for insn in self.knl.instructions:
            if isinstance(insn, (NoOpInstruction, BarrierInstruction)):
                continue
            if isinstance(insn, CInstruction) or not isinstance(insn, MultiAssignmentBase):
                warnings.warn(f"kernel {self.knl.name!r}: instruction {insn.id!r} is "
                              f"{type(insn).__name__}; its work is not counted",
                              UncountedWarning, stacklevel=3)
                continue
            domain, fraction = self._instruction_domain(insn)
            reached = self._runs(insn, domain)
            runs = reached if fraction == 1 else reached.scale_val(
                isl.Val(f"{fraction.numerator}/{fraction.denominator}"))
            self._count_ops(insn, runs)
            for prefix, ops in (("recurrence", recurrence_ops(self.knl, insn)),
                                ("serial", serial_ops(self.knl, insn, branching))):
                for kind, per_run in ops.items():
                    name = f"{prefix}_{kind}"
                    self.extent[name] = self.extent[name] + runs.scale_val(isl.Val(per_run))
            sites_here = find_access_sites(self.knl, insn)
            global_loads = sum(site.space == "global" and site.direction == "load"
                               for site in sites_here)
            if global_loads:
                self.extent["varying_global_loads"] = self.extent["varying_global_loads"] + (
                    self._most_iterations(insn, domain).scale_val(isl.Val(global_loads)))
            for site in sites_here:
                site_runs = reached if site.in_condition else runs
                if site.bits not in ACCESS_BITS:
                    warnings.warn(f"kernel {self.knl.name!r}: {site.bits}-bit accesses to "
                                  f"{site.array!r} are outside the vocabulary and are not "
                                  "counted", UncountedWarning, stacklevel=3)
                    continue
                if site.space == "local":
                    name = local_name(site.direction, site.bits)
                    self.totals[name] = self.totals[name] + site_runs
                    extra = local_bank_passes(self.knl, insn, site, self.local_size,
                                              self.reference) - 1
                    if extra:
                        self.extent["local_conflicts"] = self.extent[
                            "local_conflicts"] + site_runs.scale_val(isl.Val(extra))
                    continue
                stride = lid0_stride(self.knl, insn, site, self.reference)
                sites.append((site, site_runs, domain, stride))
        accesses = self._classify(sites)
        self._count_launch()
        self._count_array_bytes(sites)
        context = isl.Set.from_basic_set(self.assumptions).align_params(self.space)
        counts = {n: c.gist_params(context).coalesce() for n, c in self.totals.items()
                  if not c.is_zero()}
        minls = {}
        for bits in ACCESS_BITS:
            for info in {a.stride_class for a in accesses if a.bits == bits}:
                load = global_name("load", bits, info)
                store = global_name("store", bits, info)
                if load in counts and store in counts:
                    minls[minls_name(bits, info)] = (load, store)
        extent = {n: c.gist_params(context).coalesce() for n, c in self.extent.items()}
        return Properties(self.knl.name, self.params, counts, minls, self.assumptions,
                          {k: v for k, v in self.statistics.items()
                           if k in self.data_params}, self.reference, tuple(accesses),
                          extent, self._local_memory())

    def _local_memory(self) -> tuple:
        """(shape, bytes per element) of each local-memory temporary."""
        return tuple((tuple(temp.shape), np.dtype(temp.dtype.numpy_dtype).itemsize)
                     for temp in self.knl.temporary_variables.values()
                     if temp.address_space == lp.AddressSpace.LOCAL)

    def _classify(self, sites) -> list[AccessInfo]:
        # The utilization ratio is per array and direction, over all of its sites; only
        # arrays with a strided site need it.
        footprints: dict[tuple[str, str], Footprint] = {
            (site.array, site.direction): Footprint(
                self.knl.get_var_descriptor(site.array), self.reference)
            for site, _runs, _domain, stride in sites
            if stride is not None and abs(stride) > 1}
        affine: dict[int, bool] = {}
        for i, (site, _runs, domain, _stride) in enumerate(sites):
            footprint = footprints.get((site.array, site.direction))
            if footprint is not None:
                affine[i] = footprint.add(domain, site.index, self.assumptions)
        touched = {key: fp.counts() for key, fp in footprints.items()
                   if fp.cells is not None}
        accesses = []
        for i, (site, runs, _domain, stride) in enumerate(sites):
            util = None
            if stride is not None and abs(stride) > 1:
                if not affine[i]:
                    warnings.warn(
                        f"kernel {self.knl.name!r}: the footprint of {site.array!r} in "
                        f"{site.insn_id!r} is not affine; the access is counted as irregular",
                        UncountedWarning, stacklevel=4)
                    stride = None
                else:
                    util = utilization(*touched[site.array, site.direction], stride)
            cls = stride_class(stride, util)
            info = AccessInfo(site.insn_id, site.array, site.direction, site.bits, stride,
                              util, cls)
            accesses.append(info)
            name = info.property_name
            self.totals[name] = self.totals[name] + runs
        return accesses

    def _count_array_bytes(self, sites) -> None:
        """Bytes of the global arrays the kernel reads and writes: the data a launch must
        move at least once, however often its work-items access it. Per array, also the
        bytes its accesses cover (``read a`` / ``read a accessed``): a gather that touches
        a few elements of a large table moves no more than those."""
        read, written = self.knl.get_read_variables(), self.knl.get_written_variables()
        self.extent["bytes_read"] = self.zero
        self.extent["bytes_written"] = self.zero
        for arg in self.knl.args:
            if not isinstance(arg, lp.ArrayArg) or arg.shape in (None, lp.auto):
                continue
            size = self.one * int(np.dtype(arg.dtype.numpy_dtype).itemsize)
            for extent in arg.shape:
                size = size * isl.PwQPolynomial.from_pw_aff(
                    pwaff_from_expr(self.space, extent, ()))
            for direction, used in (("read", arg.name in read), ("written", arg.name in written)):
                if not used:
                    continue
                total = f"bytes_{direction}"
                self.extent[total] = self.extent[total] + size
                self.extent[f"{direction} {arg.name}"] = size
                self.extent[f"{direction} {arg.name} accessed"] = self.zero
        for site, runs, _domain, _stride in sites:
            key = f"{'read' if site.direction == 'load' else 'written'} {site.array} accessed"
            if key in self.extent:
                self.extent[key] = self.extent[key] + runs.scale_val(isl.Val(site.bits // 8))

    def _count_launch(self) -> None:
        lin = lp.get_one_linearized_kernel(self.knl, self.ctab)
        n_launches = sum(isinstance(item, CallKernel) for item in lin.linearization)
        if n_launches > 1:
            raise UnsupportedKernelError(
                f"kernel {self.knl.name!r} compiles to {n_launches} device launches "
                "(a global barrier splits it); kernelcast models one launch at a time")
        gsize, lsize = self.knl.get_grid_size_upper_bounds(self.ctab)
        groups = self.one
        for size in gsize:
            groups = groups * isl.PwQPolynomial.from_pw_aff(size.align_params(self.space))
        group_size = self.one
        for size in lsize:
            group_size = group_size * isl.PwQPolynomial.from_pw_aff(
                size.align_params(self.space))
        self.totals["workgroup"] = groups
        self.totals["launch"] = self.one
        self.extent["work_items"] = groups * group_size
        loops: list[str] = []
        for item in lin.linearization:
            if isinstance(item, EnterLoop):
                loops.append(item.iname)
            elif isinstance(item, LeaveLoop):
                loops.pop()
            elif isinstance(item, Barrier):
                inames = frozenset(loops)
                per_item = self.one
                if inames:
                    dom = self.knl.get_inames_domain(inames).project_out_except(
                        inames, [dim_type.set])
                    per_item = self._points(inames, (), dom)
                self.totals["barrier"] = (self.totals["barrier"]
                                          + per_item * groups * group_size)
