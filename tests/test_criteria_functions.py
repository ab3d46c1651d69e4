"""The fine-grained model's criteria one function at a time (kernelcast.models.criteria.
criteria.CRITERION_FUNCTIONS), on one small launch whose metrics are chosen so that
every criterion, speedup and activity share can be worked out by hand (below, beside
each expected value), with characterization functions of two samples (so linear
between them)."""

import pytest

from kernelcast.frontends.profiler import Launch
from kernelcast.models.criteria.characterization import (Characterization,
                                                         DeviceCharacterization)
from kernelcast.models.criteria.criteria import (
    CRITERIA,
    CRITERION_FUNCTIONS,
    Application,
    LaunchReading,
    assess,
    kernel_criteria,
)

STALL = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
LIMIT = "launch__occupancy_limit_{}"

METRICS = {
    "gpu__time_duration.sum": 1000.0,  # ns: 1 µs
    "device__attribute_warp_size": 32.0,
    # DEVICESYNC: stalls barrier 1 + long scoreboard 3; the issuing warp, 1
    STALL.format("barrier"): 1.0, STALL.format("long_scoreboard"): 3.0,
    STALL.format("selected"): 1.0,
    # DIVERGENCE: 16 of a warp's 32 threads execute each instruction
    "smsp__thread_inst_executed_pred_on_per_inst_executed.ratio": 16.0,
    # LOADBALANCE_WARP: 8 blocks of 128 threads (4 warps) on 4 SMs: 2 blocks an SM,
    # fewer than any occupancy limit (registers allow 4); 6 warps active of 8
    "launch__sm_count": 4.0, LIMIT.format("blocks"): 8.0, LIMIT.format("registers"): 4.0,
    LIMIT.format("shared_mem"): 6.0, LIMIT.format("warps"): 8.0,
    "launch__grid_size": 8.0, "launch__block_size": 128.0,
    "sm__warps_active.avg.per_cycle_active": 6.0,
    # LOADBALANCE_SM: busy 800 cycles on average, 1000 at most, of 1000 elapsed
    "sm__cycles_active.max": 1000.0, "sm__cycles_active.avg": 800.0,
    "sm__cycles_elapsed.avg": 1000.0,
    # GRANULARITY: 100 L1 sectors of 32 bytes, 16 bytes of each used; 200 L2 sectors
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 100.0,
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio": 16.0,
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.max_rate": 32.0,
    "lts__t_sectors_srcunit_tex_op_read.sum": 200.0,
    # SHMEM_EFFICIENCY: 40 wavefronts, 30 of them bank conflicts: 10 would do
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": 40.0,
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": 30.0,
    # THROUGHPUT_OCCUPANCY: half the warp slots busy, half allowed, 40% of DRAM's peak
    "sm__warps_active.avg.pct_of_peak_sustained_active": 50.0,
    "sm__maximum_warps_per_active_cycle_pct": 50.0,
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": 40.0,
    # ARITHTHR: the FMA pipe at 30% of its peak; memory-bound (60% against 30%)
    "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_elapsed": 30.0,
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": 60.0,
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": 30.0,
    # activity: 20 L2 requests (10 sectors each), 40 DRAM sectors, 40 L1 requests,
    # 4020 warp instructions of which 20 memory ones
    "lts__t_requests_srcunit_tex_op_read.sum": 20.0, "dram__sectors_read.sum": 40.0,
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 40.0,
    "smsp__inst_executed.sum": 4020.0,
    "smsp__sass_inst_executed_op_global_ld.sum": 10.0,
    "smsp__sass_inst_executed_op_shared_ld.sum": 10.0,
}
LAUNCH = Launch(1, "small", "(128, 1, 1)", "(8, 1, 1)", METRICS,
                {"gpu__time_duration.sum": "ns"})


def _linear(name, x0, y0):
    """F through (x0, y0) and (1, 1): two samples, so a straight line between them."""
    return Characterization(name, (x0, 1.0), (y0, 1.0))


DEVICE = DeviceCharacterization(
    "small GPU",
    {"F_SHMEM": _linear("F_SHMEM", 0.25, 2.0),
     "F_Divergence": _linear("F_Divergence", 0.5, 0.8),
     "F_DRAMThr": _linear("F_DRAMThr", 0.5, 0.8),
     "F_ARITHThr": _linear("F_ARITHThr", 0.5, 0.6)},
    {"shared": 20.0, "l1": 30.0, "l2": 200.0, "dram": 500.0}, 64.0)

# the activities' cycles: shared 40 wavefronts × 20 = 800; L1 40 requests × 30 = 1200;
# L2 20 requests × 200 = 4000; DRAM 40 sectors / (200 / 20 sectors per request) × 500 =
# 2000; arithmetic (4020 − 20) warp instructions × 32 / 64 = 2000: 10,000 in all, over
# the 0.8 of the time the SMs are active
SHARES = {"shared": 0.8 * 800 / 10000, "l1": 0.8 * 1200 / 10000, "l2": 0.8 * 4000 / 10000,
          "dram": 0.8 * 2000 / 10000, "arith": 0.8 * 2000 / 10000, "idle": 0.2}


def _amdahl(share, criterion):
    return 1 / (1 - share + share * criterion)


# criterion: (value, speedup, facts)
EXPECTED = {
    # a launch alone has no gaps between launches to judge
    "HOSTSYNC": (None, 1.0, {}),
    # StallSync = 1 / (1 + 3); the barrier's share of every state, selected too: 1 / 5
    "DEVICESYNC": (0.75, 1 / (1 - 0.2), {"stall_sync": 0.25}),
    # 16 / 32 threads, times F_Divergence(0.5) = 0.8
    "DIVERGENCE": (0.4, 1 / 0.4, {"warp_efficiency": 0.5}),
    # 6 active warps of 4 warps × 2 blocks
    "LOADBALANCE_WARP": (0.75, 4 / 3, {"blocks_per_sm": 2, "occupancy_limit": "registers"}),
    # 800 / 1000
    "LOADBALANCE_SM": (0.8, 1.25, {}),
    # 100 × 16 requested bytes of 100 × 32 moved; Amdahl over the L1's share
    "L1_GRANULARITY": (0.5, _amdahl(SHARES["l1"], 0.5), {}),
    # 1600 of 200 × 32 bytes
    "L2_GRANULARITY": (0.25, _amdahl(SHARES["l2"], 0.25), {}),
    # 10 / 40 wavefronts, times F_SHMEM(0.25) = 2; 40 wavefronts where 10 would do
    "SHMEM_EFFICIENCY": (0.5, _amdahl(SHARES["shared"], 0.5), {"shared_ways": 4.0}),
    # MEMTHR = 0.4 / F_DRAMThr(0.5) = 0.5, below saturation: 1 − (1 − 0.5) × 0.5
    "THROUGHPUT_OCCUPANCY": (0.75, 4 / 3, {"occupancy": 0.5, "achieved_occupancy": 0.5}),
}


def _assert_facts(got: dict, want: dict):
    """The same facts: names equal, numbers to 12 digits (the limit: a name)."""
    assert set(got) == set(want)
    for name, value in want.items():
        assert got[name] == (value if isinstance(value, str)
                             else pytest.approx(value, rel=1e-12)), name


def test_the_functions_are_the_criteria_in_their_order():
    assert len(CRITERION_FUNCTIONS) == len(set(CRITERION_FUNCTIONS))
    assert tuple(f.__name__.upper() for f in CRITERION_FUNCTIONS) == CRITERIA
    assert set(EXPECTED) == set(CRITERIA)


@pytest.mark.parametrize("function", CRITERION_FUNCTIONS, ids=lambda f: f.__name__)
def test_each_criterion_of_a_small_launch_by_hand(function):
    value, speedup, facts = EXPECTED[function.__name__.upper()]
    judged = function(LaunchReading(LAUNCH, DEVICE))
    if value is None:
        assert judged.value is None
    else:
        assert judged.value == pytest.approx(value, rel=1e-12)
    assert judged.speedup == pytest.approx(speedup, rel=1e-12)
    _assert_facts(judged.facts, facts)


def test_the_launch_gathers_the_criteria_and_its_overall_potential():
    k = kernel_criteria(LAUNCH, DEVICE)
    assert k.seconds == pytest.approx(1e-6, rel=1e-12)
    assert list(k.values) == list(k.speedups) == list(CRITERIA)
    for name, (value, speedup, _) in EXPECTED.items():
        assert k.values[name] == (None if value is None else pytest.approx(value, rel=1e-12))
        assert k.speedups[name] == pytest.approx(speedup, rel=1e-12)
    assert k.shares == pytest.approx(SHARES, rel=1e-12)
    _assert_facts(k.facts, {f: v for _, _, facts in EXPECTED.values()
                            for f, v in facts.items()})
    # ARITHTHR = 0.3 / F_ARITHThr(0.5) = 0.5; memory-bound: 1 / MEMTHR = 2
    assert (k.memthr, k.ariththr, k.bound) == (pytest.approx(0.5), pytest.approx(0.5),
                                               "memory")
    assert k.potential == pytest.approx(2.0, rel=1e-12)


def test_a_saturated_memory_throughput_is_no_occupancy_problem():
    # MEMTHR 0.5 at a saturation of 0.5 counts as 1
    judged = CRITERION_FUNCTIONS[-1](LaunchReading(LAUNCH, DEVICE, saturation=0.5))
    assert (judged.value, judged.speedup) == (1.0, 1.0)


def test_host_synchronization_is_the_applications_busy_time_over_its_span():
    # two launches of 1 µs in a span of 4 µs: the GPU busy half the time
    app = Application("two", (LAUNCH, LAUNCH), (1e-6, 1e-6), 4e-6)
    a = assess(app, DEVICE)
    assert a.values["HOSTSYNC"] == pytest.approx(0.5, rel=1e-12)
    assert a.speedups["HOSTSYNC"] == pytest.approx(2.0, rel=1e-12)
    assert assess(Application("two", (LAUNCH, LAUNCH)), DEVICE).values["HOSTSYNC"] is None
