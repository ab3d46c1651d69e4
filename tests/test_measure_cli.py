"""`kernelcast devices` and `kernelcast measure` on PoCL: in-process and as a process."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kernelcast.cli import main
from kernelcast.measure.store import read_measurements

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "kernels.py"

pytestmark = pytest.mark.usefixtures("pocl_device")  # every test measures on PoCL


def test_devices_lists_pocl(capsys):
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    header, *lines = out.splitlines()
    assert header.split()[:3] == ["backend", "kind", "name"]
    pocl = [line for line in lines if "Portable Computing Language" in line][0]
    assert pocl.startswith("opencl ")
    assert "GiB" in pocl


def test_devices_json(capsys):
    assert main(["devices", "--json"]) == 0
    devices = json.loads(capsys.readouterr().out)["devices"]
    pocl = [d for d in devices if d["platform"] == "Portable Computing Language"][0]
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
    first = frame.iloc[0]  # the example kernel has Loopy's default name: named by its factory
    assert first.case_name == "scale/n=1000" and first.status == "ok"
    assert first.param_n == 1000 and len(first.times_s) == 6 and first.min_s > 0

    assert main(args) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == f"done: 0 measured (none), 1 already in {db}"
    again = read_measurements(db)
    assert len(again) == 1 and again.iloc[0].key == first.key
    assert again.iloc[0].recorded_at == first.recorded_at


@pytest.mark.parametrize(("args", "message"), [
    (["--kernel", f"{EXAMPLES}:scale", "--param", "n"], "--param n: expected NAME=VALUE"),
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


def test_measure_progress_goes_to_stderr(tmp_path, capsys):
    db = tmp_path / "m.sqlite"
    assert main(["measure", "--kernel", f"{EXAMPLES}:scale", "--param", "n=300", "--runs", "6",
                 "--tolerance", "1", "--device", "portable", "--db", str(db)]) == 0
    err = capsys.readouterr().err
    assert "[1/1 " in err and "scale/n=300: ok" in err


def test_measure_names_the_job_after_the_factory_unless_the_kernel_is_named(tmp_path, capsys):
    factories = tmp_path / "factories.py"
    factories.write_text(textwrap.dedent("""
        import loopy as lp
        import numpy as np

        def _copy(**name):
            knl = lp.make_kernel("{[i]: 0<=i<n}", "out[i] = a[i]",
                                 [lp.GlobalArg("a, out", np.float32, shape="n"), "..."],
                                 lang_version=(2018, 2), **name)
            return lp.split_iname(knl, "i", 64, outer_tag="g.0", inner_tag="l.0")

        def unnamed():
            return _copy()

        def named():
            return _copy(name="my_copy")
    """))
    db = tmp_path / "m.sqlite"
    for factory in ("unnamed", "named"):
        assert main(["measure", "--kernel", f"{factories}:{factory}", "--param", "n=100",
                     "--runs", "6", "--tolerance", "1", "--device", "portable",
                     "--db", str(db)]) == 0
    capsys.readouterr()
    assert list(read_measurements(db).case_name) == ["unnamed/n=100", "my_copy/n=100"]


def test_measure_without_the_kernels_sizes_exits_2_before_making_a_store(tmp_path, capsys):
    db = tmp_path / "m.sqlite"
    assert main(["measure", "--kernel", f"{EXAMPLES}:scale", "--device", "portable",
                 "--db", str(db)]) == 2
    captured = capsys.readouterr()
    assert captured.err == (f"kernelcast: error: {EXAMPLES}:scale needs sizes for n: "
                            "--param n=SIZE\n")
    assert captured.out == ""
    assert not db.exists()


def test_measure_refuses_a_size_too_large_for_the_kernel_before_storing(tmp_path):
    # the example's n is int32: 2**32 does not fit it, whatever memory the device has
    db = tmp_path / "m.sqlite"
    result = subprocess.run(
        [sys.executable, "-m", "kernelcast", "measure", "--kernel", f"{EXAMPLES}:scale",
         "--param", "n=4294967296", "--device", "portable", "--db", str(db)],
        capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines()[-1] == (
        "kernelcast: error: n=4294967296 does not fit the kernel's int32 argument 'n' "
        "(-2147483648 to 2147483647)")
    assert result.stdout == "" and not db.exists()


OUT_OF_BOUNDS = """
import loopy as lp
import numpy as np


def out_of_bounds():
    knl = lp.make_kernel("{[i]: 0<=i<n}", "out[i + s] = 1",
                         [lp.GlobalArg("out", np.float32, shape="n"),
                          lp.ValueArg("n, s", np.int32)],
                         name="out_of_bounds", lang_version=(2018, 2), assumptions="n >= 1")
    knl = lp.set_options(knl, enforce_array_accesses_within_bounds="no_check")
    return lp.split_iname(knl, "i", 64, outer_tag="g.0", inner_tag="l.0")
"""


def test_measure_a_new_status_into_a_schema_1_store_exits_2_in_one_line(
        tmp_path, pocl, schema1_store):
    db = schema1_store(tmp_path / "old.sqlite", pocl.identity)
    kernel = tmp_path / "oob.py"
    kernel.write_text(OUT_OF_BOUNDS)
    result = subprocess.run(
        [sys.executable, "-m", "kernelcast", "measure", "--kernel", f"{kernel}:out_of_bounds",
         "--param", "n=64", "s=2147483647", "--device", "portable", "--db", str(db)],
        capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.splitlines()[-1] == (
        f"kernelcast: error: {db} has schema version 1, which cannot record the status "
        "'crashed' (out_of_bounds/n=64,s=2147483647); measure into a new store (another --db), "
        "which is created with schema version 3")
    assert "Traceback" not in result.stderr
    assert len(read_measurements(db)) == 0


def test_measure_into_a_file_that_is_not_a_store_exits_2_in_one_line(tmp_path):
    db = tmp_path / "m.sqlite"
    db.write_text("not a database at all, just text " * 100)
    result = subprocess.run(
        [sys.executable, "-m", "kernelcast", "measure", "--kernel", f"{EXAMPLES}:scale",
         "--param", "n=100", "--device", "portable", "--db", str(db)],
        capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines()[-1] == (
        f"kernelcast: error: {db} is not a kernelcast store: file is not a database")
    assert "Traceback" not in result.stderr


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
                           "devices: ")
    assert "Portable Computing Language: " in line
    assert not db.exists()  # refused before a store is made


def test_largest_p_of_only_the_chosen_classes(tmp_path):
    # --p max names every class of the suite; with --classes only those are sized
    from kernelcast.suites.paper import get_suite

    db = tmp_path / "m.sqlite"
    assert main(["measure", "--suite", "measurement-cpu", "--classes", "empty", "--p", "max",
                 "--runs", "6", "--device", "portable", "--db", str(db)]) == 0
    rows = read_measurements(db)
    largest = max(get_suite("measurement-cpu").kernel_class("empty").p_choices)
    assert len(rows) == 6
    assert set(zip(rows["kernel_class"], rows["p"])) == {("empty", largest)}
