"""The fine-grained model's case studies (shared/seeds 003, §VI): each version of the
paper's three applications, reduction, matrix transpose and BFS, as CUDA C++ source, its
buffers and scalars (inputs from seeded numpy), its launches and a numpy reference.

A :class:`Case` is run by a host program (benchmarks/criteria_cases.py) as follows:

1. compile ``case.source`` (``extern "C"`` kernels, no -rdc needed) and load the module;
   if any step is ``cooperative``, load it so that its kernels are launched with
   cuLaunchCooperativeKernel (cupy: ``RawModule(path=..., enable_cooperative_groups=True)``);
2. allocate every buffer: ``(dtype, array)`` is copied to the device, ``(dtype, size)``
   is zero-filled; scalars are ``(ctype, value)`` with ctype "int";
3. launch the steps in order, each with its grid, block, dynamic shared bytes and the
   named buffers/scalars as arguments. ``case.steps`` is a tuple, or a function
   ``plan(read)`` returning an iterator of steps: the host launches each step it yields
   before asking for the next one, and ``read(name)`` returns a buffer's current device
   contents as a numpy array (a synchronizing copy), which the plan uses to decide the
   next launch (BFS version 1: a host loop over levels);
4. ``case.output``'s contents equal ``case.reference()`` (exactly: integers, or copied
   floats).

Sizes are parameters of the constructors (:func:`reduction_cases`, :func:`transpose_cases`,
:func:`bfs_cases`); :func:`cases` uses the defaults, sized for an H100 (132 SMs).
kernelcast.evaluation.criteria_cases reads the cases back as profiled on a GPU.

Public names: Step, Case, cases, reduction_cases, transpose_cases, bfs_cases, launches,
signatures, random_graph, bfs_levels, SM_COUNT, BLOCK.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

SM_COUNT = 132           # H100 SXM / H200: sets the grids that fill the GPU
BLOCK = 256              # threads per block of the 1-D kernels (reduction, BFS)
COOP_BLOCKS_PER_SM = 4   # resident blocks per SM of the cooperative BFS kernels
ILP_BLOCKS_PER_SM = 8    # blocks per SM of reduction version 3 (2048 threads per SM)
TILE = 32                # transpose tile side
BLOCK_ROWS = 8           # transpose version 4: thread rows per tile

REDUCTION_N = 1 << 24
TRANSPOSE_ROWS = TRANSPOSE_COLS = 4096
BFS_VERTICES = 1 << 20
BFS_DEGREE = 8


@dataclass(frozen=True)
class Step:
    """One kernel launch: *args* name the case's buffers/scalars in the kernel's parameter
    order; *cooperative* launches need cuLaunchCooperativeKernel (grid.sync())."""

    kernel_name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: tuple[str, ...]
    shared_bytes: int = 0
    cooperative: bool = False


Plan = Callable[[Callable[[str], np.ndarray]], Iterator[Step]]


@dataclass(frozen=True, eq=False)
class Case:
    """One version of one application (see the module docstring for how to run it).
    *expected* computes the reference from the case; call :meth:`reference`."""

    application: str
    version: str
    description: str
    source: str
    buffers: dict
    scalars: dict
    steps: tuple[Step, ...] | Plan
    output: str
    expected: Callable[[Case], np.ndarray]

    def reference(self) -> np.ndarray:
        """The expected contents of the output buffer, computed with numpy."""
        return self.expected(self)

    @property
    def cooperative(self) -> bool:
        """Whether a launch needs cuLaunchCooperativeKernel (plans are never cooperative)."""
        return not callable(self.steps) and any(s.cooperative for s in self.steps)


def launches(case: Case, read: Callable[[str], np.ndarray]) -> Iterator[Step]:
    """The case's steps in order: the tuple, or the plan's steps driven by *read*."""
    return case.steps(read) if callable(case.steps) else iter(case.steps)


_SIGNATURE = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s*)?'
                        r"(\w+)\s*\(([^)]*)\)")


def signatures(source: str) -> dict[str, tuple[str, ...]]:
    """Kernel name -> its parameter declarations (``"const int *__restrict__ x"``...),
    parsed from the ``extern "C" __global__`` definitions of *source*."""
    return {m.group(1): tuple(" ".join(p.split()) for p in m.group(2).split(",") if p.strip())
            for m in _SIGNATURE.finditer(source)}


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


# --------------------------------------------------------------------------- reduction

_REDUCTION_WARP = r"""
__device__ __forceinline__ int warp_sum(int v) {
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

// The block's warp sums combined by warp 0 after the one barrier; thread 0 writes.
__device__ __forceinline__ void block_sum(int v, int *out) {
  __shared__ int warp_sums[32];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_sum(v);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < blockDim.x / 32 ? warp_sums[lane] : 0;
    v = warp_sum(v);
    if (lane == 0) out[blockIdx.x] = v;
  }
}
"""

_REDUCTION_SOURCES = {
    "1-interleaved": r"""
// Harris's reduce0: interleaved addressing, divergent branch, log2(blockDim) barriers.
extern "C" __global__ void reduce_interleaved(const int *__restrict__ in, int *out, int n) {
  extern __shared__ int sdata[];
  const unsigned tid = threadIdx.x;
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  sdata[tid] = i < n ? in[i] : 0;
  __syncthreads();
  for (unsigned s = 1; s < blockDim.x; s *= 2) {
    if (tid % (2 * s) == 0) sdata[tid] += sdata[tid + s];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = sdata[0];
}
""",
    "2-warp": _REDUCTION_WARP + r"""
// Warp-centric: shuffles within each warp, one __syncthreads to combine the warps.
extern "C" __global__ void reduce_warp(const int *__restrict__ in, int *out, int n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  block_sum(i < n ? in[i] : 0, out);
}
""",
    "3-ilp": _REDUCTION_WARP + r"""
// Grid-stride accumulation with four independent accumulators, then as reduce_warp.
extern "C" __global__ void reduce_ilp(const int *__restrict__ in, int *out, int n) {
  const unsigned stride = gridDim.x * blockDim.x;
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  int a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  for (; i + 3 * stride < n; i += 4 * stride) {
    a0 += in[i];
    a1 += in[i + stride];
    a2 += in[i + 2 * stride];
    a3 += in[i + 3 * stride];
  }
  for (; i < n; i += stride) a0 += in[i];
  block_sum(a0 + a1 + a2 + a3, out);
}
""",
}

_REDUCTION_DESCRIPTIONS = {
    "1-interleaved": "the original (Harris's reduce0, the paper's Version1): one element per "
                     "thread, interleaved addressing with the divergent tid % (2s) branch and "
                     "log2(256) + 1 = 9 barriers per block",
    "2-warp": "warp-centric (Hong et al.): __shfl_down_sync within warps and one "
              "__syncthreads to combine them; targets device synchronization (IV-B), "
              "also divergence (IV-C)",
    "3-ilp": "on top of 2-warp, a grid of 8 blocks per SM, each thread accumulating about "
             "62 elements grid-stride in four independent sums (ILP); targets divergence "
             "(IV-C) and throughput/occupancy (IV-H)",
}


def _reduction_steps(version: str, n: int, sms: int) -> tuple[tuple[Step, ...], dict, dict]:
    """The passes of one version: (steps, partial buffers, size scalars). Each pass writes
    one int per block; the pass with one block writes the buffer "sum"."""
    kernel = {"1-interleaved": "reduce_interleaved", "2-warp": "reduce_warp",
              "3-ilp": "reduce_ilp"}[version]
    shared = BLOCK * 4 if version == "1-interleaved" else 0
    steps, buffers, scalars = [], {}, {}
    size, source, k = n, "x", 0
    while True:
        blocks = _cdiv(size, BLOCK)
        if version == "3-ilp":  # grid-stride: a GPU-filling grid, then one block
            blocks = min(blocks, sms * ILP_BLOCKS_PER_SM) if k == 0 else 1
        k += 1
        count = "n" if k == 1 else f"n{k - 1}"
        scalars[count] = ("int", size)
        target = "sum" if blocks == 1 else f"partial{k}"
        buffers[target] = ("int32", blocks)
        steps.append(Step(kernel, (blocks, 1, 1), (BLOCK, 1, 1), (source, target, count), shared))
        if blocks == 1:
            return tuple(steps), buffers, scalars
        size, source = blocks, target


def reduction_cases(n: int = REDUCTION_N, sms: int = SM_COUNT, seed: int = 2501) -> list[Case]:
    """Reduction (§VI-A): the sum of *n* int32 in [0, 16) (exact, below 2**31 for n <=
    2**27); every version reduces per block and launches again on the partial sums until
    one block is left (2**24: three passes for versions 1-2, two for version 3)."""
    x = np.random.default_rng(seed).integers(0, 16, n, dtype=np.int32)
    out = []
    for version, source in _REDUCTION_SOURCES.items():
        steps, buffers, scalars = _reduction_steps(version, n, sms)
        out.append(Case("reduction", version, _REDUCTION_DESCRIPTIONS[version],
                        source.lstrip(), {"x": ("int32", x), **buffers}, scalars, steps, "sum",
                        lambda c: np.array([c.buffers["x"][1].sum(dtype=np.int64)],
                                           dtype=np.int32)))
    return out


# --------------------------------------------------------------------------- transpose

_TRANSPOSE_SOURCES = {
    "1-naive": r"""
// One element per thread: coalesced reads, writes strided by rows.
extern "C" __global__ void transpose_naive(const float *__restrict__ in, float *out,
                                           int rows, int cols) {
  const int x = blockIdx.x * 32 + threadIdx.x;  // column of in
  const int y = blockIdx.y * 32 + threadIdx.y;  // row of in
  out[x * rows + y] = in[y * cols + x];
}
""",
    "2-tiled": r"""
// A 32x32 tile through shared memory: coalesced reads and writes; the column read of
// the tile hits one bank 32 times.
extern "C" __global__ void transpose_tiled(const float *__restrict__ in, float *out,
                                           int rows, int cols) {
  __shared__ float tile[32][32];
  int x = blockIdx.x * 32 + threadIdx.x;
  int y = blockIdx.y * 32 + threadIdx.y;
  tile[threadIdx.y][threadIdx.x] = in[y * cols + x];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x;  // column of out
  y = blockIdx.x * 32 + threadIdx.y;  // row of out
  out[y * rows + x] = tile[threadIdx.x][threadIdx.y];
}
""",
    "3-padded": r"""
// As transpose_tiled with a padded 32x33 tile: the column read spans all 32 banks.
extern "C" __global__ void transpose_padded(const float *__restrict__ in, float *out,
                                            int rows, int cols) {
  __shared__ float tile[32][33];
  int x = blockIdx.x * 32 + threadIdx.x;
  int y = blockIdx.y * 32 + threadIdx.y;
  tile[threadIdx.y][threadIdx.x] = in[y * cols + x];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x;
  y = blockIdx.x * 32 + threadIdx.y;
  out[y * rows + x] = tile[threadIdx.x][threadIdx.y];
}
""",
    "4-reshaped": r"""
// Harris's transposeNoBankConflicts: 32x8 threads, each moving 4 elements of a padded
// 32x33 tile (rows threadIdx.y + 0, 8, 16, 24).
#define TILE 32
#define BLOCK_ROWS 8
extern "C" __global__ void transpose_reshaped(const float *__restrict__ in, float *out,
                                              int rows, int cols) {
  __shared__ float tile[TILE][TILE + 1];
  int x = blockIdx.x * TILE + threadIdx.x;
  int y = blockIdx.y * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += BLOCK_ROWS)
    tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
  __syncthreads();
  x = blockIdx.y * TILE + threadIdx.x;
  y = blockIdx.x * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += BLOCK_ROWS)
    out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}
""",
}

_TRANSPOSE_DESCRIPTIONS = {
    "1-naive": "naive, one element per thread of 32x32-thread blocks: coalesced reads, "
               "writes strided by a row (one word per sector): the L1/L2 granularity "
               "(IV-F) baseline",
    "2-tiled": "a 32x32 shared-memory tile (the paper's Version1, [20]): reads and writes "
               "coalesced (L1/L2 granularity, IV-F), but the tile's column read is a "
               "32-way bank conflict (shared memory efficiency, IV-G)",
    "3-padded": "the tile padded to 32x33 (the paper's Version2): no bank conflicts; "
                "targets shared memory efficiency (IV-G)",
    "4-reshaped": "32x8-thread blocks each moving 4 elements of a 32x32 tile (Harris; the "
                  "paper's Version3: block re-configuration and tile re-sizing for L1/L2 "
                  "granularity, IV-F, and throughput/occupancy, IV-H)",
}


def transpose_cases(rows: int = TRANSPOSE_ROWS, cols: int = TRANSPOSE_COLS,
                    seed: int = 2502) -> list[Case]:
    """Matrix transpose (§VI-C): *rows* x *cols* float32 (multiples of 32), row-major in
    "in"; "out" receives the cols x rows transpose. One launch, one 32x32 tile per block."""
    if rows % TILE or cols % TILE:
        raise ValueError(f"rows and cols must be multiples of {TILE}, got {rows} x {cols}")
    a = np.random.default_rng(seed).random((rows, cols), dtype=np.float32)
    grid = (cols // TILE, rows // TILE, 1)
    out = []
    for version, source in _TRANSPOSE_SOURCES.items():
        block = (TILE, BLOCK_ROWS, 1) if version == "4-reshaped" else (TILE, TILE, 1)
        kernel = "transpose_" + version.split("-", 1)[1]
        step = Step(kernel, grid, block, ("in", "out", "rows", "cols"))
        out.append(Case("transpose", version, _TRANSPOSE_DESCRIPTIONS[version],
                        source.lstrip(), {"in": ("float32", a), "out": ("float32", rows * cols)},
                        {"rows": ("int", rows), "cols": ("int", cols)}, (step,), "out",
                        lambda c: np.ascontiguousarray(c.buffers["in"][1].T)))
    return out


# --------------------------------------------------------------------------------- BFS

def random_graph(n: int, degree: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A seeded undirected Erdős–Rényi-style graph in CSR (row_ptr int32[n+1], col_idx
    int32): n * degree / 2 random vertex pairs, self-loops dropped, both directions kept,
    duplicates removed, neighbour lists sorted; average degree just under *degree*."""
    rng = np.random.default_rng(seed)
    m = n * degree // 2
    a, b = rng.integers(0, n, m), rng.integers(0, n, m)
    keep = a != b
    a, b = a[keep], b[keep]
    key = np.sort(np.concatenate([a * n + b, b * n + a]))
    key = key[np.concatenate([[True], key[1:] != key[:-1]])]  # np.unique, 50x faster
    row_ptr = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.bincount(key // n, minlength=n), out=row_ptr[1:])
    return row_ptr, (key % n).astype(np.int32)


def bfs_levels(row_ptr: np.ndarray, col_idx: np.ndarray, source: int = 0) -> np.ndarray:
    """BFS levels from *source* (-1: unreachable), level-synchronous with numpy."""
    levels = np.full(len(row_ptr) - 1, -1, dtype=np.int32)
    levels[source] = 0
    frontier, level = np.array([source]), 0
    while frontier.size:
        starts, counts = row_ptr[frontier], row_ptr[frontier + 1] - row_ptr[frontier]
        first = np.cumsum(counts) - counts  # where each vertex's neighbours start in nb
        nb = col_idx[np.repeat(starts - first, counts) + np.arange(counts.sum())]
        fresh = np.zeros(len(levels), dtype=bool)
        fresh[nb[levels[nb] < 0]] = True
        frontier = np.flatnonzero(fresh)
        level += 1
        levels[frontier] = level
    return levels


_BFS_LEVEL = r"""
// One BFS level, vertex-parallel: each vertex of the frontier (cur) visits its neighbours;
// an unvisited one gets the next level and joins next. Each block that found a vertex
// adds 1 to *changed (the host stops when a launch leaves it unchanged).
extern "C" __global__ void bfs_level(const int *__restrict__ row_ptr,
                                     const int *__restrict__ col_idx, int *levels, int *cur,
                                     int *next, int *changed, int n) {
  const int v = blockIdx.x * blockDim.x + threadIdx.x;
  int found = 0;
  if (v < n && cur[v]) {
    cur[v] = 0;
    const int level = levels[v] + 1;
    for (int e = row_ptr[v]; e < row_ptr[v + 1]; ++e) {
      const int u = col_idx[e];
      if (levels[u] == -1) {
        levels[u] = level;
        next[u] = 1;
        found = 1;
      }
    }
  }
  if (__syncthreads_or(found) && threadIdx.x == 0) atomicAdd(changed, 1);
}
"""

_BFS_PERSISTENT = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// All levels in one cooperative launch: bfs_level's body over a grid-stride loop, the
// frontiers swapped by level parity, grid.sync() between levels. flags[level % 3] says
// whether the level found a vertex; flags[(level + 1) % 3] is cleared a level ahead.
extern "C" __global__ void __launch_bounds__(256, 4)
bfs_persistent(const int *__restrict__ row_ptr, const int *__restrict__ col_idx,
               int *levels, int *front_a, int *front_b, int *flags, int n) {
  cg::grid_group grid = cg::this_grid();
  const int stride = gridDim.x * blockDim.x;
  for (int level = 0;; ++level) {
    int *cur = level % 2 ? front_b : front_a;
    int *next = level % 2 ? front_a : front_b;
    if (grid.thread_rank() == 0) flags[(level + 1) % 3] = 0;
    int found = 0;
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += stride) {
      if (!cur[v]) continue;
      cur[v] = 0;
      for (int e = row_ptr[v]; e < row_ptr[v + 1]; ++e) {
        const int u = col_idx[e];
        if (levels[u] == -1) {
          levels[u] = level + 1;
          next[u] = 1;
          found = 1;
        }
      }
    }
    if (__syncthreads_or(found) && threadIdx.x == 0) flags[level % 3] = 1;
    grid.sync();
    if (flags[level % 3] == 0) break;
  }
}
"""

_BFS_QUEUE = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// All levels in one cooperative launch over a frontier queue: each warp visits one
// frontier vertex at a time, its 32 lanes reading 32 neighbours at once; a lane that
// claims an unvisited neighbour (atomicCAS on its level) appends it to the next queue,
// one atomicAdd per warp. queue holds two queues of n; sizes[level % 3] is the current
// queue's length, sizes[(level + 1) % 3] the next's, sizes[(level + 2) % 3] is cleared.
extern "C" __global__ void __launch_bounds__(256, 4)
bfs_queue(const int *__restrict__ row_ptr, const int *__restrict__ col_idx, int *levels,
          int *queue, int *sizes, int n) {
  cg::grid_group grid = cg::this_grid();
  const unsigned lane = threadIdx.x % 32;
  const int warps = gridDim.x * blockDim.x / 32;
  for (int level = 0;; ++level) {
    const int count = sizes[level % 3];
    if (count == 0) break;
    const int *cur = queue + (level % 2) * n;
    int *next = queue + ((level + 1) % 2) * n;
    int *next_size = sizes + (level + 1) % 3;
    if (grid.thread_rank() == 0) sizes[(level + 2) % 3] = 0;
    for (int i = (blockIdx.x * blockDim.x + threadIdx.x) / 32; i < count; i += warps) {
      const int v = cur[i], end = row_ptr[v + 1];
      for (int e = row_ptr[v]; e < end; e += 32) {
        int u = 0, claimed = 0;
        if (e + lane < end) {
          u = col_idx[e + lane];
          claimed = levels[u] == -1 && atomicCAS(&levels[u], -1, level + 1) == -1;
        }
        const unsigned mask = __ballot_sync(0xffffffffu, claimed);
        if (mask == 0) continue;
        int base = 0;
        if (lane == 0) base = atomicAdd(next_size, __popc(mask));
        base = __shfl_sync(0xffffffffu, base, 0);
        if (claimed) next[base + __popc(mask & ((1u << lane) - 1))] = u;
      }
    }
    grid.sync();
  }
}
"""

_BFS_DESCRIPTIONS = {
    "1-multikernel": "the original: one vertex-parallel launch per level (a thread per "
                     "vertex scans its frontier flag) and a host read of a device counter "
                     "after each launch to decide the next one",
    "2-singlekernel": "one persistent cooperative launch iterating the levels with "
                      "grid.sync() (inter-block synchronization) instead of host round "
                      "trips; targets host synchronization (IV-A)",
    "3-cooperative": "on top of 2-singlekernel, a frontier queue instead of scanning every "
                     "vertex, and a warp visiting one vertex's neighbour list at a time; "
                     "targets warp and SM load balancing (IV-D, IV-E)",
}


def bfs_cases(n: int = BFS_VERTICES, degree: int = BFS_DEGREE, sms: int = SM_COUNT,
              seed: int = 2503, source: int = 0) -> list[Case]:
    """BFS (§VI-B): levels from vertex *source* of :func:`random_graph` (n, degree, seed);
    "levels" (int32[n], -1 unreachable) is the output. The cooperative versions use
    sms * 4 blocks of 256 threads (at most 64 registers by __launch_bounds__, so all are
    resident on any GPU with >= *sms* SMs)."""
    row_ptr, col_idx = random_graph(n, degree, seed)
    levels = np.full(n, -1, dtype=np.int32)
    levels[source] = 0
    front = np.zeros(n, dtype=np.int32)
    front[source] = 1
    queue = np.zeros(2 * n, dtype=np.int32)
    queue[0] = source
    graph = {"row_ptr": ("int32", row_ptr), "col_idx": ("int32", col_idx),
             "levels": ("int32", levels)}
    scalars = {"n": ("int", n)}
    coop = ((sms * COOP_BLOCKS_PER_SM, 1, 1), (BLOCK, 1, 1))

    def plan(read):
        """bfs_level once per level, until a launch leaves "changed" as it was."""
        seen = 0  # "changed" starts at 0
        for level in range(n + 1):
            cur, nxt = ("front_a", "front_b") if level % 2 == 0 else ("front_b", "front_a")
            yield Step("bfs_level", (_cdiv(n, BLOCK), 1, 1), (BLOCK, 1, 1),
                       ("row_ptr", "col_idx", "levels", cur, nxt, "changed", "n"))
            now = int(read("changed")[0])
            if now == seen:
                return
            seen = now
        raise RuntimeError("BFS did not stop after n + 1 levels")

    def expected(case):
        return bfs_levels(case.buffers["row_ptr"][1], case.buffers["col_idx"][1], source)

    fronts = {"front_a": ("int32", front), "front_b": ("int32", n)}
    return [
        Case("bfs", "1-multikernel", _BFS_DESCRIPTIONS["1-multikernel"], _BFS_LEVEL.lstrip(),
             {**graph, **fronts, "changed": ("int32", 1)}, scalars, plan, "levels", expected),
        Case("bfs", "2-singlekernel", _BFS_DESCRIPTIONS["2-singlekernel"],
             _BFS_PERSISTENT.lstrip(), {**graph, **fronts, "flags": ("int32", 3)}, scalars,
             (Step("bfs_persistent", *coop, ("row_ptr", "col_idx", "levels", "front_a",
                                              "front_b", "flags", "n"), cooperative=True),),
             "levels", expected),
        Case("bfs", "3-cooperative", _BFS_DESCRIPTIONS["3-cooperative"], _BFS_QUEUE.lstrip(),
             {**graph, "queue": ("int32", queue),
              "sizes": ("int32", np.array([1, 0, 0], dtype=np.int32))}, scalars,
             (Step("bfs_queue", *coop, ("row_ptr", "col_idx", "levels", "queue", "sizes", "n"),
                   cooperative=True),),
             "levels", expected),
    ]


def cases() -> list[Case]:
    """Every case at its default size, in a fixed order: reduction, transpose, BFS."""
    return reduction_cases() + transpose_cases() + bfs_cases()
