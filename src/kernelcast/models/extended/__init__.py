"""The extended model: the paper's properties plus data volume, bank conflicts and
per-work-item terms (kernelcast.models.extended.features), with the per-work-item terms
overlapping the totals and repeating per wave of resident work-items
(kernelcast.fitting.overlap). Fitted from the measurement suite together with the
extension suite (kernelcast.suites.extension), whose kernels exercise these behaviours,
with non-negative weights in log space at the dataset's timing noise.

Public names: ExtendedModel, OVERLAP_Q.
"""

from __future__ import annotations

import math

from kernelcast.errors import KernelcastError, UsageError
from kernelcast.fitting.overlap import (
    ITEMS_PER_UNIT_GRID,
    OverlapModel,
    overlap,
    term_group,
    waves,
)
from kernelcast.metrics import geometric_mean, relative_errors
from kernelcast.models.base import WeightedModel, register
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

    def __init__(self, *, q: float = OVERLAP_Q,
                 items_per_unit: tuple[int, ...] = ITEMS_PER_UNIT_GRID):
        if isinstance(q, bool) or not isinstance(q, (int, float)) or not 1 <= q <= MAX_Q:
            raise UsageError(f"the overlap exponent q must be a number of at least 1 and at "
                             f"most {MAX_Q} (beyond it, t**q of a time in seconds "
                             f"underflows), got {q!r}")
        self.q = q
        self.items_per_unit = tuple(items_per_unit)

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
        self._check_q()
        X = self.design_matrix(dataset)
        y = dataset.seconds
        units = dataset.identity.get("compute_units")
        fit = OverlapModel(self.q, dataset.noise, units,
                           items_per_unit=self.items_per_unit).fit(X, y)
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

    def check_before_measuring(self, device: str) -> None:
        self._check_q()

    def _check_q(self) -> None:
        q = self.q
        if isinstance(q, bool) or not isinstance(q, int | float) or not math.isfinite(q) \
                or q < 1:
            raise KernelcastError(f"q {q!r} is not an overlap exponent of at least 1")

    def restore(self, state: dict) -> None:
        self._check_q()
        super().restore(state)
        resident = state.get("resident_items")
        if resident is not None and (isinstance(resident, bool)
                                     or not isinstance(resident, int) or resident < 1):
            raise KernelcastError(f"resident_items {resident!r} is not a positive integer")
        self.resident_items_ = resident
