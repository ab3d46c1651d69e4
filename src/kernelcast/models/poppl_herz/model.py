"""Pöppl & Herz's static model of OpenCL kernels behind the model interface.

t = tTransfer(nWI, sWI) + tBase(nWI) + Σ_op W_op(n_op)·t_op(nWI) / U(nWG, nXU)

with tBase = c_base·nWI + c_fixed, t_op = c_op·nWI, W_op the two-piece curve of
kernelcast.models.poppl_herz.curves, U the fraction of SIMD lanes a work-group fills, and
tTransfer = bytes/bw + latency for each direction. Counts n_op come from the OpenCL source
(kernelcast.frontends.opencl): operations by kind and type (math built-ins as
``call.NAME``), global and __local accesses by direction and class, and barriers. Every
parameter is fitted from the microbenchmarks of the suite kernelcast.suites.poppl_herz;
nXU is given or measured from the work-group benchmark. A counted kind without a
microbenchmark of its own is priced by the nearest measured one of the same type
(CALL_FAMILIES; native_ built-ins by the plain one), or not at all, with an
UncountedWarning: a profile fitted before the built-ins, double precision, __local
accesses and barriers were measured predicts as it did. ``classes=False`` is the slides'
"simple" model: every global access costs what a coalesced one does.

``predict`` gives the kernel's run time (what kernelcast measures and every other model
predicts); ``transfer`` gives the copies, which ``table`` adds for the slides' total.

Public names: PopplHerzModel, OpenCLWorkload, workload_of, CALL_FAMILIES.
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass

import numpy as np

from kernelcast.errors import KernelcastError, ParameterError, ProfileError, UncountedWarning
from kernelcast.models.base import Model, Parameter, register
from kernelcast.models.poppl_herz.curves import (
    EXPONENTS,
    Line,
    Piecewise,
    fit_line,
    fit_piecewise,
    fit_simd_width,
    fit_slope,
    utilization,
)
from kernelcast.suites import poppl_herz as bench

INTEGER = ("int", "uint", "long", "ulong")
_SIZE_T = 2**64

#: nXU, the lanes of one SIMD unit (32 on NVIDIA, 64 on AMD, 16 floats in AVX-512), is at
#: most a GPU's largest work-group.
MOST_SIMD = 1024
#: Seconds: no work-item, operation, access or byte copied costs a second, and no launch
#: or copy waits a second before it starts (the weights of the paper's model have the
#: same bound).
MOST_SECONDS = 1.0
#: W(n) prices n operations in units of one and the benchmarks measure n ≤ 128: a curve
#: coefficient or saturation count beyond a million fits none of them.
MOST_W = 1e6
#: The measured built-in that prices a built-in without a microbenchmark of its own, of
#: the same type (a double built-in is never priced by a float one). A native_ or half_
#: built-in is priced by its own term, else the native_ one of its family, else the plain
#: one of its family: native_cos by native_sin, else sin; native_exp2 by native_exp.
CALL_FAMILIES = {"cos": "sin", "tan": "sin", "sinpi": "sin", "cospi": "sin", "tanpi": "sin",
                 "exp2": "exp", "exp10": "exp", "expm1": "exp",
                 "log2": "log", "log10": "log", "log1p": "log",
                 "fmin": "fmax", "max": "fmax", "min": "fmax",
                 "mad": "fma", "powr": "pow", "pown": "pow", "rootn": "pow"}
FIT_SUITES = {"measurement": "poppl-herz", "measurement-cpu": "poppl-herz-cpu",
              "poppl-herz": "poppl-herz", "poppl-herz-cpu": "poppl-herz-cpu"}


@dataclass(frozen=True)
class OpenCLWorkload:
    """One launch of an OpenCL kernel: its counts (kernelcast.frontends.opencl's
    KernelCounts), work-items, work-items per work-group and bytes copied each way."""

    counts: object
    work_items: int
    group: int
    bytes_in: int = 0
    bytes_out: int = 0


def workload_of(workload, params: dict) -> OpenCLWorkload:
    """An OpenCLWorkload from *workload* (one already, KernelCounts, OpenCL source text, or
    a suite case whose class gives its source) and *params*: ``global_size`` and
    ``local_size`` (sequences of integers), or for a suite case ``n`` (the global size
    along each dimension the kernel uses; default: the case's own) and its group size;
    ``bytes_in``/``bytes_out`` default to one element per work-item of every global array
    read / written. Sizes that are not integers are a ParameterError."""
    from kernelcast.frontends.opencl import TYPE_BYTES, KernelCounts, count_kernel

    if isinstance(workload, OpenCLWorkload):
        return workload
    case = None
    if hasattr(workload, "kclass"):
        case = workload
        if case.class_name == "transfer":  # the suite's timed copies: no kernel runs
            raise KernelcastError(f"{case.name} is a copy between host and device, timed to "
                                  "fit the copies' costs, not a kernel the poppl-herz "
                                  "model predicts")
        if case.kclass.source is None:
            raise KernelcastError(f"{case.name} has no OpenCL source for the poppl-herz "
                                  "model")
        workload = case.kclass.source(case)
    counts = count_kernel(workload) if isinstance(workload, str) else workload
    if not isinstance(counts, KernelCounts):
        raise KernelcastError("the poppl-herz model predicts OpenCL source (its text, its "
                              f"counts or a suite case), not a {type(workload).__name__}")
    if "global_size" in params:
        work_items = math.prod(_sizes(params, "global_size"))
        group = math.prod(_sizes({"local_size": (1,), **params}, "local_size"))
    elif case is not None:
        n = _integer(params.get("n", case.params["n"]), "n")
        work_items = n ** max(counts.work_dims, 1)
        group = math.prod(case.group_size[:max(counts.work_dims, 1)])
    else:
        raise KernelcastError("the poppl-herz model needs the global size (global_size)")
    read = sum(TYPE_BYTES[t] for _, t, pointer, space, _ in counts.arguments
               if pointer and space == "global")
    written = {array for array, space, direction, *_ in counts.access_list
               if space == "global" and direction == "write"}
    out = sum(TYPE_BYTES[t] for name, t, pointer, space, _ in counts.arguments
              if pointer and space == "global" and name in written)
    bytes_in = _integer(params.get("bytes_in", work_items * (read - out)), "bytes_in")
    bytes_out = _integer(params.get("bytes_out", work_items * out), "bytes_out")
    # OpenCL counts work-items and bytes in size_t: 64 bits
    if not 1 <= work_items <= _SIZE_T or not 1 <= group <= _SIZE_T:
        raise ParameterError(f"{counts.name}: a launch of {work_items} work-items in groups "
                             f"of {group} is not one OpenCL can make (1 to 2^64 work-items "
                             "in groups of at least one)")
    for direction, size in (("to", bytes_in), ("from", bytes_out)):
        if not 0 <= size <= _SIZE_T:
            raise ParameterError(f"{counts.name}: a copy of {size} bytes {direction} the "
                                 "device is not one OpenCL can make (0 to 2^64 bytes)")
    return OpenCLWorkload(counts, work_items, group, bytes_in, bytes_out)


def _integer(value, name: str) -> int:
    """*value*, a size, as an int (NumPy's integers too); anything else, a float or text
    that int() would truncate or read among them, is a ParameterError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterError(f"{name} must be an integer, got {value!r:.40}")
    return int(value)


def _sizes(params: dict, name: str) -> list[int]:
    """The integers of ``params[name]``, a global or local size: one per dimension."""
    value = params[name]
    if not isinstance(value, list | tuple) or not value:
        raise ParameterError(f"{name} must be a list of integers, one per dimension, got "
                             f"{value!r:.40}")
    return [_integer(v, name) for v in value]


@register
class PopplHerzModel(Model):
    """Pöppl & Herz's model. *classes*: price global accesses by access class (the
    slides' cache-aware model) or all as coalesced (their simple model). *simd_width*:
    nXU; None measures it from the work-group-size benchmark."""

    name = "poppl-herz"
    summary = "Pöppl & Herz's static model of OpenCL source from microbenchmarks"
    workload = "opencl"

    parameters = (
        Parameter("classes", "boolean", "price global accesses by access class (the "
                  "slides' cache-aware model, the default) or all as coalesced (their "
                  "simple model: --no-classes)"),
        Parameter("simd_width", "optional count", "nXU, the work-items a compute unit runs at "
                  "once (default: measured by the work-group-size benchmark)"),
    )

    def __init__(self, *, classes: bool = True, simd_width: int | None = None):
        self.classes = classes
        self.simd_width = simd_width

    @classmethod
    def fit_suites(cls, suite: str) -> tuple[str, ...]:
        if suite not in FIT_SUITES:
            raise KernelcastError(f"the poppl-herz model is fitted from its own "
                                  f"microbenchmarks, not from the {suite} suite")
        return (FIT_SUITES[suite],)

    # {{{ fitting

    def fit(self, dataset) -> PopplHerzModel:
        by_class: dict[str, list[tuple]] = {}
        for case, seconds in zip(dataset.cases, dataset.seconds, strict=True):
            by_class.setdefault(case.class_name, []).append((case, float(seconds)))
        missing = {"empty", "op", "access", "wgsize", "transfer"} - set(by_class)
        if missing:
            raise KernelcastError(f"the poppl-herz model needs the microbenchmark classes "
                                  f"{sorted(missing)}; measure the poppl-herz suite first")
        suite = dataset.cases[0].suite
        reference = bench.SIZES[suite].reference
        self.transfer_ = {d: fit_line(*zip(*[(c.params["bytes"], t)
                                              for c, t in by_class["transfer"]
                                              if c.variant == d], strict=True))
                          for d in ("to", "from")}
        empty = sorted((c.params["n"], t) for c, t in by_class["empty"])
        self.base_ = fit_line(*zip(*empty, strict=True))
        wg = sorted((c.group_size[0], t / c.params["n"]) for c, t in by_class["wgsize"])
        measured_simd = fit_simd_width(*zip(*wg, strict=True))
        self.simd_width_ = int(self.simd_width or measured_simd)
        self.terms_, report = {}, {"simd_width_measured": measured_simd, "clipped": []}
        first = {f"{k}:{t}" for k, t in bench.OPS}
        ops, accesses, added = [], [], list(by_class.get("barrier", []))
        for row in by_class["op"]:
            (ops if row[0].variant.rsplit(":", 1)[0] in first else added).append(row)
        for row in by_class["access"]:
            (accesses if row[0].variant.startswith("global:") else added).append(row)
        self._fit_ops(ops, reference, report)
        self._fit_accesses(accesses, reference, report)
        self._fit_added(added, reference, report)
        try:
            check_state(self._state())
        except ProfileError as err:
            raise KernelcastError(f"the microbenchmarks of {suite} give no plausible "
                                  f"fit: {err}") from None
        self._set_fitted(dataset, {"criterion": "per-curve least squares on the "
                                   "microbenchmarks (relative)", "solver": [], **report})
        return self

    def _fit_ops(self, rows, reference, report):
        """c_op: the cost of one more operation per work-item between the fewest and the
        most operations, over the swept work-item counts; W(n) = 1 + (t(n) − t(1)) /
        (c_op·nWI) at the reference count (W(1) = 1: t_op prices one operation)."""
        times: dict[str, dict[tuple[int, int], float]] = {}
        for case, t in rows:
            kind, typ, count = case.variant.split(":")
            times.setdefault(f"{kind}:{typ}", {})[int(count), case.params["n"]] = t
        for key, grid in times.items():
            c, curve = self._fit_chain(key, grid, reference, report)
            if key == "convert:float":  # a step converts float -> int -> float
                self.terms_["convert:int"] = (c / 2, curve)
                c = c / 2
            self.terms_[key] = (c, curve)

    @staticmethod
    def _fit_chain(key, grid, reference, report):
        """c and W of the chain *key* from *grid*: {(count, work-items): seconds}."""
        counts = sorted({count for count, n in grid if n == reference})
        low, high = counts[0], counts[-1]
        sweep = sorted(n for count, n in grid if count == high and (low, n) in grid)
        c = fit_slope(sweep, [(grid[high, n] - grid[low, n]) / (high - low)
                              for n in sweep])
        if c <= 0:
            report["clipped"].append(key)
            curve = fit_piecewise(counts, counts)
            c = 0.0
        else:
            curve = fit_piecewise(counts, [
                1 + (grid[n, reference] - grid[low, reference]) / (c * reference)
                for n in counts])
        return c, curve

    def _fit_added(self, rows, reference, report):
        """The terms of the microbenchmarks added to the first suite (benchmarks.ADDED_OPS,
        LOCAL_ACCESSES, barriers), one family at a time in that order, each as an
        operation's (_fit_ops: c from the fewest and the most, W(1) = 1) from its times
        less the price of everything else its source counts (a built-in chain's extra
        add, a barrier's local store) by the terms fitted before. No kernel with none of
        a __local access or barrier is a baseline (a compiler drops a __local array that
        is never read, with its stores and barriers), so they have W(1) = 1 as
        operations do; __local accesses and barriers are timed at the reference size
        only, where c is taken. A family measured at fewer than two counts, or not one of
        those, is left out (reported as unfitted), and one whose fit is out of a
        profile's bounds is clipped to zero."""
        from kernelcast.frontends.opencl import count_kernel

        families: dict[str, list] = {}
        for case, t in rows:
            if case.class_name == "barrier":
                key, count = "barrier", case.variant
            else:
                key, count = case.variant.rsplit(":", 1)
            families.setdefault(key, []).append((case, int(count), t))
        order = [f"{k}:{t}" for k, t in bench.ADDED_OPS]
        order += [":".join(a) for a in bench.LOCAL_ACCESSES] + ["barrier"]
        unknown = sorted(set(families) - set(order))
        if unknown:  # measured by another version of the benchmarks
            report.setdefault("unfitted", []).extend(unknown)
        counted = {}
        for key in sorted(set(families) & set(order), key=order.index):
            grid = {}
            for case, count, t in families[key]:
                if case.variant not in counted:
                    counted[case.variant] = count_kernel(bench.source_of(case))
                n = case.params["n"]
                grid[count, n] = t - self._priced_seconds(counted[case.variant], n, key)
            counts = {count for count, n in grid if n == reference}
            if len(counts) < 2 or (max(counts), reference) not in grid \
                    or (min(counts), reference) not in grid:
                report.setdefault("unfitted", []).append(key)
                continue
            c, curve = self._fit_chain(key, grid, reference, report)
            try:
                _check_term(f"state.terms.{key}", {"c": c, "curve": curve.to_dict()})
            except ProfileError:
                report["clipped"].append(key)
                c, curve = 0.0, fit_piecewise(sorted(counts), sorted(counts))
            self.terms_[key] = (c, curve)

    def _priced_seconds(self, counts, work_items, leave_out: str) -> float:
        """Seconds of what *counts* (KernelCounts) counts but *leave_out*, by the terms
        fitted so far (none for kinds without one), at *work_items*."""
        every = {**counts.ops, **counts.accesses, "barrier": counts.barriers}
        return sum(self._term(self._curve_key(key), n, work_items) or 0.0
                   for key, n in every.items() if key != leave_out and n)

    def _ops_cost(self, counts, work_items) -> float:
        """Seconds of the operations of *counts* (KernelCounts) at *work_items*."""
        return sum(self._term(self._curve_key(key), n, work_items) or 0.0
                   for key, n in counts.ops.items())

    def _fit_accesses(self, rows, reference, report):
        """Δ(k): a benchmark with k accesses less its baseline, the empty kernel for
        stores and the kernel that only stores one constant for loads (less the cost of
        the operations that add the loaded values up); c = Δ(k_max)/(k_max·nWI), W(k) =
        Δ(k)/(c·nWI), so W(0) = 0 and a first access that hides under the base cost is
        free."""
        from kernelcast.frontends.opencl import count_kernel

        times = {case.variant: (case, t) for case, t in rows}
        baseline = {"write": self.base_(reference),
                    "read": times["global:write:coalesced:1"][1]}
        deltas: dict[str, dict[int, float]] = {}
        for variant, (case, t) in times.items():
            space, direction, cls, count = variant.split(":")
            spent = baseline[direction]
            if direction == "read":
                spent += self._ops_cost(count_kernel(bench.source_of(case)), reference)
            deltas.setdefault(f"{space}:{direction}:{cls}", {})[int(count)] = t - spent
        for key, by_count in deltas.items():
            counts = sorted(by_count)
            c = by_count[counts[-1]] / (counts[-1] * reference)
            if c <= 0:
                report["clipped"].append(key)
                self.terms_[key] = (0.0, fit_piecewise(counts, counts))
                continue
            self.terms_[key] = (c, fit_piecewise(counts, [by_count[k] / (c * reference)
                                                          for k in counts]))

    # }}}

    # {{{ prediction

    def _curve_key(self, key: str) -> str | None:
        """The fitted term that prices *key*: itself, its integer family's (int), for a
        math built-in without a term of its own the nearest measured one of the same
        type (CALL_FAMILIES), for an access under the simple model the coalesced one of
        its direction, and for a __local access of any class the coalesced one of its
        direction (only those are measured: bank conflicts are not priced). A key
        without a fitted term is returned as it is, and counts as zero."""
        parts = key.split(":")
        if len(parts) == 3:  # an access: SPACE:DIRECTION:CLASS
            space, direction, cls = parts
            if space == "private":
                return None
            if space == "constant":
                space = "global"
            if not self.classes or space == "local":
                cls = "coalesced"
            return f"{space}:{direction}:{cls}"
        if parts[-1] in INTEGER:
            key = f"{parts[0]}:int"
        if key.startswith("call.") and key not in self.terms_:
            name, typ = key[len("call."):].split(":")
            prefix, plain = "", name
            if name.startswith(("native_", "half_")):
                prefix, plain = name.split("_", 1)
            family = CALL_FAMILIES.get(plain, plain)
            candidates = [f"{prefix}_{family}", f"native_{family}"] if prefix else []
            for candidate in (*candidates, family):
                if f"call.{candidate}:{typ}" in self.terms_:
                    return f"call.{candidate}:{typ}"
        return key

    def _term(self, key: str, count: float, work_items: int) -> float | None:
        """W(count)·c·nWI of the fitted term *key*; None where there is none."""
        if key not in self.terms_:
            return None
        c, curve = self.terms_[key]
        return max(curve(count), 0.0) * c * work_items

    def priced(self, counts) -> dict[str, tuple[str, float]]:
        """The counts of *counts* (KernelCounts) gathered by what prices them: part name
        -> (fitted term, count). Integer types share int's terms; __constant arrays are
        priced as global ones; the simple model gathers a direction's accesses of every
        class into one part priced as coalesced. Private accesses are free; barriers
        (per work-item) are the part "barrier"."""
        gathered: dict[str, list] = {}
        every = {**counts.ops, **counts.accesses, "barrier": counts.barriers}
        for key, n in every.items():
            term = self._curve_key(key)
            if not n or term is None:
                continue
            name = key if self.classes or key.count(":") != 2 else key.rsplit(":", 1)[0]
            entry = gathered.setdefault(name, [term, 0.0])
            entry[1] += n
        return {name: (term, n) for name, (term, n) in gathered.items()}

    def parts(self, workload, params: dict) -> dict[str, float]:
        """Seconds of the base cost and of every counted operation and access (after the
        work-group factor); uncounted kinds are left out with an UncountedWarning."""
        self.check_fitted()
        load = workload_of(workload, params)
        u = utilization(load.group, self.simd_width_)
        parts, missing = {"base": self.base_(load.work_items)}, []
        for name, (term, n) in self.priced(load.counts).items():
            seconds = self._term(term, n, load.work_items)
            if seconds is None:
                missing.append(name)
            elif seconds:
                parts[name] = seconds / u
        for name, seconds in parts.items():
            _finite(seconds, name, load)
        if missing:
            warnings.warn(f"the poppl-herz model has no microbenchmark for "
                          f"{sorted(missing)}; they count as zero", UncountedWarning,
                          stacklevel=3)
        return parts

    def explain(self, workload, params: dict) -> dict[str, float]:
        parts = self.parts(workload, params)
        return dict(sorted(parts.items(), key=lambda kv: -abs(kv[1])))

    def transfer(self, workload, params: dict) -> dict[str, float]:
        """Seconds of the copies to and from the device."""
        self.check_fitted()
        load = workload_of(workload, params)
        copies = {"to": self.transfer_["to"](load.bytes_in) if load.bytes_in else 0.0,
                  "from": self.transfer_["from"](load.bytes_out) if load.bytes_out else 0.0}
        for direction, seconds in copies.items():
            _finite(seconds, f"the copy {direction} the device", load)
        return copies

    def details(self, workload, params: dict) -> dict:
        self.check_fitted()
        load = workload_of(workload, params)
        return {"work_items": load.work_items, "group": load.group,
                "utilization": utilization(load.group, self.simd_width_),
                "simd_width": self.simd_width_}

    def table(self, workload, params: dict) -> list[tuple[str, str, float | None]]:
        """The slides' qualitative table: (cost type, count in kernel, microseconds)."""
        load = workload_of(workload, params)
        parts = self.parts(load, params)
        priced = self.priced(load.counts)
        rows = [(name, f"{priced[name][1]:g}", parts.get(name, 0.0) * 1e6)
                for name in sorted(priced, key=lambda k: -parts.get(k, 0.0))]
        free = {**load.counts.ops, **load.counts.accesses}
        rows += [(key, f"{n:g}", 0.0) for key, n in sorted(free.items())
                 if n and key.startswith("private:")]
        copies = self.transfer(load, params)
        kernel = sum(parts.values())
        _finite(kernel + sum(copies.values()), "the final prediction", load)
        rows += [("base cost", "1", parts["base"] * 1e6),
                 ("work-group size", str(load.group), None),
                 ("work-group factor U", f"{utilization(load.group, self.simd_width_):.3f}",
                  None),
                 ("kernel", "", kernel * 1e6),
                 ("transfer to device", f"{load.bytes_in} B", copies["to"] * 1e6),
                 ("transfer from device", f"{load.bytes_out} B", copies["from"] * 1e6),
                 ("final prediction", "", (kernel + sum(copies.values())) * 1e6)]
        return rows

    def predict_dataset(self, dataset) -> np.ndarray:
        self.check_fitted()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UncountedWarning)
            return np.array([self.seconds(dataset.cases[i], dataset.params(i))
                             for i in range(len(dataset))])

    # }}}

    # {{{ profiles

    def fitted_state(self) -> dict:
        self.check_fitted()
        return self._state()

    def _state(self) -> dict:
        return {"simd_width": self.simd_width_,
                "base": self.base_.to_dict(),
                "transfer": {d: line.to_dict() for d, line in self.transfer_.items()},
                "terms": {key: {"c": c, "curve": curve.to_dict()}
                          for key, (c, curve) in sorted(self.terms_.items())}}

    def restore(self, state: dict) -> None:
        check_state(state)
        self.simd_width_ = state["simd_width"]
        self.base_ = Line(**state["base"])
        self.transfer_ = {d: Line(**state["transfer"][d]) for d in ("to", "from")}
        self.terms_ = {key: (float(entry["c"]), Piecewise(**entry["curve"]))
                       for key, entry in state["terms"].items()}

    # }}}


def _finite(seconds: float, what: str, load: OpenCLWorkload) -> None:
    """Refuse a part of a prediction that is not a finite time of at least zero: on a
    profile within its bounds, only counts or sizes past what a float holds give one."""
    if not 0 <= seconds < math.inf:
        raise KernelcastError(
            f"the poppl-herz model gives {seconds:.4g} s for {what} of "
            f"{getattr(load.counts, 'name', 'the kernel')} at {load.work_items} work-items, "
            "not a finite time: its counts or sizes are beyond what the model's curves hold")


def _number(where: str, value, least: float, most: float, why: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value):
        raise ProfileError(f"{where} is {value!r:.40}, not a finite number")
    if not least <= value <= most:
        raise ProfileError(f"{where} is {value!r}, outside {least:g} to {most:g} ({why})")


def _fields(where: str, value, names: tuple[str, ...]) -> dict:
    if not isinstance(value, dict) or set(value) != set(names):
        have = sorted(value) if isinstance(value, dict) else type(value).__name__
        raise ProfileError(f"{where} is not an object of {', '.join(names)} (has {have})")
    return value


def check_state(state) -> None:
    """Raise a ProfileError naming the first field of a Pöppl–Herz profile's *state* that
    is missing, of the wrong type, not finite or outside what a device could give (the
    bounds above); within them every prediction is a finite time of at least zero."""
    state = _fields("state", state, ("simd_width", "base", "transfer", "terms"))
    simd = state["simd_width"]
    if isinstance(simd, bool) or not isinstance(simd, int) or not 1 <= simd <= MOST_SIMD:
        raise ProfileError(f"state.simd_width is {simd!r:.40}, not an integer from 1 to "
                           f"{MOST_SIMD} (SIMD lanes)")
    lines = {"state.base": state["base"]}
    transfer = _fields("state.transfer", state["transfer"], ("to", "from"))
    lines.update({f"state.transfer.{d}": transfer[d] for d in ("to", "from")})
    for where, line in lines.items():
        line = _fields(where, line, ("slope", "intercept"))
        for name in ("slope", "intercept"):
            _number(f"{where}.{name}", line[name], 0.0, MOST_SECONDS,
                    "seconds per unit and fixed seconds: a cost, under a second")
    terms = state["terms"]
    if not isinstance(terms, dict) or not terms:
        raise ProfileError("state.terms is not an object of fitted terms")
    for key, entry in terms.items():
        _check_term(f"state.terms.{key}", entry)


def _check_term(where: str, entry) -> None:
    """Raise a ProfileError naming the first field of the fitted term *entry* ({"c": ...,
    "curve": ...}) at *where* that is missing or out of its bounds."""
    entry = _fields(where, entry, ("c", "curve"))
    _number(f"{where}.c", entry["c"], 0.0, MOST_SECONDS,
            "seconds per operation and work-item: a cost, under a second")
    curve = _fields(f"{where}.curve", entry["curve"], ("a", "b", "c", "n_sat", "a2", "c2"))
    _number(f"{where}.curve.b", curve["b"], *EXPONENTS,
            "W grows at least as n^0.1 and at most as n²")
    _number(f"{where}.curve.n_sat", curve["n_sat"], 0.0, MOST_W,
            "a measured count of operations, up to a million")
    for name in ("a", "c", "a2", "c2"):
        _number(f"{where}.curve.{name}", curve[name], -MOST_W, MOST_W,
                "W counts operations in units of one, up to a million")
