"""The extended model on the hardware facts (kernelcast.models.extended.FactsModel) and its
inputs (kernelcast.models.extended.facts), fitted on real H100 measurements
(data/h100/cuda.sqlite). The launches' facts come from data/h100/facts-summaries.json.xz
(benchmarks/facts_model.py summaries), checked here against what the facts predict now."""

import json
import random
import warnings
from pathlib import Path

import numpy as np
import pytest

from kernelcast.cli import main
from kernelcast.errors import KernelcastError
from kernelcast.fitting.dataset import PropertyCache, load_dataset
from kernelcast.fitting.overlap import fit_grouped_overlap, grouped_overlap
from kernelcast.hardware import load_hardware
from kernelcast.measure.store import Store
from kernelcast.models import get_model
from kernelcast.models.extended.facts import (
    COUNTERS,
    PIPES,
    RESOURCES,
    SummaryCache,
    launch_summary,
    resource_of,
    warm_dram_share,
)
from kernelcast.profile import load_profile, save_profile
from kernelcast.suites import kernels

ROOT = Path(__file__).resolve().parent.parent
SUMMARIES = ROOT / "data/h100/facts-summaries.json.xz"
CUDA = ROOT / "data/h100/cuda.sqlite"
CLASSES = ["scale_add", "arithmetic", "empty", "matmul_tiled", "transpose", "reuse"]


@pytest.fixture(scope="module", autouse=True)
def known_facts(h100_known_facts):
    """Every facts model here reads the committed launches (conftest)."""


@pytest.fixture(scope="module")
def data():
    cache = PropertyCache()
    with Store(CUDA) as store:
        fit = load_dataset(store, ("measurement", "extension"), cache=cache)
        test = load_dataset(store, "test", cache=cache)
    return fit.subset(fit.info.kernel_class.isin(CLASSES).to_numpy()), test


@pytest.fixture(scope="module")
def model(data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return get_model("facts").fit(data[0])


def _compiler():
    from kernelcast.facts.compiler import find_tools

    try:
        find_tools()
    except KernelcastError:
        pytest.skip("NVIDIA's compiler from PyPI is not installed")


def test_the_committed_summaries_are_what_the_facts_predict_now(data):
    """A sample of the committed launches, predicted again from their kernels."""
    _compiler()
    fit, test = data
    hw = load_hardware("h100")
    cases = [(d, i) for d in (fit, test) for i in range(len(d))]
    for d, i in random.Random(7).sample(cases, 6):
        case = d.cases[i]
        key = SummaryCache.key(f"{case.suite}:{case.name}", d.params(i), hw.name)
        committed = SummaryCache(SUMMARIES).entries[key]
        now = launch_summary(case.kernel(), d.params(i), hw)
        assert now == pytest.approx(committed, rel=1e-9), case.name


def test_the_pipes_add_up_to_the_instructions_executed():
    _compiler()
    summary = launch_summary(kernels.scale(256), {"n": 1 << 20}, "h100")
    pipes = sum(summary[f"inst_{p}"] for p in (*PIPES, "other"))
    assert pipes == pytest.approx(summary["inst_executed"], rel=1e-12)
    # y = a x: one FMUL a work-item, 32 a warp instruction; 2^20 / 32 warps
    assert summary["inst_fp32"] == (1 << 20) // 32
    # 2^20 floats read and written: 4 MiB each, 32-byte sectors
    assert summary["l1_sectors"] == 2 * (4 << 20) // 32
    # 4096 groups of 256; the H100 holds 8 a SM (2048 threads) on 132 SMs
    assert summary["waves"] == np.ceil(4096 / (8 * 132))


def test_a_launch_repeated_back_to_back_reads_dram_only_beyond_l2():
    l2 = 50 * 2**20
    assert warm_dram_share(1e6, l2) == 0.0
    assert warm_dram_share(0.61 * l2, l2) == 0.0
    assert warm_dram_share(0.72 * l2, l2) == pytest.approx(0.5)
    assert warm_dram_share(0.83 * l2, l2) == pytest.approx(1.0)
    assert warm_dram_share(10 * l2, l2) == 1.0


def test_every_weighted_feature_has_a_resource_and_a_counter():
    for name in RESOURCES:
        assert name in COUNTERS and resource_of(name) == RESOURCES[name]
    assert resource_of("launch") == "constant"
    assert resource_of("item_flops_f32") == "chain"


def test_the_grouped_overlap_recovers_known_weights():
    """Times made by the model itself from known weights and two resources: the fit
    finds them again."""
    rng = np.random.default_rng(0)
    X = np.column_stack([np.ones(200), rng.uniform(1e3, 1e6, 200),
                         rng.uniform(1e3, 1e6, 200)])
    w = np.array([5e-6, 2e-10, 7e-10])
    y = grouped_overlap(X[:, 0] * w[0], np.array([X[:, 1] * w[1], X[:, 2] * w[2]]), 3.0)
    coef, solver = fit_grouped_overlap(X, y, ["constant", "dram", "issue"], 3.0, 1e-3)
    assert all(s["success"] for s in solver)
    np.testing.assert_allclose(coef, w, rtol=1e-3)


def test_a_fit_on_real_h100_launches_is_deterministic_and_predicts_the_test_kernels(
        data, model):
    fit, test = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = get_model("facts").fit(fit)
    assert json.dumps(model.fitted_state(), sort_keys=True) == json.dumps(
        again.fitted_state(), sort_keys=True)
    assert all(s["success"] for s in model.fit_report_["solver"])
    assert model.hardware_ == "h100"
    # the paper's four test kernels, never fitted: within a factor of 1.5 each
    ratio = model.predict_dataset(test) / test.seconds
    assert np.all((ratio > 1 / 1.5) & (ratio < 1.5)), ratio


def test_the_fit_report_checks_the_rates_against_the_measured_peaks(model):
    peaks = model.fit_report_["peaks"]
    hw = load_hardware("h100")
    for name, entry in peaks.items():
        assert entry["fitted"] == pytest.approx(1 / model.weights_[name])
        assert entry["physical"] == (entry["fitted"] <= entry["peak"])
    # the DRAM peak from the device: 2619 MHz double data rate over a 5120-bit bus
    assert peaks["dram_bytes_read"]["peak"] == hw.dram_peak_bandwidth == 2619e6 * 2 * 640


def test_no_prediction_is_below_the_floor(model, data):
    fit, _ = data
    hw = load_hardware("h100")
    for i in range(0, len(fit), 7):
        values = model._case_features(fit, i, hw)
        parts = model.contributions(dict(values))
        assert sum(parts.values()) >= values["floor_seconds"] * (1 - 1e-12)
    # a launch whose own DRAM traffic at the copy bandwidth outlasts the model
    values = {"launch": 1.0, "inst_other": 1.0, "waves": 1.0, "floor_seconds": 1.0}
    parts = model.contributions(values)
    assert parts["floor"] > 0 and sum(parts.values()) == pytest.approx(1.0)


def test_explain_names_the_counters_and_sums_to_predict(model):
    _compiler()
    knl, params = kernels.scale(256), {"n": 1 << 22}
    terms = model.terms(knl, params)
    total = model.predict(knl, params)
    assert sum(t["seconds"] for t in terms) == pytest.approx(total, rel=1e-12)
    named = {t["term"]: t["counter"] for t in terms}
    assert named.get("dram_bytes_read", COUNTERS["dram_bytes_read"]) == \
        "dram__bytes_read.sum"
    assert any(c and c.startswith("l1tex__") for c in named.values())


def test_properties_are_refused_with_one_clear_error(model, data):
    _, test = data
    with pytest.raises(KernelcastError, match="from a Loopy kernel"):
        model.predict(test.properties(0), test.params(0))


def test_a_profile_round_trips_and_names_its_hardware(model, data, tmp_path):
    _, test = data
    path = save_profile(model, tmp_path / "facts.json")
    again = load_profile(path)
    assert again.hardware_ == "h100" and again.weights_ == model.weights_
    np.testing.assert_array_equal(again.predict_dataset(test), model.predict_dataset(test))
    doc = json.loads(path.read_text())
    doc["state"]["hardware"] = "gtx9999"
    path.write_text(json.dumps(doc))
    with pytest.raises(KernelcastError, match="not a packaged hardware"):
        load_profile(path)


def test_a_device_without_a_hardware_description_is_refused_before_measuring():
    with pytest.raises(KernelcastError, match="no packaged|there is none"):
        get_model("facts").check_before_measuring("pthread-skylake-avx512")


def test_predict_explain_prints_each_term_with_its_counter(model, tmp_path, capsys):
    _compiler()
    profile = save_profile(model, tmp_path / "facts.json")
    source = tmp_path / "k.py"
    source.write_text("from kernelcast.suites import kernels\n"
                      "def make():\n    return kernels.scale(256)\n")
    assert main(["predict", f"{source}:make", "--param", "n=4194304", "--profile",
                 str(profile), "--explain"]) == 0
    out = capsys.readouterr().out
    assert "counter it stands on" in out and "l1tex__t_sectors" in out
    assert main(["predict", f"{source}:make", "--param", "n=4194304", "--profile",
                 str(profile), "--explain", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert sum(t["seconds"] for t in doc["terms"]) == pytest.approx(doc["seconds"])
    assert main(["predict", f"{source}:make", "--param", "n=4194304", "--profile",
                 str(profile), "--stat", "x=1"]) == 2
    assert "--stat" in capsys.readouterr().err


def test_a_tuner_ranks_with_the_facts_of_each_variant(model):
    """The axpy family's 25 work-group shapes, ranked from their compiled code (read
    from the committed launches: the same facts the tuning evaluation ranked with)."""
    from kernelcast.tune.families import FAMILIES
    from kernelcast.tune.tuner import rank

    fam = FAMILIES["axpy"]
    ranked, skipped = rank(fam.build(), fam.params, fam.space, model, max_group_size=1024)
    assert not skipped and len(ranked) == 25
    seconds = [r.predicted_s for r in ranked]
    assert seconds == sorted(seconds) and len(set(seconds)) > 1


def test_a_fit_that_computes_facts_says_how_far_it_got(data, monkeypatch):
    import io

    import kernelcast.models.extended as extended
    from kernelcast.models.extended.facts import SummaryCache

    fit, _ = data
    hw = load_hardware("h100")
    keys = [SummaryCache.key(f"{c.suite}:{c.name}", fit.params(i), hw.name)
            for i, c in enumerate(fit.cases)]
    fewer = SummaryCache()
    fewer.entries = {k: v for k, v in extended.SUMMARIES.entries.items() if k not in keys[:3]}
    monkeypatch.setattr(extended, "SUMMARIES", fewer)
    model = get_model("facts")
    model.progress = io.StringIO()
    model.fit(fit)
    lines = model.progress.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hardware facts of 3/3 launches, ")
    assert all(k in fewer.entries for k in keys[:3])
