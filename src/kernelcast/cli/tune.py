"""`kernelcast tune`: rank every variant of a kernel's search space with a model, measure
the best few on the device into a store (resumable), and print the winner with the code
that makes it (kernelcast.tune). ``--workers N`` and ``--scheduler ADDRESS`` spread the
ranking and the measuring over a Dask cluster (kernelcast.tune.distributed);
``--devices all|N`` over one worker per device of this host (or, with ``--scheduler``,
over the cluster's workers, each on a device of its own): kernelcast.cli.spread. A
profile calibrated on one device of several identical ones (``calibrate --devices``)
ranks for that device: without ``--device``, tune runs there."""

from __future__ import annotations

import functools
import json
import sys
import time

from kernelcast.cli.args import integer, sizes, statistics
from kernelcast.cli.spread import cluster_args, cluster_context, device_count, spread_devices
from kernelcast.errors import KernelcastError, UsageError

#: Seconds to rank one variant from a cold cache in one process: 107.8 ms a variant,
#: measured by benchmarks/ranking_speed.py over the 2,100 variants of the six tuning
#: families, skipped ones included, on a 2-core machine (data/ranking-speed.json).
RANK_SECONDS = 0.1078
#: The default of --max-variants. The default space of a kernel with two parallel loops
#: has 1,936 variants on a GPU (up to 1,024 work-items a group) and 2,704 on PoCL (4,096):
#: at most about 5 min at RANK_SECONDS, and less in practice, as the 45% whose work-group
#: is too large are skipped before counting. A matmul's default space (11,616 variants)
#: would take up to 21 min, one of three parallel loops (46,656) up to 1.4 h: not work to
#: start by accident.
MAX_VARIANTS = 3000
#: The workloads of the models that predict a Loopy kernel's variants (models.base).
_TUNABLE = ("kernel", "variant")


def _positive(text, flag: str) -> int:
    try:
        value = integer(str(text))
    except (UsageError, ValueError):
        value = 0
    if value < 1:
        raise UsageError(f"{flag} {text}: expected a positive integer")
    return value


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.0f} days"


def _counted(space, limit: int, where: str) -> int:
    """The variants of *space*; a UsageError where there are none, or more than *limit*
    (the count, how long ranking them would take, and the flag that allows it)."""
    count = len(space)
    if count == 0:
        raise UsageError(f"{where} has no variant: its restrictions exclude every one")
    if count > limit:
        raise UsageError(
            f"{where} has {count:,} variants, more than --max-variants {limit:,}: ranking "
            f"them would take about {_duration(count * RANK_SECONDS)} in one process "
            f"({RANK_SECONDS * 1000:.0f} ms a variant from a cold cache, "
            f"data/ranking-speed.json); narrow the space, or pass --max-variants {count} "
            "to rank them all")
    return count


def _check_model(model, args) -> None:
    """A UsageError where *model* does not predict Loopy kernels, the variants tune ranks
    (a model of OpenCL source, code skeletons or profiled applications)."""
    from kernelcast.models import model_names

    if model.workload in _TUNABLE:
        return
    given = f"the profile {args.profile}" if args.profile else f"--model {args.model}"
    names = [n for w in _TUNABLE for n in model_names(w)]
    raise UsageError(f"{given} holds the {model.name} model (workload: {model.workload}), "
                     "which does not predict Loopy kernels: tune ranks a Loopy kernel's "
                     f"variants with {', '.join(names[:-1])} or {names[-1]}")


def _device_for(model, device: str | None, backend: str):
    """--device, else the device (a DeviceInfo) a profile bound to one device was
    calibrated on, where this host has it."""
    from kernelcast.measure.devices import find_instance

    prov = getattr(model, "provenance_", {})
    if device is not None or not prov.get("instance"):
        return device
    try:
        return find_instance(prov["instance"], backend, prov.get("device"))
    except KernelcastError:  # calibrated on another host: _check_instance says so
        return None


def _check_instance(model, info, spread: bool) -> None:
    """Warn where the profile was calibrated on another device of *info*'s kind."""
    import warnings

    from kernelcast.errors import KernelcastWarning

    prov = getattr(model, "provenance_", {})
    instance = prov.get("instance")
    if not instance or prov.get("device") != info.name:
        return
    if spread:
        warnings.warn(f"the profile was calibrated on {instance} alone; it ranks for every "
                      "device measured here", KernelcastWarning, stacklevel=2)
    elif instance != info.instance:
        warnings.warn(f"the profile was calibrated on {instance}, not on {info.instance}, "
                      "where the variants are measured", KernelcastWarning, stacklevel=2)


def _kernel(args):
    """(build, knl, params, stats): the factory's kernel and its sizes, checked. The
    factory runs in a worker process (a factory that ends its process is an error), once:
    *build()* gives the kernel it made."""
    from kernelcast.measure.arrays import check_sizes, size_parameters
    from kernelcast.measure.backends.isolated import load_kernel_isolated
    from kernelcast.tune.space import check_work

    params = sizes(args.param)
    stats = statistics(args.stat)
    knl, name = load_kernel_isolated(args.kernel)

    def build():
        return knl

    build.__name__ = name
    needed = size_parameters(knl)
    kernel = knl.default_entrypoint
    known = set(needed) | set(kernel.all_params())
    unknown = sorted(set(params) - known)
    if unknown:
        raise UsageError(f"{args.kernel} has no size parameter {', '.join(unknown)} "
                         f"(its sizes: {', '.join(sorted(known)) or 'none'})")
    missing = [p for p in needed if p not in params]
    if missing:
        raise UsageError(f"{args.kernel} needs sizes for {', '.join(missing)}: "
                         f"--param {' '.join(f'{p}=SIZE' for p in missing)}")
    check_sizes(knl, params)
    check_work(knl, params)
    return build, knl, params, stats


class _RankProgress:
    """Follows the ranking (counting a variant's properties takes up to seconds): a line
    on a terminal, with the time left at the pace so far."""

    def __init__(self, stream):
        self.stream, self.done, self.start = stream, 0, time.monotonic()

    def __call__(self, done: int, total: int):
        self.done = done
        if self.stream is not None:
            elapsed = time.monotonic() - self.start
            left = f", about {_duration(elapsed / done * (total - done))} left" \
                if 0 < done < total else ""
            print(f"\rranking: {done} of {total} variants counted, {elapsed:.0f}s{left}   ",
                  end="", file=self.stream, flush=True)

    def finish(self):
        if self.stream is not None and self.done:
            print(file=self.stream, flush=True)


def tune(args) -> int:
    from kernelcast.cli.models import _model
    from kernelcast.measure.backends import make_backend
    from kernelcast.measure.campaign import job_label
    from kernelcast.measure.lock import DeviceLock
    from kernelcast.measure.store import Store
    from kernelcast.properties import cached_properties
    from kernelcast.tune.distributed import workers_of
    from kernelcast.tune.space import check_space, default_space, load_space
    from kernelcast.tune.tuner import tune as run
    from kernelcast.workflow import default_paths

    # every usage error comes before the device is touched; its lock is held only while
    # the best variants are measured, not while the space is ranked
    top = _positive(args.measure_top, "--measure-top")
    limit = _positive(getattr(args, "max_variants", MAX_VARIANTS), "--max-variants")
    workers, scheduler, timeout = cluster_args(args)
    spread = getattr(args, "devices", None) is not None
    count = device_count(getattr(args, "devices", None))
    if spread and workers != 1:
        raise UsageError("--devices makes one worker per device: not with --workers")
    if spread and scheduler is not None and count is not None:
        raise UsageError("with --scheduler, --devices all: each of the cluster's workers "
                         "takes a device of its own")
    if not args.profile and not args.model:
        raise UsageError("give --profile P.json or --model hong-kim (or hong-kim-facts) "
                         "--hardware NAME")
    model = _model(args)
    _check_model(model, args)
    space = load_space(args.space) if args.space else None
    build, knl, params, stats = _kernel(args)
    family = job_label(build, knl)
    wait = getattr(args, "wait", 0.0)
    device = _device_for(model, args.device, args.backend)
    # counted once per kernel and statistics, across runs and by every worker of a host
    properties = functools.partial(cached_properties, data_statistics=stats or None)
    with make_backend(args.backend, device, wait=wait, locked=False) as backend:
        info = backend.device
        _check_instance(model, info, spread)
        if space is None:
            space = default_space(knl, params, max_group_size=info.max_group_size)
            where = f"the default space of {family}"
        else:
            where = f"the space {args.space}"
        check_space(space, knl)
        variants = _counted(space, limit, where)
        devices = (spread_devices(info, count)
                   if spread and scheduler is None else None)
        # the lock is taken to measure (each worker of --devices takes its own device's)
        lock = None if spread else functools.partial(DeviceLock, info, wait)
        if lock is not None and not wait:  # busy now, and no wait asked: say so at once
            lock().release()
        if args.db:
            db = args.db
        else:
            store_path, _ = default_paths(info.name, backend.name, "tune")
            db = store_path.with_name(f"{store_path.stem}-tune.sqlite")
            db.parent.mkdir(parents=True, exist_ok=True)
        counter = _RankProgress(sys.stderr if sys.stderr.isatty() else None)
        with cluster_context(workers, scheduler, timeout, devices) as client, \
                Store(db, backend.identity) as store:
            if client is None:
                on = ""
            elif devices:
                on = (f" on {len(devices)} devices ({', '.join(d.instance for d in devices)}),"
                      " a worker each")
            elif scheduler is None:
                on = f" on {workers} local worker processes"
            else:
                on = f" on the {workers_of(client)} workers of {scheduler}"
            print(f"tuning {family} on {info.name} ({backend.name}): {variants} variants "
                  f"ranked by {model.name}, the best {top} measured into {db}{on}",
                  file=sys.stderr, flush=True)
            try:
                result = run(build, params, space, model, backend, store, family=family,
                             top=top, properties=properties, rank_progress=counter,
                             client=client, wait=wait, per_device=spread, lock=lock)
            finally:
                counter.finish()
    doc = _document(args, family, params, info, backend, model, space, db, result, top)
    if args.json:
        json.dump(doc, sys.stdout, indent=1)
        print()
    else:
        _print(doc)
    if not result.ranked:
        raise KernelcastError(f"no variant of the space can be ranked on {info.name}; "
                              "see the reasons above")
    if doc["winner"] is None:
        raise KernelcastError(f"no measured variant could be timed; the messages are in "
                              f"{db}")
    return 0


def _document(args, family, params, info, backend, model, space, db, result, top) -> dict:
    from kernelcast.tune.space import code

    reasons: dict[str, int] = {}
    for r in result.skipped:
        reasons[r.reason] = reasons.get(r.reason, 0) + 1
    rows = []
    for i, r in enumerate(result.ranked[:top], 1):
        name = f"{family}/{r.key}"
        rows.append({"rank": i, "key": r.key, "variant": r.variant,
                     "predicted_s": r.predicted_s, "measured_s": result.measured.get(name),
                     "status": result.statuses.get(name, "missing")})
    winner = None
    if result.best is not None:
        name, seconds = result.best
        row = next(r for r in rows if f"{family}/{r['key']}" == name)
        first = rows[0]
        winner = {**row, "code": code(row["variant"], space),
                  "best_predicted": {"rank": 1, "key": first["key"],
                                     "measured_s": first["measured_s"]},
                  "speedup_over_best_predicted": (first["measured_s"] / seconds
                                                  if first["measured_s"] else None)}
    hardware = model.provenance_.get("device") if hasattr(model, "provenance_") else None
    return {"kernel": args.kernel, "family": family, "params": params,
            "device": info.name, "backend": backend.name,
            "model": model.name, "model_hardware": hardware, "store": str(db),
            "space": {"variants": len(space), "valid": len(result.ranked),
                      "skipped": len(result.skipped), "skipped_reasons": reasons},
            "top": rows, "winner": winner}


def _print(doc: dict) -> None:
    import pandas as pd

    from kernelcast.report import format_seconds, format_table

    sized = " ".join(f"{k}={v}" for k, v in doc["params"].items())
    model = doc["model"] + (f" ({doc['model_hardware']})" if doc["model_hardware"] else "")
    s = doc["space"]
    print(f"kernel {doc['family']} ({doc['kernel']}) at {sized or 'no sizes'}")
    print(f"device {doc['device']} ({doc['backend']}); model {model}; store {doc['store']}")
    print(f"space: {s['variants']} variants, {s['valid']} valid, {s['skipped']} skipped")
    for reason, count in sorted(s["skipped_reasons"].items(), key=lambda kv: -kv[1]):
        print(f"  {count} skipped: {reason}")
    if doc["top"]:
        frame = pd.DataFrame([{
            "rank": r["rank"], "variant": r["key"],
            "predicted": format_seconds(r["predicted_s"]),
            "measured": "" if r["measured_s"] is None else format_seconds(r["measured_s"]),
            "status": r["status"]} for r in doc["top"]])
        print()
        print(format_table(frame))
    w = doc["winner"]
    if w is None:
        return
    best = w["best_predicted"]
    if w["rank"] == 1:
        versus = "the best-predicted variant is the fastest measured"
    elif best["measured_s"] is None:
        versus = "the best-predicted variant gave no time"
    else:
        versus = (f"{w['speedup_over_best_predicted']:.2f}x faster than the best-predicted "
                  f"variant ({format_seconds(best['measured_s'])})")
    print()
    print(f"winner: rank {w['rank']} {w['key']}: predicted {format_seconds(w['predicted_s'])}, "
          f"measured {format_seconds(w['measured_s'])}; {versus}")
    print("\nits code (after knl = the factory's kernel):\n")
    print(w["code"], end="")
