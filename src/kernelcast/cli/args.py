"""Parsing what the command line gives: NAME=VALUE pairs, integer sizes, kernels.

Public names: pairs, integer, sizes, statistics.
"""

from __future__ import annotations

from kernelcast.errors import UsageError


def pairs(items, convert, what) -> dict:
    """{NAME: convert(VALUE)} from NAME=VALUE strings."""
    result = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"expected NAME=VALUE for {what}, got {item!r}")
        if name.strip() in result:
            raise UsageError(f"{what} {name.strip()} is given twice")
        try:
            result[name.strip()] = convert(value)
        except ValueError:
            raise UsageError(f"{what} {name}: not a number: {value!r}") from None
    return result


def integer(text: str) -> int:
    """An integer size, parsed as an integer (1e3 and 1000.0 are accepted as 1000)."""
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        value = float(text)
    if not value.is_integer():
        raise UsageError(f"sizes must be integers, got {text!r}")
    return int(value)


def sizes(items) -> dict:
    return pairs(items, integer, "--param")


def statistics(items) -> dict:
    return pairs(items, float, "--stat")
