"""The command line, run in-process and as a real subprocess."""

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernelcast.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "kernels.py"


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
    """2^53 + 1 survives (through a float it would become 2^53); 1e3 is a float's
    notation, refused rather than rounded (tests/test_tune_reliability.py)."""
    from kernelcast.frontends.arguments import sizes
    from kernelcast.errors import UsageError

    assert sizes(["n=9007199254740993"]) == {"n": 2**53 + 1}
    with pytest.raises(UsageError, match="--param n: sizes must be integers"):
        sizes(["n=1e3"])


# {{{ issue 21: one-line errors, exit codes 0, 1 and 2 only

KERNELS = '''
import loopy as lp
import numpy as np


def make():
    return 1 / 0


def needs(n):
    return n


def number():
    return 42


def sequential():
    knl = lp.make_kernel("{[i, j]: 0<=i<n and 0<=j<n}", "out[i] = sum(j, a[i, j])",
                         lang_version=(2018, 2), assumptions="n >= 1")
    return lp.add_dtypes(knl, {"a": np.float32})
'''


def _one_error_line(capsys, code, expected_code, *parts):
    err = capsys.readouterr().err
    assert code == expected_code, err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kernelcast: error: "), err
    for part in parts:
        assert part in lines[0], (part, lines[0])
    return lines[0]


@pytest.fixture
def kernel_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kernels.py").write_text(KERNELS)
    (tmp_path / "broken.py").write_text("import loopy\nimport no_such_module_here\n")
    (tmp_path / "syntax.py").write_text("def make(:\n    pass\n")
    (tmp_path / "kernels.txt").write_text(KERNELS)
    (tmp_path / "binary.py").write_bytes(b"\x00\x01\x02")
    (tmp_path / "folder.py").mkdir()
    return tmp_path


@pytest.mark.parametrize(("verb", "extra"), [
    ("properties", []), ("predict", ["--param", "n=10", "--model", "hong-kim",
                                     "--hardware", "h100"])])
@pytest.mark.parametrize(("spec", "parts"), [
    ("kernels.py:make", ["kernels.py:make raised ZeroDivisionError: division by zero "
                         "(run with --debug for the traceback)"]),
    ("kernels.py:needs", ["kernels.py:needs needs arguments (n)"]),
    ("kernels.py:number", ["kernels.py:number returned builtins.int, not a Loopy kernel"]),
    ("broken.py:make", ["broken.py: importing it raised ModuleNotFoundError: No module "
                        "named 'no_such_module_here'"]),
    ("syntax.py:make", ["syntax.py:1: syntax error"]),
    ("kernels.txt:make", ["kernels.txt: a kernel file is a Python file", ".py"]),
    ("binary.py:make", ["binary.py is a binary file"]),
    ("folder.py:make", ["folder.py is a directory"]),
    ("kernels.py:make:", ["expected FILE.py:FACTORY"]),
    ("kernels.py:nothere", ["kernels.py has no callable named 'nothere'"]),
    ("kernels.py/inner.py:make", ["kernels.py/inner.py: ", "kernels.py is not a directory"]),
])
def test_kernel_files_that_fail_are_one_line(kernel_files, capsys, verb, extra, spec, parts):
    _one_error_line(capsys, main([verb, spec, *extra]), 2, *parts)


@pytest.mark.parametrize("argv", [["--debug", "properties", "kernels.py:make"],
                                  ["properties", "kernels.py:make", "--debug"]])
def test_debug_prints_the_traceback_of_the_users_code(kernel_files, capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and "return 1 / 0" in err and "ZeroDivisionError" in err
    assert err.splitlines()[-1].startswith("kernelcast: error: kernels.py:make raised")


def test_a_sequential_kernel_warns_in_one_line(kernel_files, capsys):
    assert main(["properties", "kernels.py:sequential", "--param", "n=8"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("kernelcast: warning: kernel ")
    assert "no parallel launch tags" in err[0] and "could be tagged: i " in err[0]


@pytest.mark.parametrize(("args", "parts"), [
    (["--stat", "rowlen"], ["--stat rowlen: expected NAME=VALUE"]),
    (["--stat", "=5"], ["--stat =5: expected NAME=VALUE"]),
    (["--stat", "rowlen="], ["--stat rowlen=: expected NAME=VALUE"]),
    (["--stat", "rowlen=x"], ["--stat rowlen: not a number: x"]),
    (["--stat", "rowlen=nan"], ["--stat rowlen: not a number: nan"]),
    (["--stat", "rowlen=12", "foo=1"],
     ["unknown statistic 'foo' for kernel spmv_csr; it needs: rowlen"]),
    (["--stat", "rowlen=1", "rowlen=2"], ["--stat rowlen is given twice"]),
])
def test_stat_errors_are_one_line(capsys, args, parts):
    line = _one_error_line(capsys, main(["properties", f"{EXAMPLES}:spmv_csr", "--param",
                                         "n=10", *args]), 2, *parts)
    assert "{" not in line and "data_statistics" not in line


def test_a_statistic_for_a_kernel_that_needs_none(capsys):
    _one_error_line(capsys, main(["properties", f"{EXAMPLES}:scale", "--stat", "n=3"]), 2,
                    "unknown statistic 'n' for kernel ", "it needs none")


def test_every_flag_of_every_verb_has_help():
    from kernelcast.cli import build_parser

    parser = build_parser()
    [verbs] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert set(verbs.choices) == {"properties", "suites", "devices", "measure", "calibrate",
                                  "fit", "predict", "evaluate", "report", "demo",
                                  "project", "tune", "advise", "counters", "models"}
    missing = [f"{verb} {action.dest}" for verb, sub in verbs.choices.items()
               for action in sub._actions
               if not isinstance(action, argparse._HelpAction)
               and not (action.help or "").strip()]
    missing += [a.dest for a in parser._actions
                if not isinstance(a, argparse._HelpAction) and not (a.help or "").strip()]
    assert not missing, f"flags without help: {missing}"
    helps = {verb: {a.dest: a.help for a in sub._actions} for verb, sub in verbs.choices.items()}
    from kernelcast.suites.paper import all_suites as _all_suites

    for name in _all_suites():
        assert name in helps["suites"]["suite"] and name in helps["measure"]["suite"]
    for verb in ("suites", "measure"):
        assert "base size exponent p of a kernel class, §4.1" in helps[verb]["p"]
    # one meaning per flag: --registers is a FILE wherever it is; predict's count is
    # --registers-per-thread
    for verb, sub in verbs.choices.items():
        for action in sub._actions:
            if "--registers" in action.option_strings:
                assert action.metavar == "FILE" and action.type is None, verb
    flags = {}
    for verb, sub in verbs.choices.items():
        for action in sub._actions:
            for flag in action.option_strings:
                flags.setdefault(flag, set()).add((action.type, action.nargs,
                                                   type(action).__name__))
    for flag in ("--runs", "--tolerance", "--param", "--stat", "--p", "--dtype", "--json",
                 "--db", "--device", "--backend", "--debug"):
        assert len(flags[flag]) == 1, (flag, flags[flag])


def test_predict_registers_per_thread(capsys):
    args = ["predict", f"{EXAMPLES}:scale", "--param", "n=1000000", "--model", "hong-kim",
            "--hardware", "h100", "--json"]
    assert main(args) == 0
    free = json.loads(capsys.readouterr().out)["estimate"]["active_blocks_per_sm"]
    assert main([*args, "--registers-per-thread", "255"]) == 0
    limited = json.loads(capsys.readouterr().out)["estimate"]["active_blocks_per_sm"]
    assert limited < free
    profile = str(ROOT / "data" / "profiles" / "nvidia-h100-80gb-hbm3-opencl-paper.json")
    _one_error_line(capsys, main(["predict", f"{EXAMPLES}:scale", "--param", "n=10",
                                  "--profile", profile, "--registers-per-thread", "32"]),
                    2, "--registers-per-thread is for --model hong-kim, not the paper model")
    with pytest.raises(SystemExit) as exit_:
        main([*args, "--registers-per-thread", "0"])
    assert exit_.value.code == 2


@pytest.mark.parametrize(("argv", "parts"), [
    (["--runs", "0"], ["--runs: expected an integer above 4 (the first 4 launches are "
                        "dropped, §4.2), got '0'"]),
    (["--runs", "4"], ["--runs: expected an integer above 4"]),
    (["--runs", "x"], ["--runs: expected an integer above 4"]),
    (["--tolerance", "-1"], ["--tolerance: expected a finite number of at least 0"]),
    (["--tolerance", "nan"], ["--tolerance: expected a finite number of at least 0"]),
])
def test_timing_flags_are_checked(capsys, tmp_path, argv, parts):
    with pytest.raises(SystemExit) as exit_:
        main(["measure", "--suite", "test", "--db", str(tmp_path / "s.sqlite"),
              "--device", "no such device", *argv])  # never measures
    assert exit_.value.code == 2
    assert all(p in capsys.readouterr().err for p in parts)


def test_profile_problems_are_one_line(tmp_path, capsys):
    store = tmp_path / "store.sqlite"
    store.write_bytes((ROOT / "data" / "h100" / "opencl.sqlite").read_bytes()[:8192])
    kernel = [f"{EXAMPLES}:scale", "--param", "n=10"]
    _one_error_line(capsys, main(["predict", *kernel, "--profile", str(store)]), 2,
                    f"{store} is a measurement store, not a profile; did you mean --db?")
    _one_error_line(capsys, main(["predict", *kernel, "--profile", str(tmp_path)]), 2,
                    f"{tmp_path} is a directory")
    truncated = tmp_path / "gpu.json"
    truncated.write_text('{"name": "x", "warp_size": ')
    _one_error_line(capsys, main(["predict", *kernel, "--model", "hong-kim", "--hardware",
                                  str(truncated)]), 2,
                    f"{truncated} is not a JSON hardware description")
    whole = tmp_path / "whole.sqlite"
    whole.write_bytes((ROOT / "data" / "h100" / "opencl.sqlite").read_bytes())
    _one_error_line(capsys, main(["evaluate", "--model", "hong-kim", "--hardware", "h100",
                                  "--db", str(whole), "--registers", "missing.json"]), 2,
                    "no registers file at missing.json")
    long = "z" * 300 + ".json"
    _one_error_line(capsys, main(["predict", *kernel, "--profile", long]), 2,
                    "file name too long")
    from kernelcast.errors import ProfileError
    from kernelcast.workflow import fit_store

    with pytest.raises(ProfileError, match="is a measurement store, not a profile"):
        fit_store(store, "paper", profile_path=store)  # before the (damaged) store is read


def test_devices_says_when_cuda_is_not_available(capsys, monkeypatch):
    import importlib.util

    import kernelcast.measure.devices as devices

    monkeypatch.setattr(devices, "list_devices", lambda: [])
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "cupy" else real(name, *a))
    assert main(["devices"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "CUDA: not available (cupy is not installed)" in out
    assert main(["devices", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["devices"] == []
    assert doc["backends"]["cuda"] == {"available": False, "reason": "cupy is not installed"}


def _raising(error):
    def run(args):
        raise error
    return run


@pytest.mark.parametrize(("error", "code", "parts"), [
    (FileNotFoundError(2, "No such file or directory", "gone.txt"), 1,
     ["kernelcast: error: gone.txt: no such file or directory"]),
    (FileNotFoundError(2, "No such file or directory", "scale_me"), 2, ["scale_me: no such"]),
    (IsADirectoryError(21, "Is a directory", "somewhere"), 1, ["somewhere: is a directory"]),
    (OSError(36, "File name too long", "x" * 300), 1, ["file name too long"]),
    (OSError(28, "No space left on device"), 1, ["no space left on the device"]),
    (PermissionError(13, "Permission denied", "/root/x"), 1, ["/root/x: permission denied"]),
    (MemoryError(), 1, ["kernelcast: error: out of memory"]),
    (RuntimeError("a bug\nover lines"), 1,
     ["kernelcast: internal error: RuntimeError: a bug; over lines (please report; "
      "--debug shows the traceback)"]),
    (KeyError("k"), 1, ["kernelcast: internal error: KeyError: 'k'"]),
])
def test_main_turns_any_exception_into_one_line(capsys, monkeypatch, error, code, parts):
    from kernelcast.cli import kernels

    monkeypatch.setattr(kernels, "properties", _raising(error))
    assert main(["properties", "scale_me"]) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.splitlines()) == 1
    for part in parts:
        assert part in err
    assert main(["--debug", "properties", "scale_me"]) == code
    err = capsys.readouterr().err
    assert "Traceback" in err and err.splitlines()[-1].startswith("kernelcast: ")


def test_a_broken_pipe_exits_0(monkeypatch):
    from kernelcast.cli import kernels

    class Stderr:
        def close(self):
            pass

        def write(self, text):
            raise AssertionError("nothing is written after a broken pipe")

    monkeypatch.setattr(kernels, "properties", _raising(BrokenPipeError(32, "Broken pipe")))
    monkeypatch.setattr(sys, "stderr", Stderr())
    assert main(["properties", "x.py:f"]) == 0

# }}}


def test_a_warning_given_from_two_places_is_printed_once(capsys):
    """predict and its breakdown both evaluate the model: its warning (no weight for a
    property) comes twice, and is printed once."""
    profile = ROOT / "data" / "profiles" / "nvidia-h100-80gb-hbm3-opencl-paper.json"
    code = main(["predict", f"{EXAMPLES}:spmv_csr", "--param", "n=4096", "--stat",
                 "rowlen=12.5", "--profile", str(profile)])
    lines = capsys.readouterr().err.splitlines()
    assert code == 0
    assert len(lines) == len(set(lines)) == 1 and "has no weight for" in lines[0], lines


def test_a_statistic_too_large_to_count_is_a_usage_error(capsys):
    code = main(["properties", f"{EXAMPLES}:spmv_csr", "--param", "n=1000", "--stat",
                 "rowlen=1e308"])
    captured = capsys.readouterr()
    assert code == 2 and "inf" not in captured.out
    assert captured.err.startswith("kernelcast: error: add_f32 of kernel 'spmv_csr' is not "
                                   "a finite count") and captured.err.count("\n") == 1
