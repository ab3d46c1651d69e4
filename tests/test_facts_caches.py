"""Cache traffic of synthetic sector streams with hand-worked hit counts, and the LRU
simulator against an independent brute-force one."""

from collections import OrderedDict

import numpy as np
import pytest

from kernelcast.errors import UsageError
from kernelcast.facts.caches import CacheTraffic, cache_traffic, lru_sector_cache

KB = 1024
EMPTY = np.zeros(0, np.int64)


def one_group(loads, stores=EMPTY):
    return lambda g: (np.asarray(loads, np.int64), np.asarray(stores, np.int64))


def small(**kw):
    """A small GPU: 4 SMs, one group each, 4 KB of L1 (32 lines), 64 KB of L2 (512 lines)."""
    args = dict(sms=4, groups_per_sm=1, l1_bytes=4 * KB, l2_bytes=64 * KB)
    args.update(kw)
    return args


def brute_lru(sectors, stores, capacity, spl):
    """Plain OrderedDict LRU of lines holding sets of valid and dirty sectors."""
    cache, hits, evicted = OrderedDict(), [], 0
    for s, st in zip(sectors.tolist(), stores.tolist()):
        line, b = divmod(s, spl)
        if line in cache:
            cache.move_to_end(line)
            valid, dirty = cache[line]
        else:
            valid, dirty = set(), set()
            if len(cache) == capacity:
                evicted += len(cache.popitem(last=False)[1][1])
        hits.append(b in valid)
        valid.add(b)
        if st:
            dirty.add(b)
        cache[line] = (valid, dirty)
    return np.array(hits, bool), evicted, sum(len(d) for _, d in cache.values())


@pytest.mark.parametrize("seed", range(4))
def test_lru_matches_brute_force_on_random_streams(seed):
    rng = np.random.default_rng(seed)
    for _ in range(60):
        n = int(rng.integers(1, 400))
        spl = int(rng.choice([1, 2, 4, 8]))
        sectors = rng.integers(0, int(rng.integers(1, 120)), n)
        if rng.random() < 0.5:  # runs of neighbouring sectors, as coalesced requests give
            sectors = np.repeat(sectors[: n // 4 + 1], 4)[:n] + rng.integers(0, 2, n)
        stores = rng.random(n) < rng.random()
        capacity = int(rng.integers(1, 24))
        got = lru_sector_cache(sectors, stores, capacity, spl)
        want = brute_lru(sectors, stores, capacity, spl)
        assert np.array_equal(got[0], want[0])
        assert got[1:] == want[1:]


def test_lru_sector_miss_on_present_line_evicts_nothing():
    # Line 0 (sectors 0-3) then line 1; with room for 2 lines, sector 2 of line 0 misses
    # but line 1 stays: sector 4 hits.
    hit, _, _ = lru_sector_cache([0, 4, 2, 4], [False] * 4, 2, 4)
    assert hit.tolist() == [False, False, False, True]


def test_stream_that_fits_l1_read_twice_hits_on_the_second_pass():
    sectors = np.arange(64)  # 2 KB, 16 lines of the 32 in L1
    got = cache_traffic(one_group(np.concatenate((sectors, sectors))), 1, **small())
    assert got.l1_load_hit_sectors == 64
    assert got.l2_read_sectors == 64
    assert got.dram_read_bytes == 64 * 32
    assert not got.sampled


def test_streaming_read_has_no_hits():
    sectors = np.arange(4096)  # 128 KB: past L1 and L2, each sector once
    got = cache_traffic(one_group(sectors), 1, **small())
    assert got.l1_load_hit_sectors == 0
    assert got.l2_read_sectors == 4096
    assert got.dram_read_bytes == 4096 * 32


def test_stream_larger_than_l2_read_twice_misses_both_passes():
    sectors = np.arange(4 * 1024)  # 1024 lines, L2 holds 512: LRU keeps none of pass one
    got = cache_traffic(one_group(np.concatenate((sectors, sectors))), 1, **small())
    assert got.l1_load_hit_sectors == 0
    assert got.l2_read_sectors == 8192
    assert got.dram_read_bytes == 8192 * 32


def test_sector_misses_fetch_only_the_sector():
    # One sector of each line, read twice: L1 holds 32 lines of which 16 are used.
    sectors = np.arange(16) * 4
    got = cache_traffic(one_group(np.concatenate((sectors, sectors))), 1, **small())
    assert got.l1_load_hit_sectors == 16
    assert got.dram_read_bytes == 16 * 32


def panel_launch(a_sectors, b_sectors, groups):
    """Group g reads its own A block (a_sectors) and the shared panel B, interleaved."""
    b = np.arange(b_sectors) + 10**6

    place = np.argsort(np.concatenate(((np.arange(a_sectors) + 0.5) / a_sectors,
                                       (np.arange(b_sectors) + 0.5) / b_sectors)), kind="stable")

    def group_sectors(g):
        a = np.arange(a_sectors) + g * a_sectors
        return np.concatenate((a, b))[place], EMPTY

    return group_sectors


@pytest.mark.parametrize("budget", [10**6, 2000])
def test_operand_panel_shared_by_a_wave_is_read_once(budget):
    # 8 groups on 4 SMs: 2 waves; every group reads 128 own sectors and the same 128-sector
    # panel, which fits L2: DRAM reads every A block and the panel once.
    got = cache_traffic(panel_launch(128, 128, 8), 8, **small(), grid=(8,), budget=budget)
    assert got.sampled == (budget < 10**6)
    assert got.l1_load_hit_sectors == 0  # L1 holds 32 lines, a group streams 64
    assert got.l2_read_sectors == 8 * 256
    assert got.dram_read_bytes == pytest.approx((8 * 128 + 128) * 32, rel=0.02)


def test_panel_that_outgrows_l2_is_read_again_by_every_wave():
    # The panel (2048 sectors, 512 lines) and the wave's A blocks do not fit the 512-line
    # L2 together: within a wave the groups share each panel sector as they go (one miss),
    # but by the next wave LRU has dropped it, so each of the 2 waves reads it once.
    got = cache_traffic(panel_launch(256, 2048, 8), 8, **small(), budget=10**6)
    assert got.dram_read_bytes == (8 * 256 + 2 * 2048) * 32


def test_writes_are_counted_once_per_distinct_sector():
    # Each of 8 groups stores its 32 sectors twice and the next group's first 8 sectors:
    # 72 store entries a group, 8*32 distinct sectors written.
    def group_sectors(g):
        own = np.arange(32) + 32 * g
        nxt = (np.arange(8) + 32 * (g + 1)) % 256
        return EMPTY, np.concatenate((own, own, nxt))

    kept = cache_traffic(group_sectors, 8, **small(), writeback_at_end=False)
    flushed = cache_traffic(group_sectors, 8, **small(), writeback_at_end=True)
    assert kept.l2_write_sectors == flushed.l2_write_sectors == 8 * 72
    assert kept.dram_write_bytes == 0  # 8 KB of output stays in L2 when the launch ends
    assert flushed.dram_write_bytes == 256 * 32
    assert kept.dram_read_bytes == 0  # stores allocate in L2 without reading DRAM


def test_output_larger_than_l2_is_written_as_it_is_evicted():
    # 4096 distinct sectors (1024 lines) stored through a 512-line L2: all but the last
    # 512 lines are evicted, dirty, before the launch ends.
    got = cache_traffic(one_group(EMPTY, np.arange(4096)), 1, **small())
    assert got.dram_write_bytes == (4096 - 512 * 4) * 32


def test_loads_after_stores_hit_l2_and_warm_l2_reads_nothing():
    def group_sectors(g):
        return np.arange(64) + 64 * ((g + 1) % 4), np.arange(64) + 64 * g

    got = cache_traffic(group_sectors, 4, **small(sms=1), writeback_at_end=True)
    # group g reads what g+1 stores; on one SM the groups run one after another, so
    # groups 0-2 read data not yet written (DRAM) and group 3 reads group 0's output.
    assert got.dram_read_bytes == 3 * 64 * 32
    warm = cache_traffic(one_group(np.arange(256)), 1, **small(), cold=False)
    assert warm.dram_read_bytes == 0


def stencil_launch(n, tile=8):
    """A 5-point stencil on an n x n grid of floats, tiles of tile x tile work-items, one
    warp request per tile row and site (rows are 8 floats = one sector when aligned)."""
    gx = n // tile
    out = n * n // 8

    def group_sectors(g):
        bx, by = g % gx, g // gx
        loads, stores = [], []
        for di, dj in ((0, 0), (-1, 0), (1, 0), (0, -1), (0, 1)):
            for r in range(tile):
                i = by * tile + r + di
                cols = np.arange(bx * tile, bx * tile + tile) + dj
                cols = cols[(cols >= 0) & (cols < n)]
                if 0 <= i < n and cols.size:
                    loads.append(np.unique((i * n + cols) // 8))
        for r in range(tile):
            stores.append(np.array([((by * tile + r) * n + bx * tile) // 8 + out]))
        return np.concatenate(loads), np.concatenate(stores)

    return group_sectors, gx * gx, (gx, gx)


def test_sampled_launch_agrees_with_exact_simulation():
    fn, groups, grid = stencil_launch(256)  # 1024 groups, 8 waves on the small GPU below
    gpu = dict(sms=16, groups_per_sm=8, l1_bytes=8 * KB, l2_bytes=256 * KB)
    exact = cache_traffic(fn, groups, **gpu, grid=grid, budget=10**7)
    sampled = cache_traffic(fn, groups, **gpu, grid=grid, budget=20_000)
    assert not exact.sampled and sampled.sampled
    assert sampled.groups_simulated < groups / 2
    for name in ("l1_load_hit_sectors", "l2_read_sectors", "l2_write_sectors",
                 "dram_read_bytes", "dram_write_bytes"):
        assert getattr(sampled, name) == pytest.approx(getattr(exact, name), rel=0.05, abs=64)
    # hand count: every input sector is read from DRAM once (256*256 floats = 8192 sectors)
    assert exact.dram_read_bytes == 8192 * 32


def test_sampled_results_are_deterministic():
    fn, groups, grid = stencil_launch(256)
    gpu = dict(sms=16, groups_per_sm=8, l1_bytes=8 * KB, l2_bytes=256 * KB)
    a = cache_traffic(fn, groups, **gpu, grid=grid, budget=20_000)
    b = cache_traffic(fn, groups, **gpu, grid=grid, budget=20_000)
    assert a == b


def test_per_array_breakdown_sums_to_totals():
    fn = panel_launch(128, 128, 8)
    ranges = {"a": (0, 8 * 128), "b": (10**6, 10**6 + 128)}
    got = cache_traffic(fn, 8, **small(), ranges=ranges)
    assert got.by_array["a"]["dram_read_bytes"] == 8 * 128 * 32
    assert got.by_array["b"]["dram_read_bytes"] == 128 * 32
    assert sum(v["l2_read_sectors"] for v in got.by_array.values()) == got.l2_read_sectors


def test_counters_use_nsight_compute_names():
    got = cache_traffic(one_group(np.arange(8)), 1, **small())
    assert isinstance(got, CacheTraffic)
    assert got.counters() == {
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum": 0.0,
        "lts__t_sectors_op_read.sum": 8.0,
        "lts__t_sectors_op_write.sum": 0.0,
        "dram__bytes_read.sum": 256.0,
        "dram__bytes_write.sum": 0.0,
    }


@pytest.mark.parametrize("bad", [dict(sms=0), dict(l1_bytes=64), dict(line_bytes=48)])
def test_bad_parameters_are_usage_errors(bad):
    with pytest.raises(UsageError):
        cache_traffic(one_group(np.arange(8)), 1, **small(**bad))
