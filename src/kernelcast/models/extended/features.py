"""The extended model's features: the paper's properties plus what its §6.2 names and bank
conflicts, from a kernel's Properties and their extent (kernelcast.properties).

- *data volume*: ``bytes_read`` and ``bytes_written``, per global array the smaller of its
  size and the bytes its accesses cover, summed over the arrays a launch reads and writes
  (where work-items share data through the caches the access counts overstate what
  memory moves; a gather from a large table touches only part of it).
- *bank conflicts*: ``local_conflicts``, the local-memory passes beyond one per access
  that a warp's accesses take (kernelcast.properties.accesses.local_bank_passes).
- *per work-item* counts (``item_*``): global loads along the fast axis (strides 0 and 1)
  and otherwise, local loads, floating-point operations and barriers, each total divided
  by the launch's work-items and split by width or precision as the paper's totals are.
  A launch with few work-items takes as long as one work-item's chain of operations.
  ``item_recurrence_*`` count the operations on loop-carried paths and, for local loads
  and special functions, on the path through an iteration of a loop with a branch in
  every iteration (kernelcast.properties.recurrence); ``item_serial_global_loads`` the
  global loads on such branch-serialized paths; ``item_varying_global_loads`` the global
  loads in loops whose trip count differs among a work-group's work-items, for the
  work-item that runs the most iterations.
- ``work_items``, the launch's work-items: a context value without a weight, from which
  the model counts the waves of resident work-items (kernelcast.fitting.overlap).

Public names: EXTENDED_FEATURES, FEATURE_UNITS, features, extend.
"""

from __future__ import annotations

import functools

from kernelcast.errors import KernelcastError
from kernelcast.properties.vocabulary import (OP_KINDS, PROPERTY_NAMES, RECURRENCE_KINDS,
                                              SERIAL_KINDS, UNITS)

_WIDTHS = ("32", "64")  # 128-bit accesses count with 64
_PRECISIONS = ("f32", "f64")

EXTENDED_FEATURES = (
    "bytes_read", "bytes_written", "local_conflicts",
    *(f"item_{kind}_{width}" for kind in ("loads_coalesced", "loads_other", "local_loads")
      for width in _WIDTHS),
    *(f"item_flops_{p}" for p in _PRECISIONS), "item_barriers",
    *(f"item_recurrence_{kind}" for kind in RECURRENCE_KINDS if kind != "special"),
    *(f"item_recurrence_special_{p}" for p in _PRECISIONS),
    "item_serial_global_loads", "item_varying_global_loads")

_PER_ITEM = {
    "loads_coalesced": "global loads of stride 0 or 1",
    "loads_other": "other global loads",
    "local_loads": "local-memory loads",
}

FEATURE_UNITS = {
    **UNITS,
    "bytes_read": "bytes of the global arrays the kernel reads",
    "bytes_written": "bytes of the global arrays the kernel writes",
    "local_conflicts": "local-memory passes beyond one per warp access (bank conflicts)",
    **{f"item_{kind}_{width}": f"{what} of {width} bits{' or more' if width == '64' else ''} "
       "per work-item" for kind, what in _PER_ITEM.items() for width in _WIDTHS},
    **{f"item_flops_{p}": f"{p} floating-point operations per work-item" for p in _PRECISIONS},
    "item_barriers": "barriers per work-item",
    "item_recurrence_flops": "floating-point operations on loop-carried paths per work-item",
    **{f"item_recurrence_special_{p}": f"{p} special functions on loop-carried paths and on "
       "paths through branch-serialized iterations per work-item" for p in _PRECISIONS},
    "item_recurrence_local_loads": "local loads on loop-carried paths and on paths through "
                                   "branch-serialized iterations per work-item",
    "item_recurrence_global_loads": "global loads on loop-carried paths per work-item",
    "item_serial_global_loads": "global loads on paths through branch-serialized iterations "
                                "per work-item",
    "item_varying_global_loads": "global loads in loops whose trip count varies among a "
                                 "work-group's work-items, of the work-item with the most",
}


_FLOPS = tuple(n for n in PROPERTY_NAMES if n.split("_")[0] in OP_KINDS)


def features(props, params) -> dict[str, float]:
    """The values the extended model weighs for a kernel (its Properties) at *params*."""
    values, extent = props.evaluate_with_extent(params)
    if not extent:
        raise KernelcastError(f"the properties of {props.kernel_name!r} lack the extent "
                              "the extended model needs; extract them again")
    return extend(values, extent)


@functools.lru_cache(maxsize=1024)
def _arrays(names: tuple[str, ...], direction: str) -> tuple[str, ...]:
    return tuple(k for k in names if k.startswith(f"{direction} ")
                 and not k.endswith(" accessed"))


def _moved(extent: dict[str, float], direction: str) -> float:
    """Σ over arrays of min(array bytes, bytes accessed), or the arrays' bytes for
    properties extracted before the per-array counts existed."""
    arrays = _arrays(tuple(extent), direction)
    if not arrays:
        return extent[f"bytes_{direction}"]
    return sum(min(extent[k], extent[f"{k} accessed"]) for k in arrays)


@functools.lru_cache(maxsize=1024)
def _per_item_feature(name: str) -> str | None:
    """The per-work-item feature a paper property adds to, if any."""
    parts = name.split("_")
    if parts[0] == "load" and parts[1] in ("global", "local"):
        width = "32" if parts[2] == "32" else "64"
        kind = ("local_loads" if parts[1] == "local" else "loads_coalesced"
                if parts[3] in ("s0", "s1") else "loads_other")
        return f"item_{kind}_{width}"
    if name in _FLOPS:
        return f"item_flops_{parts[1]}"
    return None


_ITEM_ZERO = dict.fromkeys((name for name in EXTENDED_FEATURES if name.startswith("item_")
                            and name != "item_varying_global_loads"), 0.0)
# (extent key, feature) of the counts on recurrence and serialized paths: a local load or
# a special function waits as long on either, so they share a weight; a global load on a
# serialized path reads L2 where a recurrence's chases through DRAM
_PATHS = tuple(
    (f"{prefix}_{kind}",
     "item_serial_global_loads" if (prefix, kind) == ("serial", "global_loads")
     else f"item_recurrence_{kind}")
    for prefix, kinds in (("recurrence", RECURRENCE_KINDS), ("serial", SERIAL_KINDS))
    for kind in kinds)
_SPECIAL_OPS = {p: tuple(f"{op}_{p}" for op in ("special", "pow")) for p in _PRECISIONS}


def extend(values: dict[str, float], extent: dict[str, float]) -> dict[str, float]:
    """The paper's property values plus the extended features, from the extent.

    Per-work-item counts are split by access width and precision, as the paper splits
    its totals. Special functions on recurrence and serialized paths are apportioned by
    the kernel's own f32/f64 totals of them."""
    per_item = dict(_ITEM_ZERO)
    for name, value in values.items():
        feature = _per_item_feature(name)
        if feature:
            per_item[feature] += value
    per_item["item_barriers"] = values.get("barrier", 0.0)
    f32, f64 = (sum(values.get(k, 0.0) for k in _SPECIAL_OPS[p]) for p in _PRECISIONS)
    share = f32 / (f32 + f64) if f32 + f64 else 1.0
    for key, feature in _PATHS:
        count = extent.get(key, 0.0)
        if feature.endswith("_special"):
            per_item[f"{feature}_f32"] += count * share
            per_item[f"{feature}_f64"] += count * (1.0 - share)
        else:
            per_item[feature] += count
    result = dict(values)
    varying = extent.get("varying_global_loads", 0.0)
    if varying:  # already per work-item: the busiest one's
        result["item_varying_global_loads"] = varying
    for name, value in (("bytes_read", _moved(extent, "read")),
                        ("bytes_written", _moved(extent, "written")),
                        ("local_conflicts", extent.get("local_conflicts", 0.0))):
        if value:
            result[name] = value
    work_items = extent["work_items"] or 1.0
    for name, value in per_item.items():
        if value:
            result[name] = value / work_items
    result["work_items"] = work_items  # context for the waves (kernelcast.fitting.overlap)
    return result
