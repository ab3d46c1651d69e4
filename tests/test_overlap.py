"""kernelcast's overlap of per-work-item terms and totals (kernelcast.models.overlap)."""

import numpy as np
import pandas as pd
import pytest

import kernelcast as kc
from kernelcast.errors import KernelcastError
from kernelcast.models.overlap import OverlapModel, overlap, term_groups, waves
from kernelcast.models.profile import Profile, load_profile

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
    linear = kc.LinearModel(log_scale=0.01).fit(X, y)
    assert np.abs(np.log(linear.predict(X) / y)).max() > 0.1  # where T ≈ L
    np.testing.assert_allclose(model.coef_, [WEIGHTS[c] for c in X.columns], rtol=0.1)
    assert (model.coef_ >= 0).all() and model.negative_weights_ == []


def test_q_one_is_the_linear_log_fit():
    rng = np.random.default_rng(5)
    X = _cases(rng)
    y = _times(X, 1.0) * np.exp(0.05 * rng.standard_normal(len(X)))
    np.testing.assert_allclose(OverlapModel(1.0, 0.01).fit(X, y).predict(X),
                               kc.LinearModel(log_scale=0.01).fit(X, y).predict(X),
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


def test_profile_contributions_keep_proportions_and_sum_to_the_overlap(tmp_path):
    profile = Profile(dict(WEIGHTS), "gpu", "driver", "opencl", model="kernelcast",
                      overlap=2.0)
    values = {"launch": 1.0, "add_f32": 6e7, "item_flops_f32": 4000.0}  # 3 µs and 4 µs
    parts = profile.contributions(values)
    assert profile.predict_values(values) == pytest.approx(1e-6 + 5e-6)
    assert parts["launch"] == pytest.approx(1e-6)
    assert parts["add_f32"] / parts["item_flops_f32"] == pytest.approx(3 / 4)
    again = load_profile(profile.save(tmp_path / "p.json"))
    assert again.overlap == 2.0 and again.predict_values(values) == pytest.approx(6e-6)
    summed = Profile(dict(WEIGHTS), "gpu", "driver", "opencl", model="kernelcast")
    assert summed.predict_values(values) == pytest.approx(8e-6)


@pytest.mark.parametrize("edit, message", [
    (('"overlap": 2.0', '"overlap": 0.5'), "at least 1"),
    (('"overlap": 2.0', '"overlap": "two"'), "at least 1"),
    (('"model": "kernelcast"', '"model": "paper"'), "at least 1"),
])
def test_profiles_with_a_bad_overlap_are_refused(tmp_path, edit, message):
    profile = Profile({"launch": 4e-6}, "gpu", "driver", "opencl", model="kernelcast",
                      overlap=2.0)
    path = profile.save(tmp_path / "p.json")
    path.write_text(path.read_text().replace(*edit))
    with pytest.raises(KernelcastError, match=message):
        load_profile(path)


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
    with pytest.raises(KernelcastError, match="positive integer"):
        OverlapModel(compute_units=0)


def test_profile_counts_per_work_item_terms_once_per_wave(tmp_path):
    profile = Profile(dict(WEIGHTS), "gpu", "driver", "opencl", model="kernelcast",
                      overlap=1.0, resident_items=1000)
    values = {"launch": 1.0, "item_flops_f32": 4000.0, "work_items": 2500.0}  # 4 µs × 3
    parts = profile.contributions(values)
    assert set(parts) == {"launch", "item_flops_f32"}
    assert parts["item_flops_f32"] == pytest.approx(12e-6)
    again = load_profile(profile.save(tmp_path / "p.json"))
    assert again.resident_items == 1000
    assert again.predict_values(values) == pytest.approx(13e-6)
    path = tmp_path / "p.json"
    for bad in ("0", "2.5", '"many"', "true"):
        path.write_text(profile.save(path).read_text().replace(
            '"resident_items": 1000', f'"resident_items": {bad}'))
        with pytest.raises(KernelcastError, match="resident_items"):
            load_profile(path)
