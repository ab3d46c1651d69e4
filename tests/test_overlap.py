"""The extended model's overlap of per-work-item terms and totals
(kernelcast.fitting.overlap) and its waves of resident work-items, fitted to synthetic
launches of known weights, and the extended model (kernelcast.models.extended) combining
weights that way."""

import json

import numpy as np
import pandas as pd
import pytest

from kernelcast.errors import KernelcastError
from kernelcast.fitting.linear import LinearModel
from kernelcast.fitting.overlap import (ITEMS_PER_UNIT_GRID, OverlapModel, overlap,
                                        term_groups, waves)
from kernelcast.models import ExtendedModel, get_model
from kernelcast.models.extended import OVERLAP_Q
from kernelcast.profile import load_profile, save_profile

WEIGHTS = {"launch": 1e-6, "add_f32": 5e-14, "load_global_32_s1": 2e-12,
           "item_flops_f32": 1e-9, "item_loads_coalesced_32": 3e-8}


def _cases(rng, rows=400):
    """Launches from one work-item's chain to many work-items' totals."""
    work_items = 2.0 ** rng.integers(10, 21, rows)
    per_item_flops = 2.0 ** rng.integers(0, 14, rows)
    per_item_loads = per_item_flops / rng.integers(1, 8, rows)
    return pd.DataFrame({
        "launch": np.ones(rows),
        "add_f32": work_items * per_item_flops,
        "load_global_32_s1": work_items * per_item_loads,
        "item_flops_f32": per_item_flops,
        "item_loads_coalesced_32": per_item_loads})


def _times(X, q):
    w = np.array([WEIGHTS[c] for c in X.columns])
    constant, total, item = term_groups(X.columns)
    A = X.to_numpy()
    return overlap(A[:, constant] @ w[constant], A[:, total] @ w[total],
                   A[:, item] @ w[item], q)


def test_terms_are_grouped_by_name():
    constant, total, item = term_groups(["launch", "add_f32", "item_flops_f32", "workgroup"])
    assert constant.tolist() == [True, False, False, False]
    assert total.tolist() == [False, True, False, True]
    assert item.tolist() == [False, False, True, False]
    assert overlap(1.0, 3.0, 4.0, 2.0) == pytest.approx(6.0)  # 1 + hypot(3, 4)
    assert overlap(1.0, 3.0, 4.0, 1.0) == pytest.approx(8.0)  # q = 1 adds


def test_fit_recovers_overlapping_times_a_linear_fit_cannot():
    rng = np.random.default_rng(3)
    X = _cases(rng)
    y = _times(X, 1.5) * np.exp(0.01 * rng.standard_normal(len(X)))
    model = OverlapModel(1.5, log_scale=0.01).fit(X, y)
    error = np.abs(np.log(model.predict(X) / y))
    assert np.median(error) < 0.015 and error.max() < 0.05  # the 1% noise
    linear = LinearModel(log_scale=0.01).fit(X, y)
    assert np.abs(np.log(linear.predict(X) / y)).max() > 0.1  # where T ≈ L
    np.testing.assert_allclose(model.coef_, [WEIGHTS[c] for c in X.columns], rtol=0.1)
    assert (model.coef_ >= 0).all() and model.negative_weights_ == []
    # every solver run is recorded, and all of them converged
    methods = [s["method"] for s in model.solver_]
    assert methods == ["nnls", "log-space least squares", "overlap least squares"]
    assert all(s["success"] for s in model.solver_)


def test_q_one_is_the_linear_log_fit():
    rng = np.random.default_rng(5)
    X = _cases(rng)
    y = _times(X, 1.0) * np.exp(0.05 * rng.standard_normal(len(X)))
    np.testing.assert_allclose(OverlapModel(1.0, 0.01).fit(X, y).predict(X),
                               LinearModel(log_scale=0.01).fit(X, y).predict(X),
                               rtol=1e-3)


def test_overlap_model_refuses_misuse():
    with pytest.raises(KernelcastError, match="at least 1"):
        OverlapModel(0.5)
    with pytest.raises(KernelcastError, match="log_scale"):
        OverlapModel(2.0, log_scale=0.0)
    with pytest.raises(KernelcastError, match="not fitted"):
        OverlapModel().predict(np.ones((1, 1)), ["launch"])
    X = _cases(np.random.default_rng(0), rows=50)
    model = OverlapModel().fit(X, _times(X, 1.5))
    with pytest.raises(KernelcastError, match="feature names differ"):
        model.predict(X[X.columns[::-1]])
    with pytest.raises(KernelcastError, match="positive integer"):
        OverlapModel(compute_units=0)
    with pytest.raises(KernelcastError, match="positive integer"):
        OverlapModel(resident=2.5)


def _wave_cases(rng, rows=400):
    """As _cases, with the launch's work-items as the context value the waves need."""
    X = _cases(rng, rows)
    X["work_items"] = X["add_f32"] / X["item_flops_f32"]
    return X


def _wave_times(X, q, resident):
    w = np.array([WEIGHTS.get(c, 0.0) for c in X.columns])
    constant, total, item = term_groups(X.columns)
    A = X.to_numpy()
    return overlap(A[:, constant] @ w[constant], A[:, total] @ w[total],
                   A[:, item] @ w[item] * waves(X["work_items"], resident), q)


def test_waves_count_the_chains_a_launch_runs_one_after_another():
    assert waves([1, 1024, 1025, 4096], 1024).tolist() == [1, 1, 2, 4]
    assert waves([5000.0], None).tolist() == [1]
    assert waves(2500.0, 1000) == 3.0 and waves(2500.0, None) == 1.0
    constant, total, item = term_groups(["launch", "work_items", "add_f32"])
    assert not (constant[1] or total[1] or item[1])  # context: no weight


def test_fit_finds_the_resident_work_items_from_the_compute_units():
    rng = np.random.default_rng(7)
    X = _wave_cases(rng)
    y = _wave_times(X, 1.5, 4 * 2048) * np.exp(0.01 * rng.standard_normal(len(X)))
    model = OverlapModel(1.5, 0.01, compute_units=4).fit(X, y)
    assert model.resident_items_ == 4 * 2048
    assert model.coef_[list(X.columns).index("work_items")] == 0.0
    error = np.abs(np.log(model.predict(X) / y))
    assert np.median(error) < 0.015 and error.max() < 0.05  # the 1% noise
    np.testing.assert_allclose(model.coef_[:-1], [WEIGHTS[c] for c in X.columns[:-1]],
                               rtol=0.1)
    one_wave = OverlapModel(1.5, 0.01).fit(X, y)  # no compute units: every launch one wave
    assert one_wave.resident_items_ is None
    assert np.abs(np.log(one_wave.predict(X) / y)).max() > 0.15  # at a few waves
    # a grid that leaves out the true 2048 per unit cannot find it
    other = OverlapModel(1.5, 0.01, compute_units=4, items_per_unit=(512, 4096)).fit(X, y)
    assert other.resident_items_ in (4 * 512, 4 * 4096)
    assert ITEMS_PER_UNIT_GRID == (512, 1024, 2048, 4096)


def test_overlap_fit_with_a_context_column_is_deterministic(monkeypatch):
    """The context column ``work_items`` has no weight: its column of the Jacobian must be
    zero, not whatever memory the Jacobian was allocated in (np.empty_like left it so,
    which made fits depend on what ran before). Two fits of the same data agree bit for
    bit, and the fit does not depend on the context values except through the waves."""
    rng = np.random.default_rng(11)
    X = _wave_cases(rng)
    y = _wave_times(X, 1.5, 4 * 1024) * np.exp(0.01 * rng.standard_normal(len(X)))
    first = OverlapModel(1.5, 0.01, compute_units=4).fit(X, y)
    _garbage = [np.full(X.shape, 1e300 * k) for k in range(1, 20)]  # freed memory to reuse
    del _garbage
    second = OverlapModel(1.5, 0.01, compute_units=4).fit(X, y)
    assert np.array_equal(first.coef_, second.coef_)
    assert first.resident_items_ == second.resident_items_ == 4 * 1024
    assert first.solver_ == second.solver_
    assert all(s["success"] for s in first.solver_)

    # twice the work-items at twice the residents: the same waves, so the same fit
    doubled = X.assign(work_items=2 * X["work_items"])
    given = OverlapModel(1.5, 0.01, resident=4 * 1024).fit(X, y)
    again = OverlapModel(1.5, 0.01, resident=8 * 1024).fit(doubled, y)
    assert np.array_equal(given.coef_, again.coef_)

    # every Jacobian the solvers see has a zero context column
    import scipy.optimize

    solve, jacobians = scipy.optimize.least_squares, []

    def spy(fun, x0, jac, **kwargs):
        jacobians.append(jac(x0))
        return solve(fun, x0, jac=jac, **kwargs)

    monkeypatch.setattr(scipy.optimize, "least_squares", spy)
    OverlapModel(1.5, 0.01, resident=4 * 1024).fit(X, y)
    assert len(jacobians) == 2  # the linear log fit, then the overlap fit
    context = list(X.columns).index("work_items")
    for J in jacobians:
        assert np.all(np.isfinite(J)) and np.all(J[:, context] == 0.0)
        assert np.all(np.delete(J, context, axis=1).any(axis=0))  # the others are not


# {{{ the extended model combining weights so

def _extended(tmp_path, q, resident=None, weights=WEIGHTS):
    """An extended model with *weights*, as a hand-written profile holds it."""
    doc = {"format": 2, "model": "extended", "params": {"q": q}, "device": "gpu",
           "driver": "driver", "backend": "opencl",
           "state": {"weights": {k: {"value": v, "unit": "s"} for k, v in weights.items()},
                     "resident_items": resident}}
    path = tmp_path / "extended.json"
    path.write_text(json.dumps(doc))
    return load_profile(path)


def test_contributions_keep_proportions_and_sum_to_the_overlap(tmp_path):
    model = _extended(tmp_path, 2.0)
    assert isinstance(model, ExtendedModel) and model.q == 2.0
    values = {"launch": 1.0, "add_f32": 6e7, "item_flops_f32": 4000.0}  # 3 µs and 4 µs
    parts = model.contributions(values)
    assert sum(parts.values()) == pytest.approx(1e-6 + 5e-6)  # 1 µs + hypot(3, 4) µs
    assert parts["launch"] == pytest.approx(1e-6)
    assert parts["add_f32"] / parts["item_flops_f32"] == pytest.approx(3 / 4)
    again = load_profile(save_profile(model, tmp_path / "p.json"))
    assert again.q == 2.0 and again.weights_ == model.weights_
    assert sum(again.contributions(values).values()) == pytest.approx(6e-6)
    summed = _extended(tmp_path, 1.0)
    assert sum(summed.contributions(values).values()) == pytest.approx(8e-6)
    assert get_model("extended").q == OVERLAP_Q


def test_per_work_item_terms_count_once_per_wave(tmp_path):
    model = _extended(tmp_path, 1.0, resident=1000)
    values = {"launch": 1.0, "item_flops_f32": 4000.0, "work_items": 2500.0}  # 4 µs × 3
    parts = model.contributions(values)
    assert set(parts) == {"launch", "item_flops_f32"}  # work_items has no weight
    assert parts["item_flops_f32"] == pytest.approx(12e-6)
    again = load_profile(save_profile(model, tmp_path / "p.json"))
    assert again.resident_items_ == 1000
    assert sum(again.contributions(values).values()) == pytest.approx(13e-6)
    path = tmp_path / "p.json"
    text = path.read_text()
    assert '"resident_items": 1000' in text
    for bad in ("0", "2.5", '"many"', "true"):
        path.write_text(text.replace('"resident_items": 1000', f'"resident_items": {bad}'))
        with pytest.raises(KernelcastError, match="resident_items"):
            load_profile(path)


def _format_1(tmp_path, **changes):
    """A profile of kernelcast 0.1 (format 1) of the extended model, then "kernelcast"."""
    doc = {"format": 1, "model": "kernelcast", "device": "gpu", "driver": "driver",
           "backend": "opencl", "weights": {"launch": {"value": 4e-6}}, "overlap": 2.0,
           **changes}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc))
    return path


def test_format_1_profiles_keep_their_overlap(tmp_path):
    model = load_profile(_format_1(tmp_path, resident_items=1000))
    assert isinstance(model, ExtendedModel)
    assert (model.q, model.resident_items_, model.weights_) == (2.0, 1000, {"launch": 4e-6})


@pytest.mark.parametrize("bad", [0.5, "two", [2.0]])
def test_format_1_profiles_with_a_bad_overlap_are_refused(tmp_path, bad):
    with pytest.raises(KernelcastError, match="at least 1"):
        load_profile(_format_1(tmp_path, overlap=bad))


@pytest.mark.parametrize("bad", [0.5, "two"])
def test_format_2_profiles_with_a_bad_overlap_are_refused(tmp_path, bad):
    with pytest.raises(KernelcastError, match="at least 1"):
        _extended(tmp_path, bad)

# }}}


@pytest.mark.parametrize("bad", [17, 1e6, True])
def test_an_overlap_exponent_too_large_to_compute_with_is_refused(bad):
    from kernelcast.models import get_model

    model = get_model("extended", q=bad)  # parameters are checked by fit, not __init__
    with pytest.raises(KernelcastError, match="at most 16"):
        model.fit(None)
