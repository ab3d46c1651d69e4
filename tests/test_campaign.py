"""Measurement campaigns on PoCL, for real: one committed row per case, resuming without
re-running (also after SIGKILL), and every kind of failure recorded as a status while the
campaign goes on. Also the layering of the measurement package: backends behind an abstract
interface, no GPU library loaded by importing kernelcast, no import of the suites."""

import ast
import contextlib
import io
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import loopy as lp
import numpy as np
from kernel_zoo import two_launches
import pytest

from kernelcast.errors import KernelcastError, MissingDependencyError, ParameterError
from kernelcast.measure.arrays import SizeRangeError
from kernelcast.measure.backends import (
    Backend,
    CompileError,
    LaunchError,
    OutOfMemory,
    make_backend,
)
from kernelcast.measure.campaign import (
    Job,
    failure_fields,
    measure_kernel,
    run_campaign,
    suite_jobs,
)
from kernelcast.measure.launch import ArraySpec
from kernelcast.measure.store import Store, StoreMismatchError
from kernelcast.suites import kernels
from kernelcast.suites.paper import MEASUREMENT_CPU
from kernelcast.suites.suite import KernelClass
from kernelcast.version import __version__

# Few launches, and a tolerance no timing misses, so that the statuses below do not depend
# on how loaded the machine is: with both cores busy, a tiny copy's median has exceeded
# twice its minimum (the protocol itself is tested in test_protocol).
FAST = {"runs": 6, "tolerance": 1e9, "progress": None}


def _copy(name="copy", index_dtype=np.int32, gsize=64):
    def build():
        knl = lp.make_kernel("{[i]: 0<=i<n}", "out[i] = a[i]",
                             [lp.GlobalArg("a, out", np.float32, shape="n"),
                              lp.ValueArg("n", index_dtype)],
                             name=name, lang_version=(2018, 2), assumptions="n >= 1")
        return lp.split_iname(knl, "i", gsize, outer_tag="g.0", inner_tag="l.0")
    return build


def _job(build, n, name=None):
    label = name or build().default_entrypoint.name
    return Job(f"{label}/n={n}", label, build, {"n": n})


def _rows(path):
    with Store(path) as store:
        return store.rows()


@pytest.fixture(scope="module")
def tiny_cases():
    """Six small cases of the CPU-sized measurement suite: two sizes each of three
    kernels."""
    wanted = {("global_access", "copy"), ("scale_add", "1"), ("empty", "")}
    cases = [c for c in MEASUREMENT_CPU.cases(dtypes=["float32"])
             if (c.class_name, c.variant) in wanted and c.t < 2]
    assert len(cases) == 6 and len({c.kernel_name for c in cases}) == 3
    return cases


def test_a_campaign_writes_one_row_per_case_and_resumes_without_rerunning(
        pocl, tmp_path, tiny_cases):
    path = tmp_path / "campaign.sqlite"
    with Store(path, pocl.identity) as store:
        result = run_campaign(suite_jobs(tiny_cases), pocl, store, **FAST)
        rows = store.rows()
        codes = {r["code_sha256"]: store.code(r["code_sha256"]) for r in rows}
    assert result.measured == 6 and result.skipped == 0
    assert result.statuses == {"ok": 6}
    assert [r["case_name"] for r in rows] == [c.name for c in tiny_cases]
    for row, case in zip(rows, tiny_cases, strict=True):
        assert row["key"] == result.keys[case.name]
        assert row["status"] == "ok" and row["message"] is None
        assert (row["suite"], row["kernel_class"], row["variant"], row["dtype"]) == (
            "measurement-cpu", case.class_name, case.variant, case.dtype)
        assert row["group_size"] == list(case.group_size)
        assert (row["p"], row["t"], row["params"]) == (case.p, case.t, case.params)
        assert (row["backend"], row["device"], row["driver"]) == (
            "opencl", pocl.device.name, pocl.device.driver)
        assert row["kernelcast_version"] == __version__
        assert len(row["times_s"]) == 6 and row["dropped"] == 4
        assert row["min_s"] == min(row["times_s"][4:]) > 0
        assert row["min_s"] <= row["median_s"] <= max(row["times_s"][4:])
        assert 1 <= row["attempts"] == len(row["spreads"]) <= 3
    assert len(codes) == 3  # one generated kernel per size-independent kernel
    assert all(code and "__kernel" in code for code in codes.values())

    with Store(path, pocl.identity) as store:
        again = run_campaign(suite_jobs(tiny_cases), pocl, store, **FAST)
        assert store.rows() == rows
    assert again.measured == 0 and again.skipped == 6 and again.statuses == {}
    assert again.keys == result.keys


def test_inputs_of_a_seed_are_the_same_however_many_were_made_before(pocl):
    # one random generator serves the backend's allocations: each seed still gets the
    # numbers a generator made for it alone gives, and the other arguments keep theirs
    from pyopencl import clrandom
    import pyopencl.array as cla

    specs = [ArraySpec("a", np.dtype(np.float32), (1000,), (1,), False),
             ArraySpec("b", np.dtype(np.float64), (7, 9), (9, 1), False),
             ArraySpec("c", np.dtype(np.float32), (50,), (1,), True),
             ArraySpec("i", np.dtype(np.int32), (5,), (1,), False)]

    def alone(seed):
        generator = clrandom.PhiloxGenerator(pocl.context, seed=seed)
        out = {}
        for spec in specs[:2]:
            flat = cla.empty(pocl.queue, spec.size, spec.dtype)
            generator.fill_uniform(flat, a=0.5, b=1.5)
            out[spec.name] = flat.get()
        return out

    first = {k: v.get() for k, v in pocl.allocate(specs, {"n": 3}, seed=4).items()
             if k != "n"}
    pocl.allocate(specs, {}, seed=11)
    again = {k: v.get() for k, v in pocl.allocate(specs, {}, seed=4).items()}
    expected = alone(4)
    for name in ("a", "b"):
        assert np.array_equal(first[name], expected[name])
        assert np.array_equal(again[name], expected[name])
        assert 0.5 <= first[name].min() and first[name].max() <= 1.5
    assert not np.array_equal(expected["a"], alone(11)["a"])
    assert np.isnan(again["c"]).all() and (again["i"] == 1).all()


def test_an_edited_kernel_gets_a_new_row_next_to_the_old_one(pocl, tmp_path):
    path = tmp_path / "edited.sqlite"
    with Store(path, pocl.identity) as store:
        first = run_campaign([_job(_copy(), 1000, "copy")], pocl, store, **FAST)
        edited = run_campaign([_job(_copy(gsize=128), 1000, "copy")], pocl, store, **FAST)
        rows = store.rows()
    assert first.measured == edited.measured == 1
    assert [r["case_name"] for r in rows] == ["copy/n=1000", "copy/n=1000"]
    assert rows[0]["code_sha256"] != rows[1]["code_sha256"]
    assert rows[0]["key"] != rows[1]["key"]


# {{{ kill -9 and resume

SUITE_ARGS = ["--suite", "measurement-cpu", "--classes", "global_access",
              "--p", "global_access=13"]


def _measure_command(db):
    return [sys.executable, "-m", "kernelcast", "measure", *SUITE_ARGS, "--runs", "6",
            "--device", "portable", "--db", str(db)]


def _raw_rows(db):
    """Every row with every column, straight from SQLite."""
    conn = sqlite3.connect(db, timeout=30)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute("SELECT * FROM measurements ORDER BY id")]
    finally:
        conn.close()


def _count(db) -> int:
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            return conn.execute("SELECT count(*) FROM measurements").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:  # not created yet, or locked for a moment
        return 0


def test_a_campaign_killed_with_sigkill_resumes_where_it_stopped(tmp_path, pocl_device):
    cases = [c for c in MEASUREMENT_CPU.cases({"global_access": 13})
             if c.class_name == "global_access"]
    assert len(cases) == 54  # 3 variants × 2 precisions × 9 sizes
    db = tmp_path / "killed.sqlite"
    process = subprocess.Popen(_measure_command(db), stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while _count(db) < 2 and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert process.poll() is None, "the campaign ended before it could be killed: " + (
            process.stderr.read()[-2000:])
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == -signal.SIGKILL
    before = _raw_rows(db)
    assert 2 <= len(before) < len(cases)

    resumed = subprocess.run(_measure_command(db), capture_output=True, text=True,
                             timeout=300, check=False)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert (f"done: {len(cases) - len(before)} measured" in resumed.stdout
            and f"{len(before)} already in {db}" in resumed.stdout), resumed.stdout

    after = _raw_rows(db)
    names = [r["case_name"] for r in after]
    assert sorted(names) == sorted(c.name for c in cases)  # each case exactly once
    assert len(set(names)) == len(after) == len(cases)
    assert len({r["key"] for r in after}) == len(cases)
    assert after[:len(before)] == before  # rows from before the kill, unchanged
    assert {r["status"] for r in after} <= {"ok", "unstable"}

# }}}


# {{{ failures become statuses and the campaign goes on

def test_a_compile_error_is_recorded_and_the_next_kernel_runs(pocl, tmp_path):
    def broken():
        knl = lp.make_kernel("{[i]: 0<=i<n}", "out[i] = 2*a[i]",
                             [lp.GlobalArg("a, out", np.float32, shape="n"), "..."],
                             preambles=[("0", "#error deliberate")], name="broken",
                             lang_version=(2018, 2))
        return lp.split_iname(knl, "i", 64, outer_tag="g.0", inner_tag="l.0")

    jobs = [_job(broken, 100), _job(broken, 200), _job(_copy(), 100)]
    with Store(tmp_path / "s.sqlite", pocl.identity) as store:
        result = run_campaign(jobs, pocl, store, **FAST)
        rows = store.rows()
        code = store.code(rows[0]["code_sha256"])
    assert result.statuses == {"compile_error": 2, "ok": 1}
    assert [(r["case_name"], r["status"]) for r in rows] == [
        ("broken/n=100", "compile_error"), ("broken/n=200", "compile_error"),
        ("copy/n=100", "ok")]
    for row in rows[:2]:
        assert "OpenCL build failed" in row["message"]
        assert row["min_s"] is None and row["median_s"] is None and row["times_s"] is None
    assert code.startswith("#error deliberate")  # the code that failed is kept
    assert rows[2]["min_s"] > 0


def test_a_kernel_that_cannot_be_generated_is_a_compile_error(pocl, tmp_path):
    with Store(tmp_path / "s.sqlite", pocl.identity) as store:
        result = run_campaign([_job(two_launches, 100), _job(_copy(), 100)], pocl, store,
                              **FAST)
        rows = store.rows()
    assert result.statuses == {"compile_error": 1, "ok": 1}
    assert rows[0]["message"].startswith("code generation failed: kernel 'two_launches' "
                                         "needs 2 launches")
    assert rows[0]["code_sha256"] is None


def test_out_of_memory_is_recorded_and_the_campaign_continues(pocl, tmp_path):
    huge = _copy("copy64", np.int64)
    jobs = [_job(huge, 2**40), _job(huge, 1000), _job(_copy(), 100)]
    with Store(tmp_path / "s.sqlite", pocl.identity) as store:
        result = run_campaign(jobs, pocl, store, **FAST)
        rows = store.rows()
    assert [r["status"] for r in rows] == ["out_of_memory", "ok", "ok"]
    assert result.statuses == {"out_of_memory": 1, "ok": 2}
    assert "needs 8192.00 GiB" in rows[0]["message"]
    assert pocl.device.name in rows[0]["message"]
    assert rows[0]["min_s"] is None and rows[0]["times_s"] is None


def test_a_size_too_large_for_a_32_bit_argument_is_out_of_range_on_any_device(pocl, tmp_path):
    # n is int32 here; 2**40 floats would not fit in memory either, but whether a size fits
    # the kernel's argument type does not depend on the device, so it is checked first
    build = lambda: kernels.global_access("copy", 64)  # noqa: E731
    jobs = [_job(build, 2**40, "global_copy"), _job(_copy(), 100)]
    with Store(tmp_path / "s.sqlite", pocl.identity) as store:
        result = run_campaign(jobs, pocl, store, **FAST)
        rows = store.rows()
    assert [r["status"] for r in rows] == ["size_out_of_range", "ok"]
    assert result.statuses == {"size_out_of_range": 1, "ok": 1}
    assert rows[0]["message"] == ("n=1099511627776 does not fit the kernel's int32 argument "
                                  "'n' (-2147483648 to 2147483647)")
    assert rows[0]["min_s"] is None and rows[0]["times_s"] is None


def test_a_value_too_large_for_its_integer_argument_is_size_out_of_range(pocl, tmp_path):
    def offset():
        return lp.make_kernel("{[i]: 0<=i<n}", "out[i] = a[i] + k",
                              [lp.GlobalArg("a, out", np.float32, shape="n"),
                               lp.ValueArg("n, k", np.int32)],
                              name="offset", lang_version=(2018, 2))

    jobs = [Job("offset/big", "offset", offset, {"n": 100, "k": 2**31}),
            Job("offset/small", "offset", offset, {"n": 100, "k": -2**31 - 1}),
            Job("offset/ok", "offset", offset, {"n": 100, "k": 2**31 - 1})]
    with Store(tmp_path / "s.sqlite", pocl.identity) as store:
        run_campaign(jobs, pocl, store, **FAST)
        rows = store.rows()
    assert [r["status"] for r in rows[:2]] == ["size_out_of_range", "size_out_of_range"]
    assert rows[0]["min_s"] is None
    assert rows[2]["min_s"] > 0  # the largest int32 value is fine
    assert rows[0]["message"] == ("k=2147483648 does not fit the kernel's int32 argument 'k' "
                                  "(-2147483648 to 2147483647)")
    assert rows[1]["message"].startswith("k=-2147483649 does not fit")


def test_any_other_error_of_a_case_is_failed_with_its_message(pocl, tmp_path):
    # a job without the size its arrays need: a ParameterError, neither memory nor launch
    jobs = [Job("copy/none", "copy", _copy(), {}), Job("copy/m", "copy", _copy(), {"m": 4}),
            _job(_copy(), 100)]
    with Store(tmp_path / "s.sqlite", pocl.identity) as store:
        result = run_campaign(jobs, pocl, store, **FAST)
        rows = store.rows()
    assert [r["status"] for r in rows] == ["failed", "failed", "ok"]
    assert result.statuses == {"failed": 2, "ok": 1}
    assert rows[0]["message"] == ("ParameterError: the shape of argument 'a' needs a value "
                                  "for 'n'; got []")
    assert rows[1]["message"].endswith("needs a value for 'n'; got ['m']")
    assert rows[0]["min_s"] is None and rows[0]["times_s"] is None


def test_a_launch_error_is_recorded_and_the_campaign_continues(pocl, tmp_path):
    too_large = _copy("big_groups", gsize=2 * pocl.device.max_group_size)
    with Store(tmp_path / "s.sqlite", pocl.identity) as store:
        result = run_campaign([_job(too_large, 10000), _job(_copy(), 100)], pocl, store,
                              **FAST)
        rows = store.rows()
    assert [r["status"] for r in rows] == ["launch_error", "ok"]
    assert result.statuses == {"launch_error": 1, "ok": 1}
    assert "INVALID_WORK_GROUP_SIZE" in rows[0]["message"]
    assert rows[0]["min_s"] is None


def _two_sizes(variant, p, *group):
    """The size cases of the classes below, whatever group size (if any) is passed."""
    return [{"n": 500}, {"n": 900}]


def _wrong_reference_class():
    """A class whose reference says 3a while its kernel computes 2a."""
    def build(case):
        return kernels.scale(64, np.float32)

    def reference(case, args):
        return {"out": 3 * args["a"]}

    return KernelClass("scale", "§3.1", ("",), build, _two_sizes,
                       (0,), group_sizes=((64, 1),), dtypes=("float32",),
                       reference=reference, check_params={"n": 100})


def test_a_wrong_answer_is_recorded_and_the_campaign_continues(pocl, tmp_path):
    cases = list(_wrong_reference_class().cases("demo", 0))
    jobs = [*suite_jobs(cases), _job(_copy(), 100)]
    with Store(tmp_path / "s.sqlite", pocl.identity) as store:
        result = run_campaign(jobs, pocl, store, **FAST)
        rows = store.rows()
    assert [r["status"] for r in rows] == ["wrong_answer", "wrong_answer", "ok"]
    assert result.statuses == {"wrong_answer": 2, "ok": 1}
    for row in rows[:2]:
        assert row["max_rel_error"] == pytest.approx(1 / 3, rel=1e-5)
        assert row["message"].startswith("relative error at {'n': 100}: out 0.333")
        assert row["min_s"] is None
    assert rows[2]["max_rel_error"] is None


def test_without_verification_the_same_kernel_is_timed(pocl, tmp_path):
    cases = list(_wrong_reference_class().cases("demo", 0))
    with Store(tmp_path / "s.sqlite", pocl.identity) as store:
        result = run_campaign(suite_jobs(cases), pocl, store, verify=False, **FAST)
    assert result.statuses == {"ok": 2}


def _checked_class(build, check_params, name="checked"):
    return KernelClass(name, "§3.1", ("",), lambda case: build(),
                       _two_sizes, (0,), group_sizes=((64, 1),),
                       dtypes=("float32",), reference=lambda case, args: {"out": args["a"]},
                       check_params=check_params)


@pytest.mark.parametrize(("status", "message"), [
    ("size_out_of_range",
     "while checking: n=2147483648 does not fit the kernel's int32 argument 'n'"),
    ("launch_error", "while checking: launch failed: "),
])
def test_a_failure_while_checking_is_recorded_for_every_case_of_the_kernel(
        pocl, tmp_path, status, message):
    if status == "size_out_of_range":  # checking sizes beyond the kernel's int32 n
        checked = _checked_class(_copy(), {"n": 2**31})
    else:  # groups larger than the device allows
        checked = _checked_class(_copy(gsize=2 * pocl.device.max_group_size), {"n": 100})
    cases = list(checked.cases("demo", 0))
    with Store(tmp_path / "s.sqlite", pocl.identity) as store:
        result = run_campaign([*suite_jobs(cases), _job(_copy(), 100)], pocl, store, **FAST)
        rows = store.rows()
    assert [r["status"] for r in rows] == [status, status, "ok"]
    assert result.statuses == {status: 2, "ok": 1}
    assert all(r["message"].startswith(message) and r["min_s"] is None for r in rows[:2])


def test_a_kernel_that_passes_its_check_is_timed(pocl, tmp_path):
    cases = list(_checked_class(_copy(), {"n": 100}).cases("demo", 0))
    with Store(tmp_path / "s.sqlite", pocl.identity) as store:
        result = run_campaign(suite_jobs(cases), pocl, store, **FAST)
    assert result.statuses == {"ok": 2}


@pytest.mark.parametrize(("error", "status", "message"), [
    (OutOfMemory("needs 9 GiB"), "out_of_memory", "needs 9 GiB"),
    (SizeRangeError("n=2 does not fit"), "size_out_of_range", "n=2 does not fit"),
    (LaunchError("launch failed: X"), "launch_error", "launch failed: X"),
    (CompileError("OpenCL build failed: Y"), "compile_error", "OpenCL build failed: Y"),
    (ParameterError("no value for 'm'"), "failed", "ParameterError: no value for 'm'"),
    (MissingDependencyError("needs cupy"), "failed", "MissingDependencyError: needs cupy"),
    (KernelcastError("something else"), "failed", "KernelcastError: something else"),
])
def test_each_error_has_its_own_status(error, status, message):
    assert failure_fields(error) == {"status": status, "message": message}
    assert failure_fields(error, "while checking: ") == {
        "status": status, "message": "while checking: " + message}


def test_a_new_status_into_a_schema_1_store_stops_with_one_line_keeping_the_rows(
        pocl, tmp_path, schema1_store):
    path = schema1_store(tmp_path / "old.sqlite", pocl.identity)
    jobs = [_job(_copy(), 100), _job(_copy(), 2**31), _job(_copy(), 200)]
    with Store(path, pocl.identity) as store:
        with pytest.raises(StoreMismatchError, match=r"schema version 1, which cannot record "
                           r"the status 'size_out_of_range' \(copy/n=2147483648\); measure "
                           r"into a new store \(another --db\)"):
            run_campaign(jobs, pocl, store, **FAST)
        rows = store.rows()
    assert [(r["case_name"], r["status"]) for r in rows] == [("copy/n=100", "ok")]
    with Store(tmp_path / "new.sqlite", pocl.identity) as store:  # a new store takes it
        result = run_campaign(jobs, pocl, store, **FAST)
    assert result.statuses == {"ok": 2, "size_out_of_range": 1}


def test_the_statuses_on_cuda(cuda, tmp_path):
    """The same statuses through the CUDA backend, where a GPU is present."""
    jobs = [_job(_copy(), 1000), _job(_copy(), 2**31),
            _job(_copy("copy64", np.int64), 2**40),
            _job(_copy("big_groups", gsize=2 * cuda.device.max_group_size), 1000)]
    with Store(tmp_path / "s.sqlite", cuda.identity) as store:
        result = run_campaign(jobs, cuda, store, **FAST)
        rows = store.rows()
    assert [r["status"] for r in rows] == ["ok", "size_out_of_range", "out_of_memory",
                                           "launch_error"]
    assert result.statuses == {"ok": 1, "size_out_of_range": 1, "out_of_memory": 1,
                               "launch_error": 1}
    assert rows[0]["backend"] == "cuda" and rows[0]["min_s"] > 0
    assert rows[1]["message"].startswith("n=2147483648 does not fit the kernel's int32")
    assert "needs 8192.00 GiB" in rows[2]["message"]
    assert rows[3]["message"].startswith("launch failed: ")


def test_measure_kernel_names_the_job_by_kernel_and_sizes(pocl, tmp_path):
    with Store(tmp_path / "s.sqlite", pocl.identity) as store:
        result = measure_kernel(_copy(), {"n": 300}, pocl, store, **FAST)
        again = measure_kernel(_copy(), {"n": 300}, pocl, store, **FAST)
        rows = store.rows()
    assert result.measured == 1 and again.skipped == 1 and again.measured == 0
    [row] = rows
    assert row["case_name"] == "copy/n=300" and row["params"] == {"n": 300}
    assert row["suite"] is None and row["status"] == "ok"

# }}}


def test_progress_goes_to_the_current_stderr(pocl, tmp_path):
    stream = io.StringIO()
    with Store(tmp_path / "s.sqlite", pocl.identity) as store, \
            contextlib.redirect_stderr(stream):
        measure_kernel(_copy(), {"n": 300}, pocl, store, runs=6, tolerance=1.0)
    # the line names the case and its status; a loaded machine may make the timing
    # unstable, which is a status like ok (the progress is what this test is about)
    assert re.search(r"^\[1/1 .*\] copy/n=300: (ok|unstable) ", stream.getvalue(), re.M)


# {{{ the package's layering: backends, lazy GPU libraries, no import of the suites

MEASURE = Path(__file__).resolve().parent.parent / "src" / "kernelcast" / "measure"


def test_backend_is_an_abstract_interface():
    assert Backend.__abstractmethods__ == {"compile", "allocate", "time_launches", "read"}
    with pytest.raises(TypeError, match="abstract"):
        Backend()

    class Partial(Backend):
        def compile(self, kernel):
            return kernel

    with pytest.raises(TypeError, match="abstract"):
        Partial()


def _imports(path):
    """Every module an import statement of *path* names, also inside functions."""
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield node.module
        elif isinstance(node, ast.ImportFrom):
            yield "." * node.level + (node.module or "")


def test_measure_imports_neither_the_suites_nor_the_package_root():
    files = sorted(MEASURE.rglob("*.py"))
    assert len(files) >= 10
    found = {(path.relative_to(MEASURE).as_posix(), name) for path in files
             for name in _imports(path)
             if name == "kernelcast" or name.startswith(("kernelcast.suites", "."))}
    assert found == set()


_LAZY = textwrap.dedent("""
    import json, sys
    blocked = sys.argv[1:]
    for name in blocked:
        sys.modules[name] = None  # as if not installed
    import loopy
    before = {m for m in sys.modules if m.split(".")[0] in ("pyopencl", "cupy")}
    import kernelcast
    import kernelcast.measure.backends, kernelcast.measure.campaign
    import kernelcast.measure.verify, kernelcast.suites.campaign
    from kernelcast.measure.devices import cuda_devices, opencl_devices
    from kernelcast.measure.backends import make_backend
    from kernelcast.errors import MissingDependencyError
    after = {m for m in sys.modules if m.split(".")[0] in ("pyopencl", "cupy")}
    refused = []
    if blocked:
        assert opencl_devices() == [] and cuda_devices() == []
        for backend in ("opencl", "cuda"):
            try:
                make_backend(backend)
            except MissingDependencyError as err:
                refused.append(str(err))
    print(json.dumps({"added": sorted(after - before),
                      "loaded": sorted(m for m in after if sys.modules[m] is not None),
                      "refused": refused}))
""")


def _lazy(*blocked):
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    result = subprocess.run([sys.executable, "-c", _LAZY, *blocked], capture_output=True,
                            text=True, env=env, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.splitlines()[-1])


def test_importing_kernelcast_loads_no_gpu_library():
    # Loopy itself imports pyopencl where it is installed (for its default target);
    # kernelcast loads nothing more of it, and nothing of cupy
    doc = _lazy()
    assert doc["added"] == []
    assert not any(m.split(".")[0] == "cupy" for m in doc["loaded"])


def test_kernelcast_imports_and_refuses_backends_clearly_without_gpu_libraries():
    doc = _lazy("pyopencl", "cupy")
    assert doc["loaded"] == []
    assert doc["refused"] == ["the OpenCL backend needs pyopencl: pip install pyopencl",
                              "the CUDA backend needs cupy: pip install 'kernelcast[cuda]'"]


def test_make_backend_on_pocl_is_an_opencl_backend_in_a_worker_by_default(pocl):
    from kernelcast.measure.backends.isolated import IsolatedBackend

    with make_backend("opencl", "portable", isolated=False) as backend:
        assert isinstance(backend, Backend)
        assert type(backend) is type(pocl) and backend.name == "opencl"
        assert backend.device == pocl.device and backend.identity == pocl.identity
    with make_backend("opencl", "portable") as isolated:
        assert isinstance(isolated, IsolatedBackend) and isolated.name == "opencl"
        assert isolated.device == pocl.device and isolated.identity == pocl.identity

# }}}


def _random_variant_jobs(count):
    import functools

    from kernelcast.tune.random_families import random_family, random_variants, variant_kernel
    from kernelcast.tune.space import variant_key

    jobs = []
    for i in (4, 7):
        fam = random_family(i)
        for v in random_variants(fam, count):
            name = f"{fam.name}/{variant_key(v)}"
            jobs.append(Job(name, name, functools.partial(variant_kernel, i, tuple(v.items())),
                            dict(fam.check_params)))
    return jobs


def test_workers_generate_the_same_code_in_the_same_order(pocl, tmp_path):
    jobs = _random_variant_jobs(2)
    with Store(tmp_path / "serial.sqlite", pocl.identity) as store:
        serial = run_campaign(jobs, pocl, store, verify=False, **FAST)
    with Store(tmp_path / "workers.sqlite", pocl.identity) as store:
        spread = run_campaign(jobs, pocl, store, verify=False, workers=2, **FAST)
    for result in (serial, spread):  # every job timed; whether its times were stable
        # is up to the machine's load (the tolerance verdict), not to the workers
        assert set(result.statuses) <= {"ok", "unstable"}
        assert sum(result.statuses.values()) == len(jobs)
    assert spread.keys == serial.keys  # the keys carry the generated code's sha256
    assert [r["case_name"] for r in _rows(tmp_path / "workers.sqlite")] == \
        [j.name for j in jobs]


def test_no_kernel_starts_after_the_deadline(pocl, tmp_path):
    import time

    jobs = _random_variant_jobs(1)
    with Store(tmp_path / "s.sqlite", pocl.identity) as store:
        result = run_campaign(jobs, pocl, store, verify=False,
                              deadline=time.monotonic() - 1, **FAST)
    assert result.stopped and result.measured == 0 and _rows(tmp_path / "s.sqlite") == []
