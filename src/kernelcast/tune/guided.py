"""Model-guided search with feedback: measure a kernel's variants in small batches in a
model's order, and after each batch correct the model with what was measured.

A model ranks variants it has never seen run; its errors are not random but shared by
similar variants (a model blind to bank conflicts is wrong on every padded tile alike).
So after each batch the search fits a Gaussian process (scikit-learn's) to the
log-ratios of measured to predicted time, over the variants' parameters and the model's
own prediction: the corrected prediction of a variant is the model's times the learnt
ratio, and the process says how sure that is. The next batch is the unmeasured variants
of greatest expected improvement over the best measured (in log time), which is the
model's order at first and leans on the measurements as they come.

The search stops at its budget (a number of measurements, every measurement counted, the
resumed and failed ones included) or once no unmeasured variant is predicted to beat the
best measured by more than the noise: its corrected prediction less one standard
deviation is not below the best measured time times (1 - noise).

``search`` runs it against a callback that measures a batch; ``replay`` runs it against
the times of a space measured exhaustively (to judge it, kernelcast.tune.methodology).
Both are deterministic: the same candidates and measurements give the same order.

Public names: Candidate, Settings, SETTINGS, STOPS, search, replay, features.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Candidate:
    """One variant: its key (kernelcast.tune.space.variant_key), parameters and the
    model's predicted seconds."""

    key: str
    variant: Mapping
    predicted_s: float


@dataclass(frozen=True)
class Settings:
    """How the search runs: variants measured per batch, and the measurements after
    which no more are spent (None: until the space is measured or nothing is
    predicted to beat the best)."""

    batch: int = 1
    budget: int | None = 20


#: Why a search stops: its budget of measurements or of time is spent, every variant is
#: measured, or no unmeasured variant is predicted to beat the best by more than noise.
STOPS = ("budget", "time", "space measured", "nothing predicted faster")

#: The one configuration kernelcast uses, chosen on the training corpus
#: (kernelcast.tune.corpus), never on the families it is judged on: batches of 1, 2 and
#: 4 needed 3.0, 4.0 and 3.2 measurements (geometric mean over its nine kernels) to
#: reach within 5% of the best with the Hong–Kim model, 4.9, 5.2 and 5.9 with the
#: extended one (benchmarks/guided_search.py choose).
SETTINGS = Settings()


def features(candidates: Sequence[Candidate]) -> np.ndarray:
    """One row per candidate: each parameter that varies (log2 of integers, booleans as
    0/1) and the log of the model's prediction, each scaled to unit spread."""
    names = sorted({name for c in candidates for name in c.variant})
    columns = [[_number(c.variant.get(name, 0)) for c in candidates] for name in names]
    columns.append(list(_logs(candidates)))
    x = np.array(columns, dtype=float).T
    spread = x.std(axis=0)
    keep = spread > 0
    return (x[:, keep] - x[:, keep].mean(axis=0)) / spread[keep]


def _logs(candidates: Sequence[Candidate]) -> np.ndarray:
    """The log of each prediction; one not above zero (a fitted linear model can give
    one) counts as the smallest positive prediction, the model's "fastest"."""
    predicted = np.array([c.predicted_s for c in candidates], dtype=float)
    positive = predicted[np.isfinite(predicted) & (predicted > 0)]
    floor = positive.min() if len(positive) else 1.0
    return np.log(np.where(np.isfinite(predicted) & (predicted > 0), predicted, floor))


def _number(value) -> float:
    if isinstance(value, bool):
        return float(value)
    return math.log2(1 + value) if isinstance(value, int | float) and value >= 0 else 0.0


def _correction(x: np.ndarray, measured: list[int], residuals: list[float]):
    """(mean, standard deviation) of the log-ratio measured/predicted at every row of
    *x*, from a Gaussian process fitted to the measured rows."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    from kernelcast.fitting.linear import one_blas_thread

    y = np.array(residuals)
    if len(y) < 2:  # one measurement: the model's order, shifted
        return np.full(len(x), y.mean() if len(y) else 0.0), np.ones(len(x))
    kernel = (ConstantKernel(1.0, (1e-3, 1e2)) * RBF(np.ones(x.shape[1]), (1e-2, 1e2))
              + WhiteKernel(1e-2, (1e-6, 1.0)))
    gp = GaussianProcessRegressor(kernel, normalize_y=True, n_restarts_optimizer=2,
                                  random_state=0)
    with warnings.catch_warnings(), one_blas_thread():  # BLAS threads only slow such sizes
        warnings.simplefilter("ignore", ConvergenceWarning)
        gp.fit(x[measured], y)
        mean, std = gp.predict(x, return_std=True)
    return mean, std


def _expected_improvement(mean: np.ndarray, std: np.ndarray, best: float) -> np.ndarray:
    """E[max(0, best - Y)] for Y normal with *mean* and *std* (log seconds)."""
    from scipy.stats import norm

    std = np.maximum(std, 1e-9)
    z = (best - mean) / std
    return (best - mean) * norm.cdf(z) + std * norm.pdf(z)


def search(candidates: Sequence[Candidate], measure: Callable[[list[Candidate]], Mapping],
           *, settings: Settings = SETTINGS, noise: float | Callable[[], float] = 0.0,
           measured: Mapping[str, float | None] | None = None, stop: bool = True,
           until: Callable[[], bool] | None = None,
           on_batch: Callable[[dict], None] | None = None
           ) -> tuple[dict[str, float | None], str]:
    """Measure *candidates* guided by their predictions: ({key: seconds or None} of every
    variant measured, in the order measured; why it stopped, one of STOPS). *measure(batch)* gives {key: seconds, or None
    where the variant gave no time}; *measured* holds what an earlier run measured (it
    counts against the budget and is not measured again). *noise* (or *noise()*, asked
    before each batch) is the relative run-to-run spread of a time; with *stop* False
    only the budget ends the search, and *until()*, where given, ends it once true.
    *on_batch(measured so far)* follows it."""
    if not candidates:
        return {}, "space measured"
    keys = [c.key for c in candidates]
    index = {k: i for i, k in enumerate(keys)}
    done: dict[str, float | None] = {k: v for k, v in (measured or {}).items() if k in index}
    x = features(candidates)
    logs = _logs(candidates)
    budget = settings.budget if settings.budget is not None else len(candidates)
    while True:
        if len(done) >= len(candidates):
            return done, "space measured"
        if len(done) >= budget:
            return done, "budget"
        if until is not None and until():
            return done, "time"
        timed = [(index[k], math.log(t)) for k, t in done.items() if t]
        mean, std = _correction(x, [i for i, _ in timed], [t - logs[i] for i, t in timed])
        corrected = logs + mean
        left = [i for i, k in enumerate(keys) if k not in done]
        if timed:
            best = min(t for _, t in timed)
            spread = noise() if callable(noise) else noise
            if stop and all(corrected[i] - std[i] >= best + math.log1p(-min(spread, 0.5))
                            for i in left):
                return done, "nothing predicted faster"
            score = -_expected_improvement(corrected, std, best)
            order = sorted(left, key=lambda i: (score[i], corrected[i], keys[i]))
        else:  # the model's own order
            order = sorted(left, key=lambda i: (candidates[i].predicted_s, keys[i]))
        batch = [candidates[i] for i in order[:min(settings.batch, budget - len(done))]]
        times = measure(batch)
        for c in batch:
            t = times.get(c.key)
            done[c.key] = t if t and t > 0 and math.isfinite(t) else None
        if on_batch is not None:
            on_batch(dict(done))


def replay(candidates: Sequence[Candidate], times: Mapping[str, float], *,
           budget: int | None = None, stop: bool = False,
           settings: Settings = SETTINGS, noise: float = 0.0) -> list[str]:
    """The keys in the order ``search`` measures them when a variant's time is
    *times*[key] (None or absent: it gave none), up to *budget* measurements (default:
    *settings*' budget)."""
    chosen = Settings(settings.batch, settings.budget if budget is None else budget)
    order, _ = search(candidates, lambda batch: {c.key: times.get(c.key) for c in batch},
                      settings=chosen, noise=noise, stop=stop)
    return list(order)
