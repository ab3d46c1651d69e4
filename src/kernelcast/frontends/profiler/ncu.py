"""Nsight Compute's raw page as CSV (``ncu --page raw --csv``), one Launch per profiled
kernel launch, in launch order.

The text ncu prints mixes its own lines (``==PROF==``, ``==WARNING==``) and blank lines
with the CSV; the CSV is a header row of column names, a row of units, then one row per
launch. The first columns describe the launch (ID, Kernel Name, Block Size, Grid Size,
...); every further column is a metric. Numbers are printed with thousands separators
("7,840"); a value that is not a number ("n/a") is kept as text. A line the csv module
cannot read (a field over its limit of 131,072 characters) or a launch ID that is not a
whole number is a one-line UsageError naming the file and the row.

Public names: Launch, read_ncu_csv.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass

from kernelcast.errors import UsageError

_DESCRIPTION = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context",
                "Stream", "Block Size", "Grid Size", "Device", "CC")


@dataclass(frozen=True)
class Launch:
    """One profiled launch: its ``id`` (ncu's, in launch order), ``kernel`` name,
    ``block`` and ``grid`` sizes as ncu prints them ("(256, 1, 1)"), its ``metrics``
    (name -> float, or the text where ncu printed no number) and their ``units``."""

    id: int
    kernel: str
    block: str
    grid: str
    metrics: dict
    units: dict

    def value(self, name: str) -> float:
        """Metric *name* as a number; a one-line error when the launch lacks it or it is
        not finite."""
        value = self.metrics.get(name)
        if not isinstance(value, float) or not math.isfinite(value):
            raise UsageError(f"launch {self.id} of {self.kernel}: metric {name!r} is "
                             f"{'missing' if value is None else repr(value)}; profile with "
                             "ncu --set full --page raw --csv")
        return value


def _number(text: str):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return text


def _launch_id(text: str, path: str, row: int) -> int:
    """ncu's launch ID, a whole number from 0 in launch order (thousands separated)."""
    digits = text.replace(",", "")
    if not digits.isdecimal():
        raise UsageError(f"{path}: row {row} has the launch ID {text[:40]!r}; ncu numbers "
                         "launches 0, 1, 2, ...")
    return int(digits)


def read_ncu_csv(text: str, path: str = "<ncu>") -> list[Launch]:
    """The launches in the output of ``ncu --page raw --csv`` (*text*)."""
    lines = [line for line in text.splitlines()
             if line.strip() and not line.startswith("==")]
    rows = []
    reader = csv.reader(io.StringIO("\n".join(lines)))
    try:
        for row in reader:
            rows.append(row)
    except csv.Error as err:  # a field over csv.field_size_limit(), above all
        raise UsageError(f"{path}: row {len(rows) + 1} cannot be read as ncu's CSV: "
                         f"{err}") from None
    if len(rows) < 2 or rows[0][:len(_DESCRIPTION)] != list(_DESCRIPTION):
        raise UsageError(f"{path}: not the CSV of ncu --page raw --csv (no header row "
                         "starting ID, Process ID, ...)")
    header, units = rows[0], rows[1]
    if len(units) != len(header):
        raise UsageError(f"{path}: the units row has {len(units)} columns, the header "
                         f"{len(header)}")
    names = header[len(_DESCRIPTION):]
    launches = []
    for number, row in enumerate(rows[2:], start=3):
        if len(row) != len(header):
            raise UsageError(f"{path}: row {number} has {len(row)} columns, the header "
                             f"{len(header)}")
        described = dict(zip(_DESCRIPTION, row))
        values = row[len(_DESCRIPTION):]
        launches.append(Launch(
            _launch_id(described["ID"], path, number), described["Kernel Name"],
            described["Block Size"], described["Grid Size"],
            {n: _number(v) for n, v in zip(names, values) if v != ""},
            {n: u for n, u in zip(names, units[len(_DESCRIPTION):]) if u}))
    return launches
