"""What a device can launch: the limits a ranking must respect, and where they come from.

A ranking is for the device a model was fitted to, which need not be the device present:
an H100 profile ranks variants of up to 1,024 work-items a group, whatever the CPU it
runs on allows. ``of_model`` reads a model's limits from its profile (``calibrate``
records the device's), else from the packaged hardware description of its device
(kernelcast.hardware: the device's reported properties, each with its source);
``of_device`` from a device at hand. ``tighter`` is what runs on both, for measuring on a
device other than the model's.

Public names: Limits, of_device, of_model, tighter.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Limits:
    """Work-items a group may have, bytes of local memory a group may declare, the
    width threads are issued in (None where the device does not say), and where
    these come from."""

    max_group_size: int
    local_mem_bytes: int | None
    warp_size: int | None = None
    source: str = ""

    def as_dict(self) -> dict:
        return asdict(self)

    def describe(self) -> str:
        local = ("" if self.local_mem_bytes is None
                 else f", {self.local_mem_bytes:,} bytes of local memory")
        return f"at most {self.max_group_size:,} work-items a group{local}"


def of_device(info) -> Limits:
    """The limits of *info* (a kernelcast.measure.devices.DeviceInfo)."""
    return Limits(info.max_group_size, info.local_mem_bytes, None,
                  f"{info.name} ({info.backend}), as its driver reports it")


def of_model(model) -> Limits | None:
    """The limits of the device *model* was fitted to, or None where neither its profile
    nor a packaged hardware description says."""
    from kernelcast.errors import KernelcastError
    from kernelcast.hardware import hardware_for_device

    prov = getattr(model, "provenance_", {}) or {}
    recorded = prov.get("limits")
    if recorded:
        return Limits(int(recorded["max_group_size"]),
                      None if recorded.get("local_mem_bytes") is None
                      else int(recorded["local_mem_bytes"]),
                      recorded.get("warp_size"), recorded.get("source", "the profile"))
    hardware = getattr(model, "hardware_", None) or getattr(model, "hardware", None)
    name = getattr(hardware, "name", None) or prov.get("device")
    if not name:
        return None
    try:
        hw = hardware if getattr(hardware, "max_threads_per_block", None) \
            else hardware_for_device(name)
    except KernelcastError:
        return None
    if not hw.max_threads_per_block:
        return None
    return Limits(hw.max_threads_per_block, hw.static_shared_mem_per_block, hw.warp_size,
                  f"the hardware description of {hw.name} (kernelcast.hardware)")


def tighter(a: Limits, b: Limits) -> Limits:
    """What launches on both *a*'s device and *b*'s."""
    local = [x for x in (a.local_mem_bytes, b.local_mem_bytes) if x is not None]
    warps = [x for x in (a.warp_size, b.warp_size) if x]
    return Limits(min(a.max_group_size, b.max_group_size), min(local) if local else None,
                  max(warps) if warps else None, f"{a.source} and {b.source}")
