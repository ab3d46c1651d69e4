"""Measurement campaigns: run many kernel cases on one backend into one store, resumably.

Cases are grouped by kernel: each kernel's code is generated once and keyed; cases whose key
the store already holds are skipped (a killed campaign resumes where it stopped); the rest
are compiled once, checked once against their reference at small sizes (suite cases), then
timed by the §4.2 protocol one after another, each result committed before the next starts.
Failures become rows with a status, and the campaign goes on:

- ``compile_error``: the code could not be generated or the device compiler rejected it;
- ``size_out_of_range``: a size does not fit the integer type of the kernel argument that
  carries it (e.g. n = 2**31 for an int32 n); checked before memory, so it does not
  depend on the device;
- ``out_of_memory``: the arrays do not fit on the device, or it ran out while launching;
- ``launch_error``: the device failed to run the kernel;
- ``wrong_answer``: the kernel does not compute its reference (``max_rel_error`` says by
  how much);
- ``failed``: any other kernelcast error while preparing or running a case (the message
  names the error);
- ``crashed``: the process running the case died (the message names the signal): with an
  isolated backend (kernelcast.measure.backends.isolated, what make_backend gives) the
  campaign goes on with a new worker, and a resumed campaign does not run the case again.

Compile errors keep the compiler's own log in the message.

Suite campaigns with the paper's choice of sizes (§4.2) are kernelcast.suites.campaign;
this module does not import the suites (a Job's *case* is used through its attributes).

Progress lines (Progress) go to *progress*: a stream, None for silence, or STDERR (the
default), the ``sys.stderr`` of the moment the campaign runs (so that redirecting it
works). A line per job measured; the jobs found already in the store are counted, and said
once at the end ("N stored cases skipped"), so a resumed campaign does not print a line
for each.

Public names: Job, CampaignResult, Progress, run_campaign, measure_kernel, job_label,
suite_jobs, failure_fields, progress_stream, STDERR.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from kernelcast.errors import KernelcastError
from kernelcast.measure import protocol
from kernelcast.measure.arrays import (
    SizeRangeError,
    array_specs,
    check_sizes,
    scalar_arguments,
    typed_kernel,
)
from kernelcast.measure.backends import (
    CompileError,
    LaunchError,
    OutOfMemory,
    check_fits,
)
from kernelcast.measure.backends.isolated import WorkerCrashed
from kernelcast.measure.codegen import generate_case
from kernelcast.measure.store import Store, measurement_key
from kernelcast.measure.verify import TOLERANCE, check_case, check_compiled
from kernelcast.version import __version__


class _Stderr:
    def __repr__(self):
        return "STDERR"


STDERR = _Stderr()  # default progress stream: sys.stderr when the campaign runs


def progress_stream(progress):
    """The stream progress lines go to: *progress*, or the current sys.stderr for STDERR."""
    return sys.stderr if progress is STDERR else progress


@dataclass(frozen=True)
class Job:
    """One measurement: a kernel (built by *build*) at *params*. *kernel_id* groups jobs
    that share one compiled kernel; *case* is the suite case, if any."""

    name: str
    kernel_id: str
    build: Callable[[], object] = field(repr=False)
    params: dict = field(hash=False)
    case: object = field(default=None, repr=False, compare=False)

    @classmethod
    def from_case(cls, case) -> Job:
        return cls(case.name, case.kernel_name, case.kernel, case.params, case)

    def metadata(self) -> dict:
        c = self.case
        if c is None:
            return {"case_name": self.name, "params": self.params}
        return {"case_name": self.name, "params": self.params, "suite": c.suite,
                "kernel_class": c.class_name, "variant": c.variant, "dtype": c.dtype,
                "group_size": list(c.group_size), "p": c.p, "t": c.t}


@dataclass
class CampaignResult:
    measured: int = 0
    skipped: int = 0
    statuses: dict = field(default_factory=dict)
    keys: dict = field(default_factory=dict)  # job name -> store key
    devices: dict = field(default_factory=dict)  # instance -> rows measured (on workers)
    stopped: bool = False  # the deadline came before every job had run

    def count(self, status):
        self.statuses[status] = self.statuses.get(status, 0) + 1


def _format_seconds(s: float) -> str:
    s = round(s)
    if s >= 3600:
        return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"
    return f"{s // 60}:{s % 60:02d}"


class Progress:
    """Progress of *total* jobs on *stream* (None: silent): called once per finished job
    with its row, or None where it was not measured. A line per job measured or measured
    earlier by the same command (its key in *earlier*); the jobs already in the store are
    only counted, and ``finish`` says how many. The time left is this run's pace over the
    jobs it measured (skipped ones cost nothing) times the jobs still to come."""

    def __init__(self, total: int, stream, earlier: frozenset = frozenset()):
        self.total, self.stream, self.earlier = total, stream, earlier
        self.done = self.measured = self.stored = 0
        self.start = time.monotonic()

    def __call__(self, name: str, row: dict | None, key: str = ""):
        self.done += 1
        self.measured += row is not None
        if row is None and key not in self.earlier:
            self.stored += 1
            return
        if self.stream is None:
            return
        elapsed = time.monotonic() - self.start
        if self.measured:
            eta = f", ~{_format_seconds(elapsed / self.measured * (self.total - self.done))} left"
        else:
            eta = ""
        if row is None:
            what = "measured above, while choosing sizes"
        elif row["status"] in ("ok", "unstable"):
            what = (f"{row['status']} min {row['min_s'] * 1e6:.1f} µs, median "
                    f"+{(row['median_s'] / row['min_s'] - 1) * 100:.1f}%")
        else:
            message = (row.get("message") or "").replace("\n", " | ")
            what = f"{row['status']}: {message[:100]}"
        print(f"[{self.done}/{self.total} {elapsed:.0f}s{eta}] {name}: {what}",
              file=self.stream, flush=True)

    def finish(self):
        """One line for the jobs found already in the store, if any."""
        if self.stream is not None and self.stored:
            print(f"{self.stored} stored case{'s' if self.stored != 1 else ''} skipped",
                  file=self.stream, flush=True)


def run_campaign(jobs: list[Job], backend, store: Store, *, verify: bool = True,
                 runs: int = protocol.RUNS, drop: int = protocol.DROP,
                 tolerance: float = protocol.TOLERANCE, retries: int = protocol.RETRIES,
                 seed: int = 0, progress=STDERR, earlier=frozenset(), workers: int = 0,
                 deadline: float | None = None) -> CampaignResult:
    """Measure *jobs* on *backend* into *store*; see the module docstring. *earlier*: keys
    measured earlier by the same command (progress says so for each, rather than counting
    them with the stored cases skipped). *workers* > 1: that many processes generate (and
    on CUDA compile) the kernels ahead of the one that times them, in the jobs' order;
    each job's ``build`` must then pickle (a module-level function or a partial of one).
    *deadline*: a ``time.monotonic()`` after which no further kernel starts
    (``result.stopped``)."""
    result = CampaignResult()
    unique = {}
    for job in jobs:
        unique.setdefault(job.name, job)
    jobs = list(unique.values())
    report = Progress(len(jobs), progress_stream(progress), frozenset(earlier))
    done = store.keys()
    by_kernel: dict[str, list[Job]] = {}
    for job in jobs:
        by_kernel.setdefault(job.kernel_id, []).append(job)
    opts = dict(verify=verify, runs=runs, drop=drop, tolerance=tolerance, retries=retries,
                seed=seed)
    for group, prepared in _generated(list(by_kernel.values()), backend, workers):
        if deadline is not None and time.monotonic() > deadline:
            result.stopped = True
            break
        _run_kernel(group, backend, store, done, result, report, opts, prepared)
    report.finish()
    return result


def _generate(job: Job, backend: str, build_options: str, warm: bool = False):
    """(generated code, typed kernel, None) of *job*'s kernel, or (None, None, why).
    *warm*: compile it once on CUDA too, so that the backend's own compile of the same
    code is a hit in cupy's kernel cache."""
    try:
        knl = job.build()
        generated = generate_case(knl, backend, job.case)
        typed = typed_kernel(knl)
    except Exception as err:  # noqa: BLE001 - any failure to generate is the kernel's
        return None, None, f"code generation failed: {err}"
    if warm and backend == "cuda":
        from kernelcast.measure.backends.cuda import compiled_function

        try:
            compiled_function(generated, build_options)
        except Exception:  # noqa: BLE001 - the backend's compile reports it
            pass
    return generated, typed, None


def _generated(groups: list[list[Job]], backend, workers: int):
    """(group, its _generate result or None) in order; with *workers* > 1 the results
    come from that many spawned processes, at most 4 per worker ahead."""
    if workers <= 1:
        yield from ((group, None) for group in groups)
        return
    import multiprocessing
    from collections import deque
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    todo, window = iter(groups), deque()

    def submit():
        group = next(todo, None)
        if group is not None:
            window.append((group, pool.submit(_generate, group[0], backend.name,
                                              backend.build_options, True)))

    try:
        for _ in range(4 * workers):
            submit()
        while window:
            group, future = window.popleft()
            submit()
            yield group, future.result()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _record(store, job, key, code_sha, backend, result, report, **fields):
    row = {**job.metadata(), "key": key, "kernelcast_version": __version__,
           "code_sha256": code_sha, "build_options": backend.build_options, **fields}
    if store.add(row) is None:  # another process stored the same case a moment ago
        result.skipped += 1
        report(job.name, None, key)
        return
    result.measured += 1
    result.count(row["status"])
    report(job.name, row, key)


def _run_kernel(group, backend, store, done, result, report, opts, prepared=None):
    first = group[0]
    identity = backend.identity
    generated, typed, error = prepared or _generate(first, backend.name,
                                                    backend.build_options)
    code_sha = generated.code_sha256 if generated is not None else None
    keys = {job.name: measurement_key(job.name, code_sha, backend.build_options, job.params,
                                      identity, __version__) for job in group}
    result.keys.update(keys)
    todo = [job for job in group if keys[job.name] not in done]
    for job in group:
        if keys[job.name] in done:
            result.skipped += 1
            report(job.name, None, keys[job.name])
    if not todo:
        return
    if error is None:
        store.add_code(code_sha, generated.target, generated.code)
        try:
            compiled = backend.compile(generated)
        except CompileError as err:
            error = str(err)
        except KernelcastError as err:  # a crash, a device failing to build
            for job in todo:
                _record(store, job, keys[job.name], code_sha, backend, result, report,
                        **failure_fields(err, "while compiling: "))
            return
    if error is not None:
        for job in todo:
            _record(store, job, keys[job.name], code_sha, backend, result, report,
                    status="compile_error", message=error)
        return
    failure = _verify(first, backend, compiled, generated, typed, opts) if opts["verify"] else None
    for job in todo:
        if failure is not None:
            _record(store, job, keys[job.name], code_sha, backend, result, report, **failure)
            continue
        fields = _time_job(job, backend, compiled, generated, typed, opts)
        _record(store, job, keys[job.name], code_sha, backend, result, report, **fields)


def failure_fields(err: KernelcastError, context: str = "") -> dict:
    """The status and message of a case that raised *err* (*context* prefixes the
    message): what happened, never a time."""
    if isinstance(err, WorkerCrashed):
        status, message = "crashed", str(err)
    elif isinstance(err, OutOfMemory):
        status, message = "out_of_memory", str(err)
    elif isinstance(err, SizeRangeError):
        status, message = "size_out_of_range", str(err)
    elif isinstance(err, LaunchError):
        status, message = "launch_error", str(err)
    elif isinstance(err, CompileError):
        status, message = "compile_error", str(err)
    else:
        status, message = "failed", f"{type(err).__name__}: {err}"
    return {"status": status, "message": context + message}


def _verify(job, backend, compiled, generated, typed, opts) -> dict | None:
    """None if the kernel computes its reference (or has none); else the failure row."""
    case = job.case
    if case is None or not case.kclass.check_params:
        return None
    small = case.check_case()
    try:
        if case.kclass.sized_code and small.params != case.params:
            errors = check_case(small, backend, opts["seed"])
        else:
            errors = check_compiled(backend, compiled, generated, typed, small, opts["seed"])
    except KernelcastError as err:
        return failure_fields(err, "while checking: ")
    worst = max(errors.values(), default=0.0)
    if worst > TOLERANCE[case.dtype]:
        bad = ", ".join(f"{k} {v:.3g}" for k, v in errors.items())
        return {"status": "wrong_answer", "max_rel_error": worst,
                "message": f"relative error at {small.params}: {bad}"}
    return None


def _time_job(job, backend, compiled, generated, typed, opts) -> dict:
    try:
        specs, scalars = array_specs(typed, job.params)
        # sizes first: whether they fit the kernel's argument types does not depend on the
        # device, so a size out of range gets the same status on every device
        values = scalar_arguments(scalars, job.params, np.random.default_rng(opts["seed"]))
        check_fits(backend.device, specs)
        timing = backend.time_case(
            compiled, generated, specs, values, job.params, opts["seed"], runs=opts["runs"],
            drop=opts["drop"], tolerance=opts["tolerance"], retries=opts["retries"])
    except KernelcastError as err:
        return failure_fields(err)
    return {"status": timing.status, "min_s": timing.min, "median_s": timing.median,
            "times_s": list(timing.times), "dropped": timing.drop,
            "attempts": timing.attempts, "spreads": list(timing.spreads)}


# {{{ suite cases and single kernels

def suite_jobs(cases) -> list[Job]:
    return [Job.from_case(c) for c in cases]


def job_label(build, knl) -> str:
    """The name of a kernel's jobs: its own name, or, where that is Loopy's default
    ``loopy_kernel``, the name of the function that built it."""
    label = knl.default_entrypoint.name if hasattr(knl, "default_entrypoint") else knl.name
    factory = getattr(build, "__name__", "")
    if label == "loopy_kernel" and factory.isidentifier():
        return factory
    return label


def measure_kernel(build, params: dict, backend, store: Store, *, name: str | None = None,
                   **options) -> CampaignResult:
    """Measure one kernel (a function returning a Loopy kernel) at *params*, refused with a
    ParameterError before anything is stored if the sizes break the kernel's assumptions
    or do not fit its argument types. Its jobs are named *name*, else as job_label says."""
    knl = build()
    check_sizes(knl, params)
    label = name or job_label(build, knl)
    job_name = label + "/" + ",".join(f"{k}={v}" for k, v in sorted(params.items()))
    return run_campaign([Job(job_name, label, build, dict(params))], backend, store, **options)

# }}}
