"""The committed Pöppl–Herz profiles (data/profiles/<device>-opencl-poppl-herz[-simple].json,
fitted by scripts/fit_profiles.sh from data/{h100,h200,pocl}/poppl-herz.sqlite.xz): a refit
gives the same fit (the identical file on one machine), they hold the fits the
random-kernel evaluation was made with, and
`kernelcast predict KERNEL.cl --model poppl-herz --device NAME` finds the one of the device
named, never another device's, or says in one line how to fit one."""

import json
import shutil
from pathlib import Path

import pytest

import kernelcast.profile
from kernelcast.cli import main
from kernelcast.profile import find_profiles, load_profile
from kernelcast.workflow import fit_committed_profile

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
PROFILES = DATA / "profiles"
# data folder: (device as profiled, file-name slug, a name a user gives --device)
DEVICES = {"h100": ("NVIDIA H100 80GB HBM3", "nvidia-h100-80gb-hbm3", "h100"),
           "h200": ("NVIDIA H200", "nvidia-h200", "NVIDIA H200"),
           "pocl": ("pthread-skylake-avx512-Intel(R) Xeon(R) Processor",
                    "pthread-skylake-avx512-intel-r-xeon-r-processor", "xeon")}
VARIANTS = {"poppl-herz": True, "poppl-herz-simple": False}  # name: classes

KERNEL = """__kernel void axpy(__global const float *x, __global const float *y,
                   __global float *out)
{
    int i = get_global_id(0);
    out[i] = 2.5f * x[i] + y[i] / 3.0f;
}
"""
LAUNCH = {"global_size": [1 << 20], "local_size": [256]}


def _profile(gpu: str, name: str = "poppl-herz") -> Path:
    return PROFILES / f"{DEVICES[gpu][1]}-opencl-{name}.json"


@pytest.fixture()
def kernel_file(tmp_path):
    path = tmp_path / "axpy.cl"
    path.write_text(KERNEL)
    return path


def _predict(kernel_file, *extra, json_out=True):
    return main(["predict", str(kernel_file), "--global-size", str(LAUNCH["global_size"][0]),
                 "--local-size", str(LAUNCH["local_size"][0]), *extra,
                 *(["--json"] if json_out else [])])


# {{{ the committed profiles

def _numbers(doc, prefix=""):
    """(path, value) of every leaf of a JSON document, in a fixed order."""
    if isinstance(doc, dict):
        for key, value in sorted(doc.items()):
            yield from _numbers(value, f"{prefix}.{key}")
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from _numbers(value, f"{prefix}[{i}]")
    else:
        yield prefix, doc


def _assert_same_fit(refit: dict, committed: dict):
    """The refit is the committed fit but for created_at and the last digits of the
    iterative least-squares solutions, which differ from one CPU to another (up to 1e-10
    relative; a curve's parameters where its power term has shrunk to nothing, and
    differences of nearly equal numbers, within 1e-6 absolute: W is in units of one
    operation). A fit of another store or variant differs by far more."""
    refit, committed = {**refit, "created_at": None}, {**committed, "created_at": None}
    pairs = list(zip(_numbers(refit), _numbers(committed), strict=True))
    for (where, value), (other, want) in pairs:
        assert where == other
        if isinstance(want, float) and not isinstance(want, bool):
            loose = ".curve." in where
            assert value == pytest.approx(want, rel=1e-6, abs=1e-6 if loose else 0), where
        else:
            assert value == want, where


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_a_refit_of_the_h100_store_gives_the_committed_fit(tmp_path, name):
    """scripts/fit_profiles.sh's fit of the committed store, in a copy of data/, holds the
    committed fit; the fit is deterministic, so a second refit leaves the first's file
    byte for byte as it is (same fit, so not rewritten)."""
    committed = _profile("h100", name)
    folder = tmp_path / "data" / "profiles"
    packed = tmp_path / "data" / "h100" / "poppl-herz.sqlite.xz"
    folder.mkdir(parents=True)
    packed.parent.mkdir()
    shutil.copy(DATA / "h100" / "poppl-herz.sqlite.xz", packed)
    path, _ = fit_committed_profile(packed, folder, "poppl-herz", name,
                                    classes=VARIANTS[name])
    assert path == folder / committed.name
    _assert_same_fit(json.loads(path.read_text()), json.loads(committed.read_text()))
    first = path.read_bytes()
    again, written = fit_committed_profile(packed, folder, "poppl-herz", name,
                                           classes=VARIANTS[name])
    assert again == path and not written and path.read_bytes() == first


@pytest.mark.parametrize("damage", ["none", "other fit"])
def test_a_refit_writes_the_fit_where_none_or_another_is_there(tmp_path, damage):
    """Without a profile to keep, or over one of another fit, the refit is written: the
    committed fit but for the time it was written."""
    packed = tmp_path / "data" / "h100" / "poppl-herz.sqlite.xz"
    packed.parent.mkdir(parents=True)
    shutil.copy(DATA / "h100" / "poppl-herz.sqlite.xz", packed)
    folder = tmp_path / "data" / "profiles"
    before = json.loads(_profile("h100").read_text())
    if damage == "other fit":
        folder.mkdir()
        other = json.loads(json.dumps(before))
        other["state"]["base"]["intercept"] *= 1.01
        (folder / _profile("h100").name).write_text(json.dumps(other, indent=1) + "\n")
    path, written = fit_committed_profile(packed, folder, "poppl-herz")
    assert written and path == folder / _profile("h100").name
    _assert_same_fit(json.loads(path.read_text()), before)


@pytest.mark.parametrize("gpu", sorted(DEVICES))
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_the_committed_profiles_hold_the_fits_of_the_random_kernel_evaluation(gpu, name):
    """data/<gpu>/random-eval.json records the fitted state its figures were predicted
    with (benchmarks/poppl_herz.py evaluate): the committed profile holds it, the GPUs'
    bit for bit; PoCL's was fitted on another machine, whose least-squares solutions of the
    curves differ from the eighth digit, so within 1e-6 (a fit of another store, suite or
    variant is off by far more)."""
    model = load_profile(_profile(gpu, name))
    evaluated = json.loads((DATA / gpu / "random-eval.json").read_text())
    assert model.provenance_["device"] == DEVICES[gpu][0] == evaluated["device"]["device"]
    assert model.classes is VARIANTS[name]
    assert model.provenance_["store"].endswith(f"data/{gpu}/poppl-herz.sqlite.xz")
    assert model.provenance_["suite"] == ("measurement-cpu" if gpu == "pocl"
                                          else "measurement")
    state, recorded = model.fitted_state(), evaluated["models"][name]["fitted"]
    assert state["simd_width"] == recorded["simd_width"]
    assert set(state["terms"]) == set(recorded["terms"])

    for (where, value), (_, want) in zip(_numbers(state), _numbers(recorded), strict=True):
        assert value == pytest.approx(want, rel=1e-6, abs=1e-30), where
    if gpu != "pocl":
        assert state == recorded

# }}}


# {{{ found by --device

@pytest.mark.parametrize("gpu", sorted(DEVICES))
def test_predict_finds_the_committed_profile_of_the_device_named(gpu, kernel_file,
                                                                   capsys):
    code = _predict(kernel_file, "--model", "poppl-herz", "--device", DEVICES[gpu][2])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    doc = json.loads(captured.out)
    assert doc["device"] == DEVICES[gpu][0]
    assert Path(doc["profile"]).resolve() == _profile(gpu).resolve()
    model = load_profile(_profile(gpu))
    assert doc["seconds"] == model.predict(KERNEL, LAUNCH)
    assert doc["breakdown"] == model.explain(KERNEL, LAUNCH)
    assert doc["transfer"] == model.transfer(KERNEL, LAUNCH)


def test_the_table_names_the_device_and_the_profile_found(kernel_file, capsys):
    assert _predict(kernel_file, "--model", "poppl-herz", "--device", "h200",
                    json_out=False) == 0
    first, second = capsys.readouterr().out.splitlines()[:2]
    assert first.startswith("predicted run time of axpy on NVIDIA H200, poppl-herz model")
    assert second.strip().startswith("profile: ")
    assert _profile("h200").name in second and "--device 'h200'" in second


def test_the_committed_profiles_are_found_from_another_folder(kernel_file, tmp_path,
                                                               monkeypatch, capsys):
    """From outside the checkout, its data/profiles/ (kernelcast runs from it)."""
    monkeypatch.chdir(tmp_path)
    assert _predict(kernel_file, "--model", "poppl-herz", "--device", "h100") == 0
    doc = json.loads(capsys.readouterr().out)
    assert Path(doc["profile"]) == _profile("h100")


def test_a_profile_calibrated_here_comes_before_the_committed_one(kernel_file, tmp_path,
                                                                  monkeypatch, capsys):
    """kernelcast-data/ (where calibrate writes) first: the user's own fit of the device."""
    monkeypatch.chdir(tmp_path)
    own = tmp_path / "kernelcast-data" / _profile("h100").name
    own.parent.mkdir()
    shutil.copy(_profile("h100"), own)
    assert _predict(kernel_file, "--model", "poppl-herz", "--device", "h100") == 0
    assert json.loads(capsys.readouterr().out)["profile"] == str(own.relative_to(tmp_path))


def test_find_profiles_leaves_the_simple_variant_and_other_models_out():
    found = find_profiles("poppl-herz")
    assert sorted(p.name for p, _ in found if p.parent.resolve() == PROFILES.resolve()) \
        == sorted(_profile(g).name for g in DEVICES)
    assert [p.name for p, _ in find_profiles("poppl-herz", "H100 80GB")] \
        == [_profile("h100").name]
    assert find_profiles("poppl-herz", "h100", backend="cuda") == []

# }}}


# {{{ never another device's profile; one line that says how to fit one

def _error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err, err
    return err


def test_no_profile_of_the_device_is_one_line_that_says_how_to_fit_one(kernel_file, capsys):
    code = _predict(kernel_file, "--model", "poppl-herz", "--device", "A100 SXM4")
    err = _error(capsys)
    assert code == 2
    assert "no poppl-herz profile of a device named like 'A100 SXM4'" in err
    assert "NVIDIA H200" in err  # those there are
    assert "kernelcast calibrate --model poppl-herz --device 'A100 SXM4'" in err


def test_a_missing_committed_profile_names_the_store_and_the_script(kernel_file, tmp_path,
                                                                    monkeypatch, capsys):
    """A checkout whose data/h100/ has the measurements but data/profiles/ no profile."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(kernelcast.profile, "_CHECKOUT_PROFILES", tmp_path / "none")
    (tmp_path / "data" / "profiles").mkdir(parents=True)
    (tmp_path / "data" / "h100").mkdir()
    for name in ("device.json", "poppl-herz.sqlite.xz"):
        shutil.copy(DATA / "h100" / name, tmp_path / "data" / "h100" / name)
    code = _predict(kernel_file, "--model", "poppl-herz", "--device", "h100")
    err = _error(capsys)
    assert code == 2
    assert "no poppl-herz profile of a device named like 'h100'" in err
    assert ("fit it from the committed measurements data/h100/poppl-herz.sqlite.xz: "
            "scripts/fit_profiles.sh poppl-herz") in err


def test_without_device_or_profile_the_line_names_both(kernel_file, capsys):
    code = _predict(kernel_file, "--model", "poppl-herz")
    err = _error(capsys)
    assert code == 2 and "--model poppl-herz needs --device NAME" in err
    assert "NVIDIA H100 80GB HBM3" in err and "or --profile FILE" in err


@pytest.mark.parametrize("extra, message", [
    (["--model", "poppl-herz", "--device", "nvidia"], "names several devices"),
    (["--model", "poppl-herz", "--device", "h100", "--profile", str(_profile("h200"))],
     "is a profile of NVIDIA H200, not of a device named like 'h100'"),
    (["--device", "h100"], "give --model too"),
    (["--model", "poppl-herz", "--device", " "], "a part of the device's name"),
])
def test_another_devices_profile_is_never_taken(kernel_file, capsys, extra, message):
    code = _predict(kernel_file, *extra)
    err = _error(capsys)
    assert code == 2 and message in err

# }}}
