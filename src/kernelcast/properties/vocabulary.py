"""The fixed property vocabulary of the paper's model (Stevens & Klöckner, §2).

Every property is a total over all work-items of one kernel launch. ``PROPERTY_NAMES``
fixes their order; ``UNITS`` says what one unit of each counts. docs/properties.md is
the prose version of this module.

Public names: FLOAT_KINDS, OP_KINDS, ACCESS_BITS, STRIDE_CLASSES, RECURRENCE_KINDS,
SERIAL_KINDS, PROPERTY_NAMES, UNITS, arith_name, global_name, minls_name, local_name, stride_class.
"""

from __future__ import annotations

from fractions import Fraction
from math import ceil

FLOAT_KINDS = ("f32", "f64")
OP_KINDS = ("add", "mul", "div", "pow", "special")
ACCESS_BITS = (32, 64, 128)
STRIDE_CLASSES = (
    "s0", "s1",
    "1of2", "2of2",
    "1of3", "2of3", "3of3",
    "1of4", "2of4", "3of4", "4of4",
    "1ofmore", "2ofmore", "3ofmore", "4ofmore",
    "irregular",
)
#: what a work-item's chain of dependent operations (recurrence_*) and a sequential
#: loop's serialized operations (serial_*) count (kernelcast.properties.recurrence)
RECURRENCE_KINDS = ("flops", "special", "local_loads", "global_loads")
SERIAL_KINDS = ("special", "local_loads", "global_loads")


def arith_name(op: str, kind: str) -> str:
    return f"{op}_{kind}"


def global_name(direction: str, bits: int, cls: str) -> str:
    return f"{direction}_global_{bits}_{cls}"


def minls_name(bits: int, cls: str) -> str:
    return f"minls_global_{bits}_{cls}"


def local_name(direction: str, bits: int) -> str:
    return f"{direction}_local_{bits}"


def _build_names() -> tuple[str, ...]:
    names = [arith_name(op, kind) for kind in FLOAT_KINDS for op in OP_KINDS]
    for direction in ("load", "store"):
        names += [global_name(direction, b, c) for b in ACCESS_BITS for c in STRIDE_CLASSES]
    names += [minls_name(b, c) for b in ACCESS_BITS for c in STRIDE_CLASSES]
    names += [local_name(d, b) for d in ("load", "store") for b in ACCESS_BITS]
    names += ["barrier", "workgroup", "launch"]
    return tuple(names)


PROPERTY_NAMES: tuple[str, ...] = _build_names()
ORDER = {name: i for i, name in enumerate(PROPERTY_NAMES)}


def _unit(name: str) -> str:
    if name.startswith("minls_"):
        return "min(loads, stores) of one access type, in work-item accesses"
    if "_global_" in name:
        return "global-memory accesses, one per work-item per element"
    if "_local_" in name:
        return "local-memory accesses, one per work-item per element"
    if name == "barrier":
        return "barriers, one per work-item that reaches one"
    if name == "workgroup":
        return "work-groups launched"
    if name == "launch":
        return "kernel launches (the constant 1)"
    return "floating-point operations, one per work-item"


UNITS = {name: _unit(name) for name in PROPERTY_NAMES}


def stride_class(stride: int | None, utilization: Fraction | None) -> str:
    """The amortized stride fraction class of §2.1.

    *stride* is the address step, in elements of the access, from one work-item to the
    next along local axis 0 (None when it is not affine); *utilization* is the fraction of
    the filled-in footprint that the kernel touches. Strides 0 and 1 ignore utilization;
    for strides 2-4 the numerator k is the smallest with utilization <= k/stride; for
    larger strides utilization is binned in quarters.
    """
    if stride is None:
        return "irregular"
    stride = abs(stride)
    if stride <= 1:
        return f"s{stride}"
    if utilization is None:
        raise ValueError("a stride above 1 needs a utilization ratio")
    denominator = min(stride, 4)
    k = min(max(ceil(Fraction(utilization) * denominator), 1), denominator)
    return f"{k}of{stride if stride <= 4 else 'more'}"
