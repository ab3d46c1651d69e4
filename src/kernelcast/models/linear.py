"""The paper's linear model, fitted by relative least squares (§4.3).

Run time is an inner product of weights and kernel properties. Fitting divides each case's
properties by its measured time and minimizes sum_j (1 - sum_i w_i p_ij / T_j)^2, so every
case counts by its relative error. Columns are scaled to unit norm before solving (the
properties span twelve orders of magnitude), and the solution is the minimum-norm one when
properties are collinear. ``nonnegative=True`` solves the same problem with w >= 0 (NNLS);
the paper's unconstrained fit can give negative weights (its Table 2 has some), which
``negative_weights_`` reports.

Public names: LinearModel, relative_errors.
"""

from __future__ import annotations

import numpy as np

from kernelcast.errors import KernelcastError


def relative_errors(predicted, measured) -> np.ndarray:
    """|predicted - measured| / measured, elementwise."""
    predicted, measured = np.asarray(predicted, float), np.asarray(measured, float)
    return np.abs(predicted - measured) / measured


class LinearModel:
    """T ≈ X·w fitted by relative least squares, in the manner of a scikit-learn estimator:
    ``fit`` returns self and sets ``coef_``, ``feature_names_in_``, ``n_features_in_`` and
    ``negative_weights_``; ``predict`` refuses an unfitted model and mismatched features."""

    def __init__(self, nonnegative: bool = False):
        self.nonnegative = nonnegative

    def fit(self, X, y, feature_names=None):
        X, names = _matrix(X, feature_names)
        y = np.asarray(y, dtype=float)
        if X.ndim != 2 or len(X) != len(y):
            raise KernelcastError(f"X has {len(X)} rows but y has {len(y)} times")
        if len(y) == 0:
            raise KernelcastError("cannot fit a model to no measurements")
        if not np.all(np.isfinite(y)) or np.any(y <= 0):
            raise KernelcastError("measured times must be positive and finite")
        A = X / y[:, None]
        scale = np.linalg.norm(A, axis=0)
        scale[scale == 0] = 1.0
        A_scaled = A / scale
        if self.nonnegative:
            from scipy.optimize import nnls

            w_scaled, _ = nnls(A_scaled, np.ones(len(y)), maxiter=50 * A.shape[1])
        else:
            w_scaled, *_ = np.linalg.lstsq(A_scaled, np.ones(len(y)), rcond=None)
        self.coef_ = w_scaled / scale
        self.feature_names_in_ = np.array(names, dtype=object)
        self.n_features_in_ = len(names)
        self.negative_weights_ = [n for n, w in zip(names, self.coef_, strict=True) if w < 0]
        return self

    def predict(self, X, feature_names=None) -> np.ndarray:
        if not hasattr(self, "coef_"):
            raise KernelcastError("this LinearModel is not fitted yet; call fit first")
        X, names = _matrix(X, feature_names)
        if list(names) != list(self.feature_names_in_):
            raise KernelcastError(
                "feature names differ from those seen in fit: "
                f"got {list(names)}, expected {list(self.feature_names_in_)}")
        return X @ self.coef_


def _matrix(X, feature_names):
    """(array, names) from a DataFrame (names from its columns) or an array + names."""
    if hasattr(X, "columns"):
        names = [str(c) for c in X.columns]
        X = X.to_numpy(dtype=float)
    else:
        X = np.asarray(X, dtype=float)
        names = list(feature_names) if feature_names is not None else [
            f"x{i}" for i in range(X.shape[1] if X.ndim == 2 else 0)]
    if X.ndim == 2 and len(names) != X.shape[1]:
        raise KernelcastError(f"{len(names)} feature names for {X.shape[1]} columns")
    return X, names
