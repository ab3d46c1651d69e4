"""Rank the variants of a kernel with a model, then measure few of them.

``rank`` makes every variant of a space (kernelcast.tune.space), skips those that cannot
run on the device ranked for (with the reason), counts the properties of the others and
predicts each with a model; ``tune`` measures, through measurement campaigns
(kernelcast.measure.campaign: resumable, one row per variant with its status), either
the top K of that ranking or the variants a search guided by the model picks batch by
batch (kernelcast.tune.guided), and reports the fastest measured. Measured variants are
stored as ``FAMILY/parameter=value,...`` (``space.variant_key``), so a resumed run
measures nothing twice.

With a Dask client (kernelcast.tune.distributed), ``rank`` and ``tune`` spread the
ranking and the measuring over its workers, with the same result.

Public names: Ranked, TuneResult, rank, tune.
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kernelcast.errors import ExtrapolationWarning, KernelcastError
from kernelcast.tune.space import (
    InvalidVariant,
    Space,
    apply,
    check_space,
    check_work,
    invalid,
    launchable,
    variant_key,
)


@dataclass(frozen=True)
class Ranked:
    """One variant: its predicted seconds, or why it was skipped."""

    variant: dict
    key: str
    predicted_s: float | None = None
    reason: str | None = None


@dataclass
class TuneResult:
    """The ranking (valid variants, best predicted first), the skipped variants, and the
    measured times by store name (None where the run gave no time), in the order
    measured (those a store held before first)."""

    ranked: list[Ranked]
    skipped: list[Ranked]
    measured: dict[str, float | None] = field(default_factory=dict)
    statuses: dict[str, str] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)  # store names, in the order measured
    stopped: str | None = None  # why a guided search stopped (kernelcast.tune.guided.STOPS)
    left_out: dict[str, int] = field(default_factory=dict)  # not made: reason -> count

    @property
    def best(self) -> tuple[str, float] | None:
        """The fastest measured variant's store name and seconds."""
        timed = {k: v for k, v in self.measured.items() if v is not None}
        if not timed:
            return None
        name = min(timed, key=timed.get)
        return name, timed[name]


def rank(knl, params: Mapping[str, int], space: Space, model, *, max_group_size: int,
         local_mem_bytes: int | None = None,
         properties: Callable | None = None,
         progress: Callable[[int, int], None] | None = None,
         client=None, chunk_size: int | None = None,
         left_out: dict[str, int] | None = None) -> tuple[list[Ranked], list[Ranked]]:
    """(ranked, skipped): every variant of *space* predicted by *model* at *params*, best
    first, and those that cannot run or be predicted, each with its reason. *properties*
    counts a kernel's properties (default: kernelcast.properties.extract_properties).
    With *left_out* (a dict), variants that cannot launch whatever their kernel
    (kernelcast.tune.space.launchable: a work-group too large, ...) are not made at all:
    *left_out* gets their count by reason, and they are in neither list.

    With *client* (a Dask client, kernelcast.tune.distributed.cluster) the variants are
    made, checked, counted and predicted on its workers, in chunks of *chunk_size*
    (default: about four per worker), and the result is the same, order and reasons
    included. *knl*, *model* and *properties* (default there:
    kernelcast.properties.cached_properties, whose cache folder the workers of one host
    share) are sent to the workers, so they must pickle; warnings the workers give are
    given again here. *progress(done, total)* follows the variants (with a client, as
    chunks complete)."""
    if left_out is None:
        variants = list(space.variants())
    else:
        variants, pruned = launchable(space, max_group_size=max_group_size,
                                      local_mem_bytes=local_mem_bytes)
        for reason, count in pruned.items():
            left_out[reason] = left_out.get(reason, 0) + count
    total = len(variants)
    shared = {"knl": knl, "space": space, "model": model, "params": dict(params),
              "limits": (max_group_size, local_mem_bytes)}
    if client is None:
        if properties is None:
            from kernelcast.properties import extract_properties as properties
        chunks = []
        for done, variant in enumerate(variants, 1):
            chunks += _rank_chunk([variant], properties=properties, **shared)
            if progress is not None:
                progress(done, total)
    else:
        from kernelcast.tune.distributed import map_chunks

        if properties is None:
            from kernelcast.properties import cached_properties as properties
        chunks = map_chunks(client, _rank_chunk, variants, chunk_size=chunk_size,
                            progress=progress, shared={**shared, "properties": properties})
    outcomes, extrapolated = [], []
    for variant, (seconds, why, caught) in zip(variants, chunks, strict=True):
        outside = [text for category, text in caught
                   if issubclass(category, ExtrapolationWarning)]
        if outside:
            extrapolated.append(f"{variant_key(variant)}: {outside[0]}")
        for category, text in caught:
            if not issubclass(category, ExtrapolationWarning):
                warnings.warn(text, category, stacklevel=2)
        outcomes.append((seconds, why))
    if extrapolated:  # one line for the ranking, not one per variant
        warnings.warn(f"{len(extrapolated)} of {total} variants are predicted outside what "
                      f"the {model.name} model was fitted on, so their ranks are less sure; "
                      f"the first: {extrapolated[0]}", ExtrapolationWarning, stacklevel=2)
    ranked, skipped = [], []
    for variant, (seconds, why) in zip(variants, outcomes, strict=True):
        key = variant_key(variant)
        if why is None:
            ranked.append(Ranked(variant, key, seconds))
        else:
            skipped.append(Ranked(variant, key, reason=why))
    ranked.sort(key=lambda r: (r.predicted_s, r.key))
    return ranked, skipped


def _rank_variant(knl, variant, space, model, params, max_group_size, local_mem_bytes,
                  properties) -> tuple[float | None, str | None]:
    """(predicted seconds, None) for one variant, or (None, why it was skipped)."""
    why = invalid(variant, space, max_group_size=max_group_size)
    if why is not None:
        return None, why
    try:
        made = apply(knl, variant, space)
        why = invalid(variant, space, max_group_size=max_group_size,
                      local_mem_bytes=local_mem_bytes, knl=made)
        if why is None:  # a model on the hardware facts compiles the kernel itself
            workload = made if getattr(model, "needs_kernel", False) else properties(made)
            return model.predict(workload, dict(params)), None
    except InvalidVariant as err:
        why = str(err)
    except KernelcastError as err:
        why = f"not predicted: {err}"
    return None, why


def _rank_chunk(variants, *, knl, space, model, params, limits, properties) -> list:
    """On a worker: (seconds, why, warnings given) for each of *variants*."""
    out = []
    for variant in variants:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            seconds, why = _rank_variant(knl, variant, space, model, params, *limits,
                                         properties)
        out.append((seconds, why, [(w.category, str(w.message)) for w in caught]))
    return out


def tune(build: Callable, params: Mapping[str, int], space: Space, model, backend, store,
         *, family: str, top: int = 5, budget: int | None = None,
         seconds: float | None = None, settings=None, limits=None,
         properties: Callable | None = None, progress=None,
         rank_progress: Callable[[int, int], None] | None = None,
         on_batch: Callable[[dict], None] | None = None,
         client=None, wait: float = 0.0, per_device: bool = False,
         lock: Callable[[], object] | None = None) -> TuneResult:
    """Rank *space*'s variants of the kernel *build()* makes, and measure on *backend*
    into *store*: the *top* best predicted, or, with *budget* (measurements) or *seconds*
    (of measuring), a search guided by the model and corrected by what it measures
    (kernelcast.tune.guided, in batches of *settings*' size). Variants *store* holds for
    these sizes count as measured and are never measured again. *limits*
    (kernelcast.tune.limits.Limits, default: *backend*'s device's) bound the variants
    ranked. *rank_progress(done, total)* follows the ranking, *progress* the measuring
    campaigns, *on_batch(measured)* the guided search. *lock()*, where given, takes the
    device's lock (kernelcast.measure.lock.DeviceLock) once the ranking is done, for a
    *backend* that holds none (make_backend(..., locked=False)): it becomes *backend*'s,
    released when *backend* is closed, so that ranking (minutes of counting on this
    host's cores) keeps no other campaign off the device.

    With *client* (a Dask client) both are spread over its workers (``rank``,
    kernelcast.tune.distributed.measure): the workers get the kernel *build()* made here,
    never *build* itself; *backend* is then only this process's hold on the device (its
    lock) and the store's identity, and *wait* how long a worker elsewhere waits for its
    device's lock; with *per_device*, each worker measures on a device of its own."""
    from kernelcast.tune.limits import of_device

    limits = limits or of_device(backend.device)
    knl = build()
    check_space(space, knl)
    check_work(knl, params)
    left_out: dict[str, int] = {}
    ranked, skipped = rank(knl, params, space, model,
                           max_group_size=limits.max_group_size,
                           local_mem_bytes=limits.local_mem_bytes, properties=properties,
                           progress=rank_progress, client=client, left_out=left_out)
    result = TuneResult(ranked, skipped, left_out=left_out)
    if lock is not None and ranked:
        backend.lock = lock()
    measure = functools.partial(_measure, build=build, knl=knl, params=params, space=space,
                                backend=backend, store=store, family=family,
                                client=client, wait=wait, per_device=per_device,
                                progress=progress, result=result)
    if budget is None and seconds is None:
        measure(ranked[:top])
        return result
    from kernelcast.tune.guided import SETTINGS, Candidate, Settings, search

    settings = settings or SETTINGS
    by_key = {r.key: r for r in ranked}
    before = _stored(store, family, params, set(by_key))
    for key in before:
        result.statuses[f"{family}/{key}"] = "stored"
    deadline = None if seconds is None else time.monotonic() + seconds
    candidates = [Candidate(r.key, r.variant, r.predicted_s) for r in ranked]
    _, result.stopped = search(
        candidates, lambda batch: measure([by_key[c.key] for c in batch]),
        settings=Settings(settings.batch, budget), measured=before,
        noise=lambda: _noise(store, family, params),
        until=None if deadline is None else (lambda: time.monotonic() >= deadline),
        on_batch=on_batch)
    for key, seconds_ in before.items():
        result.measured[f"{family}/{key}"] = seconds_
    result.order = [f"{family}/{key}" for key in before] + result.order
    return result


def _measure(chosen: list[Ranked], *, build, knl, params, space, backend, store, family,
             client, wait, per_device, progress, result: TuneResult) -> dict[str, float | None]:
    """Measure *chosen* into *store* and *result*; {key: seconds or None}."""
    from kernelcast.measure.campaign import Job, run_campaign

    jobs = []
    for r in chosen:
        name = f"{family}/{r.key}"
        if client is None:
            make = (lambda v=r.variant: apply(build(), v, space))
        else:  # the kernel made here travels; a user's factory may not import there
            make = functools.partial(apply, knl, r.variant, space)
        jobs.append(Job(name, name, make, dict(params)))
    options = {} if progress is None else {"progress": progress}
    if client is None:
        run_campaign(jobs, backend, store, verify=False, **options)
    else:
        from kernelcast.tune.distributed import measure

        measure(client, jobs, backend, store, verify=False, wait=wait,
                per_device=per_device, **options)
    rows = _rows(store, params)
    out = {}
    for r, job in zip(chosen, jobs, strict=True):
        row = rows.get(job.name)
        result.statuses[job.name] = row["status"] if row else "missing"
        result.measured[job.name] = out[r.key] = (
            row["min_s"] if row and row["status"] in ("ok", "unstable") else None)
        result.order.append(job.name)
    return out


def _rows(store, params: Mapping[str, int]) -> dict[str, dict]:
    """The store's rows at these sizes, by case name."""
    wanted = {k: int(v) for k, v in params.items()}
    return {row["case_name"]: row for row in store.rows() if row["params"] == wanted}


def _stored(store, family: str, params, keys: set[str]) -> dict[str, float | None]:
    """{key: seconds or None} of the variants *store* holds for *family* at *params*."""
    out = {}
    for name, row in _rows(store, params).items():
        fam, _, key = name.partition("/")
        if fam == family and key in keys:
            out[key] = row["min_s"] if row["status"] in ("ok", "unstable") else None
    return out


def _noise(store, family: str, params) -> float:
    """The run-to-run spread of this family's timed variants: the median over them of
    their median run over their fastest, less 1."""
    import statistics

    spreads = [row["median_s"] / row["min_s"] - 1 for name, row in _rows(store, params).items()
               if name.partition("/")[0] == family and row["min_s"] and row["median_s"]]
    return statistics.median(spreads) if spreads else 0.0
