"""kernelcast.facts.compiler and kernelcast.facts.occupancy: what NVIDIA's compiler from PyPI
makes of a kernel without a GPU (registers, spills, shared and local memory, the SASS
instruction mix, static and executed per launch) and CUDA's occupancy rules, checked on
hand-written kernels whose values follow by hand and against the H100's measurements
(data/h100/registers.json, data/h100/criteria/counters.json.xz)."""

import io
import json
import lzma
import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kernelcast.errors import HardwareGuessWarning, MissingDependencyError, UsageError
from kernelcast.facts import compiler
from kernelcast.facts.compiler import compile_facts, find_tools
from kernelcast.facts.occupancy import device_limits, occupancy
from kernelcast.measure.launch import GeneratedKernel, KernelArgument

ROOT = Path(__file__).resolve().parent.parent
H100 = ROOT / "data/h100/cuda-device.json"


def _have_compiler() -> bool:
    try:
        find_tools()
    except MissingDependencyError:
        return False
    return True


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    if not _have_compiler():
        if os.environ.get("CI"):
            pytest.fail("CI installs NVIDIA's compiler and disassembler (the test extra); "
                        "they are missing")
        pytest.skip("NVIDIA's compiler is not installed (pip install -e '.[test]')")
    return tmp_path_factory.mktemp("compiler-cache")


HEADER = "#define bIdx(N) ((int) blockIdx.N)\n#define tIdx(N) ((int) threadIdx.N)\n\n"


def kernel(name, body, args, grid=(1,), block=(256,)):
    """A GeneratedKernel of hand-written CUDA in the shape Loopy writes."""
    params = ", ".join(f"{t} {n}" for t, n in args)
    code = (f"{HEADER}extern \"C\" __global__ void __launch_bounds__({block[0]}) "
            f"{name}({params})\n{{\n{body}\n}}")
    import numpy as np
    arguments = tuple(KernelArgument(n, np.dtype(np.int32 if "int" in t and "*" not in t
                                                 else np.float32), "*" in t)
                      for t, n in args)
    return GeneratedKernel(name, "cuda", code, arguments, grid, block)


COPY = kernel("copy", """\
  if (-1 + -256 * bIdx(x) + -1 * tIdx(x) + n >= 0)
    out[256 * bIdx(x) + tIdx(x)] = a[256 * bIdx(x) + tIdx(x)];""",
              [("float const *__restrict__", "a"), ("float *__restrict__", "out"),
               ("int const", "n")])


def test_copy_kernel_has_one_global_load_and_one_store(cache):
    facts = compile_facts(COPY, cache_dir=cache)
    counts = facts.static_counts
    assert counts["LDG.32"] == 1 and counts["STG.32"] == 1
    assert not any(k.startswith(("LDS", "STS", "LDL", "STL")) for k in counts)
    assert counts["EXIT"] >= 1
    assert facts.shared_bytes == 0 and facts.stack_bytes == 0
    assert facts.spill_store_bytes == facts.spill_load_bytes == 0
    assert facts.tools["ptxas"]["version"] and facts.tools["nvdisasm"]["version"]
    assert "ptxas" in facts.compiler


def test_guarded_copy_counts_the_warps_with_a_thread_in_range(cache):
    """n = 900 in 4 groups of 256: 32 warps start; warp k holds threads 32k..32k+31 and
    loads and stores when 32k < 900, so 29 warps do."""
    from pymbolic import var

    n = var("n")
    grid = ((n + 255) // 256,)
    facts = compile_facts(GeneratedKernel(COPY.name, "cuda", COPY.code, COPY.arguments,
                                          grid, (256,)), cache_dir=cache)
    counts = facts.dynamic_counts({"n": 900})
    assert counts.warps == 32
    assert counts.counters()["smsp__sass_inst_executed_op_global_ld.sum"] == 29
    assert counts.counters()["smsp__sass_inst_executed_op_global_st.sum"] == 29
    # every instruction runs in at most every warp, and the first ones in all 32
    total = sum(facts.static_counts.values())
    assert 29 * 4 < counts.instructions <= 32 * total


def test_static_shared_array_of_256_floats_is_1024_bytes(cache):
    facts = compile_facts(kernel("tile", """\
  __shared__ float tile[256];

  tile[tIdx(x)] = a[256 * bIdx(x) + tIdx(x)];
  __syncthreads();
  out[256 * bIdx(x) + tIdx(x)] = tile[255 + -1 * tIdx(x)];""",
                                 [("float const *__restrict__", "a"),
                                  ("float *__restrict__", "out")]), cache_dir=cache)
    assert facts.shared_bytes == 1024
    assert facts.barriers == 1
    counts = facts.static_counts
    assert counts["STS.32"] == 1 and counts["LDS.32"] == 1 and counts["BAR"] == 1


def test_a_large_private_array_indexed_at_run_time_lives_in_local_memory(cache):
    facts = compile_facts(kernel("private_array", """\
  float buf[1024];

  for (int k = 0; k <= 1023; ++k)
    buf[k] = a[1024 * tIdx(x) + k];
  out[tIdx(x)] = buf[n];""",
                                 [("float const *__restrict__", "a"),
                                  ("float *__restrict__", "out"), ("int const", "n")]),
                          cache_dir=cache)
    assert facts.stack_bytes >= 4096  # 1024 floats per thread
    assert any(k.startswith("STL") for k in facts.static_counts)
    assert any(k.startswith("LDL") for k in facts.static_counts)


LOOP = kernel("strided_sum", """\
  float acc;

  acc = 0.0f;
  for (int k = 0; k <= -1 + m; ++k)
    acc = acc + a[n * k + 256 * bIdx(x) + tIdx(x)];
  out[256 * bIdx(x) + tIdx(x)] = acc;""",
              [("float const *__restrict__", "a"), ("float *__restrict__", "out"),
               ("int const", "m"), ("int const", "n")], grid=(2,))


@pytest.mark.parametrize("m", [64, 1001])
def test_a_loop_runs_its_iterations_whatever_the_unrolling(cache, m):
    """One load and one add per iteration, in each of 16 warps (2 groups of 256): the
    compiler unrolls the runtime loop (main loop and remainder), the executions stay
    m per warp. m = 1001 leaves a remainder."""
    facts = compile_facts(LOOP, cache_dir=cache)
    assert facts.static_counts["LDG.32"] > 1  # unrolled
    counts = facts.dynamic_counts({"m": m, "n": 4096})
    assert counts.warps == 16
    assert counts.by_kind["LDG.32"] == 16 * m
    assert counts.by_kind["FADD"] == 16 * m
    assert counts.by_kind["STG.32"] == 16


def test_a_counter_stepping_by_four_over_one_iteration_is_no_unrolling(cache):
    """A tuned matmul (4x4 items, k unrolled by 4, both tiles prefetched): nvcc's loop
    over k_o counts 4·k_o, but each pass holds one source iteration (64 FFMA). Its
    executed shared loads and instructions against Nsight Compute's count of the same
    launch on the H100 (data/h100/counters-misses), which an unrolling of 4 undercounts
    fourfold."""
    from kernelcast.measure.codegen import generate
    from kernelcast.tune.launches import launch_kernel

    data = json.loads(lzma.decompress(
        (ROOT / "data/h100/counters-misses/counters.json.xz").read_bytes()))
    entry = next(e for e in data["launches"] if e["label"] == (
        "family:matmul/j.group=16,j.per_item=4,i.group=8,i.per_item=4,unroll.k=4,"
        "tile.k=16,prefetch.a=true,prefetch.b=true"))
    knl, params = launch_kernel(entry)
    facts = compile_facts(generate(knl, "cuda"), cache_dir=cache)
    _needs_nvrtc(facts)
    predicted = facts.counters(params)
    measured = entry["counters"]
    key = "smsp__sass_inst_executed_op_shared_ld.sum"
    assert predicted[key] == pytest.approx(measured[key], rel=0.02)
    key = "smsp__inst_executed.sum"
    assert predicted[key] == pytest.approx(measured[key], rel=0.2)


@pytest.mark.parametrize("statement, operations", [
    ("acc[0] = acc[0] + a_fetch[16 * tIdx(y) + 4 * k_o] * b_fetch[64 * k_o + tIdx(x)];", 1),
    ("v[n * i + j] = 0.2f * (u[a] + u[b - 1] + u[c] + u[d] + u[e]);", 4),
    ("out[256 * bIdx(x) + tIdx(x)] = acc;", 0),
    ("y[i] = x[i] / (x[i] - z[i]);", 1),
])
def test_float_operations_of_a_statement_leave_out_its_subscripts(statement, operations):
    assert compiler._float_operations(statement) == operations


def test_variants_whose_code_differs_have_different_facts(cache):
    one = compile_facts(COPY, cache_dir=cache)
    other = compile_facts(GeneratedKernel(COPY.name, "cuda", COPY.code.replace(
        "out[256 * bIdx(x) + tIdx(x)] = a[", "out[256 * bIdx(x) + tIdx(x)] = 2.0f * a["),
        COPY.arguments, COPY.grid, COPY.block), cache_dir=cache)
    assert one.sass_digest != other.sass_digest
    assert one.summary() != other.summary()


def test_the_second_compile_is_read_from_the_cache(cache, tmp_path, monkeypatch):
    calls = []
    real = compiler._compile
    monkeypatch.setattr(compiler, "_compile", lambda *a: calls.append(1) or real(*a))
    first = compile_facts(COPY, cache_dir=tmp_path)
    second = compile_facts(COPY, cache_dir=tmp_path)
    assert len(calls) == 1
    assert first.summary() == second.summary()
    entry, = tmp_path.glob("*.json")
    entry.write_text("{damaged")
    third = compile_facts(COPY, cache_dir=tmp_path)
    assert len(calls) == 2 and third.summary() == first.summary()
    assert json.loads(entry.read_text())["registers"] == first.registers


def test_a_missing_compiler_is_one_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(compiler, "_candidates", lambda name: iter(()))
    monkeypatch.setattr(compiler, "_nvrtc", lambda: None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'kernelcast\[test\]'"):
        compile_facts(COPY, cache_dir=tmp_path)


def test_opencl_code_is_refused(tmp_path):
    with pytest.raises(UsageError, match="CUDA"):
        compile_facts(GeneratedKernel("k", "opencl", "", (), (1,), (1,)), cache_dir=tmp_path)


# {{{ against the H100's measurements

def _needs_nvrtc(facts):
    """The H100's numbers come from cupy's NVRTC, whose front end makes other PTX than
    nvcc's (transpose prefetch: 28 registers there, 21 through nvcc)."""
    if "nvrtc" not in facts.tools:
        pytest.skip("compared with the H100 only through NVRTC "
                    "(pip install nvidia-cuda-nvrtc==13.0.88)")


def _suite_kernels():
    from kernelcast.suites.paper import get_suite

    measured = json.loads((ROOT / "data/h100/registers.json").read_text())
    found = {}
    for suite in ("measurement", "test", "validation", "extension"):
        for case in get_suite(suite).cases():
            name = case.kernel_name
            family = name.split("/")[0].split("[")[0]
            if name in measured and family not in {n.split("/")[0].split("[")[0]
                                                   for n in found}:
                found[name] = case
    return measured, found


def test_registers_agree_with_the_h100_within_two(cache):
    """One kernel of every family in data/h100/registers.json (as cupy's NVRTC compiled
    them on the H100): registers within 2, local and static shared memory equal."""
    from kernelcast.measure.codegen import generate

    measured, cases = _suite_kernels()
    assert len(cases) >= 20
    with ThreadPoolExecutor(2) as pool:
        facts = dict(zip(cases, pool.map(
            lambda c: compile_facts(generate(c.kernel(), "cuda"), cache_dir=cache),
            cases.values())))
    _needs_nvrtc(next(iter(facts.values())))
    for name, f in facts.items():
        m = measured[name]
        assert abs(f.registers - m["registers"]) <= 2, (name, f.registers, m)
        assert f.stack_bytes == m["local_bytes"], name
        assert f.shared_bytes == m["shared_bytes"], name


@pytest.fixture(scope="module")
def ncu_cases():
    data = json.loads(lzma.decompress((ROOT / "data/h100/criteria/counters.json.xz")
                                      .read_bytes()))
    return data["cases"]


@pytest.mark.parametrize("kernel_name", ["matmul_tiled[square]/float32/g16x16",
                                         "nbody/float32/g256x1",
                                         "transpose_tiles/float32/g32x8"])
def test_memory_instructions_executed_match_nsight_compute(cache, ncu_cases, kernel_name):
    """smsp__sass_inst_executed_op_{global,shared}_{ld,st}.sum of one launch as ncu
    counted it on the H100 (the criteria cases' parameters)."""
    from kernelcast.measure.codegen import generate
    from kernelcast.tune.launches import launch_kernel

    entry = next(e for e in ncu_cases if e["kernel"] == kernel_name)
    knl, _ = launch_kernel({"kind": "suite", **entry})
    facts = compile_facts(generate(knl, "cuda"), cache_dir=cache)
    _needs_nvrtc(facts)
    predicted = facts.counters(entry["params"])
    for op in ("global_ld", "global_st", "shared_ld", "shared_st"):
        key = f"smsp__sass_inst_executed_op_{op}.sum"
        assert predicted[key] == pytest.approx(entry["counters"][key], rel=0.01), key
    assert abs(predicted["launch__registers_per_thread"]
               - entry["counters"]["launch__registers_per_thread"]) <= 2

# }}}


# {{{ occupancy

def test_255_registers_in_groups_of_256_leave_one_group_per_sm():
    """255 × 32 = 8160 registers per warp, 8192 allocated; a sub-partition's 16384 hold
    2 warps, the SM 8: one group of 8 warps."""
    occ = occupancy(255, 0, 256, H100)
    assert occ.limit_registers == 1 and occ.groups_per_sm == 1
    assert occ.occupancy_pct == pytest.approx(100 * 8 / 64)
    assert occ.limiting == ("registers",)


def test_32_registers_in_groups_of_256_allow_8_groups():
    """1024 registers per warp: 16 warps per sub-partition, 64 per SM, 8 groups; the warps
    (64 / 8) allow 8 too: full occupancy."""
    occ = occupancy(32, 0, 256, H100, groups=132 * 8 * 3)
    assert occ.limit_registers == 8 and occ.limit_warps == 8 and occ.limit_blocks == 32
    assert occ.groups_per_sm == 8 and occ.occupancy_pct == 100
    assert occ.waves == pytest.approx(3.0)
    assert occ.limit_shared_mem == 233472 // 1024  # the driver's 1 KB per group


def test_100_kb_of_shared_memory_per_group_leaves_two_of_228_kb():
    """100 KB + the driver's 1 KB = 103424 bytes (a multiple of 128); 228 KB hold 2."""
    occ = occupancy(16, 100 * 1024, 128, H100)
    assert occ.shared_allocated_per_group == 103424
    assert occ.limit_shared_mem == 2 and occ.groups_per_sm == 2
    assert occ.limiting == ("shared_mem",)


def test_40_registers_in_groups_of_384_give_75_percent():
    """40 × 32 = 1280 per warp (5 units of 256): 12 warps per sub-partition, 48 per SM,
    4 groups of 12 warps: 48 of 64 warps."""
    occ = occupancy(40, 0, 384, H100)
    assert occ.limit_registers == 4 and occ.limit_warps == 5
    assert occ.occupancy_pct == 75


def test_occupancy_matches_nsight_compute_on_every_h100_launch(ncu_cases):
    """launch__occupancy_limit_* and the theoretical occupancy of all 142 launches,
    ncu's shared-memory limit against the carveout the driver chose."""
    for entry in ncu_cases:
        c = entry["counters"]
        occ = occupancy(c["launch__registers_per_thread"],
                        c["launch__shared_mem_per_block_static"],
                        c["launch__block_size"], H100, groups=c["launch__grid_size"],
                        carveout_bytes=c["launch__shared_mem_config_size"])
        for key, value in occ.counters().items():
            assert value == pytest.approx(c[key], rel=0.005, abs=0.006), (entry["kernel"], key)


def test_device_files_of_both_kinds_give_the_same_limits():
    from_cuda = device_limits(H100)
    from_hardware = device_limits(ROOT / "src/kernelcast/hardware/h100.json")
    assert from_cuda == from_hardware.__class__(**{**from_hardware.__dict__,
                                                   "name": from_cuda.name})
    assert device_limits(ROOT / "data/h200/cuda-device.json").shared_per_sm == 233472


def test_an_unknown_compute_capability_warns_and_guesses():
    device = {**json.loads(H100.read_text()), "major": 12, "minor": 7}
    with pytest.warns(HardwareGuessWarning, match="12.7"):
        occ = occupancy(32, 0, 256, device)
    assert occ.groups_per_sm == 8
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        occupancy(32, 0, 256, H100)


def test_bad_occupancy_input_is_a_usage_error():
    with pytest.raises(UsageError):
        occupancy(-1, 0, 256, H100)
    with pytest.raises(UsageError):
        occupancy(32, 0, 256, {"name": "nothing"})
    with pytest.raises(UsageError):
        occupancy(32, 0, 256, io.StringIO())

# }}}
