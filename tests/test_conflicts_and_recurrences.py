"""kernelcast's extra counts: local-memory bank conflicts, operations on loop-carried paths
and on iterations a branch serializes, the loads of fetch loops whose trip count varies
among work-items, and the bytes a gather moves, each against counts worked out by hand
from the kernel (and the varying loads also against a brute-force count)."""

from collections import Counter

import loopy as lp
import numpy as np
import pytest
from bruteforce import _points
from loopy.kernel.data import HardwareConcurrentTag, LocalInameTag

import kernelcast as kc
from kernelcast.models.extended.features import features
from kernelcast.frontends.loopy import prepare_kernel
from kernelcast.properties.recurrence import branching_loops
from kernelcast.suites.extension import chain, guarded, halo, local_reads
from kernelcast.suites.kernels import (convolution, filled_stride, finite_difference,
                                       matmul_tiled, nbody, transpose)
from kernelcast.suites.validation import transpose_tiles


def _extent(knl, params):
    return kc.extract_properties(knl).extent(params)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_local_reads_conflict_only_at_stride_two(dtype):
    params = {"ng": 3, "r": 20}
    loads = 3 * 256 * 20
    assert _extent(local_reads("spread", 256, dtype), params)["local_conflicts"] == 0
    assert _extent(local_reads("broadcast", 256, dtype), params)["local_conflicts"] == 0
    # tile[(2·lid + k) mod 256]: lanes 0 and 16 share a bank, so every load takes two
    # passes (for float64, four words per bank over two words per element)
    assert _extent(local_reads("stride2", 256, dtype), params)["local_conflicts"] == loads


def test_transposes_through_unpadded_tiles():
    n = 64
    # 32×8 groups read a_fetch[32·lid0 + ...]: 32 lanes, one bank, 32 passes per read
    assert _extent(transpose_tiles((32, 8), np.float32), {"n": n})[
        "local_conflicts"] == 31 * n * n
    # 16×16 groups: a warp is lid0 0-15 of rows lid1 0 and 1, reading words 16·lid0 +
    # lid1: banks 0, 16 (row 0) and 1, 17 (row 1), each hit by 8 distinct words
    assert _extent(transpose("prefetch", (16, 16), np.float32), {"n": n})[
        "local_conflicts"] == 7 * n * n


def _transpose_through_tile(columns):
    """out = aᵀ through a 32×columns local tile; work-items along i are lanes."""
    knl = lp.make_kernel(
        "{[go, i, j]: 0<=go<ng and 0<=i,j<32}",
        ["tile[i, j] = a[32*go + i, j] {id=fill}",
         "out[32*go + j, i] = tile[i, j] {dep=fill}"],
        [lp.GlobalArg("a, out", np.float32, shape=("32*ng", 32)),
         lp.TemporaryVariable("tile", np.float32, shape=(32, columns),
                              address_space=lp.AddressSpace.LOCAL), "..."],
        lang_version=(2018, 2))
    return lp.tag_inames(knl, {"go": "g.0", "i": "l.0", "j": "l.1"})


def test_a_padded_tile_has_no_conflicts():
    # lanes differ in i: words 33·i apart, 33 ≡ 1 (mod 32), so 32 different banks
    assert _extent(_transpose_through_tile(33), {"ng": 2})["local_conflicts"] == 0
    # unpadded, a store and a load per work-item, both 32-way: 31 extra passes each
    assert _extent(_transpose_through_tile(32), {"ng": 2})["local_conflicts"] == (
        2 * 31 * 2 * 32 * 32)


def test_padding_by_the_tuners_transformation_counts():
    # the same tile padded by kernelcast.tune.space.pad_local_array, which widens its
    # storage (and strides) but not its shape: as conflict-free as the 33-column tile
    from kernelcast.tune.space import pad_local_array

    padded = pad_local_array(_transpose_through_tile(32), "tile", 1)
    assert _extent(padded, {"ng": 2})["local_conflicts"] == 0
    # padded by 2: words 34·i apart, lanes i and i + 16 share a bank (2-way), both accesses
    twice = pad_local_array(_transpose_through_tile(32), "tile", 2)
    assert _extent(twice, {"ng": 2})["local_conflicts"] == 2 * 1 * 2 * 32 * 32


@pytest.mark.parametrize("variant, expected", [
    ("fma", {"flops": 2}),  # x = x·c + d: a multiply, then an add
    ("special", {"special": 1, "flops": 1}),  # x = rsqrt(x) + c
    ("local", {"local_loads": 1}),  # j = (j + 32 + 32·tile[j]) & 255: integer ops uncounted
    ("global", {"global_loads": 1}),
])
def test_chains_put_each_step_on_the_path(variant, expected):
    params = {"ng": 2, "m": 10, "N": 4096}
    props = kc.extract_properties(chain(variant, 256, np.float32))
    params = {k: v for k, v in params.items() if k in props.params}
    extent = props.extent(params)
    steps = 2 * 256 * 10
    for kind in ("flops", "special", "local_loads", "global_loads"):
        assert extent[f"recurrence_{kind}"] == steps * expected.get(kind, 0), kind


def test_only_the_accumulating_add_of_nbody_is_on_a_path():
    n = 300
    extent = _extent(nbody(256, np.float32), {"n": n})
    # acc_k += (xi - xj)² over k < 3, and pot += rsqrt(acc_k) over j: one add each; the
    # loads, subtractions, squares and the rsqrt of a step do not wait for the step before.
    # The k loop runs only for j ≠ i.
    assert extent["recurrence_flops"] == 3 * n * (n - 1) + n * n
    assert extent["recurrence_special"] == extent["recurrence_local_loads"] == 0


@pytest.mark.parametrize("variant, expected", [
    ("local", {"local_loads": 1}),  # acc += tile[...]
    ("special", {"local_loads": 1, "special": 1}),  # acc += rsqrt(tile[...])
    ("global", {"global_loads": 1}),  # acc += a[k, lid]
    # v = tile[(lid + k) mod g] under the condition too, then a polynomial of v
    ("poly4", {"local_loads": 1}),
    ("poly16", {"local_loads": 1}),
    # the same steps over a tile read through an affine index, k = 256·ko + ki
    ("tiled16", {"local_loads": 1}),
])
def test_a_branch_in_every_step_puts_the_steps_loads_on_the_path(variant, expected):
    ng, m = 2, 10
    extent = _extent(guarded(variant, 256, np.float64), {"ng": ng, "m": m})
    # the step runs for k ≠ lid: all m steps but one for the m work-items with lid < m
    steps = ng * (256 * m - m)
    for kind in ("special", "local_loads", "global_loads"):
        assert extent[f"serial_{kind}"] == steps * expected.get(kind, 0), kind
    # only the add carries over from one step to the next
    assert extent["recurrence_flops"] == steps
    assert extent["recurrence_local_loads"] == extent["recurrence_special"] == 0


def test_nbody_waits_for_its_load_and_rsqrt_in_every_iteration():
    n = 300
    extent = _extent(nbody(256, np.float32), {"n": n})
    # the condition i ≠ j is on the j loops' indices: a branch in every j iteration. Its
    # path: tile load → difference → square → sum over k → rsqrt → add, once per (i, j);
    # the sum over k starts afresh in every j iteration, so its loads are not counted again
    assert extent["serial_local_loads"] == extent["serial_special"] == n * n
    assert extent["serial_global_loads"] == 0


def test_conditions_that_do_not_change_within_a_loop_make_no_branch_in_it():
    # filled_stride guards its whole loop with 256·io + ii < n: one branch, outside it
    knl = prepare_kernel(filled_stride(2, 256, np.float32)).kernel
    assert any(insn.predicates for insn in knl.instructions)
    assert branching_loops(knl) == frozenset()
    assert branching_loops(prepare_kernel(nbody()).kernel) == {"j_inner", "j_outer"}
    assert all(v == 0 for k, v in _extent(chain("special", 256, np.float32),
                                          {"ng": 2, "m": 10}).items()
               if k.startswith("serial_"))


def test_a_gather_moves_what_it_touches_not_the_whole_table():
    params = {"ng": 2, "m": 10, "N": 2 ** 20}
    props = kc.extract_properties(chain("global", 256, np.float32))
    extent = props.extent(params)
    assert extent["bytes_read"] == 4 * 2 ** 20  # the array
    ext = features(props, params)
    assert ext["bytes_read"] == 4 * 512 * 10  # one float per step of each work-item
    # where accesses cover the array several times, the array's bytes count
    stencil = features(kc.extract_properties(local_reads("spread", 256, np.float32)),
                       {"ng": 3, "r": 8})
    assert stencil["bytes_read"] == 4 * 3 * 256


def _busiest_work_item_loads(tu, params):
    """Brute force: per instruction with global loads, the executions of each work-item
    counted point by point; where they differ among the work-items of the first
    work-group, the most of any work-item times the instruction's global loads."""
    knl = prepare_kernel(tu).kernel
    total = 0
    for insn in knl.instructions:
        if not isinstance(insn, lp.Assignment):
            continue
        loads = sum(1 for name in insn.read_dependency_names() if name in knl.arg_dict
                    and isinstance(knl.arg_dict[name], lp.ArrayArg))
        hardware = sorted(i for i in insn.within_inames
                          if knl.iname_tags_of_type(i, HardwareConcurrentTag))
        local = [i for i in hardware if knl.iname_tags_of_type(i, LocalInameTag)]
        if not loads or not local:
            continue
        runs = Counter(tuple(p[i] for i in hardware)
                       for p in _points(knl, insn.within_inames, params))
        first_group = [count for item, count in runs.items()
                       if all(v == 0 for i, v in zip(hardware, item) if i not in local)]
        if len(set(first_group)) > 1:
            total += loads * max(runs.values())
    return total


@pytest.mark.parametrize("build, params, expected", [
    # an 18×18 tile for 16×16 work-items: two fetch iterations along each axis for lid < 2
    (lambda: finite_difference(), {"n": 48}, 4),
    # 22×22 tiles of three colour planes, fetched once for each of three images
    (lambda: convolution(), {"n": 32}, 3 * 3 * 2 * 2),
    # (4 + 16) × (64 + 16): five rows for every work-item, one or two columns
    (lambda: halo("r8", (64, 4), np.float32), {"n": 128}, 5 * 2),
    (lambda: halo("r3", (32, 8), np.float64), {"n": 64}, 2 * 2),
    # 24 rows of b for 16 rows of work-items, in each of the 96 / 24 steps along k
    (lambda: matmul_tiled((24, 16), np.float32), {"n": 96, "m": 96, "l": 96}, 4 * 2),
])
def test_fetch_loops_that_vary_among_work_items_count_the_busiest_ones_loads(
        build, params, expected):
    knl = build()
    assert _busiest_work_item_loads(knl, params) == expected
    assert _extent(knl, params)["varying_global_loads"] == expected


@pytest.mark.parametrize("build, params", [
    (lambda: matmul_tiled((16, 16), np.float32), {"n": 96, "m": 96, "l": 96}),
    # a size that is no multiple of the tiles cuts the last step short: an edge, not a loop
    # whose trip count varies
    (lambda: matmul_tiled((16, 16), np.float32), {"n": 100, "m": 100, "l": 100}),
    (lambda: guarded("global", 256, np.float32), {"ng": 2, "m": 300}),
    (lambda: nbody(256, np.float32), {"n": 300}),
])
def test_loops_that_every_work_item_runs_alike_count_no_varying_loads(build, params):
    assert _extent(build(), params)["varying_global_loads"] == 0
