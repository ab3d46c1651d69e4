"""The Hong–Kim model's workload, gathered from a Loopy kernel instead of by hand.

Hong & Kim count PTX instructions per thread; the slides (shared/seeds/001, "What went
wrong with kernels 3 and 4?") found that what counts as a computation or memory
instruction is the hard part. kernelcast takes them from the symbolic properties
(kernelcast.properties), per work-item at the given sizes:

- memory instructions: global loads and stores; *coalesced* those of stride 0 or 1 along
  local axis 0 (one request per warp), *uncoalesced* all others. Exact counts.
- ``uncoal_per_mw``: transactions (of the hardware's sector bytes) per uncoalesced warp
  instruction, from the stride class: stride s (2 or 3) spreads a warp's elements over
  warp·s·bytes/sector sectors; strides above 4 (``kofmore``) and irregular accesses take
  one sector per thread. Approximate: HK counts transactions of its GPU's segment sizes.
- computation instructions: one per floating-point operation, division, power and
  special function, plus one per local-memory load and store (GROPHECY §7.2 treats
  shared-memory accesses as computation). Approximate: the compiler fuses a multiply
  and an add into one instruction, expands divisions and special functions into several,
  and adds address, loop and branch instructions (GROPHECY's "peripheral" ones) that
  kernelcast does not count.
- synchronization instructions: barriers. Exact.
- threads per block and blocks: the launch. Exact.
- ``load_bytes_per_warp``: the warp size × the mean bytes of a global access (GROPHECY
  Eq. 10–11).
- shared memory per block: the local temporaries' bytes (Properties.local_memory). Exact.
- registers per thread: only where the device's compiler reported them (the CUDA
  backend does; ``benchmarks/hong_kim_hardware.py query`` records them per suite
  kernel in data/<gpu>/registers.json).

Warp size and sector bytes come from the Hardware (kernelcast.hardware).

Public names: workload.
"""

from __future__ import annotations

from kernelcast.errors import KernelcastError, ParameterError
from kernelcast.models.hong_kim.equations import Workload
from kernelcast.hardware import Hardware
from kernelcast.properties.vocabulary import OP_KINDS


def _sectors(name: str, hw: Hardware) -> float:
    """Transactions a warp's access of global-access property *name* takes on *hw*."""
    bits, cls = int(name.split("_")[2]), name.split("_")[3]
    if cls == "irregular" or cls.endswith("ofmore"):
        return hw.warp_size
    stride = int(cls.split("of")[1])
    return min(hw.warp_size, hw.warp_size * stride * bits / 8 / hw.sector_bytes)


def workload(props, params: dict, hw: Hardware,
             registers_per_thread: int | None = None) -> Workload:
    """The Workload on *hw* of the kernel whose Properties are *props*, at *params*."""
    values = props.evaluate(params)
    extent = props.extent(params)
    if not extent:
        raise KernelcastError(f"the properties of {props.kernel_name!r} lack the launch "
                              "extent the Hong–Kim model needs; extract them again")
    items = extent["work_items"]
    if items < 1:
        at = ", ".join(f"{k}={v}" for k, v in params.items())
        raise ParameterError(f"{props.kernel_name}: at {at} the launch has no work-items; "
                             "the Hong–Kim model needs at least one")
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
                sectors += count * _sectors(name, hw)
        elif parts[0] in ("load", "store") and parts[1] == "local" or parts[0] in OP_KINDS:
            comp += count
    return Workload(
        threads_per_block=round(items / blocks), blocks=round(blocks),
        comp_insts=comp / items, coal_mem_insts=coal / items, uncoal_mem_insts=uncoal / items,
        uncoal_per_mw=sectors / uncoal if uncoal else 1.0,
        synch_insts=values.get("barrier", 0.0) / items,
        load_bytes_per_warp=(hw.warp_size * access_bytes / accesses if accesses
                             else 4.0 * hw.warp_size),
        shared_mem_per_block=props.local_memory_bytes(params),
        registers_per_thread=registers_per_thread)
