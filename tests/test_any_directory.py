"""The verbs find the committed profiles and the packaged hardware descriptions from any
current folder, not only from the repository's root: advise a criteria profile by the
device its CSV names, predict a poppl-herz profile by --device, tune the H100's packaged
description by --hardware."""

import json
import tarfile
from pathlib import Path

from kernelcast.cli import main

ROOT = Path(__file__).resolve().parents[1]
PROFILES = ROOT / "data" / "profiles"

AXPY = """__kernel void axpy(__global const float *x, __global float *y, float a)
{
    int i = get_global_id(0);
    y[i] = a * x[i] + y[i];
}
"""


def test_advise_finds_the_committed_criteria_profile(tmp_path, monkeypatch, capsys):
    with tarfile.open(ROOT / "data" / "h100" / "criteria" / "ncu.tar.xz") as tar:
        (tmp_path / "naive.csv").write_bytes(
            tar.extractfile("transpose-1-naive.csv").read())
    monkeypatch.chdir(tmp_path)
    assert main(["advise", "naive.csv"]) == 0
    out = capsys.readouterr().out
    profile = PROFILES / "nvidia-h100-80gb-hbm3-cuda-criteria.json"
    assert f"characterization: NVIDIA H100 80GB HBM3 ({profile})" in out


def test_predict_finds_the_committed_poppl_herz_profile(tmp_path, monkeypatch, capsys):
    (tmp_path / "axpy.cl").write_text(AXPY)
    monkeypatch.chdir(tmp_path)
    assert main(["predict", "axpy.cl", "--model", "poppl-herz", "--device", "h100",
                 "--global-size", "4096", "--local-size", "256", "--arg", "a=2",
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert Path(doc["profile"]) == PROFILES / "nvidia-h100-80gb-hbm3-opencl-poppl-herz.json"
    assert doc["seconds"] > 0


def test_tune_ranks_with_the_packaged_hardware(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["tune", f"{ROOT / 'examples' / 'tunable.py'}:transpose", "--param", "n=64",
                 "--model", "hong-kim", "--hardware", "h100", "--rank-only", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["mode"] == "rank-only" and doc["ranked_for"] == "NVIDIA H100 80GB HBM3"
    assert doc["top"] and all(r["predicted_s"] > 0 for r in doc["top"])
    assert list(tmp_path.iterdir()) == []  # rank-only writes nothing here
