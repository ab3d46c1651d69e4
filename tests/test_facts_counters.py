"""The predicted counters of one launch (kernelcast.facts.predict_counters) put together:
hand-counted on small kernels, and against Nsight Compute's counters of real H100 launches
(data/h100/counters: the launches are rebuilt from data/counters-plan.json.xz)."""

import json
import lzma
from pathlib import Path

import loopy as lp
import numpy as np
import pytest

from kernelcast.errors import UsageError
from kernelcast.facts import predict_counters
from kernelcast.facts.counters import PRINCIPAL, forget
from kernelcast.tune.launches import launch_kernel

ROOT = Path(__file__).resolve().parent.parent


def gather(n=4096, table=128):
    """out[i] = t[(7 i) % table]: a warp reads its 32 table entries from few sectors."""
    knl = lp.make_kernel("{[i]: 0<=i<n}", "out[i] = t[(7*i) % 128]",
                         [lp.GlobalArg("t", np.float32, shape=(table,)),
                          lp.GlobalArg("out", np.float32, shape=("n",)), "..."],
                         assumptions="n mod 256 = 0 and n >= 256")
    return lp.split_iname(knl, "i", 256, outer_tag="g.0", inner_tag="l.0")


def test_a_kernel_without_the_compiler_gets_its_memory_counters_and_says_what_is_missing():
    facts = predict_counters(gather(), {"n": 4096}, "h100", compiler=False)
    c = facts.counters
    # 4096 work-items, 128 warps: one load and one store request each
    assert c["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"] == 128
    assert c["l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"] == 128
    # 32 lanes of (7 i) % 128 cover 32 distinct entries of a 512-byte table: its 16
    # sectors; stores are contiguous floats: 4 sectors per warp
    assert c["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == 128 * 16
    assert c["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"] == 128 * 4
    assert "launch__registers_per_thread" in facts.missing
    assert "dram__bytes_read.sum" in facts.missing
    assert set(facts.counters) | set(facts.missing) >= set(PRINCIPAL)


def test_hardware_without_caches_is_refused():
    with pytest.raises(UsageError, match="lacks l2_cache_bytes"):
        predict_counters(gather(), {"n": 4096}, "fx5600", compiler=False)


def test_the_same_launch_again_is_remembered_and_its_counters_are_a_copy(compiler):
    forget()
    knl = gather()
    first = predict_counters(knl, {"n": 4096}, "h100")
    first.counters["dram__bytes_read.sum"] = -1.0
    again = predict_counters(knl, {"n": 4096}, "h100")
    assert again.counters["dram__bytes_read.sum"] >= 0
    assert again.counters["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == 128 * 16


def test_a_cold_launch_whose_arrays_fit_l2_reads_each_block_from_dram_at_most_once(compiler):
    facts = predict_counters(gather(n=1 << 20), {"n": 1 << 20}, "h100")
    # the 512-byte table is the only array read: eight 64-byte DRAM blocks at most
    assert facts.counters["dram__bytes_read.sum"] <= 512


def test_another_gpu_than_the_cache_model_was_measured_on_is_warned_of(compiler, tmp_path):
    import warnings

    from kernelcast.errors import HardwareGuessWarning

    for measured in ("h100", "h200"):
        with warnings.catch_warnings():
            warnings.simplefilter("error", HardwareGuessWarning)
            predict_counters(gather(), {"n": 4096}, measured)
    other = json.loads((ROOT / "src/kernelcast/hardware/h200.json").read_text())
    other["name"] = "NVIDIA H20"
    (tmp_path / "h20.json").write_text(json.dumps(other))
    with pytest.warns(HardwareGuessWarning, match="measured on the NVIDIA H100 .* H200"):
        predict_counters(gather(), {"n": 4096}, tmp_path / "h20.json")


def _launches(*labels):
    plan = json.loads(lzma.decompress((ROOT / "data/counters-plan.json.xz").read_bytes()))
    doc = json.loads(lzma.decompress(
        (ROOT / "data/h100/counters/counters.json.xz").read_bytes()))
    measured = {r["index"]: r["counters"] for r in doc["launches"]}
    out = []
    for entry in plan:
        if entry["label"] in labels:
            knl, params = launch_kernel(entry)
            out.append((entry["label"], knl, {} if entry["kind"] == "random" else params,
                        measured[entry["index"]]))
    assert len(out) == len(labels)
    return out


EXACT = ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
         "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
         "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
         "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
         "launch__registers_per_thread", "launch__occupancy_limit_registers",
         "launch__grid_size", "launch__block_size")


@pytest.mark.parametrize("label", [
    # a random kernel's Loopy twin in 4x4 groups (a warp spans eight rows)
    "random:unrestricted_13/n=1024",
    # a 2-D stencil of the tuning families in 16x16 groups
    "family:stencil2d/j.group=16,j.per_item=1,i.group=16,i.per_item=1",
    # float64 tiled matmul at 24x16: shared loads turned into 128-bit loads, and
    # bank conflicts from a 24-wide group
    "measurement:matmul_tiled[square]/float64/g24x16/l=4096,m=4096,n=4096",
    # an empty kernel: compiled to fewer than 16 registers, allocated 16 a thread
    "measurement:empty/g24x16/n=32768",
])
def test_real_h100_launches_agree_with_their_counters(compiler, label):
    [(_, knl, params, measured)] = _launches(label)
    facts = predict_counters(knl, params, "h100")
    for metric in EXACT:
        assert facts.counters[metric] == measured[metric], metric
    shared = "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"
    assert facts.counters[shared] == pytest.approx(measured[shared], rel=0.05)
    inst = "smsp__inst_executed.sum"
    assert facts.counters[inst] == pytest.approx(measured[inst], rel=0.2)


@pytest.mark.parametrize("label", [
    # x[i] read four times in one expression: one load, no L1 hits; L2 reads 1.5x the
    # sectors (the far partition's copies)
    "validation:special_elementwise/float32/g256x1/n=33554432",
    # no global loads at all: the L2 reads are the code's and constants' fetches
    "measurement:arithmetic[div]/float32/g16x16/k=728,n=1024",
    # loops of 32768 iterations a work-item, seen by the cache model through a stretch
    "validation:matvec_rows/float32/g256x1/n=32768",
])
def test_real_h100_l2_reads_agree_with_their_counters(compiler, label):
    [(_, knl, params, measured)] = _launches(label)
    facts = predict_counters(knl, params, "h100")
    read, dram = "lts__t_sectors_op_read.sum", "dram__bytes_read.sum"
    assert facts.counters[read] == pytest.approx(measured[read], rel=0.2)
    if measured[dram] > 1e6:  # below, a few blocks of code and constants
        assert facts.counters[dram] == pytest.approx(measured[dram], rel=0.2)


@pytest.mark.parametrize("label", [
    "measurement:arithmetic[div]/float32/g16x16/k=728,n=1024",
    "measurement:arithmetic[div]/float64/g24x16/k=728,n=1024",
])
def test_a_division_loop_counts_its_fast_path_only(compiler, label):
    """Each division checks its operands (FCHK) and calls a slow path that typical data
    never take; the loop around it is unrolled by 4, its counter compared in the loop's
    first block. ncu counted the instructions within 1% of the fast path's."""
    [(_, knl, params, measured)] = _launches(label)
    facts = predict_counters(knl, params, "h100")
    inst = "smsp__inst_executed.sum"
    assert facts.counters[inst] == pytest.approx(measured[inst], rel=0.02)
