"""Measuring that survives what a kernel or a user does to it, on PoCL for real: a kernel
that kills its process is recorded as ``crashed`` and the campaign goes on; one campaign per
device at a time; sizes refused before anything is stored; the compiler's own log kept with
a compile error; Ctrl-C and SIGTERM stop cleanly with a resume hint."""

import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from kernelcast.cli import main
from kernelcast.errors import DeviceBusyError
from kernelcast.measure.backends import make_backend
from kernelcast.measure.backends.isolated import IsolatedBackend
from kernelcast.measure.campaign import Job, run_campaign
from kernelcast.measure.lock import DeviceLock
from kernelcast.measure.store import Store

FAST = {"runs": 6, "tolerance": 1.0, "progress": None}

KERNELS = textwrap.dedent('''
    import loopy as lp
    import numpy as np


    def _tagged(knl):
        return lp.split_iname(knl, "i", 64, outer_tag="g.0", inner_tag="l.0")


    def scale():
        return _tagged(lp.make_kernel(
            "{[i]: 0<=i<n}", "out[i] = 2*a[i]",
            [lp.GlobalArg("a, out", np.float32, shape="n"), lp.ValueArg("n", np.int32)],
            name="scale", lang_version=(2018, 2), assumptions="n >= 1"))


    def out_of_bounds():
        """Writes s elements past its array: s = 2**31 - 1 floats is 8 GiB away."""
        knl = lp.make_kernel(
            "{[i]: 0<=i<n}", "out[i + s] = 1",
            [lp.GlobalArg("out", np.float32, shape="n"), lp.ValueArg("n, s", np.int32)],
            name="out_of_bounds", lang_version=(2018, 2), assumptions="n >= 1")
        knl = lp.set_options(knl, enforce_array_accesses_within_bounds="no_check")
        return _tagged(knl)


    def broken():
        knl = lp.make_kernel(
            "{[i]: 0<=i<n}", "out[i] = 2*a[i]",
            [lp.GlobalArg("a, out", np.float32, shape="n"), lp.ValueArg("n", np.int32)],
            preambles=[("0", "float f(void) { return undeclared_thing; }")],
            name="broken", lang_version=(2018, 2), assumptions="n >= 1")
        return _tagged(knl)


    def too_large_groups():
        knl = lp.make_kernel(
            "{[i]: 0<=i<n}", "out[i] = 2*a[i]",
            [lp.GlobalArg("a, out", np.float32, shape="n"), lp.ValueArg("n", np.int32)],
            name="too_large_groups", lang_version=(2018, 2), assumptions="n >= 1")
        return lp.split_iname(knl, "i", 1 << 16, outer_tag="g.0", inner_tag="l.0")
''')


@pytest.fixture
def kernel_file(tmp_path):
    path = tmp_path / "kernels.py"
    path.write_text(KERNELS)
    return path


@pytest.fixture
def factories(kernel_file):
    namespace = {}
    exec(compile(KERNELS, str(kernel_file), "exec"), namespace)  # noqa: S102
    return namespace


def _rows(path):
    with Store(path) as store:
        return store.rows()


def _run(*argv, timeout=300):
    return subprocess.run([sys.executable, "-m", "kernelcast", *map(str, argv)],
                          capture_output=True, text=True, timeout=timeout, check=False)


# {{{ a crashing kernel does not take the campaign with it

def test_a_kernel_that_kills_its_process_is_recorded_as_crashed_and_the_campaign_goes_on(
        pocl_device, factories, tmp_path):
    db = tmp_path / "s.sqlite"
    jobs = [Job("out_of_bounds/n=64", "out_of_bounds", factories["out_of_bounds"],
                {"n": 64, "s": 2**31 - 1}),
            Job("scale/n=1000", "scale", factories["scale"], {"n": 1000})]
    with make_backend("opencl", pocl_device.name) as backend, \
            Store(db, backend.identity) as store:
        assert isinstance(backend, IsolatedBackend)
        result = run_campaign(jobs, backend, store, **FAST)
        assert backend.starts == 2  # a new worker after the crash
        again = run_campaign(jobs, backend, store, **FAST)  # resuming skips the crash
    assert result.statuses == {"crashed": 1, "ok": 1}
    assert again.measured == 0 and again.skipped == 2
    crashed, timed = _rows(db)
    assert crashed["status"] == "crashed" and crashed["min_s"] is None
    assert "SIGSEGV" in crashed["message"]
    assert timed["status"] == "ok" and timed["min_s"] > 0


def test_a_launch_error_gets_a_new_worker_and_the_next_case_runs(
        pocl_device, factories, tmp_path):
    jobs = [Job("too_large_groups/n=70000", "too_large_groups", factories["too_large_groups"],
                {"n": 70000}),
            Job("scale/n=1000", "scale", factories["scale"], {"n": 1000})]
    with make_backend("opencl", pocl_device.name) as backend, \
            Store(tmp_path / "s.sqlite", backend.identity) as store:
        result = run_campaign(jobs, backend, store, **FAST)
        assert backend.starts == 2  # the context a launch error may poison is rebuilt
    assert result.statuses == {"launch_error": 1, "ok": 1}


def _gpu_backend(backend):
    """(backend, device name) of an NVIDIA GPU through *backend*, or skip."""
    from kernelcast.measure.devices import cuda_devices, opencl_devices

    if backend == "cuda":
        pytest.importorskip("cupy", reason="needs cupy and an NVIDIA GPU")
        devices = cuda_devices()
    else:
        devices = [d for d in opencl_devices() if "GPU" in d.kind and "NVIDIA" in d.vendor]
    if not devices:
        pytest.skip(f"needs an NVIDIA GPU through {backend}")
    return devices[0].name


@pytest.mark.parametrize("backend", ["cuda", "opencl"])
def test_an_illegal_address_on_a_gpu_is_recorded_and_the_next_case_runs_on_a_new_context(
        backend, factories, tmp_path):
    device = _gpu_backend(backend)
    jobs = [Job("out_of_bounds/n=64", "out_of_bounds", factories["out_of_bounds"],
                {"n": 64, "s": 2**31 - 1}),
            Job("scale/n=100000", "scale", factories["scale"], {"n": 100000})]
    with make_backend(backend, device) as runner, \
            Store(tmp_path / "s.sqlite", runner.identity) as store:
        result = run_campaign(jobs, runner, store, **FAST)
        rows = store.rows()
    assert rows[1]["status"] == "ok", rows
    assert rows[0]["status"] in ("launch_error", "out_of_memory", "crashed"), rows[0]
    print(backend, rows[0]["status"], rows[0]["message"], result.statuses)


def test_a_compile_error_keeps_the_compilers_own_log_once(pocl_device, factories, tmp_path,
                                                         capfd):
    jobs = [Job("broken/n=100", "broken", factories["broken"], {"n": 100})]
    with make_backend("opencl", pocl_device.name) as backend, \
            Store(tmp_path / "s.sqlite", backend.identity) as store:
        run_campaign(jobs, backend, store, **FAST)
        [row] = store.rows()
    assert row["status"] == "compile_error"
    assert "undeclared_thing" in row["message"]  # the compiler's diagnostic
    assert row["message"].count("BUILD_PROGRAM_FAILURE") == 1
    assert "undeclared_thing" not in capfd.readouterr().err  # not raw on the terminal

# }}}


# {{{ one campaign per device

def test_a_second_campaign_on_a_device_is_refused_naming_the_holder(
        holder, pocl_device, kernel_file, tmp_path, capsys):
    db = tmp_path / "s.sqlite"
    status = main(["measure", "--kernel", f"{kernel_file}:scale", "--param", "n=1000",
                   "--db", str(db), "--device", "Portable", "--runs", "6"])
    err = capsys.readouterr().err
    assert status == 1
    assert f"process {holder.pid}" in err and "kernelcast: error:" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not db.exists()  # refused before anything was stored

    started = time.monotonic()
    with pytest.raises(DeviceBusyError, match=f"process {holder.pid}.*after waiting 0.5 s"):
        make_backend("opencl", pocl_device.name, wait=0.5)
    assert time.monotonic() - started >= 0.5


def test_the_lock_goes_with_its_holder_even_by_sigkill(holder, pocl_device):
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    lock = DeviceLock(pocl_device)
    lock.release()


def test_a_waiting_campaign_runs_once_the_holder_is_done(lock_holder, kernel_file, tmp_path):
    lock_holder(2)
    db = tmp_path / "s.sqlite"
    result = _run("measure", "--kernel", f"{kernel_file}:scale", "--param", "n=1000",
                  "--db", db, "--device", "Portable", "--runs", "6", "--wait", "60")
    assert result.returncode == 0, result.stderr
    # timed once the holder let go: "unstable" is a timing, only noisier (a tiny kernel
    # on a shared 2-core CPU sometimes is)
    assert [r["status"] for r in _rows(db)] in (["ok"], ["unstable"])


def test_one_process_shares_its_own_lock(pocl_device):
    first = DeviceLock(pocl_device)
    second = DeviceLock(pocl_device)  # a calibration that also evaluates
    second.release()
    first.release()

# }}}


# {{{ sizes are checked before anything is stored; exit codes

@pytest.mark.parametrize(("size", "message"), [
    ("n=0", "violate the assumptions of kernel 'scale'"),
    ("n=-1", "must not be negative"),
    ("n=2147483648", "does not fit the kernel's int32 argument 'n'"),
])
def test_measure_refuses_sizes_the_kernel_cannot_take_before_storing_anything(
        pocl_device, kernel_file, tmp_path, capsys, size, message):
    db = tmp_path / "s.sqlite"
    status = main(["measure", "--kernel", f"{kernel_file}:scale", "--param", size,
                   "--db", str(db), "--device", "Portable"])
    err = capsys.readouterr().err
    assert status == 2 and message in err and err.count("\n") == 1
    assert not db.exists()


def test_measure_fails_when_no_case_could_be_timed(pocl_device, kernel_file, tmp_path, capsys):
    db = tmp_path / "s.sqlite"
    status = main(["measure", "--kernel", f"{kernel_file}:broken", "--param", "n=100",
                   "--db", str(db), "--device", "Portable"])
    assert status == 1
    err = capsys.readouterr().err
    assert "no case could be timed (1 compile_error)" in err
    assert "  compile_error: the code could not be generated or the device compiler" in err
    assert [r["status"] for r in _rows(db)] == ["compile_error"]

# }}}


# {{{ Ctrl-C and SIGTERM

def _count(db):
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            return conn.execute("SELECT COUNT(*) FROM measurements").fetchone()[0]
    except sqlite3.Error:
        return 0


@pytest.mark.parametrize(("sig", "status", "name"), [
    (signal.SIGINT, 130, "Ctrl-C"), (signal.SIGTERM, 143, "SIGTERM")])
def test_a_signal_stops_the_campaign_cleanly_with_a_resume_hint(tmp_path, pocl_device, sig,
                                                                status, name):
    db = tmp_path / "s.sqlite"
    command = [sys.executable, "-m", "kernelcast", "measure", "--suite", "measurement-cpu",
               "--classes", "global_access", "--p", "global_access=13", "--dtype",
               "float32", "--db", str(db), "--device", "Portable", "--runs", "6",
               "--tolerance", "1"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    try:
        deadline = time.monotonic() + 120
        while _count(db) < 2 and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert process.poll() is None, process.stderr.read()[-2000:]
        process.send_signal(sig)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    stored = _count(db)
    assert process.returncode == status, err[-2000:]
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last == (f"kernelcast: stopped by {name}: this run stored {stored} measurements "
                    f"({stored} into {db.resolve()}); run the same command again to resume "
                    "(stored cases are skipped)")
    resumed = subprocess.run(command, capture_output=True, text=True, timeout=300,
                             check=False)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"{stored} already in" in resumed.stdout

# }}}


def test_sizing_probes_are_not_shown_as_already_in_store_on_a_fresh_store(pocl, tmp_path):
    import io

    from kernelcast.suites.campaign import measure_suite
    from kernelcast.suites.paper import MEASUREMENT_CPU

    stream = io.StringIO()
    with Store(tmp_path / "s.sqlite", pocl.identity) as store:
        measure_suite(MEASUREMENT_CPU, pocl, store, classes=["empty"], dtypes=["float32"],
                      progress=stream, runs=6, tolerance=1.0)
    lines = stream.getvalue().splitlines()
    assert "already in store" not in stream.getvalue()
    assert any(line.endswith("measured above, while choosing sizes") for line in lines)
