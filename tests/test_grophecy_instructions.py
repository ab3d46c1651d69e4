"""GROPHECY's equations (7) and (9)–(17), each with a value worked by hand beside it."""

import pytest

from kernelcast.models.grophecy import instructions as eq


def test_7_shared_memory_per_block_sums_the_arrays():
    # MatMul, 16x16 block, stage 16: A and B tiles of 16x16 floats, 1024 bytes each
    assert eq.shared_mem_bytes_per_block([1024, 1024]) == 2048


def test_9_to_11_bytes_per_warp_weigh_each_array_by_its_requests():
    # A cached: 256 elements per stage over 64 stages (ShMem sizes), plus 16 uncached
    reqs_a = eq.data_reqs([256] * 64, [16])  # 16384 + 16 = 16400
    reqs_b = eq.data_reqs([], [100])  # 100 uncached elements
    assert (reqs_a, reqs_b) == (16400, 100)
    # (4 * 16400 + 8 * 100) / 16500 = 66400 / 16500
    avg = eq.avg_elem_bytes({"A": 4, "B": 8}, {"A": reqs_a, "B": reqs_b})
    assert avg == pytest.approx(66400 / 16500)
    assert eq.load_bytes_per_warp(avg, 32) == pytest.approx(32 * 66400 / 16500)
    assert eq.avg_elem_bytes({"A": 4}, {"A": 0}) == 0.0


def test_12_caching_instructions_count_each_threads_share_of_every_stage():
    # MatMul, 16x16 block, K = 1024, stage 16: ShMem(A, k) = 16x16 = 256 elements, 64
    # stages: floor(256 / 256) * 64 = 64 loads per thread for A
    assert eq.caching_mem_insts([256], [64], 256) == 64
    # a stage of 300 elements for 256 threads: floor(300 / 256) = 1 per stage (the
    # paper's floor); plus k = 0, 512 elements in its one stage: 2
    assert eq.caching_mem_insts([300, 512], [10, 1], 256) == 1 * 10 + 2 * 1
    with pytest.raises(ValueError):
        eq.caching_mem_insts([256], [64, 1], 256)


def test_13_to_15_direct_and_caching_instructions_split_by_coalescing():
    # a thread's tile touches 1024 elements of C directly (coalesced), 1024 of D
    # (uncoalesced), and caches 64 loads of A (coalesced) and 32 of B (uncoalesced)
    assert eq.direct_mem_insts(1024) == 1024
    assert eq.coal_mem_insts([1024], [64]) == 1088
    assert eq.uncoal_mem_insts([1024], [32]) == 1056


def test_16_transactions_per_uncoalesced_instruction():
    # 1024 direct instructions of 32 transactions and 32 caching ones of 16:
    # (1024 * 32 + 32 * 16) / 1056 = 33280 / 1056
    assert eq.uncoal_per_mw([1024 * 32, 32 * 16], 1056) == pytest.approx(33280 / 1056)
    assert eq.uncoal_per_mw([], 0) == 1.0


def test_17_functional_instructions_scale_with_the_tasks_of_a_thread():
    # MatMul's inner block: 4 instructions looping K = 1024 times, plus 2 once; folding
    # 2x1 gives each thread 2 tasks: 2 * (4 * 1024 + 2 * 1) = 8196
    assert eq.func_insts(2, [(4, 1024), (2, 1)]) == 8196


def test_two_synchronizations_per_stage():
    # 64 stages of one streaming loop and 4 of another: 2 * 68
    assert eq.synch_insts([64, 4]) == 136
