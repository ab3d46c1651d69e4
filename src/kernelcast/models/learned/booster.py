"""LightGBM boosters read from profiles without letting a damaged one take the process
down, and LightGBM kept off the terminal.

LightGBM's C++ parser trusts its model text: a truncated or altered booster makes it abort
or crash (SIGABRT, SIGSEGV), after printing hundreds of lines to stdout and stderr. So a
profile's booster is checked twice before this process parses it: its sha256
(``checksum``) must match the one the profile stores, and ``vet`` has a fresh Python
process, which reaches LightGBM's library through ctypes alone (a fork would inherit
OpenMP's threads and can hang), parse it and predict a few rows; only a booster whose
child exits cleanly with finite numbers is parsed here. The verdict is kept per checksum,
so a process pays the child (some tens of ms) once per booster. ``quiet_native`` sends
file descriptors 1 and 2 to /dev/null around LightGBM's native calls, which print from
C++ where ``contextlib.redirect_stdout`` cannot reach; the child's prints are read for
LightGBM's reason ("[Fatal] ...") and never shown.

Public names: checksum, vet, quiet_native.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import signal
import subprocess
import sys

from kernelcast.errors import ProfileError

#: Seconds the child may take; parsing and predicting take tens of milliseconds.
VET_TIMEOUT_S = 60

_VERDICTS: dict[str, str | None] = {}  # checksum -> None (sound) or what is wrong

_CHILD = r"""
import ctypes, math, os, sys
reply = os.dup(1)
os.dup2(2, 1)  # LightGBM's prints join its stderr, which the parent reads for [Fatal]
def answer(text):
    os.write(reply, text.encode("utf-8", "replace"))
    sys.exit(0 if text == "ok" else 3)
lib = ctypes.CDLL(sys.argv[1])
lib.LGBM_GetLastError.restype = ctypes.c_char_p
def last_error():
    return lib.LGBM_GetLastError().decode("utf-8", "replace").strip()
text = sys.stdin.buffer.read()
handle, iterations = ctypes.c_void_p(), ctypes.c_int()
if lib.LGBM_BoosterLoadModelFromString(ctypes.c_char_p(text), ctypes.byref(iterations),
                                       ctypes.byref(handle)):
    answer(last_error())
width = ctypes.c_int()
if lib.LGBM_BoosterGetNumFeature(handle, ctypes.byref(width)):
    answer(last_error())
rows = [[float(v) for v in row.split(",")] for row in sys.argv[2].split(";")]
if width.value != len(rows[0]):
    answer(f"it has {width.value} features, not {len(rows[0])}")
data = (ctypes.c_double * (len(rows) * width.value))(*[v for row in rows for v in row])
for kind in (0, 3):  # C_API_PREDICT_NORMAL, C_API_PREDICT_CONTRIB
    out = (ctypes.c_double * (len(rows) * (width.value + 1)))()
    length = ctypes.c_int64()
    if lib.LGBM_BoosterPredictForMat(handle, data, 1, len(rows), width.value, 1, kind, 0,
                                     -1, b"num_threads=1 verbosity=-1",
                                     ctypes.byref(length), out):
        answer(last_error())
    values = out[:length.value]
    if not values or not all(math.isfinite(v) for v in values):
        answer("it predicts numbers that are not finite")
lib.LGBM_BoosterFree(handle)
answer("ok")
"""


def checksum(booster: str) -> str:
    """The sha256 (hex) of a booster's text, as a profile stores it."""
    return hashlib.sha256(booster.encode("utf-8")).hexdigest()


def _library() -> str:
    """The path of the LightGBM library the lightgbm package loads."""
    from lightgbm.basic import _LIB

    return _LIB._name


def vet(booster: str, rows: list[list[float]]) -> None:
    """Raise a ProfileError unless a separate process parses *booster* and predicts
    *rows* (values and contributions) as finite numbers; once per booster and process."""
    key = checksum(booster)
    if key not in _VERDICTS:
        _VERDICTS[key] = _verdict(booster, rows)
    if _VERDICTS[key] is not None:
        raise ProfileError(_VERDICTS[key])


def _verdict(booster: str, rows: list[list[float]]) -> str | None:
    """None if the child finds *booster* sound, else the one-line reason."""
    table = ";".join(",".join(repr(float(v)) for v in row) for row in rows)
    try:
        done = subprocess.run([sys.executable, "-I", "-S", "-c", _CHILD, _library(), table],
                              input=booster.encode("utf-8"), capture_output=True,
                              timeout=VET_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return (f"LightGBM did not read its booster within {VET_TIMEOUT_S} s (in a "
                "separate process); refit or restore it")
    except OSError as err:
        return f"cannot start a process to check its booster: {err}"
    said = done.stdout.decode("utf-8", "replace").strip().splitlines()
    if done.returncode == 0 and said == ["ok"]:
        return None
    fatal = [line.partition("[Fatal]")[2].strip() for line in
             done.stderr.decode("utf-8", "replace").splitlines() if "[Fatal]" in line]
    why = f" ({fatal[0][:200]})" if fatal else ""
    if done.returncode < 0:
        try:
            name = signal.Signals(-done.returncode).name
        except ValueError:
            name = f"signal {-done.returncode}"
        return (f"damaged: LightGBM crashed ({name}) reading its booster in a separate "
                f"process{why}; refit or restore it")
    why = said[-1][:200] if said else f"exit status {done.returncode}{why}"
    return f"damaged: LightGBM cannot use its booster: {why}; refit or restore it"


@contextlib.contextmanager
def quiet_native():
    """File descriptors 1 and 2 (and sys.stdout, where LightGBM's Python log callback
    prints) go to /dev/null inside; restored on the way out, exception or not."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    saved = {}
    try:
        for fd in (1, 2):
            with contextlib.suppress(OSError):  # a closed descriptor has nothing to keep
                saved[fd] = os.dup(fd)
        null = os.open(os.devnull, os.O_WRONLY)
        for fd in saved:
            os.dup2(null, fd)
        os.close(null)
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            os.close(copy)
