"""Hardware descriptions for the Hong–Kim model, read from data files.

Each GPU is a JSON file in the package's ``hardware`` folder (or any path): the
parameters of GROPHECY's Table 5 (shared/seeds/004) under the names of
kernelcast.models.hong_kim.equations, each with where its value comes from. The FX5600 and C1060
files copy Table 5, with the GTX280 latencies it borrows for the C1060; the H100 and
H200 files are written by ``benchmarks/hong_kim_hardware.py`` from kernelcast's own
microbenchmarks (pointer chasing for DRAM latency, bandwidth-saturating loads for the
departure delays) and from the device's reported limits. A value that nothing measured
or reported is listed under ``guessed`` and raises a HardwareGuessWarning when loaded.

Public names: Hardware, HardwareGuessWarning, HARDWARE_DIR, load_hardware, known_hardware,
hardware_for_device.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, fields
from pathlib import Path

from kernelcast.errors import HardwareGuessWarning, KernelcastError

HARDWARE_DIR = Path(__file__).resolve().parents[2] / "hardware"


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
    sources: dict | None = None  # parameter -> where its value comes from
    guessed: tuple[str, ...] = ()


def known_hardware() -> list[str]:
    return sorted(p.stem for p in HARDWARE_DIR.glob("*.json"))


def load_hardware(name_or_path: str) -> Hardware:
    """The Hardware of a packaged GPU (``h100``, ``fx5600``, ...) or of a JSON file."""
    path = Path(name_or_path)
    if not path.suffix:
        path = HARDWARE_DIR / f"{name_or_path.lower()}.json"
    if not path.exists():
        raise KernelcastError(f"no hardware description {name_or_path!r}; known: "
                              f"{', '.join(known_hardware())}, or a path to a JSON file")
    data = json.loads(path.read_text())
    names = {f.name for f in fields(Hardware)}
    unknown = set(data) - names
    missing = {f.name for f in fields(Hardware)
               if f.name not in data and f.name not in ("registers_per_sm", "sources",
                                                        "guessed")}
    if unknown or missing:
        raise KernelcastError(f"{path}: unknown parameters {sorted(unknown)}, "
                              f"missing {sorted(missing)}")
    data["guessed"] = tuple(data.get("guessed", ()))
    hw = Hardware(**data)
    if hw.guessed:
        warnings.warn(f"{hw.name}: {', '.join(hw.guessed)} guessed, not measured; "
                      "predictions depend on the guess", HardwareGuessWarning, stacklevel=2)
    return hw


def hardware_for_device(device: str) -> Hardware:
    """The packaged Hardware whose name is *device* (as the device reports it)."""
    for name in known_hardware():
        data = json.loads((HARDWARE_DIR / f"{name}.json").read_text())
        if data.get("name") == device:
            return load_hardware(name)
    raise KernelcastError(f"no packaged Hong–Kim hardware description for {device}; "
                          f"known: {', '.join(known_hardware())} (give --hardware)")
