"""Parsing what the command line gives: NAME=VALUE pairs, integer sizes, statistics, and
argparse types for counts and tolerances. Every problem is a one-line UsageError (or
argparse's usage error) that quotes the argument as given.

Public names: pairs, integer, sizes, statistics, positive_int, run_count,
nonnegative_float.
"""

from __future__ import annotations

import argparse
import math

from kernelcast.errors import UsageError


def pairs(items, convert, what) -> dict:
    """{NAME: convert(VALUE)} from NAME=VALUE strings; *what* names the flag."""
    result = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name or not value.strip():
            raise UsageError(f"{what} {item}: expected NAME=VALUE")
        if name in result:
            raise UsageError(f"{what} {name} is given twice")
        try:
            result[name] = convert(value)
        except (ValueError, OverflowError):
            raise UsageError(f"{what} {name}: not a number: {value}") from None
    return result


def integer(text: str) -> int:
    """An integer size, parsed as an integer (1e3 and 1000.0 are accepted as 1000)."""
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        value = float(text)
    if not math.isfinite(value) or not value.is_integer():
        raise UsageError(f"sizes must be integers, got {text}")
    return int(value)


def _statistic(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value


def sizes(items) -> dict:
    return pairs(items, integer, "--param")


def statistics(items) -> dict:
    return pairs(items, _statistic, "--stat")


def positive_int(text: str) -> int:
    """argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}"
                                         ) from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def run_count(text: str) -> int:
    """argparse type: launches per timing attempt, more than the protocol drops (§4.2)."""
    from kernelcast.measure.protocol import DROP

    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value <= DROP:
        raise argparse.ArgumentTypeError(f"expected an integer above {DROP} (the first "
                                         f"{DROP} launches are dropped, §4.2), got {text!r}")
    return value


def nonnegative_float(text: str) -> float:
    """argparse type: a finite number of at least 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a finite number of at least 0, "
                                         f"got {text!r}")
    return value
