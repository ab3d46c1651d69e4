"""The fine-grained model's criteria (seed 003, §IV–V) on the case studies profiled on the
H100 and the H200 (data/<gpu>/criteria: cases.json and Nsight Compute's CSVs), the model
behind the Model protocol, and ``kernelcast advise``. Expected values come from the
kernels' geometry, worked out here by hand, not from running the code."""

import json
import lzma
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from kernelcast.errors import KernelcastError, NotFittedError, UsageError
from kernelcast.evaluation.criteria_cases import profiled
from kernelcast.fitting.microbenchmarks import Microbenchmarks, load_microbenchmarks
from kernelcast.models import get_model, model_class, model_names
from kernelcast.models.criteria.advice import LOOPY, hints
from kernelcast.models.criteria.characterization import DeviceCharacterization, characterize
from kernelcast.models.criteria.criteria import CRITERIA, Application, _amdahl, assess
from kernelcast.suites.criteria_cases import TILE, transpose_cases
from kernelcast.profile import load_profile, save_profile

ROOT = Path(__file__).resolve().parent.parent
GPUS = ("h100", "h200")
PROFILES = {"h100": ROOT / "data/profiles/nvidia-h100-80gb-hbm3-cuda-criteria.json",
            "h200": ROOT / "data/profiles/nvidia-h200-cuda-criteria.json"}


def _microbenchmarks(gpu):
    return json.loads((ROOT / "data" / gpu / "criteria" / "microbenchmarks.json").read_text())


@pytest.fixture(scope="module")
def judged():
    """Per GPU: version name -> (record, Assessment), with the committed profile's model."""
    result = {}
    for gpu in GPUS:
        model = load_profile(PROFILES[gpu])
        result[gpu] = {app.name: (record, model.assess(app))
                       for record, app in profiled(ROOT / "data" / gpu / "criteria")}
    return result


# ------------------------------------------------------------------ characterization

@pytest.mark.parametrize("gpu", GPUS)
def test_the_characterization_orders_the_memory_levels_and_round_trips(gpu):
    device = characterize(_microbenchmarks(gpu))
    lat = device.latency_cycles
    assert lat["shared"] < lat["l1"] < lat["l2"] < lat["dram"]
    # f32 adds: 4 SMSPs of 32 lanes is the most an SM can do per cycle
    assert 64 < device.arith_per_sm_cycle <= 128
    assert DeviceCharacterization.from_dict(json.loads(json.dumps(device.as_dict()))) == device


def test_a_characterization_without_a_level_is_refused():
    state = characterize(_microbenchmarks("h100")).as_dict()
    del state["latency_cycles"]["dram"]
    with pytest.raises(ValueError, match="latency_cycles"):
        DeviceCharacterization.from_dict(state)
    doc = _microbenchmarks("h100")
    doc["records"] = [r for r in doc["records"] if r["name"] != "memory/load-latency/l2"]
    with pytest.raises(ValueError, match="load-latency/l2"):
        characterize(doc)


def test_amdahl_turns_a_share_and_a_criterion_into_a_speedup():
    assert _amdahl(1.0, 0.25) == pytest.approx(4.0)   # all the time: the paper's 1/c
    assert _amdahl(0.5, 0.5) == pytest.approx(1 / 0.75)
    assert _amdahl(0.0, 0.1) == 1.0 and _amdahl(0.7, None) == 1.0


# ------------------------------------------------------------------ criteria on real data

@pytest.mark.parametrize("gpu", GPUS)
def test_every_criterion_is_in_range_and_every_speedup_at_least_one(judged, gpu):
    for name, (_, a) in judged[gpu].items():
        for criterion in CRITERIA:
            value = a.values[criterion]
            assert value is None or 0.0 <= value <= 1.0, (name, criterion)
            assert a.speedups[criterion] >= 1.0 - 1e-12, (name, criterion)
        assert a.potential >= 1.0
        for k in a.kernels:
            assert sum(k.shares.values()) == pytest.approx(1.0)
            assert all(v >= -1e-12 for v in k.shares.values())


@pytest.mark.parametrize("gpu", GPUS)
def test_the_naive_transpose_uses_two_ninths_of_the_bytes_it_moves(judged, gpu):
    # loads read rows (a warp's 32 floats fill 4 sectors: every byte used); stores write
    # a column (each float alone in its 32-byte sector: 1/8 used). Equal bytes each way:
    # requested 2B over transferred B + 8B.
    a = judged[gpu]["transpose 1-naive"][1]
    assert a.values["L1_GRANULARITY"] == pytest.approx(2 / 9, rel=0.01)
    assert a.values["L2_GRANULARITY"] == pytest.approx(2 / 9, rel=0.01)
    assert a.values["SHMEM_EFFICIENCY"] is None  # no shared memory
    for later in ("transpose 2-tiled", "transpose 3-padded", "transpose 4-reshaped"):
        assert judged[gpu][later][1].values["L1_GRANULARITY"] > 0.95


@pytest.mark.parametrize("gpu", GPUS)
def test_the_tiled_transpose_has_32_way_conflicts_and_padding_removes_them(judged, gpu):
    # tile[TILE][TILE] floats: reading a column puts all 32 lanes of a warp on one bank
    assert TILE == 32
    tiled = judged[gpu]["transpose 2-tiled"][1]
    padded = judged[gpu]["transpose 3-padded"][1]
    assert tiled.kernels[0].facts["shared_ways"] == pytest.approx(32, rel=0.02)
    assert tiled.values["SHMEM_EFFICIENCY"] < 0.1
    assert padded.kernels[0].facts["shared_ways"] < 1.2
    assert padded.values["SHMEM_EFFICIENCY"] > 0.8
    top = hints(tiled)[0]
    assert top.criterion == "SHMEM_EFFICIENCY" and "32-way bank conflicts" in top.text


@pytest.mark.parametrize("gpu", GPUS)
def test_divergence_and_host_synchronization_follow_the_versions(judged, gpu):
    j = judged[gpu]
    # the interleaved reduction's tid % (2s) leaves ever fewer threads of a warp active;
    # the ILP version keeps them all busy
    assert j["reduction 1-interleaved"][1].values["DIVERGENCE"] < 0.9
    assert j["reduction 3-ilp"][1].values["DIVERGENCE"] > 0.9
    # vertex-parallel BFS: a warp's vertices are mostly not on the frontier
    assert j["bfs 1-multikernel"][1].values["DIVERGENCE"] < 0.7
    # one launch per level, the host reading a flag in between; then a single kernel
    multi, single = j["bfs 1-multikernel"], j["bfs 2-singlekernel"]
    assert multi[1].values["HOSTSYNC"] < 0.8 and single[1].values["HOSTSYNC"] > 0.9
    for record, a in j.values():
        # §IV-A from the measured times: the launches' own times summed, over the span from
        # the first launch's start to the last one's end (at most 1)
        busy = sum(record["kernel_s_of_fastest"])
        assert len(record["kernel_s_of_fastest"]) == len(a.kernels)
        assert a.values["HOSTSYNC"] == pytest.approx(min(1.0, busy / record["min_span_s"]),
                                                     rel=1e-12)


def test_one_launch_application_has_its_launchs_criteria(judged):
    _, a = judged["h100"]["transpose 1-naive"]
    (k,) = a.kernels
    for criterion in CRITERIA[1:]:
        assert a.values[criterion] == pytest.approx(k.values[criterion])
        assert a.speedups[criterion] == pytest.approx(k.speedups[criterion])
    # the overall potential also removes the gap around the launch
    assert a.potential == pytest.approx(k.potential * a.span / k.seconds)


def test_an_application_needs_launches_and_matching_times():
    with pytest.raises(ValueError, match="no launch"):
        Application("empty", ())
    (_, app), *_ = profiled(ROOT / "data/h100/criteria")
    with pytest.raises(ValueError, match="2 times for 3 launches"):
        Application("x", app.launches, (1.0, 2.0))


def test_a_profile_without_a_needed_metric_is_a_one_line_error():
    (_, app), *_ = profiled(ROOT / "data/h100/criteria")
    launch = app.launches[0]
    broken = type(launch)(launch.id, launch.kernel, launch.block, launch.grid,
                          {k: v for k, v in launch.metrics.items()
                           if k != "sm__cycles_active.max"}, launch.units)
    device = characterize(_microbenchmarks("h100"))
    with pytest.raises(UsageError, match="lacks the metric sm__cycles_active.max"):
        assess(Application("x", (broken,)), device)


# ------------------------------------------------------------------ the model protocol

def test_the_criteria_model_is_registered_for_profiles_only():
    assert model_names("profile") == ("criteria",)
    assert "criteria" not in model_names()
    assert model_class("criteria").summary
    with pytest.raises(TypeError):
        model_class("criteria")(0.9)


def test_an_unfitted_criteria_model_refuses():
    (_, app), *_ = profiled(ROOT / "data/h100/criteria")
    model = get_model("criteria")
    with pytest.raises(NotFittedError):
        model.predict(app, {})
    with pytest.raises(NotFittedError):
        model.fitted_state()


@pytest.mark.parametrize("gpu", GPUS)
def test_explain_sums_to_predict_the_time_at_the_potential(judged, gpu):
    model = load_profile(PROFILES[gpu])
    for record, app in profiled(ROOT / "data" / gpu / "criteria"):
        parts = model.explain(app, {})
        seconds = model.predict(app, {})
        assert sum(parts.values()) == pytest.approx(seconds, rel=1e-12)
        assert seconds == pytest.approx(record["min_span_s"]
                                        / judged[gpu][app.name][1].potential)
    with pytest.raises(KernelcastError, match="profiled application"):
        model.predict("kernel.cu", {})


@pytest.mark.parametrize("gpu", GPUS)
def test_the_committed_profile_is_the_fit_of_the_committed_microbenchmarks(gpu, tmp_path):
    fitted = get_model("criteria").fit(
        load_microbenchmarks(ROOT / "data" / gpu / "criteria" / "microbenchmarks.json"))
    again = get_model("criteria").fit(Microbenchmarks(_microbenchmarks(gpu)))
    # two fits of the same data are bit-identical, and equal to the committed profile's
    assert json.dumps(fitted.fitted_state(), sort_keys=True) == json.dumps(
        again.fitted_state(), sort_keys=True) == json.dumps(
        load_profile(PROFILES[gpu]).fitted_state(), sort_keys=True)
    path = save_profile(fitted, tmp_path / "p.json")
    loaded = load_profile(path)
    assert loaded.fitted_state() == fitted.fitted_state()
    assert loaded.provenance_["device"] == fitted.provenance_["device"]


def test_a_broken_criteria_profile_is_refused(tmp_path):
    doc = json.loads(PROFILES["h100"].read_text())
    del doc["state"]["characterization"]["functions"]["F_SHMEM"]
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(KernelcastError, match="F_SHMEM"):
        load_profile(path)
    with pytest.raises(KernelcastError, match="microbenchmarks"):
        get_model("criteria").fit({"device": "x"})


# ------------------------------------------------------------------ kernelcast advise

@pytest.fixture(scope="module")
def csvs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ncu")
    data = lzma.decompress((ROOT / "data/h100/criteria/ncu.tar.xz").read_bytes())
    import io

    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(folder, filter="data")
    return folder


def _advise(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "kernelcast", "advise", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd)


def test_advise_prints_the_criteria_and_a_hint_with_its_loopy_transformation(csvs, tmp_path):
    png = tmp_path / "f.png"
    run = _advise(csvs / "transpose-2-tiled.csv", "--kernel", "transpose", "--loopy",
                  "--figure", png)
    assert run.returncode == 0, run.stderr
    assert "NVIDIA H100 80GB HBM3" in run.stdout  # the profile found from the CSV's device
    assert "shared memory efficiency" in run.stdout
    assert "32-way bank conflicts in the shared memory of transpose_tiled" in run.stdout
    assert LOOPY["SHMEM_EFFICIENCY"].split(" (")[0] in run.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_advise_json_judges_host_synchronization_with_a_span(csvs):
    run = _advise(csvs / "bfs-1-multikernel.csv", "--kernel", "^bfs", "--span", "0.0005",
                  "--device", "H100", "--json")
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert len(doc["launches"]) == 10
    busy = sum(x["seconds"] for x in doc["launches"])
    assert doc["criteria"]["HOSTSYNC"]["value"] == pytest.approx(busy / 0.0005)
    assert doc["hints"][0]["speedup"] >= doc["hints"][-1]["speedup"]


@pytest.mark.parametrize("args, message", [
    (["nothing.csv"], "no such file"),
    (["{csvs}/transpose-1-naive.csv", "--kernel", "nomatch"], "no launch of a kernel"),
    (["{csvs}/transpose-1-naive.csv", "--device", "Radeon"], "no criteria profile"),
    (["{csvs}/transpose-1-naive.csv", "--span", "-1"], "positive time"),
    (["README.md"], "raw page as CSV"),
])
def test_advise_refuses_bad_input_in_one_line(csvs, args, message):
    run = _advise(*[a.format(csvs=csvs) for a in args])
    assert run.returncode == 2
    assert message in run.stderr and len(run.stderr.strip().splitlines()) == 1
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize("gpu", GPUS)
def test_the_transpose_cases_are_launched_as_they_were_profiled(gpu):
    """The transpose cases the module builds launch the grids and blocks of the profiled
    launches, and at that size the naive version's global accesses are the ones the
    expectations above assume, counted by hand."""
    applications = {a.name: a for _, a in profiled(ROOT / "data" / gpu / "criteria")}
    built = {f"transpose {c.version}": c.steps for c in transpose_cases()}
    assert len(built) == 4
    for name, steps in built.items():
        launches = applications[name].launches
        assert [(str(s.grid), str(s.block)) for s in steps] == [
            (x.grid, x.block) for x in launches], name
    # 4096 x 4096 floats in 32 x 32 blocks: 128 x 128 blocks; 4096^2 / 32 = 524,288 warp
    # loads and as many warp stores; a warp's load reads 32 floats of a row (4 sectors of
    # 32 bytes: 2,097,152), its store writes 32 floats of a column 16 KiB apart (a sector
    # each: 16,777,216; ncu counts up to 0.2% more on these GPUs)
    assert str(built["transpose 1-naive"][0].grid) == "(128, 128, 1)"
    (naive,) = applications["transpose 1-naive"].launches
    m = naive.metrics
    assert m["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"] == 4096 ** 2 // 32
    assert m["l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"] == 4096 ** 2 // 32
    assert m["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == 4096 ** 2 // 8
    assert m["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"] == pytest.approx(
        4096 ** 2, rel=0.01)


# ------------------------------------------------------------------ Loopy kernels

@pytest.fixture(scope="module")
def loopy_csvs(tmp_path_factory):
    """Loopy kernels of examples/kernels.py profiled on the H100 through the CUDA backend
    (python -m kernelcast.measure.ncu under ncu --set full; n = 4096)."""
    import io

    folder = tmp_path_factory.mktemp("loopy")
    data = lzma.decompress((ROOT / "data/h100/criteria/loopy-ncu.tar.xz").read_bytes())
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(folder, filter="data")
    return folder


def test_advise_on_loopy_kernels_names_their_transformations(loopy_csvs):
    run = _advise(loopy_csvs / "loopy-transpose_tiled.csv", "--loopy")
    assert run.returncode == 0, run.stderr
    assert "32-way bank conflicts in the shared memory of transpose_prefetch" in run.stdout
    assert "Loopy: lp.add_padding" in run.stdout
    # the 32 ways are the counters': 4096^2 / 32 = 524,288 warp loads from the 32 x 32
    # float tile, each reading a column (32 lanes 32 words apart, all on one bank: 32
    # wavefronts where 1 would do); ncu's wavefronts per load is within 1% of that
    from kernelcast.frontends.profiler import read_ncu_csv

    (tiled,) = read_ncu_csv((loopy_csvs / "loopy-transpose_tiled.csv").read_text())
    loads = tiled.metrics["smsp__sass_inst_executed_op_shared_ld.sum"]
    wavefronts = tiled.metrics["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"]
    assert loads == 4096 ** 2 // 32 and wavefronts / loads == pytest.approx(32, rel=0.01)
    naive = json.loads(_advise(loopy_csvs / "loopy-transpose_naive.csv", "--json",
                               "--loopy").stdout)
    # a warp writes a column: one float per 32-byte sector, reads coalesced: 2/9
    assert naive["criteria"]["L2_GRANULARITY"]["value"] == pytest.approx(2 / 9, rel=0.01)
    assert naive["hints"][0]["criterion"] == "L2_GRANULARITY"
    assert naive["hints"][0]["loopy"].startswith("lp.tag_inames")


def test_advise_on_a_loopy_kernel_without_ncu_says_what_it_needs(tmp_path):
    import os

    env = dict(os.environ, PATH=str(tmp_path))  # no ncu on it
    run = subprocess.run([sys.executable, "-m", "kernelcast", "advise",
                          "examples/kernels.py:transpose_tiled", "--param", "n=4096"],
                         capture_output=True, text=True, cwd=ROOT, env=env)
    assert run.returncode == 1
    assert "needs Nsight Compute" in run.stderr and "Traceback" not in run.stderr
    run = _advise("examples/kernels.py:transpose_tiled")
    assert run.returncode == 2 and "needs sizes for n" in run.stderr
