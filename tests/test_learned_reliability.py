"""The learned model where its inputs or its reach fail: a damaged profile (a changed
leaf value, a truncated booster, random bytes, a checksum recomputed over the damage) is
refused in one line by a process that survives it, with LightGBM's own output kept off
the terminal; and a prediction beyond the training range, or one that shrinks as the work
grows, says so (ExtrapolationWarning) while explain keeps summing to predict."""

import hashlib
import json
import math
import os
import random
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from kernelcast.errors import ExtrapolationWarning, ProfileError
from kernelcast.measure.store import Store
from kernelcast.models.learned import FEATURES, booster
from kernelcast.profile import load_profile
from kernelcast.properties import extract_properties
from kernelcast.suites import kernels
from kernelcast.tune.corpus import CORPUS
from kernelcast.tune.variants import load_variant_dataset

ROOT = Path(__file__).resolve().parents[1]
PROFILE = ROOT / "data" / "profiles" / "nvidia-h100-80gb-hbm3-cuda-learned.json"
CORPUS_STORE = ROOT / "data" / "h100" / "tuning-corpus-cuda.sqlite"


def _doc() -> dict:
    with open(PROFILE, encoding="utf-8") as f:
        return json.load(f)


def _damaged(text: str, how: str) -> str:
    """*text* (a booster) damaged as *how* says; the JSON around it stays valid."""
    if how == "leaf":  # one leaf value's digits changed
        start = text.index("leaf_value=") + len("leaf_value=") + 1
        return text[:start] + "9" + text[start + 1:]
    if how == "truncated":
        return text[:len(text) // 2]
    if how == "random":
        rng = random.Random(0)
        at = len(text) // 3
        return text[:at] + "".join(chr(rng.randrange(33, 127)) for _ in range(200)) \
            + text[at + 200:]
    if how == "word":  # a leaf value that is not a number
        start = text.index("leaf_value=") + len("leaf_value=")
        return text[:start] + "abc" + text[text.index(" ", start):]
    raise AssertionError(how)


def _write(tmp_path, name: str, doc: dict):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


CASES = [("leaf", False), ("truncated", False), ("random", False), ("leaf", "no checksum"),
         ("truncated", True), ("random", True), ("word", True)]


@pytest.mark.parametrize("how,recomputed", CASES)
def test_a_damaged_profile_is_refused_in_one_line_by_a_process_that_survives(
        tmp_path, how, recomputed):
    doc = _doc()
    state = doc["state"]
    state["booster"] = _damaged(state["booster"], how)
    if recomputed == "no checksum":
        del state["checksum"]
    elif recomputed:  # whoever damaged it recomputed the checksum
        state["checksum"] = hashlib.sha256(state["booster"].encode()).hexdigest()
    path = _write(tmp_path, f"{how}-{recomputed}", doc)
    run = subprocess.run([sys.executable, "-m", "kernelcast", "predict",
                          f"{ROOT / 'examples' / 'kernels.py'}:scale", "--param", "n=4096",
                          "--profile", str(path), "--json"], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode in (1, 2), (run.returncode, run.stderr[-2000:])
    assert run.stdout == ""
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kernelcast: error: "), lines[:5]
    assert str(path) in lines[0]
    assert ("checksum" if recomputed is not True else "damaged") in lines[0]
    assert "[LightGBM]" not in run.stdout + run.stderr


UNTAGGED = """
import loopy as lp
import numpy as np


def scale():
    knl = lp.make_kernel("{[i]: 0<=i<n}", "out[i] = 2*a[i]", lang_version=(2018, 2),
                         assumptions="n >= 1")
    return lp.add_dtypes(knl, {"a": np.float32})
"""


def test_tune_refuses_a_crashing_booster_in_one_line(tmp_path):
    doc = _doc()
    state = doc["state"]
    state["booster"] = _damaged(state["booster"], "random")
    state["checksum"] = hashlib.sha256(state["booster"].encode()).hexdigest()
    path = _write(tmp_path, "tune", doc)
    (tmp_path / "k.py").write_text(UNTAGGED)
    run = subprocess.run([sys.executable, "-m", "kernelcast", "tune",
                          f"{tmp_path / 'k.py'}:scale", "--param", "n=65536", "--profile",
                          str(path), "--db", str(tmp_path / "t.sqlite"), "--max-variants",
                          "60", "--json"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 2 and run.stdout == ""
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"kernelcast: error: {path}: damaged: "
                                                   "LightGBM crashed (SIG")
    assert not (tmp_path / "t.sqlite").exists()


def test_a_crashing_booster_is_refused_here_without_output_and_the_verdict_is_kept(
        tmp_path, capfd, monkeypatch):
    doc = _doc()
    state = doc["state"]
    state["booster"] = _damaged(state["booster"], "truncated")
    state["checksum"] = hashlib.sha256(state["booster"].encode()).hexdigest()
    path = _write(tmp_path, "crash", doc)
    with pytest.raises(ProfileError, match=r"damaged: LightGBM crashed \(SIG"):
        load_profile(path)
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    calls = []
    monkeypatch.setattr(booster, "_verdict", lambda *a: calls.append(a))
    with pytest.raises(ProfileError, match="crashed"):  # decided once per booster
        load_profile(path)
    assert calls == []


def test_a_sound_profile_predicts_without_lightgbm_output(capfd):
    model = load_profile(PROFILE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        assert model.predict(kernels.scale(256), {"n": 2**24}) > 0
        model.explain(kernels.scale(256), {"n": 2**24})
    assert capfd.readouterr() == ("", "")


def test_quiet_native_silences_descriptors_1_and_2_and_restores_them(capfd):
    with booster.quiet_native():
        os.write(1, b"native out\n")
        os.write(2, b"native err\n")
        print("python out")
    os.write(1, b"after\n")
    assert capfd.readouterr() == ("after\n", "")
    with pytest.raises(RuntimeError), booster.quiet_native():
        raise RuntimeError
    os.write(2, b"restored\n")
    assert capfd.readouterr().err == "restored\n"


def test_the_committed_profile_keeps_its_checksum_and_training_ranges():
    state = _doc()["state"]
    text = state["booster"]
    assert state["checksum"] == hashlib.sha256(text.encode()).hexdigest()
    # LightGBM writes each feature's range over the rows it was fitted on ("none" for a
    # feature with one value): the ranges the profile keeps are the same
    infos = next(line for line in text.splitlines() if line.startswith("feature_infos="))
    for name, info in zip(FEATURES, infos.partition("=")[2].split(), strict=True):
        lo, hi = state["ranges"][name]
        if info == "none":
            assert lo == hi
        else:
            assert [float(v) for v in info.strip("[]").split(":")] == pytest.approx(
                [lo, hi], rel=1e-15, abs=1e-300)


@pytest.mark.parametrize("ranges", [None, {"reuse": [1, 2]}, "broken", {"lo": "hi"}])
def test_a_profile_without_sound_ranges_is_refused(tmp_path, ranges):
    doc = _doc()
    if ranges is None:
        del doc["state"]["ranges"]
    elif ranges == "broken":
        doc["state"]["ranges"]["reuse"] = [5.0, 1.0]
    else:
        doc["state"]["ranges"] = ranges
    with pytest.raises(ProfileError, match="ranges"):
        load_profile(_write(tmp_path, "ranges", doc))


# {{{ extrapolation

@pytest.fixture(scope="module")
def model():
    return load_profile(PROFILE)


@pytest.fixture(scope="module")
def scale():
    return extract_properties(kernels.scale(256))


def _predict(model, props, params):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        seconds = model.predict(props, params)
    found = [str(w.message) for w in caught if issubclass(w.category, ExtrapolationWarning)]
    parts = model.explain(props, params)
    assert sum(parts.values()) == pytest.approx(seconds, rel=1e-9)
    return seconds, found


def test_less_time_for_256_times_the_work_is_flagged(model, scale):
    # 4.26 ms at n = 65,536, 63.6 µs at 256 times the size: its features lie inside their
    # training ranges one by one, but no corpus family was measured near this size
    seconds, found = _predict(model, scale, {"n": 65536})
    assert seconds == pytest.approx(4.26e-3, rel=0.01)
    assert len(found) == 1 and "predicts less time for more work" in found[0]
    assert "4.26 ms" in found[0] and "63.6 µs" in found[0] and "×256" in found[0]


def test_less_time_for_twice_the_work_is_flagged(model, scale):
    seconds, found = _predict(model, scale, {"n": 2**17})
    assert len(found) == 1 and "8.33 ms" in found[0] and "790 µs with every size ×2" \
        in found[0]


BEYOND = {4096: ["log2_bytes_moved 15 is outside its training range 17 … 29.58"],
          2**27: ["log2_bytes_moved 30 ",
                  "log2_work_items 27 is outside its training range 11 … 26"]}


@pytest.mark.parametrize("n,outside", BEYOND.items())
def test_a_feature_beyond_its_training_range_is_named(model, scale, n, outside):
    _, found = _predict(model, scale, {"n": n})
    ranges = [m for m in found if "extrapolates" in m]
    assert len(ranges) == 1 and all(part in ranges[0] for part in outside)


def test_a_size_the_corpus_covers_gives_no_warning(model, scale):
    # poly and conv1d were measured at n = 2^24 with the same launches as scale (one
    # element per work-item, groups of up to 1024): 63.6 µs, 128 MiB at 2.1 TB/s
    seconds, found = _predict(model, scale, {"n": 2**24})
    assert found == [] and seconds == pytest.approx(63.6e-6, rel=0.01)


def test_the_corpus_rows_it_was_fitted_on_give_no_warning(model):
    with Store(CORPUS_STORE) as store:
        data = load_variant_dataset(store, [CORPUS["poly"]])
    for i in range(len(data)):
        seconds, found = _predict(model, data.properties(i), data.params(i))
        assert found == [] and math.isclose(seconds, data.seconds[i], rel_tol=0.25)


def test_a_fit_records_the_ranges_of_its_rows():
    from kernelcast.models import get_model

    with Store(CORPUS_STORE) as store:
        data = load_variant_dataset(store, [CORPUS["poly"]])
    fitted = get_model("learned", rounds=5).fit(data)
    X, _ = fitted._matrix(data, 132)
    assert fitted.ranges_ == {n: [X[:, i].min(), X[:, i].max()]
                              for i, n in enumerate(FEATURES)}
    state = fitted.fitted_state()
    assert state["ranges"] == fitted.ranges_
    assert state["checksum"] == hashlib.sha256(state["booster"].encode()).hexdigest()
    assert np.isfinite(fitted.predict_dataset(data)).all()

# }}}
