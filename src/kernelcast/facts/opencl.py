"""The warp-level memory counters of one launch of an OpenCL C kernel, predicted from its
source: what kernelcast.facts.warps counts for a Loopy kernel, from the OpenCL
front-end's counts (kernelcast.frontends.opencl.count_kernel).

Per global or ``__local`` access site, the lanes of sampled warps are listed at sampled
passes of the loops around it: warps are 32 consecutive work-items of a group numbered
with local axis 0 fastest (CUDA's layout), in up to SAMPLED_GROUPS work-groups spread
evenly over the launch. A loop that runs alike in every work-item is sampled at up to
SAMPLED_VALUES of its counter's values (all of them where there are fewer); a loop whose
range differs among work-items at up to SAMPLED_VALUES of its passes, where each lane's
counter is its own first value plus the pass times the step, as a warp runs it (a
grid-stride loop's lanes keep their own columns), and a lane whose loop has ended is
idle. A lane is active where, besides, the access's guards hold. From these, per site:
the warp requests per active lane (one where every lane of a warp acts alike; up to 32
where lanes act alone) and the 32-byte sectors (global) or shared-memory wavefronts
(``__local``, kernelcast.facts.warps's bank rules) per request. The site's lane accesses
over the launch are the front-end's mean executions per work-item times the
work-items, so loop trips, branches decided per work-item and the branch and loop
statistics given for data count as they count for the models; requests and sectors
follow from the ratios.

An index or guard that reads data has no value before run time: such a guard is left
out of the lanes' activity (its share is in the executions), and such an index is
counted as if every active lane touched a sector of its own (a gather) or, in local
memory, as if the lanes stepped by one element; the site says so (``Site.random``).
``__constant`` accesses go through the constant cache, not L1's global pipe, and are not
counted. Everything here is sampled: no counter is marked exact.

What needs NVIDIA's compiler (registers, occupancy, SASS instructions) and the cache
model are not predicted for OpenCL sources: kernelcast compiles and simulates Loopy
kernels only. ``opencl_launch_facts`` gives a LaunchFacts whose ``missing`` says so.

Public names: opencl_launch_facts, site_traffic, SAMPLED_GROUPS, SAMPLED_VALUES.
"""

from __future__ import annotations

import math

import numpy as np

from kernelcast.facts.lanes import Site
from kernelcast.facts.warps import COUNTERS, SiteTraffic, warp_sectors, warp_wavefronts
from kernelcast.frontends.opencl.indices import index_values
from kernelcast.properties.opencl import (
    counter_nodes,
    counter_range,
    launch_geometry,
)

#: work-groups whose warps are listed, spread evenly over the launch
SAMPLED_GROUPS = 256
#: passes of each loop around an access at which its warps are listed
SAMPLED_VALUES = 16
#: lane instances listed per site at most (groups are fewer where counters are many)
MOST_LANES = 1 << 22

_DIRECTION = {"read": "load", "write": "store"}


def _padded(size) -> tuple:
    return tuple(int(n) for n in size) + (1,) * (3 - len(size))


def _sampled_lanes(global_size, local_size, groups: int, warp_size: int):
    """Global ids (3, groups × lanes) of every lane of *groups* work-groups spread over
    the launch, each group's lanes in warp order and padded to whole warps (padding lanes
    marked False in the second result)."""
    g, lo = _padded(global_size), _padded(local_size)
    counts = [n // size for n, size in zip(g, lo)]
    axes = sum(n > 1 for n in counts)
    per_axis = max(1, int(groups ** (1 / max(1, axes))))
    picked = [np.unique(np.linspace(0, n - 1, min(n, per_axis)).astype(np.int64))
              for n in counts]
    group = np.stack(np.meshgrid(*picked, indexing="ij"), axis=-1).reshape(-1, 3)
    local = np.stack(np.meshgrid(*(np.arange(n) for n in lo), indexing="ij"),
                     axis=-1).reshape(-1, 3)
    local = local[np.lexsort((local[:, 0], local[:, 1], local[:, 2]))]  # axis 0 fastest
    lanes = len(local)
    width = -(-lanes // warp_size) * warp_size
    ids = group[:, None, :] * np.asarray(lo) + local[None, :, :]  # (groups, lanes, 3)
    real = np.zeros((len(group), width), dtype=bool)
    real[:, :lanes] = True
    ids = np.concatenate([ids, np.repeat(ids[:, :1], width - lanes, axis=1)], axis=1)
    return ids.reshape(-1, 3).T, real.reshape(-1)


def _counter_values(counts, key, global_size, local_size, scalars):
    """Up to SAMPLED_VALUES values of a loop counter, spread evenly over its range (None
    where the range is not known before run time)."""
    known = counter_range(counts, key, global_size, local_size, scalars)
    if known is None:
        return None
    step = counts.counter_steps.get(key, 1) if len(counts.counters[key]) == 2 else 1
    values = np.arange(known[0], known[1] + 1, step)
    if len(values) > SAMPLED_VALUES:
        values = values[np.linspace(0, len(values) - 1, SAMPLED_VALUES).astype(int)]
    return values


def site_traffic(counts, access, global_size, local_size, scalars=None, *, warp_size=32,
                 sector_bytes=32, banks=32, ident=0) -> SiteTraffic:
    """The warp traffic of one access site (an Access of *counts*) over the launch; see
    the module docstring."""
    items = math.prod(global_size)
    element = access.element_bytes or 4
    space = "local" if access.space == "local" else "global"
    roots = [r for r in (access.index, *(g for g, _ in access.guards)) if r is not None]
    mine = list(dict.fromkeys([k for r in roots for k in counter_nodes(counts, r)]
                              + [k for k in access.loops if len(counts.counters.get(k, ())) == 3]))
    per_group = math.prod(_padded(local_size))
    spans = {}
    for k in mine:
        known = counter_range(counts, k, global_size, local_size, scalars)
        if known is None:
            mine, spans = [], {}
            break
        step = counts.counter_steps.get(k, 1)
        spans[k] = min(SAMPLED_VALUES, (known[1] - known[0]) // step + 1)
    groups = max(1, min(SAMPLED_GROUPS, MOST_LANES // max(1, math.prod(spans.values())
                                                          * per_group)))
    points, real = _sampled_lanes(global_size, local_size, groups, warp_size)

    def shaped(i, values):  # counter i's values on an axis of its own, ahead of the grid
        return np.asarray(values).reshape((-1,) + (1,) * (len(mine) - 1 - i + 3))

    def at(key, axes=None):
        return index_values(counts.nodes, key, global_size, local_size, scalars, {}, axes,
                            points=points)

    active = np.broadcast_to(real, (1, 1, 1, len(real)))
    axes = {}
    for i, k in enumerate(mine):
        step = counts.counter_steps.get(k, 1)
        if len(counts.counters[k]) == 2:  # the same values in every lane
            axes[k] = shaped(i, _counter_values(counts, k, global_size, local_size, scalars))
            continue
        # a warp's lanes take their own values: at its t-th pass, first ± t × step
        first_key, bound_key, op = counts.counters[k]
        first, bound = at(first_key), at(bound_key)
        if first is None or bound is None:
            axes[k] = shaped(i, _counter_values(counts, k, global_size, local_size, scalars))
            continue
        rising = op in ("<", "<=") or (op == "!=" and bool(np.all(first <= bound)))
        reach = (bound - first if rising else first - bound) + (op in ("<=", ">="))
        trips = np.maximum(0, -(-reach // step))
        most = int(trips[..., real].max(initial=0)) if trips.ndim else int(trips)
        passes = np.arange(max(most, 1))
        if len(passes) > SAMPLED_VALUES:
            passes = passes[np.linspace(0, len(passes) - 1, SAMPLED_VALUES).astype(int)]
        t = shaped(i, passes)
        axes[k] = first + (t * step if rising else -t * step)
        active = active & (t < trips)
    for key, holds in access.guards:
        c = at(key, axes)
        if c is not None:
            active = active & ((c != 0) == holds)
    v = at(access.index, axes) if access.index is not None else None
    shape = np.broadcast_shapes(active.shape, v.shape if v is not None else ())
    active = np.broadcast_to(active, shape).reshape(-1, len(real))
    lanes = np.arange(len(real)) % per_group if v is None else None
    if v is None:  # a gather: a sector a lane; in local memory, a step of one element
        stride = sector_bytes if space == "global" else element
        addresses = np.broadcast_to(lanes * max(stride, element), active.shape)
    else:
        addresses = np.broadcast_to(v, shape).reshape(-1, len(real)).astype(np.int64) * element
    addresses = np.where(active, addresses, -1)
    if space == "global":
        units = warp_sectors(addresses, element, sector_bytes=sector_bytes, warp_size=warp_size)
    else:
        units = warp_wavefronts(addresses, element, banks=banks, warp_size=warp_size)
    busy = active.reshape(active.shape[0], -1, warp_size).any(axis=-1)
    requests, lanes_active = int(busy.sum()), int(active.sum())
    accesses = float(access.count) * items
    per_lane = requests / lanes_active if lanes_active else 1 / warp_size
    per_request = float(units[busy].sum()) / requests if requests else 0.0
    total_requests = accesses * per_lane
    site = Site(ident, f"line {access.line}", access.array, space,
                _DIRECTION[access.direction], element, 1, access.stride is not None,
                v is None)
    return SiteTraffic(site, total_requests, total_requests,
                       total_requests * per_request if space == "global" else 0.0,
                       total_requests * per_request if space == "local" else 0.0,
                       accesses, element, False)


def opencl_launch_facts(source, global_size, local_size=None, *, kernel=None,
                        path="<source>", scalars=None, stats=None, options="",
                        hardware="h100"):
    """The LaunchFacts of one launch of an OpenCL C kernel (a source text or its
    KernelCounts at this launch): the warp-level memory counters of its global and
    ``__local`` accesses (``site_traffic``), the grid and the block; the rest is missing,
    with why. *hardware*: a packaged name, a JSON path or a Hardware."""
    from kernelcast.facts.counters import PRINCIPAL, LaunchFacts, hardware_named
    from kernelcast.frontends.opencl import KernelCounts, count_kernel

    hw = hardware_named(hardware)
    counts = source if isinstance(source, KernelCounts) else count_kernel(
        source, kernel, path=path, options=options, scalars=scalars,
        global_size=global_size, local_size=local_size, stats=stats)
    global_size, local_size = launch_geometry(counts, global_size, local_size)
    sites = tuple(site_traffic(counts, a, global_size, local_size, scalars,
                               warp_size=hw.warp_size, sector_bytes=hw.sector_bytes,
                               ident=i)
                  for i, a in enumerate(a for a in counts.access_list
                                        if a.space in ("global", "local")))
    counters = {}
    for (space, direction, quantity), name in COUNTERS.items():
        if space == "global" and quantity == "instructions":
            continue  # the SASS's, which the compiler decides
        mine = [s for s in sites if s.site.space == space and s.site.direction == direction]
        key = "requests" if quantity == "instructions" else quantity
        counters[name] = float(sum(getattr(s, key) for s in mine))
    counters["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"] = (
        counters["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"]
        + counters["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"])
    groups = math.prod(g // lo for g, lo in zip(global_size, local_size))
    counters["launch__grid_size"] = float(groups)
    counters["launch__block_size"] = float(math.prod(local_size))
    why = ("needs NVIDIA's compiler or the cache model, which kernelcast runs on Loopy "
           "kernels only; an OpenCL source gives its memory requests, sectors and shared "
           "wavefronts")
    missing = {n: why for n in PRINCIPAL if n not in counters}
    return LaunchFacts(counts.name, dict(scalars or {}), hw.name, tuple(
        g // lo for g, lo in zip(global_size, local_size)), tuple(local_size), counters,
        frozenset({"launch__grid_size", "launch__block_size"}), missing, sites,
        sources=dict(hw.sources or {}))
