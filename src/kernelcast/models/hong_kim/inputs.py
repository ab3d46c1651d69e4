"""The Hong–Kim model's workload, gathered from a Loopy kernel instead of by hand.

Hong & Kim count PTX instructions per thread; the slides (shared/seeds/001, "What went
wrong with kernels 3 and 4?") found that what counts as a computation or memory
instruction is the hard part. kernelcast takes them from the symbolic properties
(kernelcast.properties), per work-item at the given sizes:

- memory instructions: global loads and stores; *coalesced* those of stride 0 or 1 along
  local axis 0 (one request per warp), *uncoalesced* all others. Exact counts.
- ``uncoal_per_mw``: 32-byte transactions per uncoalesced warp instruction, from the
  stride class: stride s (2 or 3) spreads a warp's 32 elements over 32·s·bytes/32
  sectors; ``4ofmore`` and irregular accesses count 32 (one sector per thread).
  Approximate: HK counts transactions of its GPU's segment sizes.
- computation instructions: one per floating-point operation, division, power and
  special function, plus one per local-memory load and store (GROPHECY §7.2 treats
  shared-memory accesses as computation). Approximate: the compiler fuses a multiply
  and an add into one instruction, expands divisions and special functions into several,
  and adds address, loop and branch instructions (GROPHECY's "peripheral" ones) that
  kernelcast does not count.
- synchronization instructions: barriers. Exact.
- threads per block and blocks: the launch. Exact.
- ``load_bytes_per_warp``: 32 × the mean bytes of a global access (GROPHECY Eq. 10–11).
- shared memory per block: the local temporaries' bytes. Exact.
- registers per thread: only where the device's compiler reported them (the CUDA
  backend does; ``benchmarks/hong_kim_hardware.py query`` records them per suite
  kernel in data/<gpu>/registers.json).

Public names: workload, local_temporaries, shared_memory_bytes.
"""

from __future__ import annotations

import loopy as lp
import numpy as np
from pymbolic import evaluate

from kernelcast.errors import KernelcastError
from kernelcast.kernel import prepare_kernel
from kernelcast.models.hong_kim import Workload
from kernelcast.properties.vocabulary import OP_KINDS

WARP = 32
SECTOR = 32  # bytes of one memory transaction


def local_temporaries(knl) -> list[tuple[tuple, int]]:
    """(shape, bytes per element) of each local-memory temporary of *knl* (a kernel or
    translation unit), after Loopy has decided where the temporaries of prefetches
    live."""
    knl = prepare_kernel(knl).kernel
    return [(temp.shape, np.dtype(temp.dtype.numpy_dtype).itemsize)
            for temp in knl.temporary_variables.values()
            if temp.address_space == lp.AddressSpace.LOCAL]


def shared_memory_bytes(knl_or_temporaries, params: dict) -> int:
    """Bytes of local memory a work-group of the kernel allocates at *params*; takes the
    kernel or its ``local_temporaries``."""
    temporaries = (knl_or_temporaries if isinstance(knl_or_temporaries, list)
                   else local_temporaries(knl_or_temporaries))
    return sum(int(np.prod([evaluate(n, params) for n in shape])) * itemsize
               for shape, itemsize in temporaries)


def _sectors(name: str) -> float:
    """Transactions a warp's access of global-access property *name* takes."""
    bits, cls = int(name.split("_")[2]), name.split("_")[3]
    if cls in ("4ofmore", "irregular"):
        return WARP
    stride = int(cls.split("of")[1])
    return min(WARP, WARP * stride * bits / 8 / SECTOR)


def workload(props, params: dict, shared_mem_per_block: int = 0,
             registers_per_thread: int | None = None) -> Workload:
    """The Workload of the kernel whose Properties are *props*, at *params*."""
    values = props.evaluate(params)
    extent = props.extent(params)
    if not extent:
        raise KernelcastError(f"the properties of {props.kernel_name!r} lack the launch "
                              "extent the Hong–Kim model needs; extract them again")
    items = extent["work_items"]
    blocks = values.get("workgroup", 1.0)
    coal = uncoal = sectors = comp = accesses = access_bytes = 0.0
    for name, count in values.items():
        if not count:
            continue
        parts = name.split("_")
        if parts[0] in ("load", "store") and parts[1] == "global":
            accesses += count
            access_bytes += count * int(parts[2]) / 8
            if parts[3] in ("s0", "s1"):
                coal += count
            else:
                uncoal += count
                sectors += count * _sectors(name)
        elif parts[0] in ("load", "store") and parts[1] == "local":
            comp += count
        elif parts[0] in OP_KINDS:
            comp += count
    return Workload(
        threads_per_block=round(items / blocks), blocks=round(blocks),
        comp_insts=comp / items, coal_mem_insts=coal / items, uncoal_mem_insts=uncoal / items,
        uncoal_per_mw=sectors / uncoal if uncoal else 1.0,
        synch_insts=values.get("barrier", 0.0) / items,
        load_bytes_per_warp=WARP * access_bytes / accesses if accesses else 4.0 * WARP,
        shared_mem_per_block=shared_mem_per_block,
        registers_per_thread=registers_per_thread)
