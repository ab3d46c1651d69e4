"""The Hong–Kim model: its equations on cases worked out by hand (each of the three
regimes, synchronization, occupancy), the hardware files, the workload gathered from
Loopy kernels, and the model on the committed H100 measurements."""

import json
import warnings

import pytest

import kernelcast as kc
from kernelcast.errors import KernelcastError
from kernelcast.evaluate import hong_kim_table
from kernelcast.measure.store import Store
from kernelcast.models.hardware import (Hardware, HardwareGuessWarning, known_hardware,
                                        load_hardware)
from kernelcast.models.hong_kim import VERDICTS, Workload, active_blocks_per_sm, estimate
from kernelcast.models.hong_kim_inputs import shared_memory_bytes, workload
from tests import kernel_zoo as zoo


def _gpu(**changes):
    """One SM at 1 GHz, 4 issue cycles, 400-cycle DRAM latency, no bandwidth limit."""
    base = dict(name="test GPU", warp_size=32, active_sms=1, freq_hz=1e9, issue_cycles=4,
                mem_bandwidth=1e15, mem_ld=400, departure_del_coal=4,
                departure_del_uncoal=10, max_active_warps_per_sm=24,
                max_active_blocks_per_sm=8, shared_mem_per_sm=16384)
    return Hardware(**{**base, **changes})


# 3 blocks of 8 warps fill the SM's 24 warps: N = 24, one round. Per thread 9 computation
# and 1 coalesced memory instruction: Comp_cycles = 4·10 = 40, Mem_cycles = 400,
# CWP_full = 440/40 = 11.
THREE_BLOCKS = Workload(threads_per_block=256, blocks=3, comp_insts=9, coal_mem_insts=1,
                        uncoal_mem_insts=0)


def test_computation_bound_when_mwp_exceeds_cwp():
    est = estimate(_gpu(), THREE_BLOCKS)
    # MWP = min(400/4 = 100, huge, N = 24) = 24 > CWP = 11, Comp ≤ Mem:
    # (Mem_L + Comp_cycles·N)·Rep = 400 + 40·24 = 1360 cycles
    assert (est.mwp, est.cwp, est.n, est.rep) == (24, 11, 24, 1)
    assert est.regime == "computation" and est.cycles == 1360
    assert est.seconds == pytest.approx(1.36e-6)
    assert est.verdict == "compute-bound"  # CWP − 1 = 10 < N − 1 = 23 < MWP = 24


def test_memory_bound_when_cwp_reaches_mwp():
    # departure 40 cycles: MWP = 400/40 = 10; 4 computation instructions: Comp = 20,
    # CWP = 420/20 = 21 ≥ MWP: Mem·N/MWP + Comp/#Mem·(MWP − 1) = 400·24/10 + 20·9 = 1140
    wl = Workload(threads_per_block=256, blocks=3, comp_insts=4, coal_mem_insts=1,
                  uncoal_mem_insts=0)
    est = estimate(_gpu(departure_del_coal=40), wl)
    assert (est.mwp, est.cwp) == (10, 21)
    assert est.regime == "memory" and est.cycles == pytest.approx(1140)
    assert est.verdict == "memory-bound"


def test_bandwidth_limits_mwp():
    # BW_per_warp = 1e9·128/400 = 3.2e8 B/s; 1.6e9 B/s of memory: MWP_peak_BW = 5
    est = estimate(_gpu(mem_bandwidth=1.6e9), THREE_BLOCKS)
    assert est.mwp == pytest.approx(5)
    assert est.regime == "memory"  # CWP = 11 ≥ 5
    assert est.cycles == pytest.approx(400 * 24 / 5 + 40 * 4)


def test_not_enough_warps():
    # one block of 2 warps: N = 2 caps MWP and CWP:
    # (Mem + Comp + Comp/#Mem·(MWP − 1))·Rep = 400 + 40 + 40 = 480
    wl = Workload(threads_per_block=64, blocks=1, comp_insts=9, coal_mem_insts=1,
                  uncoal_mem_insts=0)
    est = estimate(_gpu(), wl)
    assert (est.mwp, est.cwp, est.n) == (2, 2, 2)
    assert est.regime == "not-enough-warps" and est.cycles == 480
    assert est.verdict == "not enough warps"


def test_synchronization_cost():
    # Departure_delay·(MWP − 1)·#Synch·#Active_blocks·Rep = 40·9·2·3·1 = 2160 on top
    wl = Workload(threads_per_block=256, blocks=3, comp_insts=4, coal_mem_insts=1,
                  uncoal_mem_insts=0, synch_insts=2)
    est = estimate(_gpu(departure_del_coal=40), wl)
    assert est.synch_cycles == 2160 and est.cycles == pytest.approx(1140 + 2160)


def test_uncoalesced_latency_and_departure_weights():
    # Mem_L_Uncoal = 400 + (4 − 1)·10 = 430; half the instructions each way:
    # Mem_L = 415, Departure_delay = 10·4·0.5 + 4·0.5 = 22
    wl = Workload(threads_per_block=256, blocks=3, comp_insts=8, coal_mem_insts=1,
                  uncoal_mem_insts=1, uncoal_per_mw=4)
    est = estimate(_gpu(), wl)
    assert est.mem_l == 415 and est.departure_delay == 22
    assert est.mem_cycles == 430 + 400


def test_occupancy_limits_and_rounds():
    hw = _gpu(active_sms=16, registers_per_sm=8192)
    wl = Workload(threads_per_block=128, blocks=60, comp_insts=1, coal_mem_insts=1,
                  uncoal_mem_insts=0)
    # 24 warps / 4 per block = 6, but 60 blocks on 16 SMs are 3.75 each (Eq. 8)
    assert active_blocks_per_sm(hw, wl) == (3.75, 16)
    assert active_blocks_per_sm(hw, Workload(**{**wl.__dict__,
                                                "shared_mem_per_block": 6000})) == (2, 16)
    assert active_blocks_per_sm(hw, Workload(**{**wl.__dict__,
                                                "registers_per_thread": 32})) == (2, 16)
    few = Workload(**{**wl.__dict__, "blocks": 4})
    assert active_blocks_per_sm(hw, few) == (1, 4)  # four SMs hold one block each
    assert estimate(hw, wl).rep == 1
    many = Workload(**{**wl.__dict__, "blocks": 600})
    assert estimate(hw, many).rep == pytest.approx(600 / (6 * 16))
    with pytest.raises(KernelcastError, match="does not fit"):
        active_blocks_per_sm(hw, Workload(**{**wl.__dict__, "shared_mem_per_block": 20000}))


def test_computation_only():
    wl = Workload(threads_per_block=256, blocks=3, comp_insts=10, coal_mem_insts=0,
                  uncoal_mem_insts=0)
    est = estimate(_gpu(), wl)
    assert est.regime == "no-memory" and est.cycles == 4 * 10 * 24


def test_bad_workloads_are_refused():
    with pytest.raises(KernelcastError):
        Workload(threads_per_block=0, blocks=1, comp_insts=1, coal_mem_insts=0,
                 uncoal_mem_insts=0)
    with pytest.raises(KernelcastError):
        Workload(threads_per_block=32, blocks=1, comp_insts=-1, coal_mem_insts=0,
                 uncoal_mem_insts=0)


def test_packaged_hardware():
    assert {"fx5600", "c1060", "h100", "h200"} <= set(known_hardware())
    fx = load_hardware("fx5600")  # GROPHECY Table 5
    assert (fx.active_sms, fx.freq_hz, fx.mem_ld, fx.departure_del_uncoal,
            fx.departure_del_coal, fx.max_active_warps_per_sm) == (16, 1.35e9, 420, 10, 4, 24)
    c = load_hardware("c1060")  # with the GTX280's latencies
    assert (c.active_sms, c.mem_ld, c.departure_del_uncoal, c.mem_bandwidth) == (
        30, 450, 40, 104.2e9)
    h100 = load_hardware("h100")
    assert h100.active_sms == 132 and h100.max_active_warps_per_sm == 64
    assert 200 < h100.mem_ld < 3000 and "chain global" in h100.sources["mem_ld"]


def test_a_guessed_value_warns_and_a_broken_file_is_refused(tmp_path):
    data = dict(load_hardware("fx5600").__dict__)
    data["guessed"] = ["mem_ld"]
    path = tmp_path / "guess.json"
    path.write_text(json.dumps(data))
    with pytest.warns(HardwareGuessWarning, match="mem_ld guessed"):
        load_hardware(str(path))
    del data["mem_ld"]
    path.write_text(json.dumps(data))
    with pytest.raises(KernelcastError, match="missing.*mem_ld"):
        load_hardware(str(path))
    with pytest.raises(KernelcastError, match="known: .*h100"):
        load_hardware("gtx9999")


def test_workload_of_a_scaling_kernel():
    knl = zoo.scale_f32()  # y[i] = 2·x[i] in groups of 32
    wl = workload(kc.extract_properties(knl), {"n": 1000})
    assert (wl.threads_per_block, wl.blocks) == (32, 32)  # ⌈1000/32⌉ groups
    per_item = 1000 / 1024
    assert wl.coal_mem_insts == pytest.approx(2 * per_item)  # a load and a store
    assert wl.comp_insts == pytest.approx(per_item)  # one multiply
    assert wl.uncoal_mem_insts == 0 and wl.load_bytes_per_warp == 128


def test_workload_of_strided_and_transposing_kernels():
    # stride 2, float32: a warp's 32 elements span 256 bytes, 8 sectors of 32
    wl = workload(kc.extract_properties(zoo.strided(2, 1)), {"n": 640})
    assert wl.uncoal_per_mw == 8 and wl.coal_mem_insts == 0
    # transposed reads of stride n: one sector per thread; the writes are coalesced
    wl = workload(kc.extract_properties(zoo.transpose_naive()), {"n": 64})
    assert wl.uncoal_per_mw == 32
    assert wl.uncoal_mem_insts == pytest.approx(1) and wl.coal_mem_insts == pytest.approx(1)


def test_shared_memory_of_a_tiled_kernel():
    from kernelcast.suites.kernels import nbody

    assert shared_memory_bytes(nbody(256), {"n": 1000}) == 3 * 256 * 4


@pytest.mark.filterwarnings("ignore")
def test_hong_kim_on_the_h100_measurements():
    hw = load_hardware("h100")
    registers = json.loads(open("data/h100/registers.json").read())
    with Store("data/h100/opencl.sqlite") as store:
        table = hong_kim_table(hw, store, "test", registers=registers)
    assert set(table.kernel_class) == {"nbody", "convolution", "finite_difference",
                                       "skinny_matmul"}
    assert (table.predicted_s > 0).all() and table.rel_error.notna().all()
    assert set(table.verdict) <= set(VERDICTS)
    # N-body runs 64 groups of 8 warps on 132 SMs: one block per SM, N = 8
    assert (table[table.kernel_class == "nbody"].n == 8).all()


def test_cli_predicts_with_hong_kim(capsys):
    from kernelcast.cli import main

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["predict", "tests/kernel_zoo.py:scale_f32", "--model", "hong-kim",
                     "--hardware", "h100", "--param", "n=1000000", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["model"] == "hong-kim" and out["seconds"] > 0
    assert out["estimate"]["verdict"] in VERDICTS
    # 255 registers for each of a group's 32 threads: 65536 / 8160 = 8 groups per SM
    assert main(["predict", "tests/kernel_zoo.py:scale_f32", "--model", "hong-kim",
                 "--hardware", "h100", "--param", "n=1000000", "--registers", "255",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["estimate"]["active_blocks_per_sm"] == 8
    assert out["estimate"]["active_blocks_per_sm"] == 32
    assert main(["predict", "tests/kernel_zoo.py:scale_f32", "--model", "hong-kim",
                 "--param", "n=10"]) == 2
    assert "--hardware" in capsys.readouterr().err
