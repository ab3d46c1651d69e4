"""Hardware descriptions of GPUs, read from data files: what the Hong–Kim model, GROPHECY
and the predicted hardware facts (kernelcast.facts) know of a device.

Each GPU is a JSON file in this package's folder (or any path): the parameters of
GROPHECY's Table 5 (shared/seeds/004) under the names of
kernelcast.models.hong_kim.equations, and the caches and limits the facts need, each with
where its value comes from. The FX5600 and C1060
files copy Table 5, with the GTX280 latencies it borrows for the C1060; the H100 and
H200 files are written by ``benchmarks/hong_kim_hardware.py`` from kernelcast's own
microbenchmarks (pointer chasing for DRAM latency, bandwidth-saturating loads for the
departure delays) and from the device's reported limits. A value that nothing measured
or reported is listed under ``guessed`` and raises a HardwareGuessWarning when loaded.

Whatever is wrong with a file (missing, a directory, unreadable, not JSON, a parameter
missing, unknown, of the wrong type or outside what a GPU could have: ``BOUNDS``) is a
ProfileError naming the file and the problem; so is a registers file
(``load_registers``) that is not one. A profile's hardware goes through the same checks
(``hardware_from_dict``).

Public names: Hardware, HardwareGuessWarning, HARDWARE_DIR, BOUNDS, load_hardware,
known_hardware, hardware_for_device, check_hardware, hardware_from_dict, load_registers.
"""

from __future__ import annotations

import importlib.resources
import json
import math
import os
import warnings
from dataclasses import dataclass, fields
from pathlib import Path

from kernelcast.errors import (
    HardwareGuessWarning,
    KernelcastError,
    ProfileError,
    UsageError,
)
from kernelcast.frontends.files import read_json_file

#: the packaged descriptions, <gpu>.json, read through importlib.resources so they are found
#: wherever the package is imported from (a checkout, an installed wheel, an archive)
HARDWARE_DIR = importlib.resources.files(__name__)


@dataclass(frozen=True)
class Hardware:
    """One GPU as the Hong–Kim model sees it (GROPHECY Table 5)."""

    name: str
    warp_size: int
    active_sms: int  # Active_SMs: streaming multiprocessors
    freq_hz: float  # Freq: SM clock
    issue_cycles: float  # Issue_cycles: SM cycles to issue one warp instruction
    mem_bandwidth: float  # Mem_Bandwidth, bytes per second
    mem_ld: float  # Mem_LD: DRAM access latency, cycles
    departure_del_coal: float  # cycles between two coalesced memory transactions
    departure_del_uncoal: float  # cycles between two uncoalesced memory transactions
    max_active_warps_per_sm: int
    max_active_blocks_per_sm: int
    shared_mem_per_sm: int  # bytes
    sector_bytes: int  # bytes of the smallest global-memory transaction
    registers_per_sm: int | None = None
    compute_capability: str | None = None  # "major.minor": which coalescing rules apply
    max_threads_per_block: int | None = None  # GROPHECY's largest thread block (§6.2)
    shared_mem_per_block: int | None = None  # bytes one block may allocate (§6.6)
    # bytes of shared arrays a kernel may declare for a block without opting in (the
    # `__shared__` arrays Loopy's CUDA and OpenCL's `__local` arrays are)
    static_shared_mem_per_block: int | None = None
    l2_cache_bytes: int | None = None  # the L2 cache of the whole GPU
    l1_cache_bytes_per_sm: int | None = None  # L1 data cache and shared memory together
    dram_peak_bandwidth: float | None = None  # bytes per second DRAM can move at most
    issue_per_sm_cycle: float | None = None  # warp instructions an SM issues per cycle
    # cycles of one dependent 8-byte load that hits L1, hits L2, reaches DRAM (measured
    # by pointer chasing, kernelcast.suites.criteria_microbenchmarks)
    l1_latency_cycles: float | None = None
    l2_latency_cycles: float | None = None
    dram_latency_cycles: float | None = None
    sources: dict | None = None  # parameter -> where its value comes from
    guessed: tuple[str, ...] = ()


def known_hardware() -> list[str]:
    return sorted(p.name.removesuffix(".json") for p in HARDWARE_DIR.iterdir()
                  if p.name.endswith(".json"))


_OPTIONAL = ("registers_per_sm", "compute_capability", "max_threads_per_block",
             "shared_mem_per_block", "static_shared_mem_per_block", "l2_cache_bytes",
             "l1_cache_bytes_per_sm", "dram_peak_bandwidth", "issue_per_sm_cycle",
             "l1_latency_cycles", "l2_latency_cycles", "dram_latency_cycles", "sources",
             "guessed")
_INTEGERS = ("warp_size", "active_sms", "max_active_warps_per_sm", "max_active_blocks_per_sm",
             "shared_mem_per_sm", "sector_bytes", "registers_per_sm", "max_threads_per_block",
             "shared_mem_per_block", "static_shared_mem_per_block", "l2_cache_bytes",
             "l1_cache_bytes_per_sm")
_NUMBERS = ("freq_hz", "issue_cycles", "mem_bandwidth", "mem_ld", "departure_del_coal",
            "departure_del_uncoal", "dram_peak_bandwidth", "issue_per_sm_cycle",
            "l1_latency_cycles", "l2_latency_cycles", "dram_latency_cycles")

#: (least, most, unit) of each parameter: what any GPU could have, with room to spare.
#: Within them the Hong–Kim equations give a finite, positive time for any launch.
BOUNDS = {
    # SIMD lanes issued together: 32 on NVIDIA, 64 on AMD; never more than a block's 1024
    "warp_size": (1, 1024, "threads"),
    # multiprocessors: 132 on an H100, 304 on an MI300X
    "active_sms": (1, 10_000, "SMs"),
    # a clock between 1 MHz and 100 GHz (GPUs run at 0.5 to 3 GHz)
    "freq_hz": (1e6, 1e11, "Hz"),
    # an SM issues at most one warp instruction per scheduler and cycle; SMs have had 1 to
    # 4 schedulers (an H100: 0.25 at best, 0.364 measured), so 0.01 leaves room for 100
    "issue_cycles": (0.01, 1e6, "cycles"),
    # between 1 MB/s and 1 PB/s (an H100's HBM3 moves 3.35 TB/s)
    "mem_bandwidth": (1e6, 1e15, "bytes/s"),
    "dram_peak_bandwidth": (1e6, 1e15, "bytes/s"),
    # 4 warp schedulers per SM on NVIDIA GPUs since Maxwell; 64 leaves room for 16
    "issue_per_sm_cycle": (0.01, 64, "warp instructions"),
    # a DRAM access takes at least a cycle; a million cycles is a millisecond at 1 GHz
    "mem_ld": (1, 1e6, "cycles"),
    "l1_latency_cycles": (1, 1e6, "cycles"),
    "l2_latency_cycles": (1, 1e6, "cycles"),
    "dram_latency_cycles": (1, 1e6, "cycles"),
    # cycles between two memory transactions of an SM (an H100: 1.2 and 13.9); an SM
    # sends at most a few a cycle, so 0.01 leaves room for 100
    "departure_del_coal": (0.01, 1e6, "cycles"),
    "departure_del_uncoal": (0.01, 1e6, "cycles"),
    # 64 warps and 32 blocks per SM on an H100; 1024 is 16 times as many
    "max_active_warps_per_sm": (1, 1024, "warps"),
    "max_active_blocks_per_sm": (1, 1024, "blocks"),
    # on-chip memory: 228 KiB on an H100; a GiB is far beyond any SM
    "shared_mem_per_sm": (1, 2**30, "bytes"),
    "shared_mem_per_block": (1, 2**30, "bytes"),
    "static_shared_mem_per_block": (1, 2**30, "bytes"),
    # 32-byte sectors on NVIDIA since Maxwell, 128-byte segments before; a DRAM page is
    # at most a few KiB
    "sector_bytes": (1, 4096, "bytes"),
    # 65536 32-bit registers per SM on every NVIDIA GPU since Kepler
    "registers_per_sm": (1, 2**24, "registers"),
    # caches: an H100's L2 is 50 MiB and its SM's L1 with shared memory 256 KiB; a CPU's
    # last-level cache may reach a GiB
    "l2_cache_bytes": (1, 2**34, "bytes"),
    "l1_cache_bytes_per_sm": (1, 2**30, "bytes"),
    # 1024 threads in CUDA; OpenCL CPU devices allow up to 8192
    "max_threads_per_block": (1, 65536, "threads"),
}


def _describe(value) -> str:
    if isinstance(value, bool | int | float | str) or value is None:
        return repr(value)[:40]
    return "a list" if isinstance(value, list) else "an object"


def _bound(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def check_hardware(data, source: str) -> None:
    """Raise a ProfileError, prefixed with *source*, unless *data* (parsed JSON) describes
    a Hardware: every parameter present, none unknown, each of its type and within
    BOUNDS, and none contradicting another."""
    if not isinstance(data, dict):
        raise ProfileError(f"{source}: not a hardware description (a JSON object of "
                           "parameters)")
    names = {f.name for f in fields(Hardware)}
    unknown = set(data) - names
    missing = {n for n in names if n not in data and n not in _OPTIONAL}
    if unknown or missing:
        raise ProfileError(f"{source}: unknown parameters {sorted(unknown)}, "
                           f"missing {sorted(missing)}")
    problems = []
    if not isinstance(data["name"], str) or not data["name"]:
        problems.append(f"name {_describe(data['name'])} is not a non-empty string")
    for name in _INTEGERS + _NUMBERS:
        value = data.get(name)
        if value is None and name in _OPTIONAL:
            continue
        least, most, unit = BOUNDS[name]
        if name in _INTEGERS and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 1):
            problems.append(f"{name} {_describe(value)} is not a positive integer")
        elif name in _NUMBERS and (isinstance(value, bool) or not isinstance(
                value, int | float) or not math.isfinite(value) or value <= 0):
            problems.append(f"{name} {_describe(value)} is not a positive number")
        elif not least <= value <= most:
            problems.append(f"{name} {_describe(value)} is outside {_bound(least)} to "
                            f"{_bound(most)} {unit}")
    if not problems:
        problems = _inconsistent(data)
    capability = data.get("compute_capability")
    if capability is not None and not (isinstance(capability, str) and len(
            capability.split(".")) == 2 and all(p.isdigit() for p in capability.split("."))):
        problems.append(f"compute_capability {_describe(capability)} is not 'major.minor'")
    sources = data.get("sources")
    if sources is not None and not (isinstance(sources, dict) and all(
            isinstance(v, str) for v in sources.values())):
        problems.append("sources is not an object of strings")
    guessed = data.get("guessed", ())
    if not isinstance(guessed, list | tuple) or not all(g in names for g in guessed):
        problems.append(f"guessed {_describe(guessed)} is not a list of parameter names")
    if problems:
        raise ProfileError(f"{source}: {'; '.join(problems)}")


def _inconsistent(data) -> list[str]:
    """Parameters that contradict each other: a block that cannot hold one warp, or one
    that may allocate more shared memory than its SM has."""
    problems = []
    warp, most = data["warp_size"], data.get("max_threads_per_block")
    if most is not None and most < warp:
        problems.append(f"max_threads_per_block {most} is less than a warp of {warp} "
                        "threads")
    per_block = data.get("shared_mem_per_block")
    if per_block is not None and per_block > data["shared_mem_per_sm"]:
        problems.append(f"shared_mem_per_block {per_block} exceeds shared_mem_per_sm "
                        f"{data['shared_mem_per_sm']}")
    return problems


def hardware_from_dict(data, source: str) -> Hardware:
    """The Hardware that *data* (parsed JSON, a file's or a profile's) describes, checked
    by ``check_hardware`` (a ProfileError prefixed with *source*); no warning."""
    check_hardware(data, source)
    return Hardware(**{**data, "guessed": tuple(data.get("guessed", ()))})


def load_hardware(name_or_path) -> Hardware:
    """The Hardware of a packaged GPU (``h100``, ``fx5600``, ...) or of a JSON file (a
    name with a suffix or a folder: ``my-gpu.json``, ``./my-gpu``)."""
    if not isinstance(name_or_path, str | os.PathLike):
        raise UsageError(f"a hardware description is a GPU name or a path to a JSON file, "
                         f"got {type(name_or_path).__name__}")
    text = os.fspath(name_or_path)
    path = Path(text)
    if not path.suffix and os.sep not in text and "/" not in text:
        packaged = HARDWARE_DIR / f"{text.lower()}.json"
        if not packaged.is_file():
            raise ProfileError(f"no hardware description {text!r}; known: "
                               f"{', '.join(known_hardware())}, or a path to a JSON file")
        with importlib.resources.as_file(packaged) as path:
            data = read_json_file(path, "hardware description")
    else:
        data = read_json_file(path, "hardware description")
    hw = hardware_from_dict(data, str(path))
    if hw.guessed:
        warnings.warn(f"{hw.name}: {', '.join(hw.guessed)} guessed, not measured; "
                      "predictions depend on the guess", HardwareGuessWarning, stacklevel=2)
    return hw


def load_registers(path) -> dict[str, int]:
    """Registers per thread by suite kernel name, from a registers file
    (data/<gpu>/registers.json: kernel name -> {"registers": N, ...})."""
    shape = 'kernel name -> {"registers": N}'
    data = read_json_file(path, "registers file",
                          invalid="{path} is not a registers file (kernel name -> "
                                  '{{"registers": N}}), not JSON')
    if not isinstance(data, dict):
        raise ProfileError(f"{path}: not a registers file ({shape})")
    result = {}
    for kernel, entry in data.items():
        count = entry.get("registers") if isinstance(entry, dict) else None
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ProfileError(f"{path}: not a registers file ({shape}): {kernel!r} has "
                               f"{_describe(entry) if count is None else _describe(count)}"
                               " registers")
        result[kernel] = count
    return result


def hardware_for_device(device: str) -> Hardware:
    """The packaged Hardware whose name is *device* (as the device reports it)."""
    for name in known_hardware():
        data = json.loads((HARDWARE_DIR / f"{name}.json").read_text(encoding="utf-8"))
        if data.get("name") == device:
            return load_hardware(name)
    raise KernelcastError(f"no packaged Hong–Kim hardware description for {device}; "
                          f"known: {', '.join(known_hardware())} (give --hardware)")
