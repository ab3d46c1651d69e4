"""The learned model (kernelcast.models.learned) on the training corpus measured on an
H100 (data/h100/tuning-corpus-cuda.sqlite): its features by hand on a plain kernel, what
it learns of the corpus, explain starting from its base, refusals; and the judged tuning
families kept out of what it is fitted from (tests/test_model_protocol.py runs it through
the Model protocol)."""

import math
from pathlib import Path

import numpy as np
import pytest

from kernelcast.errors import KernelcastError
from kernelcast.measure.store import Store
from kernelcast.models import get_model, model_class, model_names
from kernelcast.models.learned import FEATURES, learned_features
from kernelcast.properties import extract_properties
from kernelcast.suites import kernels
from kernelcast.tune.corpus import CORPUS
from kernelcast.tune.families import FAMILIES
from kernelcast.tune.variants import load_variant_dataset

STORE = Path(__file__).resolve().parents[1] / "data" / "h100" / "tuning-corpus-cuda.sqlite"
SMALL = ("poly", "conv1d")  # two corpus families keep the fits quick


@pytest.fixture(scope="module")
def data():
    with Store(STORE) as store:
        return load_variant_dataset(store, [CORPUS[n] for n in SMALL])


@pytest.fixture(scope="module")
def fitted(data):
    return get_model("learned", rounds=60).fit(data)


def test_features_of_a_scale_kernel_by_hand():
    # out[i] = 2 a[i], n = 4096 in groups of 256: 16 KiB read, 16 KiB written, each byte
    # accessed once, unit stride, one flop per element
    f = learned_features(extract_properties(kernels.scale(256)), {"n": 4096}, 132)
    assert f["bytes_moved"] == 2 * 4096 * 4
    assert f["log2_bytes_moved"] == 15
    assert f["log2_intensity"] == pytest.approx(math.log2(4097 / 32768))
    assert f["reuse"] == 1 and f["global_utilization"] == 1
    assert f["broadcast_share"] == 0 and f["store_share"] == 0.5
    assert f["log2_work_items"] == 12 and f["log2_group_size"] == 8
    assert f["log2_groups_per_unit"] == pytest.approx(math.log2(16 / 132))
    assert f["item_global_loads"] == 1 and f["item_flops"] == 1
    assert f["item_strided_loads"] == 0 and f["item_local_loads"] == 0
    assert set(FEATURES) <= set(f)


def test_the_corpus_and_the_judged_families_are_disjoint(data):
    assert not set(CORPUS) & set(FAMILIES)
    assert set(data.info.kernel_class) == set(SMALL)
    assert all(name.split("/")[0] in SMALL for name in data.info.case_name)


def test_it_is_listed_apart_from_the_suite_fitted_models():
    assert model_names("variant")[0] == "learned"
    assert "learned" not in model_names()
    with pytest.raises(KernelcastError, match="tuning corpus"):
        model_class("learned").fit_suites("measurement")


def test_a_fit_of_no_rounds_is_refused(data):
    with pytest.raises(KernelcastError, match="rounds"):
        get_model("learned", rounds=0).fit(data)


def test_explain_sums_to_predict_and_starts_from_the_base(data, fitted):
    for i in (0, len(data) // 2, len(data) - 1):
        parts = fitted.explain(data.properties(i), data.params(i))
        assert "base" in parts and parts["base"] > 0
        assert set(parts) - {"base"} <= set(FEATURES)
        assert sum(parts.values()) == pytest.approx(
            fitted.predict(data.properties(i), data.params(i)), rel=1e-9)


def test_it_learns_the_corpus(data, fitted):
    # fitted to these rows, it follows them: most within 25% (variants whose properties
    # are equal, such as unrolling factors, cannot be told apart, so not all)
    ratio = fitted.predict_dataset(data) / data.seconds
    assert np.mean((ratio > 0.8) & (ratio < 1.25)) > 0.7
    assert fitted.fit_report_["training_geomean_rel_error"] < 0.1
    assert fitted.fit_report_["families"] == sorted(SMALL)
