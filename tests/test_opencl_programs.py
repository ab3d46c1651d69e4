"""The OpenCL programs (kernelcast.suites.opencl_programs, data/opencl-programs/): the set's
shape, every kernel's PoCL launch against its NumPy reference, a launch checked and timed
(measure_launch), and the timing script (benchmarks/opencl_programs.py) run as a user runs
it, end to end on PoCL."""

import json
import re
import sqlite3
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from kernelcast.suites.opencl_programs import (
    DIRECTORY,
    PROGRAMS,
    TOLERANCE,
    host_arrays,
    kernel_arguments,
    kernels,
    measure_launch,
    output_errors,
    run_launch,
    source,
)

POCL = [launch for launch in PROGRAMS if launch.size == "pocl"]
SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "opencl_programs.py"


def test_the_set_has_30_kernels_each_at_two_gpu_sizes_and_a_pocl_size():
    by_kernel = kernels()
    assert len(by_kernel) >= 30
    for (program, kernel), launches in by_kernel.items():
        gpu = [launch for launch in launches if launch.size == "gpu"]
        assert len({tuple(sorted(launch.scalars.items())) for launch in gpu}) >= 2, kernel
        assert [launch.size for launch in launches].count("pocl") == 1, kernel
    names = [launch.name for launch in PROGRAMS]
    assert len(names) == len(set(names))


def test_every_kernel_of_every_file_is_in_the_set():
    written = {(path.name, name) for path in DIRECTORY.glob("*.cl")
               for name in re.findall(r"__kernel\s+void\s+(\w+)", path.read_text())}
    assert written == set(kernels())


@pytest.mark.parametrize("launch", PROGRAMS, ids=lambda launch: f"{launch.size}:{launch.name}")
def test_launches_are_consistent(launch):
    arguments = kernel_arguments(source(launch), launch.kernel)
    names = {name for name, _, _ in arguments}
    assert names == set(launch.scalars) | set(launch.arrays)
    assert all(pointer == (name in launch.arrays) for name, _, pointer in arguments)
    assert set(launch.written) <= set(launch.arrays)
    assert len(launch.global_size) == len(launch.local_size)
    assert all(g % b == 0 for g, b in zip(launch.global_size, launch.local_size, strict=True))
    assert int(np.prod(launch.local_size)) <= 1024
    for define, value in re.findall(r"-D (GROUP|TILE)=(\d+)", launch.options):
        sizes = launch.local_size if define == "TILE" else launch.local_size[:1]
        assert all(s == int(value) for s in sizes), launch.options
    assert all(elements < 2**31 for _, elements in launch.arrays.values())


@pytest.fixture(scope="module")
def queue(pocl):
    return pocl.context, pocl.queue


@pytest.mark.parametrize("launch", POCL, ids=lambda launch: launch.name)
def test_pocl_launch_computes_its_reference(launch, queue):
    host, outputs = run_launch(launch, *queue)
    for name, error in output_errors(launch, host, outputs).items():
        assert error <= TOLERANCE[outputs[name].dtype.name], (name, error)


def test_inputs_are_deterministic_and_a_wrong_output_is_caught():
    launch = next(launch for launch in POCL if launch.kernel == "spmv_csr")
    first, second = host_arrays(launch), host_arrays(launch)
    assert all(np.array_equal(first[k], second[k], equal_nan=True) for k in first)
    wrong = {"y": np.ones(launch.arrays["y"][1], np.float32)}
    assert output_errors(launch, first, wrong)["y"] > TOLERANCE["float32"]


def test_wrong_answers_and_compile_errors_are_recorded_not_timed(pocl):
    launch = next(launch for launch in POCL if launch.kernel == "jacobi1d")
    broken = replace(launch, reference=lambda a, s: {"B": a["B"]})  # "writes nothing"
    row = measure_launch(pocl, broken, source(launch), runs=3, drop=1)
    assert row["status"] == "wrong_answer" and "min_s" not in row
    bad = replace(launch, options="-D UNFINISHED=(")
    text = "#if UNFINISHED\n#endif\n" + source(launch)
    row = measure_launch(pocl, bad, text, runs=3, drop=1)
    assert row["status"] == "compile_error" and "min_s" not in row


def _script(*argv) -> str:
    """The standard output of ``python benchmarks/opencl_programs.py *argv``, which must
    succeed (the test session's device locks are in the environment it inherits)."""
    done = subprocess.run([sys.executable, str(SCRIPT), *map(str, argv)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_script_measures_the_pocl_sizes_and_resumes(pocl_device, tmp_path):
    argv = ["measure", "--out", tmp_path, "--sizes", "pocl", "--device", "Portable",
            "--runs", "5", "--drop", "1"]
    printed = _script(*argv)
    assert f"[{len(POCL)}/{len(POCL)} " in printed
    with sqlite3.connect(tmp_path / "opencl-programs.sqlite") as db:
        rows = db.execute("SELECT case_name, status, min_s, suite, build_options "
                          "FROM measurements").fetchall()
    assert sorted(r[0] for r in rows) == sorted(launch.name for launch in POCL)
    assert all(r[1] in ("ok", "unstable") and r[2] > 0 for r in rows), rows
    assert {r[3] for r in rows} == {"opencl-programs-cpu"}
    info = json.loads((tmp_path / "opencl-programs.json").read_text())
    assert info["count"] == len(POCL) and info["sizes"] == "pocl"
    assert info["device"] == pocl_device.name and info["driver"] == pocl_device.driver

    printed = _script(*argv)  # a second run finds everything stored
    assert printed.count("already in store") == len(POCL)
    with sqlite3.connect(tmp_path / "opencl-programs.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM measurements").fetchone()[0] == len(POCL)
