"""The timing protocol of the paper (§4.2), with a stability check.

Time RUNS launches with device events, drop the first DROP (first-touch allocation and the
unsteady second run the paper saw), keep the minimum — and keep every raw time and the
median too. A case whose median exceeds its minimum by more than *tolerance* is re-measured
up to *retries* times; if no attempt is stable, the steadiest one is kept with status
"unstable".

Public names: RUNS, DROP, TOLERANCE, RETRIES, Timing, time_with_protocol.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

RUNS = 30
DROP = 4
TOLERANCE = 0.10
RETRIES = 2


@dataclass(frozen=True)
class Timing:
    status: str  # "ok" or "unstable"
    times: tuple[float, ...]  # every run of the kept attempt, seconds, dropped ones first
    drop: int
    min: float
    median: float
    attempts: int
    spreads: tuple[float, ...]  # median/min - 1 of each attempt

    @property
    def kept(self) -> tuple[float, ...]:
        return self.times[self.drop:]


def time_with_protocol(run: Callable[[int], list[float]], runs: int = RUNS, drop: int = DROP,
                       tolerance: float = TOLERANCE, retries: int = RETRIES) -> Timing:
    """Time with *run(count)*, which launches the kernel *count* times back to back and
    returns each launch's device time in seconds."""
    if runs <= drop:
        raise ValueError(f"runs ({runs}) must exceed the dropped runs ({drop})")
    best, spreads = None, []
    for attempt in range(1, retries + 2):
        times = tuple(float(t) for t in run(runs))
        kept = times[drop:]
        low, mid = min(kept), statistics.median(kept)
        spread = mid / low - 1 if low > 0 else float("inf")
        spreads.append(spread)
        if best is None or spread < best[2]:
            best = (times, low, spread, mid)
        if spread <= tolerance:
            break
    times, low, spread, mid = best
    return Timing("ok" if spread <= tolerance else "unstable", times, drop, low, mid,
                  attempt, tuple(spreads))
