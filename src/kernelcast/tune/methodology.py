"""Judging a tuner as Willemsen, van Nieuwpoort and van Werkhoven do ("A methodology for
comparing optimization algorithms for auto-tuning", FGCS 2024; its software is the
``autotuning-methodology`` package): on a space measured exhaustively, how much better
than random search a tuner's best-so-far is after each number of measurements, on a
scale where 0 is random search and 1 is the best variant found at once.

- Budget: measurements (the package's function evaluations, "fevals"), counted as the
  tuner makes them: a variant measured again counts again, as Kernel Tuner's results
  list (every evaluation, the ones its cache serves included) is counted by the package.
- ``best_so_far``: the best time after each of 1..B measurements of one run's order; a
  run that stopped before B keeps its last best (the package extends a run that ended
  early with its last value).
- ``expected_best``: random search without replacement, the baseline. Its expected
  best-so-far after k of N variants is exact: the best of k draws is the j-th fastest
  with probability C(N-j, k-1) / C(N, k). The package computes the value at an expected
  *rank* instead (the paper's Eq. 6, ``methodology_baseline`` here); that is not the
  expected time, and its index is one place too good (k(N+1)/(k+1) is a 1-based position
  used as a 0-based index: for N = 6 it puts random search at the optimum after 2
  draws), so scores here use the exact expectation, under which random search scores 0
  on average at every budget; ``baseline_spread`` is its exact standard deviation.
- ``score``: (baseline - best) / (baseline - optimum) at each budget, the package's
  ``Baseline.get_standardised_curves`` for a time to minimise; ``score_curve`` scores the
  mean best-so-far of several runs (seeds), which is the mean of their scores. The
  package takes the median rank of the runs instead; the mean keeps random search at 0.
- ``aggregate``: the mean of a score curve over budgets 1..B, as the package's score is
  the mean of its curve over the budget range (then over search spaces).
  ``cutoff_budget`` is that range's end: the measurements after which random search is
  expected to have come 95% of the way from the median time to the best (the package's
  ``cutoff_percentile``; its start, 1%, is one measurement here).
- ``measurements_to``: the measurements a run needs to reach a time within 5% of the
  best (None: never).
- ``kernel_tuner_order``: the order in which one of Kernel Tuner's strategies measures,
  replayed in its simulation mode on a cache file (kernelcast.tune.kerneltuner writes
  one), every evaluation in its results list counted.

Public names: best_so_far, expected_best, baseline_spread, methodology_baseline, score,
score_curve, aggregate, cutoff_budget, usable_budget, measurements_to, kernel_tuner_order.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import statistics
import warnings
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

import numpy as np


def best_so_far(times: Mapping[str, float], order: Sequence, budget: int) -> np.ndarray:
    """The best of *times* after each of 1..*budget* measurements in *order* (keys, a
    repeat counted again; an entry that is not a key of *times* is a measurement that gave
    no time); the slowest time of the space before any time; past the order's end its
    last best."""
    worst = max(times.values())
    measured = [times.get(k, worst) if isinstance(k, str) else worst for k in order[:budget]]
    best = np.minimum.accumulate(np.array(measured or [worst], dtype=float))
    return np.concatenate([best, np.full(max(0, budget - len(best)), best[-1])])


def expected_best(times: Mapping[str, float], budget: int) -> np.ndarray:
    """The exact expected best time of random search without replacement after each of
    1..*budget* measurements: sum over j of t_(j) C(N-j, k-1) / C(N, k), t_(j) the j-th
    fastest of the N times."""
    values = np.sort(np.array(list(times.values()), dtype=float))
    n = len(values)
    if not 1 <= budget <= n:
        raise ValueError(f"a budget of {budget} measurements in a space of {n}")
    out = np.empty(budget)
    for k in range(1, budget + 1):
        # P(best is the j-th fastest), j = 1..n: k/n, then times (n-j-k+1)/(n-j)
        ratios = np.array([(n - j - k + 1) / (n - j) for j in range(1, n)])
        p = np.concatenate([[k / n], k / n * np.cumprod(np.clip(ratios, 0.0, None))])
        out[k - 1] = float(p @ values)
    return out


def baseline_spread(times: Mapping[str, float], budget: int) -> np.ndarray:
    """The standard deviation of random search's best time after each of 1..*budget*
    measurements, exact: the expected best of the squared times less the squared
    expected best (so how far a mean over seeds may stray from the baseline)."""
    mean = expected_best(times, budget)
    square = expected_best({k: t * t for k, t in times.items()}, budget)
    return np.sqrt(np.maximum(square - mean * mean, 0.0))


def methodology_baseline(times: Mapping[str, float], budget: int) -> np.ndarray:
    """The package's calculated baseline (autotuning-methodology 1.1.0,
    ``RandomSearchCalculatedBaseline`` without smoothing, which an integer budget range
    leaves as is): after k measurements the time at index round(k(N+1)/(k+1)) of the
    times slowest first, at most N-1. Kept to compare with; scores use ``expected_best``."""
    worst_first = np.sort(np.array(list(times.values()), dtype=float))[::-1]
    n = len(worst_first)
    return np.array([worst_first[min(n - 1, round(k * (n + 1) / (k + 1)))]
                     for k in range(1, budget + 1)])


def score(best: np.ndarray, baseline: np.ndarray, optimum: float) -> np.ndarray:
    """(baseline - best) / (baseline - optimum) at each budget: 0 as good as random
    search, 1 the optimum, below 0 worse than random search."""
    best, baseline = np.asarray(best, dtype=float), np.asarray(baseline, dtype=float)
    span = baseline - optimum
    if np.any(span <= 0):
        raise ValueError("the baseline reaches the optimum within the budget; the score "
                         "is defined only before (usable_budget)")
    return (baseline - best) / span


def score_curve(times: Mapping[str, float], orders: Sequence[Sequence[str]],
                budget: int) -> np.ndarray:
    """The score after each of 1..*budget* measurements of the runs *orders* (one per
    seed): their mean best-so-far against ``expected_best``."""
    mean = np.mean([best_so_far(times, o, budget) for o in orders], axis=0)
    return score(mean, expected_best(times, budget), min(times.values()))


def aggregate(curve: np.ndarray, budget: int | None = None) -> float:
    """The mean of a score curve over budgets 1..*budget* (default: all of it)."""
    return float(np.mean(np.asarray(curve)[:budget]))


def usable_budget(times: Mapping[str, float]) -> int:
    """The most measurements at which a score is defined: N - m, m the variants tied at
    the best (after more, every random order has found the best)."""
    best = min(times.values())
    return len(times) - sum(t == best for t in times.values())


def cutoff_budget(times: Mapping[str, float], fraction: float = 0.95) -> int:
    """The fewest measurements after which random search is expected to be *fraction* of
    the way from the median time to the best (the package's cutoff point, on the exact
    baseline), at most ``usable_budget``."""
    values = list(times.values())
    best, median = min(values), statistics.median(values)
    target = best + (1 - fraction) * (median - best)
    last = usable_budget(times)
    curve = expected_best(times, last)
    return next((k + 1 for k, e in enumerate(curve) if e <= target), last)


def measurements_to(times: Mapping[str, float], order: Sequence[str],
                    within: float = 1.05) -> int | None:
    """The measurements of *order* up to and including the first time within *within*
    of the best of *times* (a repeat counted again); None if it never gets there."""
    goal = within * min(times.values())
    return next((i + 1 for i, k in enumerate(order)
                 if isinstance(k, str) and k in times and times[k] <= goal), None)


def kernel_tuner_order(cache, strategy: str, *, budget: int, seed: int = 0,
                       allowed: Collection[str] | None = None,
                       limit: int | None = None) -> tuple[list[str], str | None]:
    """Every evaluation Kernel Tuner's *strategy* makes in simulation mode on the cache
    file *cache*, as cache keys in order (a configuration its cache serves again counted
    again; *budget* different ones at most: max_fevals), with Python's and NumPy's
    generators seeded with *seed* (its strategies draw from them); and None, or why the
    strategy stopped early (its exception, as text). *allowed*: the keys of the space
    judged (default: every entry with a time), the rest restricted out. A strategy is
    stopped after *limit* evaluations (default 50 × *budget*), as some keep evaluating
    what their cache holds without end.

    Kernel Tuner 1.5 keeps a neighbour list as a NumPy array where it later appends to it
    (``Searchspace.__add_to_neighbor_partial_cache``), which stops simulated annealing,
    hybrid_vndx and adaptive_tabu_greywolf on most spaces; the replay hands it the same
    neighbours as a list."""
    import kernel_tuner
    from kernel_tuner.runners.simulation import SimulationRunner
    from kernel_tuner.searchspace import Searchspace
    from kernel_tuner.util import StopCriterionReached

    data = json.loads(Path(cache).read_text())
    names = data["tune_params_keys"]
    if allowed is None:
        allowed = [k for k, e in data["cache"].items() if "__error__" not in e]
    allowed = set(allowed)
    evaluated: list[str] = []
    limit = 50 * budget if limit is None else limit
    run, add = SimulationRunner.run, Searchspace._Searchspace__add_to_neighbor_partial_cache

    def admitted(*values, **params):  # the values in order, or (its runner) by name
        return ",".join(str(v) for v in values or [params[k] for k in names]) in allowed

    def logged(self, space, options):  # every evaluation, the ones refused included
        results = run(self, space, options)
        evaluated.extend(",".join(str(r[k]) for k in names) for r in results if r)
        if len(evaluated) >= limit:
            raise StopCriterionReached(f"{limit} evaluations")
        return results

    def listed(self, config, indices, method, full_neighbors=False):
        return add(self, config, list(indices), method, full_neighbors)

    random.seed(seed)
    np.random.seed(seed)
    error = None
    SimulationRunner.run = logged
    Searchspace._Searchspace__add_to_neighbor_partial_cache = listed
    try:
        with (warnings.catch_warnings(), open(os.devnull, "w") as devnull,
              contextlib.redirect_stdout(devnull)):
            warnings.simplefilter("ignore")
            kernel_tuner.tune_kernel(
                data["kernel_name"], "__kernel void k() {}", data["problem_size"], [],
                {k: data["tune_params"][k] for k in names}, lang="OpenCL",
                restrictions=[admitted], cache=str(cache), simulation_mode=True,
                strategy=strategy, strategy_options={"max_fevals": budget}, quiet=True,
                seed=seed)
    except StopCriterionReached:
        pass
    except Exception as err:  # noqa: BLE001 - a strategy that fails here stopped there
        error = f"{type(err).__name__}: {err}"
    finally:
        SimulationRunner.run = run
        Searchspace._Searchspace__add_to_neighbor_partial_cache = add
    return evaluated, error
