"""The predicted Nsight Compute counters of one launch: the hardware facts together.

``predict_counters(knl, params, hardware)`` puts together what the hardware does with one
launch of a Loopy kernel, without running it:

- the warp-level requests, sectors and shared-memory wavefronts of every access site
  (kernelcast.facts.warps, from the lanes' addresses: kernelcast.facts.lanes);
- what the compiler made of the kernel's CUDA code: registers, spills, static shared
  memory and the SASS instructions executed (kernelcast.facts.compiler, NVIDIA's compiler
  from PyPI or the CUDA toolkit, no GPU needed);
- the groups an SM holds at once (kernelcast.facts.occupancy) and, from them and the
  groups' sector streams, the L1, L2 and DRAM traffic of a launch whose caches start cold,
  as ncu measures by default (kernelcast.facts.caches).

Every number is keyed by the Nsight Compute metric it predicts, so a prediction and a
profile of the same launch (ncu's raw CSV, kernelcast.frontends.profiler) compare key by
key (``compare``). Without a compiler the memory facts stand alone and ``missing`` says
which counters are left out and why.

Public names: LaunchFacts, predict_counters, compare, forget, PRINCIPAL, hardware_named.
"""

from __future__ import annotations

import math
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field, replace

from kernelcast.errors import HardwareGuessWarning, KernelcastError, UsageError

#: The counters every prediction gives (where its parts could be made), in display order.
PRINCIPAL = (
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
    "lts__t_sectors_op_read.sum",
    "lts__t_sectors_op_write.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks",
    "launch__waves_per_multiprocessor",
    "sm__maximum_warps_per_active_cycle_pct",
    "smsp__inst_executed.sum",
    "smsp__sass_inst_executed_op_global_ld.sum",
    "smsp__sass_inst_executed_op_global_st.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "launch__grid_size",
    "launch__block_size",
)

# an L2 miss reads DRAM in 64-byte blocks (kernelcast.facts.caches.MEASURED)
DRAM_FETCH_BYTES = 64

# lane addresses of one group the cache model takes at most: a longer group is seen
# through an unbroken stretch of its loops' middle iterations (LaunchTrace.group_trace)
CACHE_WINDOW = 1 << 18

_SHARED = {"load": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
           "store": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"}


@dataclass(frozen=True)
class LaunchFacts:
    """What one launch does to the hardware, as Nsight Compute would count it.

    ``counters``: metric name -> predicted value; ``exact``: the metric names whose value
    is exact (every group counted, or provably alike) rather than scaled from samples;
    ``missing``: metric name -> why it is not predicted; ``sites``: per access site its
    warp traffic (kernelcast.facts.warps.SiteTraffic); ``caches``, ``occupancy``,
    ``compiler``: the parts (None where a part could not be made); ``sources``: where
    the hardware's parameters come from; ``instruction_kinds``: warp-level SASS
    executions by instruction class (kernelcast.facts.compiler.DynamicCounts.by_kind)."""

    kernel: str
    params: dict
    hardware: str
    grid: tuple
    block: tuple
    counters: dict
    exact: frozenset
    missing: dict
    sites: tuple
    caches: object | None = None
    occupancy: object | None = None
    compiler: object | None = None
    sources: dict = field(default_factory=dict)
    instruction_kinds: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        """A JSON-ready summary: the counters, the sites and the parts' key facts."""
        sites = [{"site": s.site.id, "instruction": s.site.insn_id, "array": s.site.array,
                  "space": s.site.space, "direction": s.site.direction,
                  "bytes": s.access_bytes, "requests": s.requests,
                  ("sectors" if s.site.space == "global" else "wavefronts"):
                      s.sectors if s.site.space == "global" else s.wavefronts,
                  "per_request": round(s.sectors_per_request, 4), "exact": s.exact}
                 for s in self.sites]
        out = {"kernel": self.kernel, "params": self.params, "hardware": self.hardware,
               "grid": list(self.grid), "block": list(self.block),
               "counters": {k: _number(v) for k, v in self.counters.items()},
               "exact": sorted(self.exact), "missing": dict(self.missing), "sites": sites,
               "sources": dict(self.sources)}
        if self.compiler is not None:
            out["compiler"] = {k: v for k, v in self.compiler.summary().items()
                               if k not in ("static_counts", "tools")}
        return out


def _number(value):
    if isinstance(value, float) and value.is_integer() and abs(value) < 2 ** 53:
        return int(value)
    return round(value, 6) if isinstance(value, float) else value


def hardware_named(hardware):
    """The kernelcast.hardware.Hardware of a name (h100, h200), a path, or itself; one
    that lacks what the facts need (L2 size, L1 size, compute capability) is refused."""
    from kernelcast.hardware import Hardware, load_hardware

    hw = hardware if isinstance(hardware, Hardware) else load_hardware(hardware)
    lacking = [n for n in ("l2_cache_bytes", "l1_cache_bytes_per_sm", "compute_capability",
                           "registers_per_sm") if getattr(hw, n) is None]
    if lacking:
        raise UsageError(f"hardware {hw.name!r} lacks {', '.join(lacking)}, which the "
                         "predicted counters need (see src/kernelcast/hardware/h100.json)")
    return hw


def _limits(hw):
    from kernelcast.facts.occupancy import DeviceLimits

    major, minor = (int(p) for p in hw.compute_capability.split("."))
    return DeviceLimits(hw.name, (major, minor), hw.active_sms, hw.warp_size,
                        hw.registers_per_sm, hw.shared_mem_per_sm,
                        hw.max_active_warps_per_sm, hw.max_active_blocks_per_sm)


# Shared-memory carveouts an SM of compute capability 9.0 can be configured with, in KB
# (CUDA C++ Programming Guide, "Shared Memory" for 9.0: 0, 8, 16, 32, 64, 100, 132, 164,
# 196 and 228 KB); the driver picks one per launch.
_CARVEOUTS_KB = (0, 8, 16, 32, 64, 100, 132, 164, 196, 228)


def _carveout(occ, per_group_bytes: int) -> int:
    """The carveout the driver is taken to choose: the smallest that holds the groups
    an SM may keep (the L1 data cache keeps the rest of the SM's 256 KB)."""
    need = occ.groups_per_sm * per_group_bytes
    return next((kb * 1024 for kb in _CARVEOUTS_KB if kb * 1024 >= need),
                _CARVEOUTS_KB[-1] * 1024)


def predict_counters(knl, params: dict, hardware="h100", *, data_statistics=None,
                     compiler: bool = True) -> LaunchFacts:
    """The LaunchFacts of one launch of *knl* (a Loopy kernel) at *params* on *hardware*
    (a packaged name, a JSON path or a kernelcast.hardware.Hardware). *compiler*: False
    leaves out what needs NVIDIA's compiler (registers, instructions, occupancy, and the
    caches, which need the groups an SM holds). The same launch asked again in one
    process is answered from memory."""
    hw = hardware_named(hardware)
    if compiler:
        from kernelcast.facts.caches import MEASURED_ON

        if hw.name not in MEASURED_ON:
            warnings.warn(f"{hw.name}: the cache model's L1, L2 and DRAM behaviour was "
                          f"measured on the {' and the '.join(MEASURED_ON)} and is "
                          "assumed the same here",
                          HardwareGuessWarning, stacklevel=2)
    key = (knl, tuple(sorted(params.items())), repr(hw),
           tuple(sorted((data_statistics or {}).items())), compiler)
    known = _KNOWN.get(key)
    if known is not None:
        _KNOWN.move_to_end(key)
        return replace(known, counters=dict(known.counters), params=dict(known.params))
    facts = _predicted(knl, params, hw, data_statistics, compiler)
    if not facts.missing or not compiler:  # a compiler found later is used then
        _KNOWN[key] = facts
        if len(_KNOWN) > _KNOWN_MOST:
            _KNOWN.popitem(last=False)
    return replace(facts, counters=dict(facts.counters), params=dict(facts.params))


# launches predicted in this process, most recent last: a kernel and its sizes asked again
# (a tuner, a report) cost a dictionary lookup
_KNOWN: OrderedDict = OrderedDict()
_KNOWN_MOST = 256


def forget() -> None:
    """Forget the launches predicted so far (after the compiler or a hardware file
    changed under a running process)."""
    _KNOWN.clear()


def _predicted(knl, params, hw, data_statistics, compiler) -> LaunchFacts:
    from kernelcast.facts.caches import CODE_FETCH, cache_traffic
    from kernelcast.facts.lanes import LaunchTrace
    from kernelcast.facts.warps import group_sectors, warp_traffic

    trace = LaunchTrace(knl, params, data_statistics)
    missing, facts, occ, dynamic, caches = {}, None, None, None, None
    if compiler:
        try:
            facts, occ, dynamic = _compiled(knl, trace, hw)
        except KernelcastError as err:
            missing.update({n: str(err) for n in PRINCIPAL})
    else:
        missing.update({n: "compiler facts not asked for" for n in PRINCIPAL})
    warps = warp_traffic(trace, sector_bytes=hw.sector_bytes, warp_size=hw.warp_size,
                         merges=_merges(trace, facts))
    # a load a lane repeats with nothing stored between is one load in the SASS
    counters = dict(warps.counters(merge_repeats=True))
    counters.pop("smsp__sass_inst_executed_op_global_ld.sum", None)
    counters.pop("smsp__sass_inst_executed_op_global_st.sum", None)
    totals = warps.totals(merge_repeats=True)
    for direction, name in _SHARED.items():
        counters[name] = float(totals["local", direction]["wavefronts"])
    counters["launch__grid_size"] = trace.num_groups
    counters["launch__block_size"] = trace.threads_per_group
    exact = set(counters) if warps.exact else {"launch__grid_size", "launch__block_size"}
    shared = sum(counters[n] for n in _SHARED.values())
    if dynamic is not None:
        from kernelcast.facts.compiler import NCU_MIN_REGISTERS

        exact -= set(dynamic.counters())  # the compiler's counts, not the lanes'
        counters.update(dynamic.counters())
        counters["launch__registers_per_thread"] = max(facts.registers, NCU_MIN_REGISTERS)
        counters["launch__shared_mem_per_block_static"] = facts.shared_bytes
        counters.update({k: v for k, v in occ.counters().items()
                         if k != "launch__occupancy_limit_shared_mem"})
        # reads of special registers such as the thread's index travel the shared
        # data path (kernelcast.facts.compiler.Instruction.kind)
        counters["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"] = (
            shared + dynamic.by_kind.get("S2R.SHARED", 0.0))
    for name in counters:
        missing.pop(name, None)
    sources = dict(hw.sources or {})
    if occ is not None:
        l1 = hw.l1_cache_bytes_per_sm - _carveout(occ, facts.shared_bytes + _reserved(hw))
        caches = cache_traffic(
            lambda g: group_sectors(trace, g, sector_bytes=hw.sector_bytes,
                                    warp_size=hw.warp_size, window=CACHE_WINDOW),
            trace.num_groups, sms=hw.active_sms, groups_per_sm=max(occ.groups_per_sm, 1),
            l1_bytes=max(l1, 128), l2_bytes=hw.l2_cache_bytes, sector_bytes=hw.sector_bytes,
            dram_fetch_bytes=DRAM_FETCH_BYTES,
            grid=trace.grid,
            load_sectors_total=counters["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"],
            store_sectors_total=counters["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"])
        counters.update(caches.counters())
        _cap_cold_reads(counters, trace, hw)
        # the SMs fetch the kernel's code and constants through L2 too
        base, per_byte = CODE_FETCH
        counters["lts__t_sectors_op_read.sum"] += base + per_byte * facts.code_bytes
        if not caches.sampled and warps.exact:
            exact |= set(caches.counters()) - {"lts__t_sectors_op_read.sum"}
    name = trace.kernel.name
    return LaunchFacts(name, dict(params), hw.name, trace.grid, trace.block, counters,
                       frozenset(exact), missing, warps.sites, caches, occ, facts, sources,
                       dict(dynamic.by_kind) if dynamic is not None else {})


def _cap_cold_reads(counters: dict, trace, hw) -> None:
    """A launch whose global arrays all fit where L2 keeps data (below the hit fade of
    kernelcast.facts.caches) reads each DRAM block at most once from a cold cache: DRAM
    reads are at most the bytes of the arrays it loads, in DRAM fetch blocks. The sampled
    cache model cannot see that for indices without neighbourly reuse (gathers)."""
    from kernelcast.facts.caches import L2_HIT_FADE

    arrays = {s.array for s in trace.sites if s.space == "global"}
    loaded = {s.array for s in trace.sites if s.space == "global" and s.direction == "load"}
    if sum(trace.array_bytes[a] for a in arrays) > L2_HIT_FADE[0] * hw.l2_cache_bytes:
        return
    most = sum(-(-trace.array_bytes[a] // DRAM_FETCH_BYTES) * DRAM_FETCH_BYTES
               for a in loaded)
    counters["dram__bytes_read.sum"] = min(counters["dram__bytes_read.sum"], most)


def _reserved(hw) -> int:
    from kernelcast.facts.occupancy import ARCHITECTURES

    major, minor = (int(p) for p in hw.compute_capability.split("."))
    row = ARCHITECTURES.get((major, minor)) or ARCHITECTURES[max(ARCHITECTURES)]
    return row["reserved_shared_per_block"]


def _compiled(knl, trace, hw):
    """Compiler facts, occupancy and dynamic instruction counts of *knl*'s launch."""
    from kernelcast.facts.compiler import NCU_MIN_REGISTERS, compile_facts
    from kernelcast.facts.occupancy import occupancy
    from kernelcast.measure.codegen import generate

    major, minor = hw.compute_capability.split(".")
    facts = compile_facts(generate(knl, "cuda"), arch=f"sm_{major}{minor}")
    # the driver allocates a thread no fewer registers than ncu reports
    # (launch__registers_per_thread_allocated is 16 for kernels compiled to fewer)
    occ = occupancy(max(facts.registers, NCU_MIN_REGISTERS), facts.shared_bytes,
                    trace.threads_per_group, _limits(hw), groups=trace.num_groups)
    return facts, occ, facts.dynamic_counts(trace.params)


def _merges(trace, facts):
    """The shared-memory loads to count as the compiler's vector loads: those
    kernelcast.facts.warps.vector_merges finds for the widest LDS the SASS has (none
    without compiler facts or without vector LDS)."""
    from kernelcast.facts.warps import vector_merges

    if facts is None:
        return None
    widths = [int(k.split(".")[1]) for k in facts.static_counts
              if k.startswith("LDS.") and k.split(".")[1] in ("64", "128")]
    return vector_merges(trace, vector_bytes=max(widths) // 8) if widths else None


def compare(facts: LaunchFacts, measured: dict) -> list[tuple[str, float | None, float | None]]:
    """(metric, predicted, measured) for every predicted metric and every PRINCIPAL one
    the profile has, predicted ones first; a value absent on one side is None."""
    names = [n for n in PRINCIPAL if n in facts.counters or n in measured]
    names += sorted(n for n in facts.counters if n not in names)
    return [(n, facts.counters.get(n), _measured(measured.get(n))) for n in names]


def _measured(value):
    return value if isinstance(value, int | float) and math.isfinite(value) else None
