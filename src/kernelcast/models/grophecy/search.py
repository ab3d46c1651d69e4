"""GROPHECY's search over code layouts (§6.2) and the projection of each (§7.4).

Layouts are enumerated in the paper's dependency order B → F → S → caching → L:

- B and F: ``layouts.block_shapes`` and ``layouts.foldings`` (powers of two unless hinted);
- S: for each streaming loop (the skeleton's, and the loop over a thread's tasks along
  every folded parallel loop), unstaged or the staging sizes Eq. (3) suggests for the
  arrays it reads (rounded to a whole number of iterations, §6.5);
- caching: every subset of the cacheable arrays, those whose degree of sharing, Eq. (1),
  exceeds one (§6.4); a staged loop must have a cached array read in it, else its stages
  change nothing and the layout is the unstaged one;
- L: maximal (every loop with a static trip count unrolled in groups of 16), or as hinted.

A layout whose shared memory exceeds what a block may allocate is counted as searched and
left out; a space of more than MAX_LAYOUTS layouts is refused before any is projected.
Each layout is characterized (kernelcast.models.grophecy.characterize) and projected
through kernelcast's Hong–Kim model; ``search`` returns them fastest first.

Hints (§6.2, "users can provide hints in an input file"): a TOML file giving the domain of
any factor, e.g.::

    block = [[16, 16]]          # thread-block shapes, one extent per parallel loop
    fold = [[1, 1], [2, 4]]     # foldings
    stage = { k = [16] }        # iterations per stage by streaming loop; its trip: unstaged
    cache = [["A", "B"], []]    # sets of arrays served from shared memory
    unroll = [true, false]      # loop unrolling

Public names: Hints, load_hints, Projection, SearchResult, search, MAX_LAYOUTS.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from kernelcast.errors import KernelcastError, UsageError
from kernelcast.frontends.files import read_toml_file
from kernelcast.frontends.skeleton.ir import ParallelFor, Skeleton
from kernelcast.models.grophecy.characterize import Characteristics, Characterizer
from kernelcast.models.grophecy.layouts import Layout, block_shapes, foldings
from kernelcast.models.grophecy.sections import size
from kernelcast.models.hong_kim.equations import Estimate, active_blocks_per_sm, estimate
from kernelcast.hardware import Hardware

_HINT_KEYS = ("block", "fold", "stage", "cache", "unroll")


@dataclass(frozen=True)
class Hints:
    """Domains of layout factors; None leaves a factor to the autopruned default."""

    block: tuple[tuple[int, ...], ...] | None = None
    fold: tuple[tuple[int, ...], ...] | None = None
    stage: dict[str, tuple[int, ...]] | None = None
    cache: tuple[tuple[str, ...], ...] | None = None
    unroll: tuple[bool, ...] = (True,)
    source: str = ""  # the hints file, named in the search's complaints about them


def _int_lists(value, key: str, where: str) -> tuple[tuple[int, ...], ...]:
    if not (isinstance(value, list) and value and all(
            isinstance(v, list) and v and all(isinstance(x, int) and not isinstance(x, bool)
                                              and x >= 1 for x in v) for v in value)):
        raise UsageError(f"{where}: {key} must be a non-empty list of lists of positive "
                         f"integers, like {key} = [[16, 16]]")
    return tuple(tuple(v) for v in value)


def load_hints(path: str | Path) -> Hints:
    """Read a hints file (TOML; see the module docstring); a UsageError names what is
    wrong with it."""
    where = str(path)
    data = read_toml_file(path, "hints file")
    unknown = sorted(set(data) - set(_HINT_KEYS))
    if unknown:
        raise UsageError(f"{where}: unknown hint {', '.join(unknown)}; hints are "
                         f"{', '.join(_HINT_KEYS)}")
    hints = {}
    for key in ("block", "fold"):
        if key in data:
            hints[key] = _int_lists(data[key], key, where)
    if "stage" in data:
        stage = data["stage"]
        if not (isinstance(stage, dict) and all(
                isinstance(v, list) and v and all(isinstance(x, int) and not isinstance(x, bool)
                                                  and x >= 1 for x in v)
                for v in stage.values())):
            raise UsageError(f"{where}: stage must map streaming loops to lists of positive "
                             "integers, like stage = { k = [16] }")
        hints["stage"] = {str(k): tuple(v) for k, v in stage.items()}
    if "cache" in data:
        cache = data["cache"]
        if not (isinstance(cache, list) and cache and all(
                isinstance(v, list) and all(isinstance(x, str) for x in v) for v in cache)):
            raise UsageError(f"{where}: cache must be a list of lists of array names, like "
                             'cache = [["A", "B"], []]')
        hints["cache"] = tuple(tuple(sorted(set(v))) for v in cache)
    if "unroll" in data:
        unroll = data["unroll"]
        if not (isinstance(unroll, list) and unroll and all(isinstance(x, bool)
                                                            for x in unroll)):
            raise UsageError(f"{where}: unroll must be a list of true/false, like "
                             "unroll = [true]")
        hints["unroll"] = tuple(dict.fromkeys(unroll))
    return Hints(**hints, source=where)


@dataclass(frozen=True)
class Projection:
    """A layout, its characteristics and the Hong–Kim estimate of its run time."""

    characteristics: Characteristics
    estimate: Estimate

    @property
    def layout(self) -> Layout:
        return self.characteristics.layout

    @property
    def seconds(self) -> float:
        return self.estimate.seconds


@dataclass
class SearchResult:
    """Every feasible layout's projection, fastest first, and how many were searched."""

    projections: list[Projection]
    searched: int
    infeasible: dict[str, int] = field(default_factory=dict)  # reason -> layouts
    hardware: str = ""

    @property
    def best(self) -> Projection:
        if not self.projections:
            raise KernelcastError("no layout of this skeleton fits the hardware: "
                                  + "; ".join(f"{n} {why}" for why, n in
                                              self.infeasible.items()))
        return self.projections[0]


def _suggested_stages(ch: Characterizer, layout: Layout, loop: str,
                      arrays: Sequence[str]) -> set[int]:
    """Eq. (3)'s staging sizes of *loop* for the *arrays* it reads, as whole iterations
    within the loop's trip count."""
    trip = ch.trip(layout, loop)
    threads = math.prod(layout.block)
    b_hat = ch.block_tile(layout)
    out = set()
    for array in arrays:
        loads = [p for p in ch.loads[array]
                 if loop in ch.space or loop in {lp.index for lp in p.loops}]
        if not loads:
            continue
        one = size(ch.footprint(loads, b_hat & ch.stage_tile(layout, loop, 1)))
        every = size(ch.footprint(loads, b_hat))
        if not one or not every:
            continue
        # (2) StageShrDegree = size(H(B̂ ∧ [k: one iteration])) × size(k) / size(H(B̂))
        shr = Fraction(one * trip, every)
        # (3) StageSize = size(B) × StageShrDegree / size(H(B̂ ∧ [k: one iteration]))
        stage = round(Fraction(threads, one) * shr)
        out.add(min(max(stage, 1), trip))
    return out


def _cacheable(ch: Characterizer, layout: Layout) -> list[str]:
    """Arrays with a degree of sharing above one, Eq. (1)."""
    threads = math.prod(layout.block)
    f_hat, b_hat = ch.thread_tile(layout), ch.block_tile(layout)
    out = []
    for array, loads in ch.loads.items():
        every = size(ch.footprint(loads, b_hat))
        # (1) ShrDegree(D) = size(H(D, F̂)) × size(B) / size(H(D, B̂))
        if every and Fraction(size(ch.footprint(loads, f_hat)) * threads, every) > 1:
            out.append(array)
    return sorted(out)


#: Layouts one search may project (counted before staging sets that change nothing are
#: dropped). The paper's skeletons count up to 58,820 (examples/skeletons/ispinex_real.sk,
#: 7 s on two cores), a batched 3-D matmul 204k (28 s); every cacheable array doubles the
#: count and every streaming loop multiplies it, so a larger space is refused before any
#: layout is projected rather than searched for hours.
MAX_LAYOUTS = 250_000


def _layouts(ch: Characterizer, hints: Hints):
    """Every layout of the space, in §6.2's dependency order; more than MAX_LAYOUTS is a
    UsageError."""
    hw = ch.hw
    max_threads = hw.max_threads_per_block or hw.max_active_warps_per_sm * hw.warp_size
    space = tuple(ch.space.values())
    plan, count = [], 0  # (block, fold, streams, staging options, cacheable arrays)
    for block in block_shapes(space, max_threads, hints.block, hw.warp_size):
        folds = hints.fold
        if folds is not None and hints.block is None:  # the blocks these foldings fit
            folds = [f for f in folds if len(f) == len(space) and all(
                b * k <= n for b, k, n in zip(block, f, space))]
            if not folds:
                continue
        for fold in foldings(space, block, folds):
            probe = Layout(block, fold)
            streams = ch.streams(probe)
            cacheable = _cacheable(ch, probe)
            if hints.stage is not None:
                unknown = set(hints.stage) - set(streams) - set(ch.space)
                if unknown:
                    raise UsageError(f"hints stage {', '.join(sorted(unknown))}, not a "
                                     "streaming loop of the skeleton (they are: "
                                     f"{', '.join(streams) or 'none'})")
            options = []
            for loop in streams:
                trip = ch.trip(probe, loop)
                if hints.stage is not None and loop in hints.stage:
                    sizes = {min(s, trip) for s in hints.stage[loop]}
                else:
                    sizes = {trip} | _suggested_stages(ch, probe, loop, cacheable)
                options.append(sorted(sizes))
            plan.append((block, fold, streams, options, cacheable))
            count += (math.prod(map(len, options)) * _caches(hints, cacheable)
                      * len(hints.unroll))
            if count > MAX_LAYOUTS:  # refused as soon as it is known, before any projection
                _refuse(ch, hints, plan, count)
    for block, fold, streams, options, cacheable in plan:
        probe = Layout(block, fold)
        caches = (hints.cache if hints.cache is not None else
                  tuple(c for r in range(len(cacheable) + 1)
                        for c in itertools.combinations(cacheable, r)))
        for sizes in itertools.product(*options):
            stages = tuple((k, s) for k, s in zip(streams, sizes)
                           if s < ch.trip(probe, k))
            for cached in caches:
                if stages and not _stages_matter(ch, stages, cached):
                    continue
                for unroll in hints.unroll:
                    yield Layout(block, fold, stages, tuple(cached), unroll)


def _caches(hints: Hints, cacheable) -> int:
    """How many sets of cached arrays the search tries with *cacheable* arrays."""
    return len(hints.cache) if hints.cache is not None else 2 ** len(cacheable)


def _refuse(ch: Characterizer, hints: Hints, plan, count: int):
    """Raise a UsageError for a layout space of more than MAX_LAYOUTS (*count* layouts so
    far over the blocks and foldings of *plan*), naming the factors that make it."""
    cacheable = max((c for *_, c in plan), key=len)
    streams = max((s for _, _, s, _, _ in plan), key=len)
    named = ", ".join(cacheable[:6]) + (f" and {len(cacheable) - 6} more"
                                        if len(cacheable) > 6 else "")
    raise UsageError(
        f"{ch.skeleton.path}: the parallel_for of line {ch.kernel.line} has more than "
        f"{MAX_LAYOUTS} layouts to search, the most one search may project ({count:.3g} "
        f"over the first {len(plan)} blocks and foldings, up to {_caches(hints, cacheable)} "
        f"sets of cached arrays ({named or 'none cacheable'}), staging of up to "
        f"{len(streams)} streaming loops); a hints file (--hints) can name the blocks, "
        f"foldings, stages or cached arrays to try")


def _stages_matter(ch: Characterizer, stages, cached) -> bool:
    """Whether every staged loop has a cached array read inside it."""
    for loop, _ in stages:
        if loop in ch.space:
            if not cached:
                return False
            continue
        if not any(loop in {lp.index for lp in p.loops}
                   for array in cached for p in ch.loads.get(array, ())):
            return False
    return True


def search(skeleton: Skeleton, hardware: Hardware, *, kernel: ParallelFor | None = None,
           hints: Hints | None = None,
           progress: Callable[[int], None] | None = None) -> SearchResult:
    """Project every layout of *kernel* (the skeleton's only parallel loop by default) on
    *hardware*; *progress* is called with the number of layouts searched so far."""
    if kernel is None:
        if len(skeleton.kernels) != 1:
            raise UsageError(f"{skeleton.path} has {len(skeleton.kernels)} parallel_for "
                             "loops; name one")
        kernel = skeleton.kernels[0]
    ch = Characterizer(skeleton, kernel, hardware)
    hints = hints or Hints()
    try:
        return _search(ch, hardware, hints, progress)
    except UsageError as err:  # with hints, the search refuses only what they ask
        if hints.source:
            raise UsageError(f"{hints.source}: {err}") from None
        raise


def _search(ch: Characterizer, hardware: Hardware, hints: Hints, progress) -> SearchResult:
    limit = hardware.shared_mem_per_block or hardware.shared_mem_per_sm
    projections, searched, infeasible = [], 0, {}
    for layout in _layouts(ch, hints):
        searched += 1
        if progress is not None and searched % 256 == 0:
            progress(searched)
        if hints.cache is not None:
            missing = set(layout.cached) - set(ch.loads)
            if missing:
                raise UsageError(f"hints cache {', '.join(sorted(missing))}, which the "
                                 "kernel never loads")
        characteristics = ch.characterize(layout)
        if characteristics.shared_mem_per_block > limit:
            why = f"need more than the {limit} bytes of shared memory a block may have"
            infeasible[why] = infeasible.get(why, 0) + 1
            continue
        try:
            active_blocks_per_sm(hardware, characteristics.workload)
        except KernelcastError:
            why = "do not fit on one SM"
            infeasible[why] = infeasible.get(why, 0) + 1
            continue
        try:
            projected = estimate(hardware, characteristics.workload)
            if not projected.seconds:
                raise KernelcastError("the launch executes no computation or memory "
                                      "instruction: there is nothing to project")
        except KernelcastError as err:
            raise UsageError(f"{ch.skeleton.path or 'the skeleton'}, parallel_for of "
                             f"line {ch.kernel.line}: {err}") from None
        projections.append(Projection(characteristics, projected))
    if progress is not None:
        progress(searched)
    if not searched:
        raise UsageError("the hints leave no layout to search (no block of at most "
                         f"{hardware.max_threads_per_block or 'the device'} threads fits "
                         "the hinted foldings within the loop space "
                         f"{tuple(ch.space.values())})")
    # among equal projections, the simplest layout first
    projections.sort(key=lambda p: (p.seconds, math.prod(p.layout.fold), len(p.layout.stages),
                                    len(p.layout.cached), math.prod(p.layout.block),
                                    p.layout.block, p.layout.fold))
    return SearchResult(projections, searched, infeasible, hardware.name)
