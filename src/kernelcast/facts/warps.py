"""Warp-level memory requests, 32-byte sectors and shared-memory wavefronts of one launch.

What Nsight Compute counts for a launch's memory instructions, predicted from the lanes'
addresses (kernelcast.facts.lanes), per access site and in total:

- a request (``l1tex__t_requests_pipe_lsu_mem_global_op_{ld,st}.sum``, and the shared
  memory instructions executed) is one warp-level instance of a memory instruction with at
  least one active lane (a vector access is one request);
- the sectors of a global request (``l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st}.sum``)
  are the distinct 32-byte aligned sectors that the active lanes' bytes touch (CUDA C++
  Best Practices Guide, "Coalesced Access to Global Memory"; Kernel Profiling Guide,
  "Memory Tables": a sector is 32 bytes): a broadcast is one sector;
- the wavefronts of a shared request (``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_
  {ld,st}.sum``): shared memory has 32 banks of 4-byte words and delivers one word per bank
  per wavefront, lanes reading the same word share it (CUDA C++ Programming Guide,
  compute capability 5.x and later, "Shared Memory"). Its data path returns 128 bytes a
  wavefront, so a 64-bit access serves the warp in halves (lanes 16k..16k+15) and a
  128-bit access in quarters (8k..8k+7), each phase taking as many wavefronts as the most
  distinct words one bank holds among its active lanes; a phase without an active lane
  takes none. A 128-bit access whose lane pairs n, n^1 (or n, n^2) share their addresses
  is served in halves (NVIDIA developer forum, "Unexpected shared memory bank conflict":
  such LDS.128 take 2 wavefronts, not 4). So 32 consecutive doubles take 2 wavefronts,
  a float4 broadcast 2. These rules reproduce the H100 profiles of the suite (matmul_tiled
  in float32 and float64 with its LDS.128 and LDS.64, the transposes' padded and unpadded
  tiles) within 2%.

Counting (``warp_traffic``): for a site whose address is affine in the inames, a request's
count depends only on which lanes are active and on its base address modulo the sector
(global) or the 128-byte bank row (shared); each group's instances are sorted into those
classes and one request of each is counted, so any loop length is exact. Other sites
(``%``, ``&``, an index drawn from data) are counted request by request, over an evenly
spread subset of the instances where an instruction has more than *max_addresses* lane
instances in a group (likewise an activity mask mixing lanes and instances, as ``i !=
j`` makes). Groups are split into strata: per grid axis the first group, the last (edge
groups differ under guards) and the interior ones. Every group is counted where the
launch has at most *max_groups*. Otherwise, where isl shows that an instruction's domain
is the same at every group of a stratum and the site's address there does not read the
group index or is affine in it, groups differ only by an address shift, and one group per
residue of that shift (modulo the sector or bank row) stands for all groups of its
residue, weighted by their number: exact. The remaining sites are counted at evenly spread
groups of each stratum, scaled by the stratum's size, and marked not exact.

Loads that the compiler is known to change are counted as the source has them and marked
instead: ``Site.repeats`` (a lane reading the same element again: nvcc reuses the first
load; ``merge_repeats`` leaves them out of the totals), and ``vector_merges`` (shared loads
nvcc is expected to vectorize, by a stated heuristic; counted so through *merges*).

``group_sectors`` gives one group's global sector stream for the cache model.

Public names: warp_traffic, group_sectors, warp_sectors, warp_wavefronts,
vector_merges, SiteTraffic, WarpTraffic, COUNTERS.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from kernelcast.errors import UsageError
from kernelcast.facts.lanes import LaunchTrace, Site, hoisted_values

#: Nsight Compute counters predicted, keyed by (space, direction, quantity).
COUNTERS = {
    ("global", "load", "requests"): "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    ("global", "store", "requests"): "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    ("global", "load", "sectors"): "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    ("global", "store", "sectors"): "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    ("global", "load", "instructions"): "smsp__sass_inst_executed_op_global_ld.sum",
    ("global", "store", "instructions"): "smsp__sass_inst_executed_op_global_st.sum",
    ("local", "load", "instructions"): "smsp__sass_inst_executed_op_shared_ld.sum",
    ("local", "store", "instructions"): "smsp__sass_inst_executed_op_shared_st.sum",
    ("local", "load", "wavefronts"): "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    ("local", "store", "wavefronts"): "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
}


# {{{ one warp

def _warps(addresses: np.ndarray, warp_size: int) -> np.ndarray:
    """(rows, lanes) -> (rows, warps, warp_size), the last warp padded with -1."""
    addresses = np.asarray(addresses, dtype=np.int64)
    if addresses.ndim == 1:
        addresses = addresses[None, :]
    rows, lanes = addresses.shape
    warps = -(-lanes // warp_size)
    if warps * warp_size != lanes:
        addresses = np.pad(addresses, ((0, 0), (0, warps * warp_size - lanes)),
                           constant_values=-1)
    return addresses.reshape(rows, warps, warp_size)


def _units(lanes: np.ndarray, access_bytes: int, unit: int) -> np.ndarray:
    """The *unit*-byte blocks each lane's access touches, along the last axis (-1 where
    inactive): (..., lanes) -> (..., lanes × blocks per access)."""
    first = np.where(lanes >= 0, lanes // unit, -1)
    span = -(-(access_bytes + unit - 1) // unit) if access_bytes > 1 else 1
    last = np.where(lanes >= 0, (lanes + access_bytes - 1) // unit, -1)
    if span == 1 or np.all(last == first):
        return first
    parts = [np.where((first >= 0) & (first + k <= last), first + k, -1) for k in range(span)]
    return np.stack(parts, axis=-1).reshape(*lanes.shape[:-1], -1)


def _distinct(values: np.ndarray) -> np.ndarray:
    """Distinct non-negative values along the last axis."""
    s = np.sort(values, axis=-1)
    new = s >= 0
    new[..., 1:] &= s[..., 1:] != s[..., :-1]
    return new.sum(axis=-1)


def warp_sectors(addresses, access_bytes: int, *, sector_bytes: int = 32,
                 warp_size: int = 32) -> np.ndarray:
    """Distinct *sector_bytes* sectors each warp's request touches: *addresses* (rows,
    lanes) of byte addresses, -1 for an inactive lane -> int array (rows, warps)."""
    lanes = _warps(addresses, warp_size)
    return _distinct(_units(lanes, int(access_bytes), int(sector_bytes)))


def warp_wavefronts(addresses, access_bytes: int, *, banks: int = 32,
                    warp_size: int = 32) -> np.ndarray:
    """Shared-memory wavefronts of each warp's request (see the module docstring):
    *addresses* (rows, lanes) of byte addresses, -1 inactive -> int array (rows, warps)."""
    lanes = _warps(addresses, warp_size)
    access_bytes = int(access_bytes)
    per_phase = min(warp_size, max(1, banks * 4 // max(access_bytes, 4)))
    out = _phase_wavefronts(lanes, access_bytes, per_phase, banks)
    if per_phase * 2 <= warp_size and access_bytes > 8:
        paired = _paired(lanes, 1) | _paired(lanes, 2)
        if paired.any():
            out = np.where(paired, _phase_wavefronts(lanes, access_bytes, 2 * per_phase,
                                                     banks), out)
    return out


def _paired(lanes: np.ndarray, distance: int) -> np.ndarray:
    """Per warp: whether lanes n and n ^ *distance* ask for the same address wherever both
    are active."""
    rows, warps, size = lanes.shape
    if size % (2 * distance):
        return np.zeros((rows, warps), bool)
    pairs = lanes.reshape(rows, warps, size // (2 * distance), 2, distance)
    a, b = pairs[..., 0, :], pairs[..., 1, :]
    return ((a == b) | (a < 0) | (b < 0)).all(axis=(-2, -1))


def _phase_wavefronts(lanes: np.ndarray, access_bytes: int, per_phase: int, banks: int
                      ) -> np.ndarray:
    """Wavefronts per warp, its lanes served *per_phase* at a time."""
    rows, warps, size = lanes.shape
    phases = -(-size // per_phase)
    if phases * per_phase != size:
        lanes = np.pad(lanes, ((0, 0), (0, 0), (0, phases * per_phase - size)),
                       constant_values=-1)
    words = _units(lanes.reshape(rows, warps, phases, per_phase), access_bytes, 4)
    words = np.sort(words, axis=-1)
    first = words >= 0
    first[..., 1:] &= words[..., 1:] != words[..., :-1]
    flat = words.reshape(-1, words.shape[-1])
    keep = first.reshape(flat.shape)
    row = np.broadcast_to(np.arange(flat.shape[0])[:, None], flat.shape)
    per_bank = np.bincount((row[keep] * banks + flat[keep] % banks),
                           minlength=flat.shape[0] * banks).reshape(-1, banks)
    return per_bank.max(axis=1).reshape(rows, warps, phases).sum(axis=-1)

# }}}


@dataclass(frozen=True)
class SiteTraffic:
    """One site over the launch: ``instances`` of its instruction (per group, summed over
    groups), warp ``requests``, global ``sectors`` or shared ``wavefronts``, lane
    ``accesses`` (active lanes summed over requests) of ``access_bytes`` each, and
    whether the numbers are exact or scaled from samples."""

    site: Site
    instances: float
    requests: float
    sectors: float
    wavefronts: float
    accesses: float
    access_bytes: int
    exact: bool

    @property
    def sectors_per_request(self) -> float:
        """Mean sectors (global) or wavefronts (shared) per request."""
        units = self.sectors if self.site.space == "global" else self.wavefronts
        return units / self.requests if self.requests else 0.0


@dataclass(frozen=True)
class WarpTraffic:
    """Every site's traffic over one launch; ``groups`` in the launch, ``groups_counted``
    evaluated (all of them where ``sampled`` is False)."""

    sites: tuple[SiteTraffic, ...]
    groups: int
    groups_counted: int
    sampled: bool

    @property
    def exact(self) -> bool:
        return all(s.exact for s in self.sites)

    def totals(self, *, merge_repeats: bool = False) -> dict:
        """(space, direction) -> {"requests", "sectors" or "wavefronts", "accesses",
        "bytes" (bytes the lanes ask for)} summed over sites; *merge_repeats* leaves out
        the loads that repeat an earlier load of the same lane (``Site.repeats``)."""
        out = {}
        for space, direction in itertools.product(("global", "local"), ("load", "store")):
            parts = [s for s in self.sites
                     if s.site.space == space and s.site.direction == direction
                     and not (merge_repeats and s.site.repeats is not None)]
            unit = "sectors" if space == "global" else "wavefronts"
            out[space, direction] = {
                "requests": sum(s.requests for s in parts),
                unit: sum(getattr(s, unit) for s in parts),
                "accesses": sum(s.accesses for s in parts),
                "bytes": sum(s.accesses * s.access_bytes for s in parts)}
        return out

    def counters(self, *, merge_repeats: bool = False) -> dict[str, float]:
        """The predicted Nsight Compute counters (COUNTERS' names); see totals."""
        totals = self.totals(merge_repeats=merge_repeats)
        out = {}
        for (space, direction, quantity), name in COUNTERS.items():
            key = "requests" if quantity == "instructions" else quantity
            out[name] = float(totals[space, direction][key])
        return out


# {{{ counting one group

def _count_requests(space, access_bytes, addresses, warp_size, sector_bytes, banks):
    """Per row: (requests, sectors or wavefronts, active lanes) of full address rows."""
    lanes = _warps(addresses, warp_size)
    requests = (lanes >= 0).any(axis=-1).sum(axis=-1)
    if space == "global":
        units = warp_sectors(addresses, access_bytes, sector_bytes=sector_bytes,
                             warp_size=warp_size)
    else:
        units = warp_wavefronts(addresses, access_bytes, banks=banks, warp_size=warp_size)
    return requests, units.sum(axis=-1), (lanes >= 0).sum(axis=(-2, -1))


def _merged_values(block, iname: str, k: int) -> list:
    """The block's instance values with *iname* at its first value of each run of k."""
    d = block.inames.index(iname)
    values = list(block.values)
    values[d] = values[d][(values[d] - values[d][0]) % k == 0]
    return values


def _group_counts(trace: LaunchTrace, group: tuple, options: dict) -> dict:
    """Site id -> [instances, requests, units, accesses, sampled within the group]."""
    merges = options["merges"]
    out = {}
    for block, thinned, plans in trace.blocks(group, max_mixed=options["max_addresses"]):
        rows = {}
        for plan in plans:
            site = plan.site
            if not block.runs:
                out[site.id] = [0, 0, 0, 0, False]
                continue
            merge = merges.get(site.id)
            if merge is None and site.hoisted:  # one load before the loops it is out of
                insn = trace.instruction_of(site.id)
                values, share = hoisted_values(insn, block.values, site.hoisted)
                first, _ = trace.instruction_block(insn, group, values=values)
                out[site.id] = _site_counts(trace, group, first, thinned * share, plan,
                                            site.access_bytes, {}, options)
            elif merge is None:
                out[site.id] = _site_counts(trace, group, block, thinned, plan,
                                            site.access_bytes, rows, options)
            else:
                iname, k = merge
                merged, _ = trace.instruction_block(
                    trace.instruction_of(site.id), group,
                    values=_merged_values(block, iname, k))
                out[site.id] = _site_counts(trace, group, merged, thinned, plan,
                                            site.access_bytes * k, {}, options)
    return out


def _site_counts(trace, group, block, thinned, plan, access, rows, options) -> list:
    """[instances, requests, units, accesses, sampled] of one site over *block* (its
    instances over those kept: *thinned*); *rows* caches the block's lane patterns."""
    warp_size, sector_bytes, banks = (options["warp_size"], options["sector_bytes"],
                                      options["banks"])
    cap = options["max_addresses"]
    site = plan.site
    lanes = block.shape[-1]
    count = math.prod(block.shape[:-1])
    parts = trace.separable(block, plan) if not site.random else None
    if parts is not None:
        if "rows" not in rows:
            rows["rows"] = _mask_rows(block, count, lanes)
        return [thinned * v for v in _classes(site, access, parts, rows["rows"], warp_size,
                                              sector_bytes, banks)] + [thinned != 1]
    sampled = thinned != 1 or (cap is not None and count * lanes > cap)
    if thinned == 1 and sampled:
        block, thinned = trace.instruction_block(trace.instruction_of(site.id), group,
                                                 max_addresses=cap, values=None)
    active = block.active()
    addr = np.broadcast_to(trace.lane_addresses(block, plan, group), block.shape)
    addr = np.where(active, addr.reshape(active.shape), -1)
    requests, units, accesses = _count_requests(site.space, access, addr, warp_size,
                                                sector_bytes, banks)
    return [thinned * float(active.any(axis=1).sum()), thinned * float(requests.sum()),
            thinned * float(units.sum()), thinned * float(accesses.sum()), sampled]


def _mask_rows(block, count: int, lanes: int):
    """(instances that run, each instance's active-lane pattern id, the patterns)."""
    inst_ok = np.broadcast_to(block.instance_mask[..., 0], block.shape[:-1]).reshape(-1)
    if block.mixed_mask is None:
        return inst_ok, np.zeros(count, dtype=np.int64), block.lane_mask.reshape(1, -1)
    mixed = np.logical_and(block.mixed_mask, block.lane_mask)
    # the patterns over the instance axes the mask varies along, then spread
    rows = np.broadcast_to(mixed, mixed.shape[:-1] + (lanes,)).reshape(-1, lanes)
    unique, inverse = _unique_rows(rows)
    ids = np.broadcast_to(inverse.reshape(mixed.shape[:-1]), block.shape[:-1]).reshape(-1)
    return inst_ok, ids, unique


def _unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct rows, each row's index among them) of a boolean array, by a 64-bit hash
    of each row checked against its representative (numpy's row-wise unique where two
    rows share a hash)."""
    packed = np.packbits(rows, axis=1)
    pad = -packed.shape[1] % 8
    words = np.pad(packed, ((0, 0), (0, pad))).view(np.uint64)
    multipliers = (np.arange(1, words.shape[1] + 1, dtype=np.uint64)
                   * np.uint64(0x9E3779B97F4A7C15)) | np.uint64(1)
    with np.errstate(over="ignore"):
        mixed = words * multipliers
        hashes = np.bitwise_xor.reduce(mixed ^ (mixed >> np.uint64(29)), axis=1)
    _, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    if np.array_equal(packed[first][inverse], packed):
        return rows[first], inverse
    unique, inverse = np.unique(packed, axis=0, return_inverse=True)
    return np.unpackbits(unique, axis=1, count=rows.shape[1]).astype(bool), inverse.reshape(-1)


def _classes(site, access, parts, rows, warp_size, sector_bytes, banks) -> list:
    """[instances, requests, units, accesses] of an affine site at one group, one
    request counted per class of (base address modulo the sector or bank row, active
    lanes)."""
    inst, lane = parts
    inst = inst.reshape(-1)
    inst_ok, row_id, row_masks = rows
    modulus = sector_bytes if site.space == "global" else 4 * banks
    where = np.flatnonzero(inst_ok)
    if not len(where):
        return [0, 0, 0, 0]
    key = (inst[where] % modulus) * len(row_masks) + row_id[where]
    _, first, weight = np.unique(key, return_index=True, return_counts=True)
    rep = where[first]
    masks = row_masks[row_id[rep]]
    addr = np.where(masks, inst[rep][:, None] + lane[None, :], -1)
    requests, units, accesses = _count_requests(site.space, access, addr, warp_size,
                                                sector_bytes, banks)
    return [float(weight @ masks.any(axis=1)), float(weight @ requests),
            float(weight @ units), float(weight @ accesses)]

# }}}


# {{{ groups

def _strata(grid: tuple, max_groups: int):
    """[(lows, highs, sampled groups)] covering the grid: per axis its first, its last and
    its interior groups; all groups where the grid has at most *max_groups*, else the
    interior sampled evenly, as many per axis as keep the total within *max_groups*."""
    def axis_parts(size, k):
        if size <= 2:
            return [(g, g, [g]) for g in range(size)]
        inner = np.unique(np.linspace(1, size - 2, min(k, size - 2)).round().astype(int))
        return [(0, 0, [0]), (1, size - 2, [int(v) for v in inner]),
                (size - 1, size - 1, [size - 1])]

    largest = max((n - 2 for n in grid), default=0)
    if math.prod(grid) <= max_groups:
        k = max(largest, 1)
    else:
        k = 1
        while k < largest and math.prod(
                sum(len(p[2]) for p in axis_parts(n, k + 1)) for n in grid) <= max_groups:
            k += 1
    strata = []
    for combo in itertools.product(*[axis_parts(n, k) for n in grid]):
        lows = tuple(c[0] for c in combo)
        highs = tuple(c[1] for c in combo)
        strata.append((lows, highs, list(itertools.product(*[c[2] for c in combo]))))
    return strata


def warp_traffic(trace: LaunchTrace, *, groups=None, sector_bytes: int = 32,
                 warp_size: int = 32, banks: int = 32, max_groups: int = 64,
                 max_addresses: int | None = 2 ** 18, merges: dict | None = None
                 ) -> WarpTraffic:
    """Requests, sectors and wavefronts of every site of *trace*'s launch (see the module
    docstring). *groups*: count only these groups (linear indices or index tuples),
    unscaled; default: the whole launch. *max_groups*: groups counted at most (a stratum
    whose groups provably count alike is counted at one). *max_addresses*: lane instances
    per group and instruction counted request by request before instances are sampled
    (None: all). *merges*: {site id: (iname, k)} where the compiler made k consecutive
    iterations of the site's loop over *iname* one access of k × its bytes (as its SASS
    shows, e.g. LDS.128 for four floats): counted as such, lanes active as at the first
    of the k. The defaults are H100's (compute capability 9.0: 32-lane warps, 32-byte
    sectors, 32 banks; CUDA C++ Programming Guide)."""
    for name, value in (("sector_bytes", sector_bytes), ("warp_size", warp_size),
                        ("banks", banks), ("max_groups", max_groups)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise UsageError(f"{name} must be a positive integer, got {value!r}")
    merges = dict(merges or {})
    for site_id, (iname, k) in merges.items():
        if site_id not in range(len(trace.sites)) or iname not in \
                trace.instruction_of(site_id).seq or not isinstance(k, int) or k < 1:
            raise UsageError(f"merge {site_id}: ({iname!r}, {k!r}) names no loop of that "
                             "site with a positive count")
    options = {"sector_bytes": sector_bytes, "warp_size": warp_size, "banks": banks,
               "max_addresses": max_addresses, "merges": merges}
    totals = {s.id: {} for s in trace.sites}
    exact = {s.id: groups is None and not s.random
             and not trace.instruction_of(s.id).assumed for s in trace.sites}
    if groups is not None:
        strata = [(None, None, [trace.group_index(g) for g in groups])]
    else:
        strata = _strata(trace.grid, max_groups)
    counted = 0
    for lows, highs, members in strata:
        population = len(members) if lows is None else math.prod(
            h - lo + 1 for lo, h in zip(lows, highs, strict=True))
        share = Fraction(population, len(members))
        weights = {s.id: dict.fromkeys(members, share) for s in trace.sites}
        if lows is not None and len(members) < population:
            proven = _residue_weights(trace, lows, highs, sector_bytes, banks, max_groups)
            weights.update(proven)
            for site in trace.sites:
                exact[site.id] = exact[site.id] and site.id in proven
        needed = sorted({g for w in weights.values() for g, v in w.items() if v})
        for group in needed:
            counted += 1
            for site_id, (inst, req, units, acc, within) in _group_counts(
                    trace, group, options).items():
                weight = weights[site_id].get(group, 0)
                if weight:  # summed per denominator, divided once: integers stay exact
                    parts = totals[site_id]
                    parts[weight.denominator] = parts.get(weight.denominator, 0) + \
                        weight.numerator * np.array([inst, req, units, acc])
                    if within:
                        exact[site_id] = False
    out = []
    for site in trace.sites:
        inst, req, units, acc = (float(v) for v in sum(
            (parts / d for d, parts in totals[site.id].items()), np.zeros(4)))
        merge = merges.get(site.id)
        out.append(SiteTraffic(site, inst, req, units if site.space == "global" else 0.0,
                               units if site.space == "local" else 0.0, acc,
                               site.access_bytes * (merge[1] if merge else 1),
                               exact[site.id]))
    return WarpTraffic(tuple(out), trace.num_groups, counted, counted < trace.num_groups)


def _residue_weights(trace: LaunchTrace, lows, highs, sector_bytes, banks, max_groups
                     ) -> dict:
    """{site id: {group: weight}} for the sites whose counts are provably the same at every
    group of the stratum [lows, highs] with the same address residue: the instruction's
    domain is the same at each of its groups (isl), and the address does not read the group
    index or is affine in it, so groups differ by a shift whose residue modulo the sector
    (bank row) fixes the counts. One group per residue class stands for all groups of
    that class; empty where more than *max_groups* groups would be needed."""
    varying = [a for a in range(len(lows)) if highs[a] > lows[a]]
    capable, periods = {}, dict.fromkeys(varying, 1)
    for site in trace.sites:
        insn = trace.instruction_of(site.id)
        if site.random or insn.assumed:
            continue
        plan = trace.site_plan(site.id)
        modulus = sector_bytes if site.space == "global" else 4 * banks
        steps = {}
        for iname, (axis, _) in insn.group_inames.items():
            if axis not in varying:
                continue
            if plan.coefficients is None:
                steps = None if iname in plan.deps else steps
                if steps is None:
                    break
                continue
            steps[axis] = plan.coefficients.get(iname, 0) * site.bytes % modulus
        if steps is None or not trace.group_invariant(site.id, lows, highs):
            continue
        for axis, step in steps.items():
            if step:
                periods[axis] = math.lcm(periods[axis], modulus // math.gcd(step, modulus))
        capable[site.id] = (steps, modulus)
    ranges = [range(lows[a], (min(highs[a], lows[a] + periods[a] - 1) if a in periods
                              else lows[a]) + 1) for a in range(len(lows))]
    if not capable or math.prod(len(r) for r in ranges) > max_groups:
        return {}
    reps = list(itertools.product(*ranges))
    out = {}
    for site_id, (steps, modulus) in capable.items():
        histogram = {0: 1}
        for a in range(len(lows)):
            size = highs[a] - lows[a] + 1
            step = steps.get(a, 0)
            period = modulus // math.gcd(step, modulus) if step else 1
            axis = Counter()
            for t in range(period):  # groups g of the axis with g ≡ lows[a] + t (mod period)
                axis[step * (lows[a] + t) % modulus] += len(range(t, size, period))
            combined = Counter()
            for r1, c1 in histogram.items():
                for r2, c2 in axis.items():
                    combined[(r1 + r2) % modulus] += c1 * c2
            histogram = combined
        residue = {g: sum(steps.get(a, 0) * g[a] for a in range(len(g))) % modulus
                   for g in reps}
        alike = Counter(residue.values())
        out[site_id] = {g: Fraction(histogram.get(residue[g], 0), alike[residue[g]])
                        for g in reps}
    return out

# }}}


def vector_merges(trace: LaunchTrace, *, vector_bytes: int = 16) -> dict:
    """{site id: (iname, k)} for warp_traffic's *merges*: the shared-memory loads that
    nvcc is expected to turn into *vector_bytes* loads. A heuristic, not a fact: nvcc
    unrolls an innermost loop by 4 and its load vectorizer joins loads of consecutive,
    provably aligned shared addresses (the H100 profiles of matmul_tiled show LDS.128
    for ``a_fetch[i, k]`` over k, float32 and float64 alike, and none for nbody's or the
    convolution's tiles). A site qualifies where it loads local memory in its
    instruction's innermost loop, unpredicated, its address affine with step one element
    along that loop, every other term and the loop's start a multiple of *vector_bytes*,
    and the loop runs at least k = vector_bytes / element bytes times. Global loads are
    never merged: their alignment is not known to the compiler."""
    out = {}
    for site in trace.sites:
        if site.space != "local" or site.direction != "load" or site.width != 1 \
                or not site.affine or vector_bytes // site.bytes < 2:
            continue
        insn = trace.instruction_of(site.id)
        if not insn.path_positions or insn.predicates:
            continue
        loop = insn.seq[len(insn.path_positions) - 1]
        plan = trace.site_plan(site.id)
        k = vector_bytes // site.bytes
        lo, hi = insn.boxes[loop]
        others = [c for name, c in plan.coefficients.items() if name != loop]
        if plan.coefficients.get(loop) != 1 or hi - lo + 1 < k or any(
                (c * site.bytes) % vector_bytes for c in others) or (
                plan.base + (plan.constant + lo) * site.bytes) % vector_bytes:
            continue
        out[site.id] = (loop, k)
    return out


def group_sectors(trace: LaunchTrace, group, *, sector_bytes: int = 32, warp_size: int = 32,
                  max_addresses: int | None = None, merge_repeats: bool = True,
                  window: int | None = None) -> tuple[np.ndarray, ...]:
    """(load sectors, store sectors) of one group's global accesses: int64 sector ids
    (byte address // *sector_bytes*, in the launch's one address space) in execution
    order — instance by instance, in each the sites in order, in each the warps in order,
    in each its distinct sectors ascending — one entry per (request, sector). With
    *max_addresses*, large instructions keep a subset of their instances (see
    LaunchTrace.group_trace). *merge_repeats* leaves out the loads that repeat an earlier
    load of the same lane (``Site.repeats``): the compiled code does not issue them.
    With *window*, the loops keep an unbroken stretch of their middle iterations (about
    *window* lane addresses in all, LaunchTrace.group_trace) and two float arrays follow:
    how many of the group's entries each load and each store entry stands for."""
    traced = trace.group_trace(group, max_addresses=max_addresses, window=window)
    parts = {"load": [], "store": []}
    for site in trace.sites:
        if site.space != "global" or site.id not in traced.addresses:
            continue
        if merge_repeats and site.repeats is not None:
            continue
        lanes = _warps(traced.addresses[site.id], warp_size)
        units = np.sort(_units(lanes, site.access_bytes, sector_bytes), axis=-1)
        new = units >= 0
        new[..., 1:] &= units[..., 1:] != units[..., :-1]
        row, _, _ = np.nonzero(new)
        parts[site.direction].append((traced.order[site.id][row], np.full(len(row), site.id),
                                      units[new],
                                      np.full(len(row), traced.scale.get(site.id, 1.0))))
    out, weights = [], []
    for direction in ("load", "store"):
        if not parts[direction]:
            out.append(np.zeros(0, dtype=np.int64))
            weights.append(np.zeros(0))
            continue
        rank, ids, sector, weight = (np.concatenate(c) for c in zip(*parts[direction],
                                                                    strict=True))
        # each site's entries are in (instance, warp, sector) order already: merge the
        # sites by instance, then site
        order = np.argsort(rank * (int(ids.max()) + 1) + ids, kind="stable")
        out.append(sector[order].astype(np.int64))
        weights.append(weight[order])
    if window is None:
        return out[0], out[1]
    return out[0], out[1], weights[0], weights[1]
