"""`kernelcast devices` and `kernelcast measure` on PoCL: in-process and as a process."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

import kernelcast.measure.campaign  # noqa: F401 - imported while sys.stderr is pytest's
from kernelcast.cli import main
from kernelcast.measure.store import read_measurements

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "kernels.py"


def test_devices_lists_pocl(capsys):
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    header, *lines = out.splitlines()
    assert header.split()[:3] == ["backend", "kind", "name"]
    [pocl] = [line for line in lines if "Portable Computing Language" in line]
    assert pocl.startswith("opencl ")
    assert "GiB" in pocl


def test_devices_json(capsys):
    assert main(["devices", "--json"]) == 0
    devices = json.loads(capsys.readouterr().out)
    [pocl] = [d for d in devices if d["platform"] == "Portable Computing Language"]
    assert pocl["backend"] == "opencl" and pocl["compute_units"] >= 1
    assert pocl["global_mem_bytes"] >= pocl["max_alloc_bytes"] > 0


def test_measure_a_kernel_twice_gives_one_row(tmp_path, capsys):
    db = tmp_path / "m.sqlite"
    args = ["measure", "--kernel", f"{EXAMPLES}:scale", "--param", "n=1000", "--runs", "6",
            "--tolerance", "1", "--device", "portable", "--db", str(db)]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert "measuring on" in captured.err and "(opencl, driver" in captured.err
    assert captured.out.strip() == f"done: 1 measured (1 ok), 0 already in {db}"
    frame = read_measurements(db)
    assert len(frame) == 1
    first = frame.iloc[0]  # the example kernel has Loopy's default name
    assert first.case_name == "loopy_kernel/n=1000" and first.status == "ok"
    assert first.param_n == 1000 and len(first.times_s) == 6 and first.min_s > 0

    assert main(args) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == f"done: 0 measured (none), 1 already in {db}"
    again = read_measurements(db)
    assert len(again) == 1 and again.iloc[0].key == first.key
    assert again.iloc[0].recorded_at == first.recorded_at


@pytest.mark.parametrize(("args", "message"), [
    (["--kernel", f"{EXAMPLES}:scale", "--param", "n"], "expected NAME=VALUE for --param"),
    (["--kernel", f"{EXAMPLES}:scale", "--param", "n=ten"], "--param n: not a number"),
    (["--kernel", f"{EXAMPLES}:scale", "--param", "n=1.5"], "sizes must be integers"),
    (["--kernel", f"{EXAMPLES}:nothere", "--param", "n=10"], "no callable named 'nothere'"),
    (["--kernel", "missing.py:scale", "--param", "n=10"], "no such file"),
    ([], "give either --suite NAME or --kernel"),
    (["--suite", "measurement-cpu", "--kernel", f"{EXAMPLES}:scale"], "give either"),
    (["--suite", "nope"], "unknown suite 'nope'"),
])
def test_measure_errors_exit_2_with_a_message(tmp_path, capsys, args, message):
    db = tmp_path / "m.sqlite"
    assert main(["measure", *args, "--runs", "6", "--device", "portable",
                 "--db", str(db)]) == 2
    err = capsys.readouterr().err
    [line] = [line for line in err.splitlines() if line.startswith("kernelcast: error:")]
    assert message in line
    assert "Traceback" not in err
    if db.exists():  # nothing was measured
        assert len(read_measurements(db)) == 0


def test_measure_on_an_unknown_device_exits_2_in_one_line(tmp_path):
    db = tmp_path / "m.sqlite"
    result = subprocess.run(
        [sys.executable, "-m", "kernelcast", "measure", "--suite", "measurement-cpu",
         "--device", "no-such-device", "--db", str(db)],
        capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 2
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("kernelcast: error: no opencl device matches 'no-such-device'; "
                           "devices: Portable Computing Language: ")
    assert not db.exists()  # refused before a store is made
