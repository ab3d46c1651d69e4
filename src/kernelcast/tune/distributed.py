"""Ranking and measuring spread over processes, locally or on a Dask cluster.

``cluster(workers=N)`` starts a local Dask cluster of N worker processes with one thread
each (no dashboard, no statistical profiler, Dask's logging silenced);
``cluster(scheduler="tcp://HOST:PORT")`` connects to an existing Dask scheduler. Either
way it is a context manager that gives a ``distributed.Client`` and closes what it
started. Dask is imported only here and only when a cluster is asked for: ``import
kernelcast`` does not load it.

``map_chunks`` runs a function over chunks of a list on the workers and gives the results
back in the list's order, reporting progress as chunks complete;
kernelcast.tune.tuner.rank uses it (``rank(..., client=...)``) to make, check, count and
predict the variants of a space on the workers. Workers count with
kernelcast.properties.cached_properties by default: workers on one host share its cache
folder (``KERNELCAST_CACHE_DIR``, which local workers inherit).

``measure`` runs measurement jobs (kernelcast.measure.campaign.Job) on the workers: each
worker makes the kernel, generates its code, compiles and times it on its own device (a
backend of kernelcast.measure.backends, in a process of its own) and sends the rows back;
the caller's process adds each to the store as it arrives, committed at once, keyed as
run_campaign keys them (so a campaign interrupted, or run before without workers, resumes
measuring nothing twice). A task is one kernel: a crash loses at most the kernels in
flight. Workers on the caller's host rely on the caller's hold of the device's lock
(kernelcast.measure.lock); workers elsewhere take their own device's lock. On one device,
workers time one case at a time (kernelcast.measure.lock.take_turn, a lock file per device
that the workers of a host share): timing two kernels at once on one device would corrupt
both, while generating code and compiling overlap. On a CPU device (PoCL) code generation
and compilation would compete with the timing for the same cores, so there a worker holds
the lock for the whole case and measurement is, correctly, no faster than without workers.
A worker whose device is not the store's (another name, driver or number of compute
units) is refused.

**Several devices.** ``cluster(devices=[...])`` starts one worker per device
(kernelcast.measure.devices: identical devices of this host), each pinned to its device
(``KERNELCAST_DEVICE_INSTANCE`` in its environment, and a Dask resource named by
``device_resource``) and holding that device's own lock while it measures (from its
first case to the end of the ``measure`` call, or for a whole calibration).
``measure(..., per_device=True)`` spreads the jobs over such workers, every device timing
its own kernels at once; on a cluster reached with ``scheduler=``, each worker claims the
first device of the store's kind on its host whose lock is free. Rows still come back to
the caller's store. ``on_devices`` runs one function per device on that device's worker
(a whole calibration: kernelcast.workflow.calibrate_devices). A worker that dies is
restarted by its nanny (taking its device again) and Dask runs its unfinished tasks again
on a live worker; rows are stored only when a task ends, and keys already stored are
skipped, so a case is stored once however often its task ran.

Jobs' ``build`` functions are pickled (by cloudpickle) to the workers: ship a kernel made
once (``functools.partial(apply, knl, variant, space)``), not a user's FILE.py:FACTORY,
which a worker may not be able to import.

Public names: cluster, check_workers, check_address, map_chunks, measure, campaign_on,
on_devices, device_resource, workers_of, worker_pids, DEVICE_ENV.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from kernelcast.errors import DeviceBusyError, KernelcastError, UsageError
from kernelcast.measure.campaign import STDERR

#: Seconds to wait for a scheduler to answer, and for it to have a worker.
CONNECT_TIMEOUT = 10.0
#: The environment variable naming the device (its instance) a worker is pinned to.
DEVICE_ENV = "KERNELCAST_DEVICE_INSTANCE"

_ADDRESS = re.compile(r"^(?:(?P<scheme>tcp|tls)://)?"
                      r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>[0-9]{1,5})$")


def check_workers(value) -> int:
    """*value* as a number of local worker processes (at least 1), else a UsageError."""
    try:
        number = int(str(value).strip())
    except ValueError:
        number = 0
    if number < 1:
        raise UsageError(f"--workers {value}: expected a positive integer (1: no worker "
                         "processes)")
    return number


def check_address(text: str) -> str:
    """A Dask scheduler's address, ``tcp://HOST:PORT`` (``HOST:PORT`` means tcp), else a
    UsageError."""
    match = _ADDRESS.match(str(text).strip())
    if not match or not 1 <= int(match["port"]) <= 65535:
        raise UsageError(f"--scheduler {text}: expected a Dask scheduler's address, such as "
                         "tcp://HOST:8786")
    return f"{match['scheme'] or 'tcp'}://{match['host']}:{int(match['port'])}"


def device_resource(device) -> str:
    """The Dask resource that the worker pinned to *device* (a DeviceInfo) offers."""
    return "device-" + re.sub(r"[^A-Za-z0-9]+", "-", device.lock_name).strip("-").lower()


def _device_cluster(devices):
    """A local cluster of one worker (a nanny and its process) per device in *devices*."""
    from distributed import Nanny, Scheduler, SpecCluster

    quiet = logging.CRITICAL
    workers = {
        f"device-{i}": {"cls": Nanny, "options": {
            "nthreads": 1, "memory_limit": 0, "host": "127.0.0.1", "silence_logs": quiet,
            "env": {DEVICE_ENV: d.instance}, "resources": {device_resource(d): 1}}}
        for i, d in enumerate(devices)}
    scheduler = {"cls": Scheduler, "options": {
        "host": "127.0.0.1", "dashboard": False, "dashboard_address": "127.0.0.1:0"}}
    return SpecCluster(workers=workers, scheduler=scheduler, silence_logs=quiet)


@contextlib.contextmanager
def cluster(workers: int = 1, scheduler: str | None = None, *,
            timeout: float = CONNECT_TIMEOUT, devices=None) -> Iterator:
    """A ``distributed.Client``: of a new local cluster of *workers* processes (one thread
    each), of one worker per device in *devices* (DeviceInfo of this host; *workers* is
    then not used), or of the scheduler at *scheduler*; what was started is closed at the
    end. A scheduler that does not answer within *timeout* seconds, or has no worker by
    then, or whose workers run another kernelcast or Loopy, is a KernelcastError."""
    if scheduler is not None:
        if devices:
            raise UsageError("a cluster of one worker per device is made on this host: "
                             "not with --scheduler")
        address = check_address(scheduler)
    elif not devices:
        workers = check_workers(workers)
    import dask
    from distributed import Client, LocalCluster
    from distributed.utils import silence_logging_cmgr

    with silence_logging_cmgr(logging.CRITICAL), contextlib.ExitStack() as stack:
        if scheduler is None:
            # no statistical profiler in the workers: sampling Loopy's deep stacks every
            # 10 ms cost about a tenth of their time (local workers take this config)
            stack.enter_context(dask.config.set({"distributed.worker.profile.enabled":
                                                 False}))
            # no dashboard; the scheduler's HTTP server (Dask starts one anyway, on 8787
            # by default) on a free port of this host only
            if devices:
                local = _device_cluster(devices)
            else:
                local = LocalCluster(n_workers=workers, threads_per_worker=1,
                                     processes=True, dashboard_address=None,
                                     silence_logs=logging.CRITICAL, memory_limit=0,
                                     host="127.0.0.1",
                                     scheduler_kwargs={"dashboard": False,
                                                       "dashboard_address": "127.0.0.1:0"})
            stack.callback(local.close)
            client = Client(local)
            stack.callback(client.close)
        else:
            try:
                client = Client(address, timeout=timeout)
            except (OSError, TimeoutError) as err:
                raise KernelcastError(f"cannot reach the Dask scheduler at {address} "
                                      f"within {timeout:g} s: {_first_line(err)}") from None
            stack.callback(client.close)
            try:
                client.wait_for_workers(1, timeout=timeout)
            except (OSError, TimeoutError):
                raise KernelcastError(f"the Dask scheduler at {address} has no worker "
                                      f"(waited {timeout:g} s)") from None
            _check_versions(client, address)
        yield client


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def _versions() -> tuple[str, str, str]:
    import platform

    from loopy.version import VERSION_TEXT

    from kernelcast.version import __version__

    return __version__, VERSION_TEXT, platform.python_version()


def _check_versions(client, address: str) -> None:
    ours = _versions()
    for worker, theirs in client.run(_versions).items():
        if tuple(theirs) != ours:
            raise KernelcastError(
                f"the worker {worker} of {address} runs kernelcast {theirs[0]}, Loopy "
                f"{theirs[1]}, Python {theirs[2]}; this process runs kernelcast {ours[0]}, "
                f"Loopy {ours[1]}, Python {ours[2]}: install the same on every worker")


def workers_of(client) -> int:
    """How many tasks *client*'s cluster runs at once (its workers' threads)."""
    info = client.scheduler_info(n_workers=-1)
    return max(1, sum(w.get("nthreads", 1) for w in info["workers"].values()))


def worker_pids(client) -> dict[str, int]:
    """The process id of each worker of *client*'s cluster, by address."""
    return client.run(os.getpid)


def _lost(err: BaseException) -> KernelcastError:
    return KernelcastError(f"the Dask cluster failed: {type(err).__name__}: "
                           f"{_first_line(err)}")


@contextlib.contextmanager
def _submitted(client) -> Iterator[list]:
    """A list to put the futures submitted to *client* in: those not done are cancelled at
    the end, and a worker lost for good or a lost cluster becomes a KernelcastError."""
    futures: list = []
    try:
        yield futures
    except _cluster_errors() as err:
        raise _lost(err) from None
    finally:
        with contextlib.suppress(Exception):
            client.cancel([f for f in futures if not f.done()])


def _cluster_errors():
    from distributed import KilledWorker
    from distributed.comm.core import CommClosedError

    return (KilledWorker, CommClosedError)


def map_chunks(client, function: Callable, items: Sequence, *, shared: dict | None = None,
               chunk_size: int | None = None,
               progress: Callable[[int, int], None] | None = None) -> list:
    """``function(chunk, **shared)`` for consecutive chunks of *items* on *client*'s
    workers (each returns one result per item), the results in *items*' order.
    *shared* objects are sent to every worker once; *progress(done, total)* follows the
    items as chunks complete. A worker that dies (Dask retries its task elsewhere, a few
    times) or a lost cluster is a KernelcastError; the function's own errors are raised
    as they are."""
    from distributed import as_completed

    total = len(items)
    if not total:
        return []
    if chunk_size is None:  # about four chunks per worker, for balance; at most 16 items
        chunk_size = max(1, min(16, math.ceil(total / (4 * workers_of(client)))))
    with _submitted(client) as futures:
        names = list(shared or {})
        # a list, not the dict: Dask would use its names as keys, shared between calls
        sent = dict(zip(names, client.scatter([shared[n] for n in names], broadcast=True,
                                              hash=False), strict=True))
        starts = range(0, total, chunk_size)
        futures += [client.submit(function, list(items[i:i + chunk_size]), pure=False,
                                  **sent) for i in starts]
        where = {f.key: i for f, i in zip(futures, starts, strict=True)}
        results: list = [None] * total
        done = 0
        for future in as_completed(futures):
            chunk = future.result()
            start = where[future.key]
            results[start:start + len(chunk)] = chunk
            done += len(chunk)
            if progress is not None:
                progress(done, total)
        return results


# {{{ measuring

@dataclass(frozen=True)
class _DeviceSpec:
    """What a worker needs to make its backend and decide on locks."""

    backend: str
    device: str  # the caller's device name: the worker's device must have it
    build_options: str
    identity: dict
    host: str  # the caller's host
    caller_holds_lock: bool
    wait: float
    exclusive: bool  # hold the lock for whole cases (a CPU device)
    per_device: bool = False  # each worker holds a device of its own


class _Busy(Exception):  # noqa: N818 - not a KernelcastError: the campaign must not record it
    """The device's lock was refused on a worker; ends the task, no row."""


class _Rows:
    """A store as run_campaign uses it, on a worker: the caller's keys; rows and code kept
    to send back."""

    def __init__(self, keys):
        self._keys, self.rows, self.code = keys, [], []

    def keys(self):
        return self._keys

    def add(self, row: dict) -> int:
        self.rows.append(row)
        return len(self.rows)

    def add_code(self, code_sha256: str, target: str, code: str) -> None:
        self.code.append((code_sha256, target, code))


_backends: dict = {}  # per worker process: _DeviceSpec fields -> backend


@contextlib.contextmanager
def _device_turn(spec: _DeviceSpec, device):
    """This worker's turn on *device* (a DeviceInfo): the lock its host's workers share
    (waited for as long as it takes: a sibling holds it for one case), then, unless the
    caller holds it on this host, the device's own lock (waited for as --wait says)."""
    from kernelcast.measure.lock import DeviceLock, take_turn

    with take_turn(device):
        if spec.caller_holds_lock and socket.gethostname() == spec.host:
            yield
            return
        try:
            lock = DeviceLock(device, spec.wait)
        except DeviceBusyError as err:
            raise _Busy(str(err)) from None
        try:
            yield
        finally:
            lock.release()


class _WorkerBackend:
    """The worker's backend: compiles freely, times (and runs checks) in its turn."""

    def __init__(self, inner, spec: _DeviceSpec):
        self.inner, self.spec = inner, spec

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def _turn(self):
        if self.spec.exclusive or self.spec.per_device:
            return contextlib.nullcontext()  # the case, or the worker, holds the device
        return _device_turn(self.spec, self.inner.device)

    def run_once(self, *args, **kwargs):
        with self._turn():
            return self.inner.run_once(*args, **kwargs)

    def time_case(self, *args, **kwargs):
        with self._turn():
            return self.inner.time_case(*args, **kwargs)


def _claim(spec: _DeviceSpec):
    """(device, its lock) for a worker of *spec.per_device*: the device it is pinned to
    (DEVICE_ENV), else the first device of the store's kind on this host whose lock is
    free, waiting up to *spec.wait* seconds for one."""
    from kernelcast.measure.devices import find_device, find_instance, siblings
    from kernelcast.measure.lock import DeviceLock

    pinned = os.environ.get(DEVICE_ENV)
    if pinned:
        info = find_instance(pinned, spec.backend, spec.device)
        try:
            return info, DeviceLock(info, spec.wait)
        except DeviceBusyError as err:
            raise _Busy(str(err)) from None
    candidates = siblings(find_device(spec.device, spec.backend))
    deadline = time.monotonic() + spec.wait
    while True:
        for info in candidates:
            with contextlib.suppress(DeviceBusyError):
                return info, DeviceLock(info, 0.0)
        if time.monotonic() >= deadline:
            raise _Busy(f"every {spec.device} of {socket.gethostname()} is being measured "
                        "by another campaign or worker")
        time.sleep(0.5)


def _worker_backend(spec: _DeviceSpec) -> _WorkerBackend:
    from kernelcast.measure.backends.isolated import IsolatedBackend
    from kernelcast.measure.devices import find_device
    from kernelcast.measure.store import IDENTITY

    key = (spec.backend, spec.device, spec.build_options, spec.per_device)
    if key not in _backends:
        if spec.per_device:  # held until the backend is closed, or the worker dies
            info, lock = _claim(spec)
        else:  # no lock here: taken around each timing (kernelcast.measure.lock)
            info, lock = find_device(spec.device, spec.backend), None
        _backends[key] = IsolatedBackend(spec.backend, info, spec.build_options, lock)
    backend = _backends[key]
    theirs, ours = backend.identity, spec.identity
    if any(theirs.get(k) != ours.get(k) for k in (*IDENTITY, "compute_units")):
        raise KernelcastError(
            f"the worker on {socket.gethostname()} measures {theirs['device']} (driver "
            f"{theirs['driver']}, {theirs['compute_units']} compute units), not the store's "
            f"{ours['device']} (driver {ours['driver']}, {ours['compute_units']} compute "
            "units): a store holds one device's measurements")
    return _WorkerBackend(backend, spec)


def _close_backends() -> None:
    while _backends:
        _, backend = _backends.popitem()
        with contextlib.suppress(Exception):
            backend.close()


def _cpu(device) -> bool:
    """Whether *device* is a CPU (OpenCL writes its type as, e.g., "ALL | CPU")."""
    return "CPU" in re.split(r"[^A-Z]+", str(device.kind).upper())


def _measure_group(jobs, spec: _DeviceSpec, keys, options: dict) -> dict:
    """On a worker: run_campaign over *jobs* (one kernel) into a _Rows; what it stored."""
    from kernelcast.measure.campaign import run_campaign

    rows = _Rows(keys)
    try:
        backend = _worker_backend(spec)
        turn = spec.exclusive and not spec.per_device
        with _device_turn(spec, backend.device) if turn else contextlib.nullcontext():
            result = run_campaign(jobs, backend, rows, progress=None, **options)
    except _Busy as err:
        raise DeviceBusyError(str(err)) from None
    return {"rows": rows.rows, "code": rows.code, "keys": result.keys,
            "instance": backend.device.instance}


def campaign_on(client, *, wait: float = 0.0, per_device: bool = True) -> Callable:
    """A function called as run_campaign is (jobs, backend, store, **options) that
    measures on *client*'s workers (``measure``): for measure_suite's *campaign*."""
    def campaign(jobs, backend, store, **options):
        return measure(client, jobs, backend, store, wait=wait, per_device=per_device,
                       **options)
    return campaign


def measure(client, jobs, backend, store, *, wait: float = 0.0, progress=STDERR,
            overlap: bool | None = None, per_device: bool = False, earlier=frozenset(),
            **options):
    """Measure *jobs* on *client*'s workers into *store* (on this process), like
    kernelcast.measure.campaign.run_campaign (same keys, rows, *options* and progress
    lines: to stderr by default, none for None; see the module docstring). *backend* is
    this process's backend of the store's device (its name, device, build options and
    lock say what workers use; it runs nothing here); *wait*: seconds a worker waits for
    a device lock held by another campaign. *overlap*: whether a worker generates and
    compiles code while another times (default: yes, except on a CPU device, where both
    would compete for the cores it times on). *per_device*: each worker times on a device
    of its own (see the module docstring); *backend* then must not hold a device's lock
    (make_backend(..., locked=False)). Returns a CampaignResult, whose ``devices`` counts
    the rows each device measured."""
    from distributed import as_completed

    from kernelcast.measure.campaign import CampaignResult, Progress, progress_stream

    unique = {}
    for job in jobs:
        unique.setdefault(job.name, job)
    groups: dict[str, list] = {}
    for job in unique.values():
        groups.setdefault(job.kernel_id, []).append(job)
    result = CampaignResult()
    report = Progress(len(unique), progress_stream(progress), frozenset(earlier))
    if not groups:
        return result
    if overlap is None:
        overlap = not _cpu(backend.device)
    spec = _DeviceSpec(backend.name, backend.device.name, backend.build_options,
                       dict(backend.identity), socket.gethostname(),
                       getattr(backend, "lock", None) is not None, float(wait),
                       exclusive=not overlap, per_device=per_device)
    if per_device and spec.caller_holds_lock:
        raise KernelcastError("measuring on every device: this process must not hold a "
                              "device's lock (make_backend(..., locked=False))")
    try:
        with _submitted(client) as futures:
            [keys] = client.scatter([frozenset(store.keys())], broadcast=True, hash=False)
            futures += [client.submit(_measure_group, group, spec, keys, options,
                                      pure=False) for group in groups.values()]
            group_of = {f.key: g for f, g in zip(futures, groups.values(), strict=True)}
            for future in as_completed(futures):
                out = future.result()
                for code in out["code"]:
                    store.add_code(*code)
                result.keys.update(out["keys"])
                rows = {row["case_name"]: row for row in out["rows"]}
                for job in group_of[future.key]:
                    row, key = rows.get(job.name), out["keys"][job.name]
                    if row is None or store.add(row) is None:  # stored already
                        result.skipped += 1
                        report(job.name, None, key)
                    else:
                        result.measured += 1
                        result.count(row["status"])
                        where = out["instance"]
                        result.devices[where] = result.devices.get(where, 0) + 1
                        report(job.name, row, key)
    finally:
        with contextlib.suppress(Exception):
            client.run(_close_backends)
    report.finish()
    return result


def on_devices(client, devices, function: Callable, *args,
               poll: Callable[[], None] | None = None, every: float = 10.0) -> list:
    """``function(*args, device)`` once per device of *devices* (DeviceInfo), each on the
    worker pinned to it (a cluster made with ``cluster(devices=...)``), all at once; the
    results in *devices*' order, where a device's call failed its exception instead (the
    others run to their end: one busy GPU does not stop the rest). *poll()* is called every
    *every* seconds while they run (to show progress). A worker that dies is restarted and
    its call made again (so *function* must resume, as a campaign into a store does); a
    call whose workers died again and again, or a lost cluster, is a KernelcastError in
    its place."""
    from distributed import wait as wait_for

    lost = _cluster_errors()
    with _submitted(client) as futures:
        futures += [client.submit(function, *args, device, pure=False,
                                  resources={device_resource(device): 1})
                    for device in devices]
        while True:
            with contextlib.suppress(TimeoutError):
                wait_for(futures, timeout=every)
            if all(f.done() for f in futures):
                break
            if poll is not None:
                poll()
        results = []
        for f in futures:
            err = f.exception()
            results.append(f.result() if err is None
                           else _lost(err) if isinstance(err, lost) else err)
        return results


# }}}
