"""NAME=VALUE arguments as users write them (a kernel's sizes, data statistics, a .cl
kernel's scalar arguments and array lengths), parsed for the command line and for the
processes it starts (kernelcast.measure.ncu). Every problem is a one-line UsageError that
quotes the argument as given.

Public names: pairs, integer, sizes, statistics, scalar_arguments, line_statistics,
array_sizes.
"""

from __future__ import annotations

import math
import re

from kernelcast.errors import UsageError


def pairs(items, convert, what) -> dict:
    """{NAME: convert(VALUE)} from NAME=VALUE strings; *what* names the flag. *convert*
    raises ValueError for a value that is not a number, UsageError (which this prefixes
    with the flag and name) for one of the wrong kind."""
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
        except UsageError as err:
            raise UsageError(f"{what} {name}: {err}") from None
        except (ValueError, OverflowError):
            raise UsageError(f"{what} {name}: not a number: {_shown(value)}") from None
    return result


def _shown(text: str, width: int = 40) -> str:
    """*text* stripped, cut to *width* characters: an error line quotes it."""
    text = text.strip()
    return text if len(text) <= width else text[:width - 1] + "…"


# decimal digits, optionally grouped by single underscores as Python writes 1_000_000
_INTEGER = re.compile(r"[+-]?[0-9]+(?:_[0-9]+)*")


def integer(text: str) -> int:
    """An integer written in decimal digits (``1000``, ``1_000``). A number written any
    other way (``1e3``, ``1000.0``, ``0x10``, non-ASCII digits) is a UsageError: a size is
    counted, never rounded from a float; text that is no number at all is a ValueError."""
    text = text.strip()
    if _INTEGER.fullmatch(text):
        return int(text)
    try:
        float(text)
    except ValueError:
        int(text, 0)  # 0x10, 0o17, 0b101: numbers, but not in decimal digits
    raise UsageError(f"sizes must be integers in decimal digits (such as 1000 or 1_000), "
                     f"got {_shown(text)}")


def _statistic(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value


def sizes(items, what: str = "--param") -> dict:
    """NAME=SIZE arguments as {NAME: SIZE}, integer sizes."""
    return pairs(items, integer, what)


def statistics(items) -> dict:
    return pairs(items, _statistic, "--stat")


def _scalar(text: str):
    text = text.strip()
    if _INTEGER.fullmatch(text):
        return int(text)
    return _statistic(text)


def scalar_arguments(items) -> dict:
    """--arg NAME=VALUE: a .cl kernel's scalar arguments, integers or numbers."""
    return pairs(items, _scalar, "--arg")


def array_sizes(items) -> dict:
    """--array NAME=ELEMENTS: a .cl kernel's array lengths, in elements."""
    out = pairs(items, integer, "--array")
    for name, n in out.items():
        if n < 1:
            raise UsageError(f"--array {name}={n}: an array has at least one element")
    return out


def line_statistics(items) -> dict:
    """--stat LINE=VALUE for a .cl kernel: {line: value} of its data-dependent branches
    (the probability taken) and loops (the mean trip count)."""
    out = {}
    for name, value in statistics(items).items():
        if not name.isdigit() or int(name) < 1:
            raise UsageError(f"--stat {name}={value:g}: a .cl kernel's statistics are "
                             "keyed by the source line of the if or for (LINE=VALUE)")
        out[int(name)] = value
    return out
