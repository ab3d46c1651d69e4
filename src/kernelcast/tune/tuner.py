"""Rank the variants of a kernel with a model, then measure the best few.

``rank`` makes every variant of a space (kernelcast.tune.space), skips those that cannot
run on the device (with the reason), counts the properties of the others and predicts
each with a model; ``tune`` measures the top K of that ranking through a measurement
campaign (kernelcast.measure.campaign: resumable, one row per variant with its status)
and reports the fastest measured. Measured variants are stored as
``FAMILY/parameter=value,...`` (``space.variant_key``), so a resumed run measures nothing
twice.

Public names: Ranked, TuneResult, rank, tune.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kernelcast.errors import KernelcastError
from kernelcast.tune.space import (
    InvalidVariant,
    Space,
    apply,
    check_space,
    invalid,
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
    measured times of the top K by store name (None where the run gave no time)."""

    ranked: list[Ranked]
    skipped: list[Ranked]
    measured: dict[str, float | None] = field(default_factory=dict)
    statuses: dict[str, str] = field(default_factory=dict)

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
         progress: Callable[[int, int], None] | None = None) -> tuple[list[Ranked],
                                                                      list[Ranked]]:
    """(ranked, skipped): every variant of *space* predicted by *model* at *params*, best
    first, and those that cannot run or be predicted, each with its reason. *properties*
    counts a kernel's properties (default: kernelcast.properties.extract_properties)."""
    if properties is None:
        from kernelcast.properties import extract_properties as properties
    ranked, skipped = [], []
    total = len(space)
    for done, variant in enumerate(space.variants(), 1):
        key = variant_key(variant)
        why = invalid(variant, space, max_group_size=max_group_size)
        if why is None:
            try:
                made = apply(knl, variant, space)
                why = invalid(variant, space, max_group_size=max_group_size,
                              local_mem_bytes=local_mem_bytes, knl=made)
                if why is None:
                    seconds = model.predict(properties(made), dict(params))
                    ranked.append(Ranked(variant, key, seconds))
            except InvalidVariant as err:
                why = str(err)
            except KernelcastError as err:
                why = f"not predicted: {err}"
        if why is not None:
            skipped.append(Ranked(variant, key, reason=why))
        if progress is not None:
            progress(done, total)
    ranked.sort(key=lambda r: (r.predicted_s, r.key))
    return ranked, skipped


def tune(build: Callable, params: Mapping[str, int], space: Space, model, backend, store,
         *, family: str, top: int = 5, properties: Callable | None = None,
         progress=None, rank_progress: Callable[[int, int], None] | None = None
         ) -> TuneResult:
    """Rank *space*'s variants of the kernel *build()* makes, and measure the *top* best
    on *backend* into *store*; see the module docstring. *rank_progress(done, total)*
    follows the ranking, *progress* the measuring campaign."""
    from kernelcast.measure.campaign import Job, run_campaign

    info = backend.device
    knl = build()
    check_space(space, knl)
    ranked, skipped = rank(knl, params, space, model,
                           max_group_size=info.max_group_size,
                           local_mem_bytes=info.local_mem_bytes, properties=properties,
                           progress=rank_progress)
    jobs = []
    for r in ranked[:top]:
        name = f"{family}/{r.key}"
        jobs.append(Job(name, name, lambda v=r.variant: apply(build(), v, space),
                        dict(params)))
    run_campaign(jobs, backend, store, verify=False,
                 **({} if progress is None else {"progress": progress}))
    result = TuneResult(ranked, skipped)
    rows = {row["case_name"]: row for row in store.rows()}
    for job in jobs:
        row = rows.get(job.name)
        result.statuses[job.name] = row["status"] if row else "missing"
        result.measured[job.name] = (row["min_s"] if row and row["status"] in
                                     ("ok", "unstable") else None)
    return result
