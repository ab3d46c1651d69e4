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

Public names: CRITERIA, MEMTHR_SATURATED, LONGEST_SECONDS, LEAST_SHARE, KernelCriteria, Application,
Assessment, kernel_criteria, assess, check_saturation.
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass, field

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


def kernel_criteria(launch: Launch, device: DeviceCharacterization,
                    seconds: float | None = None,
                    saturation: float = MEMTHR_SATURATED) -> KernelCriteria:
    """The criteria of one profiled launch on the GPU *device* characterizes. *seconds*:
    the launch's measured time (default: ncu's gpu__time_duration.sum); *saturation*: the
    MEMTHR that counts as 1."""
    F = device.functions
    if seconds is None:
        seconds = _seconds(launch)
    # sizes: a launch has at least one thread per warp, one block of one thread, one SM
    warp = _m(launch, "device__attribute_warp_size", 0.0, least=1) or _assumed(
        launch, "no device__attribute_warp_size", 32.0, "the warp of every NVIDIA GPU")
    values: dict[str, float | None] = {"HOSTSYNC": None}
    speedups: dict[str, float] = {"HOSTSYNC": 1.0}
    facts: dict[str, float] = {}

    # --- DEVICESYNC (§IV-B): 1 − StallSync, StallSync = synchronization stalls over all
    # stalls. ncu: smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio, warps
    # in each state per issue cycle; "barrier" is the synchronization stall, "selected"
    # is the warp that issues (not a stall).
    stalls = {m.group(1): _m(launch, k) for k, v in launch.metrics.items()
              if (m := _STALL.match(k)) and _number(v) is not None}
    stalled = sum(v for r, v in stalls.items() if r != "selected")
    sync = stalls.get("barrier", 0.0)
    stall_sync = sync / stalled if stalled > 0 else 0.0
    values["DEVICESYNC"] = 1.0 - stall_sync
    # DEVICESYNC^SP (§V): (1 − TotActiveWarps/|Warps|/CLK_cycles) · StallSync, the share of
    # warp time stalled (the brackets: "warps in stall state") times the synchronization
    # share of stalls = barrier / (all states, selected included); Amdahl over that share.
    everything = stalled + stalls.get("selected", 0.0)
    sync_share = sync / everything if everything > 0 else 0.0
    speedups["DEVICESYNC"] = 1.0 / (1.0 - min(sync_share, 0.999))
    facts["stall_sync"] = stall_sync

    # --- DIVERGENCE (§IV-C): #ExeInstructions / #PotExeInstructions × F_Divergence. ncu:
    # smsp__thread_inst_executed_pred_on_per_inst_executed.ratio, the threads that execute
    # each warp instruction (a predicated-off thread executes nothing: compilers turn short
    # divergent branches into predication), over the warp size (device__attribute_warp_size).
    efficiency = _clip(_m(launch, "smsp__thread_inst_executed_pred_on_per_inst_executed.ratio")
                       / warp)
    values["DIVERGENCE"] = _clip(efficiency * F["F_Divergence"](efficiency))
    speedups["DIVERGENCE"] = _inverse(values["DIVERGENCE"])  # DIVERGENCE^SP = 1/DIVERGENCE
    facts["warp_efficiency"] = efficiency

    # --- LOADBALANCE_WARP (§IV-D): (TotActiveWarps / TotActiveCycles) /
    # ((BLOCKSIZE / 32) · #Blocks_per_SM). ncu: sm__warps_active.avg.per_cycle_active over
    # the block's warps (launch__block_size) times the blocks an SM holds: the least
    # launch__occupancy_limit_*, and no more than the grid gives each SM.
    sms = _m(launch, "launch__sm_count", 0.0, least=1) \
        or _m(launch, "device__attribute_multiprocessor_count", least=1)
    # a block that ran fits on an SM at least once under every limit
    limits = {k: _m(launch, f"launch__occupancy_limit_{k}", least=1)
              for k in _OCCUPANCY_LIMITS
              if _number(launch.metrics.get(f"launch__occupancy_limit_{k}")) is not None}
    per_sm = min([*limits.values(),
                  math.ceil(_m(launch, "launch__grid_size", least=1) / sms)])
    block_warps = math.ceil(_m(launch, "launch__block_size", least=1) / warp)
    values["LOADBALANCE_WARP"] = _clip(_m(launch, "sm__warps_active.avg.per_cycle_active")
                                       / (block_warps * per_sm))
    speedups["LOADBALANCE_WARP"] = _inverse(values["LOADBALANCE_WARP"])
    facts["blocks_per_sm"] = per_sm
    facts["occupancy_limit"] = min(limits, key=limits.get) if limits else "grid"

    # --- LOADBALANCE_SM (§IV-E): 1 − (max_SM TotActiveCycles − AvgCycles) /
    # max_SM TotActiveCycles = avg / max of sm__cycles_active.
    top = _m(launch, "sm__cycles_active.max")
    values["LOADBALANCE_SM"] = _clip(_m(launch, "sm__cycles_active.avg") / top) if top else 1.0
    speedups["LOADBALANCE_SM"] = _inverse(values["LOADBALANCE_SM"])

    # --- L1/L2 GRANULARITY (§IV-F): transactions · line size against Σ Mem_instr_T ·
    # size_T, taken as requested over transferred bytes (module docstring). On sm_90 the
    # L1 and L2 move 32-byte sectors (ncu's ..._data_bytes_per_sector_..._op_ld.max_rate).
    # Requested bytes: smsp__sass_average_data_bytes_per_sector_mem_global_op_{ld,st}.ratio
    # × l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st}.sum; L1 transfers those sectors,
    # L2 the sectors L1 asks of it, lts__t_sectors_srcunit_tex_op_{read,write}.sum (fewer
    # where loads hit in L1: the criterion is then capped at 1).
    requested, l1_sectors, sector = 0.0, 0.0, 0.0
    for op in ("ld", "st"):
        sectors = _m(launch, f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum", 0.0)
        used = _m(launch, f"smsp__sass_average_data_bytes_per_sector_mem_global_op_{op}"
                  ".ratio", 0.0)
        sector = max(sector, _m(launch, "smsp__sass_average_data_bytes_per_sector_mem_"
                                f"global_op_{op}.max_rate", 0.0))
        requested += used * sectors
        l1_sectors += sectors
    l2_sectors = sum(_m(launch, f"lts__t_sectors_srcunit_tex_op_{op}.sum", 0.0)
                     for op in ("read", "write"))
    values["L1_GRANULARITY"] = _clip(requested / (sector * l1_sectors)) \
        if l1_sectors and sector else None
    values["L2_GRANULARITY"] = _clip(requested / (sector * l2_sectors)) \
        if l2_sectors and sector and requested else None

    # --- SHMEM_EFFICIENCY (§IV-G): (#SharedLoadTrans + #SharedStoreTrans) /
    # (#SharedLoadAcc + #SharedStoreAcc) × F_SHMEM, accesses counting the replays of bank
    # conflicts. ncu: the ideal wavefronts (memory_l1_wavefronts_shared_ideal, from source
    # counters) or, without it, wavefronts less bank conflicts, over the wavefronts
    # l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}.sum.
    by_op = {op: (_m(launch, f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum", 0.0),
                  _m(launch, f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum",
                     0.0)) for op in ("ld", "st")}
    waves = sum(w for w, _ in by_op.values())
    ideal = _m(launch, "memory_l1_wavefronts_shared_ideal", 0.0) \
        or sum(w - c for w, c in by_op.values())
    if waves > 0:
        ratio = _clip(ideal / waves)
        values["SHMEM_EFFICIENCY"] = _clip(ratio * F["F_SHMEM"](max(ratio, 1e-9)))
        # the worse of loads and stores, for the hint: wavefronts per conflict-free one
        facts["shared_ways"] = max(w / max(w - c, 1.0) for w, c in by_op.values() if w)
    else:
        values["SHMEM_EFFICIENCY"] = None

    # --- THROUGHPUT/OCCUPANCY (§IV-H): 1 if MEMTHR ≈ 1, else 1 − (1 − occ) · MEMTHR, with
    # MEMTHR = AchievedThroughput / (TheoreticalPeakThroughput × F_DRAMThr). ncu:
    # gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed is achieved over the peak ncu
    # reads from the device; F_DRAMThr at the achieved fraction of warp slots
    # (sm__warps_active.avg.pct_of_peak_sustained_active); occ, the theoretical occupancy
    # the configuration allows (sm__maximum_warps_per_active_cycle_pct).
    achieved_warps = _m(launch, "sm__warps_active.avg.pct_of_peak_sustained_active") / 100
    if achieved_warps < LEAST_SHARE:  # F_DRAMThr and F_ARITHThr are fitted from 1 warp up
        achieved_warps = _assumed(
            launch, f"sm__warps_active is {achieved_warps * 100:g}% of the warp slots",
            LEAST_SHARE, "the least share the characterization is read at")
    occupancy = _clip(_m(launch, "sm__maximum_warps_per_active_cycle_pct") / 100)
    dram = _m(launch, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed") / 100
    memthr = _clip(dram / F["F_DRAMThr"](achieved_warps))
    values["THROUGHPUT_OCCUPANCY"] = 1.0 if memthr >= saturation \
        else 1.0 - (1.0 - occupancy) * memthr
    speedups["THROUGHPUT_OCCUPANCY"] = _inverse(values["THROUGHPUT_OCCUPANCY"])
    facts.update(occupancy=occupancy, achieved_occupancy=achieved_warps)

    # --- ARITHTHR (§V): AchievedThroughput / (TheoreticalPeakThroughput × F_ARITHThr):
    # the busiest arithmetic pipe, sm__inst_executed_pipe_<pipe>.avg.pct_of_peak_sustained_
    # elapsed, over F_ARITHThr at the achieved fraction of warp slots.
    pipes = [_m(launch, k) for k, v in launch.metrics.items()
             if _ARITH_PIPE.match(k) and _number(v) is not None]
    ariththr = _clip(max(pipes, default=0.0) / 100 / F["F_ARITHThr"](achieved_warps))
    # memory- or compute-bound, as the profiler says: the larger of ncu's memory and SM
    # throughputs (gpu__compute_memory_throughput, sm__throughput; % of peak).
    memory_sol = _m(launch, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed")
    compute_sol = _m(launch, "sm__throughput.avg.pct_of_peak_sustained_elapsed")
    bound = "memory" if memory_sol >= compute_sol else "compute"
    # PotentialSpeedup (§V) = 1 / MEMTHR if memory-bound, 1 / ARITHTHR if compute-bound
    limiting = memthr if bound == "memory" else ariththr
    if limiting < LEAST_SHARE:
        limiting = _assumed(launch, f"{'MEMTHR' if bound == 'memory' else 'ARITHTHR'} is "
                            f"{limiting:g}", LEAST_SHARE,
                            f"a potential speedup of at most {1 / LEAST_SHARE:g}x")
    potential = 1.0 / limiting

    # --- the activity classification of §V: transactions at each level times the
    # level's measured latency (shared: wavefronts; L1: its requests; L2: the requests L1
    # sends it; DRAM: its sectors over the L2's sectors per request), arithmetic warp
    # instructions times the warp size over the measured f32 throughput per SM per
    # cycle; shares of the active time, idle the rest (sm__cycles_active over elapsed).
    l2_requests = sum(_m(launch, f"lts__t_requests_srcunit_tex_op_{op}.sum", 0.0)
                      for op in ("read", "write"))
    dram_sectors = sum(_m(launch, f"dram__sectors_{op}.sum", 0.0) for op in ("read", "write"))
    per_request = l2_sectors / l2_requests if l2_requests else 1.0
    memory_insts = sum(_m(launch, f"smsp__sass_inst_executed_op_{k}.sum", 0.0)
                       for k in ("global_ld", "global_st", "shared_ld", "shared_st",
                                 "local_ld", "local_st"))
    arith_insts = max(_m(launch, "smsp__inst_executed.sum", 0.0) - memory_insts, 0.0)
    cost = {"shared": waves * device.latency_cycles["shared"],
            "l1": sum(_m(launch, f"l1tex__t_requests_pipe_lsu_mem_global_op_{op}.sum", 0.0)
                      for op in ("ld", "st")) * device.latency_cycles["l1"],
            "l2": l2_requests * device.latency_cycles["l2"],
            "dram": dram_sectors / max(per_request, 1.0) * device.latency_cycles["dram"],
            "arith": arith_insts * warp / device.arith_per_sm_cycle}
    active = _clip(_m(launch, "sm__cycles_active.avg")
                   / max(_m(launch, "sm__cycles_elapsed.avg"), 1.0))
    total = sum(cost.values())
    shares = {k: active * v / total if total else 0.0 for k, v in cost.items()}
    shares["idle"] = max(1.0 - sum(shares.values()), 0.0)  # not -1e-17 from rounding

    # L1_GRANULARITY^SP = 1/L1_GRANULARITY · L1%; the same for L2 and SHMEM (Amdahl)
    speedups["L1_GRANULARITY"] = _amdahl(shares["l1"], values["L1_GRANULARITY"])
    speedups["L2_GRANULARITY"] = _amdahl(shares["l2"], values["L2_GRANULARITY"])
    speedups["SHMEM_EFFICIENCY"] = _amdahl(shares["shared"], values["SHMEM_EFFICIENCY"])
    return KernelCriteria(launch.kernel, float(seconds), values,
                          {k: speedups[k] for k in CRITERIA}, shares, memthr, ariththr,
                          bound, potential, facts)


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
        # HOSTSYNC (§IV-A) = Σ KernelExeTime_i / (KernelStart_N + KernelExeTime_N −
        # KernelStart_1); HOSTSYNC^SP = 1 / HOSTSYNC
        values["HOSTSYNC"] = _clip(busy / application.span)
        speedups["HOSTSYNC"] = 1.0 / max(values["HOSTSYNC"], 1e-9)
    potential = span / sum(k.seconds / k.potential for k in kernels)
    return Assessment(application.name, kernels, values, speedups, potential, span,
                      device.device, mismatch)
