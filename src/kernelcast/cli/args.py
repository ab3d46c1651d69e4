"""argparse types of the command line: counts, run counts and tolerances, each refused
in argparse's one-line usage error quoting the argument. The NAME=VALUE arguments are
kernelcast.frontends.arguments.

Public names: positive_int, run_count, nonnegative_float.
"""

from __future__ import annotations

import argparse
import math


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
