"""`kernelcast tune` on PoCL: rank a small space with Hong–Kim, measure the top 2, print
the winner and its code; a rerun measures nothing; bad input exits 2 with one line."""

import json

import pytest
from tune_kernels import matmul_source

from kernelcast.cli import main
from kernelcast.measure.store import read_measurements

pytestmark = pytest.mark.usefixtures("pocl_device")

FACTORY = "import loopy as lp\nimport numpy as np\n" + matmul_source()
SPACE = "[axes.j]\ngroup = [4, 8]\nper_item = [1, 2]\n[axes.i]\ngroup = [1, 2]\n"


@pytest.fixture
def files(tmp_path):
    (tmp_path / "k.py").write_text(FACTORY)
    (tmp_path / "space.toml").write_text(SPACE)
    return tmp_path


def _args(tmp_path, *extra, space="space.toml", top="2", kernel="k.py:build"):
    return ["tune", str(tmp_path / kernel), "--param", "n=24", "m=40", "--space",
            str(tmp_path / space), "--model", "hong-kim", "--hardware", "h100",
            "--measure-top", top, "--device", "portable", "--db",
            str(tmp_path / "tune.sqlite"), *extra]


def test_tune_ranks_measures_the_top_k_and_prints_pasteable_code(files, capsys):
    import loopy as lp

    assert main(_args(files)) == 0
    out = capsys.readouterr().out
    assert "kernel mm (" in out and "n=24 m=40" in out
    assert "space: 8 variants, 8 valid, 0 skipped" in out
    rows = [line.split() for line in out.splitlines() if line.lstrip()[:2] in ("1 ", "2 ")]
    assert [r[0] for r in rows] == ["1", "2"] and all(r[-1] in ("ok", "unstable")
                                                      for r in rows)
    [winner] = [line for line in out.splitlines() if line.startswith("winner: rank ")]
    assert "predicted" in winner and "measured" in winner
    text = out.split("its code (after knl = the factory's kernel):\n", 1)[1]
    key = winner.split()[3].rstrip(":")
    namespace = {}
    exec(FACTORY, namespace)  # noqa: S102
    made = {"knl": namespace["build"]()}
    exec(text, made)  # noqa: S102 - what a user pastes
    from kernelcast.tune.space import apply, load_space

    space = load_space(files / "space.toml")
    variant = {k: int(v) for k, v in (p.split("=") for p in key.split(","))}
    expected = apply(namespace["build"](), variant, space)
    assert lp.generate_code_v2(made["knl"]).device_code() == \
        lp.generate_code_v2(expected).device_code()
    assert len(read_measurements(files / "tune.sqlite")) == 2

    # resumed: nothing measured twice, the same answer, as JSON
    assert main(_args(files, "--json")) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(read_measurements(files / "tune.sqlite")) == 2
    assert doc["space"] == {"variants": 8, "valid": 8, "skipped": 0, "skipped_reasons": {}}
    assert [r["rank"] for r in doc["top"]] == [1, 2] and doc["winner"]["key"] == key
    assert doc["winner"]["measured_s"] == min(r["measured_s"] for r in doc["top"])


@pytest.mark.parametrize(("change", "message"), [
    ({"space": "missing.toml"}, "no such space file"),
    ({"space": "bad.toml"}, "not a TOML space file"),
    ({"top": "0"}, "--measure-top 0: expected a positive integer"),
    ({"kernel": "k.py:nothere"}, "no callable named 'nothere'"),
    ({"extra": ("--param", "q=3")}, "has no size parameter q"),
])
def test_tune_errors_exit_2_with_one_line(files, capsys, change, message):
    (files / "bad.toml").write_text("[axes.j\n")
    extra = change.pop("extra", ())
    assert main(_args(files, *extra, **change)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("kernelcast: error:")
    assert message in err and "Traceback" not in err
    assert not (files / "tune.sqlite").exists()


def test_tune_ranks_with_the_learned_models_profile(files, capsys):
    # the learned model's H100 profile (fitted to the training corpus) ranks a kernel it
    # never saw; its predictions come out in the table like any model's
    argv = _args(files, "--json", top="3")
    at = argv.index("--model")
    argv[at:at + 4] = ["--profile", "data/profiles/nvidia-h100-80gb-hbm3-cuda-learned.json"]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["model"] == "learned" and doc["model_hardware"] == "NVIDIA H100 80GB HBM3"
    assert len(doc["top"]) == 3 and all(r["predicted_s"] > 0 for r in doc["top"])
    predicted = [r["predicted_s"] for r in doc["top"]]
    assert predicted == sorted(predicted)
    assert all(r["status"] in ("ok", "unstable") for r in doc["top"])
    assert doc["winner"]["code"].startswith("import loopy as lp")
