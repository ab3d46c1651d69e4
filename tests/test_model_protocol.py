"""Every registered model (kernelcast.models.model_names) through the same checks, as
scikit-learn's parametrize_with_checks runs every estimator through its own: keyword-only
construction, refusal to predict when unfitted, predict_dataset equal to predict case by
case with explain summing to it, a profile round trip, and two fits of the same data
giving bit-identical results. CONFIGS holds each registered model with its defaults and
the configurations that take another path through a model's code; EXCEPTIONS names the
checks a configuration cannot take, with the reason.

The data are the H100 OpenCL measurements committed under data/ (small subsets, so the
extended model's fit stays quick); the models on the facts read their launches from
data/h100/facts-summaries.json.xz, which tests/test_facts_model.py checks against what the
facts predict now."""

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import kernelcast as kc
from kernelcast.errors import KernelcastError, NotFittedError
from kernelcast.fitting.dataset import PropertyCache, load_dataset
from kernelcast.measure.store import Store
from kernelcast.models import get_model, model_class, model_names
from kernelcast.profile import load_profile, save_profile
from kernelcast.suites import kernels

DATA = Path(__file__).resolve().parent.parent / "data" / "h100"
H100 = DATA / "opencl.sqlite"
#: id -> (registered name, parameters): every registered model with its defaults, and the
#: Hong–Kim model with the registers its suite kernels compiled to
CONFIGS = {name: (name, {}) for name in model_names()}
CONFIGS["hong-kim-registers"] = ("hong-kim", {"registers": str(DATA / "registers.json")})
#: (configuration, check) -> why the configuration cannot take the check; the check is
#: then expected to fail, strictly, so that an entry no longer needed is noticed
EXCEPTIONS: dict[tuple[str, str], str] = {}
CLASSES = ["scale_add", "global_access", "arithmetic", "empty", "parallelism", "chain",
           "matmul_tiled"]
CACHE = PropertyCache()


@pytest.fixture(scope="module", autouse=True)
def known_facts(h100_known_facts):
    """Every facts model here reads the committed launches (conftest)."""


def workload(model, dataset, i):
    """What *model* predicts for case *i*: the models on the facts the kernel, which they
    compile; the others its properties."""
    if getattr(model, "needs_kernel", False):
        return dataset.cases[i].kernel()
    return dataset.properties(i)


@pytest.fixture(scope="module")
def datasets():
    """Per registered model, a subset of the suites it is fitted from; and the test
    suite."""
    result = {}
    with Store(H100) as store:
        for name in model_names():
            data = load_dataset(store, model_class(name).fit_suites("measurement"),
                                cache=CACHE)
            result[name] = data.subset(data.info.kernel_class.isin(CLASSES).to_numpy())
        test = load_dataset(store, "test", cache=CACHE)
    return result, test


@pytest.fixture(scope="module")
def fit_of(datasets):
    """A function: the model of a configuration fitted to its data, fitted once."""
    fits, _ = datasets
    done = {}

    def fit(config):
        if config not in done:
            name, params = CONFIGS[config]
            done[config] = get_model(name, **params).fit(fits[name])
        return done[config]
    return fit


@pytest.fixture(params=list(CONFIGS))
def config(request):
    """Each configuration; a check it cannot take (EXCEPTIONS) is expected to fail."""
    reason = EXCEPTIONS.get((request.param, request.function.__name__))
    if reason:
        request.node.add_marker(pytest.mark.xfail(reason=reason, strict=True))
    return request.param


@pytest.fixture
def model(config):
    """A new, unfitted model of the configuration."""
    name, params = CONFIGS[config]
    return get_model(name, **params)


@pytest.fixture
def fitted(config, fit_of):
    """The model of the configuration, fitted (shared by the checks)."""
    return fit_of(config)


def test_the_registry_has_every_model_under_one_vocabulary():
    assert {name for name, _ in CONFIGS.values()} == set(model_names())
    for name in model_names():
        assert model_class(name).name == name and model_class(name).summary
    with pytest.raises(KernelcastError, match="unknown model 'kernelcast'"):
        get_model("kernelcast")


def test_no_model_is_fitted_from_test_or_validation_kernels(model):
    for suite in ("measurement", "measurement-cpu"):
        try:
            suites = model.fit_suites(suite)
        except KernelcastError:  # a model that cannot be fitted from this suite
            continue
        assert not {s for s in suites if s.startswith(("test", "validation"))}


def test_models_take_keyword_arguments_only(model):
    cls = type(model)
    assert cls(**model.get_params()).get_params() == model.get_params()
    with pytest.raises(TypeError):
        cls(*model.get_params().values())


def test_an_unfitted_model_refuses_to_predict(model, tmp_path):
    assert not model.is_fitted
    assert issubclass(NotFittedError, KernelcastError)  # a one-line error on the CLI
    with pytest.raises(NotFittedError, match="not fitted"):
        model.predict(kernels.scale(256), {"n": 4096})
    with pytest.raises(NotFittedError):
        model.explain(kernels.scale(256), {"n": 4096})
    with pytest.raises(NotFittedError):
        model.fitted_state()
    with pytest.raises(NotFittedError):
        save_profile(model, tmp_path / "p.json")
    assert not (tmp_path / "p.json").exists()


def test_predict_dataset_is_predict_case_by_case_and_explain_sums_to_it(fitted, datasets):
    """On the test suite and a sample of the data the model was fitted to (for Hong–Kim,
    float64 tiled matrix products among them, whose registers limit its occupancy)."""
    fits, test = datasets
    fit = fits[fitted.name]
    for data in (test, fit.subset(np.arange(len(fit)) % 48 == 0)):
        batch = fitted.predict_dataset(data)
        assert batch.shape == (len(data),)
        for i, value in enumerate(batch):
            workload_, params = workload(fitted, data, i), data.params(i)
            parts = fitted.explain(workload_, params)
            assert all(np.isfinite(v) for v in parts.values())
            assert sum(parts.values()) == pytest.approx(value, rel=1e-12), data.cases[i]
            if value > 0:
                assert fitted.predict(workload_, params) == pytest.approx(value, rel=1e-12)
            else:  # the paper's unconstrained weights may give t <= 0: predict refuses it
                with pytest.raises(KernelcastError, match="not a positive time|no time"):
                    fitted.predict(workload_, params)


def test_profiles_round_trip(fitted, datasets, tmp_path):
    _, test = datasets
    path = save_profile(fitted, tmp_path / "model.json")
    doc = json.loads(path.read_text())
    assert doc["format"] == 2 and doc["model"] == fitted.name
    assert doc["device"] == "NVIDIA H100 80GB HBM3" and doc["backend"] == "opencl"
    again = load_profile(path)
    assert type(again) is type(fitted) and again.get_params() == fitted.get_params()
    assert again.fitted_state() == fitted.fitted_state()
    np.testing.assert_array_equal(again.predict_dataset(test), fitted.predict_dataset(test))
    # the store is found again from the profile's folder
    assert Path(again.provenance_["store"]).resolve() == H100.resolve()


def test_two_fits_of_the_same_data_are_bit_identical(model, datasets):
    fits, _ = datasets
    with warnings.catch_warnings():
        warnings.simplefilter("error", kc.KernelcastWarning)  # every solver converges
        first, second = model.fit(fits[model.name]), model.clone().fit(fits[model.name])
    assert json.dumps(first.fitted_state(), sort_keys=True) == json.dumps(
        second.fitted_state(), sort_keys=True)
    assert all(s["success"] for s in first.fit_report_["solver"])


def test_a_broken_profile_is_refused_with_its_path(fit_of, tmp_path):
    path = save_profile(fit_of("paper"), tmp_path / "p.json")
    doc = json.loads(path.read_text())
    for broken, message in ((dict(doc, format=9), "refit it"),
                            (dict(doc, model="roofline"), "unknown model"),
                            (dict(doc, params={"q": 2}), "do not fit the paper model"),
                            ({k: v for k, v in doc.items() if k != "device"}, "'device'")):
        path.write_text(json.dumps(broken))
        with pytest.raises(KernelcastError, match=message) as err:
            load_profile(path)
        assert str(path) in str(err.value)
    weights = doc["state"]["weights"]
    name = next(iter(weights))
    for value in (True, "1e-9", float("nan")):
        bad = json.loads(json.dumps(doc))
        bad["state"]["weights"][name]["value"] = value
        path.write_text(json.dumps(bad))
        with pytest.raises(KernelcastError, match="not a finite number"):
            load_profile(path)
    for change, message in (({"value": 1e300}, "not a plausible time"),
                            ({"unit": "ms"}, "profiles give seconds")):
        bad = json.loads(json.dumps(doc))
        bad["state"]["weights"][name].update(change)
        path.write_text(json.dumps(bad))
        with pytest.raises(KernelcastError, match=message):
            load_profile(path)
    path.write_text(json.dumps({**doc, "state": {"weights": {}}}))
    with pytest.raises(KernelcastError, match="no weights"):
        load_profile(path)


def test_a_prediction_that_is_not_a_positive_time_is_refused(fit_of, tmp_path):
    """All-negative weights (a damaged profile) would predict negative times."""
    path = save_profile(fit_of("paper"), tmp_path / "p.json")
    doc = json.loads(path.read_text())
    for entry in doc["state"]["weights"].values():
        entry["value"] = -abs(entry["value"])
    path.write_text(json.dumps(doc))
    model = load_profile(path)
    with pytest.raises(KernelcastError, match="not a positive time"):
        model.predict(kernels.scale(256), {"n": 4096})
    assert model.seconds(kernels.scale(256), {"n": 4096}) < 0  # evaluation sees the value


def test_format_1_profiles_still_load(fit_of, tmp_path):
    """Profiles written before the model interface: the paper's model, and the extended
    model under its old name "kernelcast" with its exponent as "overlap"."""
    model = fit_of("extended")
    old = {"format": 1, "model": "kernelcast", "device": "NVIDIA H100 80GB HBM3",
           "driver": "580.159.04", "backend": "opencl", "suite": "measurement",
           "weights": {k: {"value": v, "unit": "s"} for k, v in model.weights_.items()},
           "overlap": model.q, "resident_items": model.resident_items_}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    loaded = load_profile(path)
    assert loaded.name == "extended" and loaded.weights_ == model.weights_
    assert loaded.q == model.q and loaded.resident_items_ == model.resident_items_
    knl = kernels.scale(256)
    assert loaded.predict(knl, {"n": 2**20}) == model.predict(knl, {"n": 2**20})


_TWO_FITS_IN_A_NEW_PROCESS = """
import json, sys, warnings
warnings.simplefilter("ignore")
import kernelcast as kc
from kernelcast.measure.store import Store
with Store(sys.argv[1]) as store:
    data = kc.load_dataset(store, ("measurement", "extension"))
first, second = (kc.get_model("extended").fit(data).fitted_state() for _ in range(2))
print(json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True))
"""


def test_the_first_fit_of_a_process_is_the_same_as_the_next():
    """Fits run BLAS on one thread; scipy's own BLAS, loaded during the first fit of a
    process, once escaped that limit, and that fit differed from the next in its last
    bits (on the whole H100 OpenCL dataset; a fresh process, as a user's)."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _TWO_FITS_IN_A_NEW_PROCESS, str(H100)],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"


@pytest.mark.parametrize(("args", "status"), [
    (["--model", "hong-kim"], 1),  # the device has no hardware description: a failure
    (["--model", "hong-kim", "--hardware", "gtx9999"], 2)])  # a bad argument
def test_a_calibration_that_could_not_be_fitted_is_refused_before_measuring(
        args, status, tmp_path, capsys, pocl):
    from kernelcast.cli import main

    db = tmp_path / "cpu.sqlite"
    assert main(["calibrate", "--device", "portable", "--db", str(db), *args]) == status
    assert "hardware" in capsys.readouterr().err
    assert not db.exists()
