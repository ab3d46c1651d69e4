"""The analytical GPU model of Hong & Kim: memory and computation warp parallelism.

S. Hong and H. Kim, "An analytical model for a GPU architecture with memory-level and
thread-level parallelism awareness", ISCA 2009 (HK below, equations named as there),
as reproduced in Stevens & Klöckner's slides (shared/seeds/001, "Hong-Kim Performance
Model": MWP, CWP and BW_per_warp) and used by GROPHECY (shared/seeds/004: Eq. 8 for the
active blocks, Table 2 for the workload and Table 5 for the hardware, footnote 5 for the
bottleneck). The GPU runs warps of threads; while one warp waits for memory, others
compute. Per SM, MWP is how many memory requests can be in flight at once and CWP how
many warps can compute while one waits; which is smaller decides whether memory or
computation bounds the run time, and when neither reaches the number of active warps N,
there are not enough warps to hide latency at all.

One addition of kernelcast's: no projection is shorter than the time an SM needs to
issue its warps' instructions (the "issue-limited" regime; see ``estimate``).

The model takes a Hardware (kernelcast.hardware) and a Workload (per-thread
instruction counts; kernelcast.models.hong_kim.inputs derives one from a Loopy kernel)
and returns cycles and seconds with the quantities in between.

Public names: Workload, Estimate, active_blocks_per_sm, estimate, REGIMES, VERDICTS.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from kernelcast.errors import KernelcastError, ParameterError
from kernelcast.hardware import Hardware

_MAX_THREADS = 2**64  # launch sizes are 64-bit (size_t) in CUDA and OpenCL
REGIMES = ("not-enough-warps", "memory", "computation", "no-memory", "issue-limited")
VERDICTS = ("not enough warps", "memory-bound", "compute-bound")  # order breaks ties


@dataclass(frozen=True)
class Workload:
    """HK's inputs for one launch (GROPHECY Table 2); instruction counts are per thread."""

    threads_per_block: int
    blocks: int
    comp_insts: float  # computation instructions (shared-memory accesses included)
    coal_mem_insts: float  # coalesced global memory instructions
    uncoal_mem_insts: float  # uncoalesced global memory instructions
    uncoal_per_mw: float = 1.0  # memory transactions per uncoalesced warp instruction
    synch_insts: float = 0.0  # barriers
    load_bytes_per_warp: float = 128.0  # bytes one warp's memory instruction moves
    shared_mem_per_block: int = 0  # bytes of local memory a block allocates
    registers_per_thread: int | None = None  # None where the compiler does not say

    def __post_init__(self):
        if self.threads_per_block < 1 or self.blocks < 1:
            raise KernelcastError("a launch needs at least one block of one thread")
        if self.threads_per_block * self.blocks > _MAX_THREADS:
            raise ParameterError(f"a launch of {self.blocks} blocks of "
                                  f"{self.threads_per_block} threads exceeds the 2^64 "
                                  "work-items any GPU API can launch")
        counts = ("comp_insts", "coal_mem_insts", "uncoal_mem_insts", "synch_insts")
        bad = [n for n in counts if not 0 <= getattr(self, n) < math.inf]
        bad += [] if 1 <= self.uncoal_per_mw < math.inf else ["uncoal_per_mw"]
        bad += [] if 0 < self.load_bytes_per_warp < math.inf else ["load_bytes_per_warp"]
        if bad:
            at = ", ".join(f"{n}={getattr(self, n):.4g}" for n in bad)
            raise KernelcastError(f"a launch with {at} cannot be estimated: instruction "
                                  "counts per thread must be finite and non-negative, "
                                  "uncoal_per_mw at least 1 and load_bytes_per_warp "
                                  "positive")


@dataclass(frozen=True)
class Estimate:
    """HK's prediction and the quantities it is made of (cycles are SM clock cycles)."""

    seconds: float
    cycles: float
    regime: str  # which case of Exec_cycles_app applied (REGIMES)
    verdict: str  # the bottleneck by GROPHECY's footnote 5 (VERDICTS)
    mwp: float
    cwp: float
    n: float  # active warps per SM
    rep: float  # rounds of active blocks each SM runs
    active_blocks_per_sm: float
    active_sms: int
    mem_l: float
    departure_delay: float
    mem_cycles: float
    comp_cycles: float
    synch_cycles: float
    parts: dict  # cycles of the memory, computation and synchronization terms

    def as_dict(self) -> dict:
        return asdict(self)


def active_blocks_per_sm(hw: Hardware, wl: Workload) -> tuple[float, int]:
    """(Active_blocks_per_SM, Active_SMs): GROPHECY Eq. (8), the smallest of the blocks
    the warp, block, shared-memory and (where known) register limits allow and the blocks
    there are for each SM; plus the register limit GROPHECY leaves to future work."""
    warps_per_block = math.ceil(wl.threads_per_block / hw.warp_size)
    active_sms = min(hw.active_sms, wl.blocks)
    limits = {"warps": hw.max_active_warps_per_sm // warps_per_block,
              "block slots": hw.max_active_blocks_per_sm,
              "blocks": wl.blocks / active_sms}  # Eq. (8): Blocks / Active_SMs, a mean
    if wl.shared_mem_per_block:
        limits["shared memory"] = hw.shared_mem_per_sm // wl.shared_mem_per_block
    if wl.registers_per_thread and hw.registers_per_sm:
        limits["registers"] = hw.registers_per_sm // (wl.registers_per_thread *
                                                      warps_per_block * hw.warp_size)
    blocks = min(limits.values())
    if blocks < 1:
        short = " and ".join(name for name, limit in limits.items() if limit < 1)
        raise KernelcastError(f"a block of {wl.threads_per_block} threads does not fit "
                              f"on an SM of {hw.name}: it needs more {short} than an SM "
                              "has")
    return blocks, active_sms


def estimate(hw: Hardware, wl: Workload) -> Estimate:
    """Execution time of the launch *wl* on *hw* by HK's equations."""
    blocks_per_sm, active_sms = active_blocks_per_sm(hw, wl)
    warps_per_block = math.ceil(wl.threads_per_block / hw.warp_size)
    n = blocks_per_sm * warps_per_block  # N: active warps per SM
    rep = wl.blocks / (blocks_per_sm * active_sms)  # HK: #Rep
    mem_insts = wl.coal_mem_insts + wl.uncoal_mem_insts
    # HK: Comp_cycles = #Issue_cycles × #total_insts (total = computation + memory)
    comp_cycles = hw.issue_cycles * (wl.comp_insts + mem_insts)

    if mem_insts == 0:
        # no global memory instruction: HK's cases divide by #Mem_insts; the warps of an
        # SM then share its issue slots, as in HK's computation-bound case less Mem_L
        cycles = comp_cycles * n * rep
        synch = 0.0
        return _result(hw, {"computation": cycles}, synch, "no-memory", "compute-bound",
                       mwp=n, cwp=n, n=n,
                       rep=rep, blocks_per_sm=blocks_per_sm, active_sms=active_sms,
                       mem_l=0.0, departure=0.0, mem_cycles=0.0, comp_cycles=comp_cycles)

    # HK: Weight_uncoal, Weight_coal = the fractions of memory instructions of each kind
    weight_uncoal = wl.uncoal_mem_insts / mem_insts
    weight_coal = wl.coal_mem_insts / mem_insts
    # HK: Mem_L_Uncoal = Mem_LD + (#Uncoal_per_mw − 1) × Departure_del_uncoal
    mem_l_uncoal = hw.mem_ld + (wl.uncoal_per_mw - 1) * hw.departure_del_uncoal
    mem_l_coal = hw.mem_ld  # HK: Mem_L_Coal = Mem_LD
    # HK: Mem_L = Mem_L_Uncoal × Weight_uncoal + Mem_L_Coal × Weight_coal
    mem_l = mem_l_uncoal * weight_uncoal + mem_l_coal * weight_coal
    # HK: Departure_delay = Departure_del_uncoal × #Uncoal_per_mw × Weight_uncoal
    #                       + Departure_del_coal × Weight_coal
    departure = (hw.departure_del_uncoal * wl.uncoal_per_mw * weight_uncoal
                 + hw.departure_del_coal * weight_coal)
    # HK: MWP_Without_BW_full = Mem_L / Departure_delay
    mwp_without_bw = mem_l / departure
    # HK and the slides: BW_per_warp = Freq × Load_bytes_per_warp / Mem_L (bytes/s)
    bw_per_warp = hw.freq_hz * wl.load_bytes_per_warp / mem_l
    # HK and the slides: MWP_peak_BW = Mem_Bandwidth / (BW_per_warp × #Active_SMs)
    mwp_peak_bw = hw.mem_bandwidth / (bw_per_warp * active_sms)
    # HK and the slides: MWP = MIN(MWP_Without_BW, MWP_peak_BW, N)
    mwp = min(mwp_without_bw, mwp_peak_bw, n)
    # HK: Mem_cycles = Mem_L_Uncoal × #Uncoal_Mem_insts + Mem_L_Coal × #Coal_Mem_insts
    mem_cycles = mem_l_uncoal * wl.uncoal_mem_insts + mem_l_coal * wl.coal_mem_insts
    # HK and the slides: CWP_full = (Mem_cycles + Comp_cycles) / Comp_cycles,
    # CWP = MIN(CWP_full, N)
    cwp = min((mem_cycles + comp_cycles) / comp_cycles, n)
    comp_p = comp_cycles / mem_insts  # HK: computation period between memory insts
    # HK's (MWP − 1): the other warps' requests in flight while one waits. Where the
    # bandwidth allows less than one (MWP_peak_BW < 1, a slow memory), none overlaps;
    # HK's terms would turn negative.
    others = max(mwp - 1, 0.0)

    if mwp == n and cwp == n:
        # HK: not enough warps: Exec_cycles_app =
        #     (Mem_cycles + Comp_cycles + Comp_cycles/#Mem_insts × (MWP − 1)) × #Rep
        regime = "not-enough-warps"
        parts = {"memory": mem_cycles * rep,
                 "computation": (comp_cycles + comp_p * others) * rep}
    elif cwp >= mwp or comp_cycles > mem_cycles:
        # HK: memory bound: Exec_cycles_app =
        #     (Mem_cycles × N/MWP + Comp_cycles/#Mem_insts × (MWP − 1)) × #Rep
        regime = "memory"
        parts = {"memory": mem_cycles * n / mwp * rep, "computation": comp_p * others * rep}
    else:
        # HK: computation bound (MWP > CWP): Exec_cycles_app = (Mem_L + Comp_cycles × N)
        #     × #Rep
        regime = "computation"
        parts = {"memory": mem_l * rep, "computation": comp_cycles * n * rep}
    # kernelcast: no case may end sooner than the SM takes to issue its warps'
    # instructions, N × Comp_cycles × #Rep. HK's memory-bound case, which it also applies
    # when Comp_cycles > Mem_cycles, has no such term and can fall far below it (a
    # heavily folded kernel with few memory instructions projected 10× above the
    # GPU's issue rate); where it does, the issue limit is the time.
    issue = comp_cycles * n * rep
    if sum(parts.values()) < issue:
        regime, parts = "issue-limited", {"computation": issue}
    # HK: Synch_cost = Departure_delay × (MWP − 1) × #Synch_insts
    #                  × #Active_blocks_per_SM × #Rep
    synch = departure * others * wl.synch_insts * blocks_per_sm * rep
    # GROPHECY footnote 5: memory-bound if MWP is the smallest of MWP, CWP − 1 and N − 1,
    # compute-bound if CWP − 1 is, not enough warps if N − 1 is. A tie with N − 1 means
    # MWP or CWP was capped at N: the warps are what is missing.
    bounds = {"memory-bound": mwp, "compute-bound": cwp - 1, "not enough warps": n - 1}
    verdict = min(bounds, key=lambda k: (bounds[k], VERDICTS.index(k)))
    return _result(hw, {**parts, "synchronization": synch}, synch, regime, verdict,
                   mwp=mwp, cwp=cwp, n=n,
                   rep=rep, blocks_per_sm=blocks_per_sm, active_sms=active_sms,
                   mem_l=mem_l, departure=departure, mem_cycles=mem_cycles,
                   comp_cycles=comp_cycles)


def _result(hw, parts, synch, regime, verdict, *, mwp, cwp, n, rep, blocks_per_sm,
            active_sms, mem_l, departure, mem_cycles, comp_cycles) -> Estimate:
    # HK: Exec_cycles_with_synch = Exec_cycles_app + Synch_cost; seconds at Freq
    cycles = sum(parts.values())  # 0 for a launch of no instruction: HK prices none
    if not 0 <= cycles / hw.freq_hz < math.inf:
        raise KernelcastError(f"the Hong–Kim estimate on {hw.name} is {cycles:.4g} cycles "
                              f"at {hw.freq_hz:.4g} Hz, not a finite time: the launch's "
                              "counts are beyond what the equations can hold")
    return Estimate(seconds=cycles / hw.freq_hz, cycles=cycles, regime=regime,
                    verdict=verdict, mwp=mwp, cwp=cwp, n=n, rep=rep,
                    active_blocks_per_sm=blocks_per_sm, active_sms=active_sms, mem_l=mem_l,
                    departure_delay=departure, mem_cycles=mem_cycles,
                    comp_cycles=comp_cycles, synch_cycles=synch, parts=parts)
