"""GROPHECY's counts of one thread's instructions for a code layout (§7.1–7.3, equations
(7) and (9)–(17)), from sizes the data-usage algebra gives (kernelcast.models.grophecy
.sections and .usage). Equation (8), the active blocks per SM, is the Hong–Kim model's
own (kernelcast.models.hong_kim.equations.active_blocks_per_sm); these counts become its
Workload.

Every function is one equation, with the paper's formula in a comment.

Public names: shared_mem_bytes_per_block, data_reqs, avg_elem_bytes,
load_bytes_per_warp, caching_mem_insts, direct_mem_insts, coal_mem_insts,
uncoal_mem_insts, uncoal_per_mw, func_insts, synch_insts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence


def shared_mem_bytes_per_block(shmem_alloc: Iterable[int]) -> int:
    """(7) SharedMem_bytes_per_block = Σ_i ShMemAlloc(D_i)."""
    return sum(shmem_alloc)


def data_reqs(shmem_sizes: Iterable[int], uncached_pattern_sizes: Iterable[int]) -> int:
    """(9) data_reqs(D_i) = Σ_k size(ShMem(D_i, k)) + Σ_j size(P(Â_j(D_i), B̂)): the
    elements of D_i a block brings in, cached and uncached."""
    return sum(shmem_sizes) + sum(uncached_pattern_sizes)


def avg_elem_bytes(elem_bytes: Mapping[str, int], reqs: Mapping[str, int]) -> float:
    """(10) Avg_elem_bytes = Σ_i ElemBytes(D_i) × data_reqs(D_i) / Σ_i data_reqs(D_i),
    by array name."""
    total = sum(reqs.values())
    if total == 0:
        return 0.0
    return sum(elem_bytes[d] * n for d, n in reqs.items()) / total


def load_bytes_per_warp(avg_bytes: float, warp_size: int) -> float:
    """(11) Load_bytes_per_warp = Avg_elem_bytes × warp_size."""
    return avg_bytes * warp_size


def caching_mem_insts(shmem_sizes: Sequence[int], num_stages: Sequence[int],
                      threads_per_block: int) -> int:
    """(12) caching_mem_insts(D) = Σ_k ⌊size(ShMem(D, k)) / Thread_per_block⌋ ×
    NumStages(k): per thread, the loads that fill D's shared-memory copies, stage by
    stage (k = 0: outside any streaming loop, one stage)."""
    return sum(size // threads_per_block * stages
               for size, stages in zip(shmem_sizes, num_stages, strict=True))


def direct_mem_insts(pattern_size_over_thread: int) -> int:
    """(13) direct_mem_insts(Â_j(D)) = size(P(Â_j(D), F̂)): one instruction per element a
    thread's own tile touches through an uncached access."""
    return pattern_size_over_thread


def coal_mem_insts(direct_coalesced: Iterable[int], caching_coalesced: Iterable[int]) -> int:
    """(14) Coal_Mem_insts = Σ_j direct_mem_insts(Ȧ_j†) + Σ_i caching_mem_insts†(D_i)."""
    return sum(direct_coalesced) + sum(caching_coalesced)


def uncoal_mem_insts(direct_uncoalesced: Iterable[int],
                     caching_uncoalesced: Iterable[int]) -> int:
    """(15) Uncoal_Mem_insts = Σ_j direct_mem_insts(Ȧ_j′) + Σ_i caching_mem_insts′(D_i)."""
    return sum(direct_uncoalesced) + sum(caching_uncoalesced)


def uncoal_per_mw(transactions: Iterable[float], uncoalesced_insts: float) -> float:
    """(16) Uncoal_per_mw = (Σ_j Mem_trans(Ȧ_j′) + Σ_{i,k} Mem_trans(ShMem′(D_i, k))) /
    Uncoal_Mem_insts: memory transactions per uncoalesced instruction. The transactions
    are those of each uncoalesced instruction kind weighted by how often it runs; with no
    uncoalesced instruction the value does not matter and is 1 (Hong–Kim's least)."""
    if uncoalesced_insts == 0:
        return 1.0
    return max(sum(transactions) / uncoalesced_insts, 1.0)


def func_insts(tasks_per_thread: int, blocks: Iterable[tuple[float, float]]) -> float:
    """(17) Func_insts = F × Σ_{i=1}^{N} (Ins_i × LP_i): *blocks* are the skeleton's basic
    blocks as (instructions, times it loops within a task)."""
    return tasks_per_thread * sum(ins * loops for ins, loops in blocks)


def synch_insts(num_stages: Iterable[int]) -> int:
    """§7.3: two synchronizations per stage of every staged streaming loop (one after
    filling shared memory, one before the next stage overwrites it)."""
    return 2 * sum(num_stages)
