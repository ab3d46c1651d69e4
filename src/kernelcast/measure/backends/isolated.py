"""A backend that runs in a worker process, so that a kernel that crashes does not take the
campaign with it.

An out-of-bounds kernel on PoCL (which runs kernels in the calling process) or a process
memory limit ends the process with a signal: in-process, the campaign died with no row and
no word, and resuming crashed again on the same case. IsolatedBackend sends each compile,
check run and timing to a worker process (``python -m kernelcast.measure.backends.isolated``)
over a socket; when the worker dies, the call raises WorkerCrashed naming the signal (the campaign
records the case as ``crashed`` and goes on) and the next call starts a new worker. A GPU
context that a launch error may have poisoned (an illegal address on CUDA makes every later
call fail) is rebuilt the same way: the worker is replaced after any failure but a compile
error, and an error of the GPU library outside a launch is a launch error. TVM's
measure pipeline isolates its runs likewise.

The worker receives only plain objects (kernelcast.measure.launch), compiles each kernel
once and keeps it. It ignores SIGINT (the campaign decides how to stop) and ends when its
socket closes. Its stdout goes to stderr, so that it never mixes with a command's output.

A kernel factory (FILE.py:FACTORY) runs in such a worker too (``load_kernel_isolated``):
a factory that ends its process ends the worker, not the command.

Public names: IsolatedBackend, WorkerCrashed, load_kernel_isolated.
"""

from __future__ import annotations

import os
import pickle
import signal
import socket
import subprocess
import sys
from multiprocessing.connection import Connection
from pathlib import Path

from kernelcast.errors import (
    KernelcastError,
    KernelFileError,
    MissingDependencyError,
    UsageError,
)
from kernelcast.measure.backends.base import (
    CompileError,
    DeviceHolder,
    LaunchError,
    OutOfMemory,
)

# errors the worker sends back by name; anything else arrives as KernelcastError
_ERRORS = {error.__name__: error for error in (CompileError, OutOfMemory, LaunchError,
                                                MissingDependencyError, UsageError,
                                                KernelFileError)}


class WorkerCrashed(KernelcastError):
    """The worker process died while running a case (the message names the signal)."""


def _describe(returncode: int | None) -> str:
    if returncode is None:
        return "stopped answering"
    if returncode < 0:
        try:
            sig = signal.Signals(-returncode)
            return f"was killed by {sig.name} ({signal.strsignal(sig) or 'signal'})"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with status {returncode}"


def _spawn() -> tuple[subprocess.Popen, Connection]:
    """A new worker process and this side of its socket."""
    ours, theirs = socket.socketpair()
    package_root = str(Path(__file__).resolve().parents[3])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", __name__, str(theirs.fileno())],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=2, env=env)
    finally:
        theirs.close()
    return process, Connection(ours.detach())


class _RemoteTraceback(Exception):
    """The traceback of an error in the worker, as text: the cause of the error raised
    here, so that --debug shows where the user's code failed."""

    def __str__(self):
        return "\n" + self.args[0]


def load_kernel_isolated(spec: str):
    """(kernel, factory name): the Loopy kernel that the factory of ``FILE.py:FACTORY``
    *spec* returns (kernelcast.frontends.files.load_kernel), made in a worker process.
    The user's file and factory run there, so that one that ends its process (os._exit,
    a crash) is a KernelFileError naming *spec*, not the silent end of the caller; their
    errors and warnings are given again here. The kernel travels back pickled; one that
    cannot (it holds objects of a class defined in the user's file) is made again here,
    once the worker has shown that the factory returns."""
    import warnings

    process, conn = _spawn()
    reply = None
    try:
        conn.send(("kernel", spec))
        reply = conn.recv()
    except (EOFError, OSError):
        raise KernelFileError(f"{spec}: the kernel factory ended the process "
                              f"({_ended(process.wait())}) before returning a kernel"
                              ) from None
    finally:
        conn.close()  # the worker ends when its socket closes
        if reply is None and process.poll() is None:  # interrupted during the factory
            process.kill()
        process.wait()
    if reply[0] != "ok":
        raise _ERRORS.get(reply[1], KernelcastError)(reply[2])
    data, name, caught, failure = reply[1]
    for category, text in caught:
        warnings.warn(text, category, stacklevel=2)
    if failure is not None:
        kind, text, trace = failure
        raise _ERRORS.get(kind, KernelcastError)(text) from _RemoteTraceback(trace)
    if data is not None:
        try:
            return pickle.loads(data), name  # noqa: S301 - made by our own worker
        except Exception:  # noqa: BLE001 - it holds a class of the kernel file
            pass
    # the factory returned a kernel there, but one that cannot travel: made again here,
    # now that it is known to return
    from kernelcast.frontends.files import build_kernel, load_factory

    return build_kernel(load_factory(spec), spec), name


def _ended(returncode: int) -> str:
    """How a worker that gave no answer ended, as the factory's author would write it."""
    return f"os._exit({returncode})" if returncode >= 0 else \
        _describe(returncode).removeprefix("was ")


class IsolatedBackend(DeviceHolder):
    """The backend *name* ("opencl" or "cuda") on *device* (a DeviceInfo), in a worker
    process; the same compile, run_once and time_case as an in-process Backend."""

    def __init__(self, name: str, device, build_options: str = "", lock=None):
        self.name, self.device, self.build_options, self.lock = (
            name, device, build_options, lock)
        self._process = self._conn = None
        self.starts = 0  # workers started: more than one after crashes or launch errors

    # {{{ the worker's life

    def _start(self):
        self._process, self._conn = _spawn()
        try:
            self._request("start", self.name, self.device, self.build_options)
        except WorkerCrashed:
            raise
        except KernelcastError:
            self._stop()
            raise

    def _stop(self, kill: bool = False):
        """End the worker: at once with *kill* (a poisoned context's teardown only
        prints errors), else when it has finished what it is doing."""
        if self._conn is not None:
            self._conn.close()
        if self._process is not None and kill:
            self._process.kill()
        if self._process is not None:
            try:  # an idle worker ends at once; a busy one is not waited for long
                self._process.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = self._conn = None

    def close(self) -> None:
        """End the worker and release the device's lock."""
        self._stop()
        super().close()

    def _request(self, *message):
        try:
            self._conn.send(message)
            reply = self._conn.recv()
        except (EOFError, OSError):
            process = self._process
            try:
                code = process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                code = process.wait()
            self._process = None
            self._conn.close()
            self._conn = None
            raise WorkerCrashed(f"the measuring process {_describe(code)}") from None
        if reply[0] == "ok":
            return reply[1]
        kind, text = reply[1], reply[2]
        if kind not in ("CompileError", "UsageError"):
            # the context may be poisoned (an illegal address on CUDA fails every later
            # call; NVIDIA's OpenCL reports one as OUT_OF_RESOURCES): a new worker next
            self._stop(kill=True)
        raise _ERRORS.get(kind, KernelcastError)(text)

    def _call(self, *message):
        if self._process is None:
            self.starts += 1
            self._start()
        return self._request(*message)

    # }}}

    def compile(self, kernel):
        """Compile *kernel* in the worker (raises CompileError with the compiler's log);
        the handle is the kernel itself."""
        self._call("compile", kernel)
        return kernel

    def run_once(self, compiled, kernel, specs, scalars, params, seed=0):
        return self._call("run_once", kernel, specs, scalars, params, seed)

    def time_case(self, compiled, kernel, specs, scalars, params, seed=0, **timing):
        return self._call("time_case", kernel, specs, scalars, params, seed, timing)

    def time_copies(self, nbytes, direction, **timing):
        return self._call("time_copies", nbytes, direction, timing)


# {{{ the worker process

def _make_kernel(spec: str) -> tuple:
    """For load_kernel_isolated: (the kernel pickled or None, the factory's name, the
    warnings given, None or the failure as (error class name, message, traceback)). A
    warning is (category, text); a category the caller may not import (one of the user's
    file) becomes UserWarning naming it."""
    import traceback
    import warnings

    from kernelcast.frontends.files import build_kernel, load_factory

    data = name = failure = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            factory = load_factory(spec)
            name = getattr(factory, "__name__", None) or spec.rpartition(":")[2]
            knl = build_kernel(factory, spec)
        except KernelcastError as err:  # the user's code raised: its traceback too
            failure = (type(err).__name__, str(err),
                       "".join(traceback.format_exception(err.__cause__ or err)))
    if failure is None:
        try:
            data = pickle.dumps(knl)
        except Exception:  # noqa: BLE001 - what it holds cannot travel: made again there
            data = None
    given = [(w.category, str(w.message))
             if w.category.__module__.split(".")[0] in ("builtins", "kernelcast", "loopy")
             else (UserWarning, f"{w.category.__name__}: {w.message}") for w in caught]
    return data, name, given, failure


def _serve(conn: Connection) -> None:
    from kernelcast.measure.backends.cuda import CudaBackend
    from kernelcast.measure.backends.opencl import OpenCLBackend

    backend, compiled = None, {}

    def ensure(kernel):
        key = (kernel.code, kernel.name)
        if key not in compiled:
            compiled[key] = backend.compile(kernel)
        return compiled[key]

    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        verb, *args = message
        try:
            if verb == "start":
                name, device, options = args
                backend = (CudaBackend if name == "cuda" else OpenCLBackend)(device, options)
                result = None
            elif verb == "kernel":
                result = _make_kernel(args[0])
            elif verb == "compile":
                ensure(args[0])
                result = None
            elif verb == "run_once":
                kernel, specs, scalars, params, seed = args
                result = backend.run_once(ensure(kernel), kernel, specs, scalars, params, seed)
            elif verb == "time_case":
                kernel, specs, scalars, params, seed, timing = args
                result = backend.time_case(ensure(kernel), kernel, specs, scalars, params,
                                           seed, **timing)
            elif verb == "time_copies":
                nbytes, direction, timing = args
                result = backend.time_copies(nbytes, direction, **timing)
            else:
                raise KernelcastError(f"unknown request {verb!r}")
            reply = ("ok", result)
        except MemoryError as err:
            reply = ("error", "OutOfMemory", f"host memory ran out: {err}")
        except Exception as err:  # noqa: BLE001 - every failure goes back as a reply
            kind = type(err).__name__
            if type(err).__module__.split(".")[0] in ("cupy", "cupy_backends", "pyopencl"):
                kind, err = "LaunchError", f"the device failed: {kind}: {err}"
            text = str(err) if kind in _ERRORS or isinstance(err, KernelcastError) \
                else f"{kind}: {err}"
            reply = ("error", kind if kind in _ERRORS else "KernelcastError", text)
        try:
            conn.send(reply)
        except OSError:  # the campaign stopped while this request ran
            return


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _serve(Connection(int(sys.argv[1])))

# }}}
