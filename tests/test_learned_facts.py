"""The learned model on the hardware facts (kernelcast.models.learned.facts), on random
loop families measured on an H100 (data/h100/corpus-loops-cuda.sqlite.xz) with their
committed summaries (data/h100/learned-summaries.json.xz): features by hand, the
geometry against the facts' own, never below the floor, explain summing to predict from
its base, refusals; a sample of the committed summaries against what the facts predict
now (tests/test_model_protocol.py runs it through the Model protocol)."""

import lzma
import math
import random
from pathlib import Path

import numpy as np
import pytest

import kernelcast.models.learned.facts as lf
from kernelcast.errors import KernelcastError
from kernelcast.hardware import load_hardware
from kernelcast.measure.store import Store
from kernelcast.models import get_model, model_names
from kernelcast.models.extended.facts import SUMMARY_UNITS, SummaryCache, launch_summary
from kernelcast.tune.random_families import random_family, random_variants
from kernelcast.tune.space import apply, variant_key
from kernelcast.tune.variants import load_random_dataset

DATA = Path(__file__).resolve().parents[1] / "data" / "h100"
FAMILIES = 150  # the first random families keep the fits quick


@pytest.fixture(scope="module")
def known():
    before = lf.SUMMARIES
    lf.SUMMARIES = SummaryCache(DATA / "learned-summaries.json.xz")
    lf.SUMMARIES.path = None  # read, never written
    yield lf.SUMMARIES
    lf.SUMMARIES = before


@pytest.fixture(scope="module")
def data(known, tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "corpus-loops-cuda.sqlite"
    path.write_bytes(lzma.open(DATA / "corpus-loops-cuda.sqlite.xz").read())
    with Store(path) as store:
        d = load_random_dataset(store)
    hw = load_hardware("h100")
    keep = [int(c.kernel_name[6:11]) < FAMILIES and isinstance(known.entries.get(
        SummaryCache.key(c.kernel_name, d.params(i), hw.name)), dict)
        for i, c in enumerate(d.cases)]
    return d.subset(np.array(keep))


@pytest.fixture(scope="module")
def fitted(data):
    return get_model("learned-facts", rounds=80).fit(data)


SUMMARY = {"dram_bytes_read": 3.0e8, "dram_bytes_written": 1.0e8, "l2_sectors_read": 2.0e7,
           "l2_sectors_written": 4.0e6, "l1_sectors": 4.0e7, "shared_wavefronts": 0.0,
           "inst_fp32": 1.0e7, "inst_fp64": 0.0, "inst_xu": 1.0e6, "inst_other": 9.0e6,
           "inst_executed": 2.0e7, "waves": 3.0, "workgroups": 4096.0, "group_size": 256.0}


def test_features_of_a_summary_by_hand():
    hw = load_hardware("h100")
    f = lf.fact_features(SUMMARY, hw)
    # 400 MB is far beyond L2: every DRAM byte moves each launch
    assert f["warm_dram_share"] == 1.0
    dram_s = 4.0e8 / hw.dram_peak_bandwidth
    issue_s = 2.0e7 / (hw.issue_per_sm_cycle * hw.active_sms * hw.freq_hz)
    assert f["floor_seconds"] == pytest.approx(max(dram_s, issue_s))
    assert f["dram_share_of_floor"] == pytest.approx(dram_s / f["floor_seconds"])
    assert f["log2_l2_per_dram"] == pytest.approx(math.log2((32 * 2.4e7 + 32) / (4.0e8 + 32)))
    assert f["fp32_share"] == 0.5 and f["xu_share"] == 0.05 and f["fp64_share"] == 0
    assert f["store_share"] == pytest.approx(4 / 24)
    assert f["log2_group_size"] == 8 and f["log2_workgroups"] == 12
    assert f["log2_inst_per_item"] == pytest.approx(math.log2(32 * 2.0e7 / (4096 * 256)))
    assert set(lf.FACT_FEATURES) <= set(f)


def test_the_geometry_is_the_facts_own():
    hw = load_hardware("h100")
    for i in (2, 5):  # a split reduction and a 3-D grid among them
        fam = random_family(i)
        for v in random_variants(fam, 8)[:3]:
            knl = apply(fam.build(), v, fam.space)
            from kernelcast.facts.counters import predict_counters

            c = predict_counters(knl, fam.params, hw).counters
            geometry = lf.launch_geometry(knl, fam.params)
            assert geometry == {"workgroups": c["launch__grid_size"],
                                "group_size": c["launch__block_size"]}, v


def test_committed_summaries_are_what_the_facts_predict_now(known):
    hw = load_hardware("h100")
    compared = 0
    for i in random.Random(1).sample(range(FAMILIES), 3):
        fam = random_family(i)
        plain = [v for v in random_variants(fam, 8)  # Loopy's code for split reductions
                 if not any(k.startswith(("split.", "prefetch.")) and x not in (1, False)
                            for k, x in v.items())]  # and prefetches varies by hash seed
        if not plain:
            continue
        v = plain[0]
        stored = known.entries.get(SummaryCache.key(f"{fam.name}/{variant_key(v)}",
                                                    fam.params, hw.name))
        if not isinstance(stored, dict):
            continue
        compared += 1
        now = launch_summary(apply(fam.build(), v, fam.space), fam.params, hw)
        for name in SUMMARY_UNITS:  # what the learned model reads of a summary
            assert stored[name] == pytest.approx(now[name], rel=1e-9), (fam.name, name)
    assert compared >= 2


def test_it_is_listed_among_the_variant_models():
    assert model_names("variant") == ("learned", "learned-facts")


def test_a_fit_of_no_rounds_is_refused(data):
    with pytest.raises(KernelcastError, match="rounds"):
        get_model("learned-facts", rounds=0).fit(data)


def test_it_learns_the_corpus_and_never_predicts_below_the_floor(data, fitted):
    predicted = fitted.predict_dataset(data)
    X, floor = fitted._matrix(data)
    assert np.all(predicted >= floor)
    errors = np.abs(predicted / data.seconds - 1)
    assert np.median(errors) < 0.2
    assert fitted.fit_report_["families"] == sorted(set(data.info.kernel_class))


def test_explain_sums_to_predict(data, fitted):
    knl, params = data.cases[3].kernel(), data.params(3)
    parts = fitted.explain(knl, params)
    assert sum(parts.values()) == pytest.approx(fitted.predict(knl, params), rel=1e-9)
    assert "base" in parts


@pytest.mark.parametrize("name", ["learned", "learned-facts"])
def test_evaluate_refuses_a_variant_model_in_one_line(name, capsys):
    from kernelcast.cli import main

    profile = DATA.parent / "profiles" / f"nvidia-h100-80gb-hbm3-cuda-{name}.json"
    assert main(["evaluate", "--profile", str(profile), "--db",
                 str(DATA / "cuda.sqlite")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"kernelcast: error: the {name} model is fitted to measured variants and "
                   "ranks a kernel's variants (kernelcast tune); evaluate judges the models "
                   "fitted from a store's suites")
