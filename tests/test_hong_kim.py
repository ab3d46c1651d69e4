"""The Hong–Kim model: its equations on cases worked out by hand (each of the three
regimes, synchronization, occupancy, and the parts each term contributes), the hardware
files, the workload gathered from Loopy kernels on hardware of different warp and sector
sizes, the model behind the model interface, and the model on the committed H100
measurements."""

import dataclasses
import json
import warnings
from pathlib import Path

import pytest

import kernelcast as kc
from kernelcast.errors import HardwareGuessWarning, KernelcastError, NotFittedError
from kernelcast.evaluation.tables import table1
from kernelcast.fitting.dataset import load_dataset
from kernelcast.measure.store import Store
from kernelcast.models import HongKimModel, get_model
from kernelcast.models.hong_kim.equations import (REGIMES, VERDICTS, Estimate, Workload,
                                                  active_blocks_per_sm, estimate)
from kernelcast.hardware import (Hardware, hardware_for_device,
                                                 known_hardware, load_hardware)
from kernelcast.models.hong_kim.inputs import workload
from kernelcast.profile import load_profile, save_profile
from tests import kernel_zoo as zoo

DATA = Path(__file__).resolve().parent.parent / "data" / "h100"
ZOO = Path(__file__).resolve().parent / "kernel_zoo.py"


def _gpu(**changes):
    """One SM at 1 GHz, 4 issue cycles, 400-cycle DRAM latency, no bandwidth limit,
    warps of 32 threads and 32-byte sectors."""
    base = dict(name="test GPU", warp_size=32, active_sms=1, freq_hz=1e9, issue_cycles=4,
                mem_bandwidth=1e15, mem_ld=400, departure_del_coal=4,
                departure_del_uncoal=10, max_active_warps_per_sm=24,
                max_active_blocks_per_sm=8, shared_mem_per_sm=16384, sector_bytes=32)
    return Hardware(**{**base, **changes})


def _parts_add_up(est):
    assert set(est.parts) <= {"memory", "computation", "synchronization"}
    assert sum(est.parts.values()) == pytest.approx(est.cycles, rel=1e-12)
    assert est.seconds == pytest.approx(est.cycles / 1e9, rel=1e-12)  # the 1 GHz GPU


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
    # Mem_L·Rep = 400 of memory, Comp_cycles·N·Rep = 960 of computation
    assert est.parts == {"memory": 400, "computation": 960, "synchronization": 0}
    _parts_add_up(est)


def test_no_projection_beats_the_issue_rate():
    # 400 computation instructions and 1 memory instruction per thread, 24 warps on the
    # SM: Comp_cycles = 4 x 401 = 1604 > Mem_cycles = 400. MWP = min(400/4, 24) = 24,
    # CWP = (400 + 1604)/1604 < 24, so HK takes its memory case (Comp > Mem):
    # 400·24/24 + 1604/1·(24 − 1) = 37292 cycles, less than issuing 24 warps' 1604
    # cycles each, 38496: the issue limit is the time
    wl = Workload(threads_per_block=256, blocks=3, comp_insts=400, coal_mem_insts=1,
                  uncoal_mem_insts=0)
    est = estimate(_gpu(), wl)
    assert est.n == 24 and est.cwp == pytest.approx(2004 / 1604)
    assert est.regime == "issue-limited" and est.cycles == pytest.approx(24 * 1604)
    assert est.parts == {"computation": pytest.approx(24 * 1604), "synchronization": 0}
    _parts_add_up(est)

def test_memory_bound_when_cwp_reaches_mwp():
    # departure 40 cycles: MWP = 400/40 = 10; 4 computation instructions: Comp = 20,
    # CWP = 420/20 = 21 ≥ MWP: Mem·N/MWP + Comp/#Mem·(MWP − 1) = 400·24/10 + 20·9 = 1140
    wl = Workload(threads_per_block=256, blocks=3, comp_insts=4, coal_mem_insts=1,
                  uncoal_mem_insts=0)
    est = estimate(_gpu(departure_del_coal=40), wl)
    assert (est.mwp, est.cwp) == (10, 21)
    assert est.regime == "memory" and est.cycles == pytest.approx(1140)
    assert est.verdict == "memory-bound"
    assert est.parts["memory"] == pytest.approx(960)
    assert est.parts["computation"] == pytest.approx(180)
    assert est.parts["synchronization"] == 0
    _parts_add_up(est)


def test_bandwidth_limits_mwp():
    # BW_per_warp = 1e9·128/400 = 3.2e8 B/s; 1.6e9 B/s of memory: MWP_peak_BW = 5
    est = estimate(_gpu(mem_bandwidth=1.6e9), THREE_BLOCKS)
    assert est.mwp == pytest.approx(5)
    assert est.regime == "memory"  # CWP = 11 ≥ 5
    assert est.cycles == pytest.approx(400 * 24 / 5 + 40 * 4)
    assert est.parts["memory"] == pytest.approx(1920)
    assert est.parts["computation"] == pytest.approx(160)
    _parts_add_up(est)


def test_not_enough_warps():
    # one block of 2 warps: N = 2 caps MWP and CWP:
    # (Mem + Comp + Comp/#Mem·(MWP − 1))·Rep = 400 + 40 + 40 = 480
    wl = Workload(threads_per_block=64, blocks=1, comp_insts=9, coal_mem_insts=1,
                  uncoal_mem_insts=0)
    est = estimate(_gpu(), wl)
    assert (est.mwp, est.cwp, est.n) == (2, 2, 2)
    assert est.regime == "not-enough-warps" and est.cycles == 480
    assert est.verdict == "not enough warps"
    assert est.parts == {"memory": 400, "computation": 80, "synchronization": 0}
    _parts_add_up(est)


def test_synchronization_cost():
    # Departure_delay·(MWP − 1)·#Synch·#Active_blocks·Rep = 40·9·2·3·1 = 2160 on top
    wl = Workload(threads_per_block=256, blocks=3, comp_insts=4, coal_mem_insts=1,
                  uncoal_mem_insts=0, synch_insts=2)
    est = estimate(_gpu(departure_del_coal=40), wl)
    assert est.synch_cycles == 2160 and est.cycles == pytest.approx(1140 + 2160)
    assert est.parts["synchronization"] == 2160
    assert est.parts["memory"] + est.parts["computation"] == pytest.approx(1140)
    _parts_add_up(est)


def test_uncoalesced_latency_and_departure_weights():
    # Mem_L_Uncoal = 400 + (4 − 1)·10 = 430; half the instructions each way:
    # Mem_L = 415, Departure_delay = 10·4·0.5 + 4·0.5 = 22
    wl = Workload(threads_per_block=256, blocks=3, comp_insts=8, coal_mem_insts=1,
                  uncoal_mem_insts=1, uncoal_per_mw=4)
    est = estimate(_gpu(), wl)
    assert est.mem_l == 415 and est.departure_delay == 22
    assert est.mem_cycles == 430 + 400
    # Comp = 4·(8 + 2) = 40; MWP = 415/22; CWP = (830 + 40)/40 = 21.75 ≥ MWP: memory
    # bound, 830·24·22/415 = 1056 of memory and 40/2·(415/22 − 1) = 20·393/22 of
    # computation
    assert est.mwp == pytest.approx(415 / 22) and est.cwp == pytest.approx(21.75)
    assert est.regime == "memory"
    assert est.parts["memory"] == pytest.approx(1056)
    assert est.parts["computation"] == pytest.approx(20 * 393 / 22)
    _parts_add_up(est)


def test_occupancy_limits_and_rounds():
    hw = _gpu(active_sms=16, registers_per_sm=8192)
    wl = Workload(threads_per_block=128, blocks=60, comp_insts=1, coal_mem_insts=1,
                  uncoal_mem_insts=0)
    # 24 warps / 4 per block = 6, but 60 blocks on 16 SMs are 3.75 each (Eq. 8)
    assert active_blocks_per_sm(hw, wl) == (3.75, 16)
    assert active_blocks_per_sm(hw, dataclasses.replace(wl, shared_mem_per_block=6000)
                                ) == (2, 16)  # 16384 // 6000
    assert active_blocks_per_sm(hw, dataclasses.replace(wl, registers_per_thread=32)
                                ) == (2, 16)  # 8192 // (32·128)
    few = dataclasses.replace(wl, blocks=4)
    assert active_blocks_per_sm(hw, few) == (1, 4)  # four SMs hold one block each
    assert estimate(hw, wl).rep == 1
    many = dataclasses.replace(wl, blocks=600)
    assert estimate(hw, many).rep == pytest.approx(600 / (6 * 16))
    with pytest.raises(KernelcastError, match="does not fit"):
        active_blocks_per_sm(hw, dataclasses.replace(wl, shared_mem_per_block=20000))


def test_computation_only():
    wl = Workload(threads_per_block=256, blocks=3, comp_insts=10, coal_mem_insts=0,
                  uncoal_mem_insts=0)
    est = estimate(_gpu(), wl)
    assert est.regime == "no-memory" and est.cycles == 4 * 10 * 24
    assert est.parts == {"computation": 4 * 10 * 24}
    _parts_add_up(est)


def test_bad_workloads_are_refused():
    with pytest.raises(KernelcastError):
        Workload(threads_per_block=0, blocks=1, comp_insts=1, coal_mem_insts=0,
                 uncoal_mem_insts=0)
    with pytest.raises(KernelcastError):
        Workload(threads_per_block=32, blocks=1, comp_insts=-1, coal_mem_insts=0,
                 uncoal_mem_insts=0)
    with pytest.raises(KernelcastError, match="uncoal_per_mw"):
        Workload(threads_per_block=32, blocks=1, comp_insts=1, coal_mem_insts=0,
                 uncoal_mem_insts=1, uncoal_per_mw=0.5)


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
    # every NVIDIA GPU since compute capability 1.0 serves global memory in 32-byte
    # sectors (or segments of at least 32 bytes) to warps of 32 threads
    for name in ("fx5600", "c1060", "h100", "h200"):
        hw = load_hardware(name)
        assert (hw.warp_size, hw.sector_bytes) == (32, 32)
        assert hw.sources["sector_bytes"]
    assert hardware_for_device("NVIDIA H100 80GB HBM3") == h100
    with pytest.raises(KernelcastError, match="no packaged .* GTX 9999"):
        hardware_for_device("GTX 9999")


def test_a_guessed_value_warns_and_a_broken_file_is_refused(tmp_path):
    data = dataclasses.asdict(load_hardware("fx5600"))
    data["guessed"] = ["mem_ld"]
    path = tmp_path / "guess.json"
    path.write_text(json.dumps(data))
    with pytest.warns(HardwareGuessWarning, match="mem_ld guessed"):
        load_hardware(str(path))
    for missing in ("mem_ld", "sector_bytes"):  # sector_bytes is required now
        path.write_text(json.dumps({k: v for k, v in data.items() if k != missing}))
        with pytest.raises(KernelcastError, match=f"missing.*{missing}"):
            load_hardware(str(path))
    path.write_text(json.dumps({**data, "warp": 32}))
    with pytest.raises(KernelcastError, match="unknown parameters.*warp"):
        load_hardware(str(path))
    with pytest.raises(KernelcastError, match="known: .*h100"):
        load_hardware("gtx9999")


def test_workload_of_a_scaling_kernel():
    knl = zoo.scale_f32()  # y[i] = 2·x[i] in groups of 32
    wl = workload(kc.extract_properties(knl), {"n": 1000}, load_hardware("h100"))
    assert (wl.threads_per_block, wl.blocks) == (32, 32)  # ⌈1000/32⌉ groups
    per_item = 1000 / 1024
    assert wl.coal_mem_insts == pytest.approx(2 * per_item)  # a load and a store
    assert wl.comp_insts == pytest.approx(per_item)  # one multiply
    assert wl.uncoal_mem_insts == 0 and wl.load_bytes_per_warp == 32 * 4
    assert wl.shared_mem_per_block == 0 and wl.registers_per_thread is None
    assert workload(kc.extract_properties(knl), {"n": 1000}, load_hardware("h100"),
                    registers_per_thread=40).registers_per_thread == 40


def test_workload_of_strided_and_transposing_kernels():
    h100 = load_hardware("h100")
    # stride 2, float32: a warp's 32 elements span 256 bytes, 8 sectors of 32
    wl = workload(kc.extract_properties(zoo.strided(2, 1)), {"n": 640}, h100)
    assert wl.uncoal_per_mw == 8 and wl.coal_mem_insts == 0
    # transposed reads of stride n: one sector per thread; the writes are coalesced
    wl = workload(kc.extract_properties(zoo.transpose_naive()), {"n": 64}, h100)
    assert wl.uncoal_per_mw == 32
    assert wl.uncoal_mem_insts == pytest.approx(1) and wl.coal_mem_insts == pytest.approx(1)


@pytest.mark.parametrize("warp, sector, strided, transposed", [
    (32, 32, 32 * 2 * 4 / 32, 32),   # 8: the H100's
    (64, 32, 64 * 2 * 4 / 32, 64),   # 16: twice the threads, twice the sectors
    (32, 64, 32 * 2 * 4 / 64, 32),   # 4: sectors twice as large
    (32, 128, 32 * 2 * 4 / 128, 32),  # 2: a whole warp's 256 bytes in two segments
    (32, 4, 32, 32),                  # 64 sectors of 4 bytes, but one per thread at most
    (16, 8, 16, 16),                  # 16·2·4/8 = 16: one per thread exactly
])
def test_warp_and_sector_sizes_come_from_the_hardware(warp, sector, strided, transposed):
    """uncoal_per_mw = min(warp, warp·stride·bytes/sector) for strides 2 and 3 and a
    sector per thread for the rest; load_bytes_per_warp = warp × the mean access bytes."""
    hw = dataclasses.replace(load_hardware("h100"), warp_size=warp, sector_bytes=sector)
    wl = workload(kc.extract_properties(zoo.strided(2, 1)), {"n": 640}, hw)
    assert wl.uncoal_per_mw == strided
    assert wl.load_bytes_per_warp == warp * 4  # float32 accesses only
    wl = workload(kc.extract_properties(zoo.transpose_naive()), {"n": 64}, hw)
    assert wl.uncoal_per_mw == transposed
    # the launch does not depend on the warp size: groups of 8×8, (64/8)² of them
    assert (wl.threads_per_block, wl.blocks) == (64, 64)


def test_shared_memory_of_a_tiled_kernel():
    from kernelcast.suites.kernels import nbody

    # a work-group prefetches 3 coordinates of 256 points in float32
    props = kc.extract_properties(nbody(256))
    assert props.local_memory_bytes({"n": 1000}) == 3 * 256 * 4
    wl = workload(props, {"n": 1000}, load_hardware("h100"))
    assert wl.shared_mem_per_block == 3 * 256 * 4
    assert kc.extract_properties(zoo.scale_f32()).local_memory_bytes({"n": 1000}) == 0


# {{{ the model behind the model interface

def _hardware_file(tmp_path, hw):
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps({**dataclasses.asdict(hw), "guessed": list(hw.guessed)}))
    return str(path)


def test_the_model_explains_its_prediction_by_term(tmp_path):
    """scale_f32 at n = 1024 on the test GPU: 32 blocks of one warp, per thread one
    multiply and a coalesced load and store. Blocks per SM: min(24 warps / 1, 8, 32) = 8,
    so N = 8 and Rep = 32/8 = 4; Comp = 4·3 = 12, Mem_cycles = 2·400 = 800; MWP =
    min(400/4, huge, 8) = 8 and CWP = min(812/12, 8) = 8 both reach N: not enough warps,
    800·4 = 3200 cycles of memory and (12 + 12/2·7)·4 = 216 of computation."""
    model = HongKimModel(hardware=_hardware_file(tmp_path, _gpu())).fit()
    knl = zoo.scale_f32()
    parts = model.explain(knl, {"n": 1024})
    assert parts == pytest.approx({"memory": 3200e-9, "computation": 216e-9})
    assert list(parts) == ["memory", "computation"]  # largest first; no synchronization
    assert model.predict(knl, {"n": 1024}) == pytest.approx(3416e-9)
    assert sum(parts.values()) == pytest.approx(model.predict(knl, {"n": 1024}), rel=1e-12)
    est = model.estimate(knl, {"n": 1024})
    assert isinstance(est, Estimate) and est.regime == "not-enough-warps"
    assert (est.n, est.rep, est.mwp, est.cwp) == (8, 4, 8, 8)
    assert model.details(knl, {"n": 1024}) == {
        "regime": "not-enough-warps", "verdict": "not enough warps", "mwp": 8, "cwp": 8,
        "n": 8}
    # kc.predict and kc.explain go through the same model
    assert kc.predict(knl, {"n": 1024}, model) == model.predict(knl, {"n": 1024})
    assert kc.explain(knl, {"n": 1024}, model) == parts


def test_explain_sums_to_predict_on_the_h100():
    model = get_model("hong-kim", hardware="h100").fit()
    assert model.provenance_["device"] == "NVIDIA H100 80GB HBM3"
    cases = [(zoo.scale_f32(), {"n": 10**6}), (zoo.transpose_naive(), {"n": 2048}),
             (zoo.strided(3, 2), {"n": 10**5})]
    from kernelcast.suites.kernels import nbody
    cases.append((nbody(256), {"n": 4096}))  # with barriers: a synchronization part
    for knl, params in cases:
        parts = model.explain(knl, params)
        seconds = model.predict(knl, params)
        assert seconds > 0 and sum(parts.values()) == pytest.approx(seconds, rel=1e-12)
        assert seconds == pytest.approx(model.estimate(knl, params).seconds, rel=1e-12)
    assert "synchronization" in model.explain(nbody(256), {"n": 4096})


def test_unfitted_the_model_refuses_to_predict_and_fits_only_with_hardware():
    model = HongKimModel(hardware="h100")
    with pytest.raises(NotFittedError):
        model.predict(zoo.scale_f32(), {"n": 1000})
    with pytest.raises(KernelcastError, match="--hardware"):
        HongKimModel().fit()
    assert model.fit() is model and model.fit_report_["solver"] == []
    with pytest.raises(KernelcastError, match="not a registers file"):
        HongKimModel(hardware="h100", registers=__file__).fit()


def test_registers_per_thread_limit_the_blocks_an_sm_holds():
    # scale_f32: blocks of one warp. The H100 holds 32 blocks per SM; at 255 registers a
    # thread a block needs 255·32 = 8160 of its 65536 registers: 8 blocks
    knl, params = zoo.scale_f32(), {"n": 10**6}
    assert HongKimModel(hardware="h100").fit().estimate(knl, params
                                                         ).active_blocks_per_sm == 32
    assert HongKimModel(hardware="h100", registers_per_thread=255).fit().estimate(
        knl, params).active_blocks_per_sm == 8


def test_a_hong_kim_profile_keeps_the_hardware(tmp_path):
    model = HongKimModel(hardware=_hardware_file(tmp_path, _gpu())).fit()
    again = load_profile(save_profile(model, tmp_path / "hk.json"))
    assert isinstance(again, HongKimModel) and again.hardware_ == _gpu()
    assert again.predict(zoo.scale_f32(), {"n": 1024}) == pytest.approx(3416e-9)
    doc = json.loads((tmp_path / "hk.json").read_text())
    del doc["state"]["hardware"]
    (tmp_path / "broken.json").write_text(json.dumps(doc))
    with pytest.raises(KernelcastError, match="no hardware description"):
        load_profile(tmp_path / "broken.json")

# }}}


# {{{ the committed H100 measurements

@pytest.fixture(scope="module")
def h100_test_suite():
    with Store(DATA / "opencl.sqlite") as store:
        return load_dataset(store, "test")


@pytest.mark.filterwarnings("ignore")
def test_hong_kim_on_the_h100_measurements(h100_test_suite):
    dataset = h100_test_suite
    model = HongKimModel(hardware="h100", registers=str(DATA / "registers.json"))
    table = table1(model.fit(dataset), dataset, details=True)
    assert set(table.kernel_class) == {"nbody", "convolution", "finite_difference",
                                       "skinny_matmul"}
    assert len(table) == len(dataset)
    assert (table.predicted_s > 0).all() and table.rel_error.notna().all()
    assert set(table.verdict) <= set(VERDICTS) and set(table.regime) <= set(REGIMES)
    assert {"regime", "verdict", "mwp", "cwp", "n"} <= set(table.columns)
    # N-body runs at most 64 groups of 8 warps on 132 SMs: one block per SM, N = 8
    assert (table[table.kernel_class == "nbody"].n == 8).all()
    # finite differences: thousands of groups of 16×16 = 8 warps; the H100's 64 warps an
    # SM holds allow 8 groups, as do 32 registers a thread (65536 / (32·256)): N = 64
    assert (table[table.kernel_class == "finite_difference"].n == 64).all()
    # the model takes the device's packaged hardware when none is named
    assert HongKimModel().fit(dataset).hardware_ == load_hardware("h100")
    assert model.provenance_["device"] == dataset.identity["device"]

# }}}


def test_cli_predicts_with_hong_kim(capsys):
    from kernelcast.cli import main

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["predict", f"{ZOO}:scale_f32", "--model", "hong-kim",
                     "--hardware", "h100", "--param", "n=1000000", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["model"] == "hong-kim" and out["seconds"] > 0
    assert out["seconds"] == pytest.approx(sum(out["breakdown"].values()))
    assert out["regime"] in REGIMES and out["verdict"] in VERDICTS
    assert set(out["estimate"]) == {f.name for f in dataclasses.fields(Estimate)}
    assert out["estimate"]["verdict"] == out["verdict"]
    assert out["estimate"]["seconds"] == pytest.approx(out["seconds"])
    # 255 registers for each of a group's 32 threads: 65536 / 8160 = 8 groups per SM
    assert main(["predict", f"{ZOO}:scale_f32", "--model", "hong-kim",
                 "--hardware", "h100", "--param", "n=1000000", "--registers-per-thread", "255",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["estimate"]["active_blocks_per_sm"] == 8
    assert out["estimate"]["active_blocks_per_sm"] == 32  # the H100's block limit
    assert main(["predict", f"{ZOO}:scale_f32", "--model", "hong-kim",
                 "--param", "n=10"]) == 2
    assert "--hardware" in capsys.readouterr().err
