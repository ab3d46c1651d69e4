"""How many groups of a kernel an SM holds at once, by CUDA's occupancy rules.

The rules are those of NVIDIA's occupancy calculator as the CUDA toolkit ships it
(``cuda_occupancy.h``, CUDA 13.0: ``cudaOccMaxActiveBlocksPerMultiprocessor``), which
``cudaOccupancyMaxActiveBlocksPerMultiprocessor`` and Nsight Compute's ``launch__occupancy_*``
report: a resource's limit is the number of groups per SM it allows.

- registers: a warp holds ``registers × warp size`` rounded up to the allocation unit
  (256 on sm_5x to sm_12x); each of the SM's four sub-partitions holds
  ``floor(registers per SM / 4 / per-warp)`` warps; the limit is those warps over the
  group's warps. A group whose registers exceed the per-block limit (the hardware check
  rounds its warps up to a multiple of the sub-partitions) does not launch (limit 0).
- shared memory: the group's static (and dynamic) bytes plus the bytes the driver reserves
  per block (1 KB from sm_80 on), rounded up to the allocation unit (128 B from sm_80 on),
  divided into the SM's shared memory (the configured carveout: by default the whole
  ``sharedMemPerMultiprocessor``, as the calculator assumes without a carveout preference).
- warps: the SM's warps over the group's warps; blocks: the SM's block limit.

Device attributes come from a recorded device file: CUDA's properties
(data/<gpu>/cuda-device.json) or a packaged hardware description
(src/kernelcast/hardware/<gpu>.json). The granularities no device file records are in
``ARCHITECTURES``, one row per compute capability, from ``cuda_occupancy.h``; a compute
capability missing there takes the nearest earlier row with a HardwareGuessWarning.

Nsight Compute's ``launch__occupancy_limit_shared_mem`` divides into the carveout the
driver chose for the launch (``launch__shared_mem_config_size``), not into the whole SM;
pass it as ``carveout_bytes`` to reproduce that counter.

Public names: occupancy, Occupancy, DeviceLimits, device_limits, ARCHITECTURES.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kernelcast.errors import HardwareGuessWarning, UsageError

# Architecture constants by compute capability (major, minor), from NVIDIA's occupancy
# calculator as shipped in the CUDA 13.0 toolkit (cuda_occupancy.h: cudaOccRegAllocationGranularity,
# cudaOccRegAllocationMaxPerThread, cudaOccSubPartitionsPerMultiprocessor,
# cudaOccSMemAllocationGranularity, cudaOccMaxBlocksPerMultiprocessor), the driver's
# reserved shared memory per block from the CUDA C++ Programming Guide ("Compute
# Capabilities": 1 KB of shared memory is reserved for system use per thread block on
# 8.x and 9.0) and Nsight Compute's launch__shared_mem_per_block_driver on the H100 (1024),
# and the registers per block from the Programming Guide's table (64 K).
ARCHITECTURES_SOURCE = ("cuda_occupancy.h (CUDA 13.0) and the CUDA C++ Programming Guide, "
                        "Compute Capabilities table")
ARCHITECTURES: dict[tuple[int, int], dict[str, int]] = {
    cc: {"register_unit": 256, "max_registers_per_thread": 255, "sub_partitions": 4,
         "shared_unit": unit, "reserved_shared_per_block": reserved,
         "registers_per_block": 65536, "max_blocks_per_sm": blocks}
    for cc, unit, reserved, blocks in (((7, 0), 256, 0, 32), ((7, 5), 256, 0, 16),
                                       ((8, 0), 128, 1024, 32), ((8, 6), 128, 1024, 16),
                                       ((8, 9), 128, 1024, 24), ((9, 0), 128, 1024, 32))
}


@dataclass(frozen=True)
class DeviceLimits:
    """What the occupancy rules need of a device (one SM's resources)."""

    name: str
    compute_capability: tuple[int, int]
    sms: int
    warp_size: int
    registers_per_sm: int
    shared_per_sm: int
    max_warps_per_sm: int
    max_blocks_per_sm: int


@dataclass(frozen=True)
class Occupancy:
    """Groups per SM each resource allows (Nsight Compute's ``launch__occupancy_limit_*``),
    the groups resident per SM, the theoretical occupancy in percent
    (``sm__maximum_warps_per_active_cycle_pct``) and, with a group count, the waves
    (``launch__waves_per_multiprocessor``)."""

    limit_registers: int
    limit_shared_mem: int
    limit_warps: int
    limit_blocks: int
    groups_per_sm: int
    warps_per_sm: int
    occupancy_pct: float
    registers_allocated_per_warp: int
    shared_allocated_per_group: int
    waves: float | None

    @property
    def limiting(self) -> tuple[str, ...]:
        """The resources whose limit is the resident group count."""
        limits = {"registers": self.limit_registers, "shared_mem": self.limit_shared_mem,
                  "warps": self.limit_warps, "blocks": self.limit_blocks}
        return tuple(k for k, v in limits.items() if v == self.groups_per_sm)

    def counters(self) -> dict[str, float]:
        """The Nsight Compute counters this predicts, by their names."""
        out = {"launch__occupancy_limit_registers": self.limit_registers,
               "launch__occupancy_limit_shared_mem": self.limit_shared_mem,
               "launch__occupancy_limit_warps": self.limit_warps,
               "launch__occupancy_limit_blocks": self.limit_blocks,
               "sm__maximum_warps_per_active_cycle_pct": self.occupancy_pct}
        if self.waves is not None:
            out["launch__waves_per_multiprocessor"] = self.waves
        return out


_CUDA_KEYS = {"regsPerMultiprocessor", "sharedMemPerMultiprocessor",
              "maxThreadsPerMultiProcessor", "maxBlocksPerMultiProcessor"}
_HARDWARE_KEYS = {"registers_per_sm", "shared_mem_per_sm", "max_active_warps_per_sm",
                  "max_active_blocks_per_sm"}


def device_limits(device) -> DeviceLimits:
    """The DeviceLimits of *device*: a DeviceLimits, a mapping or a path to a JSON file in
    CUDA's property names (data/<gpu>/cuda-device.json) or kernelcast's hardware names
    (src/kernelcast/hardware/<gpu>.json)."""
    if isinstance(device, DeviceLimits):
        return device
    source = "device"
    if isinstance(device, str | os.PathLike):
        source = os.fspath(device)
        try:
            device = json.loads(Path(device).read_text())
        except (OSError, ValueError) as err:
            raise UsageError(f"cannot read device attributes from {source}: {err}") from None
    if not isinstance(device, Mapping):
        raise UsageError(f"device attributes must be a mapping or a JSON file, "
                         f"not {type(device).__name__}")
    try:
        if _CUDA_KEYS <= device.keys():
            warp = int(device.get("warpSize", 32))
            return DeviceLimits(
                str(device.get("name", source)), (int(device["major"]), int(device["minor"])),
                int(device["multiProcessorCount"]), warp, int(device["regsPerMultiprocessor"]),
                int(device["sharedMemPerMultiprocessor"]),
                int(device["maxThreadsPerMultiProcessor"]) // warp,
                int(device["maxBlocksPerMultiProcessor"]))
        if _HARDWARE_KEYS <= device.keys():
            major, minor = (int(p) for p in str(device["compute_capability"]).split("."))
            return DeviceLimits(
                str(device.get("name", source)), (major, minor), int(device["active_sms"]),
                int(device.get("warp_size", 32)), int(device["registers_per_sm"]),
                int(device["shared_mem_per_sm"]), int(device["max_active_warps_per_sm"]),
                int(device["max_active_blocks_per_sm"]))
    except (KeyError, ValueError, TypeError) as err:
        raise UsageError(f"{source}: incomplete device attributes ({err})") from None
    raise UsageError(f"{source}: no occupancy attributes (need {sorted(_CUDA_KEYS)} or "
                     f"{sorted(_HARDWARE_KEYS)})")


def architecture(compute_capability: tuple[int, int]) -> dict[str, int]:
    """The ARCHITECTURES row of *compute_capability*; an unknown one takes the nearest
    earlier row (or the first) with a HardwareGuessWarning."""
    cc = tuple(compute_capability)
    if cc in ARCHITECTURES:
        return ARCHITECTURES[cc]
    earlier = [k for k in ARCHITECTURES if k <= cc]
    guess = max(earlier) if earlier else min(ARCHITECTURES)
    warnings.warn(f"compute capability {cc[0]}.{cc[1]} is not in the occupancy table; "
                  f"using {guess[0]}.{guess[1]}'s allocation granularities",
                  HardwareGuessWarning, stacklevel=3)
    return ARCHITECTURES[guess]


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def occupancy(registers_per_thread: int, shared_bytes_per_group: int,
              threads_per_group: int, device, *, groups: int | None = None,
              carveout_bytes: int | None = None) -> Occupancy:
    """The occupancy of a kernel using *registers_per_thread* and *shared_bytes_per_group*
    (static plus dynamic; the driver's reserved bytes are added here) in groups of
    *threads_per_group* on *device* (see ``device_limits``). *groups*, the launch's group
    count, gives the waves; *carveout_bytes* is the SM's configured shared memory
    (default: all of it)."""
    for name, value in (("registers_per_thread", registers_per_thread),
                        ("shared_bytes_per_group", shared_bytes_per_group),
                        ("threads_per_group", threads_per_group)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise UsageError(f"{name} must be a non-negative integer, got {value!r}")
    if threads_per_group == 0:
        raise UsageError("threads_per_group must be positive")
    dev = device_limits(device)
    arch = architecture(dev.compute_capability)
    warps = -(-threads_per_group // dev.warp_size)

    per_warp = _round_up(registers_per_thread * dev.warp_size, arch["register_unit"])
    subs = arch["sub_partitions"]
    if (registers_per_thread > arch["max_registers_per_thread"]
            or per_warp * _round_up(warps, subs) > arch["registers_per_block"]):
        limit_registers = 0
    elif per_warp == 0:
        limit_registers = arch["max_blocks_per_sm"]
    else:
        limit_registers = (dev.registers_per_sm // subs // per_warp) * subs // warps

    shared = _round_up(shared_bytes_per_group + arch["reserved_shared_per_block"],
                       arch["shared_unit"])
    sm_shared = dev.shared_per_sm if carveout_bytes is None else int(carveout_bytes)
    limit_shared = sm_shared // shared if shared else arch["max_blocks_per_sm"]

    limit_warps = dev.max_warps_per_sm // warps
    limit_blocks = min(dev.max_blocks_per_sm, arch["max_blocks_per_sm"])
    resident = min(limit_registers, limit_shared, limit_warps, limit_blocks)
    resident_warps = resident * warps
    waves = None
    if groups is not None:
        waves = math.inf if resident == 0 else groups / (dev.sms * resident)
    return Occupancy(limit_registers, limit_shared, limit_warps, limit_blocks, resident,
                     resident_warps, 100.0 * resident_warps / dev.max_warps_per_sm,
                     per_warp, shared, waves)
