"""The command line never lies: a seeded fuzz of every verb, each invocation in a forked
child.

Malformed sizes and statistics, missing, unreadable, wrong and non-regular paths (a FIFO,
a character device), kernel files that fail in every way, and every input kind damaged
(profiles of every model, hardware, registers and hints files, stores, code skeletons,
OpenCL C source, Nsight Compute CSVs, search spaces; tests/fuzzing.py and its fuzz_*
modules generate them): every invocation exits with 0, 1 or 2, neither dies by a signal
nor hangs, prints no traceback, ends a failure with exactly one "kernelcast: error:" line
(or argparse's usage and error), prints no warning twice, prints no NaN, infinity or
negative time, leaves every input file it was given and data/ as they were. All 450
invocations of the seed run (at least 10 of each verb), however fast the machine; the
time budget only stops a fuzz that hangs (benchmarks/fuzz.py runs a larger fuzz).
"""

import multiprocessing
import os
import random
import sys
from concurrent.futures import ProcessPoolExecutor

import pytest

import fuzz_tune
import kernelcast.cli
from fuzzing import (
    KNOWN_ELSEWHERE,
    VERBS,
    Budget,
    Result,
    Workspace,
    fuzz,
    generate,
    judge,
    run,
)

INVOCATIONS = 450  # about a minute on a 2-core machine
SECONDS = 600.0  # generation stops here, whether or not all ran


def _fresh(function, *args, **kwargs):
    """*function* called in a new Python process: the fuzz forks its children there,
    never in this one, where other tests may have opened an OpenCL device."""
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=spawn) as pool:
        return pool.submit(function, *args, **kwargs).result()


@pytest.fixture(scope="module")
def summary(tmp_path_factory):
    return _fresh(fuzz, tmp_path_factory.mktemp("fuzz"), seed=21, invocations=INVOCATIONS,
                  seconds=SECONDS, budget=Budget(), timeout=60.0)


def test_enough_invocations_of_every_verb_ran(summary):
    assert summary["invocations"] == INVOCATIONS, summary
    for verb in VERBS:
        assert sum(summary["by_verb"][verb].values()) >= 10, (verb, summary["by_verb"])
    outcomes = summary["outcomes"]
    assert outcomes.get("ok", 0) >= 50 and outcomes.get("error 2", 0) >= 100
    assert outcomes.get("error 1", 0) >= 12 and outcomes.get("usage", 0) >= 20


def test_every_kind_of_input_came_damaged(summary):
    """Each profile kind and input file the verbs read was given damaged at least once."""
    kinds = {f"{model} profile" for model in ("paper", "extended", "hong-kim", "learned",
                                              "poppl-herz", "criteria")}
    kinds |= {"hardware file", "registers file", "measurement store", "kernel file",
              "skeleton", "hints file", "space file", "OpenCL source", "ncu CSV", "a FIFO",
              "JSON nested deeply", "TOML nested deeply"}
    if os.geteuid() == 0:
        kinds.add("a character device")
    assert not kinds - set(summary["damaged"]), summary["damaged"]


def test_no_invocation_lies(summary):
    failures = [f for f in summary["findings"] if f["outcome"] == "failure"]
    report = "\n".join(f"{f['argv']}: {f['problems']}; {f['stderr_tail']}; "
                       f"{f['innermost_frame']} {f['traceback_tail']}" for f in failures[:20])
    assert not failures, f"{len(failures)} invocations failed:\n{report}"


def test_data_is_left_as_it_was(summary):
    assert summary["data_changed"] == []


def test_the_parent_of_the_children_opened_no_device(summary):
    assert summary["drivers_in_parent"] == []


def test_known_findings_elsewhere_are_listed(summary):
    """Findings in code being fixed elsewhere count apart; report them while they last."""
    known = [f for f in summary["findings"] if f["outcome"] == "known"]
    if known:
        print(f"\n{len(known)} known findings elsewhere ({len(KNOWN_ELSEWHERE)} patterns)",
              file=sys.stderr)


def test_the_generator_is_seeded(tmp_path):
    def first(seed, where):
        ws = Workspace(tmp_path / where, random.Random(seed))
        return [generate(ws, Budget())[1] for _ in range(200)]

    one, again = first(5, "a"), first(5, "b")
    assert [[a.replace("/b/", "/a/") for a in argv] for argv in again] == one
    assert {argv[0] for argv in one if argv} >= {"predict", "project", "tune", "advise"}


def _judged_run(verb, argv):
    return judge(run(verb, argv))


def test_tune_refuses_a_missing_device_before_ranking(tmp_path):
    """The fuzz gives tune a device no device has: the error comes once the inputs are
    read, before any variant is ranked."""
    (tmp_path / "k.py").write_text(fuzz_tune.FACTORIES)
    (tmp_path / "space.toml").write_text(fuzz_tune.KERNELS["mm"][1])
    result = _fresh(_judged_run, "tune", [
        "tune", f"{tmp_path}/k.py:mm", "--param", "n=24", "m=40", "--space",
        f"{tmp_path}/space.toml", "--model", "hong-kim", "--hardware", "h100", "--device",
        "zz-no-such-device"])
    assert result.outcome in ("error 1", "error 2"), (result.problems, result.err)
    assert "zz-no-such-device" in result.err.splitlines()[-1]
    assert "tuning mm on" not in result.err and result.seconds < 30  # never ranked


def _judged(code, err="", out="", argv=("properties",)):
    return judge(Result("properties", list(argv), code, out, err, 0.0))


def test_the_judge_catches_what_lies():
    assert _judged(0).outcome == "ok"
    assert _judged(2, "kernelcast: error: bad\n").outcome == "error 2"
    assert _judged(2, "usage: kernelcast\nkernelcast: error: argument\n").outcome == "usage"
    assert _judged(1, "Traceback (most recent call last):\nkernelcast: error: x\n"
                   ).outcome == "failure"
    assert _judged(1, "kernelcast: error: a\nkernelcast: error: b\n").outcome == "failure"
    assert _judged(1, "kernelcast: error: a\nmore\n").outcome == "failure"
    assert _judged(3, "kernelcast: error: a\n").outcome == "failure"
    assert _judged(1, "kernelcast: internal error: KeyError: 'x'\n").outcome == "failure"
    assert _judged(0, "kernelcast: error: x\n").outcome == "failure"
    assert run("devices", ["--version"]).code == 0


@pytest.mark.parametrize("out, argv, check", [
    ("predicted run time: nan µs\n", (), "nan"),
    ("  launch   inf s   100.0%\n", (), "nan"),
    ("speedup: -Infinity\n", (), "nan"),
    ("predicted run time on X: -3.2 µs\n", (), "negative-time"),
    ("measured -1e-06 s\n", (), "negative-time"),
    ('{"seconds": NaN}\n', ("--json",), "nan"),
    ('{"top": [{"predicted_s": -1e-06}]}\n', ("--json",), "negative-time"),
    ('{"search_seconds": -2}\n', ("--json",), "negative-time"),
    ("not JSON\n", ("--json",), "json"),
])
def test_the_judge_refuses_nan_infinity_and_negative_times(out, argv, check):
    result = _judged(0, out=out, argv=("predict", *argv))
    assert result.outcome == "failure"
    assert any(p.startswith(check + ":") for p in result.problems), result.problems


def test_the_judge_accepts_finite_times_and_negative_shares():
    out = ("predicted run time on X, learned model: 743 µs\n"
           "  log2_bytes_moved                 471 µs    63.4%\n"
           "  item_flops                     -73.3 µs    -9.9%\n"
           "kernel a-1 s-2 at n=-5; 5-10 ms; CWP − 1 = 1.4; info, infeasible\n")
    assert _judged(0, out=out).outcome == "ok"
    doc = '{"seconds": 1e-06, "breakdown": {"item_flops": -7e-05}, "speedup": -1}\n'
    assert _judged(0, out=doc, argv=("predict", "--json")).outcome == "ok"


def test_the_judge_refuses_a_warning_printed_twice():
    twice = "kernelcast: warning: guessed\nkernelcast: warning: guessed\n"
    result = _judged(0, twice)
    assert result.outcome == "failure" and result.problems[0].startswith("repeated-warning")
    assert _judged(0, "kernelcast: warning: a\nkernelcast: warning: b\n").outcome == "ok"


def _child_main(monkeypatch, body):
    """kernelcast.cli.main in the forked children replaced by *body*."""
    monkeypatch.setattr(kernelcast.cli, "main", body)


def test_a_child_killed_by_a_signal_is_a_finding(monkeypatch):
    # a real fault (a read at address 0), not a sent signal: a SIGSEGV handler the
    # parent inherited (LLVM's, once PoCL is loaded) returns from a sent one
    _child_main(monkeypatch, lambda argv: __import__("ctypes").string_at(0))
    result = judge(run("properties", ["properties", "x.py:k"]))
    assert result.signal == "SIGSEGV" and result.outcome == "failure"
    assert result.problems[0].startswith("signal:")
    assert "Fatal Python error" in result.traceback  # faulthandler's dump, in stderr


def test_a_child_that_hangs_is_killed_and_a_finding(monkeypatch, tmp_path):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    _child_main(monkeypatch, lambda argv: len(open(argv[-1]).read()))  # noqa: SIM115
    result = judge(run("predict", ["predict", "--profile", str(fifo)], blocked=0.5))
    assert result.outcome == "failure" and result.problems[0].startswith("hangs:")
    assert "FIFO" in result.hung and "most recent call first" in result.traceback
    assert fifo.exists()

    _child_main(monkeypatch, lambda argv: __import__("time").sleep(60))
    result = judge(run("predict", ["predict"], timeout=1.0))
    assert result.outcome == "failure" and "after 1 s" in result.hung


def test_output_at_the_descriptor_level_and_escaped_exceptions_are_seen(monkeypatch):
    def body(argv):
        os.write(1, b"C library says nan ms\n")
        raise RuntimeError("escaped")

    _child_main(monkeypatch, body)
    result = judge(run("properties", ["properties"]))
    assert "C library says" in result.out and result.code is None
    assert {p.split(":")[0] for p in result.problems} >= {"escaped", "nan"}
    assert "RuntimeError: escaped" in result.traceback


def test_a_changed_input_file_is_a_finding(monkeypatch, tmp_path):
    given, written = tmp_path / "p.json", tmp_path / "out.json"
    given.write_text("{}")
    written.write_text("{}")

    def body(argv):
        for path in (given, written):
            path.write_text('{"changed": 1}')
        return 0

    _child_main(monkeypatch, body)
    result = judge(run("fit", ["fit", "--db", str(given), "--profile", str(written)]))
    assert result.outcome == "failure"
    assert result.problems == [f"input-changed: {given}: its bytes changed"]

    def replaced(argv):
        given.unlink()
        os.mkfifo(given)
        return 0

    _child_main(monkeypatch, replaced)
    result = judge(run("predict", ["predict", f"--profile={given}"]))
    assert result.problems == [f"input-changed: {given}: was a regular file, now a FIFO"]
