"""Characterizing a code layout (§7): from a skeleton's parallel loop and a Layout to the
Hong–Kim model's Workload (Table 2), with the statistics behind it.

For one kernel and one GPU, ``Characterizer`` gathers what does not depend on the layout
(accesses placed in their loops, loop ranges, basic blocks, the coalescing rule of the
GPU's compute capability); ``characterize(layout)`` then computes, per thread:

- shared memory: per cached array D and scope (the staged streaming loops around its
  loads), ShMem(D, k) by Eq. (5) and its bytes by (6), their sum per block by (7);
- caching memory instructions by (12) and direct ones by (13), each coalesced or not by
  the warp's addresses (§7.2): the first warp_size elements of a ShMem section, and the
  warp tile W of a direct access (the block's first warp; fold iterations and inner
  loops at their first value). An indirect index reads its sample file where it has one
  (averaged over up to 32 warps, as §9.4 does), is one value for the warp where nothing
  it reads varies across the warp, and is otherwise random: one transaction per thread;
- (14)–(16): coalesced and uncoalesced instructions and transactions per uncoalesced one;
- (9)–(11): bytes per warp instruction;
- computation (§7.3): functional instructions (17) plus the peripheral ones of Table 3
  (loop management, data preparation per caching instruction, index calculation per
  uncoalesced instruction, a bounds branch per task where the layout does not divide the
  loop space) plus one instruction per shared-memory read (§7.2 treats them as
  computation); synchronization: two per stage of every cached scope.

Readings of the paper that are ours (docs/grophecy.md, "Characterization"): Eq. (12)'s
⌊size(ShMem) / threads⌋ is taken as ⌈ ⌉, since a block that caches fewer elements than it
has threads still issues one load (equal where Eq. (3) sized the stage); Eq. (13) is
capped at the times the statement runs in the thread's tile, since an indirect pattern
covering a whole dimension would otherwise count more loads than executions, and it
keeps an element in registers across a thread's tasks only outside streaming loops
(their data "can be discarded immediately", §5; a folded MatMul thread cannot hold a
column of B in registers from one task to the next); tasks are
dealt to threads cyclically (adjacent threads, adjacent tasks: §6.1) for the warp's
addresses and stages, while F̂ is the thread's tasks as one box for Eq. (13) (§6.3).

Public names: MemoryInstruction, Characteristics, Characterizer.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from kernelcast.errors import UsageError
from kernelcast.frontends.skeleton.ir import (
    Affine,
    Comp,
    Loop,
    ParallelFor,
    Skeleton,
    iter_statements,
)
from kernelcast.frontends.skeleton.ir import Indirect as SkeletonIndirect
from kernelcast.frontends.skeleton.sample import read_sample
from kernelcast.models.grophecy import compiler, instructions
from kernelcast.models.grophecy.coalescing import rule_for, warp_access
from kernelcast.models.grophecy.layouts import Layout
from kernelcast.models.grophecy.sections import Range, Tile, footprint, pattern, size
from kernelcast.models.grophecy.skeletons import (
    PlacedAccess,
    loop_range,
    loop_space,
    placed_accesses,
)
from kernelcast.models.grophecy.usage import num_stages as num_stages_of
from kernelcast.models.hong_kim.equations import Workload
from kernelcast.hardware import Hardware

_SAMPLED_WARPS = 32


@dataclass(frozen=True)
class MemoryInstruction:
    """One kind of global-memory instruction of a thread: how often it runs, whether a
    warp's instance coalesces and its transactions."""

    array: str
    kind: str  # "direct load", "direct store" or "caching"
    count: int
    coalesced: bool
    transactions: float
    line: int = 0


@dataclass(frozen=True)
class Characteristics:
    """A layout's statistics (Table 2 and what leads to them) and its Workload."""

    layout: Layout
    workload: Workload
    shared_mem_per_block: int
    shmem: dict[str, int]  # array -> elements cached per block and stage, all scopes
    num_stages: dict[str, int]  # staged loop -> NumStages (4)
    memory: tuple[MemoryInstruction, ...]
    func_insts: float
    peripheral: dict[str, float] = field(default_factory=dict)


class Characterizer:
    """Characterizes layouts of one parallel loop of *skeleton* on *hardware*."""

    def __init__(self, skeleton: Skeleton, kernel: ParallelFor, hardware: Hardware):
        self.skeleton, self.kernel, self.hw = skeleton, kernel, hardware
        self.rule = rule_for(hardware.compute_capability)
        self.space = loop_space(kernel)
        self.indices = tuple(kernel.indices)
        self.placed = placed_accesses(skeleton, kernel)
        self.loops = {stmt.index: stmt for stmt, _ in iter_statements(kernel.body)
                      if isinstance(stmt, Loop)}
        self.ranges = {name: loop_range(loop) for name, loop in self.loops.items()}
        self.comps = [(stmt.count, loops) for stmt, loops in iter_statements(kernel.body)
                      if isinstance(stmt, Comp)]
        self.loads: dict[str, list[PlacedAccess]] = defaultdict(list)
        for p in self.placed:
            if not p.store:
                self.loads[p.access.array].append(p)
        self._samples: dict[str, tuple[int, ...]] = {}
        self._footprint = lru_cache(maxsize=None)(self._footprint_uncached)
        self._warps: dict[tuple, tuple[bool, float]] = {}
        self._cached_memo: dict = {}
        self._direct_memo: dict = {}
        self._positions_memo: dict = {}
        self.caching_warp = lru_cache(maxsize=None)(self.caching_warp)
        self._pattern = lru_cache(maxsize=None)(
            lambda position, tile: size(pattern(self.placed[position].access, tile)))

    # -- tiles ---------------------------------------------------------------------

    def thread_tile(self, layout: Layout) -> Tile:
        """F̂: the thread's tasks as one box plus every inner loop's full range."""
        return Tile({**{d: Range(0, f) for d, f in zip(self.indices, layout.fold)},
                     **self.ranges})

    def block_tile(self, layout: Layout) -> Tile:
        """B̂: the block's tasks (block × folding along each loop) plus F̂'s inner loops."""
        return Tile({**{d: Range(0, b * f) for d, b, f in
                        zip(self.indices, layout.block, layout.fold)}, **self.ranges})

    def stage_tile(self, layout: Layout, loop: str, stage: int) -> Tile:
        """[k : first stage of *stage* iterations] of a streaming loop k (a folding loop's
        iteration covers the block's extent along its parallel loop)."""
        if loop in self.space:
            b = layout.block[self.indices.index(loop)]
            return Tile({loop: Range(0, b * stage)})
        r = self.ranges[loop]
        return Tile({loop: Range(r.lower, r.lower + min(stage, r.count) * r.stride, r.stride)})

    def trip(self, layout: Layout, loop: str) -> int:
        """Iterations of a streaming loop within one thread."""
        if loop in self.space:
            return layout.fold[self.indices.index(loop)]
        return self.ranges[loop].count

    def streams(self, layout: Layout) -> list[str]:
        """The layout's streaming loops: the folding loops (folded more than once), then
        the skeleton's streaming loops, outermost first."""
        return ([d for d, f in zip(self.indices, layout.fold) if f > 1]
                + [n for n, loop in self.loops.items() if loop.kind == "stream"])

    def _footprint_uncached(self, positions: tuple[int, ...], tile: Tile):
        return footprint([self.placed[i].access for i in positions], tile)

    def footprint(self, accesses: list[PlacedAccess], tile: Tile):
        """H(D, tile) of *accesses* (of one array), cached by accesses and tile."""
        return self._footprint(tuple(i for i, p in enumerate(self.placed)
                                     if any(p is a for a in accesses)), tile)

    # -- executions ----------------------------------------------------------------

    def executions(self, layout: Layout, loops: tuple[Loop, ...]) -> int:
        """Times a statement inside *loops* runs in one thread: F × their trip counts."""
        return math.prod(layout.fold) * math.prod(self.ranges[lp.index].count for lp in loops)

    def _in_stream(self, placed: PlacedAccess) -> bool:
        return any(lp.kind == "stream" for lp in placed.loops)

    def _reuse_tile(self, layout: Layout, placed: PlacedAccess, f_hat: Tile) -> Tile:
        """The tile within which a thread keeps what an access reads in registers: F̂,
        or one task's tile for an access inside a streaming loop (its data "can be
        discarded immediately", §5, so nothing of it survives into the next task)."""
        if not self._in_stream(placed):
            return f_hat
        return f_hat & Tile({d: Range(0, 1) for d in self.indices})

    def _repeats(self, layout: Layout, placed: PlacedAccess) -> int:
        """Tasks whose loads of a streaming access are counted apart: F, or 1."""
        return math.prod(layout.fold) if self._in_stream(placed) else 1

    # -- warps ---------------------------------------------------------------------

    def _warp_points(self, layout: Layout, origin: Mapping[str, int]) -> list[dict]:
        """Loop indices of the first warp's threads of the block at *origin*: the last
        parallel loop varies fastest (CUDA's x), inner loops at their first value."""
        threads = min(self.hw.warp_size, math.prod(layout.block))
        points = []
        for t in range(threads):
            point, rest = {}, t
            for d, b in reversed(list(zip(self.indices, layout.block))):
                point[d] = origin.get(d, 0) + rest % b
                rest //= b
            point.update({n: r.lower for n, r in self.ranges.items()})
            points.append(point)
        return points

    def _sample(self, array: str) -> tuple[int, ...]:
        if array not in self._samples:
            self._samples[array] = read_sample(self.skeleton, array)
        return self._samples[array]

    def _value(self, index, point: Mapping[str, int]) -> int | None:
        """An index at a thread's loop indices; None for an unknowable indirect one."""
        if isinstance(index, Affine):
            return index.value(point)
        array = self.skeleton.array(index.array)
        inner = [self._value(i, point) for i in index.indices]
        if any(v is None for v in inner):
            return None
        if array.sample is None:
            return None
        flat = 0
        for v, extent in zip(inner, array.dims):
            flat = flat * extent + min(max(v, 0), extent - 1)
        return self._sample(index.array)[flat] * index.scale + index.offset.value(point)

    def _varies(self, index, points: list[dict]) -> bool:
        names = set()

        def collect(ix):
            if isinstance(ix, Affine):
                names.update(n for n, _ in ix.terms)
            else:
                for i in ix.indices:
                    collect(i)
                collect(ix.offset)
        collect(index)
        return any(len({p[n] for p in points}) > 1 for n in names if n in points[0])

    def warp(self, layout: Layout, placed: PlacedAccess) -> tuple[bool, float]:
        """(coalesced, transactions) of a warp's instance of a direct access (tile W)."""
        key = (layout.block, id(placed))
        if key not in self._warps:
            self._warps[key] = self._warp(layout, placed)
        return self._warps[key]

    def _warp(self, layout: Layout, placed: PlacedAccess) -> tuple[bool, float]:
        stmt = placed.statement
        array = self.skeleton.array(stmt.array)
        sampled = any(isinstance(i, SkeletonIndirect) and
                      self._varies(i, self._warp_points(layout, {})) for i in stmt.indices)
        origins = self._origins(layout) if sampled else [{}]
        results = []
        for origin in origins:
            points = self._warp_points(layout, origin)
            # an indirect index that is one value for the whole warp: where does not matter
            fixed = [isinstance(ix, SkeletonIndirect) and not self._varies(ix, points)
                     for ix in stmt.indices]
            addresses = []
            for point in points:
                flat = 0
                for ix, extent, same in zip(stmt.indices, array.dims, fixed):
                    v = 0 if same else self._value(ix, point)
                    if v is None:  # random (§6.3): a transaction per thread
                        return False, float(len(points))
                    flat = flat * extent + v
                addresses.append(flat * array.elem_bytes)
            results.append(warp_access(addresses, array.elem_bytes, self.rule))
        return (all(r.coalesced for r in results),
                sum(r.transactions for r in results) / len(results))

    def _origins(self, layout: Layout) -> list[dict]:
        """Origins of up to _SAMPLED_WARPS warps: the block's warps, then those of the next tiles of
        block size (the last parallel loop fastest; with tasks dealt cyclically, each
        fold iteration of a block covers one such tile), for indices read from sample
        files."""
        threads = math.prod(layout.block)
        per_block = max(1, threads // self.hw.warp_size)
        grid = [max(1, n // b) for n, b in zip(self.space.values(), layout.block)]
        origins = []
        for g in range(math.prod(grid)):
            base, rest = {}, g
            for d, b, extent in reversed(list(zip(self.indices, layout.block, grid))):
                base[d] = (rest % extent) * b
                rest //= extent
            for w in range(per_block):
                origin, t = dict(base), w * self.hw.warp_size
                for d, b in reversed(list(zip(self.indices, layout.block))):
                    origin[d] += t % b
                    t //= b
                origins.append(origin)
                if len(origins) == _SAMPLED_WARPS:
                    return origins
        return origins

    def caching_warp(self, section, elem_bytes: int, dims: tuple[int, ...]) -> tuple[bool, int]:
        """(coalesced, transactions) of loading a ShMem section: adjacent threads load
        its first warp_size elements in row-major order (§7.2)."""
        addresses = []
        ranges = section.ranges
        counts = [r.count for r in ranges]
        for t in range(min(self.hw.warp_size, math.prod(counts))):
            flat, rest, coords = 0, t, []
            for c in reversed(counts):
                coords.append(rest % c)
                rest //= c
            for r, c, extent in zip(ranges, reversed(coords), dims):
                flat = flat * extent + r.lower + c * r.stride
            addresses.append(flat * elem_bytes)
        access = warp_access(addresses, elem_bytes, self.rule)
        return access.coalesced, access.transactions

    # -- the characteristics -------------------------------------------------------

    def characterize(self, layout: Layout) -> Characteristics:
        if len(layout.block) != len(self.indices) or len(layout.fold) != len(self.indices):
            raise UsageError(f"layout {layout} does not fit the {len(self.indices)}-D loop "
                             f"space {tuple(self.space.values())}")
        threads = math.prod(layout.block)
        tasks = math.prod(layout.fold)
        blocks = math.prod(math.ceil(n / (b * f)) for n, b, f in
                           zip(self.space.values(), layout.block, layout.fold))
        stages = {k: s for k, s in layout.stages if s < self.trip(layout, k)}
        streams = self.streams(layout)
        for k in stages:
            if k not in streams:
                raise UsageError(f"layout stages {k!r}, which is not a streaming loop of "
                                 f"this layout (they are: {', '.join(streams) or 'none'})")
        num_stages = {k: num_stages_of(Range(0, self.trip(layout, k)), s)  # (4)
                      for k, s in stages.items()}
        memory: list[MemoryInstruction] = []
        shmem: dict[str, int] = defaultdict(int)
        shared_bytes, scopes, reqs, elem = 0, set(), defaultdict(int), {}
        shared_reads = 0
        for array in layout.cached:
            if not self.loads.get(array):
                raise UsageError(f"layout caches {array!r}, which the kernel never loads")
            relevant = tuple(sorted((k, s) for k, s in stages.items()))
            entries, reads = self._cached(layout.block, layout.fold, relevant, array)
            shared_reads += reads
            for scope, n, elem_bytes, instruction in entries:
                elem[array] = elem_bytes
                shmem[array] += n
                shared_bytes += elem_bytes * n  # (5)-(7)
                reqs[array] += n  # (9), cached part
                scopes.add(scope)
                if instruction is not None:
                    memory.append(instruction)
        for position in self._direct_positions(layout.cached):
            instruction, elem_bytes, req = self._direct(layout.block, layout.fold, position)
            memory.append(instruction)
            elem[instruction.array] = elem_bytes
            reqs[instruction.array] += req  # (9), uncached part

        coal = instructions.coal_mem_insts(
            (m.count for m in memory if m.coalesced and m.kind != "caching"),
            (m.count for m in memory if m.coalesced and m.kind == "caching"))
        uncoal = instructions.uncoal_mem_insts(
            (m.count for m in memory if not m.coalesced and m.kind != "caching"),
            (m.count for m in memory if not m.coalesced and m.kind == "caching"))
        per_mw = instructions.uncoal_per_mw(
            (m.count * m.transactions for m in memory if not m.coalesced), uncoal)
        load_bytes = instructions.load_bytes_per_warp(
            instructions.avg_elem_bytes(elem, reqs) or 4.0, self.hw.warp_size)

        func = instructions.func_insts(tasks, (
            (count, math.prod(self.ranges[lp.index].count for lp in loops))
            for count, loops in self.comps))
        caching = sum(m.count for m in memory if m.kind == "caching")
        peripheral = {
            "loop management": self._loop_insts(layout, stages),
            "data preparation": compiler.PER_SHARED_LOAD * caching,
            "index calculation": compiler.PER_UNCOALESCED_INDEX * uncoal,
            "bounds checks": (compiler.PER_BRANCH * tasks if any(
                n % (b * f) for n, b, f in zip(self.space.values(), layout.block,
                                               layout.fold)) else 0),
            "shared-memory reads": shared_reads,
        }
        synch = instructions.synch_insts(
            math.prod(num_stages[k] for k in scope) for scope in scopes)
        workload = Workload(
            threads_per_block=threads, blocks=blocks,
            comp_insts=func + sum(peripheral.values()), coal_mem_insts=coal,
            uncoal_mem_insts=uncoal, uncoal_per_mw=per_mw, synch_insts=synch,
            load_bytes_per_warp=load_bytes,
            shared_mem_per_block=instructions.shared_mem_bytes_per_block([shared_bytes]))
        return Characteristics(layout, workload, shared_bytes, dict(shmem), num_stages,
                               tuple(memory), func, peripheral)

    def _cached(self, block, fold, stages, array):
        """ShMem(D, scope) of a cached array D, one per group of its loads under the same
        staged loops: [(scope, elements, element bytes, caching instruction)], and the
        shared-memory reads of its loads. Memoized by block, folding and stages."""
        key = (block, fold, stages, array)
        if key in self._cached_memo:
            return self._cached_memo[key]
        layout = Layout(block, fold, stages)
        staged = dict(stages)
        streams = self.streams(layout)
        b_hat = self.block_tile(layout)
        threads = math.prod(block)
        groups, reads = defaultdict(list), 0
        for p in self.loads[array]:
            around = {lp.index for lp in p.loops} | set(self.space)
            groups[tuple(k for k in streams if k in staged and k in around)].append(p)
            reads += self.executions(layout, p.loops)
        entries = []
        for scope, group in groups.items():
            tile = b_hat
            for k in scope:
                tile = tile & self.stage_tile(layout, k, staged[k])
            fp = self.footprint(group, tile)
            n = size(fp)
            count = math.prod(num_stages_of(Range(0, self.trip(layout, k)), staged[k])
                              for k in scope)  # (4)
            instruction = None
            if n:
                coalesced, trans = self.caching_warp(fp.sections[0], group[0].access.elem_bytes,
                                                     group[0].access.dims)
                # (12), with ⌈ ⌉: see the module docstring
                instruction = MemoryInstruction(array, "caching", -(-n // threads) * count,
                                                coalesced, trans)
            entries.append((scope, n, group[0].access.elem_bytes, instruction))
        self._cached_memo[key] = (entries, reads)
        return entries, reads

    def _direct_positions(self, cached: tuple[str, ...]) -> list[int]:
        """The accesses that read or write global memory directly, a statement repeated
        with the same indices once (§6.4)."""
        if cached not in self._positions_memo:
            seen, positions = set(), []
            for position, p in enumerate(self.placed):
                key = (p.store, p.statement.array, p.statement.indices)
                if (not p.store and p.access.array in cached) or key in seen:
                    continue
                seen.add(key)
                positions.append(position)
            self._positions_memo[cached] = positions
        return self._positions_memo[cached]

    def _direct(self, block, fold, position):
        """(13) for one direct access: its instruction, element bytes and the elements the
        block touches (9). Memoized by block and folding."""
        key = (block, fold, position)
        if key not in self._direct_memo:
            layout = Layout(block, fold)
            p = self.placed[position]
            repeats = self._repeats(layout, p)
            count = repeats * min(
                self._pattern(position, self._reuse_tile(layout, p, self.thread_tile(layout))),
                self.executions(layout, p.loops) // repeats)
            coalesced, trans = self.warp(layout, p)
            self._direct_memo[key] = (
                MemoryInstruction(p.access.array, "direct store" if p.store else "direct load",
                                  count, coalesced, trans, p.line),
                p.access.elem_bytes, self._pattern(position, self.block_tile(layout)))
        return self._direct_memo[key]

    def _loop_insts(self, layout: Layout, stages: Mapping[str, int]) -> float:
        """Loop management (§7.3, Table 3): per iteration of every loop, except unrolled
        ones, which pay per group of 16 iterations (nothing when they fit one group)."""
        def cost(trip: int, entries: float, static: bool) -> float:
            if layout.unroll and static:
                trip = 0 if trip <= compiler.UNROLL_GROUP else math.ceil(
                    trip / compiler.UNROLL_GROUP)
            return compiler.PER_LOOP_ITERATION * entries * trip

        def loop(trip: int, entries: float, static: bool, stage: int | None) -> float:
            if stage is None:
                return cost(trip, entries, static)
            outer = math.ceil(trip / stage)
            return cost(outer, entries, static) + cost(stage, entries * outer, True)

        total, entries = 0.0, 1
        for d, f in zip(self.indices, layout.fold):  # folding loops, outermost first
            if f > 1:
                total += loop(f, entries, True, stages.get(d))
                entries *= f
        for stmt, around in iter_statements(self.kernel.body):
            if isinstance(stmt, Loop):
                times = entries * math.prod(self.ranges[lp.index].count for lp in around)
                static = stmt.bound_kind in ("constant", "macro")
                total += loop(self.ranges[stmt.index].count, times, static,
                              stages.get(stmt.index))
        return total
