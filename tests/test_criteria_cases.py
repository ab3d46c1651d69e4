"""The fine-grained model's case studies (kernelcast.suites.criteria_cases): launches checked
against the kernels' signatures, references against independent computations, and the
kernels' index math by Python emulations of their CUDA formulas (no GPU, no compiler)."""

from collections import deque

import numpy as np
import pytest

from kernelcast.suites.criteria_cases import (
    BLOCK,
    COOP_BLOCKS_PER_SM,
    SM_COUNT,
    Step,
    bfs_cases,
    bfs_levels,
    cases,
    launches,
    random_graph,
    reduction_cases,
    signatures,
    transpose_cases,
)

DTYPES = {"int": "int32", "float": "float32"}


@pytest.fixture(scope="module")
def full():
    return cases()


def _small():
    return reduction_cases(5000, sms=2) + transpose_cases(64, 96) + bfs_cases(300, 3, sms=2)


def _steps(case, read=None):
    """The launches; a plan is driven by *read* (default: a counter that never changes)."""
    return list(launches(case, read or (lambda name: np.zeros(1, np.int32))))


def _param(decl):
    """('int', True) for 'const int *__restrict__ x', ('int', False) for 'int n'."""
    words = [w for w in decl.replace("*", " * ").split()
             if w not in ("const", "__restrict__")]
    return " ".join(w for w in words[:-1] if w != "*"), "*" in words


# ------------------------------------------------------------------ the case list


def test_cases_are_unique_ordered_and_sized(full):
    keys = [(c.application, c.version) for c in full]
    assert len(set(keys)) == len(keys) == 10
    assert [c.application for c in full] == ["reduction"] * 3 + ["transpose"] * 4 + ["bfs"] * 3
    by = {k: c for k, c in zip(keys, full)}
    assert by["reduction", "1-interleaved"].buffers["x"][1].shape == (1 << 24,)
    assert by["transpose", "4-reshaped"].buffers["in"][1].shape == (4096, 4096)
    assert by["bfs", "3-cooperative"].scalars["n"] == ("int", 1 << 20)
    assert [c.cooperative for c in full] == [False] * 8 + [True] * 2
    assert all(c.description and c.output in c.buffers for c in full)


def test_cases_are_deterministic():
    for a, b in zip(_small(), _small(), strict=True):
        assert (a.application, a.version, a.source, a.scalars, a.output) == \
            (b.application, b.version, b.source, b.scalars, b.output)
        assert _steps(a) == _steps(b)
        assert a.buffers.keys() == b.buffers.keys()
        for name, (dtype, init) in a.buffers.items():
            assert dtype == b.buffers[name][0]
            assert np.array_equal(init, b.buffers[name][1])
        assert np.array_equal(a.reference(), b.reference())


def test_steps_match_the_kernel_signatures(full):
    for case in full:
        sigs = signatures(case.source)
        assert len(sigs) == case.source.count('extern "C"')  # names unique in the source
        for step in _steps(case):
            params = sigs[step.kernel_name]
            assert len(step.args) == len(params), (case.version, step)
            for name, decl in zip(step.args, params):
                ctype, pointer = _param(decl)
                if pointer:
                    assert case.buffers[name][0] == DTYPES[ctype], (case.version, name)
                else:
                    assert case.scalars[name][0] == ctype, (case.version, name)
            assert all(d >= 1 for d in step.grid + step.block)
            assert step.block[0] * step.block[1] * step.block[2] <= 1024
            assert step.cooperative == ("grid.sync()" in case.source)


def test_buffers_are_arrays_or_sizes(full):
    for case in full:
        for name, (dtype, init) in case.buffers.items():
            np.dtype(dtype)
            assert isinstance(init, int) or init.dtype == np.dtype(dtype), (case.version, name)


# ------------------------------------------------------------------ coverage


def test_reduction_passes_cover_their_inputs(full):
    for case in [c for c in full if c.application == "reduction"]:
        steps = _steps(case)
        assert steps[-1].args[1] == "sum" and steps[-1].grid == (1, 1, 1)
        for first, second in zip(steps, steps[1:]):
            assert first.args[1] == second.args[0]  # a pass reads the previous partials
            blocks = first.grid[0]
            assert case.buffers[first.args[1]][1] == blocks == case.scalars[second.args[2]][1]
        for step in steps:
            size = case.scalars[step.args[2]][1]
            if case.version != "3-ilp":  # one element per thread; 3-ilp is grid-stride
                assert step.grid[0] * step.block[0] >= size > (step.grid[0] - 1) * step.block[0]
    assert len(_steps(full[0])) == 3 and len(_steps(full[2])) == 2
    assert _steps(full[2])[0].grid[0] == SM_COUNT * 8


def test_transpose_launches_cover_the_matrix(full):
    for case in [c for c in full if c.application == "transpose"]:
        (step,) = _steps(case)
        per_thread = 4 if case.version == "4-reshaped" else 1
        threads = np.prod(step.grid) * np.prod(step.block)
        assert threads * per_thread == 4096 * 4096 == case.buffers["out"][1]


def test_bfs_launches(full):
    multi, single, coop = [c for c in full if c.application == "bfs"]
    (step,) = _steps(multi)
    assert step.grid[0] * step.block[0] >= 1 << 20 > (step.grid[0] - 1) * step.block[0]
    for case in (single, coop):
        (step,) = _steps(case)
        assert step.cooperative and step.grid == (SM_COUNT * COOP_BLOCKS_PER_SM, 1, 1)
        assert f"__launch_bounds__({BLOCK}, {COOP_BLOCKS_PER_SM})" in case.source


# ------------------------------------------------------------------ references


def test_small_references_against_plain_python():
    for case in _small():
        if case.application == "reduction":
            assert case.reference().tolist() == [sum(int(v) for v in case.buffers["x"][1])]
        elif case.application == "transpose":
            a = case.buffers["in"][1].tolist()
            want = [[a[r][c] for r in range(len(a))] for c in range(len(a[0]))]
            assert case.reference().tolist() == want
        else:
            rp, ci = case.buffers["row_ptr"][1], case.buffers["col_idx"][1]
            assert case.reference().tolist() == _python_bfs(rp.tolist(), ci.tolist(), 0)


def _python_bfs(row_ptr, col_idx, source):
    levels = [-1] * (len(row_ptr) - 1)
    levels[source] = 0
    todo = deque([source])
    while todo:
        v = todo.popleft()
        for u in col_idx[row_ptr[v]:row_ptr[v + 1]]:
            if levels[u] < 0:
                levels[u] = levels[v] + 1
                todo.append(u)
    return levels


def test_random_graph_is_a_simple_undirected_csr():
    rp, ci = random_graph(500, 6, seed=7)
    assert rp.dtype == ci.dtype == np.int32 and rp[0] == 0 and rp[-1] == len(ci)
    edges = set()
    for v in range(500):
        row = ci[rp[v]:rp[v + 1]].tolist()
        assert row == sorted(set(row)) and v not in row
        edges |= {(v, u) for u in row}
    assert all((u, v) in edges for v, u in edges)
    assert 5.5 < len(ci) / 500 <= 6


def test_bfs_levels_marks_unreachable_vertices():
    rp, ci = random_graph(400, 2, seed=3)  # sparse: several components
    levels = bfs_levels(rp, ci, 5)
    assert levels.tolist() == _python_bfs(rp.tolist(), ci.tolist(), 5)
    assert (levels == -1).sum() > 10


# ------------------------------------------------------------------ reduction emulation


def _shfl_down(values, offset):
    """__shfl_down_sync over a full warp: lane l reads lane l + offset, or keeps its own."""
    return [values[lane + offset] if lane + offset < 32 else values[lane] for lane in range(32)]


def _warp_sum(values):
    for offset in (16, 8, 4, 2, 1):
        values = [v + w for v, w in zip(values, _shfl_down(values, offset))]
    return values[0]


def _block_sum(values):
    """block_sum: warp sums, then warp 0 sums lane < blockDim / 32 of them."""
    sums = [_warp_sum(values[w * 32:(w + 1) * 32]) for w in range(len(values) // 32)]
    return _warp_sum([sums[lane] if lane < len(values) // 32 else 0 for lane in range(32)])


def _reduce_interleaved(x, grid, block):
    out = []
    for b in range(grid):
        sdata = [int(x[b * block + t]) if b * block + t < len(x) else 0 for t in range(block)]
        s = 1
        while s < block:
            for tid in range(block):  # one barrier between the rounds
                if tid % (2 * s) == 0:
                    sdata[tid] += sdata[tid + s]
            s *= 2
        out.append(sdata[0])
    return out


def _reduce_warp(x, grid, block):
    return [_block_sum([int(x[i]) if i < len(x) else 0
                        for i in range(b * block, (b + 1) * block)]) for b in range(grid)]


def _ilp_indices(n, grid, block, b, t):
    """The indices thread t of block b adds in reduce_ilp, per accumulator."""
    stride, i, acc = grid * block, b * block + t, [[], [], [], []]
    while i + 3 * stride < n:
        for k in range(4):
            acc[k].append(i + k * stride)
        i += 4 * stride
    while i < n:
        acc[0].append(i)
        i += stride
    return acc


def _reduce_ilp(x, grid, block):
    return [_block_sum([sum(int(x[i]) for a in _ilp_indices(len(x), grid, block, b, t)
                            for i in a) for t in range(block)]) for b in range(grid)]


@pytest.mark.parametrize("n", [1, 255, 5000, 70000])
def test_reduction_emulated_passes_give_the_sum(n):
    kernels = {"reduce_interleaved": _reduce_interleaved, "reduce_warp": _reduce_warp,
               "reduce_ilp": _reduce_ilp}
    for case in reduction_cases(n, sms=1):
        mem = {name: init for name, (_, init) in case.buffers.items() if not isinstance(init, int)}
        for step in _steps(case):
            src, dst, count = step.args
            assert len(mem[src]) == case.scalars[count][1]
            mem[dst] = kernels[step.kernel_name](mem[src], step.grid[0], step.block[0])
        assert mem["sum"] == case.reference().tolist(), (n, case.version)


def test_reduce_ilp_visits_every_index_once_with_independent_sums():
    n, grid, block = 10_000, 3, 64
    seen = [i for b in range(grid) for t in range(block)
            for a in _ilp_indices(n, grid, block, b, t) for i in a]
    assert sorted(seen) == list(range(n))
    acc = _ilp_indices(n, grid, block, 0, 0)
    assert all(len(a) >= 12 for a in acc)  # four chains of similar length


def test_reduce_interleaved_is_divergent_and_warp_is_not():
    """Active lanes of warp 0 per round of the interleaved loop: 16, 8, 4, 2, 1, then 1."""
    active = [sum(1 for tid in range(32) if tid % (2 * s) == 0) for s in (1, 2, 4, 8, 16, 32)]
    assert active == [16, 8, 4, 2, 1, 1]


# ------------------------------------------------------------------ transpose emulation


def _transpose(version, a, grid, block):
    """The CUDA index formulas of the transpose kernels, thread by thread; also the worst
    bank conflict (distinct words in one of 32 four-byte banks) of a warp's tile read."""
    rows, cols = a.shape
    flat, out = a.reshape(-1), np.full(rows * cols, np.nan, dtype=np.float32)
    width = 33 if version in ("3-padded", "4-reshaped") else 32
    loop = range(0, 32, 8) if version == "4-reshaped" else (0,)
    worst = 0
    for by in range(grid[1]):
        for bx in range(grid[0]):
            threads = [(tx, ty) for ty in range(block[1]) for tx in range(block[0])]
            if version == "1-naive":
                for tx, ty in threads:
                    x, y = bx * 32 + tx, by * 32 + ty
                    out[x * rows + y] = flat[y * cols + x]
                continue
            tile = {}
            for tx, ty in threads:
                x, y = bx * 32 + tx, by * 32 + ty
                for j in loop:
                    tile[(ty + j) * width + tx] = flat[(y + j) * cols + x]
            for j in loop:  # after __syncthreads
                for w in range(0, len(threads), 32):
                    words = [(tx * width + ty + j) for tx, ty in threads[w:w + 32]]
                    worst = max(worst, max(len({word for word in words if word % 32 == bank})
                                           for bank in range(32)))
            for tx, ty in threads:
                x, y = by * 32 + tx, bx * 32 + ty
                for j in loop:
                    out[(y + j) * rows + x] = tile[tx * width + ty + j]
    return out.reshape(cols, rows), worst


def test_transpose_emulated_kernels_transpose_with_the_expected_conflicts():
    conflicts = {"1-naive": 0, "2-tiled": 32, "3-padded": 1, "4-reshaped": 1}
    for case in transpose_cases(64, 96):
        (step,) = _steps(case)
        got, worst = _transpose(case.version, case.buffers["in"][1], step.grid, step.block)
        assert np.array_equal(got, case.reference()), case.version
        assert worst == conflicts[case.version], case.version


def test_transpose_rejects_partial_tiles():
    with pytest.raises(ValueError):
        transpose_cases(64, 100)


# ------------------------------------------------------------------ BFS emulation


def _bfs_level(mem, grid, block, n):
    """bfs_level, thread by thread (one valid schedule), block by block for the OR."""
    rp, ci, lv = mem["row_ptr"], mem["col_idx"], mem["levels"]
    for b in range(grid):
        found = 0
        for t in range(block):
            v = b * block + t
            if v < n and mem["cur"][v]:
                mem["cur"][v] = 0
                for e in range(rp[v], rp[v + 1]):
                    if lv[ci[e]] == -1:
                        lv[ci[e]], mem["next"][ci[e]], found = lv[v] + 1, 1, 1
        if found:
            mem["changed"][0] += 1


def test_bfs_multikernel_plan_drives_levels_to_the_reference():
    case = bfs_cases(300, 3, sms=2)[0]
    mem = {name: (init.copy() if not isinstance(init, int) else np.zeros(init, np.int32))
           for name, (_, init) in case.buffers.items()}
    count = 0
    for step in launches(case, lambda name: mem[name].copy()):
        args = dict(zip(("row_ptr", "col_idx", "levels", "cur", "next", "changed", "n"),
                        step.args))
        view = {k: mem[v] for k, v in args.items() if k != "n"}
        _bfs_level(view, step.grid[0], step.block[0], case.scalars[args["n"]][1])
        count += 1
    levels = mem["levels"]
    assert np.array_equal(levels, case.reference())
    assert count == levels.max() + 1  # one launch per level; the deepest one finds nothing


def test_bfs_plan_gives_up_after_n_plus_one_levels():
    case = bfs_cases(20, 3, sms=1)[0]
    counter = iter(range(1, 100))
    with pytest.raises(RuntimeError):
        for _ in launches(case, lambda name: np.array([next(counter)])):
            pass


def test_bfs_persistent_emulation():
    """bfs_persistent's loop: frontiers by parity, flags rotating over three slots."""
    case = bfs_cases(300, 3, sms=1)[1]
    (step,) = _steps(case)
    n = case.scalars["n"][1]
    rp, ci = case.buffers["row_ptr"][1], case.buffers["col_idx"][1]
    lv = case.buffers["levels"][1].copy()
    fronts = [case.buffers["front_a"][1].copy(), np.zeros(n, np.int32)]
    flags, stride, level = [0] * case.buffers["flags"][1], step.grid[0] * step.block[0], 0
    while True:
        cur, nxt = fronts[level % 2], fronts[(level + 1) % 2]
        flags[(level + 1) % 3] = 0
        for b in range(step.grid[0]):
            found = 0
            for t in range(step.block[0]):
                for v in range(b * step.block[0] + t, n, stride):
                    if cur[v]:
                        cur[v] = 0
                        for u in ci[rp[v]:rp[v + 1]]:
                            if lv[u] == -1:
                                lv[u], nxt[u], found = level + 1, 1, 1
            if found:
                flags[level % 3] = 1
        if flags[level % 3] == 0:
            break
        level += 1
    assert np.array_equal(lv, case.reference())


def test_bfs_queue_emulation():
    """bfs_queue's loop, warp by warp: 32 lanes per neighbour chunk, ballot, one atomicAdd
    per warp, lane offsets by popc of the lower lanes; sizes rotating over three slots."""
    case = bfs_cases(300, 3, sms=1)[2]
    (step,) = _steps(case)
    n = case.scalars["n"][1]
    rp, ci = case.buffers["row_ptr"][1], case.buffers["col_idx"][1]
    lv = case.buffers["levels"][1].copy()
    queue, sizes = case.buffers["queue"][1].copy(), case.buffers["sizes"][1].copy()
    warps, level, order = step.grid[0] * step.block[0] // 32, 0, []
    while True:
        count = sizes[level % 3]
        if count == 0:
            break
        cur, nxt = (level % 2) * n, ((level + 1) % 2) * n
        sizes[(level + 2) % 3] = 0
        for w in range(warps):
            for i in range(w, count, warps):
                v = queue[cur + i]
                order.append(v)
                for e in range(rp[v], rp[v + 1], 32):
                    claimed = [False] * 32
                    for lane in range(32):
                        if e + lane < rp[v + 1] and lv[ci[e + lane]] == -1:
                            lv[ci[e + lane]], claimed[lane] = level + 1, True
                    mask = sum(1 << lane for lane in range(32) if claimed[lane])
                    if mask == 0:
                        continue
                    base = sizes[(level + 1) % 3]
                    sizes[(level + 1) % 3] += bin(mask).count("1")
                    for lane in range(32):
                        if claimed[lane]:
                            queue[nxt + base + bin(mask & ((1 << lane) - 1)).count("1")] = \
                                ci[e + lane]
        level += 1
    assert np.array_equal(lv, case.reference())
    assert sorted(order) == np.flatnonzero(lv >= 0).tolist()  # every reached vertex once


def test_signatures_parse_launch_bounds():
    src = ('extern "C" __global__ void __launch_bounds__(256, 4)\nk(const int *__restrict__ a,'
           ' int *b, int n) {}\nextern "C" __global__ void j(float *x) {}')
    assert signatures(src) == {"k": ("const int *__restrict__ a", "int *b", "int n"),
                               "j": ("float *x",)}
    assert Step("k", (1, 1, 1), (1, 1, 1), ("a",)).cooperative is False


FORMULAS = {  # the CUDA statements the emulations above mirror
    "reduce_interleaved": ["if (tid % (2 * s) == 0) sdata[tid] += sdata[tid + s];",
                           "for (unsigned s = 1; s < blockDim.x; s *= 2)"],
    "reduce_warp": ["for (int offset = 16; offset > 0; offset /= 2)",
                    "v = lane < blockDim.x / 32 ? warp_sums[lane] : 0;"],
    "reduce_ilp": ["for (; i + 3 * stride < n; i += 4 * stride)", "a3 += in[i + 3 * stride];",
                   "for (; i < n; i += stride) a0 += in[i];"],
    "transpose_naive": ["out[x * rows + y] = in[y * cols + x];"],
    "transpose_tiled": ["__shared__ float tile[32][32];",
                        "tile[threadIdx.y][threadIdx.x] = in[y * cols + x];",
                        "x = blockIdx.y * 32 + threadIdx.x;", "y = blockIdx.x * 32 + threadIdx.y;",
                        "out[y * rows + x] = tile[threadIdx.x][threadIdx.y];"],
    "transpose_padded": ["__shared__ float tile[32][33];",
                         "out[y * rows + x] = tile[threadIdx.x][threadIdx.y];"],
    "transpose_reshaped": ["__shared__ float tile[TILE][TILE + 1];",
                           "tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];",
                           "out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];"],
    "bfs_level": ["if (__syncthreads_or(found) && threadIdx.x == 0) atomicAdd(changed, 1);"],
    "bfs_persistent": ["if (grid.thread_rank() == 0) flags[(level + 1) % 3] = 0;",
                       "if (flags[level % 3] == 0) break;"],
    "bfs_queue": ["if (grid.thread_rank() == 0) sizes[(level + 2) % 3] = 0;",
                  "int *next_size = sizes + (level + 1) % 3;",
                  "if (claimed) next[base + __popc(mask & ((1u << lane) - 1))] = u;"],
}


def test_emulated_formulas_are_the_sources(full):
    for case in full:
        for step in _steps(case):
            for statement in FORMULAS[step.kernel_name]:
                assert statement in case.source, (step.kernel_name, statement)
