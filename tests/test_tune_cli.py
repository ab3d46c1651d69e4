"""`kernelcast tune` on PoCL: rank a small space with Hong–Kim, measure the top 2, print
the winner and its code; a rerun measures nothing; bad input exits 2 with one line."""

import json
from pathlib import Path

import pytest
from tune_kernels import FACTORY, SPACE_TOML

from kernelcast.cli import main
from kernelcast.measure.store import read_measurements

pytestmark = pytest.mark.usefixtures("pocl_device")


@pytest.fixture
def files(tmp_path):
    (tmp_path / "k.py").write_text(FACTORY)
    (tmp_path / "space.toml").write_text(SPACE_TOML)
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
    assert doc["space"] == {"variants": 8, "valid": 8, "skipped": 0, "skipped_reasons": {},
                            "thinned": []}
    assert [r["rank"] for r in doc["top"]] == [1, 2] and doc["winner"]["key"] == key
    assert doc["winner"]["measured_s"] == min(r["measured_s"] for r in doc["top"])


@pytest.mark.parametrize(("change", "message"), [
    ({"space": "missing.toml"}, "no such space file"),
    ({"space": "bad.toml"}, "not a TOML space file"),
    ({"top": "-1"}, "--measure-top -1: expected a positive integer"),
    ({"extra": ("--budget", "0")}, "--budget 0: expected a number of measurements"),
    ({"extra": ("--budget", "3")}, "--measure-top measures the K best predicted and "
                                   "--budget searches"),
    ({"extra": ("--rank-only",)}, "--rank-only measures nothing: not with --measure-top"),
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
    profile = (Path(__file__).resolve().parents[1] / "data" / "profiles"
               / "nvidia-h100-80gb-hbm3-cuda-learned.json")
    argv[at:at + 4] = ["--profile", str(profile)]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["model"] == "learned" and doc["model_hardware"] == "NVIDIA H100 80GB HBM3"
    assert len(doc["top"]) == 3 and all(r["predicted_s"] > 0 for r in doc["top"])
    predicted = [r["predicted_s"] for r in doc["top"]]
    assert predicted == sorted(predicted)
    assert all(r["status"] in ("ok", "unstable") for r in doc["top"])
    assert doc["winner"]["code"].startswith("import loopy as lp")


WIDE = "[axes.j]\ngroup = [8, 1024, 2048]\n[axes.i]\ngroup = [1]\n"


def test_rank_only_ranks_for_the_models_device_with_none_present(files, capsys):
    # PoCL allows 4,096 work-items a group; the H100 the model ranks for allows 1,024, so
    # the group of 2,048 is skipped for that reason, and nothing is measured or stored
    (files / "wide.toml").write_text(WIDE)
    argv = ["tune", str(files / "k.py:build"), "--param", "n=24", "m=4096", "--space",
            str(files / "wide.toml"), "--model", "hong-kim", "--hardware", "h100",
            "--rank-only", "--json"]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["mode"] == "rank-only" and doc["device"] is None and not doc["measuring"]
    assert doc["ranked_for"] == "NVIDIA H100 80GB HBM3"
    assert doc["limits"]["max_group_size"] == 1024
    assert doc["space"]["skipped_reasons"] == {"a work-group of more than 1024 work-items": 1}
    assert [r["key"] for r in doc["top"]] and all(r["measured_s"] is None for r in doc["top"])
    assert doc["winner"]["code"].startswith("import loopy as lp")
    assert not list(files.glob("*.sqlite"))
    # --measure-top 0 is the same
    assert main([*argv[:-2], "--measure-top", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["top"] == doc["top"]


def test_measuring_on_another_device_than_the_models_is_refused_unless_named(files, capsys):
    argv = _args(files)
    at = argv.index("--device")
    del argv[at:at + 2]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ranks for NVIDIA H100 80GB HBM3, but the device here" \
        in err and "--rank-only" in err
    assert not (files / "tune.sqlite").exists()
    # named on purpose: measured, and the table says the columns are of two devices
    assert main(_args(files, "--json")) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["devices_differ"] and doc["ranked_for"] != doc["device"]
    assert main(_args(files)) == 0
    out = capsys.readouterr().out
    assert "measured on" in out and "different devices" in out


def _guided(files, budget):
    argv = _args(files, "--budget", str(budget), "--batch", "2", "--json")
    at = argv.index("--measure-top")
    del argv[at:at + 2]
    return argv


def test_guided_search_measures_its_budget_and_resumes_after_a_kill(files, capsys):
    import subprocess
    import sys
    import time

    from kernelcast.measure.store import Store

    # killed once its first batch is stored ...
    script = ("import sys\nfrom kernelcast.cli import main\n"
              f"sys.exit(main({_guided(files, 6)!r}))\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    db = files / "tune.sqlite"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if db.exists() and len(read_measurements(db)) >= 2:
            break
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    first = set(read_measurements(db).case_name)
    assert 2 <= len(first) < 6  # killed mid-search
    # ... and resumed: it measures what is left of the budget (unless nothing left is
    # predicted to be faster), nothing twice
    assert main(_guided(files, 6)) == 0
    doc = json.loads(capsys.readouterr().out)
    names = list(read_measurements(db).case_name)
    assert len(names) == len(set(names)) <= 6 and first <= set(names)
    assert doc["stopped"] in ("budget", "nothing predicted faster")
    assert (len(names) == 6) == (doc["stopped"] == "budget")
    assert doc["mode"] == "guided" and len(doc["top"]) == len(names)
    assert {f"mm/{r['key']}" for r in doc["top"]} == set(names)
    timed = [r["measured_s"] for r in doc["top"] if r["measured_s"]]
    assert doc["winner"]["measured_s"] == min(timed)
    with Store(db) as store:  # a rerun with the same budget measures nothing
        before = len(store.rows())
    assert main(_guided(files, 6)) == 0
    capsys.readouterr()
    assert len(read_measurements(db)) == before
