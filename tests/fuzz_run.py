"""Running and judging one invocation of the command-line fuzz (tests/fuzzing.py).

``run`` runs ``kernelcast.cli.main`` in a forked child: the parent has imported
kernelcast (``warm``) but never creates an OpenCL context or loads a LightGBM booster;
the child's stdout and stderr are files at the descriptor level (C libraries' output is
captured too), its stdin is /dev/null, and it is killed (its process group) after
``timeout`` seconds or after ``blocked`` seconds waiting on a FIFO, once it has dumped its
threads' stacks. The state (file type and bytes) of every input path on the command line
is taken before and after.

``judge`` checks the result: exit status 0, 1 or 2; no death by a signal, no hang, no
escaped exception; no traceback and no internal error on stderr; a failure ends in
exactly one line "kernelcast: error: ..." (or argparse's usage and error line); no
warning line printed twice; stdout (and a --json document) holds no NaN, no infinity and
no negative time (a breakdown's negative share, printed with its negative percentage, is
a contribution, not a time); every input file is there afterwards with its type and
bytes. Each problem starts with the name of its check (CHECKS).

Public names: CHECKS, KNOWN_ELSEWHERE, OUTPUTS, Result, run, judge, warm, opened_drivers.
"""

from __future__ import annotations

import ctypes
import faulthandler
import hashlib
import json
import math
import os
import re
import select
import signal
import stat
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "kernels.py"
SKELETON = EXAMPLES.parent / "skeletons" / "matmul.sk"

# Findings caused by code that is being fixed elsewhere (not in the CLI, profiles or
# kernel files): (regular expression on the innermost kernelcast frame of the finding's
# traceback, as `kernelcast --debug` prints it; owner). Each is counted as "known", not
# as a failure; remove an entry once the fix is in.
KNOWN_ELSEWHERE: list[tuple[str, str]] = []

# What the judge checks, as the first word of each problem it finds.
CHECKS = ("status", "escaped", "signal", "hangs", "traceback", "internal", "error-lines",
          "nan", "negative-time", "json", "repeated-warning", "input-changed")

# Outputs of a verb (flag → written): every other path on the command line is an input
# and must be left as it was.
OUTPUTS = {("measure", "--db"), ("calibrate", "--db"), ("tune", "--db"),
           ("fit", "--profile"), ("calibrate", "--profile"), ("report", "--out"),
           ("advise", "--figure")}


def warm() -> None:
    """Import what the verbs import, build the parser, and count a few kernels of each
    front-end (Loopy, OpenCL C, a skeleton's layouts), so that each forked child starts
    warm (three to seven times less CPU an invocation). Nothing here creates an OpenCL
    context or loads a LightGBM booster; a warning given here is forgotten (the filters
    are restored, which resets what each module has already warned of), so a child
    still prints it."""
    import importlib
    import warnings

    from kernelcast.cli import build_parser

    for name in ("loopy", "pandas", "scipy.optimize", "lightgbm", "pyopencl",
                 "matplotlib.pyplot", "kernelcast.models", "kernelcast.profile",
                 "kernelcast.report", "kernelcast.workflow", "kernelcast.evaluation.tables",
                 "kernelcast.measure.campaign", "kernelcast.measure.backends",
                 "kernelcast.measure.store", "kernelcast.measure.lock",
                 "kernelcast.tune.distributed", "kernelcast.tune.space",
                 "kernelcast.tune.tuner", "kernelcast.properties.display",
                 "kernelcast.frontends.opencl", "kernelcast.frontends.profiler",
                 "kernelcast.models.criteria.advice", "kernelcast.models.grophecy.search",
                 "kernelcast.facts.counters", "kernelcast.facts.lanes", "kernelcast.facts.warps",
                 "kernelcast.facts.caches", "kernelcast.facts.compiler",
                 "kernelcast.facts.occupancy"):
        try:
            importlib.import_module(name)
        except ImportError:  # an optional one: the child says so
            pass
    build_parser()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            _count_examples()
        except Exception:  # noqa: BLE001, S110 - only warming: a child meets it again
            pass


def opened_drivers() -> list[str]:
    """The OpenCL drivers loaded into this process (the ICD loader loads them when a
    platform is first listed): none in a parent that forks the fuzz's children."""
    names = ("libpocl", "libnvidia-opencl", "libamdocl", "libintelocl", "libigdrcl")
    maps = Path("/proc/self/maps").read_text()
    return sorted({name for name in names if name in maps})


def _count_examples() -> None:
    from kernelcast.cli.kernels import kernel_properties
    from kernelcast.frontends.opencl import count_kernel
    from kernelcast.frontends.skeleton import load_skeleton
    from kernelcast.models.grophecy.search import Hints, search
    from kernelcast.models.hong_kim import load_hardware

    for spec, stats in (("scale", None), ("transpose_naive", None),
                        ("spmv_csr", ["rowlen=12.5"])):
        kernel_properties(f"{EXAMPLES}:{spec}", stats)
    count_kernel("__kernel void k(__global const float *a, __global float *b) {\n"
                 "  int x = get_global_id(0);\n  for (int i = 0; i < 4; i++)\n"
                 "    b[x] += sqrt(a[(x * 7) & 127]) / 3.5f;\n}\n")
    search(load_skeleton(SKELETON), load_hardware("c1060"),
           hints=Hints(block=((16, 16),), fold=((1, 1),), unroll=(False,)))


@dataclass
class Result:
    verb: str
    argv: list[str]
    code: object
    out: str
    err: str
    seconds: float
    escaped: str = ""  # the traceback of an exception that escaped main
    signal: str = ""  # the signal the child died by
    hung: str = ""  # why the child was killed
    changed: list[str] = field(default_factory=list)  # inputs not left as they were
    cpu: float = 0.0  # CPU seconds of the child and the processes it waited for
    env: dict = field(default_factory=dict)  # what run added to the child's environment
    outcome: str = ""
    problems: list[str] = field(default_factory=list)
    traceback: str = ""  # of a finding: as `kernelcast --debug` prints it
    owner: str = ""  # of a known finding

    @property
    def innermost(self) -> str:
        """The innermost kernelcast frame of the traceback ("" without one); a stack
        dumped by faulthandler lists the innermost frame first."""
        frames = [line.strip() for line in self.traceback.splitlines()
                  if line.strip().startswith("File ") and "/kernelcast/" in line]
        if not frames:
            return ""
        return frames[0] if "most recent call first" in self.traceback else frames[-1]

    @property
    def last_line(self) -> str:
        """The exception of the traceback; of a dumped stack, what faulthandler says
        first ("" for a hung child's)."""
        lines = [line for line in self.traceback.splitlines()
                 if line.strip() and not line.startswith(("kernelcast: ", " "))]
        if "most recent call first" in self.traceback:
            lines = [line for line in lines[:1] if line.startswith("Fatal Python error")]
        return lines[-1] if lines else ""


def _state(path: str):
    """(file type, digest of a regular file's bytes) of *path*, None where it is not."""
    try:
        info = os.lstat(path)
    except (OSError, ValueError):
        return None
    digest = ""
    if stat.S_ISREG(info.st_mode):
        try:
            digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        except OSError as err:
            digest = f"unreadable: {err.strerror}"
    return stat.S_IFMT(info.st_mode), digest


def _inputs(verb: str, argv: list[str]) -> dict:
    """The state of every existing path of *argv* that is not one the verb writes: an
    argument, a flag's value (--flag=PATH too) or the file of FILE.py:FACTORY."""
    outputs = set()
    for i, arg in enumerate(argv):
        flag, eq, value = arg.partition("=")
        if (verb, flag) in OUTPUTS:
            outputs.add(value if eq else (argv[i + 1] if i + 1 < len(argv) else ""))
    found = {}
    for arg in argv:
        candidates = {arg, arg.rpartition(":")[0]}
        if arg.startswith("--"):
            candidates.add(arg.partition("=")[2])
        for path in candidates - outputs - {""} - set(found):
            state = _state(path)
            if state is not None:
                found[path] = state
    return found


_TYPES = {stat.S_IFREG: "a regular file", stat.S_IFDIR: "a folder", stat.S_IFIFO: "a FIFO",
          stat.S_IFCHR: "a character device", stat.S_IFLNK: "a symbolic link"}


def _described(before, after) -> str:
    if after is None:
        return "removed"
    if before[0] != after[0]:
        return f"was {_TYPES.get(before[0], 'another type')}, now " \
               f"{_TYPES.get(after[0], 'another type')}"
    return "its bytes changed"


_BLOCKED = {"wait_for_partner", "pipe_read", "pipe_write", "pipe_wait", "fifo_open",
            "pipe_wait_readable", "pipe_wait_writable"}  # the kernel's names: FIFO waits


def _wchan(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/wchan").read_text().strip()
    except OSError:
        return ""


def _wait(pid: int, timeout: float, blocked: float) -> tuple[int, float, str]:
    """The child's wait status, its CPU seconds (with those of the processes it waited
    for), and why it was killed: it ran past *timeout* seconds or waited *blocked*
    seconds on a FIFO ("" where it ended by itself). A killed child first dumps its
    threads' stacks (faulthandler, on SIGUSR1) into its stderr."""
    why, since = "", None
    deadline = time.monotonic() + timeout
    handle = os.pidfd_open(pid)
    try:
        while not select.select([handle], [], [], 0.2)[0]:
            now, wchan = time.monotonic(), _wchan(pid)
            since = (since or now) if wchan in _BLOCKED else None
            if now > deadline:
                why = f"still running after {timeout:g} s"
            elif since is not None and now - since > blocked:
                why = f"blocked on a FIFO ({wchan}) for {blocked:g} s"
            if why:
                os.kill(pid, signal.SIGUSR1)
                time.sleep(0.3)
                break
    finally:
        os.close(handle)
    try:
        os.killpg(pid, signal.SIGKILL)  # the child, where hung, and anything it started
    except (ProcessLookupError, PermissionError):
        pass
    _, status, usage = os.wait4(pid, 0)
    return status, usage.ru_utime + usage.ru_stime, why


def _child(argv: list[str], out: int, err: int, status: str, env: dict) -> None:
    """In the forked child: main(argv) with fd 0 from /dev/null and fds 1 and 2 onto the
    files *out* and *err*; its exit status (or the escaped exception) into the file
    *status*; then os._exit, never a return into the parent's code."""
    code = 255
    try:
        os.setpgid(0, 0)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", encoding="utf-8", buffering=1, closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", buffering=1, closefd=False)  # noqa: SIM115
        faulthandler.enable(sys.stderr, all_threads=True)
        faulthandler.register(signal.SIGUSR1, sys.stderr, all_threads=True)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.environ.update(env)
        from kernelcast.cli import main

        escaped = ""
        try:
            value = main(list(argv))
        except SystemExit as stop:
            value = 0 if stop.code is None else stop.code
        except BaseException:  # noqa: BLE001 - a finding
            value, escaped = None, traceback.format_exc()
        Path(status).write_text(json.dumps({
            "code": value if value is None or type(value) is int else repr(value),
            "escaped": escaped}))
        code = value if type(value) is int and 0 <= value <= 255 else 255
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:  # noqa: BLE001, S110 - closed after a broken pipe
                pass
        try:
            ctypes.CDLL(None).fflush(None)  # C libraries' buffered output
        finally:
            os._exit(code)


def run(verb: str, argv: list[str], *, timeout: float = 120.0, blocked: float = 3.0,
        env: dict | None = None) -> Result:
    """*argv* run through kernelcast.cli.main in a forked child (``_child``), killed
    after *timeout* seconds or *blocked* seconds waiting on a FIFO; *env* is added to
    its environment. The inputs on the command line are compared before and after."""
    before = _inputs(verb, argv)
    with tempfile.TemporaryDirectory(prefix="kernelcast-fuzz-run-") as scratch:
        files = [Path(scratch) / name for name in ("out", "err", "status")]
        out, err = (os.open(p, os.O_RDWR | os.O_CREAT, 0o600) for p in files[:2])
        start = time.perf_counter()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(argv, out, err, str(files[2]), env or {})
        os.close(out)
        os.close(err)
        status, cpu, hung = _wait(pid, timeout, blocked)
        seconds = time.perf_counter() - start
        stdout, stderr = (p.read_text(encoding="utf-8", errors="replace") for p in files[:2])
        reported = json.loads(files[2].read_text()) if files[2].exists() else {}
    code, died = reported.get("code"), ""
    if os.WIFSIGNALED(status) and not hung:
        died = signal.Signals(os.WTERMSIG(status)).name
    elif not reported:
        code = os.waitstatus_to_exitcode(status)
    after = {path: _state(path) for path in before}
    changed = [f"{path}: {_described(state, after[path])}"
               for path, state in before.items() if after[path] != state]
    return Result(verb, list(argv), code, stdout, stderr, seconds, reported.get("escaped", ""),
                  died, hung, changed, cpu, dict(env or {}))

_ERROR = re.compile(r"^kernelcast( [a-z-]+)?: error: ")
_NONFINITE = re.compile(r"(?<![\w.])[-+]?(?:nan|inf(?:inity)?)(?!\w)", re.I)
_NEGATIVE_TIME = re.compile(r"(?<![\w.\-])-(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
                            r" ?(?:s|ms|µs|us|ns|ps|seconds?)(?!\w)")
_SHARE = re.compile(r"\s+-[\d.]+%")  # a breakdown's negative contribution, then its share
_TIME_KEY = re.compile(r"seconds|(^|_)s$|time|duration|predicted|measured|span|latency",
                       re.I)


def _numbers(doc, key=""):
    """(key, number) of every number in a JSON document; a list's items take its key."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _numbers(v, str(k))
    elif isinstance(doc, list):
        for v in doc:
            yield from _numbers(v, key)
    elif isinstance(doc, (int, float)) and not isinstance(doc, bool):
        yield key, doc


def _lies(result: Result) -> list[str]:
    """What stdout holds that no output may: NaN, an infinity, a negative time; with
    --json, a document that is not JSON or holds such a value."""
    problems = []
    for line in result.out.splitlines():
        if _NONFINITE.search(line):
            problems.append(f"nan: {line.strip()[:160]!r}")
        for match in _NEGATIVE_TIME.finditer(line):
            if not _SHARE.match(line, match.end()):
                problems.append(f"negative-time: {line.strip()[:160]!r}")
    asked = "--json" in result.argv and not {"--help", "-h", "--version"} & set(result.argv)
    if asked and result.code == 0 and result.out.strip():
        try:
            doc = json.loads(result.out)
        except ValueError as err:
            return [*problems, f"json: --json printed no JSON document ({err})"]
        for key, value in _numbers(doc):
            if not math.isfinite(value):
                problems.append(f"nan: {key}: {value} in the JSON document")
            elif value < 0 and _TIME_KEY.search(key):
                problems.append(f"negative-time: {key}: {value} in the JSON document")
    return list(dict.fromkeys(problems))


def judge(result: Result, trace: bool = True) -> Result:
    """Set *result*'s outcome (ok, help, usage, error 1, error 2, known, failure) and its
    problems (each starts with one of CHECKS); with *trace*, a finding gets a traceback
    (an escaped exception's, a dead or hung child's stacks, else that of the invocation
    run again with --debug) and is "known" where its innermost kernelcast frame is one
    of KNOWN_ELSEWHERE."""
    problems = result.problems
    lines = result.err.splitlines()
    if result.hung:
        problems.append(f"hangs: {result.hung}")
    if result.signal:
        problems.append(f"signal: died by {result.signal}")
    if result.escaped:
        problems.append("escaped: an exception escaped main")
    if result.code not in (0, 1, 2) and not (result.hung or result.signal):
        problems.append(f"status: exit status {result.code!r}")
    if "Traceback (most recent call last)" in result.err:
        problems.append("traceback: a traceback on stderr")
    errors = [line for line in lines if _ERROR.match(line)]
    internal = [line for line in lines if line.startswith("kernelcast: internal error")]
    if internal:
        problems.append("internal: an internal error")
    warned = Counter(line for line in lines if line.startswith("kernelcast: warning:"))
    problems += [f"repeated-warning: {n} times {line!r}" for line, n in warned.items()
                 if n > 1]
    problems += _lies(result)
    problems += [f"input-changed: {change}" for change in result.changed]
    if result.hung or result.signal:
        outcome = "failure"
    elif result.code == 0:
        if errors or internal:
            problems.append("error-lines: an error line, yet exit status 0")
        outcome = "help" if ("--help" in result.argv or "--version" in result.argv) else "ok"
    elif lines and lines[0].startswith("usage:"):
        outcome = "usage"
        if result.code != 2 or not errors or errors[-1] != lines[-1]:
            problems.append("error-lines: argparse's error is not its last line")
    else:
        outcome = f"error {result.code}"
        if len(errors) != 1:
            problems.append(f"error-lines: {len(errors)} error lines, not one")
        elif errors[0] != lines[-1]:
            problems.append("error-lines: the error line is not the last line")
    outcome = "failure" if problems else outcome
    if problems and trace:
        if result.escaped or result.hung or result.signal:
            result.traceback = result.escaped or result.err
        elif result.code != 0:
            result.traceback = run(result.verb, ["--debug", *result.argv],
                                   env=result.env).err
        known = [owner for pattern, owner in KNOWN_ELSEWHERE
                 if re.search(pattern, result.innermost)]
        if known:
            outcome, result.owner = "known", known[0]
    result.outcome = outcome
    return result
