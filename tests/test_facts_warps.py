"""Warp-level requests, sectors and wavefronts (kernelcast.facts.lanes, .warps).

Hand-worked warps for each physical rule; an independent brute force (isl point
enumeration and pymbolic evaluation of every lane's address, one instance at a time) on
small launches of suite kernels and tuning variants; and a few real H100 profiles whose
physics is understood.
"""

import functools
import json
import lzma
from collections import Counter, defaultdict
from pathlib import Path

import bruteforce
import loopy as lp
import numpy as np
import pytest
from loopy.kernel.data import AddressSpace, GroupInameTag, LocalInameTag
from loopy.kernel.instruction import MultiAssignmentBase
from pymbolic import evaluate
from pymbolic.mapper.stringifier import StringifyMapper

from kernelcast.errors import DataDependentError, ParameterError, UsageError
from kernelcast.facts.lanes import LaunchTrace
from kernelcast.facts.warps import (
    group_sectors,
    vector_merges,
    warp_sectors,
    warp_traffic,
    warp_wavefronts,
)
from kernelcast.suites import kernels as K

ROOT = Path(__file__).resolve().parents[1]
F32, F64 = np.float32, np.float64


def _make(domain, insns, args, **kwargs):
    return lp.make_kernel(domain, insns, args, lang_version=(2018, 2), **kwargs)


def _copy_2d(gx, gy, dtype=F32):
    """out[i, j] = a[i, j], j (the contiguous axis) on l.0 in groups gx × gy."""
    knl = _make("{[i, j]: 0 <= i, j < n}", "out[i, j] = a[i, j]",
                [lp.GlobalArg("a, out", dtype, shape=("n", "n")), lp.ValueArg("n", np.int32)])
    knl = lp.split_iname(knl, "i", gy, outer_tag="g.1", inner_tag="l.1")
    return lp.split_iname(knl, "j", gx, outer_tag="g.0", inner_tag="l.0")


def _copy_1d(expr, g, n_shape="n", a_shape="n", dtype=F32, extra=()):
    knl = _make("{[i]: 0 <= i < n}", f"out[i] = {expr}",
                [lp.GlobalArg("a", dtype, shape=a_shape),
                 lp.GlobalArg("out", dtype, shape=n_shape), lp.ValueArg("n", np.int32),
                 *extra])
    return lp.split_iname(knl, "i", g, outer_tag="g.0", inner_tag="l.0")


def _site(traffic, array, direction="load"):
    (found,) = [s for s in traffic.sites
                if s.site.array == array and s.site.direction == direction]
    return found


# {{{ one warp, by hand

def test_single_warps_by_hand():
    lanes = np.arange(32)
    assert warp_sectors(4 * lanes, 4).tolist() == [[4]]  # 128 contiguous bytes
    assert warp_sectors(8 * lanes, 8).tolist() == [[8]]  # 32 consecutive doubles
    assert warp_sectors(8 * lanes, 4).tolist() == [[8]]  # stride 2 floats
    assert warp_sectors(4096 * lanes, 4).tolist() == [[32]]  # a column
    assert warp_sectors(np.zeros(32, int), 4).tolist() == [[1]]  # a broadcast
    assert warp_sectors(16 * lanes, 16).tolist() == [[16]]  # float4 per lane
    assert warp_sectors(4 + 4 * lanes, 4).tolist() == [[5]]  # off by one float
    inactive = np.where(lanes < 8, 4 * lanes, -1)
    assert warp_sectors(inactive, 4).tolist() == [[1]]
    assert warp_sectors(np.full(32, -1), 4).tolist() == [[0]]
    # 48 lanes: two warps, the second of 16 lanes
    assert warp_sectors(4 * np.arange(48), 4).tolist() == [[4, 2]]

    assert warp_wavefronts(4 * lanes, 4).tolist() == [[1]]
    assert warp_wavefronts(np.zeros(32, int), 4).tolist() == [[1]]  # broadcast
    assert warp_wavefronts(4 * 16 * lanes, 4).tolist() == [[16]]  # 16 columns: 16-way
    assert warp_wavefronts(4 * 17 * lanes, 4).tolist() == [[1]]  # 17 columns: none
    assert warp_wavefronts(4 * 32 * lanes, 4).tolist() == [[32]]
    assert warp_wavefronts(4 * (lanes // 2), 4).tolist() == [[1]]  # pairs share words
    # 64-bit: the warp in halves, 128 bytes each
    assert warp_wavefronts(8 * lanes, 8).tolist() == [[2]]
    assert warp_wavefronts(8 * 16 * lanes, 8).tolist() == [[32]]  # column, 16 doubles wide
    assert warp_wavefronts(8 * 17 * lanes, 8).tolist() == [[2]]
    assert warp_wavefronts(np.where(lanes < 16, 8 * lanes, -1), 8).tolist() == [[1]]
    # 128-bit: quarters, unless lane pairs share addresses (then halves)
    assert warp_wavefronts(16 * lanes, 16).tolist() == [[4]]
    assert warp_wavefronts(np.zeros(32, int), 16).tolist() == [[2]]
    assert warp_wavefronts(np.repeat([0, 64], 16), 16).tolist() == [[2]]
    assert warp_wavefronts(np.tile([0, 16, 32, 48], 8), 16).tolist() == [[4]]


@pytest.mark.parametrize("gx, gy, sectors", [(64, 4, 4), (32, 8, 4), (16, 16, 4),
                                             (8, 32, 4), (4, 64, 8), (1, 256, 32)])
def test_row_contiguous_loads_for_every_group_shape(gx, gy, sectors):
    """A warp spans 32/gx rows n floats apart, gx floats (4·gx bytes) of each."""
    n = 256
    traffic = warp_traffic(LaunchTrace(_copy_2d(gx, gy), {"n": n}))
    warps = n * n // 32
    for array, direction in (("a", "load"), ("out", "store")):
        site = _site(traffic, array, direction)
        assert (site.requests, site.sectors) == (warps, warps * sectors)
        assert site.accesses == n * n and site.exact
    assert traffic.counters()["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == \
        warps * sectors


def test_partial_warps_float64_strides_and_guards():
    # groups of 48: a full warp and one of 16 lanes; 4 groups of 48 floats
    t = warp_traffic(LaunchTrace(_copy_1d("a[i]", 48), {"n": 192}))
    assert (_site(t, "a").requests, _site(t, "a").sectors) == (8, 4 * (4 + 2))
    # float64: 32 consecutive doubles are 8 sectors
    t = warp_traffic(LaunchTrace(_copy_1d("a[i]", 256, dtype=F64), {"n": 1024}))
    assert (_site(t, "a").requests, _site(t, "a").sectors) == (32, 256)
    # stride 2 floats: 8 sectors a warp
    t = warp_traffic(LaunchTrace(K.scale_add(2, 256), {"n": 2048}))
    assert (_site(t, "x").requests, _site(t, "x").sectors) == (32, 256)
    # a guard leaving the last group partial: n = 1000, groups of 256: 4 groups of 8
    # warps (the last warp of the last group has 8 lanes), 125 sectors in all
    t = warp_traffic(LaunchTrace(_copy_1d("a[i]", 256), {"n": 1000}))
    assert (_site(t, "a").requests, _site(t, "a").sectors, _site(t, "a").accesses) == \
        (32, 125, 1000)


def test_column_reads_broadcasts_tables_and_modulo_indices():
    # transpose reading a column: 32 rows a warp, 32 sectors
    t = warp_traffic(LaunchTrace(K.transpose("read_strided", (32, 8)), {"n": 256}))
    assert _site(t, "a").sectors == 32 * _site(t, "a").requests
    assert _site(t, "out", "store").sectors == 4 * _site(t, "out", "store").requests
    # a broadcast: every lane of a group reads a[g]
    knl = _make("{[i]: 0 <= i < n}", "out[i] = a[i // 256]",
                [lp.GlobalArg("a, out", F32, shape="n"), lp.ValueArg("n", np.int32)])
    knl = lp.split_iname(knl, "i", 256, outer_tag="g.0", inner_tag="l.0")
    t = warp_traffic(LaunchTrace(knl, {"n": 4096}))
    assert (_site(t, "a").requests, _site(t, "a").sectors) == (128, 128)
    assert not _site(t, "a").site.affine
    # a masked table read t[(4 i) & 127]: lanes read floats 0, 4, ..., 124 (16 bytes
    # apart), two per sector: 16 sectors a warp
    knl = _copy_1d("a[(4*i) & 127]", 256, a_shape=(128,))
    t = warp_traffic(LaunchTrace(knl, {"n": 4096}))
    assert (_site(t, "a").requests, _site(t, "a").sectors) == (128, 128 * 16)
    assert _site(t, "a").exact  # 16 groups, every one counted
    t = warp_traffic(LaunchTrace(knl, {"n": 1 << 20}))  # 4096 groups: sampled
    a = _site(t, "a")
    assert (a.requests, a.sectors, a.exact) == (1 << 15, 16 << 15, False)
    assert _site(t, "out", "store").exact  # affine: exact from a few groups
    # modulo: floats (3 i) % 64 for i < 32 are 0, 3, ..., 63, 2, 5, ..., 29: all eight
    # sectors of the 256-byte table
    knl = _copy_1d("a[(3*i) % 64]", 32, a_shape=(64,))
    t = warp_traffic(LaunchTrace(knl, {"n": 64}))
    assert (_site(t, "a").requests, _site(t, "a").sectors) == (2, 16)


def _tile_kernel(columns, dtype=F32):
    """A local tile of 32 rows and *columns* columns (16 used): each of the 32 work-items
    writes then reads its row, one column per loop iteration (a column access)."""
    knl = _make(["{[g, l]: 0 <= g < n and 0 <= l < 32}", "{[c]: 0 <= c < 16}"],
                """
                tile[l, c] = a[32*g + l, c] {id=w}
                out[32*g + l, c] = 2*tile[l, c] {dep=w}
                """,
                [lp.GlobalArg("a, out", dtype, shape=("32*n", 16)),
                 lp.TemporaryVariable("tile", dtype, shape=(32, columns),
                                      address_space=AddressSpace.LOCAL),
                 lp.ValueArg("n", np.int32)])
    return lp.tag_inames(knl, {"g": "g.0", "l": "l.0"})


@pytest.mark.parametrize("columns, dtype, per_request", [
    (17, F32, 1), (16, F32, 16), (32, F32, 32), (16, F64, 32), (17, F64, 2)])
def test_local_tiles_padding_and_float64(columns, dtype, per_request):
    """Lane r touches word r·columns (+c) (twice as many words for float64, served in
    halves of 16 lanes): 17 columns spread the rows over all banks."""
    t = warp_traffic(LaunchTrace(_tile_kernel(columns, dtype), {"n": 4}))
    for direction in ("load", "store"):
        site = _site(t, "tile", direction)
        assert site.requests == 4 * 16
        assert site.wavefronts == 4 * 16 * per_request
    assert _site(t, "a").sectors == 4 * 16 * 32  # rows 64 or 128 bytes apart


def test_vector_accesses_and_unrolled_vec_inames():
    def kernel(dim_tags):
        knl = _make("{[i, v]: 0 <= i < n and 0 <= v < 4}", "out[i, v] = 2*a[i, v]",
                    [lp.GlobalArg("a, out", F32, shape=("n", 4), dim_tags=dim_tags),
                     lp.ValueArg("n", np.int32)])
        knl = lp.split_iname(knl, "i", 128, outer_tag="g.0", inner_tag="l.0")
        return lp.tag_inames(knl, {"v": "vec"})

    trace = LaunchTrace(kernel("c,vec"), {"n": 1024})
    t = warp_traffic(trace)
    a = _site(t, "a")
    # one float4 a lane: 512 bytes a warp, one request of 16 sectors
    assert (a.site.width, a.access_bytes, a.requests, a.sectors) == (4, 16, 32, 512)
    # without a vec array axis Loopy unrolls: four requests a warp, stride 4 floats
    t = warp_traffic(LaunchTrace(kernel("c,c"), {"n": 1024}))
    a = _site(t, "a")
    assert (a.site.width, a.requests, a.sectors) == (1, 128, 128 * 16)


def test_substituted_temporaries_data_indices_and_data_predicates():
    knl = _make("{[i]: 0 <= i < n}", "<> t = 2*i + 1\nout[i] = a[t]",
                [lp.GlobalArg("a", F32, shape=("2*n+2",)), lp.GlobalArg("out", F32, shape="n"),
                 lp.ValueArg("n", np.int32)])
    knl = lp.split_iname(knl, "i", 256, outer_tag="g.0", inner_tag="l.0")
    a = _site(warp_traffic(LaunchTrace(knl, {"n": 1024})), "a")
    assert a.site.affine and not a.site.random and (a.requests, a.sectors) == (32, 256)

    knl = _copy_1d("a[idx[i]]", 256, a_shape=(1 << 20,),
                   extra=[lp.GlobalArg("idx", np.int32, shape="n")])
    t = warp_traffic(LaunchTrace(knl, {"n": 1024}))
    a = _site(t, "a")
    # 32 lanes drawn uniformly over 2^17 sectors: all distinct but for rare collisions
    assert a.site.random and not a.exact and 31.5 * 32 <= a.sectors <= 32 * 32
    assert _site(t, "idx").sectors == 4 * 32 and _site(t, "idx").exact

    knl = _make("{[i]: 0 <= i < n}", "if a[i] > 0\n out[i] = a[i]\nend",
                [lp.GlobalArg("a, out", F32, shape="n"), lp.ValueArg("n", np.int32)])
    knl = lp.split_iname(knl, "i", 256, outer_tag="g.0", inner_tag="l.0")
    with pytest.raises(DataDependentError, match="data_statistics"):
        LaunchTrace(knl, {"n": 1024})
    trace = LaunchTrace(knl, {"n": 1024}, data_statistics={"insn": 0.5})
    t = warp_traffic(trace)
    condition, body = [s for s in t.sites if s.site.direction == "load"]
    assert condition.accesses == 1024 and condition.exact  # every lane reads a[i]
    assert 400 < body.accesses < 624 and not body.exact  # half of them, drawn
    assert body.site.repeats == condition.site.id
    assert t.totals(merge_repeats=True)["global", "load"]["accesses"] == 1024

    # a loop bound read from data takes its statistic: rows of 64 floats, 16 read
    knl = _make(["{[i]: 0 <= i < n}", "{[j]: 0 <= j < rowlen}"],
                """
                <> rowlen = lengths[i] {id=len}
                out[i] = sum(j, a[i, j]) {dep=len}
                """,
                [lp.GlobalArg("a", F32, shape=("n", 64)),
                 lp.GlobalArg("lengths", np.int32, shape="n"),
                 lp.GlobalArg("out", F32, shape="n"), lp.ValueArg("n", np.int32)])
    knl = lp.split_iname(knl, "i", 128, outer_tag="g.0", inner_tag="l.0")
    with pytest.raises(DataDependentError, match="rowlen"):
        LaunchTrace(knl, {"n": 1024})
    t = warp_traffic(LaunchTrace(knl, {"n": 1024}, data_statistics={"rowlen": 16}))
    a = _site(t, "a")
    assert (a.requests, a.sectors, a.exact) == (32 * 16, 32 * 16 * 32, False)
    assert _site(t, "lengths").exact


def test_bad_input_is_refused():
    knl = _copy_1d("a[i]", 256)
    with pytest.raises(ParameterError, match="no value for n"):
        LaunchTrace(knl, {})
    with pytest.raises(ParameterError, match="no parameter m"):
        LaunchTrace(knl, {"n": 4, "m": 3})
    with pytest.raises(ParameterError, match="negative"):
        LaunchTrace(knl, {"n": -4})
    trace = LaunchTrace(knl, {"n": 1024})
    with pytest.raises(UsageError):
        trace.group_addresses(4)
    with pytest.raises(UsageError):
        warp_traffic(trace, sector_bytes=0)

# }}}


# {{{ addresses, order and sector streams

def test_group_addresses_and_sector_streams_in_execution_order():
    knl = _make("{[i, k]: 0 <= i < n and 0 <= k < 2}", "out[i] = sum(k, a[k, i] + b[k, i])",
                [lp.GlobalArg("a, b", F32, shape=(2, "n")), lp.GlobalArg("out", F32, shape="n"),
                 lp.ValueArg("n", np.int32)])
    knl = lp.split_iname(knl, "i", 48, outer_tag="g.0", inner_tag="l.0")
    trace = LaunchTrace(knl, {"n": 96})
    assert (trace.grid, trace.block, trace.num_groups) == ((2,), (48,), 2)
    base = trace.array_base
    assert base["a"] == 0 and base["b"] == 768 and base["out"] == 1536
    addresses = trace.group_addresses(1)
    a_site = next(s for s in trace.sites if s.array == "a")
    a = addresses[a_site.id]
    assert a.shape == (2, 48)  # k = 0, 1; lanes
    assert a[1, 0] == 4 * (96 + 48) and a[0, 47] == 4 * 95
    loads, stores = group_sectors(trace, 1)
    # per k: a's warp 0 (sectors 6..9), a's warp 1 (10, 11), then b's, then k = 1
    a0 = [6, 7, 8, 9, 10, 11]
    expected = (a0 + [24 + s for s in a0] + [12 + s for s in a0] + [36 + s for s in a0])
    assert loads.tolist() == expected
    assert stores.tolist() == [48 + 6 + s for s in range(6)]


def test_sector_streams_leave_out_the_loads_a_lane_repeats():
    # a[i] read twice in one expression is one load in the compiled code: the cache
    # model must not see the second as an L1 hit
    knl = _make("{[i]: 0 <= i < n}", "out[i] = a[i] * a[i] + b[i]",
                [lp.GlobalArg("a, b, out", F32, shape="n"), lp.ValueArg("n", np.int32)])
    knl = lp.split_iname(knl, "i", 32, outer_tag="g.0", inner_tag="l.0")
    trace = LaunchTrace(knl, {"n": 64})
    a, b = (trace.array_base[x] // 32 for x in "ab")
    loads, _ = group_sectors(trace, 1)
    assert loads.tolist() == [a + 4 + s for s in range(4)] + [b + 4 + s for s in range(4)]
    loads, _ = group_sectors(trace, 1, merge_repeats=False)
    assert sorted(loads.tolist()) == sorted(2 * [a + 4 + s for s in range(4)]
                                            + [b + 4 + s for s in range(4)])


def _row_sums(n, g=32):
    """y[i] = sum over j of a[i, j]: each work-item loops over a row of n."""
    knl = _make("{[i, j]: 0 <= i, j < n}", "y[i] = sum(j, a[i, j])",
                [lp.GlobalArg("a", F32, shape=("n", "n")), lp.GlobalArg("y", F32, shape="n"),
                 lp.ValueArg("n", np.int32)])
    return lp.split_iname(knl, "i", g, outer_tag="g.0", inner_tag="l.0")


def test_a_window_keeps_an_unbroken_middle_stretch_of_long_loops():
    trace = LaunchTrace(_row_sums(1024), {"n": 1024})
    full, full_stores = group_sectors(trace, 3)
    loads, stores, load_weight, store_weight = group_sectors(trace, 3, window=32 * 256)
    # a warp of 32 rows touches 32 sectors a j; 256 of the 1024 j kept, from the middle
    assert loads.size == 256 * 32 and np.all(load_weight == 4.0)
    start = full.tolist().index(loads[0])
    assert start == 384 * 32 and full[start:start + loads.size].tolist() == loads.tolist()
    # the store after the loop is whole; the weights sum to the whole stream
    assert stores.tolist() == full_stores.tolist() and np.all(store_weight == 1.0)
    assert load_weight.sum() == full.size
    # a loop of 64 or fewer iterations is never cut: nearby iterations share sectors
    short = LaunchTrace(_row_sums(64), {"n": 64})
    loads, _, weight, _ = group_sectors(short, 1, window=32)
    assert loads.tolist() == group_sectors(short, 1)[0].tolist() and np.all(weight == 1.0)


def test_a_load_that_does_not_change_along_a_loop_is_loaded_once_before_it():
    # out[i, j] = x[i] * y[j], two rows a work-item (a loop over i_inner): y[j] is the
    # same at both rows and the kernel never writes y, so the compiled code loads it once
    knl = _make("{[i, j]: 0 <= i, j < n}", "out[i, j] = x[i] * y[j]",
                [lp.GlobalArg("x, y", F32, shape="n"),
                 lp.GlobalArg("out", F32, shape=("n", "n")), lp.ValueArg("n", np.int32)])
    knl = lp.split_iname(knl, "j", 32, outer_tag="g.0", inner_tag="l.0")
    knl = lp.split_iname(knl, "i", 2, outer_tag="g.1")
    trace = LaunchTrace(knl, {"n": 64})
    by = {s.array: s for s in trace.sites}
    assert by["y"].hoisted == ("i_inner",) and by["x"].hoisted == ()
    traffic = {t.site.array: t for t in warp_traffic(trace).sites}
    groups = 2 * 32
    # one warp a group: y once (4 sectors), x at each row (a broadcast: 1 sector)
    assert (traffic["y"].requests, traffic["y"].sectors) == (groups, 4 * groups)
    assert (traffic["x"].requests, traffic["x"].sectors) == (2 * groups, 2 * groups)
    loads, _ = group_sectors(trace, 5)
    assert loads.size == 4 + 2  # y's 4 sectors once, x's sector at each row


def test_instance_sampling_keeps_a_spread_subset():
    trace = LaunchTrace(K.matmul_naive((16, 16)), {"n": 512})
    full = trace.group_trace(3)
    # two loads of 512 instances and a store of one, 256 lanes: room for 64 instances
    thin = trace.group_trace(3, max_addresses=2 * 256 * 64 + 256)
    assert sum(a.size for a in thin.addresses.values()) <= 2 * 256 * 64 + 256
    (site,) = [s.id for s in trace.sites if s.array == "a"]
    assert full.addresses[site].shape == (512, 256) and full.scale[site] == 1
    assert thin.addresses[site].shape == (64, 256) and thin.scale[site] == 8
    rows = {tuple(r) for r in full.addresses[site].tolist()}
    assert all(tuple(r) in rows for r in thin.addresses[site].tolist())
    assert np.all(np.diff(thin.order[site]) > 0)

# }}}


# {{{ an independent brute force

_Refs = bruteforce._Refs  # the references of an expression, as the brute force finds them


_points = bruteforce._points  # every point of a domain at fixed sizes


def _brute_force(tu, params):
    """(insn, array, space, direction) -> [requests, sectors or wavefronts]: every lane's
    address at every instance, one point at a time."""
    from kernelcast.frontends.loopy import prepare_kernel

    prepared = prepare_kernel(tu)
    knl = lp.get_one_linearized_kernel(prepared.kernel, prepared.callables_table)
    gsize, lsize = knl.get_grid_size_upper_bounds_as_exprs(prepared.callables_table)
    grid = [evaluate(g, params) for g in gsize]
    block = [evaluate(s, params) for s in lsize]
    stringify = StringifyMapper()
    requests = defaultdict(set)  # (key, group, warp, instance) -> {(lane, address)}
    for insn in knl.instructions:
        if not isinstance(insn, MultiAssignmentBase):
            continue
        refs = []
        for assignee in insn.assignees:
            r = _Refs("store")
            r(assignee)
            refs += r.refs
        r = _Refs("load")
        r(insn.expression)
        refs += r.refs
        hw = {}
        for iname in insn.within_inames:
            for tag in knl.iname_tags_of_type(iname, (GroupInameTag, LocalInameTag)):
                kind = "g" if isinstance(tag, GroupInameTag) else "l"
                low = min(p[iname] for p in _points(knl, [iname], params))
                hw[iname] = (kind, tag.axis, low)
        seq = sorted(i for i in insn.within_inames if i not in hw)
        sites = []
        for name, index, direction in refs:
            if name in knl.temporary_variables:
                space = {AddressSpace.GLOBAL: "global", AddressSpace.LOCAL: "local"}.get(
                    knl.temporary_variables[name].address_space)
            else:
                space = "global" if isinstance(knl.arg_dict.get(name), lp.ArrayArg) else None
            if space is None:
                continue
            desc = knl.get_var_descriptor(name)
            strides = [evaluate(t.stride, params) for t in desc.dim_tags] if index else []
            code = [compile(stringify(ix), "<bf>", "eval") for ix in index]
            sites.append(((insn.id, name, space, direction), len(sites),
                          desc.dtype.numpy_dtype.itemsize, strides, code))
        preds = [compile(stringify(p), "<bf>", "eval") for p in insn.predicates]
        for point in _points(knl, insn.within_inames, params):
            env = {**params, **point}
            if not all(eval(p, {}, env) for p in preds):
                continue
            ids = {("g", a): [0] if a >= len(grid) else range(grid[a]) for a in range(3)}
            ids |= {("l", a): [0] if a >= len(block) else range(block[a]) for a in range(3)}
            for iname, (kind, axis, low) in hw.items():
                ids[kind, axis] = [point[iname] - low]
            instance = tuple(point[i] for i in seq)
            for key, number, itemsize, strides, code in sites:
                addr = itemsize * sum(s * eval(c, {}, env)
                                      for s, c in zip(strides, code, strict=True))
                for g0 in ids["g", 0]:
                    for g1 in ids["g", 1]:
                        for g2 in ids["g", 2]:
                            for l2 in ids["l", 2]:
                                for l1 in ids["l", 1]:
                                    for l0 in ids["l", 0]:
                                        tid = l0 + block[0] * (
                                            l1 + (block[1] if len(block) > 1 else 1) * l2)
                                        requests[key, number, itemsize, (g0, g1, g2),
                                                 tid // 32, instance].add((tid % 32, addr))
    out = defaultdict(lambda: [0, 0])
    for (key, _, itemsize, _, _, _), lanes in requests.items():
        out[key][0] += 1
        if key[2] == "global":
            out[key][1] += len({a // 32 for _, a in lanes})
        else:
            out[key][1] += _bf_wavefronts(lanes, itemsize)
    return dict(out)


def _bf_wavefronts(lanes, size):
    """The documented rule, lane by lane: 128 bytes of banks per pass; 64-bit accesses in
    halves, 128-bit in quarters (halves where lane pairs share addresses)."""
    by_lane = dict(lanes)
    per_phase = 32 if size <= 4 else 16 if size == 8 else 8
    if size == 16 and any(all(by_lane.get(n) == by_lane.get(n ^ d) or n not in by_lane
                              or (n ^ d) not in by_lane for n in range(32)) for d in (1, 2)):
        per_phase = 16
    total = 0
    for phase in range(32 // per_phase):
        words = {a // 4 + w for lane, a in lanes if lane // per_phase == phase
                 for w in range(max(size // 4, 1))}
        if words:
            total += max(Counter(w % 32 for w in words).values())
    return total


def _predicted(tu, params, **options):
    out = defaultdict(lambda: [0, 0])
    for s in warp_traffic(LaunchTrace(tu, params), **options).sites:
        key = (s.site.insn_id, s.site.array, s.site.space, s.site.direction)
        out[key][0] += s.requests
        out[key][1] += s.sectors + s.wavefronts
    return dict(out)


def _family(name, variant):
    from kernelcast.tune.families import FAMILIES
    from kernelcast.tune.space import apply

    fam = FAMILIES[name]
    return apply(fam.build(), variant, fam.space)


BRUTE = {
    "matmul_tiled": (lambda: K.matmul_tiled((16, 8)), {"n": 24, "m": 40, "l": 20}),
    "matmul_tiled_f64": (lambda: K.matmul_tiled((16, 8), F64), {"n": 16, "m": 24, "l": 32}),
    "transpose_prefetch": (lambda: K.transpose("prefetch", (16, 12)), {"n": 40}),
    "transpose_write": (lambda: K.transpose("write_strided", (32, 4)), {"n": 40}),
    "finite_difference": (lambda: K.finite_difference((16, 4)), {"n": 36}),
    "convolution": (lambda: K.convolution((8, 4)), {"n": 7}),
    "nbody": (lambda: K.nbody(64), {"n": 100}),
    "scale_add_3": (lambda: K.scale_add(3, 48), {"n": 400}),
    "filled_stride_3": (lambda: K.filled_stride(3, 32), {"n": 70}),
    "matmul_family": (lambda: _family("matmul", {
        "j.group": 16, "j.per_item": 2, "i.group": 4, "i.per_item": 2, "unroll.k": 4,
        "tile.k": 16, "prefetch.a": True, "prefetch.b": True}), {"n": 40}),
    "transpose_family_pad": (lambda: _family("transpose", {
        "j.group": 16, "j.per_item": 2, "i.group": 4, "i.per_item": 2, "prefetch.a": True,
        "pad.a": 1}), {"n": 36}),
    "stencil2d_family": (lambda: _family("stencil2d", {
        "j.group": 16, "j.per_item": 2, "i.group": 2, "i.per_item": 2}), {"n": 37}),
}


@pytest.mark.parametrize("name", sorted(BRUTE))
def test_agrees_with_brute_force(name):
    build, params = BRUTE[name]
    expected = _brute_force(build(), params)
    assert expected and _predicted(build(), params) == expected
    # from a few groups: one per stratum and address residue, weighted
    assert _predicted(build(), params, max_groups=4) == expected

# }}}


# {{{ large launches and real profiles

def test_large_launches_are_exact_from_a_few_groups_and_fast():
    import time

    trace = LaunchTrace(K.matmul_tiled((24, 16)), {"n": 4096, "m": 4096, "l": 4096})
    start = time.perf_counter()
    t = warp_traffic(trace)
    assert time.perf_counter() - start < 1.0
    assert t.exact and t.groups_counted <= 9 < t.groups
    # 171 tiles of 16 × 24 floats of a (k tiles of 24 along a row of 4096: the last has
    # 16), one request per warp of 16 rows × 24 columns per tile
    a_fetch = _site(t, "a_fetch", "load")
    per_group = 4096 * 12  # k steps × warps of a 24 × 16 group
    assert a_fetch.requests == per_group * t.groups
    assert a_fetch.wavefronts == a_fetch.requests  # rows broadcast, never two words a bank


@functools.cache
def _criteria_cases():
    from kernelcast.suites.paper import case_of

    document = json.loads(lzma.decompress(
        (ROOT / "data" / "h100" / "criteria" / "counters.json.xz").read_bytes()))
    return case_of, {c["index"]: c for c in document["cases"]}


@pytest.mark.parametrize("index", [2, 14, 31, 53, 62, 87, 133, 136, 141])
def test_real_h100_counters(index):
    """matmul_tiled (float32, float64) with its a-tile loads merged into 128-bit loads as
    nvcc does, scale_add, a strided transpose (float32, float64), filled_stride,
    stencil3d, matvec_cols and transpose_tiles: every global counter and the shared
    loads within 2% of what Nsight Compute counted on an H100. Shared-store wavefronts are
    2-8% above the conflict-free count on the GPU in these kernels: extra passes the
    profiler counts where the stores meet the L1 traffic of the global loads before them
    (not modelled), so they are held to 10%."""
    case_of, cases = _criteria_cases()
    entry = cases[index]
    case = case_of(entry)
    trace = LaunchTrace(case.kernel(), case.params)
    predicted = warp_traffic(trace, merges=vector_merges(trace)).counters()
    measured = entry["counters"]
    compared = 0
    for name, value in predicted.items():
        if value or measured[name]:
            tolerance = 0.1 if "shared_op_st" in name and "wavefronts" in name else 0.02
            assert value == pytest.approx(measured[name], rel=tolerance), name
            compared += 1
    assert compared >= 4

# }}}
