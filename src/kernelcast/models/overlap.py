"""kernelcast's overlap of one work-item's chain with the launch's totals.

The paper's model adds every term. On a GPU the chain of dependent operations one work-item
runs (kernelcast's per-work-item ``item_*`` terms) and the work of the whole launch (every
other term but the launch constant) proceed at the same time: a launch with few
work-items takes as long as its chain, one with many as long as its totals, and one in
between less than the two added. So kernelcast predicts

    t = c + (T^q + L^q)^(1/q),

c the constant terms (``launch``), T the sum of the total terms and L the sum of the
per-work-item terms, each a weight times a count as before; q = 1 is the paper's sum and
q → ∞ the larger of the two. The weights are fitted in log space as the linear model's
are (kernelcast.models.linear), from the linear fit.

q is not fitted per device. Of q = 1 (the sum), 1.25, 1.5, 1.75, 2, 3 and 4,
leave-one-class-out cross-validation on the fitting suites, averaged over both GPUs and
both backends, was lowest at 1.5 (30.0%, against 30.7% for the sum; 1.25 and 1.75 within
0.2 points), and it also cut the validation kernels' error (docs/results.md).

Public names: OVERLAP_Q, CONSTANT_TERMS, term_group, term_groups, overlap, OverlapModel.
"""

from __future__ import annotations

import numpy as np

from kernelcast.errors import KernelcastError
from kernelcast.models.linear import LinearModel, _matrix, fitted_matrix

OVERLAP_Q = 1.5
CONSTANT_TERMS = ("launch",)


def term_group(name: str) -> str:
    """The group of a term: "constant", "item" (per work-item) or "total"."""
    return ("constant" if name in CONSTANT_TERMS else "item" if name.startswith("item_")
            else "total")


def term_groups(names) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Boolean masks over *names*: constant terms, total terms, per-work-item terms."""
    groups = np.array([term_group(n) for n in names], dtype=object)
    return groups == "constant", groups == "total", groups == "item"


def overlap(constant, totals, items, q: float):
    """c + (T^q + L^q)^(1/q), elementwise."""
    return constant + (np.power(totals, q) + np.power(items, q)) ** (1.0 / q)


class OverlapModel:
    """t ≈ c + (T^q + L^q)^(1/q) with non-negative weights, fitted in log space; the
    interface is LinearModel's (``fit`` returns self, ``predict`` checks the features)."""

    def __init__(self, q: float = OVERLAP_Q, log_scale: float = 0.01):
        if not q >= 1:
            raise KernelcastError(f"the overlap exponent must be at least 1, not {q}")
        if not log_scale > 0:
            raise KernelcastError(f"log_scale must be positive, not {log_scale}")
        self.q, self.log_scale = float(q), float(log_scale)

    def fit(self, X, y, feature_names=None):
        linear = LinearModel(log_scale=self.log_scale).fit(X, y, feature_names)
        X, names = _matrix(X, feature_names)
        y = np.asarray(y, dtype=float)
        A = X / y[:, None]
        scale = np.linalg.norm(A, axis=0)
        scale[scale == 0] = 1.0
        w = _overlap_fit(A / scale, linear.coef_ * scale, term_groups(names), self.q,
                         self.log_scale)
        self.coef_ = w / scale
        self.feature_names_in_ = np.array(names, dtype=object)
        self.n_features_in_ = len(names)
        self.negative_weights_ = []
        return self

    def predict(self, X, feature_names=None) -> np.ndarray:
        X = fitted_matrix(self, X, feature_names)
        constant, total, item = term_groups(self.feature_names_in_)
        w = self.coef_
        return overlap(X[:, constant] @ w[constant], X[:, total] @ w[total],
                       X[:, item] @ w[item], self.q)


def _overlap_fit(A, start, groups, q, log_scale) -> np.ndarray:
    """Non-negative w minimizing the soft-L1 loss of log(c + (T^q + L^q)^(1/q)) at
    *log_scale*, where c, T and L are A·w over the three groups and A is already divided
    by the measured times."""
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
        J = np.empty_like(A)
        J[:, constant] = A[:, constant]
        J[:, total] = A[:, total] * (m ** (1 - q) * t ** (q - 1))[:, None]
        J[:, item] = A[:, item] * (m ** (1 - q) * l ** (q - 1))[:, None]
        return J / p[:, None]

    start = np.maximum(start, 0.0) + 1e-9  # strictly inside the bounds
    result = least_squares(residuals, start, jac=jacobian, bounds=(0.0, np.inf),
                           method="trf", x_scale="jac", loss="soft_l1", f_scale=log_scale,
                           max_nfev=3000)
    w = result.x
    w[(A * w).max(axis=0) < 1e-6] = 0.0  # as in the linear log fit
    return w
