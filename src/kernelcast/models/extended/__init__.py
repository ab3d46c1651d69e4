"""The extended model: the paper's properties plus data volume, bank conflicts and
per-work-item terms (kernelcast.models.extended.features), with the per-work-item terms
overlapping the totals and repeating per wave of resident work-items
(kernelcast.fitting.overlap). Fitted from the measurement suite together with the
extension suite (kernelcast.suites.extension), whose kernels exercise these behaviours,
with non-negative weights in log space at the dataset's timing noise.

``FactsModel`` (``facts``) is the same model on the hardware facts
(kernelcast.models.extended.facts).

Public names: ExtendedModel, FactsModel, OVERLAP_Q, SUMMARIES, peak_check, loopy_kernel,
launch_name.
"""

from __future__ import annotations

import functools
import time

import numpy as np

from kernelcast.errors import KernelcastError
from kernelcast.fitting.overlap import (
    ITEMS_PER_UNIT_GRID,
    OverlapModel,
    fit_grouped_overlap,
    grouped_overlap,
    overlap,
    term_group,
    waves,
)
from kernelcast.metrics import geometric_mean, relative_errors
from kernelcast.models.base import Parameter, WeightedModel, register
from kernelcast.models.extended.facts import (
    COUNTERS,
    FACTS_UNITS,
    SummaryCache,
    facts_features,
    peaks,
    resource_of,
)
from kernelcast.models.extended.features import FEATURE_UNITS, features

MAX_Q = 16  # (1e-6 s)**16 = 1e-96: far from underflow for any kernel's time
# the q of lowest mean leave-one-class-out cross-validated error on the fitting suites of
# both GPUs and both backends, of 1, 1.25, 1.5, 1.75, 2, 3, 4 and 6
# (benchmarks/overlap_exponent.py, data/cv/, docs/results.md)
OVERLAP_Q = 3.0


@register
class ExtendedModel(WeightedModel):
    """The extended model. *q* is the overlap exponent (1 adds the per-work-item terms to
    the totals as the paper's model does); *items_per_unit* the grid over which the
    device's resident work-items per compute unit are fitted."""

    name = "extended"
    summary = ("the paper's properties plus data volume, bank conflicts and "
               "per-work-item terms overlapping the totals (GPUs)")

    parameters = (
        Parameter("q", "number", "the overlap exponent: 1 adds the per-work-item terms to "
                  f"the totals, as the paper does (default {OVERLAP_Q:g}; beyond {MAX_Q}, "
                  "t**q of a time in seconds underflows)", metavar="Q", low=1, high=MAX_Q),
        Parameter("items_per_unit", "sizes", "the grid of resident work-items per compute "
                  "unit the device's value is fitted over"),
    )

    format_1_names = ("extended", "kernelcast")  # kernelcast 0.1 named it after itself

    @classmethod
    def from_format_1(cls, doc: dict) -> tuple[dict, dict]:
        """Format 1 kept the exponent q as "overlap" (default 1: the paper's sum)."""
        q = doc.get("overlap", 1.0)
        if cls.parameters[0].problem(q):
            raise KernelcastError(f"overlap {q!r} is not an exponent of at least 1 and at "
                                  f"most {MAX_Q}")
        return {"q": float(q)}, {"weights": doc.get("weights"),
                                 "resident_items": doc.get("resident_items")}

    def __init__(self, *, q: float = OVERLAP_Q,
                 items_per_unit: tuple[int, ...] = ITEMS_PER_UNIT_GRID):
        self.q = q
        self.items_per_unit = items_per_unit

    @classmethod
    def fit_suites(cls, suite: str) -> tuple[str, ...]:
        if suite != "measurement":
            raise KernelcastError(f"the extended model is fitted from the measurement and "
                                  f"extension suites at GPU sizes, not from {suite!r}; use "
                                  "--model paper")
        return ("measurement", "extension")

    def features(self, props, params: dict) -> dict[str, float]:
        return features(props, params)

    def feature_units(self) -> dict[str, str]:
        return dict(FEATURE_UNITS)

    def combine(self, parts, values):
        """Per-work-item terms count once per wave; where they and the totals overlap,
        each of their parts is scaled by the same factor, so they keep their
        proportions."""
        repeat = waves(float(values.get("work_items", 1.0)), self.resident_items_)
        sums = {"constant": 0.0, "item": 0.0, "total": 0.0}
        for name in parts:
            group = term_group(name)
            if group == "item":
                parts[name] *= repeat
            sums[group] += parts[name]
        items, totals = sums["item"], sums["total"]
        if self.q != 1 and items > 0 and totals > 0:
            factor = overlap(0.0, totals, items, self.q) / (totals + items)
            parts = {k: v if term_group(k) == "constant" else v * factor
                     for k, v in parts.items()}
        return parts

    def fit(self, dataset) -> ExtendedModel:
        X = self.design_matrix(dataset)
        y = dataset.seconds
        units = dataset.identity.get("compute_units")
        fit = OverlapModel(self.q, dataset.noise, units,
                           items_per_unit=tuple(self.items_per_unit)).fit(X, y)
        self.weights_ = {n: float(w) for n, w in zip(X.columns, fit.coef_, strict=True)
                         if term_group(n) != "context"}
        self.resident_items_ = (None if fit.resident_items_ is None
                                else int(fit.resident_items_))
        errors = relative_errors(fit.predict(X), y)
        self._set_fitted(dataset, {
            "criterion": (f"log error, soft L1 at the timing noise {dataset.noise:.2%}; "
                          f"per-work-item terms and totals overlap, q = {self.q}"
                          + ("" if self.resident_items_ is None else
                             f", in waves of {self.resident_items_} work-items")),
            "negative_weights": [], "solver": fit.solver_,
            "training_geomean_rel_error": geometric_mean(errors),
            "training_max_rel_error": float(errors.max())})
        return self

    def fitted_state(self) -> dict:
        return {**super().fitted_state(), "resident_items": self.resident_items_}

    def restore(self, state: dict) -> None:
        super().restore(state)
        resident = state.get("resident_items")
        if resident is not None and (isinstance(resident, bool)
                                     or not isinstance(resident, int) or resident < 1):
            raise KernelcastError(f"resident_items {resident!r} is not a positive integer")
        self.resident_items_ = resident


@register
class FactsModel(ExtendedModel):
    """The extended model on the hardware facts (kernelcast.models.extended.facts): the
    same overlap of launch totals and per-work-item chains, with totals from the predicted
    DRAM, L2, L1 and shared-memory traffic and SASS instructions by pipe, and the waves of
    resident work-groups from the compiler's registers and shared memory (not fitted). A
    prediction is never below the launch's floor at the device's measured peaks. It
    predicts from a Loopy kernel (it compiles it) on an NVIDIA GPU with a packaged hardware
    description."""

    name = "facts"
    needs_kernel = True  # predicts from the Loopy kernel, not from its properties
    summary = ("the extended model on the hardware facts: predicted DRAM, L2, L1 and "
               "shared traffic, SASS instructions by pipe and occupancy (NVIDIA GPUs)")

    parameters = ExtendedModel.parameters[:1]
    format_1_names = ()

    def __init__(self, *, q: float = OVERLAP_Q):
        super().__init__(q=q, items_per_unit=ITEMS_PER_UNIT_GRID)

    def get_params(self) -> dict:
        return {"q": self.q}

    def feature_units(self) -> dict[str, str]:
        return {**super().feature_units(), **FACTS_UNITS}

    def features(self, props, params: dict) -> dict[str, float]:
        raise KernelcastError("the facts model predicts from a Loopy kernel, which it "
                              "compiles, not from properties alone")

    def _hardware(self, device: str | None = None):
        from kernelcast.hardware import hardware_for_device, load_hardware

        if device is None:
            self.check_fitted()
            return load_hardware(self.hardware_)
        try:
            return hardware_for_device(device)
        except KernelcastError:
            raise KernelcastError(f"the facts model describes NVIDIA GPUs with a packaged "
                                  f"hardware description; there is none for {device}") \
                from None

    def kernel_features(self, knl, params: dict, hardware=None, *, name: str | None = None,
                        props=None) -> dict[str, float]:
        """The features of one launch of the Loopy kernel *knl* at *params* (its
        properties, for the per-work-item chains, through the on-disk cache)."""
        from kernelcast.properties import cached_properties

        hw = hardware or self._hardware()
        summary = SUMMARIES.summary(name or launch_name(knl), lambda: knl, params, hw)
        return facts_features(summary, props or cached_properties(knl), params, hw)

    def _case_features(self, dataset, i: int, hw) -> dict[str, float]:
        case = dataset.cases[i]
        params = dataset.params(i)
        key = (f"{case.suite}:{case.name}", tuple(sorted(params.items())), hw.name)
        if key not in _CASE_FEATURES:  # a cross-validation asks for each case many times
            summary = SUMMARIES.summary(key[0], case.kernel, params, hw)
            _CASE_FEATURES[key] = facts_features(summary, dataset.properties(i), params, hw)
        return dict(_CASE_FEATURES[key])

    def case_values(self, dataset, i: int) -> dict[str, float]:
        """Case *i*'s features on the fitted model's hardware (while fitting: the
        dataset's device's)."""
        fitted = hasattr(self, "hardware_")
        hw = _hardware_of(self.hardware_ if fitted else dataset.identity["device"], fitted)
        return self._case_features(dataset, i, hw)

    def combine(self, parts, values):
        """A work-item's chain counts once per wave; the resources' times overlap, each
        part scaled by the same factor so that they keep their proportions; a launch
        below its floor gets the difference as the part ``floor``."""
        repeat = float(values.get("waves", 1.0))
        sums: dict[str, float] = {}
        for name in parts:
            resource = resource_of(name)
            if resource == "chain":
                parts[name] *= repeat
            if resource != "constant":
                sums[resource] = sums.get(resource, 0.0) + parts[name]
        added = sum(sums.values())
        if added > 0:
            factor = grouped_overlap(0.0, list(sums.values()), self.q) / added
            parts = {k: v if resource_of(k) == "constant" else v * factor
                     for k, v in parts.items()}
        below = values.get("floor_seconds", 0.0) - sum(parts.values())
        if below > 0:  # the launch's own traffic at the measured peaks takes longer
            parts["floor"] = below
        return parts

    def _compute_summaries(self, dataset, hw) -> None:
        """The summaries of *dataset*'s launches that SUMMARIES lacks (a fraction of a
        second each: the compiler and the cache model), saying how far it got on
        ``progress`` every 50."""
        missing = []
        for i, case in enumerate(dataset.cases):
            name, params = f"{case.suite}:{case.name}", dataset.params(i)
            if SummaryCache.key(name, params, hw.name) not in SUMMARIES.entries:
                missing.append((name, case, params))
        started = time.monotonic()
        for k, (name, case, params) in enumerate(missing, 1):
            SUMMARIES.summary(name, case.kernel, params, hw)
            if self.progress is not None and (k % 50 == 0 or k == len(missing)):
                elapsed = time.monotonic() - started
                print(f"hardware facts of {k}/{len(missing)} launches, {elapsed:.0f} s, "
                      f"~{elapsed / k * (len(missing) - k):.0f} s left", file=self.progress,
                      flush=True)

    def fit(self, dataset) -> FactsModel:
        hw = self._hardware(dataset.identity["device"])
        self._compute_summaries(dataset, hw)
        X = self.design_matrix(dataset)
        y = dataset.seconds
        A = X[[c for c in X.columns if term_group(c) != "context"]].copy()
        items = [c for c in A.columns if resource_of(c) == "chain"]
        A[items] = A[items].mul(X["waves"], axis=0)
        coef, solver = fit_grouped_overlap(A.to_numpy(), y,
                                           [resource_of(c) for c in A.columns], self.q,
                                           dataset.noise)
        self.weights_ = {n: float(w) for n, w in zip(A.columns, coef, strict=True)}
        self.hardware_ = _hardware_name(hw)
        self.resident_items_ = None
        self._set_fitted(dataset, {})
        predicted = np.array([sum(self.contributions(row).values())
                              for row in X.to_dict("records")])
        errors = relative_errors(predicted, y)
        self.fit_report_.update({
            "criterion": (f"log error, soft L1 at the timing noise {dataset.noise:.2%}; "
                          "the times of DRAM, L2, L1, instruction issue and a "
                          "work-item's chain (once per wave of resident work-groups) "
                          f"overlap, q = {self.q}; no prediction below the floor at the "
                          "measured peaks"),
            "negative_weights": [], "solver": solver,
            "hardware": self.hardware_,
            "peaks": peak_check(self.weights_, hw),
            "floor_binding": int(sum(row["floor_seconds"] > 0 and p <= row["floor_seconds"]
                                     * (1 + 1e-12) for row, p in
                                     zip(X.to_dict("records"), predicted))),
            "training_geomean_rel_error": geometric_mean(errors),
            "training_max_rel_error": float(errors.max())})
        return self

    def values(self, workload, params: dict) -> dict[str, float]:
        self.check_fitted()
        return self.kernel_features(loopy_kernel(workload), params)

    def counter_of(self, name: str) -> str | None:
        if name.startswith("item_"):
            return "(a work-item's count, from the kernel's properties)"
        if name == "floor":
            return COUNTERS["floor_seconds"]
        return COUNTERS.get(name)

    def check_before_measuring(self, device: str) -> None:
        super().check_before_measuring(device)
        peaks(self._hardware(device))

    def fitted_state(self) -> dict:
        return {**super().fitted_state(), "hardware": self.hardware_}

    def restore(self, state: dict) -> None:
        from kernelcast.hardware import known_hardware

        super().restore(state)
        hardware = state.get("hardware")
        if hardware not in known_hardware():
            raise KernelcastError(f"hardware {hardware!r} is not a packaged hardware "
                                  f"description ({', '.join(known_hardware())})")
        self.hardware_ = hardware


def peak_check(weights: dict, hw) -> dict:
    """Per physical throughput the fitted rate (one over its weight) against the device's
    peak (kernelcast.models.extended.facts.peaks): DRAM bytes per second against the DRAM
    bandwidth, warp instructions per second against the issue rate. A rate above its peak
    is not physical: the term then stands for work the other resources do too."""
    peak = peaks(hw)
    out = {}
    for name, resource, unit in (("dram_bytes_read", "dram", "bytes/s"),
                                 ("dram_bytes_written", "dram", "bytes/s"),
                                 ("inst_fp32", "issue", "warp instructions/s"),
                                 ("inst_other", "issue", "warp instructions/s")):
        w = weights.get(name)
        if w:
            out[name] = {"fitted": 1.0 / w, "peak": peak[resource], "unit": unit,
                         "physical": 1.0 / w <= peak[resource]}
    return out


@functools.lru_cache(maxsize=16)
def _hardware_of(name: str, packaged: bool):
    """The Hardware of a packaged name (*packaged*) or of a device's name, read once."""
    from kernelcast.hardware import load_hardware

    return load_hardware(name) if packaged else FactsModel()._hardware(name)


def _hardware_name(hw) -> str:
    from kernelcast.hardware import known_hardware, load_hardware

    for name in known_hardware():
        if load_hardware(name).name == hw.name:
            return name
    raise KernelcastError(f"no packaged hardware description for {hw.name}")


def launch_name(knl) -> str:
    """The name a Loopy kernel's launch summaries are kept under (``SUMMARIES``): a hash
    of its CUDA code and launch geometry. A dataset's cases are kept under their suite
    and name instead."""
    import hashlib

    from kernelcast.measure.codegen import generate

    generated = generate(knl, "cuda")
    launch = repr((generated.code, generated.grid, generated.block))
    return "code:" + hashlib.sha256(launch.encode()).hexdigest()[:20]


def loopy_kernel(workload, model: str = "facts"):
    """*workload* where it is a Loopy kernel, which the models on the hardware facts
    compile; a one-line KernelcastError naming *model* for anything else."""
    import loopy as lp

    from kernelcast.properties import Properties

    if isinstance(workload, Properties):
        raise KernelcastError(f"the {model} model predicts from a Loopy kernel, which it "
                              "compiles, not from its properties")
    if not isinstance(workload, lp.TranslationUnit | lp.LoopKernel):
        raise KernelcastError(f"the {model} model predicts a Loopy kernel, not "
                              f"{type(workload).__name__} {str(workload)[:60]!r}")
    return workload


SUMMARIES = SummaryCache()
_CASE_FEATURES: dict = {}
