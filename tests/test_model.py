"""The relative-least-squares fit (kernelcast.fitting.linear), the paper's model behind the
model interface, profiles, predict/explain, and fitting, tables and cross-validation on
the H100 measurements committed under data/h100."""

import dataclasses
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import kernelcast as kc
from kernelcast.errors import KernelcastError, SolverWarning, UncountedWarning
from kernelcast.evaluation.crossval import cross_validate
from kernelcast.evaluation.tables import table1
from kernelcast.fitting.dataset import load_dataset, timing_noise
from kernelcast.fitting.linear import LinearModel, solver_report
from kernelcast.measure.store import Store
from kernelcast.metrics import geometric_mean, relative_errors, summarize
from kernelcast.models import ExtendedModel, PaperModel, get_model, model_names
from kernelcast.profile import load_profile, save_profile
from kernelcast.suites import kernels

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data" / "h100"


def _synthetic(rng, rows=200, noise=0.0):
    names = ["load_global_32_s1", "add_f32", "workgroup", "launch"]
    X = pd.DataFrame({
        "load_global_32_s1": rng.integers(1, 10**8, rows).astype(float),
        "add_f32": rng.integers(0, 10**9, rows).astype(float),
        "workgroup": rng.integers(1, 10**5, rows).astype(float),
        "launch": np.ones(rows)})
    weights = np.array([2e-12, 5e-14, 3e-9, 4e-6])
    y = X.to_numpy() @ weights * (1 + noise * rng.standard_normal(rows))
    return X, y, weights, names


# {{{ the linear fit

def test_fit_recovers_known_weights():
    X, y, weights, names = _synthetic(np.random.default_rng(0))
    model = LinearModel().fit(X, y)
    assert model is not None and list(model.feature_names_in_) == names
    np.testing.assert_allclose(model.coef_, weights, rtol=1e-8)
    assert model.negative_weights_ == []
    np.testing.assert_allclose(model.predict(X), y, rtol=1e-8)
    assert model.solver_ == [{"method": "lstsq", "success": True, "message": "rank 4 of 4"}]


def test_fit_with_noise_is_close_and_relative():
    X, y, weights, _ = _synthetic(np.random.default_rng(1), rows=2000, noise=0.02)
    model = LinearModel().fit(X, y)
    np.testing.assert_allclose(model.coef_, weights, rtol=0.05)
    rel = np.abs(model.predict(X) - y) / y
    assert geometric_mean(rel) < 0.03


def test_nonnegative_fit_has_no_negative_weights():
    rng = np.random.default_rng(2)
    X = pd.DataFrame({"a": rng.random(50) * 10, "b": rng.random(50) * 10, "launch": 1.0})
    y = 1.0 * X.a - 0.3 * X.b + 20
    free = LinearModel().fit(X, y)
    assert free.negative_weights_ == ["b"]
    bounded = LinearModel(nonnegative=True).fit(X, y)
    assert bounded.negative_weights_ == [] and (bounded.coef_ >= 0).all()
    assert [s["method"] for s in bounded.solver_] == ["nnls"]
    assert all(s["success"] for s in bounded.solver_)


def test_log_fit_is_unbiased_and_robust_where_relative_least_squares_is_not():
    """A model that misses part of the run time (here a term absent from the features)
    leaves misfit that relative least squares settles by under-predicting; the log fit
    centres it. A few cases four times slower than the properties say (as pow-bound
    arithmetic is on the H100) barely move the log fit's weights."""
    rng = np.random.default_rng(4)
    X, y, weights, _ = _synthetic(rng, rows=1000)
    y = y * np.exp(0.4 * rng.standard_normal(len(y)))  # misfit, symmetric in log
    outliers = rng.random(len(y)) < 0.03
    y[outliers] *= 4.0
    relative = LinearModel(nonnegative=True).fit(X, y)
    logfit = LinearModel(log_scale=0.01).fit(X, y)
    assert logfit.nonnegative and (logfit.coef_ >= 0).all()
    ratio = {m: np.exp(np.median(np.log(model.predict(X)[~outliers] / y[~outliers])))
             for m, model in (("relative", relative), ("log", logfit))}
    assert ratio["relative"] < 0.9  # biased low, by about 20%
    assert abs(np.log(ratio["log"])) < 0.05
    # the per-operation weights (the launch constant is small beside them in most rows)
    np.testing.assert_allclose(logfit.coef_[:3], weights[:3], rtol=0.1)
    assert [s["method"] for s in logfit.solver_] == ["nnls", "log-space least squares"]
    assert all(s["success"] for s in logfit.solver_)
    with pytest.raises(KernelcastError, match="log_scale must be positive"):
        LinearModel(log_scale=0.0)


def test_a_solver_that_does_not_converge_is_recorded_and_warns(monkeypatch):
    from scipy.optimize import OptimizeResult

    solver = []
    with pytest.warns(SolverWarning, match="the m solver did not converge: tired"):
        solver_report(solver, OptimizeResult(success=False, message="tired", nfev=7), "m")
    assert solver == [{"method": "m", "success": False, "message": "tired",
                       "evaluations": 7}]
    # the log fit, allowed a single evaluation, stops before it converges
    import scipy.optimize

    solve = scipy.optimize.least_squares
    monkeypatch.setattr(scipy.optimize, "least_squares",
                        lambda *args, **kw: solve(*args, **{**kw, "max_nfev": 1}))
    X, y, _, _ = _synthetic(np.random.default_rng(5), rows=50)
    y = y * np.exp(0.3 * np.random.default_rng(6).standard_normal(len(y)))
    with pytest.warns(SolverWarning, match="log-space least squares"):
        model = LinearModel(log_scale=0.01).fit(X, y)
    assert model.solver_[-1]["success"] is False and model.solver_[-1]["evaluations"] == 1


def test_timing_noise_is_the_median_spread_of_the_fitting_rows():
    rows = [{"suite": "measurement", "status": "ok", "min_s": 1.0, "median_s": m}
            for m in (1.01, 1.02, 1.5)]
    rows += [{"suite": "test", "status": "ok", "min_s": 1.0, "median_s": 3.0},
             {"suite": "measurement", "status": "failed", "min_s": 1.0, "median_s": 9.0}]
    assert timing_noise(rows, ("measurement",)) == pytest.approx(0.02)
    assert timing_noise(rows, ("extension",)) == 1e-3
    assert timing_noise(rows[:1], ("measurement",)) == pytest.approx(0.01)
    assert timing_noise([{**rows[0], "median_s": 1.0}], ("measurement",)) == 1e-3


def test_estimator_refuses_misuse():
    X, y, _, names = _synthetic(np.random.default_rng(3), rows=20)
    with pytest.raises(KernelcastError, match="not fitted"):
        LinearModel().predict(X)
    model = LinearModel().fit(X, y)
    with pytest.raises(KernelcastError, match="feature names differ"):
        model.predict(X[names[::-1]])
    with pytest.raises(KernelcastError, match="positive"):
        LinearModel().fit(X, -y)
    with pytest.raises(KernelcastError, match="rows"):
        LinearModel().fit(X, y[:5])


def test_metrics():
    assert relative_errors([1.5, 0.5, 2.0], [1.0, 1.0, 2.0]).tolist() == [0.5, 0.5, 0.0]
    assert geometric_mean([0.1, 0.4]) == pytest.approx(0.2)
    assert geometric_mean([0.0, 1e-4]) == pytest.approx(1e-8)  # 0 counts as 1e-12
    assert np.isnan(geometric_mean([]))
    table = pd.DataFrame({"kernel_class": ["a", "a", "b"], "rel_error": [0.1, 0.4, 0.5]})
    summary = summarize(table)
    assert summary.loc["a"].tolist() == pytest.approx([2, 0.2, 0.4])
    assert summary.loc["overall"].tolist() == pytest.approx([3, 0.02 ** (1 / 3), 0.5])

# }}}


# {{{ models, profiles, predict and explain

WEIGHTS = {"mul_f32": 1e-12, "load_global_32_s1": 2e-12, "store_global_32_s1": 3e-12,
           "minls_global_32_s1": 0.0, "workgroup": 1e-8, "launch": 5e-6}


def _profile_doc(weights=WEIGHTS):
    return {"format": 2, "model": "paper", "params": {"nonnegative": False},
            "device": "Test GPU", "driver": "1.0", "backend": "opencl",
            "suite": "measurement", "store": "", "fit": {},
            "state": {"weights": {k: {"value": v, "unit": "s", "per": "count"}
                                  for k, v in weights.items()}}}


@pytest.fixture(scope="module")
def paper(tmp_path_factory):
    """A paper model of known weights, as a hand-written profile holds it."""
    path = tmp_path_factory.mktemp("profile") / "paper.json"
    path.write_text(json.dumps(_profile_doc()))
    return load_profile(path)


def test_the_registry():
    assert model_names() == ("paper", "extended", "facts", "hong-kim", "hong-kim-facts")
    assert isinstance(get_model("paper", nonnegative=True), PaperModel)
    assert get_model("paper", nonnegative=True).get_params() == {"nonnegative": True}
    assert isinstance(get_model("extended"), ExtendedModel)
    with pytest.raises(KernelcastError, match="unknown model 'kernelcast'"):
        get_model("kernelcast")  # the extended model's old name
    with pytest.raises(TypeError):
        PaperModel(True)  # keyword-only


def test_profile_round_trip_and_validation(paper, tmp_path):
    assert isinstance(paper, PaperModel) and paper.weights_ == WEIGHTS
    assert paper.provenance_["device"] == "Test GPU"
    path = save_profile(paper, tmp_path / "p.json")
    loaded = kc.load_profile(path)
    assert loaded.weights_ == WEIGHTS and loaded.provenance_["device"] == "Test GPU"
    assert loaded.get_params() == {"nonnegative": False}
    doc = json.loads(path.read_text())
    assert doc["format"] == 2 and doc["model"] == "paper"
    assert doc["state"]["weights"]["launch"]["value"] == 5e-6
    assert doc["state"]["weights"]["launch"]["unit"] == "s"
    assert doc["state"]["weights"]["launch"]["per"]
    for broken, message in [
            ({**doc, "format": 99}, "format"),
            ({k: v for k, v in doc.items() if k != "device"}, "'device'"),
            ({**doc, "model": "nope"}, "unknown model 'nope'"),
            ({**doc, "params": {"q": 2.0}}, "do not fit the paper model"),
            ({**doc, "state": {"weights": {"flops": {"value": 1.0}}}},
             "unknown property 'flops'"),
            ({**doc, "state": {"weights": {"launch": {"value": "x"}}}},
             "not a finite number"),
            ({**doc, "state": {"weights": {"launch": {"value": float("inf")}}}},
             "not a finite number"),
            ({**doc, "state": {}}, "no weights")]:
        (tmp_path / "b.json").write_text(json.dumps(broken))
        with pytest.raises(KernelcastError, match=message):
            kc.load_profile(tmp_path / "b.json")
    (tmp_path / "c.json").write_text("{not json")
    with pytest.raises(KernelcastError, match="not a JSON profile"):
        kc.load_profile(tmp_path / "c.json")
    with pytest.raises(KernelcastError, match="no profile"):
        kc.load_profile(tmp_path / "missing.json")


@pytest.mark.parametrize("name, model", [("nvidia-h100-80gb-hbm3-opencl", PaperModel),
                                         ("nvidia-h100-80gb-hbm3-opencl-kernelcast",
                                          ExtendedModel)])
def test_format_1_profiles_load(name, model):
    """Profiles of kernelcast 0.1 as they were committed in data/profiles (copies in
    tests/data/format-1): "kernelcast" is now "extended"."""
    path = ROOT / "tests" / "data" / "format-1" / f"{name}.json"
    doc = json.loads(path.read_text())
    loaded = load_profile(path)
    assert isinstance(loaded, model) and doc["format"] == 1
    assert loaded.weights_ == {k: v["value"] for k, v in doc["weights"].items()}
    assert loaded.provenance_["device"] == doc["device"] == "NVIDIA H100 80GB HBM3"
    assert loaded.provenance_["store"] == os.path.normpath(path.parent / doc["store"])
    if model is ExtendedModel:
        assert (loaded.q, loaded.resident_items_) == (doc["overlap"], doc["resident_items"])


def test_predict_is_the_sum_of_explain(paper):
    knl = kernels.scale(256)
    params = {"n": 2**20}
    seconds = kc.predict(knl, params, paper)
    parts = kc.explain(knl, params, paper)
    assert seconds == pytest.approx(sum(parts.values()))
    # out[i] = 2*a[i]: one mul, load and store per element, 4096 groups, one launch
    expected = 2**20 * (1e-12 + 2e-12 + 3e-12) + 4096 * 1e-8 + 5e-6
    assert seconds == pytest.approx(expected)
    assert parts == pytest.approx({"workgroup": 4096 * 1e-8, "launch": 5e-6,
                                   "store_global_32_s1": 2**20 * 3e-12,
                                   "load_global_32_s1": 2**20 * 2e-12,
                                   "mul_f32": 2**20 * 1e-12,
                                   "minls_global_32_s1": 0.0})  # a weight of zero
    assert list(parts) == ["workgroup", "launch", "store_global_32_s1",
                           "load_global_32_s1", "mul_f32",
                           "minls_global_32_s1"]  # largest first
    # the same through the model and on extracted properties
    props = kc.extract_properties(knl)
    assert paper.predict(props, params) == seconds == paper.predict(knl, params)


def test_predict_warns_about_properties_without_weight(paper):
    with pytest.warns(UncountedWarning, match="add_f64"):
        kc.predict(kernels.scale_add(1, 256, np.float64), {"n": 1000}, paper)

# }}}


# {{{ real H100 data

@pytest.fixture(scope="module")
def h100(gpu_suite_properties):
    """The measurement and test suites of the committed H100 OpenCL store."""
    with Store(DATA / "opencl.sqlite") as store:
        return (load_dataset(store, "measurement", cache=gpu_suite_properties),
                load_dataset(store, "test", cache=gpu_suite_properties))


def _seconds(dataset, weights):
    """Σ weight × property count per case, added up here, not by the model."""
    return np.array([sum(weights.get(name, 0.0) * count for name, count in
                         dataset.properties(i).evaluate(dataset.params(i)).items())
                     for i in range(len(dataset))])


@pytest.mark.parametrize("nonnegative", [False, True])
def test_the_paper_model_recovers_known_weights_from_suite_kernels(h100, nonnegative):
    """The arithmetic class's 14 properties are independent over its 360 cases: times made
    from known weights give those weights back."""
    measurement, _ = h100
    arithmetic = measurement.subset((measurement.info.kernel_class == "arithmetic"
                                     ).to_numpy())
    names = sorted({name for i in range(len(arithmetic))
                    for name, count in arithmetic.properties(i).evaluate(
                        arithmetic.params(i)).items() if count})
    assert len(names) == 14
    weights = {name: 1e-12 * (1 + k) for k, name in enumerate(names)}
    weights.update(workgroup=3e-9, launch=4e-6)
    synthetic = dataclasses.replace(arithmetic, seconds=_seconds(arithmetic, weights))
    model = PaperModel(nonnegative=nonnegative).fit(synthetic)
    assert set(model.weights_) == set(weights)
    for name, weight in weights.items():
        assert model.weights_[name] == pytest.approx(weight, rel=1e-8), name
    assert model.fit_report_["negative_weights"] == []
    assert model.fit_report_["training_max_rel_error"] < 1e-10
    assert all(s["success"] for s in model.fit_report_["solver"])
    np.testing.assert_allclose(model.predict_dataset(synthetic), synthetic.seconds,
                               rtol=1e-10)


def test_fit_on_h100_measurements(h100):
    measurement, test = h100
    model = PaperModel().fit(measurement)
    prov = model.provenance_
    assert prov["device"] == "NVIDIA H100 80GB HBM3" and prov["backend"] == "opencl"
    assert prov["cases"] == len(measurement) > 1000 and prov["suites"] == ["measurement"]
    report = model.fit_report_
    training = relative_errors(model.predict_dataset(measurement), measurement.seconds)
    assert report["training_geomean_rel_error"] == pytest.approx(geometric_mean(training))
    assert report["training_max_rel_error"] == pytest.approx(training.max())
    negative = {n for n, w in model.weights_.items() if w < 0}
    assert set(report["negative_weights"]) == negative
    # a launch costs microseconds
    assert 1e-7 < model.weights_["launch"] < 1e-4
    table = table1(model, test)
    assert set(table.kernel_class) == {"finite_difference", "skinny_matmul", "nbody",
                                       "convolution"}
    assert len(table) == len(test) and (table.predicted_s > 0).all()
    # each prediction is the weights times the case's properties
    expected = dict(zip(test.info.case_name, _seconds(test, model.weights_), strict=True))
    measured = dict(zip(test.info.case_name, test.seconds, strict=True))
    assert len(expected) == len(test)
    np.testing.assert_allclose(table.predicted_s, [expected[n] for n in table.case_name],
                               rtol=1e-9)
    assert table.measured_s.tolist() == [measured[n] for n in table.case_name]
    np.testing.assert_allclose(
        table.rel_error, np.abs(table.predicted_s - table.measured_s) / table.measured_s)
    assert (table.sort_values(["kernel_class", "measured_s"]).index == table.index).all()
    summary = summarize(table)
    assert summary.loc["overall", "cases"] == len(table)
    for cls, rows in table.groupby("kernel_class"):
        assert summary.loc[cls, "geomean_rel_error"] == pytest.approx(
            np.exp(np.log(rows.rel_error).mean()))


def test_a_model_of_another_device_is_refused(paper):
    """Evaluating moved to kernelcast.workflow.evaluate, which checks the store's device
    (table1 takes the dataset it is given)."""
    from kernelcast.workflow import evaluate

    with pytest.raises(KernelcastError, match="Test GPU.*NVIDIA H100"):
        evaluate(paper, db=DATA / "opencl.sqlite", measure=False)


@pytest.mark.parametrize("key, value", [("backend", "cuda"), ("driver", "999.0")])
def test_a_profile_of_another_backend_or_driver_is_refused(key, value):
    """A CUDA profile evaluated against the OpenCL store of the same GPU (or an edited
    driver) would print a Table 1 of timings it does not describe."""
    from kernelcast.profile import load_profile
    from kernelcast.workflow import evaluate

    model = load_profile(ROOT / "data" / "profiles" / "nvidia-h100-80gb-hbm3-opencl-paper.json")
    model.provenance_ = {**model.provenance_, key: value}
    with pytest.raises(KernelcastError, match=f"{key} '{value}' \\(store: "):
        evaluate(model, db=DATA / "opencl.sqlite", measure=False)


def test_leave_one_class_out(h100):
    measurement, _ = h100
    template = PaperModel()
    cv = cross_validate(template, measurement)
    assert not template.is_fitted  # a template, cloned per class
    assert set(cv.kernel_class) == {"matmul_tiled", "matmul_naive", "scale_add",
                                    "transpose", "global_access", "filled_stride",
                                    "arithmetic", "empty"}
    assert len(cv) == len(measurement)
    np.testing.assert_array_equal(cv.rel_error, np.abs(cv.predicted_s - cv.measured_s)
                                  / cv.measured_s)
    # one class by hand: fitted on every other class, predicting the held-out one
    held = (measurement.info.kernel_class == "transpose").to_numpy()
    fitted = PaperModel().fit(measurement.subset(~held))
    expected = fitted.predict_dataset(measurement.subset(held))
    rows = cv[cv.kernel_class == "transpose"]
    np.testing.assert_allclose(rows.predicted_s, expected, rtol=1e-12)
    np.testing.assert_allclose(rows.measured_s, measurement.seconds[held], rtol=0)
    # the 4-of-more strided accesses occur in no other class of the measurement suite
    assert "load_global_32_4ofmore" in rows.unseen_properties.iloc[0]


def test_fits_are_bit_for_bit_reproducible(h100):
    """Two fits of the same data give the same weights, to the last bit, for the paper
    model and for the extended model (whose overlap fit once read uninitialized memory),
    and every solver converged."""
    measurement, _ = h100
    a, b = PaperModel().fit(measurement), PaperModel().fit(measurement)
    assert a.weights_ == b.weights_
    assert all(s["success"] for s in a.fit_report_["solver"])
    with Store(DATA / "opencl.sqlite") as store:
        dataset = load_dataset(store, ExtendedModel.fit_suites("measurement"),
                               suite="measurement", cache=measurement.cache)
    assert set(dataset.info.suite) == {"measurement", "extension"}
    a, b = ExtendedModel().fit(dataset), ExtendedModel().fit(dataset)
    assert a.weights_ == b.weights_ and a.resident_items_ == b.resident_items_
    solvers = a.fit_report_["solver"]
    assert [s["method"] for s in solvers] == ["nnls", "log-space least squares",
                                              "overlap least squares"]
    assert all(s["success"] for s in solvers)
    assert a.fit_report_["solver"] == b.fit_report_["solver"]

# }}}
