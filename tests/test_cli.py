"""The command line, run in-process and as a real subprocess."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernelcast.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "kernels.py"


def test_properties_table(capsys):
    assert main(["properties", f"{EXAMPLES}:scale", "--param", "n=4096"]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line.split()[1:] for line in out.splitlines()
             if line.startswith(("mul_f32", "workgroup", "load_global_32_s1"))}
    assert lines["mul_f32"][0] == "4096"
    assert lines["workgroup"][0] == "16"
    assert "floor((255 + n)/256)" in " ".join(lines["workgroup"])
    assert "stride 1 -> s1" in out


def test_properties_json_with_statistics(capsys):
    code = main(["properties", f"{EXAMPLES}:spmv_csr", "--param", "n=1000",
                 "--stat", "rowlen=12.5", "--json"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["kernel"] == "spmv_csr"
    assert doc["properties"]["add_f32"]["value"] == 12500.0
    assert doc["properties"]["load_global_32_irregular"]["value"] == 37500.0
    assert doc["data_statistics"] == {"rowlen": 12.5}
    assert {a["class"] for a in doc["accesses"]} == {"s1", "irregular"}


def test_symbolic_only_without_params(capsys):
    assert main(["properties", f"{EXAMPLES}:scale"]) == 0
    out = capsys.readouterr().out
    assert "count at" not in out
    assert "{ n }" in out


@pytest.mark.parametrize(("args", "message"), [
    ([f"{EXAMPLES}:spmv_csr", "--param", "n=10"], "rowlen"),
    ([f"{EXAMPLES}:scale", "--param", "n=10", "m=3"], "unknown m"),
    ([f"{EXAMPLES}:scale", "--param", "n=1.5"], "integers"),
    ([f"{EXAMPLES}:scale", "--param", "n"], "NAME=VALUE"),
    ([f"{EXAMPLES}:scale", "--param", "n=1", "n=2"], "--param n is given twice"),
    ([f"{EXAMPLES}:nothere"], "no callable named 'nothere'"),
    (["missing.py:scale"], "no such file"),
])
def test_errors_exit_2_with_a_message(capsys, args, message):
    assert main(["properties", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kernelcast: error:")
    assert message in err


def test_entry_point_runs_as_a_process():
    result = subprocess.run(
        [sys.executable, "-m", "kernelcast", "properties", f"{EXAMPLES}:scale", "--param",
         "n=100", "--json"], capture_output=True, text=True, check=True)
    assert json.loads(result.stdout)["properties"]["launch"]["value"] == 1.0


def test_version(capsys):
    from kernelcast import __version__

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"kernelcast {__version__}"


def test_sizes_are_parsed_as_integers():
    """2^53 + 1 survives (through a float it would become 2^53)."""
    from kernelcast.cli.args import sizes

    assert sizes(["n=9007199254740993"]) == {"n": 2**53 + 1}
    assert sizes(["n=1e3"]) == {"n": 1000}
