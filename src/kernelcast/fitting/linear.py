"""Fitting weights to measured times on matrices: the paper's relative least squares (§4.3)
and its log-space form.

Run time is an inner product of weights and kernel properties. Fitting divides each case's
properties by its measured time and minimizes sum_j (1 - sum_i w_i p_ij / T_j)^2, so every
case counts by its relative error. Columns are scaled to unit norm before solving (the
properties span twelve orders of magnitude), and the solution is the minimum-norm one when
properties are collinear. ``nonnegative=True`` solves the same problem with w >= 0 (NNLS);
the paper's unconstrained fit can give negative weights (its Table 2 has some), which
``negative_weights_`` reports.

``log_scale=s`` (the extended model's; implies non-negative weights) fits the same weights in
log space instead: it minimizes sum_j rho(log(sum_i w_i p_ij / T_j) / s), where rho is
quadratic below 1 and linear above (soft L1) and *s* is the timing noise. Relative least
squares charges over-predicting by a factor f as (f - 1)^2 but under-predicting by the
same factor as (1 - 1/f)^2, so wherever the model cannot fit every case it leans toward
under-predicting; log error is symmetric, and the linear tail keeps the few cases the
properties cannot explain from pulling every weight.
Errors beyond the noise are all misfit, so *s* is the noise and not a tuning knob.

Fits run BLAS on one thread: their matrices (thousands of cases by tens of features) are
too small to gain from more, and on a shared machine several threads made a fit 5–20
times slower. Every solver's outcome is kept in ``solver_`` (method, success, message) and a solver
that did not converge raises a SolverWarning.

Public names: LinearModel, fitted_matrix, solver_report, one_blas_thread.
"""

from __future__ import annotations

import warnings

import numpy as np

from kernelcast.errors import KernelcastError, SolverWarning


class LinearModel:
    """T ≈ X·w fitted by relative least squares, in the manner of a scikit-learn estimator:
    ``fit`` returns self and sets ``coef_``, ``feature_names_in_``, ``n_features_in_`` and
    ``negative_weights_``; ``predict`` refuses an unfitted model and mismatched features."""

    def __init__(self, nonnegative: bool = False, log_scale: float | None = None):
        if log_scale is not None and not log_scale > 0:
            raise KernelcastError(f"log_scale must be positive, not {log_scale}")
        self.nonnegative = nonnegative or log_scale is not None
        self.log_scale = log_scale

    def fit(self, X, y, feature_names=None):
        with one_blas_thread():
            return self._fit(X, y, feature_names)

    def _fit(self, X, y, feature_names):
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
        solver = []
        if self.nonnegative:
            w_scaled = _nnls(A_scaled, np.ones(len(y)), solver)
        else:
            w_scaled, _res, rank, _sv = np.linalg.lstsq(A_scaled, np.ones(len(y)), rcond=None)
            solver.append({"method": "lstsq", "success": True,
                           "message": f"rank {rank} of {A.shape[1]}"})
        if self.log_scale is not None:
            w_scaled = _log_fit(A_scaled, w_scaled, self.log_scale, solver)
        self.solver_ = solver
        self.coef_ = w_scaled / scale
        self.feature_names_in_ = np.array(names, dtype=object)
        self.n_features_in_ = len(names)
        self.negative_weights_ = [n for n, w in zip(names, self.coef_, strict=True) if w < 0]
        return self

    def predict(self, X, feature_names=None) -> np.ndarray:
        return fitted_matrix(self, X, feature_names) @ self.coef_


def fitted_matrix(model, X, feature_names=None) -> np.ndarray:
    """X as an array, once *model* is fitted and X has the features it was fitted on."""
    if not hasattr(model, "coef_"):
        raise KernelcastError(f"this {type(model).__name__} is not fitted yet; call fit first")
    X, names = _matrix(X, feature_names)
    if list(names) != list(model.feature_names_in_):
        raise KernelcastError(
            "feature names differ from those seen in fit: "
            f"got {list(names)}, expected {list(model.feature_names_in_)}")
    return X


def one_blas_thread():
    """A context in which BLAS runs on one thread. scipy's solvers are imported first:
    a BLAS library loaded inside the context would escape the limit (scipy brings its
    own), and the first fit of a process would then differ from the next ones."""
    import scipy.linalg  # noqa: F401
    import scipy.optimize  # noqa: F401
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


def solver_report(solver: list, result, method: str) -> None:
    """Append *result*'s outcome (a scipy OptimizeResult) to *solver*; warn if it failed."""
    entry = {"method": method, "success": bool(result.success),
             "message": str(result.message), "evaluations": int(result.nfev)}
    solver.append(entry)
    if not entry["success"]:
        warnings.warn(f"the {method} solver did not converge: {entry['message']}",
                      SolverWarning, stacklevel=3)


def _nnls(A, b, solver) -> np.ndarray:
    from scipy.optimize import nnls

    try:
        w, _ = nnls(A, b, maxiter=50 * A.shape[1])
    except RuntimeError as err:  # scipy raises when it runs out of iterations
        solver.append({"method": "nnls", "success": False, "message": str(err)})
        raise KernelcastError(f"the non-negative least-squares fit failed: {err}") from None
    solver.append({"method": "nnls", "success": True, "message": "converged"})
    return w


def _log_fit(A, start, scale, solver) -> np.ndarray:
    """Non-negative w minimizing the soft-L1 loss of log(A·w) at *scale*, from *start*."""
    from scipy.optimize import least_squares

    tiny = 1e-300

    def residuals(w):
        return np.log(np.maximum(A @ w, tiny))

    def jacobian(w):
        return A / np.maximum(A @ w, tiny)[:, None]

    start = np.maximum(start, 0.0) + 1e-9  # strictly inside the bounds
    result = least_squares(residuals, start, jac=jacobian, bounds=(0.0, np.inf),
                           method="trf", x_scale="jac", loss="soft_l1", f_scale=scale,
                           max_nfev=2000)
    solver_report(solver, result, "log-space least squares")
    w = result.x
    # the solver stays strictly inside the bounds: a weight that adds less than a
    # millionth to every case is one it would have set to zero
    w[(A * w).max(axis=0) < 1e-6] = 0.0
    return w


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
