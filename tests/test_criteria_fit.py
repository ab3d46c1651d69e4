"""Fitting the fine-grained (criteria) model as every model is fitted: its microbenchmark
document read and checked by a loader (kernelcast.fitting.microbenchmarks), ``fit``
given what the loader returns, and ``kernelcast.workflow.fit_store`` taking the document
as the model's store; the measuring code refusing in one line without cupy."""

import importlib.util
import json
from pathlib import Path

import pytest

from kernelcast.errors import KernelcastError, UsageError
from kernelcast.fitting.microbenchmarks import Microbenchmarks, load_microbenchmarks
from kernelcast.models import get_model
from kernelcast.profile import load_profile
from kernelcast.suites.criteria_microbenchmarks import SUITE, measure_microbenchmarks
from kernelcast.workflow import calibrate_criteria, fit_store

ROOT = Path(__file__).resolve().parent.parent
DOCUMENT = ROOT / "data/h100/criteria/microbenchmarks.json"
PROFILE = ROOT / "data/profiles/nvidia-h100-80gb-hbm3-cuda-criteria.json"


def test_the_loader_reads_the_document_and_says_where_it_came_from():
    loaded = load_microbenchmarks(DOCUMENT)
    doc = json.loads(DOCUMENT.read_text())
    assert loaded.document == doc and loaded.records == doc["records"]
    assert len(loaded) == 64 and loaded.device == "NVIDIA H100 80GB HBM3"
    # what the committed profile, fitted from the same document, records
    profile = json.loads(PROFILE.read_text())
    prov = loaded.provenance()
    assert prov["store"] == str(DOCUMENT)
    assert {k: prov[k] for k in ("device", "driver", "backend", "compute_units", "suite")} \
        == {k: profile[k] for k in ("device", "driver", "backend", "compute_units", "suite")}
    assert prov["suites"] == [SUITE] and prov["cases"] == profile["fit"]["cases"]


@pytest.mark.parametrize("content, message", [
    (None, "no such microbenchmark document"),
    ("{", "not a microbenchmark document"),
    ("[1, 2]", "not a microbenchmark document"),
    ('{"device": "x"}', "not a microbenchmark document"),
    ('{"device": "x", "records": [1]}', "records must be objects"),
    ('{"records": []}', "names no device"),
])
def test_the_loader_refuses_what_is_not_a_microbenchmark_document(tmp_path, content,
                                                                   message):
    path = tmp_path / "microbenchmarks.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(KernelcastError, match=message) as caught:
        load_microbenchmarks(path)
    assert "\n" not in str(caught.value) and str(path) in str(caught.value)


def test_the_loader_refuses_a_directory(tmp_path):
    with pytest.raises(KernelcastError, match="directory") as caught:
        load_microbenchmarks(tmp_path)
    assert "\n" not in str(caught.value)


def test_fit_takes_the_loaders_microbenchmarks_only():
    with pytest.raises(KernelcastError, match="load_microbenchmarks"):
        get_model("criteria").fit(json.loads(DOCUMENT.read_text()))
    with pytest.raises(KernelcastError, match="load_microbenchmarks"):
        get_model("criteria").fit(str(DOCUMENT))
    with pytest.raises(KernelcastError, match="cannot characterize"):
        get_model("criteria").fit(Microbenchmarks({"device": "x", "records": []}))


def test_saturation_is_checked_by_fit_not_by_the_constructor():
    model = get_model("criteria", saturation=2.0)  # stored as given
    assert model.saturation == 2.0
    with pytest.raises(KernelcastError, match="saturation"):
        model.fit(load_microbenchmarks(DOCUMENT))
    assert not model.is_fitted


def test_fit_store_fits_the_criteria_model_to_its_document(tmp_path):
    fitted = fit_store(DOCUMENT, "criteria", profile_path=tmp_path / "p.json")
    assert fitted.fitted_state() == load_profile(PROFILE).fitted_state()
    assert fitted.provenance_["store"] == str(DOCUMENT)
    assert fit_store(DOCUMENT, "criteria", SUITE, saturation=0.9).saturation == 0.9
    with pytest.raises(UsageError, match="not from the test suite"):
        fit_store(DOCUMENT, "criteria", "test")
    with pytest.raises(KernelcastError, match="is a directory"):  # checked before the fit
        fit_store(DOCUMENT, "criteria", profile_path=tmp_path)


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None,
                    reason="cupy is installed here")
def test_measuring_without_cupy_is_refused_in_one_line(tmp_path):
    with pytest.raises(KernelcastError, match="needs cupy") as caught:
        measure_microbenchmarks(tmp_path / "out")
    assert "\n" not in str(caught.value)
    with pytest.raises(KernelcastError, match="needs cupy"):
        calibrate_criteria(tmp_path / "out")


def test_the_command_line_fits_it_like_every_model(tmp_path, capsys):
    """``kernelcast fit --model criteria`` takes the document as its store and writes the
    committed profile's fit; calibrate refuses flags that do not apply in one line."""
    from kernelcast.cli import main

    out = tmp_path / "p.json"
    assert main(["fit", "--model", "criteria", "--db", str(DOCUMENT), "--profile",
                 str(out), "--saturation", "0.9"]) == 0
    fitted = load_profile(out)
    assert fitted.fitted_state() == load_profile(PROFILE).fitted_state()
    assert fitted.saturation == 0.9
    capsys.readouterr()
    assert main(["calibrate", "--model", "criteria", "--device", "h100"]) == 2
    err = capsys.readouterr().err
    assert "--device is not for --model criteria" in err and len(err.splitlines()) == 1
