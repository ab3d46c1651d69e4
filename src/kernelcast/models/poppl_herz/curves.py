"""The curves of the Pöppl–Herz model and their fits: straight lines for copies, the base
cost and t_op; the two-piece W curve (a·n^b + c up to the saturation count, a'·n + c'
beyond); the work-group factor U. Pure functions of arrays, deterministic.

Public names: Line, Piecewise, EXPONENTS, fit_line, fit_slope, fit_piecewise, utilization,
fit_simd_width.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class Line:
    """y = slope·x + intercept."""

    slope: float
    intercept: float

    def __call__(self, x: float) -> float:
        return self.slope * x + self.intercept

    def to_dict(self) -> dict:
        return asdict(self)


def fit_line(x, y) -> Line:
    """Least squares relative to y (times span decades): minimizes Σ((fit − y)/y)². Slope
    and intercept are costs (per unit, and fixed), so neither is negative: where the free
    fit has one below zero, the fit is redone with both held at zero or above."""
    from scipy.optimize import nnls

    x, y = np.asarray(x, float), np.asarray(y, float)
    w = 1.0 / np.abs(y)
    A = np.stack([x * w, w], axis=1)
    (slope, intercept), *_ = np.linalg.lstsq(A, y * w, rcond=None)
    if slope < 0 or intercept < 0:
        (slope, intercept), _ = nnls(A, y * w)
    return Line(float(slope), float(intercept))


def fit_slope(x, y) -> float:
    """c of y = c·x, least squares relative to x·c (each point weighs alike)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    return float(np.mean(y / x))


#: The exponent b of W's power law: W grows at least as n^0.1 and at most as n².
EXPONENTS = (0.1, 2.0)


@dataclass(frozen=True)
class Piecewise:
    """W(n) = a·n^b + c for n ≤ n_sat, a2·n + c2 above; W(0) = 0."""

    a: float
    b: float
    c: float
    n_sat: float
    a2: float
    c2: float

    def __call__(self, n: float) -> float:
        if n <= 0:
            return 0.0
        try:
            if n <= self.n_sat:
                return self.a * n ** self.b + self.c
            return self.a2 * n + self.c2
        except OverflowError:  # a count too large for a float
            return math.inf

    def to_dict(self) -> dict:
        return asdict(self)


def _power_fit(n, w):
    """a, b, c of a·n^b + c, least squares relative to max(w, 1)."""
    from scipy.optimize import least_squares

    scale = np.maximum(np.abs(w), 1.0)
    if len(n) < 3:  # too few points for three parameters: a·n
        a = float(np.sum(n * w / scale**2) / np.sum(n * n / scale**2))
        return a, 1.0, 0.0, float(np.sum(((a * n - w) / scale) ** 2))
    result = least_squares(lambda p: (p[0] * n ** p[1] + p[2] - w) / scale,
                           x0=[1.0, 1.0, 0.0],
                           bounds=([0.0, EXPONENTS[0], -np.inf], [np.inf, EXPONENTS[1], np.inf]),
                           method="trf", x_scale="jac")
    a, b, c = (float(v) for v in result.x)
    return a, b, c, float(np.sum(result.fun ** 2))


def _line_fit(n, w):
    scale = np.maximum(np.abs(w), 1.0)
    A = np.stack([n / scale, 1.0 / scale], axis=1)
    (a2, c2), *_ = np.linalg.lstsq(A, w / scale, rcond=None)
    return float(a2), float(c2), float(np.sum(((a2 * n + c2 - w) / scale) ** 2))


def fit_piecewise(n, w) -> Piecewise:
    """The two-piece curve through the points (n, w), n ≥ 1: every measured count is tried
    as the saturation point (at least three points below it and two above, or none
    above), and the one with the least squared relative misfit is kept."""
    order = np.argsort(n, kind="stable")
    n, w = np.asarray(n, float)[order], np.asarray(w, float)[order]
    a, b, c, err = _power_fit(n, w)
    slope = float(a * b * n[-1] ** (b - 1))  # beyond the last count: the tangent there
    best = (err, Piecewise(a, b, c, float(n[-1]), slope,
                           float(a * n[-1] ** b + c - slope * n[-1])))
    for k in range(3, len(n) - 1):
        a, b, c, err1 = _power_fit(n[:k], w[:k])
        a2, c2, err2 = _line_fit(n[k:], w[k:])
        if err1 + err2 < best[0]:
            best = (err1 + err2, Piecewise(a, b, c, float(n[k - 1]), a2, c2))
    return best[1]


def utilization(group: int, simd: int) -> float:
    """U(nWG, nXU) of the slides: the fraction of the SIMD lanes a work-group keeps busy,
    (nWG/nXU) / ⌈nWG/nXU⌉."""
    return (group / simd) / math.ceil(group / simd)


def fit_simd_width(groups, seconds, candidates=(1, 2, 4, 8, 16, 32, 64)) -> int:
    """The nXU that best explains run times at work-group sizes *groups* (the same work
    at every size) as K/U(group, nXU): each candidate's K is the least-squares one (in
    logarithms), and the candidate with the least misfit wins; ties go to the smaller."""
    groups, seconds = np.asarray(groups, float), np.asarray(seconds, float)
    best = None
    for simd in candidates:
        u = np.array([utilization(g, simd) for g in groups])
        resid = np.log(seconds) + np.log(u)
        err = float(np.sum((resid - resid.mean()) ** 2))
        if best is None or err < best[0] * (1 - 1e-9):
            best = (err, simd)
    return best[1]
