"""What each model multiplies its weights with: the paper's properties, or kernelcast's.

``paper`` is the model of Stevens & Klöckner: the properties of kernelcast.properties,
totals over all work-items of a launch. ``kernelcast`` extends it in the directions the
paper's §6.2 names and with bank conflicts, still with fitted weights times counts and
with no hardware constant entered by hand (the 32 banks of 4 bytes that define a conflict
aside), its per-work-item terms overlapping its totals instead of adding to them
(kernelcast.models.overlap):

- *data volume*: ``bytes_read`` and ``bytes_written``, per global array the smaller of
  its size and the bytes its accesses cover, summed over the arrays a launch reads and
  writes. Where work-items share data through the caches (a stencil loads each value
  from several work-items) the access counts overstate what memory moves, and a gather
  from a large table touches only part of it.
- *bank conflicts*: ``local_conflicts``, the local-memory passes beyond one per access
  that a warp's accesses take (kernelcast.properties.accesses.local_bank_passes). The
  paper counts local accesses alone; a transpose through an unpadded tile or a stencil
  tile whose rows are not a multiple of 32 words takes several passes per access.
- *parallelism*: counts per work-item (``item_*``: global loads along the fast axis
  (strides 0 and 1) and otherwise, local loads, floating-point operations and barriers,
  each total divided by the launch's work-items, and split by width or precision as the
  paper's totals are). A launch with fewer work-items than
  the device runs at once takes as long as one work-item's chain of operations, however
  small its totals; with many work-items these terms vanish beside the totals.
  ``item_recurrence_*`` count, per work-item, the operations on loop-carried paths
  (kernelcast.properties.recurrence): a step of ``x = rsqrt(x) + c`` or ``j = tile[j]``
  waits for the one before, so these take their latency. The loads and special
  functions on the path through one iteration of a loop that has a branch in every
  iteration (a condition on the loop index) wait as well: the compiler leaves each
  iteration in its own branch, so an iteration also waits for its own loads. Their local
  loads and special functions add to the ``item_recurrence_*`` counts, since they take
  the same latency (one weight for both lowered the cross-validated error on both GPUs
  and backends, docs/results.md); their global loads, from L2 where the recurrences
  chase through DRAM, are ``item_serial_global_loads``.
  ``item_varying_global_loads`` counts the global loads in loops whose trip count differs
  among a work-group's work-items (the fetch of a tile with halo), for the work-item that
  runs the most iterations: each iteration is a branch, and waits for its load.
  A launch with more work-items than the device holds at once runs these chains in
  waves; ``work_items``, a value without a weight, tells the model how many
  (kernelcast.models.overlap).

All are fitted from the paper's measurement suite together with kernelcast's extension
suite (kernelcast.suites.extension), whose kernels exercise exactly these behaviours;
the weights are non-negative, because without that constraint the collinear new terms
take opposite signs and predictions outside the suite break down (docs/results.md), and
fitted in log space (kernelcast.models.linear).

Public names: MODELS, EXTENDED_FEATURES, FEATURE_UNITS, check_model, default_model,
fit_suites, features, extend.
"""

from __future__ import annotations

import functools

from kernelcast.errors import KernelcastError
from kernelcast.properties.recurrence import RECURRENCE_KINDS, SERIAL_KINDS
from kernelcast.properties.vocabulary import OP_KINDS, PROPERTY_NAMES, UNITS

MODELS = ("paper", "kernelcast")

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


def check_model(model: str) -> str:
    if model not in MODELS:
        raise KernelcastError(f"unknown model {model!r}; known: {', '.join(MODELS)}")
    return model


def default_model(suite: str) -> str:
    """kernelcast's model where it can be fitted (the GPU measurement suite, with the
    extension suite): better than the paper's on the test, validation and held-out kernels
    of both GPUs (docs/results.md). The paper's elsewhere (CPU sizes)."""
    return "kernelcast" if suite == "measurement" else "paper"


def fit_suites(model: str, suite: str) -> tuple[str, ...]:
    """The suites *model* is fitted from when calibrated with measurement suite *suite*."""
    if check_model(model) == "paper":
        return (suite,)
    if suite != "measurement":
        raise KernelcastError(f"the kernelcast model is fitted from the measurement and "
                              f"extension suites at GPU sizes, not from {suite!r}; use "
                              "--model paper")
    return ("measurement", "extension")


def features(props, params, model: str = "paper") -> dict[str, float]:
    """The values *model* weighs for a kernel (its Properties) at *params*."""
    if check_model(model) == "paper":
        return props.evaluate(params)
    values, extent = props.evaluate_with_extent(params)
    if not extent:
        raise KernelcastError(f"the properties of {props.kernel_name!r} lack the extent "
                              "the kernelcast model needs; extract them again")
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
    """The paper's property values plus kernelcast's features, from the extent.

    Per-work-item counts are split by access width and precision, as the paper splits its
    totals: on the H100 a work-item's 64-bit load chain takes up to 2.3 times as long as a
    32-bit one, and an f64 rsqrt 1.4 times an f32 one. Special functions on recurrence and
    serialized paths are apportioned by the kernel's own f32/f64 totals of them."""
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
    result["work_items"] = work_items  # context for the waves (kernelcast.models.overlap)
    return result
