"""L1, L2 and DRAM traffic of one launch, from the global sectors its work-groups touch.

Input: for each work-group ``g`` of a launch (in launch order) the 32-byte sector ids its
global loads and stores touch, in execution order, one entry per (warp request, sector),
as ``kernelcast.facts.warps.group_sectors`` gives them; for a group with long loops, an
unbroken stretch of their middle iterations with how many entries each stands for (the
stretch takes the group's whole time, so groups keep their places relative to each other,
and a block first touched in it stands for as many of the whole loop: a loop read as a
stream; a launch with such groups is sampled). Output: what Nsight Compute counts
for the launch with caches flushed before it, as ``ncu`` does by default
(``--cache-control all``): ``l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum``,
``lts__t_sectors_srcunit_tex_op_read.sum``, ``lts__t_sectors_op_read.sum``,
``lts__t_sectors_op_write.sum``, ``dram__bytes_read.sum`` and ``dram__bytes_write.sum``.

What the hardware is taken to do. Sizes and granularities: NVIDIA's Hopper tuning guide
(256 KB of L1 and shared memory per SM), the CUDA C++ Programming Guide (32-byte sectors,
128-byte lines) and the A100/H100 whitepapers (L2 in two partitions, each caching data for
the SMs wired to it); the sectored L1 as Jia et al. measured it ("Dissecting the NVIDIA
Volta GPU Architecture via Microbenchmarking", 2018). The rest was read with ncu 2025.3 on
an H100 SXM (see ``MEASURED``):

- Work-groups go to SMs round-robin in launch order; a *wave* is ``W = sms *
  groups_per_sm`` consecutive groups. Every group lasts one time unit and group ``g``
  starts at ``g / W`` (the steady state, where a group starts whenever one ends, so the
  groups an SM holds are a time unit over ``groups_per_sm`` apart). A group's loads and
  its stores are each spread evenly over its time, a request's sectors together; the
  groups an SM holds interleave request by request.
- L1 (per SM, ``l1_bytes`` left to data by the shared-memory carveout): least recently
  used 128-byte lines with a valid bit per sector; a miss fetches only its sector. Stores
  are written through to L2 and fill L1 too (a load of data a store just wrote hits), but
  as the lines to go first: a stream of stores does not push loaded data out. L1 starts
  empty in every launch.
- L2: every L1 load miss is an L2 read sector from L1 and every store sector an L2 write
  sector. Each address has a home partition (of ``P``); an SM reading data homed in
  another one reads it through its own partition, which keeps a copy, so data lives in
  up to two places (the capacity left is ``l2_bytes / (1 + (P - 1) / P)``) and ncu counts
  the sectors the partitions pass each other on top: a ``dram_fetch_bytes`` block that a
  side's partition takes in anew adds its sectors with probability ``(P - 1) / P`` (an
  exact run draws each SM's side; a sampled one takes the expected number of sides among
  a block's ``k`` readers nearby, ``P(1 - (1 - 1/P)^k)``, for its first reads and one
  side for a read after it left L2), and a store sector adds ``(P - 1) / P``. L2 misses
  read ``dram_fetch_bytes`` blocks from DRAM; stores allocate without reading; dirty
  sectors evicted during the launch are written to DRAM, those still in L2 at its end
  are not (ncu's count stops with the kernel; ``writeback_at_end`` adds them).
  ``dirty_at_start_bytes`` of dirty data in L2 before the launch (what ncu leaves there)
  is written back as the launch brings 0.6 to 1 L2 capacity into L2 (DRAM reads and
  written sectors, with far copies), a linear share in between.

Method. A launch whose sector entries fit ``budget`` is simulated exactly: one LRU line
cache with sector bits per SM, then one over the merged L2 stream in time order. Larger
launches are sampled (``sampled=True``), half the budget each way. L1: units of one SM's
co-resident groups in waves spread evenly over the launch, simulated exactly between the
same SM's previous waves (enough to stream an L1's worth, at most 16, none where one
group alone streams more than L1 holds) and its next one, and whole SMs over the first
waves, where L1 fills. Where a unit is longer than its share, a time slice of the SM's
stream around the unit's middle load is simulated, every group the SM holds then taking
its part at its staggered start: the reuse distance between two groups on one SM
includes what the others read in between (a group's own entries cut and spread over its
whole time would bring the groups into lock-step and shrink it). ``budget`` counts sector
entries and each group evaluated as ``CALL_ENTRIES`` more. L2 and DRAM: groups spread
over the launch in strata (the first and last position along each launch axis apart,
the interior as a Latin hypercube), each with its neighbours one step back along every
launch axis and forward within its wave, whose first touches give
each block's reuse time across groups (past the budget only the loaded lines a hash
keeps, Waldspurger et al.'s spatial sampling, "Efficient MRC construction with SHARDS",
FAST 2015). Xiang et al.'s footprint theory ("HOTL: a higher order theory of locality",
ASPLOS 2013) turns reuse times into hits: the average footprint of a window of ``w`` time
units is ``A * E[min(rt, w)]`` (``A`` the accesses per time unit); a read misses as the
footprint of a window as long as its reuse time grows from ``l2_hit_fade[0]`` to
``l2_hit_fade[1]`` of ``l2_bytes`` (measured; an LRU cache would switch at one capacity),
and a written sector leaves L2 once older than the window whose footprint fills it.
Totals scale from the sample (pass the exact load and store sector counts when known).

Public names: CacheTraffic, cache_traffic, lru_sector_cache, H100_L1_BYTES, MEASURED_ON,
MEASURED, NCU_DIRTY_AT_START, L2_HIT_FADE, CODE_FETCH, CALL_ENTRIES.
"""

from __future__ import annotations

import itertools
import math
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from kernelcast.errors import UsageError

# NVIDIA Hopper Tuning Guide, "Unified Shared Memory/L1/Texture Cache": 256 KB per SM on
# H100, of which the shared-memory carveout (up to 228 KB) is taken first.
H100_L1_BYTES = 256 * 1024

# the GPUs whose counters the behaviour below was read from (data/<gpu>/caches/ and
# data/<gpu>/fetch/); on any other the cache model is a guess (HardwareGuessWarning)
MEASURED_ON = ("NVIDIA H100 80GB HBM3", "NVIDIA H200")

# What ncu 2025.3 read on an H100 SXM (driver 580, caches flushed before each launch),
# from float32 microbenchmarks built with nvcc -arch=sm_90 (benchmarks/
# cache_microbenchmarks.sh; the counters in data/h100/caches/); the choices above follow
# them. The H200 (data/h200/) read the same within a few percent, but for "h200".
MEASURED: Mapping[str, str] = {
    "l1 stores": "a block that stores 1 KB and reads it back after a barrier, each warp "
                 "another warp's data: every load sector hits L1",
    "l1 capacity": "one block per SM re-reading its own 8-192 KB four times hits 75% of "
                   "sectors; 224 KB hits 66%",
    "l2 reads": "a copy reads 1.5x its sectors at L2 (lts__t_sectors_op_read) and "
                "1.0x from L1 (srcunit_tex); one float per 64 or 128 bytes reads 2.0x; "
                "a naive matrix product adds about one sector per 32 bytes of its "
                "operands",
    "dram reads": "one float per 64 or 128 bytes reads 64 bytes from DRAM per float; one "
                  "per 32 bytes, 32 bytes",
    "l2 capacity": "groups re-reading a footprint three times read it once from DRAM up "
                   "to 28 MB, 1.26x at 32 MB, 2.6x at 40 MB and 3x from 48 MB (50 MB L2)",
    "dram writes": "a copy writes 0 bytes to DRAM for 4 MB of output, 1.5 MB for 16 MB, "
                   "51 MB for 64 MB and 252 MB for 256 MB",
    "l2 writes": "a copy writes 1.5x its store sectors at L2 (lts__t_sectors_op_write)",
    "dram writes without stores": "re-reading 16 MB three times writes 11 KB to DRAM, "
                                  "20 MB 0.2 MB, 24 MB 1.3 MB, 28 MB 2.2 MB, 32-64 MB "
                                  "2.4 MB; a column sum or matrix-vector product of "
                                  "256 MB to 4 GB writes 2.3-2.6 MB",
    "h200": "the same microbenchmarks on an H200 (60 MB L2): the footprint re-read three "
            "times reads from DRAM once up to 32 MB, 1.47x at 40 MB and 2.8x at 48 MB: "
            "its L2 stops keeping data from 0.62 to 0.815 of its capacity, where the "
            "H100's does from 0.61 to 0.84; the code fetches' line is the H100's within 1%",
    "code fetches": "kernels that load no data read 970 L2 sectors with 384 bytes of "
                    "code, 1,260 with 1.4 KB, 3,300 with 8.6 KB and 19,000 with 66 KB, "
                    "on 1 to 1,320 groups alike (benchmarks/fetch_microbenchmarks.sh, "
                    "data/h100/fetch/)",
    "not modelled": "stores that write 4 of a sector's 32 bytes count 2.2x at L2 and read "
                    "most of those sectors from DRAM (the input has no byte masks); "
                    "float64 pow reads about 20,000 sectors at L2 more than its code "
                    "(its tables, it seems)",
}

# L2 read sectors of a launch's instruction and constant fetches: base + per byte of SASS
# code, the least-squares line through the fetch microbenchmarks with up to 66 KB of code
# (MEASURED, "code fetches"; tests/test_facts_caches.py fits it again from the data of
# the H100 and the H200).
CODE_FETCH = (890.7, 0.2764)

# Dirty data ncu leaves in L2 before a profiled launch (its memory save and
# restore between passes, it seems): read-only kernels write 2.3 to 2.6 MB to DRAM once
# they have brought more than the L2 into it, nothing below (MEASURED; 2.2 to 2.5 MB
# on the H200).
NCU_DIRTY_AT_START = 2_400_000

# Where L2 stops keeping data, as shares of its capacity: groups re-reading a footprint
# hit L2 for almost all of it up to 0.61 of an H100's 50 MB and for none past 0.83
# (MEASURED, "l2 capacity"; the H200's 60 MB alike, "h200"; tests/test_facts_caches.py
# fits both again from the data).
L2_HIT_FADE = (0.61, 0.83)

# What evaluating one group costs besides its entries, counted against ``budget`` as
# that many entries (group_sectors takes about as long for a group as for 256 entries).
CALL_ENTRIES = 256

GroupSectors = Callable[[int], "tuple[np.ndarray, np.ndarray]"]


@dataclass(frozen=True)
class CacheTraffic:
    """Predicted cache traffic of one launch; sector counts are 32-byte sectors."""

    l1_load_hit_sectors: float
    l2_read_sectors_from_l1: float
    l2_read_sectors: float
    l2_write_sectors: float
    dram_read_bytes: float
    dram_write_bytes: float
    sampled: bool
    groups_simulated: int
    by_array: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    def counters(self) -> dict[str, float]:
        """The prediction under the Nsight Compute metric names it predicts."""
        return {
            "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum": self.l1_load_hit_sectors,
            "lts__t_sectors_srcunit_tex_op_read.sum": self.l2_read_sectors_from_l1,
            "lts__t_sectors_op_read.sum": self.l2_read_sectors,
            "lts__t_sectors_op_write.sum": self.l2_write_sectors,
            "dram__bytes_read.sum": self.dram_read_bytes,
            "dram__bytes_write.sum": self.dram_write_bytes,
        }


# ---------------------------------------------------------------------------------------
# Exact least-recently-used line cache with sector bits


def lru_sector_cache(sectors, stores, capacity_lines: int, sectors_per_line: int = 4,
                     fetch_sectors: int = 1, stores_last: bool = False):
    """Simulate a fully associative LRU cache of lines with per-sector valid and dirty bits.

    ``sectors`` are sector ids in access order, ``stores`` flags the stores (they make
    their sector valid and dirty). A load makes the aligned block of ``fetch_sectors``
    around its sector valid (a miss fetches it; after a hit on a sector a store made
    valid, the block is taken as valid too). A line is evicted whole; a sector miss on a
    present line evicts nothing. ``stores_last``: a run of stores on one line neither
    refreshes it nor enters it as the most recent but as the next to go. Returns
    ``(hit, evicted_dirty, resident_dirty)``: whether each entry's sector was valid, the
    dirty sectors evicted and those left at the end.
    """
    sectors = np.asarray(sectors, dtype=np.int64)
    stores = np.asarray(stores, dtype=bool)
    n = sectors.size
    if capacity_lines < 1:
        raise UsageError(f"a cache needs at least one line, got {capacity_lines}")
    if sectors_per_line % fetch_sectors:
        raise UsageError(f"{fetch_sectors} fetched sectors do not divide a line of "
                         f"{sectors_per_line}")
    if n == 0:
        return np.zeros(0, bool), 0, 0
    lines = sectors // sectors_per_line
    bit = sectors % sectors_per_line
    onehot = np.left_shift(1, bit)
    block = ((1 << fetch_sectors) - 1) << (bit - bit % fetch_sectors)
    fills = np.where(stores, onehot, block)  # the sectors an entry makes valid
    if np.unique(lines).size <= capacity_lines:  # nothing is ever evicted
        order = np.lexsort((np.arange(n), lines))
        hit = np.empty(n, bool)
        hit[order] = _filled_earlier(lines[order], bit[order], fills[order], sectors_per_line)
        return hit, 0, int(np.unique(sectors[stores]).size)
    # Runs of consecutive entries on one line need one dictionary operation.
    start = np.empty(n, bool)
    start[0] = True
    start[1:] = lines[1:] != lines[:-1]
    starts = np.flatnonzero(start)
    shift = sectors_per_line
    masks = np.bitwise_or.reduceat(fills | np.where(stores, onehot << shift, 0), starts)
    only_stores = (np.minimum.reduceat(stores.astype(np.int8), starts) > 0) & stores_last
    old = []
    keep = old.append
    cache: OrderedDict[int, int] = OrderedDict()
    get, to_end, pop = cache.get, cache.move_to_end, cache.popitem
    evicted_dirty = size = 0
    for line, m, last in zip(lines[starts].tolist(), masks.tolist(), only_stores.tolist()):
        v = get(line)
        if v is None:
            keep(0)
            if size < capacity_lines:
                size += 1
            else:
                evicted_dirty += (pop(last=False)[1] >> shift).bit_count()
            cache[line] = m
            if last:
                to_end(line, last=False)
        else:
            keep(v)
            if not last:
                to_end(line)
            cache[line] = v | m
    left = np.fromiter(cache.values(), np.int64, len(cache)) >> shift
    resident_dirty = int(np.unpackbits(left.view(np.uint8)).sum())
    # An entry hits when its sector was valid before its run or filled earlier in it.
    run = np.cumsum(start) - 1
    hit = ((np.asarray(old, dtype=np.int64)[run] >> bit) & 1).astype(bool)
    hit |= _filled_earlier(lines, bit, fills, sectors_per_line)
    return hit, evicted_dirty, resident_dirty


def _filled_earlier(lines, bit, fills, sectors_per_line) -> np.ndarray:
    """Whether an earlier entry of the same run of equal ``lines`` filled each entry's
    sector."""
    n = lines.size
    start = np.ones(n, bool)
    start[1:] = lines[1:] != lines[:-1]
    first = np.maximum.accumulate(np.where(start, np.arange(n), 0))
    out = np.zeros(n, bool)
    for b in range(sectors_per_line):
        on = (fills >> b) & 1
        before = np.cumsum(on) - on
        out |= (bit == b) & (before > before[first])
    return out


# ---------------------------------------------------------------------------------------
# Streams, timing and sides


class _Launch:
    """The groups of a launch, evaluated on demand and remembered."""

    def __init__(self, group_sectors: GroupSectors, num_groups: int, wave_groups: int,
                 spl: int, sides: np.ndarray):
        self.fn = group_sectors
        self.num_groups = num_groups
        self.wave_groups = wave_groups
        self.spl = spl
        self.sides = sides  # the L2 partition each SM sits by
        self.raw: dict[int, tuple[np.ndarray, ...]] = {}
        self.weighted = False  # whether some entry stands for more than itself

    def __call__(self, g: int) -> tuple[np.ndarray, ...]:
        """Group ``g``'s load sectors, store sectors, and how many entries each stands for."""
        got = self.raw.get(g)
        if got is None:
            parts = self.fn(g)
            loads, stores = (np.asarray(p, dtype=np.int64).ravel() for p in parts[:2])
            if len(parts) > 2:
                weights = [np.asarray(p, dtype=float).ravel() for p in parts[2:4]]
                self.weighted |= any(bool((w != 1).any()) for w in weights)
            else:
                weights = [np.ones(loads.size), np.ones(stores.size)]
            got = self.raw[g] = (loads, stores, *weights)
        return got

    def counts(self, groups: Sequence[int]) -> tuple[int, int]:
        """Load and store entries of ``groups`` (the work of evaluating them)."""
        return (sum(self(g)[0].size for g in groups), sum(self(g)[1].size for g in groups))

    def weighted_counts(self, groups: Sequence[int]) -> tuple[float, float]:
        """Load and store sectors of ``groups``, each entry counted as what it stands for."""
        return (sum(float(self(g)[2].sum()) for g in groups),
                sum(float(self(g)[3].sum()) for g in groups))

    def side(self, groups: np.ndarray) -> np.ndarray:
        return self.sides[np.asarray(groups) % self.sides.size]

    def _timed(self, groups: Sequence[int]):
        """Entries of ``groups`` group by group: sector, store flag, time, group, index,
        weight (the entries it stands for).

        A group's loads and its stores are each spread evenly over its time unit, each
        entry taking the time of the entries it stands for; consecutive entries on one
        line (a request's sectors) keep the time of the first."""
        parts = [self(g) for g in groups]
        sizes = np.array([[p[0].size, p[1].size] for p in parts], np.int64).reshape(-1)
        empty = np.zeros(0, np.int64)
        sec = np.concatenate([a for p in parts for a in p[:2]]) if parts else empty
        weight = np.concatenate([a for p in parts for a in p[2:]]) if parts else empty * 1.0
        seg = np.repeat(np.arange(sizes.size), sizes)
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        within = np.arange(sec.size) - starts[seg]
        total = np.bincount(seg, weights=weight, minlength=sizes.size)
        before = (np.cumsum(total) - total)[seg]
        line = sec // self.spl
        first = np.ones(sec.size, bool)
        first[1:] = (line[1:] != line[:-1]) | (seg[1:] != seg[:-1])
        run_start = np.maximum.accumulate(np.where(first, np.arange(sec.size), 0))
        phase = ((np.cumsum(weight) - weight / 2 - before)
                 / np.maximum(total[seg], 1e-300))[run_start]
        grp = np.asarray(groups, np.int64)[seg // 2]
        return sec, (seg % 2).astype(bool), self.start(grp) + phase, grp, within, weight

    def start(self, groups: np.ndarray) -> np.ndarray:
        """When each group starts: ``g / W`` for ``W`` groups a wave (in the steady state
        a group starts whenever one ends)."""
        return np.asarray(groups, np.int64) / self.wave_groups

    def entries(self, groups: Sequence[int]):
        """The entries of ``groups`` in time order (ties: lower group, loads, the group's
        own order): sector, store flag, time, group, weight."""
        sec, store, t, grp, within, weight = self._timed(groups)
        order = np.lexsort((within, store, grp, t))
        return sec[order], store[order], t[order], grp[order], weight[order]

    def first_touches(self, groups: Sequence[int], units: Sequence[int], one_in: int = 1):
        """For each block size in ``units`` (sectors), each group's first touch of each
        block it touches: block, store flag, time, group, weight (of the touching entry:
        a stretch of a long loop stands for the blocks of the whole). ``one_in``: only on
        the loaded lines a hash keeps one in that many of (stores all kept)."""
        sec, store, t, grp, within, weight = self._timed(groups)
        if one_in > 1:
            with np.errstate(over="ignore"):
                mixed = (sec // self.spl).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
            keep = store | ((mixed >> np.uint64(40)) % np.uint64(one_in) == 0)
            sec, store, t, grp, within, weight = (a[keep] for a in (sec, store, t, grp,
                                                                     within, weight))
        by_time = np.lexsort((within, store, t, grp))
        sec, store, t, grp, weight = (a[by_time] for a in (sec, store, t, grp, weight))
        out = []
        for unit in units:
            block = sec // unit
            order = np.lexsort((block, grp))  # stable: the earliest touch comes first
            keep = np.ones(order.size, bool)
            keep[1:] = ((block[order][1:] != block[order][:-1])
                        | (grp[order][1:] != grp[order][:-1]))
            order = order[keep]
            out.append((block[order], store[order], t[order], grp[order], weight[order]))
        return out


def _sm_groups(sm: int, wave: int, sms: int, per_sm: int, num_groups: int) -> list[int]:
    base = wave * sms * per_sm + sm
    return [g for g in range(base, base + per_sm * sms, sms) if g < num_groups]


def _l1(launch: _Launch, groups: Sequence[int], l1_lines: int, most: int | None = None,
        own: tuple[int, int] | None = None):
    """One SM's L1 over its groups: its loads' sector, time, group, hit, whether the
    hit counts, and weight. ``most``: simulate about that many entries of the SM's stream
    (a time slice, every group the SM holds then taking its part), those nearest in time
    to the middle load of the groups ``own`` (first, last) or of all, the first four
    L1s' worth of the slice only to fill L1."""
    if most is None or sum(launch.counts(groups)) <= most:
        sec, st, t, grp, weight = launch.entries(groups)
        scored = np.ones(sec.size, bool)
    else:
        sec, st, t, grp, within, weight = launch._timed(groups)
        mine = ~st if own is None else ~st & (grp >= own[0]) & (grp <= own[1])
        times = t[mine] if mine.any() else t
        centre = np.partition(times, times.size // 2)[times.size // 2]
        near = np.argpartition(np.abs(t - centre), most - 1)[:most]
        near = near[np.lexsort((within[near], st[near], grp[near], t[near]))]
        sec, st, t, grp, weight = (a[near] for a in (sec, st, t, grp, weight))
        scored = np.arange(most) >= min(4 * l1_lines * launch.spl, most // 2)
    hit, _, _ = lru_sector_cache(sec, st, l1_lines, launch.spl, stores_last=True)
    loads = ~st
    return sec[loads], t[loads], grp[loads], hit[loads], scored[loads], weight[loads]


# ---------------------------------------------------------------------------------------
# The model


def cache_traffic(group_sectors: GroupSectors, num_groups: int, *, sms: int,
                  groups_per_sm: int, l1_bytes: int, l2_bytes: int, sector_bytes: int = 32,
                  line_bytes: int = 128, dram_fetch_bytes: int = 64, l2_partitions: int = 2,
                  cold: bool = True, writeback_at_end: bool = False,
                  dirty_at_start_bytes: int = NCU_DIRTY_AT_START,
                  l2_hit_fade: tuple[float, float] = L2_HIT_FADE,
                  grid: Sequence[int] | None = None,
                  load_sectors_total: float | None = None,
                  store_sectors_total: float | None = None,
                  ranges: Mapping[str, tuple[int, int]] | None = None,
                  budget: int = 200_000, seed: int = 0) -> CacheTraffic:
    """Predict the L1, L2 and DRAM traffic of one launch of ``num_groups`` work-groups.

    ``group_sectors(g)`` returns ``(load_sectors, store_sectors)`` of group ``g``;
    ``l1_bytes`` is an SM's L1 after the shared-memory carveout and ``l2_bytes`` the whole
    L2 (``l2_partitions`` partitions); ``dram_fetch_bytes`` is the block an L2 miss reads
    (64 on H100, ``MEASURED``). ``cold``: L2 empty at the start (ncu's default), else
    holding what the same launch left; ``writeback_at_end`` and ``dirty_at_start_bytes`` as
    in the module's notes. ``grid`` (groups along each launch axis, axis 0 fastest) lets a
    sampled launch find the groups that share data; ``load_sectors_total`` and
    ``store_sectors_total`` (the launch's, when known) scale a sample; ``ranges`` (array
    name -> [first, end) sector ids) adds a per-array breakdown; ``budget`` bounds the
    work (sector entries, each group evaluated counting ``CALL_ENTRIES``); ``seed`` fixes
    the sample and the SMs' sides.
    """
    for name, v in (("num_groups", num_groups), ("sms", sms), ("groups_per_sm", groups_per_sm),
                    ("l1_bytes", l1_bytes), ("l2_bytes", l2_bytes),
                    ("sector_bytes", sector_bytes), ("line_bytes", line_bytes),
                    ("dram_fetch_bytes", dram_fetch_bytes), ("l2_partitions", l2_partitions),
                    ("budget", budget)):
        if not isinstance(v, (int, np.integer)) or v < 1:
            raise UsageError(f"{name} must be a positive integer, got {v!r}")
    if line_bytes % dram_fetch_bytes or dram_fetch_bytes % sector_bytes:
        raise UsageError(f"sectors ({sector_bytes} B), DRAM blocks ({dram_fetch_bytes} B) "
                         f"and lines ({line_bytes} B) must each divide the next")
    if min(l1_bytes, l2_bytes) < line_bytes:
        raise UsageError("l1_bytes and l2_bytes must hold at least one line")
    if not 0 <= l2_hit_fade[0] < l2_hit_fade[1]:
        raise UsageError(f"l2_hit_fade must rise from 0 or more, got {l2_hit_fade}")
    if dirty_at_start_bytes < 0:
        raise UsageError(f"dirty_at_start_bytes must be >= 0, got {dirty_at_start_bytes}")
    far = (l2_partitions - 1) / l2_partitions  # the share of data homed in another partition
    model = _Model(
        spl=line_bytes // sector_bytes, fetch=dram_fetch_bytes // sector_bytes,
        l1_lines=l1_bytes // line_bytes,
        l2_lines=max(1, int(l2_bytes / line_bytes / (1 + far))), far=far,
        sector_bytes=sector_bytes, cold=cold, writeback_at_end=writeback_at_end,
        dirty_at_start=dirty_at_start_bytes, l2_bytes=l2_bytes, fade=tuple(l2_hit_fade),
        ranges=ranges)
    sides = np.random.default_rng(seed).integers(0, l2_partitions, sms)
    launch = _Launch(group_sectors, num_groups, sms * groups_per_sm, model.spl, sides)
    pilot = sorted({0, num_groups // 2, num_groups - 1})  # how long a group's stream is
    per_group = sum(launch.counts(pilot)) / len(pilot)
    if (per_group + CALL_ENTRIES) * num_groups <= budget and not launch.weighted:
        return model.exact(launch, sms, groups_per_sm)
    streamed = sum(launch.weighted_counts(pilot)) / len(pilot)  # what a stream stands for
    return model.sampled(launch, sms, groups_per_sm, grid=grid, per_group=per_group,
                         streamed=streamed, budget=budget, load_total=load_sectors_total,
                         store_total=store_sectors_total, rng=np.random.default_rng(seed))


def _breakdown(ranges, parts: dict[str, tuple[np.ndarray, np.ndarray | float]]):
    """Per-array sums: ``parts`` maps a quantity to (sector ids, weight of each)."""
    if not ranges:
        return {}
    names = list(ranges)
    lo = np.array([ranges[k][0] for k in names], np.int64)
    hi = np.array([ranges[k][1] for k in names], np.int64)
    by_lo = np.argsort(lo)
    out: dict[str, dict[str, float]] = {k: {} for k in names}
    for quantity, (sec, weight) in parts.items():
        i = np.clip(np.searchsorted(lo[by_lo], sec, side="right") - 1, 0, None)
        idx = np.where((sec >= lo[by_lo][i]) & (sec < hi[by_lo][i]), by_lo[i], len(names))
        w = np.broadcast_to(np.asarray(weight, float), sec.shape)
        sums = np.bincount(idx, weights=w, minlength=len(names) + 1)
        for j, name in enumerate(names):
            out[name][quantity] = float(sums[j])
    return out


@dataclass
class _Model:
    spl: int  # sectors per line
    fetch: int  # sectors per DRAM block
    l1_lines: int
    l2_lines: int  # the lines L2 holds once far data's copies are taken out
    far: float
    sector_bytes: int
    cold: bool
    writeback_at_end: bool
    dirty_at_start: int
    l2_bytes: int
    fade: tuple[float, float]
    ranges: Mapping[str, tuple[int, int]] | None

    def _flushed(self, brought: float) -> float:
        """The dirty bytes L2 held before the launch that it writes back, having brought
        ``brought`` bytes in."""
        share = (brought * (1 + self.far) / self.l2_bytes - 0.6) / 0.4
        return self.dirty_at_start * min(1.0, max(0.0, share))

    def exact(self, launch: _Launch, sms: int, per_sm: int) -> CacheTraffic:
        G = launch.num_groups
        waves = -(-G // launch.wave_groups)
        parts, hits = [], 0
        for sm in range(min(sms, G)):
            groups = [g for w in range(waves) for g in _sm_groups(sm, w, sms, per_sm, G)]
            sec, t, grp, hit, _, _ = _l1(launch, groups, self.l1_lines)
            hits += int(hit.sum())
            parts.append((sec[~hit], t[~hit], grp[~hit], np.zeros(int((~hit).sum()), bool)))
        sec, st, t, grp, _ = launch.entries(range(G))
        parts.append((sec[st], t[st], grp[st], st[st]))
        sec, t, grp, is_store = (np.concatenate([p[i] for p in parts]) for i in range(4))
        order = np.lexsort((grp, t))
        sec, grp, is_store = sec[order], grp[order], is_store[order]
        lines = self.l2_lines
        if self.cold:
            hit2, evicted, resident = lru_sector_cache(sec, is_store, lines, self.spl,
                                                       self.fetch)
        else:  # a warm L2: the same launch ran just before
            both = lru_sector_cache(np.concatenate((sec, sec)),
                                    np.concatenate((is_store, is_store)), lines, self.spl,
                                    self.fetch)
            hit2 = both[0][sec.size:]
            _, evicted, resident = lru_sector_cache(sec, is_store, lines, self.spl, self.fetch)
        loads = ~is_store
        read_miss = loads & ~hit2
        # Far data read through the near partition: blocks that miss the near copy.
        block = sec[loads] // self.fetch
        side = launch.side(grp[loads])
        near_hit, _, _ = lru_sector_cache(block * self.spl + side, np.zeros(block.size, bool),
                                          lines, self.spl)
        n_loads, n_stores = launch.counts(range(G))
        from_l1 = n_loads - hits
        fabric_reads = self.far * self.fetch * int((~near_hit).sum())
        written = evicted + (resident if self.writeback_at_end else 0)
        brought = (read_miss.sum() * self.fetch + np.unique(sec[is_store]).size) \
            * self.sector_bytes
        return CacheTraffic(
            l1_load_hit_sectors=float(hits), l2_read_sectors_from_l1=float(from_l1),
            l2_read_sectors=float(from_l1 + fabric_reads),
            l2_write_sectors=float(n_stores * (1 + self.far)),
            dram_read_bytes=float(read_miss.sum() * self.fetch * self.sector_bytes),
            dram_write_bytes=float(written * self.sector_bytes + self._flushed(brought)),
            sampled=False,
            groups_simulated=G, by_array=_breakdown(self.ranges, {
                "l2_read_sectors_from_l1": (sec[loads], 1.0),
                "store_sectors": (sec[is_store], 1.0),
                "dram_read_bytes": (sec[read_miss], float(self.fetch * self.sector_bytes))}))

    def sampled(self, launch: _Launch, sms: int, per_sm: int, *, grid, per_group, streamed,
                budget, load_total, store_total, rng) -> CacheTraffic:
        G, W, spl, fetch = launch.num_groups, launch.wave_groups, self.spl, self.fetch
        waves = -(-G // W)
        lags = _probe_lags(grid, G)
        # Half the budget for L1, half for the spread groups with their probes. L1 in two
        # strata: the first waves, where L1 fills (whole SMs from the start), and the rest
        # (units: an SM's groups of one wave, after the SM's previous waves that stream an
        # L1's worth of sectors, at most 16, none where one group alone fills L1).
        l1_sectors = self.l1_lines * spl
        warm_waves = (min(16, math.ceil(l1_sectors / (per_sm * max(streamed, 1))))
                      if streamed < l1_sectors else 0)
        filling = min(waves, warm_waves + 1)
        wave_cost = per_sm * (per_group + CALL_ENTRIES)
        n_fill = max(1, int(budget / 6 // ((filling + 1) * wave_cost)))
        n_units = int(budget / 3 // ((2 + warm_waves) * wave_cost)) if filling < waves else 0
        spans = [(int(sm), 0, filling) for sm in rng.choice(min(sms, G), min(n_fill, sms, G),
                                                             replace=False)]
        spans += [(sm, w, w + 1) for sm, w in _units(G, waves - filling, sms, per_sm,
                                                     n_units, rng, first=filling)]
        most = max(int(budget / 2 / len(spans)), 16 * l1_sectors)
        spread, weights = _strata(grid, G, int(budget / 2 // (
            (1 + 2 * len(lags)) * (per_group + CALL_ENTRIES))), rng)

        counted: list[int] = []
        stratum_groups = [min(G, filling * W), max(0, G - filling * W)]
        tallies = np.zeros((2, 3))  # per stratum: counted groups, L1 loads, L1 hits
        misses = []  # (sector, time, group) of the counted groups' L1 misses
        for sm, first, end in spans:
            own = [g for v in range(first, end) for g in _sm_groups(sm, v, sms, per_sm, G)]
            if not own:
                continue
            warm = [g for v in range(max(0, first - warm_waves), first)
                    for g in _sm_groups(sm, v, sms, per_sm, G)]
            after = _sm_groups(sm, end, sms, per_sm, G)  # they start as own groups end
            sec, t, grp, hit, scored, weight = _l1(launch, warm + own + after, self.l1_lines,
                                                   most, (own[0], own[-1]))
            scored &= (grp >= own[0]) & (grp <= own[-1])
            take = scored & ~hit
            tallies[int(first > 0)] += (len(own), weight[scored].sum(),
                                        weight[hit & scored].sum())
            counted += own
            misses.append((sec[take], t[take], grp[take], weight[take]))
        # L1 hits per load, each stratum standing for its groups
        per_group_tally = tallies[:, 1:] / np.maximum(tallies[:, :1], 1)
        l1_loads, l1_hits = (np.asarray(stratum_groups)[:, None] * per_group_tally).sum(0)
        m_sec, m_t, m_grp, m_w = (np.concatenate([m[i] for m in misses]) for i in range(4))

        # Spread groups and their probes (one step back along each launch axis, and
        # forward within the wave, since a later group of the wave can come first): the
        # first touch of each block, and its reuse time across groups.
        near = {g - lag for g in spread for lag in lags} | {
            g + lag for g in spread for lag in lags if (g + lag) // W == g // W}
        groups = sorted(h for h in near | set(spread) if 0 <= h < G)
        keys = np.array(spread, np.int64)
        by_key = np.argsort(keys)
        # Past half the budget, follow only the loaded lines a hash keeps (Waldspurger et
        # al.'s spatial sampling, "Efficient MRC construction with SHARDS", FAST 2015).
        one_in = max(1, math.ceil(sum(launch.counts(groups)) / (budget / 2)))

        found = launch.first_touches(groups, (spl, fetch, 1), one_in)

        def touches(which):
            blk, st, t, grp, stands = found[which]
            at = by_key[np.clip(np.searchsorted(keys[by_key], grp), 0, keys.size - 1)]
            weight = np.where(keys[at] == grp, np.asarray(weights)[at], 0.0)
            return blk, st, t, grp, weight * np.where(st, 1, one_in) * stands

        def reuse(key, t, grp):
            """Time since the previous touch of the same key (lower group first at a tie)."""
            order = np.lexsort((grp, t, key))
            rt = np.full(key.size, np.inf)
            same = key[order][1:] == key[order][:-1]
            rt[order[1:][same]] = np.diff(t[order])[same]
            return rt

        again = np.inf if self.cold else float(waves)  # a warm L2 saw it a launch ago
        line, _, t_l, grp_l, w_l = touches(0)
        rt_line = np.where(np.isinf(r := reuse(line, t_l, grp_l)), again, r)
        inside = w_l > 0
        rate = min(W, G) * w_l.sum() / sum(weights)  # new lines per time unit
        window = _footprint_window(rt_line[inside], w_l[inside], rate, self.l2_lines)

        blk, st_b, t_b, grp_b, w_b = touches(1)
        rt_blk = np.where(np.isinf(r := reuse(blk, t_b, grp_b)), again, r)
        # An L2 read misses as the data between its two touches grows from fade[0] to
        # fade[1] of L2 (the footprint of a window as long as its reuse time).
        between = _footprint(_footprint_curve(rt_line[inside], w_l[inside]), rate, rt_blk) \
            if inside.any() else np.full(blk.size, np.inf)
        lo, hi = self.fade
        share = between * spl * self.sector_bytes / self.l2_bytes
        p_miss = np.where(np.isinf(between), 1.0, np.clip((share - lo) / (hi - lo), 0.0, 1.0))
        read_miss = (w_b > 0) & ~st_b & (p_miss > 0)
        # A block first read in the launch is read through the near partition of every
        # side that reads it: of P sides, P(1 - (1 - 1/P)^k) are expected among k readers
        # (counted among the groups evaluated nearby); one read again after it left L2,
        # of the reader's side alone.
        _, readers = np.unique(blk, return_inverse=True)
        readers = np.bincount(readers)[readers]
        parts = round(1 / (1 - self.far)) if self.far < 1 else 1
        sides = np.where(np.isinf(rt_blk), parts * (1 - (1 - 1 / parts) ** readers), 1.0)
        fabric_reads = self.far * fetch * (w_b * sides * p_miss)[read_miss].sum()

        sec, st_s, t_s, grp_s, w_s = touches(2)
        rt_sec = reuse(sec, t_s, grp_s)
        written = (w_s > 0) & st_s & np.isinf(rt_sec) & (self.writeback_at_end
                                                         | (waves - t_s > window))
        # A counted group reading its own sector again after the window.
        order = np.lexsort((m_t, m_sec, m_grp))
        back = np.zeros(m_sec.size, bool)
        same = (m_sec[order][1:] == m_sec[order][:-1]) & (m_grp[order][1:] == m_grp[order][:-1])
        back[order[1:][same]] = np.diff(m_t[order])[same] >= window

        n_load, n_store = launch.weighted_counts(counted)
        scale = G / max(len(counted), 1)
        loads_all = load_total if load_total is not None else n_load * scale
        stores_all = store_total if store_total is not None else n_store * scale
        hits = (l1_hits / l1_loads if l1_loads else 0.0) * loads_all
        from_l1 = loads_all - hits
        per_miss = from_l1 / m_w.sum() if m_sec.size else 0.0
        dram_blocks = (w_b * p_miss)[read_miss].sum() + m_w[back].sum() * per_miss
        block_bytes = fetch * self.sector_bytes
        first_writes = w_s[(w_s > 0) & st_s & np.isinf(rt_sec)].sum() * self.sector_bytes
        by_array = _breakdown(self.ranges, {
            "l2_read_sectors_from_l1": (m_sec, per_miss * m_w),
            "dram_read_bytes": (np.concatenate((blk[read_miss] * fetch, m_sec[back])),
                                np.concatenate(((w_b * p_miss)[read_miss],
                                                per_miss * m_w[back])) * block_bytes)})
        return CacheTraffic(
            l1_load_hit_sectors=float(hits), l2_read_sectors_from_l1=float(from_l1),
            l2_read_sectors=float(from_l1 + fabric_reads),
            l2_write_sectors=float(stores_all * (1 + self.far)),
            dram_read_bytes=float(dram_blocks * block_bytes),
            dram_write_bytes=float(w_s[written].sum() * self.sector_bytes
                                   + self._flushed(dram_blocks * block_bytes + first_writes)),
            sampled=True, groups_simulated=len(launch.raw), by_array=by_array)


def _probe_lags(grid, num_groups) -> list[int]:
    """Launch-order distances of one step along each launch axis."""
    lags, step = [], 1
    for extent in (grid or (num_groups,)):
        if step < num_groups:
            lags.append(step)
        step *= int(extent)
    return sorted(set(lags))


def _units(num_groups, waves, sms, per_sm, count, rng, first=0):
    """(sm, wave) pairs: the middle waves of ``count`` equal shares of the ``waves`` waves
    from ``first`` on (each standing for its share), on distinct SMs drawn at random
    within a wave."""
    if waves < 1:
        return []
    count = max(1, count)
    middles = ((np.arange(count) + 0.5) * waves / count).astype(int)
    per_wave = np.bincount(middles, minlength=waves)
    units = []
    for k in np.flatnonzero(per_wave):
        w = int(k) + first
        in_wave = min(sms, num_groups - w * sms * per_sm)
        for sm in rng.choice(in_wave, min(in_wave, int(per_wave[k])), replace=False):
            units.append((int(sm), w))
    return units


def _footprint_curve(rt: np.ndarray, weight: np.ndarray):
    """The knots of ``w -> E[min(rt, w)]`` (the mean weighted by ``weight``), piecewise
    linear: at the k-th smallest reuse time, the weighted sum of the smaller ones plus
    ``w`` times the weight of the rest; past the last finite one, slope ``rest``."""
    order = np.argsort(rt)
    rt, weight = rt[order], weight[order] / weight.sum()
    finite = np.isfinite(rt)
    knots = np.concatenate(([0.0], rt[finite]))
    below = np.concatenate(([0.0], np.cumsum(rt[finite] * weight[finite])))
    rest = np.clip(1.0 - np.concatenate(([0.0], np.cumsum(weight[finite]))), 0.0, None)
    return knots, below + knots * rest, rest[-1]


def _footprint(curve, rate: float, w: np.ndarray) -> np.ndarray:
    """The average footprint ``rate * E[min(rt, w)]`` of windows ``w`` (inf: inf)."""
    knots, values, slope = curve
    w = np.asarray(w, float)
    finite = np.isfinite(w)
    past = np.where(finite, np.maximum(w - knots[-1], 0.0), 0.0)
    out = rate * (np.interp(np.minimum(w, knots[-1]), knots, values) + slope * past)
    return np.where(finite | (slope <= 0), out, np.inf)


def _footprint_window(rt: np.ndarray, weight: np.ndarray, rate: float, capacity: float) -> float:
    """The window length ``w`` whose average footprint ``rate * E[min(rt, w)]`` (the mean
    weighted by ``weight``) is ``capacity``: footprint theory's cache-filling window."""
    if rt.size == 0 or rate <= 0:
        return math.inf
    knots, values, slope = _footprint_curve(rt, weight)
    target = capacity / rate
    if target <= values[-1]:
        return float(np.interp(target, values, knots))
    return knots[-1] + (target - values[-1]) / slope if slope > 1e-12 else math.inf


def _strata(grid, num_groups, count, rng, longest_run=8):
    """About ``count`` groups spread over the launch, with their weights.

    Along each launch axis the first and the last position are strata of their own (edge
    groups differ: they own halos and first touches) and the rest one stratum; each
    stratum gets one draw and the all-interior one the remaining draws, placed as a Latin
    hypercube (evenly spread along every axis). When the count allows eight draws a
    stratum, a draw is a run of up to ``longest_run`` neighbours along axis 0, so that
    lines shared by neighbours are seen whole.
    """
    extents = [int(e) for e in (grid or (num_groups,))]
    if math.prod(extents) != num_groups:
        extents = [num_groups]
    axes = [[(0, 1)] + ([(e - 1, e)] if e > 1 else []) + ([(1, e - 1)] if e > 2 else [])
            for e in extents]
    n_strata = math.prod(len(a) for a in axes)
    run = max(1, min(longest_run, count // (8 * n_strata)))
    spare = max(count - n_strata * run, 0) // run
    groups, weights = [], []
    for stratum in itertools.product(*axes):
        spans = [hi - lo for lo, hi in stratum]
        size = math.prod(spans)
        inner = all(lo == 1 and hi - lo > 1 for lo, hi in stratum)
        length = min(run, spans[0])
        draws = min(size // length, 1 + (spare if inner else 0))
        starts = [spans[0] - length + 1] + spans[1:]
        coords = [lo + ((rng.permutation(draws) + rng.random(draws)) * span / draws)
                  .astype(np.int64) for (lo, _), span in zip(stratum, starts)]
        picked = {sum(int(c[i]) * math.prod(extents[:a]) for a, c in enumerate(coords)) + j
                  for i in range(draws) for j in range(length)}
        for g in sorted(picked):
            groups.append(g)
            weights.append(size / len(picked))
    return groups, weights
