"""Judging tuners by the methodology of Willemsen et al. (kernelcast.tune.methodology):
the exact random-search baseline against every order of a small space, the score's two
ends, and Kernel Tuner's strategies replayed on a real family's cache file (axpy on the
H100, 25 variants, from data/h100/tuning-cuda.sqlite by kernelcast.tune.kerneltuner)."""

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from kernelcast.tune import methodology as tm

AXPY = Path(__file__).parent / "data" / "methodology" / "axpy-h100.json"
# six variants, two tied: ties must not change the expectation
SMALL = {"a": 3.0, "b": 1.0, "c": 8.0, "d": 2.0, "e": 2.0, "f": 5.0}


def _axpy_times() -> dict:
    data = json.loads(AXPY.read_text())
    return {k: e["time"] / 1e3 for k, e in data["cache"].items()}


def test_the_baseline_is_the_mean_best_over_every_order_of_the_space():
    orders = list(itertools.permutations(SMALL))
    brute = np.mean([tm.best_so_far(SMALL, o, 6) for o in orders], axis=0)
    assert tm.expected_best(SMALL, 6) == pytest.approx(brute, rel=1e-12)
    # so random search, averaged over every order, scores 0 where the score is defined
    budget = tm.usable_budget(SMALL)
    assert budget == 5
    assert tm.score_curve(SMALL, orders, budget) == pytest.approx(np.zeros(budget), abs=1e-12)


def test_the_spread_of_random_search_is_exact():
    orders = list(itertools.permutations(SMALL))
    brute = np.std([tm.best_so_far(SMALL, o, 6) for o in orders], axis=0)
    assert tm.baseline_spread(SMALL, 6) == pytest.approx(brute, abs=1e-12)


def test_the_expected_rank_of_the_best_is_the_papers_and_the_package_uses_it_one_off():
    n = len(SMALL)
    ranked = sorted(SMALL, key=SMALL.get)
    for k in range(1, n + 1):
        ranks = [min(ranked.index(x) + 1 for x in o[:k])
                 for o in itertools.permutations(ranked)]
        assert np.mean(ranks) == pytest.approx((n + 1) / (k + 1))  # Eq. 6's expectation
    # the package's index k(N+1)/(k+1) counts the slowest as 1 but indexes from 0: after
    # one draw it takes the second fastest time, where random search expects the median
    assert tm.methodology_baseline(SMALL, 1)[0] == 2.0
    assert tm.expected_best(SMALL, 1)[0] == pytest.approx(np.mean(list(SMALL.values())))


def test_our_formulas_match_the_autotuning_methodology_package():
    package = pytest.importorskip("autotuning_methodology.baseline",
                                  reason="autotuning-methodology is not installed")
    from autotuning_methodology.searchspace_statistics import SearchspaceStatistics

    rng = np.random.default_rng(3)
    times = {f"v{i}": float(t) for i, t in enumerate(rng.lognormal(0.0, 0.5, 40))}
    stats = object.__new__(SearchspaceStatistics)  # the attributes its baseline reads
    stats.minimization = True
    stats.objective_performances_total_sorted = np.sort(list(times.values()))
    stats.objective_performances_total_sorted_nan = stats.objective_performances_total_sorted
    baseline = package.RandomSearchCalculatedBaseline(stats)
    budgets = np.arange(1, 11)
    assert baseline.get_curve_over_fevals(budgets) == pytest.approx(
        tm.methodology_baseline(times, 10), rel=1e-12)
    order = sorted(times, key=lambda k: -times[k])[::3]  # a poor search
    best = tm.best_so_far(times, order, 10)
    assert baseline.get_standardised_curve(budgets, best, "fevals") == pytest.approx(
        tm.score(best, tm.methodology_baseline(times, 10), min(times.values())), rel=1e-12)


def test_the_best_found_first_scores_one_and_the_baseline_zero():
    times = _axpy_times()
    budget = tm.usable_budget(times)
    fastest_first = sorted(times, key=times.get)
    assert tm.score_curve(times, [fastest_first], budget) == pytest.approx(np.ones(budget))
    baseline = tm.expected_best(times, budget)
    assert tm.score(baseline, baseline, min(times.values())) == pytest.approx(np.zeros(budget))
    slowest_first = fastest_first[::-1]
    assert tm.score_curve(times, [slowest_first], budget)[0] < 0  # worse than random
    assert tm.measurements_to(times, fastest_first) == 1
    assert tm.aggregate(np.array([1.0, 0.5, 0.0]), 2) == 0.75


def test_every_measurement_counts_and_a_run_that_stopped_keeps_its_best():
    order = ["c", "c", "x", "d", "b"]  # "x": a measurement that gave no time
    assert list(tm.best_so_far(SMALL, order[:4], 6)) == [8.0, 8.0, 8.0, 2.0, 2.0, 2.0]
    assert tm.measurements_to(SMALL, order) == 5
    assert tm.measurements_to(SMALL, order, within=1.0) == 5
    assert tm.measurements_to(SMALL, order[:3]) is None
    assert list(tm.best_so_far(SMALL, ["x"], 2)) == [8.0, 8.0]  # nothing: the slowest


def test_the_cutoff_is_where_random_search_comes_most_of_the_way():
    times = _axpy_times()
    cutoff = tm.cutoff_budget(times)
    values = list(times.values())
    best, median = min(values), float(np.median(values))
    curve = tm.expected_best(times, cutoff)
    assert curve[-1] <= best + 0.05 * (median - best) < curve[-2]
    with pytest.raises(ValueError):
        tm.score(curve, curve, curve[0])  # a baseline at the optimum: no scale


def test_kernel_tuners_random_search_scores_as_the_exact_baseline():
    pytest.importorskip("kernel_tuner", reason="kernel_tuner is not installed")
    times = _axpy_times()
    budget, seeds = tm.usable_budget(times), 20
    orders = []
    for seed in range(seeds):
        order, error = tm.kernel_tuner_order(AXPY, "random_sample", budget=budget, seed=seed)
        assert error is None and len(order) == budget == len(set(order))
        orders.append(order)
    assert len({tuple(o) for o in orders}) == seeds
    # the mean best-so-far of 20 seeds lies within 4 standard errors of the exact
    # expectation at every budget, the spread of one run's best being exact too
    mean = np.mean([tm.best_so_far(times, o, budget) for o in orders], axis=0)
    spread = tm.baseline_spread(times, budget)
    expected = tm.expected_best(times, budget)
    assert np.all(np.abs(mean - expected) <= 4 * spread / np.sqrt(seeds))


def test_kernel_tuner_strategies_replay_with_repeats_counted_inside_the_space():
    pytest.importorskip("kernel_tuner", reason="kernel_tuner is not installed")
    times = _axpy_times()
    allowed = sorted(times, key=times.get)[2:]  # a judged space without the two fastest
    order, error = tm.kernel_tuner_order(AXPY, "genetic_algorithm", budget=10, seed=1,
                                         allowed=allowed)
    assert error is None
    assert set(order) <= set(allowed) and len(set(order)) <= 10
    assert len(order) > len(set(order))  # its population repeats; each repeat counts
    best = tm.best_so_far({k: times[k] for k in allowed}, order, 10)
    assert np.all(np.diff(best) <= 0) and best[-1] == min(times[k] for k in order[:10])
    order, error = tm.kernel_tuner_order(AXPY, "simulated_annealing", budget=20, seed=0)
    assert error is None and set(order) <= set(times)
