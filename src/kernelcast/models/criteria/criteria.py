"""The optimization criteria of the fine-grained model (shared/seeds 003, §IV) and their
potential speedups (§V), computed from one Nsight Compute profile per launch
(kernelcast.frontends.profiler.read_ncu_csv; ``ncu --set full --page raw --csv``) and a
GPU's characterization (kernelcast.models.criteria.characterization).

Each criterion is in [0, 1], 1 best; None where it does not apply (a kernel without
global or shared accesses). docs/criteria.md gives every formula with the ncu metrics it
reads; the comments below give the paper's formula beside kernelcast's reading of it.
Where the paper's printed formula cannot be meant as printed, kernelcast says so there:

- L1/L2 GRANULARITY are printed as transferred over requested bytes (≥ 1); the criterion
  is its inverse, requested over transferred, so that 1 is best like every other one.
- DEVICESYNC^SP and the granularity and shared-memory speedups are printed as fractions
  (the time share times the criterion's inverse); kernelcast turns the time share p and
  the criterion c into a speedup by Amdahl's law, 1 / (1 − p + p·c), which is the
  paper's 1/c when p = 1 and 1 when p = 0.

An application of several launches (``Application``) is judged by time-weighted
criteria, and its potential speedups combine the launches' by Amdahl's law: improving a
criterion shrinks each launch's time by that launch's speedup. HOSTSYNC (§IV-A) needs the
application's measured span (the launches' times and the gaps between them); without it,
it is not judged. The overall potential speedup of an application is its span over the
sum of its launches' times, each divided by its own overall potential speedup (§V: the
inverse of MEMTHR if the launch is memory-bound, of ARITHTHR if compute-bound): what is
left once every launch reaches the throughput the hardware allows and the gaps between
launches are gone.

Every metric read is checked where it is read: a count, size or share of counts from 0
(sizes from 1) to 2^64, a launch's time 1 ns or more; a launch outside them is a
one-line UsageError, so no criterion or speedup is NaN, infinite or negative. Launches
profiled on a GPU other than the characterization's raise a DeviceMismatchWarning.

Each criterion is a function of a LaunchReading (the launch, the characterization and
the metrics more than one criterion reads, each read once) that returns its Judgement:
value, potential speedup and the ratios a hint quotes. CRITERION_FUNCTIONS lists them in
the order of CRITERIA; ``kernel_criteria`` runs them on one launch and adds the launch's
overall potential speedup, ``assess`` combines the launches of an application.

Public names: CRITERIA, CRITERION_FUNCTIONS, MEMTHR_SATURATED, LONGEST_SECONDS,
LEAST_SHARE, KernelCriteria, Judgement, LaunchReading, hostsync, application_hostsync,
devicesync, divergence, loadbalance_warp, loadbalance_sm, l1_granularity, l2_granularity,
shmem_efficiency, throughput_occupancy, Application, Assessment, kernel_criteria, assess,
check_saturation.
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass, field
from functools import cached_property

from kernelcast.errors import AssumedValueWarning, DeviceMismatchWarning, UsageError
from kernelcast.frontends.profiler import Launch
from kernelcast.models.criteria.characterization import DeviceCharacterization

CRITERIA = ("HOSTSYNC", "DEVICESYNC", "DIVERGENCE", "LOADBALANCE_WARP", "LOADBALANCE_SM",
            "L1_GRANULARITY", "L2_GRANULARITY", "SHMEM_EFFICIENCY", "THROUGHPUT_OCCUPANCY")

# MEMTHR at or above this is "≈ 1" (§IV-H): the memory throughput cannot be improved
MEMTHR_SATURATED = 0.95

_STALL = re.compile(r"^smsp__average_warps_issue_stalled_(\w+)_per_issue_active\.ratio$")
_ARITH_PIPE = re.compile(r"^sm__inst_executed_pipe_(alu|fma|fmaheavy|fp64|xu|fma_type_fp16|"
                         r"tensor_op_\w+)\.avg\.pct_of_peak_sustained_elapsed$")
_OCCUPANCY_LIMITS = ("blocks", "registers", "shared_mem", "warps", "barriers")


# ncu's counters are 64-bit, so no metric the criteria read (counts, sizes, and ratios
# and percentages of counts) exceeds 2^64; products of a few stay far from overflow
_MOST = 2.0 ** 64

# ncu and CUDA events time with 64-bit nanosecond counters: no launch's time or span
# measured with them exceeds 2^64 ns (about 584 years)
LONGEST_SECONDS = 2.0 ** 64 * 1e-9

# gpu__time_duration.sum's units: ncu writes ns in the raw page, named units elsewhere
_TIME_UNITS = {"ns": 1e-9, "nsecond": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3,
               "msecond": 1e-3, "s": 1.0, "second": 1.0}


#: the least share of warp slots, and of the throughput they allow, a criterion is read
#: at: a launch below it is taken at it, with an AssumedValueWarning
LEAST_SHARE = 1e-3


def _number(value) -> float | None:
    """A metric's value as a float; None where ncu printed no number ("n/a", nan)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        value = float(value)
    except OverflowError:  # an integer beyond the float range
        return None
    return value if math.isfinite(value) else None


def _m(launch: Launch, name: str, default: float | None = None, least: float = 0.0) -> float:
    """Metric *name* of *launch*, from *least* to 2^64 (none the criteria read is
    negative); where ncu gives no number for it, *default*. Otherwise a UsageError
    naming the launch, the metric and its value."""
    raw = launch.metrics.get(name)
    value = _number(raw)
    where = f"the profile of {launch.kernel} (launch {launch.id})"
    if value is None:
        if default is not None:
            return default
        raise UsageError(f"{where} " + (f"lacks the metric {name}" if raw is None else
                                        f"has {repr(raw)[:40]} for {name}, not a number")
                         + ": profile with `ncu --set full --page raw --csv`")
    if not least <= value <= _MOST:
        raise UsageError(f"{where} has {name} = {value:g}; it is a count, size or share "
                         f"of counts, from {least:g} to 2^64")
    return value


def _assumed(launch: Launch, what: str, value: float, why: str) -> float:
    """*value*, taken for *what* of *launch*, with an AssumedValueWarning saying so."""
    warnings.warn(f"the profile of {launch.kernel} (launch {launch.id}): {what}; taken as "
                  f"{value:g} ({why})", AssumedValueWarning, stacklevel=3)
    return value


def _seconds(launch: Launch) -> float:
    """ncu's duration of *launch* (gpu__time_duration.sum) in seconds, from 1 ns (ncu
    times launches to the nanosecond: a launch that ran lasted one or more) to
    LONGEST_SECONDS."""
    name = "gpu__time_duration.sum"
    unit = launch.units.get(name, "ns")
    if unit not in _TIME_UNITS:
        raise UsageError(f"the profile of {launch.kernel} (launch {launch.id}) gives "
                         f"{name} in {unit!r}, not a unit of time ({', '.join(_TIME_UNITS)})")
    seconds = _m(launch, name) * _TIME_UNITS[unit]
    if not 1e-9 <= seconds <= LONGEST_SECONDS:
        raise UsageError(f"the profile of {launch.kernel} (launch {launch.id}) gives "
                         f"{name} = {seconds * 1e9:g} ns, not a time from 1 ns to 2^64 ns "
                         "(a launch lasts at least ncu's nanosecond, at most what its "
                         "64-bit timer holds)")
    return seconds


def check_saturation(value) -> float:
    """*value* as the MEMTHR that counts as saturated: a number in (0, 1], as MEMTHR is
    a fraction of the throughput the occupancy allows (0 would call every launch
    saturated); a ValueError otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not 0 < value <= 1:
        raise ValueError(f"saturation {repr(value)[:40]} is not a MEMTHR in (0, 1] "
                         f"(default {MEMTHR_SATURATED})")
    return float(value)


def _clip(value: float) -> float:
    return min(1.0, max(0.0, value))


def _amdahl(share: float, criterion: float | None) -> float:
    """The speedup of removing the inefficiency 1 − criterion from a time share."""
    if criterion is None or share <= 0:
        return 1.0
    return 1.0 / (1.0 - share + share * max(criterion, 1e-9))


def _inverse(criterion: float | None) -> float:
    return 1.0 if criterion is None else 1.0 / max(criterion, 1e-9)


@dataclass(frozen=True)
class KernelCriteria:
    """The criteria of one launch: *values* (in [0, 1], None where one does not apply),
    *speedups* (each criterion's potential speedup, ≥ 1), *shares* (the fraction of the
    launch's time in each activity of §V: shared, l1, l2, dram, arith, idle), MEMTHR and
    ARITHTHR, which bound it (*bound*: "memory" or "compute") and the overall *potential*
    speedup; *facts* holds the ratios behind them, for hints."""

    kernel: str
    seconds: float
    values: dict[str, float | None]
    speedups: dict[str, float]
    shares: dict[str, float]
    memthr: float
    ariththr: float
    bound: str
    potential: float
    facts: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Judgement:
    """One criterion of one launch: its *value* in [0, 1] (None where it does not
    apply), its potential *speedup* (≥ 1) and the ratios behind them (*facts*), which
    the hints quote."""

    value: float | None
    speedup: float
    facts: dict = field(default_factory=dict)


class LaunchReading:
    """What the criteria read of one profiled *launch* on the GPU *device*
    characterizes: the metrics that more than one criterion (or the overall potential
    speedup) needs, each read and checked once, when first asked for. *seconds*: the
    launch's measured time (default: ncu's gpu__time_duration.sum); *saturation*: the
    MEMTHR that counts as 1."""

    def __init__(self, launch: Launch, device: DeviceCharacterization,
                 seconds: float | None = None, saturation: float = MEMTHR_SATURATED):
        self.launch = launch
        self.device = device
        self.saturation = saturation
        self._given_seconds = seconds

    def metric(self, name: str, default: float | None = None, least: float = 0.0) -> float:
        """Metric *name* of the launch, checked (see ``_m``)."""
        return _m(self.launch, name, default, least)

    def function(self, name: str):
        """The characterization function *name* (F_SHMEM, F_Divergence, ...)."""
        return self.device.functions[name]

    @cached_property
    def seconds(self) -> float:
        return _seconds(self.launch) if self._given_seconds is None else self._given_seconds

    @cached_property
    def warp(self) -> float:
        """Threads per warp; a launch has at least one."""
        return self.metric("device__attribute_warp_size", 0.0, least=1) or _assumed(
            self.launch, "no device__attribute_warp_size", 32.0,
            "the warp of every NVIDIA GPU")

    @cached_property
    def global_bytes(self) -> tuple[float, float, float, float]:
        """(requested bytes, L1 sectors, sector size, L2 sectors) of the launch's global
        loads and stores. Requested: smsp__sass_average_data_bytes_per_sector_mem_global_
        op_{ld,st}.ratio × l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st}.sum; L1
        transfers those sectors, L2 the sectors L1 asks of it,
        lts__t_sectors_srcunit_tex_op_{read,write}.sum (fewer where loads hit in L1). On
        sm_90 the L1 and L2 move 32-byte sectors (ncu's
        ..._data_bytes_per_sector_..._op_ld.max_rate)."""
        requested, l1_sectors, sector = 0.0, 0.0, 0.0
        for op in ("ld", "st"):
            sectors = self.metric(f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum", 0.0)
            used = self.metric("smsp__sass_average_data_bytes_per_sector_mem_global_op_"
                               f"{op}.ratio", 0.0)
            sector = max(sector, self.metric("smsp__sass_average_data_bytes_per_sector_mem_"
                                             f"global_op_{op}.max_rate", 0.0))
            requested += used * sectors
            l1_sectors += sectors
        l2_sectors = sum(self.metric(f"lts__t_sectors_srcunit_tex_op_{op}.sum", 0.0)
                         for op in ("read", "write"))
        return requested, l1_sectors, sector, l2_sectors

    @cached_property
    def shared_wavefronts(self) -> dict[str, tuple[float, float]]:
        """Per shared-memory operation (ld, st): (wavefronts, bank conflicts), ncu's
        l1tex__data_pipe_lsu_wavefronts_mem_shared_op_* and
        l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_*."""
        return {op: (self.metric(f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum",
                                 0.0),
                     self.metric(f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum",
                                 0.0)) for op in ("ld", "st")}

    @cached_property
    def cycles_active(self) -> float:
        """sm__cycles_active.avg: the cycles an SM was busy, on average over the SMs."""
        return self.metric("sm__cycles_active.avg")

    @cached_property
    def achieved_warps(self) -> float:
        """The achieved fraction of warp slots
        (sm__warps_active.avg.pct_of_peak_sustained_active), at least LEAST_SHARE:
        F_DRAMThr and F_ARITHThr are fitted from one warp up."""
        achieved = self.metric("sm__warps_active.avg.pct_of_peak_sustained_active") / 100
        if achieved < LEAST_SHARE:
            achieved = _assumed(
                self.launch, f"sm__warps_active is {achieved * 100:g}% of the warp slots",
                LEAST_SHARE, "the least share the characterization is read at")
        return achieved

    @cached_property
    def memthr(self) -> float:
        """MEMTHR (§IV-H) = AchievedThroughput / (TheoreticalPeakThroughput × F_DRAMThr).
        ncu: gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed is achieved over the
        peak ncu reads from the device; F_DRAMThr at the achieved fraction of warp slots."""
        dram = self.metric("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed") / 100
        return _clip(dram / self.function("F_DRAMThr")(self.achieved_warps))

    @cached_property
    def shares(self) -> dict[str, float]:
        """The activity classification of §V: transactions at each level times the
        level's measured latency (shared: wavefronts; L1: its requests; L2: the requests
        L1 sends it; DRAM: its sectors over the L2's sectors per request), arithmetic warp
        instructions times the warp size over the measured f32 throughput per SM per
        cycle; shares of the active time, idle the rest (sm__cycles_active over
        elapsed)."""
        latency = self.device.latency_cycles
        l2_sectors = self.global_bytes[3]
        l2_requests = sum(self.metric(f"lts__t_requests_srcunit_tex_op_{op}.sum", 0.0)
                          for op in ("read", "write"))
        dram_sectors = sum(self.metric(f"dram__sectors_{op}.sum", 0.0)
                           for op in ("read", "write"))
        per_request = l2_sectors / l2_requests if l2_requests else 1.0
        memory_insts = sum(self.metric(f"smsp__sass_inst_executed_op_{k}.sum", 0.0)
                           for k in ("global_ld", "global_st", "shared_ld", "shared_st",
                                     "local_ld", "local_st"))
        arith_insts = max(self.metric("smsp__inst_executed.sum", 0.0) - memory_insts, 0.0)
        waves = sum(w for w, _ in self.shared_wavefronts.values())
        cost = {"shared": waves * latency["shared"],
                "l1": sum(self.metric(f"l1tex__t_requests_pipe_lsu_mem_global_op_{op}.sum",
                                      0.0) for op in ("ld", "st")) * latency["l1"],
                "l2": l2_requests * latency["l2"],
                "dram": dram_sectors / max(per_request, 1.0) * latency["dram"],
                "arith": arith_insts * self.warp / self.device.arith_per_sm_cycle}
        active = _clip(self.cycles_active
                       / max(self.metric("sm__cycles_elapsed.avg"), 1.0))
        total = sum(cost.values())
        shares = {k: active * v / total if total else 0.0 for k, v in cost.items()}
        shares["idle"] = max(1.0 - sum(shares.values()), 0.0)  # not -1e-17 from rounding
        return shares


# {{{ the criteria, one function each, in the order of CRITERIA

def hostsync(reading: LaunchReading) -> Judgement:
    """HOSTSYNC (§IV-A) judges the gaps between an application's launches, which one
    launch alone does not show: None, speedup 1 (``application_hostsync`` judges an
    application from its span)."""
    return Judgement(None, 1.0)


def application_hostsync(busy: float, span: float) -> Judgement:
    """HOSTSYNC (§IV-A) = Σ KernelExeTime_i / (KernelStart_N + KernelExeTime_N −
    KernelStart_1): the launches' time *busy* over the application's *span*;
    HOSTSYNC^SP = 1 / HOSTSYNC."""
    value = _clip(busy / span)
    return Judgement(value, 1.0 / max(value, 1e-9))


def devicesync(reading: LaunchReading) -> Judgement:
    """DEVICESYNC (§IV-B): 1 − StallSync, StallSync = synchronization stalls over all
    stalls. ncu: smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio, warps
    in each state per issue cycle; "barrier" is the synchronization stall, "selected" is
    the warp that issues (not a stall).

    DEVICESYNC^SP (§V): (1 − TotActiveWarps/|Warps|/CLK_cycles) · StallSync, the share of
    warp time stalled (the brackets: "warps in stall state") times the synchronization
    share of stalls = barrier / (all states, selected included); Amdahl over that share."""
    launch = reading.launch
    stalls = {m.group(1): reading.metric(k) for k, v in launch.metrics.items()
              if (m := _STALL.match(k)) and _number(v) is not None}
    stalled = sum(v for r, v in stalls.items() if r != "selected")
    sync = stalls.get("barrier", 0.0)
    stall_sync = sync / stalled if stalled > 0 else 0.0
    everything = stalled + stalls.get("selected", 0.0)
    sync_share = sync / everything if everything > 0 else 0.0
    return Judgement(1.0 - stall_sync, 1.0 / (1.0 - min(sync_share, 0.999)),
                     {"stall_sync": stall_sync})


def divergence(reading: LaunchReading) -> Judgement:
    """DIVERGENCE (§IV-C): #ExeInstructions / #PotExeInstructions × F_Divergence. ncu:
    smsp__thread_inst_executed_pred_on_per_inst_executed.ratio, the threads that execute
    each warp instruction (a predicated-off thread executes nothing: compilers turn short
    divergent branches into predication), over the warp size
    (device__attribute_warp_size). DIVERGENCE^SP = 1 / DIVERGENCE."""
    efficiency = _clip(
        reading.metric("smsp__thread_inst_executed_pred_on_per_inst_executed.ratio")
        / reading.warp)
    value = _clip(efficiency * reading.function("F_Divergence")(efficiency))
    return Judgement(value, _inverse(value), {"warp_efficiency": efficiency})


def loadbalance_warp(reading: LaunchReading) -> Judgement:
    """LOADBALANCE_WARP (§IV-D): (TotActiveWarps / TotActiveCycles) /
    ((BLOCKSIZE / 32) · #Blocks_per_SM). ncu: sm__warps_active.avg.per_cycle_active over
    the block's warps (launch__block_size) times the blocks an SM holds: the least
    launch__occupancy_limit_*, and no more than the grid gives each SM."""
    launch = reading.launch
    sms = reading.metric("launch__sm_count", 0.0, least=1) \
        or reading.metric("device__attribute_multiprocessor_count", least=1)
    # a block that ran fits on an SM at least once under every limit
    limits = {k: reading.metric(f"launch__occupancy_limit_{k}", least=1)
              for k in _OCCUPANCY_LIMITS
              if _number(launch.metrics.get(f"launch__occupancy_limit_{k}")) is not None}
    per_sm = min([*limits.values(),
                  math.ceil(reading.metric("launch__grid_size", least=1) / sms)])
    block_warps = math.ceil(reading.metric("launch__block_size", least=1) / reading.warp)
    value = _clip(reading.metric("sm__warps_active.avg.per_cycle_active")
                  / (block_warps * per_sm))
    return Judgement(value, _inverse(value), {
        "blocks_per_sm": per_sm,
        "occupancy_limit": min(limits, key=limits.get) if limits else "grid"})


def loadbalance_sm(reading: LaunchReading) -> Judgement:
    """LOADBALANCE_SM (§IV-E): 1 − (max_SM TotActiveCycles − AvgCycles) /
    max_SM TotActiveCycles = avg / max of sm__cycles_active."""
    top = reading.metric("sm__cycles_active.max")
    value = _clip(reading.cycles_active / top) if top else 1.0
    return Judgement(value, _inverse(value))


# L1/L2 GRANULARITY (§IV-F): transactions · line size against Σ Mem_instr_T · size_T,
# taken as requested over transferred bytes (module docstring);
# L1_GRANULARITY^SP = 1/L1_GRANULARITY · L1%, the same for L2 (Amdahl over the share)

def l1_granularity(reading: LaunchReading) -> Judgement:
    """L1_GRANULARITY (§IV-F): the bytes the launch's global accesses request over the
    bytes of the L1 sectors they move (``LaunchReading.global_bytes``); its speedup,
    Amdahl's over the L1's share of the time."""
    requested, l1_sectors, sector, _ = reading.global_bytes
    value = _clip(requested / (sector * l1_sectors)) if l1_sectors and sector else None
    return Judgement(value, _amdahl(reading.shares["l1"], value))


def l2_granularity(reading: LaunchReading) -> Judgement:
    """L2_GRANULARITY (§IV-F): the bytes requested over the bytes of the L2 sectors the
    L1 asks for (capped at 1 where loads hit in L1); its speedup, Amdahl's over the L2's
    share of the time."""
    requested, _, sector, l2_sectors = reading.global_bytes
    value = _clip(requested / (sector * l2_sectors)) \
        if l2_sectors and sector and requested else None
    return Judgement(value, _amdahl(reading.shares["l2"], value))


def shmem_efficiency(reading: LaunchReading) -> Judgement:
    """SHMEM_EFFICIENCY (§IV-G): (#SharedLoadTrans + #SharedStoreTrans) /
    (#SharedLoadAcc + #SharedStoreAcc) × F_SHMEM, accesses counting the replays of bank
    conflicts. ncu: the ideal wavefronts (memory_l1_wavefronts_shared_ideal, from source
    counters) or, without it, wavefronts less bank conflicts, over the wavefronts
    l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}.sum. Its speedup: Amdahl's
    over the shared memory's share of the time."""
    by_op = reading.shared_wavefronts
    waves = sum(w for w, _ in by_op.values())
    ideal = reading.metric("memory_l1_wavefronts_shared_ideal", 0.0) \
        or sum(w - c for w, c in by_op.values())
    if waves <= 0:
        return Judgement(None, _amdahl(reading.shares["shared"], None))
    ratio = _clip(ideal / waves)
    value = _clip(ratio * reading.function("F_SHMEM")(max(ratio, 1e-9)))
    # the worse of loads and stores, for the hint: wavefronts per conflict-free one
    ways = max(w / max(w - c, 1.0) for w, c in by_op.values() if w)
    return Judgement(value, _amdahl(reading.shares["shared"], value), {"shared_ways": ways})


def throughput_occupancy(reading: LaunchReading) -> Judgement:
    """THROUGHPUT/OCCUPANCY (§IV-H): 1 if MEMTHR ≈ 1 (at or above the reading's
    saturation), else 1 − (1 − occ) · MEMTHR, with occ the theoretical occupancy the
    configuration allows (sm__maximum_warps_per_active_cycle_pct) and MEMTHR
    ``LaunchReading.memthr``; its speedup, the criterion's inverse."""
    achieved = reading.achieved_warps
    occupancy = _clip(reading.metric("sm__maximum_warps_per_active_cycle_pct") / 100)
    memthr = reading.memthr
    value = 1.0 if memthr >= reading.saturation else 1.0 - (1.0 - occupancy) * memthr
    return Judgement(value, _inverse(value),
                     {"occupancy": occupancy, "achieved_occupancy": achieved})


#: one function per criterion, in the order of CRITERIA: each judges a LaunchReading
CRITERION_FUNCTIONS = (hostsync, devicesync, divergence, loadbalance_warp, loadbalance_sm,
                       l1_granularity, l2_granularity, shmem_efficiency,
                       throughput_occupancy)

# }}}


def kernel_criteria(launch: Launch, device: DeviceCharacterization,
                    seconds: float | None = None,
                    saturation: float = MEMTHR_SATURATED) -> KernelCriteria:
    """The criteria of one profiled launch on the GPU *device* characterizes, each from
    its function of CRITERION_FUNCTIONS, and the launch's overall potential speedup.
    *seconds*: the launch's measured time (default: ncu's gpu__time_duration.sum);
    *saturation*: the MEMTHR that counts as 1."""
    reading = LaunchReading(launch, device, seconds, saturation)
    seconds = reading.seconds
    reading.warp  # read first, as every criterion may need it: its warning comes first
    judged = {name: judge(reading)
              for name, judge in zip(CRITERIA, CRITERION_FUNCTIONS, strict=True)}
    facts: dict[str, float] = {}
    for judgement in judged.values():
        facts.update(judgement.facts)
    memthr = reading.memthr
    # ARITHTHR (§V): AchievedThroughput / (TheoreticalPeakThroughput × F_ARITHThr): the
    # busiest arithmetic pipe, sm__inst_executed_pipe_<pipe>.avg.pct_of_peak_sustained_
    # elapsed, over F_ARITHThr at the achieved fraction of warp slots.
    pipes = [reading.metric(k) for k, v in launch.metrics.items()
             if _ARITH_PIPE.match(k) and _number(v) is not None]
    ariththr = _clip(max(pipes, default=0.0) / 100
                     / device.functions["F_ARITHThr"](reading.achieved_warps))
    # memory- or compute-bound, as the profiler says: the larger of ncu's memory and SM
    # throughputs (gpu__compute_memory_throughput, sm__throughput; % of peak).
    memory_sol = reading.metric(
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed")
    compute_sol = reading.metric("sm__throughput.avg.pct_of_peak_sustained_elapsed")
    bound = "memory" if memory_sol >= compute_sol else "compute"
    # PotentialSpeedup (§V) = 1 / MEMTHR if memory-bound, 1 / ARITHTHR if compute-bound
    limiting = memthr if bound == "memory" else ariththr
    if limiting < LEAST_SHARE:
        limiting = _assumed(launch, f"{'MEMTHR' if bound == 'memory' else 'ARITHTHR'} is "
                            f"{limiting:g}", LEAST_SHARE,
                            f"a potential speedup of at most {1 / LEAST_SHARE:g}x")
    return KernelCriteria(launch.kernel, float(seconds),
                          {k: j.value for k, j in judged.items()},
                          {k: j.speedup for k, j in judged.items()}, reading.shares,
                          memthr, ariththr, bound, 1.0 / limiting, facts)


@dataclass(frozen=True)
class Application:
    """One run of an application: its profiled launches in order, their measured
    *seconds* (None: ncu's durations) and the measured *span* from the first launch's
    start to the last one's end (None: HOSTSYNC is not judged)."""

    name: str
    launches: tuple[Launch, ...]
    seconds: tuple[float, ...] | None = None
    span: float | None = None

    def __post_init__(self):
        if not self.launches:
            raise ValueError(f"{self.name}: no launch to judge")
        if self.seconds is not None and len(self.seconds) != len(self.launches):
            raise ValueError(f"{self.name}: {len(self.seconds)} times for "
                             f"{len(self.launches)} launches")
        for what, t in [*(("a launch's time", t) for t in self.seconds or ()),
                        *((("the span", self.span),) if self.span is not None else ())]:
            if isinstance(t, bool) or not isinstance(t, int | float) \
                    or not 0 < t <= LONGEST_SECONDS:
                raise ValueError(f"{self.name}: {what} is {repr(t)[:40]}, not a positive "
                                 "time of at most 2^64 ns in seconds")


@dataclass(frozen=True)
class Assessment:
    """An application's criteria: per launch (*kernels*), and for the whole application
    *values* (time-weighted means), *speedups* (Amdahl over the launches) and the overall
    *potential* speedup (module docstring)."""

    application: str
    kernels: tuple[KernelCriteria, ...]
    values: dict[str, float | None]
    speedups: dict[str, float]
    potential: float
    span: float
    device: str = ""  # the GPU whose characterization judged it
    mismatch: str = ""  # where the launches name another GPU: which, in words


def _mismatch(application: Application, device: str) -> str:
    """The GPUs other than *device* that the launches of *application* were profiled on
    (ncu's device__attribute_display_name), in words; "" if none."""
    def key(name: str) -> str:
        return " ".join(name.split()).casefold()

    named = {x.metrics.get("device__attribute_display_name") for x in application.launches}
    others = sorted(n for n in named
                    if isinstance(n, str) and n.strip() and key(n) != key(device))
    return (f"profiled on the {' and the '.join(others)}, judged with the characterization "
            f"of the {device}") if others else ""


def assess(application: Application, device: DeviceCharacterization,
           saturation: float = MEMTHR_SATURATED) -> Assessment:
    """Judge *application* on the GPU *device* characterizes; a DeviceMismatchWarning
    where its launches were profiled on another GPU (the criteria then weigh one GPU's
    counters with another's functions and latencies)."""
    saturation = check_saturation(saturation)
    mismatch = _mismatch(application, device.device)
    if mismatch:
        warnings.warn(DeviceMismatchWarning(f"{application.name}: {mismatch}; its "
                                            "criteria and speedups may be off"),
                      stacklevel=2)
    times = application.seconds or (None,) * len(application.launches)
    kernels = tuple(kernel_criteria(launch, device, t, saturation)
                    for launch, t in zip(application.launches, times, strict=True))
    busy = sum(k.seconds for k in kernels)
    span = application.span if application.span else busy
    values: dict[str, float | None] = {}
    speedups: dict[str, float] = {}
    for name in CRITERIA:
        judged = [(k.seconds, k.values[name]) for k in kernels if k.values[name] is not None]
        weight = sum(t for t, _ in judged)
        values[name] = sum(t * v for t, v in judged) / weight if weight else None
        speedups[name] = busy / sum(k.seconds / k.speedups[name] for k in kernels)
    if application.span:
        host = application_hostsync(busy, application.span)
        values["HOSTSYNC"], speedups["HOSTSYNC"] = host.value, host.speedup
    potential = span / sum(k.seconds / k.potential for k in kernels)
    return Assessment(application.name, kernels, values, speedups, potential, span,
                      device.device, mismatch)
