"""Per-work-item terms overlapping the launch's totals: the extended model's fit.

The paper's model adds every term. On a GPU the chain of dependent operations one
work-item runs (the per-work-item ``item_*`` terms) and the work of the whole launch (every
other term but the launch constant) proceed at the same time: a launch with few
work-items takes as long as its chain, one with many as long as its totals, and one in
between less than the two added. So the extended model predicts

    t = c + (T^q + (L·waves)^q)^(1/q),

c the constant terms (``launch``), T the sum of the total terms and L the sum of the
per-work-item terms, each a weight times a count; q = 1 is the paper's sum and q → ∞ the
larger of the two. The weights are non-negative and fitted in log space from the linear
log fit (kernelcast.fitting.linear).

A work-item's chain is paid once per *wave*: a device runs R work-items at once (the
resident work-items), so a launch of N work-items runs its chains ceil(N / R) times one
after another. R is fitted as the device's compute units (recorded in the store) times
one of *items_per_unit* (a search grid, not a hardware value): the candidate whose fit
has the least geometric mean of relative error over the fitting cases. The launch's
work-items enter as the context value ``work_items``, which has no weight.

Public names: CONSTANT_TERMS, CONTEXT_TERMS, ITEMS_PER_UNIT_GRID, term_group, term_groups,
waves, overlap, OverlapModel.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from kernelcast.errors import KernelcastError
from kernelcast.fitting.linear import (LinearModel, _matrix, fitted_matrix, one_blas_thread,
                                       solver_report)
from kernelcast.metrics import geometric_mean, relative_errors

CONSTANT_TERMS = ("launch",)
CONTEXT_TERMS = ("work_items", "waves", "floor_seconds")
# work-items per compute unit tried for the resident work-items: a search grid of powers
# of two (the fit picks one; docs/results.md shows which per device)
ITEMS_PER_UNIT_GRID = (512, 1024, 2048, 4096)


@functools.lru_cache(maxsize=4096)
def term_group(name: str) -> str:
    """The group of a term: "constant", "item" (per work-item), "context" (no weight) or
    "total"."""
    return ("constant" if name in CONSTANT_TERMS else "context" if name in CONTEXT_TERMS
            else "item" if name.startswith("item_") else "total")


def term_groups(names) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Boolean masks over *names*: constant terms, total terms, per-work-item terms."""
    groups = np.array([term_group(n) for n in names], dtype=object)
    return groups == "constant", groups == "total", groups == "item"


def waves(work_items, resident):
    """ceil(work_items / resident): how many times a launch's work-items run their chains
    one after another; 1 where *resident* is None. A float for a number, else an array."""
    if isinstance(work_items, int | float):  # one prediction: no array overhead
        return 1.0 if resident is None else float(math.ceil(work_items / resident))
    if resident is None:
        return np.ones_like(np.asarray(work_items, dtype=float))
    return np.ceil(np.asarray(work_items, dtype=float) / resident)


def overlap(constant, totals, items, q: float):
    """c + (T^q + L^q)^(1/q), elementwise (numbers or arrays)."""
    return constant + (totals ** q + items ** q) ** (1.0 / q)


class OverlapModel:
    """t ≈ c + (T^q + (L·waves)^q)^(1/q) with non-negative weights, fitted in log space;
    the interface is LinearModel's (``fit`` returns self, ``predict`` checks the features).

    With *resident* the device's resident work-items are given; with *compute_units* they
    are fitted over *items_per_unit*; with neither, or without a ``work_items`` column,
    every launch is one wave. ``resident_items_`` is what the fit used, ``solver_`` the
    outcome of every solver run of the chosen candidate."""

    def __init__(self, q: float = 1.5, log_scale: float = 0.01,
                 compute_units: int | None = None, resident: int | None = None,
                 items_per_unit: tuple[int, ...] = ITEMS_PER_UNIT_GRID):
        if not q >= 1:
            raise KernelcastError(f"the overlap exponent must be at least 1, not {q}")
        if not log_scale > 0:
            raise KernelcastError(f"log_scale must be positive, not {log_scale}")
        for name, value in (("compute_units", compute_units), ("resident", resident)):
            if value is not None and not (isinstance(value, int | np.integer) and value > 0):
                raise KernelcastError(f"{name} must be a positive integer, not {value!r}")
        self.q, self.log_scale = float(q), float(log_scale)
        self.compute_units, self.resident = compute_units, resident
        self.items_per_unit = tuple(items_per_unit)

    def fit(self, X, y, feature_names=None):
        with one_blas_thread():
            return self._fit(X, y, feature_names)

    def _fit(self, X, y, feature_names):
        X, names = _matrix(X, feature_names)
        y = np.asarray(y, dtype=float)
        groups = term_groups(names)
        context = ~(groups[0] | groups[1] | groups[2])
        work_items = _work_items(X, names)
        if work_items is None or self.resident is not None:
            candidates = [None if work_items is None else self.resident]
        else:
            candidates = ([None] if self.compute_units is None else
                          [self.compute_units * k for k in self.items_per_unit])
        best = None
        for resident in candidates:
            A = X.copy()
            if work_items is not None:
                A[:, groups[2]] *= waves(work_items, resident)[:, None]
            A[:, context] = 0.0
            linear = LinearModel(log_scale=self.log_scale).fit(A, y, names)
            solver = list(linear.solver_)
            A = A / y[:, None]
            scale = np.linalg.norm(A, axis=0)
            scale[scale == 0] = 1.0
            w = _overlap_fit(A / scale, linear.coef_ * scale, groups, self.q,
                             self.log_scale, solver) / scale
            constant, total, item = groups
            ratio = overlap(A[:, constant] @ w[constant], A[:, total] @ w[total],
                            A[:, item] @ w[item], self.q)
            error = geometric_mean(relative_errors(ratio, np.ones_like(ratio)))
            if best is None or error < best[0]:
                best = (error, w, resident, solver)
        _error, self.coef_, self.resident_items_, self.solver_ = best
        self.feature_names_in_ = np.array(names, dtype=object)
        self.n_features_in_ = len(names)
        self.negative_weights_ = []
        return self

    def predict(self, X, feature_names=None) -> np.ndarray:
        X = fitted_matrix(self, X, feature_names)
        constant, total, item = term_groups(self.feature_names_in_)
        w = self.coef_
        work_items = _work_items(X, self.feature_names_in_)
        repeat = 1.0 if work_items is None else waves(work_items, self.resident_items_)
        return overlap(X[:, constant] @ w[constant], X[:, total] @ w[total],
                       (X[:, item] @ w[item]) * repeat, self.q)


def _work_items(X, names) -> np.ndarray | None:
    names = list(names)
    return X[:, names.index("work_items")] if "work_items" in names else None


def _overlap_fit(A, start, groups, q, log_scale, solver) -> np.ndarray:
    """Non-negative w minimizing the soft-L1 loss of log(c + (T^q + L^q)^(1/q)) at
    *log_scale*, where c, T and L are A·w over the three groups and A is already divided
    by the measured times. Context columns have no weight: their Jacobian is zero."""
    from scipy.optimize import least_squares

    constant, total, item = groups
    tiny = 1e-300

    def parts(w):
        t, l = A[:, total] @ w[total], A[:, item] @ w[item]
        m = (t ** q + l ** q + tiny) ** (1.0 / q)
        return t, l, m, np.maximum(A[:, constant] @ w[constant] + m, tiny)

    def residuals(w):
        return np.log(parts(w)[3])

    def jacobian(w):
        t, l, m, p = parts(w)
        J = np.zeros_like(A)
        J[:, constant] = A[:, constant]
        J[:, total] = A[:, total] * (m ** (1 - q) * t ** (q - 1))[:, None]
        J[:, item] = A[:, item] * (m ** (1 - q) * l ** (q - 1))[:, None]
        return J / p[:, None]

    start = np.maximum(start, 0.0) + 1e-9  # strictly inside the bounds
    result = least_squares(residuals, start, jac=jacobian, bounds=(0.0, np.inf),
                           method="trf", x_scale="jac", loss="soft_l1", f_scale=log_scale,
                           max_nfev=3000)
    solver_report(solver, result, "overlap least squares")
    w = result.x
    w[(A * w).max(axis=0) < 1e-6] = 0.0  # as in the linear log fit
    return w


def grouped_overlap(constant, sums, q: float):
    """c + (Σ_g S_g^q)^(1/q) over the rows of *sums* (groups × cases, or a vector)."""
    return constant + np.sum(np.asarray(sums, dtype=float) ** q, axis=0) ** (1.0 / q)


def fit_grouped_overlap(X, y, groups, q: float, log_scale: float):
    """Non-negative weights w with t ≈ c + (Σ_g S_g^q)^(1/q), where c is the sum of the
    "constant" columns' weighted values and S_g of group g's, fitted in log space (soft L1
    at *log_scale*) from the linear log fit's weights. The resources a launch uses (DRAM,
    L2, L1, instruction issue, a work-item's chain) each take their own time and overlap:
    q = 1 adds them, q → ∞ keeps the largest (a roofline). Returns (weights, solver
    outcomes)."""
    from scipy.optimize import least_squares

    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    groups = np.asarray(groups, dtype=object)
    names = sorted(set(groups) - {"constant"})
    masks = [groups == g for g in names]
    constant = groups == "constant"
    with one_blas_thread():
        linear = LinearModel(log_scale=log_scale).fit(X, y)
    solver = list(linear.solver_)
    A = X / y[:, None]
    scale = np.linalg.norm(A, axis=0)
    scale[scale == 0] = 1.0
    A = A / scale
    tiny = 1e-300

    def parts(w):
        S = np.array([A[:, m] @ w[m] for m in masks]) + tiny
        M = np.sum(S ** q, axis=0) ** (1.0 / q)
        return S, M, np.maximum(A[:, constant] @ w[constant] + M, tiny)

    def residuals(w):
        return np.log(parts(w)[2])

    def jacobian(w):
        S, M, p = parts(w)
        J = np.zeros_like(A)
        J[:, constant] = A[:, constant]
        for s, m in zip(S, masks, strict=True):
            J[:, m] = A[:, m] * (M ** (1 - q) * s ** (q - 1))[:, None]
        return J / p[:, None]

    start = np.maximum(linear.coef_ * scale, 0.0) + 1e-9
    with one_blas_thread():
        result = least_squares(residuals, start, jac=jacobian, bounds=(0.0, np.inf),
                               method="trf", x_scale="jac", loss="soft_l1",
                               f_scale=log_scale, max_nfev=3000)
    solver_report(solver, result, "grouped overlap least squares")
    w = result.x
    w[(A * w).max(axis=0) < 1e-6] = 0.0
    return w / scale, solver
