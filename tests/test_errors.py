"""Bad input gets an error that names the problem."""

import json
import os
import warnings
from pathlib import Path

import loopy as lp
import numpy as np
import pytest

import kernelcast as kc
from kernelcast.suites import kernels


@pytest.fixture(scope="module")
def scale_props():
    return kc.extract_properties(kernels.scale(64))


def test_not_a_loopy_kernel():
    with pytest.raises(kc.NotALoopyKernelError, match="expected a Loopy kernel"):
        kc.extract_properties("out[i] = 2*a[i]")
    assert issubclass(kc.NotALoopyKernelError, kc.KernelcastError)


def test_dtypes_not_fixed_names_the_argument():
    knl = lp.make_kernel("{[i]: 0<=i<n}", "out[i] = 2*a[i]", lang_version=(2018, 2))
    with pytest.raises(kc.DtypeNotFixedError, match="'a'|: a"):
        kc.extract_properties(knl)


def test_loop_kernel_is_accepted():
    knl = kernels.scale(64).default_entrypoint
    assert "mul_f32" in kc.extract_properties(knl).names


@pytest.mark.parametrize(("params", "match"), [
    ({}, "missing n"),
    ({"n": 10, "m": 3}, "unknown m"),
    ({"m": 3}, "missing n; unknown m"),
    ({"n": -1}, "must not be negative"),
    ({"n": 2.5}, "must be an integer"),
    ({"n": "4096"}, "must be an integer"),
    ({"n": True}, "must be an integer"),
    ({"n": 0}, "violate the assumptions"),
])
def test_bad_parameters(scale_props, params, match):
    with pytest.raises(kc.ParameterError, match=match):
        scale_props.evaluate(params)


def test_integral_floats_and_numpy_ints_are_sizes(scale_props):
    assert scale_props.evaluate({"n": 128.0}) == scale_props.evaluate({"n": np.int64(128)})


def test_params_must_be_a_mapping(scale_props):
    with pytest.raises(kc.ParameterError, match="mapping"):
        scale_props.evaluate([("n", 3)])


def test_several_device_launches_are_refused():
    knl = lp.make_kernel(
        "{[i, j]: 0<=i,j<n}",
        """
        tmp[i] = 2*a[i] {id=first}
        ... gbarrier {id=sync, dep=first}
        out[j] = tmp[j] + 1 {dep=sync}
        """,
        [lp.GlobalArg("tmp", np.float32, shape="n"), "..."],
        lang_version=(2018, 2), assumptions="n >= 1")
    knl = lp.add_dtypes(knl, {"a": np.float32})
    knl = lp.split_iname(knl, "i", 32, outer_tag="g.0", inner_tag="l.0")
    knl = lp.split_iname(knl, "j", 32, outer_tag="g.0", inner_tag="l.0")
    with pytest.raises(kc.UnsupportedKernelError, match="device launches"):
        kc.extract_properties(knl)


def test_uncounted_types_warn():
    knl = lp.make_kernel("{[i]: 0<=i<n}", "out[i] = a[i] + a[i]", lang_version=(2018, 2),
                         assumptions="n >= 1")
    knl = lp.add_dtypes(knl, {"a": np.float16})
    knl = lp.split_iname(knl, "i", 32, outer_tag="g.0", inner_tag="l.0")
    with pytest.warns(kc.UncountedWarning):
        props = kc.extract_properties(knl)
    assert props.names == ("workgroup", "launch")


# {{{ profiles, hardware and registers files: a ProfileError naming the file (issue 21)

REPO = Path(__file__).resolve().parent.parent
PROFILE = REPO / "data" / "profiles" / "nvidia-h100-80gb-hbm3-opencl-paper.json"
HONG_KIM = REPO / "data" / "profiles" / "nvidia-h100-80gb-hbm3-cuda-hong-kim.json"
STORE = REPO / "data" / "h100" / "opencl.sqlite"


def _doc(path=PROFILE):
    return json.loads(path.read_text())


def _refused(path, match, loader=None):
    from kernelcast.errors import ProfileError

    with pytest.raises(ProfileError, match=match) as err:
        (loader or kc.load_profile)(path)
    message = str(err.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(("change", "match"), [
    (lambda d: d["state"].update(weights=[1e-9, 2e-9]), "no weights"),
    (lambda d: d["state"].update(weights="1e-9"), "no weights"),
    (lambda d: d["state"]["weights"].update(launch=[5e-6]), "launch.*not a finite number"),
    (lambda d: d["state"]["weights"]["launch"].update(per=5), "per is a number"),
    (lambda d: d.update(model=[]), "model is a list, not a string"),
    (lambda d: d.update(model={"name": "paper"}), "model is an object"),
    (lambda d: d.update(store=5), r"store is a number \(5\), not a string"),
    (lambda d: d.update(fit="x"), r"fit is a string \('x'\), not an object"),
    (lambda d: d.update(fit={"suites": "measurement"}), "fit.suites is a string"),
    (lambda d: d.update(fit={"cases": -3}), "fit.cases .* not a non-negative integer"),
    (lambda d: d.update(fit={"solver": [{"success": "yes"}]}), r"fit.solver\[0\].success"),
    (lambda d: d.update(params=[]), "params is a list"),
    (lambda d: d.update(params={"nonnegative": "no"}), "params.nonnegative is a string"),
    (lambda d: d.update(state=[]), "state is a list"),
    (lambda d: d.update(compute_units="132"), "compute_units is a string"),
    (lambda d: d.update(device=None), "device is null, not a string"),
    (lambda d: d.update(format=True), "format True"),
    (lambda d: d.update(created_at=20261125), "created_at is a number"),
])
def test_every_field_of_a_profile_is_checked(tmp_path, change, match):
    doc = _doc()
    change(doc)
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    assert str(path) in _refused(path, match)


@pytest.mark.parametrize(("change", "match"), [
    (lambda s: s.update(hardware=[]), "no hardware description"),
    (lambda s: s["hardware"].update(warp_size="32"), "warp_size '32' is not a positive integer"),
    (lambda s: s["hardware"].update(freq_hz=0), "freq_hz 0 is not a positive number"),
    (lambda s: s["hardware"].pop("mem_ld"), "missing.*mem_ld"),
    (lambda s: s["hardware"].update(guessed="mem_ld"), "guessed"),
    (lambda s: s.update(registers=[18]), "state.registers is a list"),
    (lambda s: s.update(registers={"k": "18"}), "state.registers.k is a string"),
])
def test_a_hong_kim_profiles_hardware_and_registers_are_checked(tmp_path, change, match):
    doc = _doc(HONG_KIM)
    change(doc["state"])
    path = tmp_path / "hk.json"
    path.write_text(json.dumps(doc))
    _refused(path, match)


@pytest.mark.parametrize(("make", "match"), [
    (lambda p: p.write_bytes(bytes(range(256)) * 4), "not a JSON profile: not UTF-8"),
    (lambda p: p.write_bytes(b""), "not a JSON profile: the file is empty"),
    (lambda p: p.write_text(PROFILE.read_text()[:500]), "not a JSON profile: "),
    (lambda p: p.write_text("[" * 100000 + "]" * 100000), "not a JSON profile"),
    (lambda p: p.write_text('{"format": 2, "x": ' + "9" * 5000 + "}"), "not a JSON profile"),
    (lambda p: p.write_text("[1, 2]"), r"not a kernelcast profile \(a JSON list"),
    (lambda p: p.mkdir(), "is a directory, not a profile"),
    (lambda p: p.write_bytes(STORE.read_bytes()[:4096]),
     "is a measurement store, not a profile; did you mean --db"),
])
def test_a_file_that_is_not_a_profile_is_refused_naming_it(tmp_path, make, match):
    path = tmp_path / "p.json"
    make(path)
    assert str(path) in _refused(path, match)


def test_unreadable_and_unnamable_profiles_are_refused(tmp_path, monkeypatch):
    long = tmp_path / ("x" * 300 + ".json")
    _refused(long, "file name too long")
    through = tmp_path / "file"
    through.write_text("{}")
    _refused(through / "p.json", "no profile at|not a directory")
    path = tmp_path / "p.json"
    path.write_text(PROFILE.read_text())

    real = os.open

    def denied(file, flags, *args, **kwargs):  # root reads any file: simulate
        if os.fspath(file) == str(path):
            raise PermissionError(13, "Permission denied", str(file))
        return real(file, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)
    _refused(path, "cannot read the profile: permission denied")
    with pytest.raises(kc.UsageError, match="path to a JSON file, got int"):
        kc.load_profile(5)


def test_hardware_files_are_checked_like_profiles(tmp_path):
    from kernelcast.models.hong_kim import load_hardware

    path = tmp_path / "gpu.json"
    hw = json.loads((REPO / "src" / "kernelcast" / "hardware" / "h100.json").read_text())
    path.write_text(json.dumps(hw)[:200])
    _refused(path, "not a JSON hardware description", load_hardware)
    path.write_text(json.dumps({**hw, "active_sms": [132]}))
    _refused(path, "active_sms a list is not a positive integer", load_hardware)
    path.write_text(json.dumps([hw]))
    _refused(path, "not a hardware description", load_hardware)
    _refused(tmp_path, "is a directory", load_hardware)
    _refused(tmp_path / "missing.json", "no hardware description at", load_hardware)
    _refused(STORE, "is a measurement store", load_hardware)
    _refused("gtx9999", "known: .*h100", load_hardware)


def test_a_registers_file_is_checked(tmp_path):
    from kernelcast.models import HongKimModel

    for content, match in ((None, "no registers file at"),
                           ("{", "not a registers file .*, not JSON"),
                           ('{"k": 18}', "'k' has 18 registers"),
                           ('{"k": {"registers": "18"}}', "'k' has '18' registers"),
                           ("[]", "not a registers file")):
        path = tmp_path / "registers.json"
        if content is not None:
            path.write_text(content)
        _refused(path, match, lambda p: HongKimModel(hardware="h100", registers=p).fit())
        path.unlink(missing_ok=True)


def test_writing_a_profile_over_a_store_or_into_a_file_is_refused(tmp_path):
    from kernelcast.profile import check_profile_path

    store = tmp_path / "s.sqlite"
    store.write_bytes(STORE.read_bytes()[:4096])
    _refused(store, "is a measurement store, not a profile; did you mean --db",
             check_profile_path)
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    _refused(notes, "not a kernelcast profile; refusing to overwrite it", check_profile_path)
    _refused(tmp_path, "is a directory", check_profile_path)
    _refused(notes / "p.json", "is not a directory", check_profile_path)
    _refused(tmp_path / ("y" * 300 + ".json"), "file name too long", check_profile_path)
    assert check_profile_path(tmp_path / "new" / "p.json") == tmp_path / "new" / "p.json"
    assert not (tmp_path / "new").exists()
    model = kc.load_profile(PROFILE)
    written = kc.save_profile(model, tmp_path / "again.json")
    assert kc.load_profile(written).weights_ == model.weights_
    kc.save_profile(model, written)  # a profile may be replaced by a profile
    with pytest.raises(kc.KernelcastError, match="measurement store"):
        kc.save_profile(model, store)
    assert store.read_bytes() == STORE.read_bytes()[:4096]

# }}}


# {{{ the Python API: a profile's path as the model; a sequential kernel warns

def test_predict_takes_a_profiles_path(scale_props):
    model = kc.load_profile(PROFILE)
    expected = kc.predict(scale_props, {"n": 4096}, model)
    assert kc.predict(scale_props, {"n": 4096}, str(PROFILE)) == expected
    assert kc.predict(scale_props, {"n": 4096}, PROFILE) == expected
    assert kc.explain(scale_props, {"n": 4096}, PROFILE) == kc.explain(
        scale_props, {"n": 4096}, model)
    for wrong in (5, None, {"model": "paper"}, [PROFILE]):
        with pytest.raises(kc.UsageError, match="model must be a kernelcast Model .* or the "
                                                "path of a profile, got"):
            kc.predict(scale_props, {"n": 4096}, wrong)
    with pytest.raises(kc.KernelcastError, match="no profile at"):
        kc.predict(scale_props, {"n": 4096}, "missing.json")


def test_a_kernel_without_launch_tags_warns_naming_its_loops():
    knl = lp.make_kernel("{[i, j, k]: 0<=i<n and 0<=j<m and 0<=k<m}",
                         "out[i, j] = sum(k, a[i, k])", lang_version=(2018, 2),
                         assumptions="n >= 1 and m >= 1")
    knl = lp.add_dtypes(knl, {"a": np.float32})
    with pytest.warns(kc.SequentialKernelWarning,
                      match="no parallel launch tags .* loops that could be tagged: i, j "):
        kc.extract_properties(knl)
    tagged = lp.split_iname(knl, "i", 32, outer_tag="g.0", inner_tag="l.0")
    with warnings.catch_warnings():
        warnings.simplefilter("error", kc.SequentialKernelWarning)
        kc.extract_properties(tagged)
        # no loop at all: one work-item by design
        kc.extract_properties(lp.add_dtypes(lp.make_kernel(
            "{:}", "out[0] = 2*a[0]", lang_version=(2018, 2)), {"a": np.float32}))
    assert issubclass(kc.SequentialKernelWarning, kc.KernelcastWarning)

# }}}


def test_a_profiles_files_are_found_from_any_folder(tmp_path, monkeypatch):
    """The registers file a Hong–Kim profile was fitted with is written relative to the
    profile, like its store, so that refitting a clone works from another folder."""
    from kernelcast.models import HongKimModel

    (tmp_path / "gpu").mkdir()
    registers = tmp_path / "gpu" / "registers.json"
    registers.write_text(json.dumps({"scale": {"registers": 20}}))
    monkeypatch.chdir(tmp_path)
    model = HongKimModel(hardware="h100", registers="gpu/registers.json").fit()
    path = kc.save_profile(model, tmp_path / "profiles" / "hk.json")
    assert json.loads(path.read_text())["params"]["registers"] == "../gpu/registers.json"
    monkeypatch.chdir(tmp_path / "gpu")
    again = kc.load_profile(path)
    assert again.clone().fit().registers_ == {"scale": 20}


@pytest.mark.parametrize("value", [10**400, -(10**30), 2**64], ids=["1e400", "-1e30", "2^64"])
def test_an_integer_beyond_64_bits_in_a_json_file_is_refused(tmp_path, value):
    """Converting it to a float would overflow wherever a number is checked."""
    hw = json.loads((REPO / "src" / "kernelcast" / "hardware" / "h100.json").read_text())
    hw["freq_hz"] = value
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps(hw))
    from kernelcast.errors import ProfileError
    from kernelcast.models.hong_kim import load_hardware

    with pytest.raises(ProfileError, match="beyond 64 bits"):
        load_hardware(path)
