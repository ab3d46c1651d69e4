"""Cache traffic of synthetic sector streams with hand-worked hit counts, and the LRU
simulator against an independent brute-force one."""

import csv
import io
import lzma
import re
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest

from kernelcast.errors import UsageError
from kernelcast.facts.caches import (
    CODE_FETCH,
    L2_HIT_FADE,
    CacheTraffic,
    _footprint_window,
    cache_traffic,
    lru_sector_cache,
)

KB = 1024
EMPTY = np.zeros(0, np.int64)


def one_group(loads, stores=EMPTY):
    return lambda g: (np.asarray(loads, np.int64), np.asarray(stores, np.int64))


def small(**kw):
    """A small GPU: 4 SMs, one group each, 4 KB of L1 (32 lines), 64 KB of L2 (512 lines)
    in one partition, DRAM read by the sector, nothing dirty in L2 at the start."""
    args = {"sms": 4, "groups_per_sm": 1, "l1_bytes": 4 * KB, "l2_bytes": 64 * KB,
            "l2_partitions": 1, "dram_fetch_bytes": 32, "dirty_at_start_bytes": 0}
    args.update(kw)
    return args


def brute_lru(sectors, stores, capacity, spl, fetch=1, stores_last=False):
    """Plain OrderedDict LRU of lines holding sets of valid and dirty sectors; a load
    makes its whole block of ``fetch`` sectors valid; with ``stores_last`` a run of
    stores on a line leaves it where it was, or enters it as the next to go."""
    cache, hits, evicted = OrderedDict(), [], 0
    lines = (sectors // spl).tolist()
    for i, (s, st) in enumerate(zip(sectors.tolist(), stores.tolist())):
        line, b = divmod(s, spl)
        start = i  # the run of entries on this line that this entry is in
        while start > 0 and lines[start - 1] == line:
            start -= 1
        end = i
        while end + 1 < len(lines) and lines[end + 1] == line:
            end += 1
        quiet = stores_last and bool(np.all(stores[start:end + 1]))
        if line in cache:
            if not quiet and i == start:
                cache.move_to_end(line)
            valid, dirty = cache[line]
        else:
            valid, dirty = set(), set()
            if len(cache) == capacity:
                evicted += len(cache.popitem(last=False)[1][1])
            cache[line] = (valid, dirty)
            if quiet:
                cache.move_to_end(line, last=False)
        hits.append(b in valid)
        if st:
            valid.add(b)
            dirty.add(b)
        else:
            valid.update(range(b - b % fetch, b - b % fetch + fetch))
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
        fetch = int(rng.choice([f for f in (1, 2, 4) if spl % f == 0]))
        last = bool(rng.random() < 0.5)
        got = lru_sector_cache(sectors, stores, capacity, spl, fetch, stores_last=last)
        want = brute_lru(sectors, stores, capacity, spl, fetch, stores_last=last)
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
    assert got.dram_read_bytes == pytest.approx((8 * 128 + 128) * 32,
                                                rel=0.1 if got.sampled else 0)


@pytest.mark.parametrize("private, reads_of_panel", [(64, 1), (512, 2)])
def test_shared_panel_is_read_again_once_l2_has_streamed_more_than_it_holds(
        private, reads_of_panel):
    # 12 groups, 4 at a time (group g starts at g/4); groups 0 and 8 read the same
    # 128-sector panel, every group streams its own sectors. Between the two reads of the
    # panel (2 time units) the 4 running groups stream 2 * 4 * private sectors: 512
    # sectors (128 lines) fit the 512-line L2, 4096 (1024 lines) do not.
    panel = np.arange(128) + 10**6

    def group_sectors(g):
        own = np.arange(private) + g * private
        return (np.concatenate((own, panel)) if g in (0, 8) else own), EMPTY

    got = cache_traffic(group_sectors, 12, **small(), budget=10**6)
    assert got.dram_read_bytes == (12 * private + reads_of_panel * 128) * 32


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


@pytest.mark.parametrize("capacities, written", [(0.5, 0), (0.8, 500), (1.5, 1000)])
def test_dirty_data_from_before_the_launch_is_written_as_the_launch_fills_l2(
        capacities, written):
    # 1000 dirty bytes in L2 at the start go to DRAM as the launch brings 0.6 to 1 L2
    # capacity (64 KB) into it: none at 0.5, half at 0.8, all past 1.
    sectors = np.arange(int(capacities * 64 * KB / 32))
    got = cache_traffic(one_group(sectors), 1, **small(dirty_at_start_bytes=1000))
    assert got.dram_write_bytes == pytest.approx(written, abs=1)


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
    # 1024 groups of a stencil on 16 SMs (8 waves), two L2 partitions, 64-byte blocks:
    # half the output is evicted, dirty, before the end.
    fn, groups, grid = stencil_launch(256)
    gpu = {"sms": 16, "groups_per_sm": 8, "l1_bytes": 8 * KB, "l2_bytes": 256 * KB}
    exact = cache_traffic(fn, groups, **gpu, grid=grid, budget=10**7)
    sampled = cache_traffic(fn, groups, **gpu, grid=grid, budget=150_000)
    assert not exact.sampled and sampled.sampled
    assert sampled.groups_simulated < groups
    for name, rel in (("l1_load_hit_sectors", 0.08), ("l2_read_sectors_from_l1", 0.05),
                      ("l2_read_sectors", 0.06), ("l2_write_sectors", 0.02),
                      ("dram_read_bytes", 0.1), ("dram_write_bytes", 0.1)):
        assert getattr(sampled, name) == pytest.approx(getattr(exact, name), rel=rel)
    # hand count: every input sector is read from DRAM once (256*256 floats = 8192 sectors)
    assert exact.dram_read_bytes == 8192 * 32



@pytest.mark.parametrize("panel_lines, hit_share", [(64, 0.0), (16, 255 / 256)])
def test_co_resident_groups_reading_one_panel_hit_l1_only_if_it_fits_between_them(
        panel_lines, hit_share):
    # 256 groups on one SM holding 16, each reading the same panel sector by sector.
    # Staggered starts (a group starts as one ends): between two groups' reads of a line
    # the SM's 16 groups read the whole panel, so the next group hits only when the panel
    # fits L1 (32 lines): 64 lines never hit (but for a few at the launch's start), 16
    # lines miss only in the first group. The sampled path (a time slice of the SM's
    # stream) must see the same as the exact one.
    panel = np.arange(4 * panel_lines, dtype=np.int64)
    gpu = small(sms=1, groups_per_sm=16)
    for budget in (10**7, 20_000):
        got = cache_traffic(one_group(panel), 256, **gpu, budget=budget)
        assert got.sampled == (budget < 10**6)
        assert got.l1_load_hit_sectors / (256 * panel.size) == pytest.approx(hit_share,
                                                                           abs=0.03)

def test_a_stretch_of_a_long_loop_standing_for_the_whole_sees_the_same_traffic():
    # 64 groups, each looping 8192 times over its own row and a vector all groups share,
    # two iterations a sector (a matrix-vector product). Seen through its middle eighth,
    # each entry standing for 8, the launch must cost what the whole stream costs.
    rows, iterations = 64, 8192
    vector = rows * iterations // 2

    def stream(g, lo=0, hi=iterations):
        k = np.arange(lo, hi) // 2
        return np.stack([g * iterations // 2 + k, vector + k], axis=1).ravel()

    def whole(g):
        return stream(g), EMPTY

    def stretch(g):
        loads = stream(g, 7 * iterations // 16, 9 * iterations // 16)
        return loads, EMPTY, np.full(loads.size, 8.0), np.zeros(0)

    gpu = small(sms=8, groups_per_sm=2, l2_bytes=4096 * KB)
    exact = cache_traffic(whole, rows, **gpu, budget=10**7)
    seen = cache_traffic(stretch, rows, **gpu, budget=10**7)
    assert not exact.sampled and seen.sampled
    # hand count: half the loads hit L1; DRAM reads every row once and the vector once
    assert exact.l1_load_hit_sectors == rows * iterations
    assert exact.dram_read_bytes == (rows + 1) * iterations // 2 * 32
    for name in ("l1_load_hit_sectors", "l2_read_sectors_from_l1", "l2_read_sectors",
                 "dram_read_bytes"):
        assert getattr(seen, name) == pytest.approx(getattr(exact, name), rel=0.05), name


def test_sampled_results_are_deterministic():
    fn, groups, grid = stencil_launch(256)
    gpu = {"sms": 16, "groups_per_sm": 8, "l1_bytes": 8 * KB, "l2_bytes": 256 * KB}
    a = cache_traffic(fn, groups, **gpu, grid=grid, budget=60_000)
    b = cache_traffic(fn, groups, **gpu, grid=grid, budget=60_000)
    assert a == b


def test_per_array_breakdown_sums_to_totals():
    fn = panel_launch(128, 128, 8)
    ranges = {"a": (0, 8 * 128), "b": (10**6, 10**6 + 128)}
    got = cache_traffic(fn, 8, **small(), ranges=ranges)
    assert got.by_array["a"]["dram_read_bytes"] == 8 * 128 * 32
    assert got.by_array["b"]["dram_read_bytes"] == 128 * 32
    assert sum(v["l2_read_sectors_from_l1"] for v in got.by_array.values()) \
        == got.l2_read_sectors_from_l1


def test_counters_use_nsight_compute_names():
    got = cache_traffic(one_group(np.arange(8)), 1, **small())
    assert isinstance(got, CacheTraffic)
    assert got.counters() == {
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum": 0.0,
        "lts__t_sectors_srcunit_tex_op_read.sum": 8.0,
        "lts__t_sectors_op_read.sum": 8.0,
        "lts__t_sectors_op_write.sum": 0.0,
        "dram__bytes_read.sum": 256.0,
        "dram__bytes_write.sum": 0.0,
    }


def test_l1_keeps_what_a_store_wrote():
    # 64 sectors stored over the group's time, the first 32 loaded over the same time:
    # sector j is stored at (j + 0.5) / 64 and loaded at (j + 0.5) / 32, after: L1 hits.
    got = cache_traffic(one_group(np.arange(32), np.arange(64)), 1, **small())
    assert got.l1_load_hit_sectors == 32
    assert got.l2_read_sectors_from_l1 == 0
    assert got.dram_read_bytes == 0


@pytest.mark.parametrize("step, l2_reads", [(1, 1.5), (2, 2.0)])
def test_far_partition_reads_count_twice_per_block(step, l2_reads):
    # Two partitions, 64-byte DRAM blocks: half the blocks are homed far, and reading one
    # through the near partition adds its 2 sectors: a dense stream reads 1.5 sectors a
    # sector at L2, one sector a block 2.0; DRAM reads whole blocks (as an H100 does).
    sectors = np.arange(0, 4096, step)
    got = cache_traffic(one_group(sectors, sectors + 10**6), 1,
                        **small(l2_partitions=2, dram_fetch_bytes=64))
    assert got.l2_read_sectors_from_l1 == sectors.size
    assert got.l2_read_sectors == l2_reads * sectors.size
    assert got.l2_write_sectors == 1.5 * sectors.size
    assert got.dram_read_bytes == 4096 // 2 * 64


@pytest.mark.parametrize("partitions, misses", [(1, 1), (2, 2)])
def test_far_copies_take_l2_capacity(partitions, misses):
    # 400 lines read twice: they fit 512 lines, not the 341 left when far data is kept
    # twice (the capacity over 1 + 1/2).
    sectors = np.arange(1600)
    got = cache_traffic(one_group(np.concatenate((sectors, sectors))), 1,
                        **small(l2_partitions=partitions))
    assert got.dram_read_bytes == misses * 1600 * 32


@pytest.mark.parametrize("chunks, p_miss", [(64, 0.0), (92, 0.5), (128, 1.0)])
def test_sampled_reuse_misses_fade_as_the_data_between_outgrows_l2(chunks, p_miss):
    # Group g reads chunk g % chunks (16 sectors, 4 lines) in 3 rounds; 4 groups at a time,
    # so a chunk comes back after chunks / 4 time units, with chunks * 512 bytes read in
    # between: 0.5, 0.72 and 1.0 of the 64 KB L2. Reads miss from 0.61 to 0.83 of it.
    def group_sectors(g):
        return np.arange(16) + 16 * (g % chunks), EMPTY

    got = cache_traffic(group_sectors, 3 * chunks, **small(), grid=(chunks, 3), budget=8000,
                        l2_hit_fade=(0.61, 0.83))
    assert got.sampled
    share = chunks * 512 / (64 * KB)
    assert (share - 0.61) / 0.22 == pytest.approx(p_miss, abs=0.02) or p_miss in (0, 1)
    assert got.dram_read_bytes == pytest.approx(chunks * 16 * 32 * (1 + 2 * p_miss), rel=0.1)


def test_footprint_window_solves_the_average_footprint():
    rng = np.random.default_rng(0)
    for _ in range(100):
        n = int(rng.integers(1, 40))
        rt = rng.exponential(1.0, n)
        rt[rng.random(n) < 0.3] = np.inf
        weight = rng.random(n) + 0.1
        rate, capacity = rng.random() * 10 + 0.1, rng.random() * 5
        window = _footprint_window(rt, weight, rate, capacity)
        largest = window if np.isfinite(window) else 1e12
        footprint = rate * np.sum(weight * np.minimum(rt, largest)) / weight.sum()
        if np.isfinite(window):
            assert footprint == pytest.approx(capacity)
        else:
            assert footprint <= capacity + 1e-9


@pytest.mark.parametrize("groups", [1, 100, 100_000])
def test_launch_without_global_accesses_has_no_traffic(groups):
    got = cache_traffic(one_group(EMPTY), groups, sms=132, groups_per_sm=8,
                        l1_bytes=200 * KB, l2_bytes=50 * 1024 * KB, grid=(groups,))
    assert all(v == 0 for v in got.counters().values())


@pytest.mark.parametrize("bad", [{"sms": 0}, {"l1_bytes": 64}, {"line_bytes": 48},
                                 {"dram_fetch_bytes": 48}, {"dirty_at_start_bytes": -1}])
def test_bad_parameters_are_usage_errors(bad):
    with pytest.raises(UsageError):
        cache_traffic(one_group(np.arange(8)), 1, **small(**bad))


def _microbenchmarks(gpu, kind):
    """data/GPU/KIND's launches (index -> fields of launches.txt) and ncu's counters
    (index -> metric -> value)."""
    folder = Path(__file__).resolve().parent.parent / "data" / gpu / kind
    launches = {f[1]: f for f in
                (line.split() for line in (folder / "launches.txt").read_text().splitlines())
                if f and f[0] == "L"}
    text = lzma.open(folder / "ncu.csv.xz", "rt").read()
    counters = {}
    for row in csv.DictReader(io.StringIO("\n".join(line for line in text.splitlines()
                                                    if line.startswith('"')))):
        counters.setdefault(row["ID"], {})[row["Metric Name"]] = float(
            row["Metric Value"].replace(",", ""))
    return folder, launches, counters


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_the_code_fetch_line_is_the_fit_of_its_microbenchmarks(gpu):
    """CODE_FETCH fitted again from data/GPU/fetch: the L2 read sectors of kernels
    without loads against the bytes of their SASS (cuobjdump's addresses), on grids up to
    1,320 groups, code up to 66 KB."""
    folder, launches, counters = _microbenchmarks(gpu, "fetch")
    sass = lzma.open(folder / "sass.txt.xz", "rt").read()
    code = {}
    for part in sass.split("Function : ")[1:]:
        n = int(re.search(r"ILi(\d+)E", part.split()[0]).group(1))
        code[n] = max(int(a, 16) for a in re.findall(r"/\*([0-9a-f]{4,5})\*/", part)) + 16
    x, y = [], []
    for index, fields in launches.items():
        n, grid = int(fields[3][2:]), int(fields[4][5:])
        if grid <= 1320 and code[n] <= 66 * KB:
            x.append(code[n])
            y.append(counters[index]["lts__t_sectors_op_read.sum"])
    slope, base = np.polyfit(x, y, 1)
    assert len(x) >= 15 and len(set(x)) >= 3
    assert CODE_FETCH == pytest.approx((base, slope), rel=0.01)


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_the_l2_hit_fade_is_the_fit_of_its_microbenchmarks(gpu):
    """L2_HIT_FADE fitted again from data/GPU/caches: groups re-reading a footprint REPS
    times miss L2 on a share m of the re-reads (DRAM reads = footprint × (1 + (REPS-1)
    m)); m as a ramp over the footprint's share of the device's own L2, least squares
    on a 0.005 grid."""
    from kernelcast.hardware import load_hardware

    l2 = load_hardware(gpu).l2_cache_bytes
    _, launches, counters = _microbenchmarks(gpu, "caches")
    share, miss = [], []
    for index, fields in launches.items():
        if fields[2] == "cyc_read":
            footprint = int(fields[3].split("=")[1]) * 2**20
            reps = int(fields[4].split("=")[1])
            dram = counters[index]["dram__bytes_read.sum"]
            share.append(footprint / l2)
            miss.append((dram / footprint - 1) / (reps - 1))
    share, miss = np.array(share), np.array(miss)
    assert len(share) >= 8 and miss.min() < 0.01 and miss.max() > 0.99
    grid = np.arange(0.3, 1.3, 0.005)
    _, low, high = min((np.sum((np.clip((share - a) / (b - a), 0, 1) - miss) ** 2), a, b)
                       for a in grid for b in grid if b > a)
    assert L2_HIT_FADE == pytest.approx((low, high), abs=0.02)
