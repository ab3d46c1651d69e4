"""docs/tuning.md's quick start runs as written: each `$ kernelcast tune ...` line of its
console blocks, from a folder holding the repository's examples/ and data/, exits 0 and
prints what the text around it says."""

import json
import re
import shlex
from pathlib import Path

import pytest

from kernelcast.cli import main

REPO = Path(__file__).resolve().parents[1]
COMMANDS = re.findall(r"^\$ (kernelcast tune .+)$", (REPO / "docs" / "tuning.md").read_text(),
                      flags=re.MULTILINE)


@pytest.fixture
def here(tmp_path, monkeypatch):
    for name in ("examples", "data"):
        (tmp_path / name).symlink_to(REPO / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_quick_start_has_its_three_commands():
    assert len(COMMANDS) == 3 and all("examples/tunable.py:" in c for c in COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_a_quick_start_command_runs_as_written(command, here, capsys, request):
    argv = shlex.split(command)[1:]
    if "--device" in argv:
        request.getfixturevalue("pocl_device")  # the command measures on PoCL
    assert main(argv) == 0
    out = capsys.readouterr().out
    if "--json" in argv:
        doc = json.loads(out)
        assert doc["mode"] == "rank-only" and doc["ranked_for"] == "NVIDIA H100 80GB HBM3"
        assert doc["winner"]["code"].startswith("import loopy as lp")
    elif "--rank-only" in argv:
        assert "no device measured" in out and "best predicted:" in out
    else:
        assert "different devices" in out and "winner: rank" in out
        assert "it stopped:" in out
        assert (here / "tune.sqlite").exists()
