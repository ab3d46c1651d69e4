"""End to end on PoCL: calibrate (the CPU-sized measurement suite), then predict, evaluate,
report and the README's main job, all through the command line."""

import json
from collections import Counter
from pathlib import Path

import pytest

from kernelcast.cli import main
from kernelcast.measure.store import read_measurements
from kernelcast.profile import load_profile
from kernelcast.suites.paper import TEST_CPU

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "kernels.py"


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    """`kernelcast calibrate --device portable --runs 5` in a fresh folder: the real
    measurement of the measurement-cpu suite on PoCL and the fit (half a minute on two
    cores). Five launches a case, the fewest the protocol takes (four dropped, one kept),
    not the default 30: what is checked here is that the whole suite is measured and
    fitted, not how precisely."""
    folder = tmp_path_factory.mktemp("calibration")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        assert main(["calibrate", "--device", "portable", "--runs", "5"]) == 0
        profiles = list((folder / "kernelcast-data").glob("*.json"))
        stores = list((folder / "kernelcast-data").glob("*.sqlite"))
    assert len(profiles) == len(stores) == 1
    return folder, profiles[0], stores[0]


def test_calibration_measured_the_suite_and_fitted(calibrated, capsys):
    _folder, profile_path, store_path = calibrated
    model = load_profile(profile_path)
    frame = read_measurements(store_path)
    timed = frame[frame.suite == "measurement-cpu"]
    assert model.name == "paper" and profile_path.name.endswith("-opencl-paper.json")
    assert model.provenance_["suite"] == "measurement-cpu"
    assert model.provenance_["backend"] == "opencl"
    assert model.provenance_["cases"] == int(timed.status.isin(["ok", "unstable"]).sum()) > 200
    assert set(timed.kernel_class) == {"matmul_tiled", "matmul_naive", "scale_add",
                                       "transpose", "global_access", "filled_stride",
                                       "arithmetic", "empty"}
    assert {"launch", "workgroup", "add_f32", "add_f64"} <= set(model.weights_)
    assert model.fit_report_["training_geomean_rel_error"] < 0.5


def test_predict_command(calibrated, capsys):
    _folder, profile_path, _ = calibrated
    assert main(["predict", f"{EXAMPLES}:scale", "--profile", str(profile_path),
                 "--param", "n=1000000", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    # the paper's model is the inner product of its weights and the kernel's counts,
    # computed here from the profile file and the properties, not by the command
    import kernelcast as kc
    from kernelcast.frontends.files import load_factory

    weights = {k: v["value"] for k, v in
               json.loads(profile_path.read_text())["state"]["weights"].items()}
    counts = kc.extract_properties(load_factory(f"{EXAMPLES}:scale")()).evaluate(
        {"n": 1000000})
    assert doc["seconds"] == pytest.approx(sum(weights.get(k, 0.0) * v
                                               for k, v in counts.items()), rel=1e-12)
    assert doc["breakdown"] == pytest.approx({k: weights[k] * v for k, v in counts.items()
                                              if v and k in weights}, rel=1e-12)
    assert main(["predict", f"{EXAMPLES}:scale", "--profile", str(profile_path),
                 "--param", "n=1000000"]) == 0
    assert "predicted run time on" in capsys.readouterr().out


def test_evaluate_command_measures_the_test_suite(calibrated, capsys):
    folder, profile_path, store_path = calibrated
    assert main(["evaluate", "--profile", str(profile_path), "--cv"]) == 0
    out = capsys.readouterr().out
    for heading in ("Table 1", "Table 2", "cross-validation"):
        assert heading in out
    for kernel in ("finite_difference", "skinny_matmul", "nbody", "convolution", "overall"):
        assert kernel in out
    frame = read_measurements(store_path)
    # the test suite at the sizes chosen, and any probe of a smaller p that ran faster
    # than a launch (§4.2: such a p is not chosen, but its row is kept)
    stored = frame[frame.suite == "test-cpu"].groupby("kernel_class").size().to_dict()
    expected = Counter(c.class_name for c in TEST_CPU.cases())
    assert set(stored) == set(expected)
    assert all(stored[k] >= n for k, n in expected.items()), (stored, expected)


def test_report_command(calibrated, tmp_path, capsys):
    _folder, profile_path, _ = calibrated
    main(["evaluate", "--profile", str(profile_path)])  # make sure the test suite is in
    capsys.readouterr()
    assert main(["report", "--profile", str(profile_path), "--out", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert all(Path(line).parent == tmp_path for line in out.splitlines())  # paths only
    assert "cross-validation 1/" in err  # its long part shows progress, on stderr
    names = {Path(line).name for line in out.split()}
    assert {"report.md", "table1.csv", "weights.csv", "cv.csv", "predicted_vs_measured.png",
            "breakdown.png"} <= names
    assert (tmp_path / "predicted_vs_measured.png").read_bytes()[:4] == b"\x89PNG"
    assert "Table 1" in (tmp_path / "report.md").read_text()


def test_demo_is_the_main_job(calibrated, capsys):
    """The README's first command; in the calibrated folder it resumes the stored
    campaign instead of measuring again."""
    folder, _, _ = calibrated
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        assert main(["demo", "--device", "portable"]) == 0
    out = capsys.readouterr().out
    assert "Table 1" in out and "overall" in out and "calibrated in" in out
