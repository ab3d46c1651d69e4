"""Measuring a whole suite, with the paper's choice of sizes (§4.2).

``measure_suite`` measures the empty kernel's launch overhead first, then, for every class
without a given p, the smallest allowed p whose smallest case runs at least that long, and
then every case of the suite at those sizes (and what else the suite measures,
``Suite.measure_extra``), through kernelcast.measure.campaign (which
resumes, checks references, and records failures as statuses), or through *campaign*, a
function called as run_campaign is (kernelcast.tune.distributed.campaign_on: spread over
several devices).

Public names: launch_overhead, choose_sizes, measure_suite.
"""

from __future__ import annotations

from kernelcast.errors import KernelcastError
from kernelcast.measure.campaign import (
    STDERR,
    Job,
    progress_stream,
    run_campaign,
    suite_jobs,
)
from kernelcast.measure.store import Store
from kernelcast.suites.paper import MEASUREMENT
from kernelcast.suites.suite import Suite, choose_p


def _min_time(store, key) -> float | None:
    row = store.get(key)
    return row["min_s"] if row and row["min_s"] is not None and not row["damage"] else None


def launch_overhead(backend, store, measured=None, campaign=run_campaign, **options
                    ) -> float:
    """§4.2: the run time of the smallest empty-kernel case (its key is added to the set
    *measured*)."""
    empty = MEASUREMENT.kernel_class("empty")
    case = next(empty.cases("measurement", min(empty.p_choices)))
    job = Job.from_case(case)
    result = campaign([job], backend, store, **options)
    if measured is not None:
        measured.add(result.keys[job.name])
    seconds = _min_time(store, result.keys[job.name])
    if seconds is None:
        raise KernelcastError(f"the empty kernel could not be timed on {backend.device.name}")
    return seconds


def choose_sizes(suite, backend, store, fixed: dict | None = None, measured=None,
                 campaign=run_campaign, **options) -> dict:
    """The base exponent p of every class of *suite*: *fixed* where given, else §4.2's.
    The keys of the cases measured to choose them are added to the set *measured*."""
    chosen = dict(fixed or {})
    measured = set() if measured is None else measured
    for kclass in suite.classes:  # one allowed p: nothing to choose
        if kclass.name not in chosen and len(kclass.p_choices) == 1:
            chosen[kclass.name] = kclass.p_choices[0]
    missing = [c for c in suite.classes if c.name not in chosen]
    if not missing:
        return chosen
    overhead = launch_overhead(backend, store, measured, campaign, **options)
    for kclass in missing:
        def smallest_time(p, kclass=kclass):
            job = Job.from_case(next(kclass.cases(suite.name, p)))
            keys = campaign([job], backend, store, **options).keys
            measured.add(keys[job.name])
            return _min_time(store, keys[job.name])
        chosen[kclass.name] = choose_p(kclass, smallest_time, overhead)
    return chosen


def measure_suite(suite, backend, store: Store, *, p: dict | None = None, dtypes=None,
                  group_set=None, classes=None, progress=STDERR, campaign=run_campaign,
                  **options):
    """Measure every case of *suite* (optionally only *classes*) into *store*."""
    extra = suite.measure_extra if not classes or "transfer" in classes else None
    if classes:
        suite = Suite(suite.name, tuple(suite.kernel_class(c) for c in classes))
    progress = progress_stream(progress)
    if progress is not None:
        print(f"suite {suite.name}:", file=progress)
    probes: set[str] = set()
    sizes = choose_sizes(suite, backend, store, p, probes, campaign, progress=progress,
                         **options)
    if progress is not None:
        print("sizes: " + ", ".join(f"{k} p={v}" for k, v in sizes.items()), file=progress)
    cases = suite.cases(sizes, dtypes, group_set)
    result = campaign(suite_jobs(cases), backend, store, progress=progress, earlier=probes,
                      **options)
    if extra is not None:
        result.measured += extra(backend, store, progress=progress)
    return result
