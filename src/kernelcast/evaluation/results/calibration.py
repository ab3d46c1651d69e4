"""Calibration cost: the device time spent measuring each store's suites, from the
stores' timestamps (rows less than a minute apart form a run: ``runs_from_timestamps``)
and from the wall times the campaigns logged in data/<gpu>/campaign*.txt
(``read_campaigns``), and what one calibration of the paper's and the extended model
takes.

Public names: CAMPAIGN_LINE, DONE_LINE, read_campaigns, runs_from_timestamps,
section_calibration.
"""

from __future__ import annotations

import re
from pathlib import Path

from kernelcast.evaluation.results.common import (GPU_LABEL, GPUS, STORES, Data,
                                                  day_range, store_label, table)

CAMPAIGN_LINE = re.compile(r"^(?P<label>[^:]*?:\s*)?(?P<backend>opencl|cuda) "
                           r"(?P<suite>measurement|test|validation|extension)"
                           r"(?: (?P<part>[\w-]+))? p=(?P<p>[\w.]+): (?P<ms>\d+) ms wall")
DONE_LINE = re.compile(r"^done: (\d+) measured")


def read_campaigns(data: Data, gpu) -> list[dict]:
    """Every step the campaign logs of *gpu* record: backend, suite, p, wall seconds,
    cases measured, and whether it counts (a warm-up pass does not)."""
    steps = []
    for path in sorted((data / gpu).glob("campaign*.txt")):
        measured = None
        for line in path.read_text().splitlines():
            done = DONE_LINE.match(line)
            if done:
                measured = int(done.group(1))
                continue
            m = CAMPAIGN_LINE.match(line.strip())
            if m:
                label = (m.group("label") or "").lower()
                steps.append({"file": data.rel(path), "backend": m.group("backend"),
                              "suite": m.group("suite"), "p": m.group("p"),
                              "seconds": int(m.group("ms")) / 1000, "measured": measured,
                              "kept": "warm-up" not in label})
                measured = None
    return steps


def runs_from_timestamps(frame, suite, gap_s=60.0) -> list[dict]:
    """The runs of *suite* in a store's rows: rows recorded less than *gap_s* apart are
    one run; each run's rows, span in seconds and first day."""
    import pandas as pd

    rows = frame[frame.suite == suite].sort_values("id")
    if not len(rows):
        return []
    stamps = pd.to_datetime(rows.recorded_at)
    run_id = (stamps.diff().dt.total_seconds().fillna(gap_s + 1) > gap_s).cumsum()
    runs = []
    for _, idx in stamps.groupby(run_id).groups.items():
        span = stamps.loc[idx]
        runs.append({"rows": len(idx), "seconds": (span.max() - span.min()).total_seconds(),
                     "day": str(span.min())[:10]})
    return runs


def section_calibration(data: Data, stores) -> list[str]:
    out = ["## Calibration cost", "",
           "Device time spent measuring, per store and suite, two ways: from the stores' "
           "timestamps (rows recorded less than a minute apart form one run; the span of "
           "a run leaves out the code generation, compilation and checking before its "
           "first row, so it is a lower bound), and from the wall times the campaigns "
           "logged (`data/<gpu>/campaign*.txt`: code generation, compilation, the "
           "correctness check and the 30 timed launches of every case, and the skipping "
           "of cases already in the store). The stores were filled in several sessions, "
           "so the logged steps include start-up each time; a single calibration run does "
           "less.", ""]
    if not stores:
        return out + ["*Not generated: no store present.*"]
    logged = {gpu: read_campaigns(data, gpu) for gpu in GPUS}
    rows = []
    for gpu, backend in STORES:
        info = stores.get((gpu, backend))
        if info is None:
            continue
        frame = info["frame"]
        for suite in ("measurement", "extension", "test", "validation"):
            runs = runs_from_timestamps(frame, suite)
            steps = [s for s in logged[gpu] if s["backend"] == backend
                     and s["suite"] == suite and s["kept"]]
            if not runs and not steps:
                continue
            rows.append([store_label(gpu, backend), suite,
                         sum(r["rows"] for r in runs),
                         f"{sum(r['seconds'] for r in runs):.0f} s in {len(runs)} run"
                         + ("s" if len(runs) != 1 else ""),
                         (f"{sum(s['seconds'] for s in steps):.0f} s in {len(steps)} step"
                          + ("s" if len(steps) != 1 else "")) if steps else "not logged",
                         day_range(frame[frame.suite == suite].recorded_at)])
    out += [table(["store", "suite", "rows", "store timestamps", "logged wall time",
                   "measured"], rows, ["l", "l", "r", "r", "r", "l"]), ""]
    for gpu in GPUS:
        files = sorted({Path(s["file"]).name for s in logged[gpu]})
        out += [f"Logs of the {GPU_LABEL[gpu]}: " + (", ".join(f"`{f}`" for f in files)
                                                     if files else "none") + ".", ""]
    first, totals = [], []
    for gpu, backend in STORES:
        info = stores.get((gpu, backend))
        if info is None:
            continue
        steps = [s for s in logged[gpu] if s["backend"] == backend
                 and s["suite"] == "measurement" and s["p"] == "4.2"]
        runs = runs_from_timestamps(info["frame"], "measurement")
        if steps:
            base = steps[0]["seconds"]
            first.append(f"{store_label(gpu, backend)} {base:.0f} s "
                         f"(logged, {steps[0]['measured']} cases)")
        elif runs:
            base = runs[0]["seconds"]
            first.append(f"{store_label(gpu, backend)} {base:.0f} s "
                         f"(timestamps, {runs[0]['rows']} cases)")
        else:
            continue
        ext = [s["seconds"] for s in logged[gpu] if s["backend"] == backend
               and s["suite"] == "extension" and s["kept"]]
        extra = sum(ext) if ext else sum(
            r["seconds"] for r in runs_from_timestamps(info["frame"], "extension"))
        totals.append(base + extra)
    warm = [s for gpu in GPUS for s in logged[gpu] if not s["kept"]]
    if first:
        out.append("Calibrating the paper's model is one run of the measurement suite at "
                   "the §4.2 p: " + "; ".join(first) + ". The extended model adds the "
                   "extension suite (the table's extension rows; measured in pieces over "
                   "several sessions, each logged step with its own start-up)"
                   + (f": the measurement run and every logged extension step together "
                      f"took {min(totals):.0f}–{max(totals):.0f} s per store, an upper "
                      "bound for one calibration of the extended model (target: ≤ 5 min "
                      "per GPU and backend)" if totals else "")
                   + ". The test suite at the largest p takes longer than "
                   "the measurement suite because of its skinny matrix products.")
    if warm:
        out.append("")
        out.append("Not counted above: " + "; ".join(
            f"{store_label(Path(s['file']).parent.name, s['backend'])} {s['suite']} "
            f"warm-up pass into a throwaway store, {s['seconds']:.0f} s "
            f"(`{s['file']}`)" for s in warm) + ".")
    return out
