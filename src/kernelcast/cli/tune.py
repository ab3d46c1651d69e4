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

from kernelcast.frontends.arguments import integer, sizes, statistics
from kernelcast.cli.spread import (
    cluster_args,
    cluster_context,
    device_count,
    spread_devices,
)
from kernelcast.errors import KernelcastError, UsageError

#: Seconds to rank one variant from a cold cache in one process: 107.8 ms a variant,
#: measured by benchmarks/ranking_speed.py over the 2,100 variants of the six tuning
#: families, skipped ones included, on a 2-core machine (data/ranking-speed.json).
RANK_SECONDS = 0.1078
#: The default of --max-variants, counted over the variants that can launch: about 5 min
#: of ranking at RANK_SECONDS. Default spaces hold at most a few hundred
#: (kernelcast.tune.space.default_space); a space written by hand may hold tens of
#: thousands, hours of ranking, which is not work to start by accident.
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


def _counted(space, limit: int, where: str, limits) -> int:
    """The variants of *space* that can launch within *limits*; a UsageError where there
    are none, or more than *limit* (the count, how long ranking them would take, and the
    flag that allows it)."""
    from kernelcast.tune.space import count_launchable

    if len(space) == 0:
        raise UsageError(f"{where} has no variant: its restrictions exclude every one")
    count = count_launchable(space, max_group_size=limits.max_group_size,
                             local_mem_bytes=limits.local_mem_bytes)
    if count == 0:
        raise UsageError(f"{where} has no variant that can launch ({limits.describe()})")
    if count > limit:
        raise UsageError(
            f"{where} has {count:,} variants, more than --max-variants {limit:,} "
            f"(counting those that can launch): ranking them would take about "
            f"{_duration(count * RANK_SECONDS)} "
            f"in one process ({RANK_SECONDS * 1000:.0f} ms a variant from a cold cache, "
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


def _budget(text) -> tuple[int | None, float | None]:
    """--budget: (measurements, None) for N, (None, seconds) for Ns, Nmin or Nh."""
    units = {"s": 1, "min": 60, "h": 3600}
    text = str(text).strip()
    for unit, factor in units.items():
        if text.endswith(unit) and text[:-len(unit)].replace(".", "", 1).isdigit():
            seconds = float(text[:-len(unit)]) * factor
            if seconds > 0:
                return None, seconds
    try:
        return _positive(text, "--budget"), None
    except UsageError:
        raise UsageError(f"--budget {text}: expected a number of measurements (20) or a "
                         "time of measuring (90s, 5min, 1h)") from None


def _mode(args) -> dict:
    """How many variants to measure: {"top": K} (K 0: rank only) or {"budget": N,
    "seconds": S, "batch": B} for the guided search; usage errors first."""
    from kernelcast.tune.guided import SETTINGS

    rank_only = getattr(args, "rank_only", False)
    top = getattr(args, "measure_top", None)
    budget = getattr(args, "budget", None)
    count, seconds = _budget(budget if budget is not None else SETTINGS.budget)
    if top is not None and budget is not None:
        raise UsageError("--measure-top measures the K best predicted and --budget searches "
                         "guided by the model: give one")
    if rank_only and (budget is not None or top not in (None, "0")):
        raise UsageError("--rank-only measures nothing: not with --measure-top or --budget")
    if rank_only or str(top).strip() == "0":
        return {"top": 0}
    if top is not None:
        return {"top": _positive(top, "--measure-top")}
    batch = _positive(getattr(args, "batch", None) or SETTINGS.batch, "--batch")
    return {"budget": count, "seconds": seconds, "batch": batch}


def _ranked_for(model) -> str | None:
    """The device *model* predicts for, as the device reports its name."""
    hardware = getattr(model, "hardware_", None)
    return getattr(hardware, "name", None) or getattr(model, "provenance_", {}).get("device")


def _space(args, given, knl, params, limits, family):
    """(space, where): *given* (the --space file's), or the default one for *limits*."""
    from kernelcast.tune.space import check_space, default_space

    if given is not None:
        space, where = given, f"the space {args.space}"
    else:
        space = default_space(knl, params, max_group_size=limits.max_group_size)
        where = f"the default space of {family}"
    check_space(space, knl)
    return space, where


def tune(args) -> int:
    from kernelcast.cli.models import _model
    from kernelcast.measure.backends import make_backend
    from kernelcast.measure.campaign import job_label
    from kernelcast.measure.lock import DeviceLock
    from kernelcast.measure.store import Store
    from kernelcast.properties import cached_properties
    from kernelcast.tune import limits as device_limits
    from kernelcast.tune.distributed import workers_of
    from kernelcast.tune.guided import Settings
    from kernelcast.tune.space import check_space, load_space
    from kernelcast.tune.tuner import rank
    from kernelcast.tune.tuner import tune as run
    from kernelcast.workflow import default_paths

    # every usage error comes before the device is touched; its lock is held only while
    # variants are measured, not while the space is ranked
    mode = _mode(args)
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
    given = load_space(args.space) if args.space else None
    build, knl, params, stats = _kernel(args)
    family = job_label(build, knl)
    if given is not None:
        check_space(given, knl)
    ranked_for = _ranked_for(model)
    limits = device_limits.of_model(model)
    # counted once per kernel and statistics, across runs and by every worker of a host
    properties = functools.partial(cached_properties, data_statistics=stats or None)
    counter = _RankProgress(sys.stderr if sys.stderr.isatty() else None)
    if mode.get("top") == 0:
        if limits is None:
            raise UsageError(f"the {model.name} model's profile records no device limits "
                             f"and kernelcast has no description of {ranked_for}: rank "
                             "with --measure-top K on the device, or recalibrate there")
        space, where = _space(args, given, knl, params, limits, family)
        variants = _counted(space, limit, where, limits)
        print(f"ranking {family} for {ranked_for} ({limits.describe()}): {variants} "
              f"variants by {model.name}, none measured", file=sys.stderr, flush=True)
        left_out: dict[str, int] = {}
        try:
            ranked, skipped = rank(knl, params, space, model,
                                   max_group_size=limits.max_group_size,
                                   local_mem_bytes=limits.local_mem_bytes,
                                   properties=properties, progress=counter,
                                   left_out=left_out)
        finally:
            counter.finish()
        from kernelcast.tune.tuner import TuneResult

        result = TuneResult(ranked, skipped, left_out=left_out)
        doc = _document(args, family, params, None, None, model, space, None, result,
                        RANK_ONLY_ROWS, ranked_for, limits)
        return _finish(args, doc, result, ranked_for)
    wait = getattr(args, "wait", 0.0)
    device = _device_for(model, args.device, args.backend)
    with make_backend(args.backend, device, wait=wait, locked=False) as backend:
        info = backend.device
        if ranked_for and ranked_for != info.name and args.device is None:
            raise UsageError(
                f"the {model.name} model ranks for {ranked_for}, but the device here is "
                f"{info.name}: rank without measuring (--rank-only), or measure on it on "
                f"purpose (--device '{info.name}'), predicted and measured then of two "
                "devices")
        _check_instance(model, info, spread)
        here = device_limits.of_device(info)
        limits = here if limits is None else device_limits.tighter(limits, here)
        space, where = _space(args, given, knl, params, limits, family)
        variants = _counted(space, limit, where, limits)
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
            if "top" in mode:
                how = f"the best {mode['top']} measured"
            else:
                how = "measured in a search guided by it, " + (
                    f"at most {mode['budget']} variants" if mode["budget"] else
                    f"for at most {_duration(mode['seconds'])}")
            other = "" if ranked_for in (None, info.name) else \
                f" (predicted for {ranked_for}: another device)"
            print(f"tuning {family} on {info.name} ({backend.name}): {variants} variants "
                  f"ranked by {model.name}{other}, {how}, into {db}{on}",
                  file=sys.stderr, flush=True)
            extra = ({"top": mode["top"]} if "top" in mode else
                     {"budget": mode["budget"], "seconds": mode["seconds"],
                      "settings": Settings(mode["batch"], mode["budget"]),
                      "on_batch": _batch_progress(sys.stderr)})
            try:
                result = run(build, params, space, model, backend, store, family=family,
                             limits=limits, properties=properties, rank_progress=counter,
                             client=client, wait=wait, per_device=spread, lock=lock,
                             **extra)
            finally:
                counter.finish()
    shown = mode.get("top") or len(result.order)
    doc = _document(args, family, params, info, backend, model, space, db, result, shown,
                    ranked_for, limits)
    return _finish(args, doc, result, ranked_for)


#: Why the guided search stopped, for a person (kernelcast.tune.guided.STOPS).
STOPPED = {"budget": "its budget of measurements was spent",
           "time": "its time was spent", "space measured": "every variant is measured",
           "nothing predicted faster": "no unmeasured variant is predicted to beat the "
                                       "best measured by more than the timing noise"}

#: Rows a ranking without measurements shows (the JSON holds them all).
RANK_ONLY_ROWS = 10


def _batch_progress(stream):
    """A line per batch of the guided search: how many measured, the best so far."""
    from kernelcast.report import format_seconds

    def show(done: dict):
        timed = {k: v for k, v in done.items() if v}
        best = min(timed.values()) if timed else None
        print(f"guided search: {len(done)} measured" + (
            f", best {format_seconds(best)}" if best else ""), file=stream, flush=True)
    return show


def _finish(args, doc: dict, result, ranked_for) -> int:
    if args.json:
        json.dump(doc, sys.stdout, indent=1)
        print()
    else:
        _print(doc)
    where = doc["device"] or ranked_for
    if not result.ranked:
        raise KernelcastError(f"no variant of the space can be ranked for {where}; see "
                              "the reasons above")
    if doc["measuring"] and doc["winner"] is None:
        raise KernelcastError(f"no measured variant could be timed; the messages are in "
                              f"{doc['store']}")
    return 0


def _document(args, family, params, info, backend, model, space, db, result, shown,
              ranked_for, limits) -> dict:
    """What tune found, as JSON: the space, the variants measured (or, without
    measuring, the best predicted), the winner and its code."""
    from kernelcast.tune.space import code

    reasons: dict[str, int] = dict(result.left_out)
    for r in result.skipped:
        reasons[r.reason] = reasons.get(r.reason, 0) + 1
    position = {f"{family}/{r.key}": (i, r) for i, r in enumerate(result.ranked, 1)}
    measuring = info is not None
    names = (result.order if measuring and result.order else
             [f"{family}/{r.key}" for r in result.ranked[:shown]])
    rows = []
    for name in names:
        if name not in position:
            continue
        i, r = position[name]
        rows.append({"rank": i, "key": r.key, "variant": r.variant,
                     "predicted_s": r.predicted_s, "measured_s": result.measured.get(name),
                     "status": result.statuses.get(name, "not measured" if not measuring
                                                   else "missing")})
    winner = None
    if measuring and result.best is not None:
        name, seconds = result.best
        row = next(r for r in rows if f"{family}/{r['key']}" == name)
        first = next((r for r in rows if r["rank"] == 1), None)
        winner = {**row, "code": code(row["variant"], space),
                  "best_predicted": None if first is None else
                  {"rank": 1, "key": first["key"], "measured_s": first["measured_s"]},
                  "speedup_over_best_predicted": (first["measured_s"] / seconds
                                                  if first and first["measured_s"] else None)}
    elif not measuring and rows:
        winner = {**rows[0], "code": code(rows[0]["variant"], space),
                  "best_predicted": None, "speedup_over_best_predicted": None}
    device = info.name if measuring else None
    return {"kernel": args.kernel, "family": family, "params": params,
            "device": device, "backend": backend.name if measuring else None,
            "model": model.name, "model_hardware": ranked_for,
            "ranked_for": ranked_for, "limits": limits.as_dict(),
            "devices_differ": bool(measuring and ranked_for and ranked_for != device),
            "measuring": measuring, "mode": _mode_name(args, measuring),
            "stopped": result.stopped,
            "store": None if db is None else str(db),
            "space": {"variants": len(space), "valid": len(result.ranked),
                      "skipped": len(result.skipped) + sum(result.left_out.values()),
                      "skipped_reasons": reasons,
                      "thinned": [f"{name}: {', '.join(map(str, values))}" for name, values
                                  in getattr(space, "dropped", ())]},
            "top": rows, "winner": winner}


def _mode_name(args, measuring: bool) -> str:
    if not measuring:
        return "rank-only"
    return "top" if getattr(args, "measure_top", None) is not None else "guided"


def _print(doc: dict) -> None:
    import pandas as pd

    from kernelcast.report import format_seconds, format_table

    sized = " ".join(f"{k}={v}" for k, v in doc["params"].items())
    model = doc["model"] + (f" ({doc['ranked_for']})" if doc["ranked_for"] else "")
    s = doc["space"]
    print(f"kernel {doc['family']} ({doc['kernel']}) at {sized or 'no sizes'}")
    if doc["measuring"]:
        print(f"device {doc['device']} ({doc['backend']}); model {model}; "
              f"store {doc['store']}")
    else:
        print(f"ranked for {doc['ranked_for']}, no device measured; model {model}")
    if doc["devices_differ"]:
        print(f"note: predicted for {doc['ranked_for']}, measured on {doc['device']}: the "
              "two columns are of different devices")
    print(f"space: {s['variants']} variants, {s['valid']} valid, {s['skipped']} skipped "
          f"(limits: {_limits_text(doc['limits'])})")
    for reason, count in sorted(s["skipped_reasons"].items(), key=lambda kv: -kv[1]):
        print(f"  {count} skipped: {reason}")
    if s["thinned"]:
        print(f"  the default space was thinned to at most a few hundred variants, leaving "
              f"out {'; '.join(s['thinned'])} (--space explores them)")
    if doc["top"]:
        mark = "*" if doc["devices_differ"] else ""
        frame = pd.DataFrame([{
            "rank": r["rank"], "variant": r["key"],
            f"predicted{mark}": format_seconds(r["predicted_s"]),
            **({f"measured{mark}": "" if r["measured_s"] is None
                else format_seconds(r["measured_s"]), "status": r["status"]}
               if doc["measuring"] else {})} for r in doc["top"]])
        print()
        if doc["mode"] == "guided":
            print(f"measured in the order the guided search chose (rank: the model's); "
                  f"it stopped: {STOPPED[doc['stopped']]}")
        print(format_table(frame))
        if mark:
            print(f"* predicted for {doc['ranked_for']}, measured on {doc['device']}: "
                  "different devices")
    w = doc["winner"]
    if w is None:
        return
    if not doc["measuring"]:
        print(f"\nbest predicted: {w['key']}: {format_seconds(w['predicted_s'])} on "
              f"{doc['ranked_for']}, not measured")
    else:
        best = w["best_predicted"]
        if w["rank"] == 1:
            versus = "the best-predicted variant is the fastest measured"
        elif best is None:
            versus = "the best-predicted variant was not measured"
        elif best["measured_s"] is None:
            versus = "the best-predicted variant gave no time"
        else:
            versus = (f"{w['speedup_over_best_predicted']:.2f}x faster than the "
                      f"best-predicted variant ({format_seconds(best['measured_s'])})")
        other = (f" (predicted for {doc['ranked_for']}, measured on {doc['device']})"
                 if doc["devices_differ"] else "")
        print()
        print(f"winner: rank {w['rank']} {w['key']}: predicted "
              f"{format_seconds(w['predicted_s'])}, measured "
              f"{format_seconds(w['measured_s'])}{other}; {versus}")
    print("\nits code (after knl = the factory's kernel):\n")
    print(w["code"], end="")


def _limits_text(limits: dict) -> str:
    local = limits.get("local_mem_bytes")
    return (f"{limits['max_group_size']:,} work-items a group"
            + ("" if local is None else f", {local:,} bytes of local memory"))
