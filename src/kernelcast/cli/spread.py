"""Spreading a verb's work over processes, devices or a running Dask cluster
(kernelcast.tune.distributed): the flags ``--workers``, ``--scheduler``,
``--scheduler-timeout`` (``add_arguments``, ``add_scheduler_arguments``) and
``--devices all|N`` (``device_count``, ``spread_devices``), checked into one-line usage
errors (``cluster_args``), and the cluster they ask for (``cluster_context``). tune and
measure use them."""

from __future__ import annotations

import contextlib
import math

from kernelcast.errors import KernelcastError, UsageError


def add_arguments(p) -> None:
    """tune's flags for spreading the work over processes (kernelcast.tune.distributed)."""
    p.add_argument("--workers", default="1", metavar="N",
                   help="rank and measure on a local Dask cluster of N worker processes "
                        "(default 1: in this process, no cluster); on one device the "
                        "workers time one variant at a time")
    add_scheduler_arguments(p, "rank and measure")


def add_scheduler_arguments(p, what: str) -> None:
    """--scheduler and --scheduler-timeout (tune, measure)."""
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help=f"{what} on the workers of a running Dask scheduler, e.g. "
                        "tcp://HOST:8786 (the workers need this kernelcast; rows go to "
                        "--db here); with --devices all, each worker on a device of its own")
    p.add_argument("--scheduler-timeout", default="10", metavar="SECONDS",
                   help="how long to wait for --scheduler to answer and have a worker "
                        "(default 10)")


def cluster_args(args) -> tuple[int, str | None, float]:
    """(workers, scheduler address or None, timeout), checked; 1 and None: no cluster."""
    from kernelcast.tune.distributed import check_address, check_workers

    workers = check_workers(getattr(args, "workers", "1"))
    scheduler = getattr(args, "scheduler", None)
    text = getattr(args, "scheduler_timeout", "10")
    try:
        timeout = float(str(text).strip())
    except ValueError:
        timeout = math.nan
    if not (math.isfinite(timeout) and timeout > 0):
        raise UsageError(f"--scheduler-timeout {text}: expected a positive number of "
                         "seconds")
    if scheduler is not None:
        if workers != 1:
            raise UsageError("give --workers N (a local cluster) or --scheduler ADDRESS "
                             "(a running one), not both")
        scheduler = check_address(scheduler)
    return workers, scheduler, timeout


def cluster_context(workers: int, scheduler: str | None, timeout: float, devices=None):
    """A context giving a Dask client, or None where the work stays in this process."""
    if scheduler is None and workers == 1 and not devices:
        return contextlib.nullcontext()
    from kernelcast.tune.distributed import cluster

    return cluster(workers, scheduler, timeout=timeout, devices=devices)


def device_count(text) -> int | None:
    """``--devices``: None for all, else a positive count; a UsageError otherwise."""
    if text is None:
        return None
    word = str(text).strip().lower()
    if word == "all":
        return None
    if word.isdigit() and int(word) >= 1:
        return int(word)
    raise UsageError(f"--devices {text}: expected all or a positive number of devices")


def spread_devices(device, count: int | None) -> list:
    """The devices identical to *device* (a DeviceInfo) that ``--devices`` names."""
    from kernelcast.measure.devices import siblings

    found = siblings(device)
    if len({d.instance for d in found}) < len(found):
        raise KernelcastError(f"the {len(found)} × {device.name} of this host cannot be told "
                              f"apart (instances {', '.join(d.instance for d in found)})")
    if count is not None and count > len(found):
        raise UsageError(f"--devices {count}: this host has {len(found)} × {device.name} "
                         f"({', '.join(d.instance for d in found)})")
    return found[:count]
