"""The overlap exponent q of the extended model: the leave-one-class-out cross-validation
per store and q that benchmarks/overlap_exponent.py wrote to data/cv/overlap-exponent*.csv
(``read_overlap_csvs``), the mean per q over the stores, the default
(kernelcast.models.extended.OVERLAP_Q) against the best, and this page's own CV at the
default beside the CSV's.

Public names: read_overlap_csvs, section_overlap.
"""

from __future__ import annotations

import csv
import re

from kernelcast.evaluation.results.common import (BACKEND_LABEL, GPU_LABEL, STORES, Data,
                                                  overall, pct, store_label, table)
from kernelcast.evaluation.results.stores import dates_line

def read_overlap_csvs(data: Data) -> tuple[list[dict], list[str]]:
    """The complete rows of data/cv/overlap-exponent*.csv (q, CV and seconds as numbers,
    each with its file) and the files read."""
    columns = ["store", "device", "backend", "q", "cases", "cv_geomean", "seconds"]
    rows, files = [], sorted((data / "cv").glob("overlap-exponent*.csv"))
    for path in files:
        with path.open(newline="") as handle:
            for record in csv.reader(handle):
                if not record or record[0] == "store":
                    continue
                if len(record) != len(columns):
                    continue
                row = dict(zip(columns, record, strict=True))
                try:
                    row["q"] = float(row["q"])
                    row["cv_geomean"] = float(row["cv_geomean"])
                    row["seconds"] = float(row["seconds"])
                    row["cases"] = int(row["cases"])
                except ValueError:
                    continue
                row["file"] = data.rel(path)
                rows.append(row)
    return rows, [data.rel(p) for p in files]


def section_overlap(data: Data, results, stores) -> list[str]:
    from kernelcast.models.extended import OVERLAP_Q

    out = ["## The overlap exponent q", "",
           "The extended model overlaps its per-work-item terms L and its totals T as "
           "(T^q + L^q)^(1/q) (q = 1 adds them). q is chosen by leave-one-class-out "
           "cross-validation on the fitting suites alone (measurement + extension), on "
           "every store: the q with the lowest mean over the stores. Written by "
           "`benchmarks/overlap_exponent.py`.", ""]
    rows, files = read_overlap_csvs(data)
    if not files:
        return out + ["*Not generated: no `data/cv/overlap-exponent*.csv`.*"]
    if not rows:
        return out + [f"*Not generated: {', '.join(f'`{f}`' for f in files)} hold no "
                      "complete rows yet (the benchmark may still be running).*"]
    keys = [f"data/{gpu}/{backend}.sqlite" for gpu, backend in STORES]
    keys += sorted({r["store"] for r in rows} - set(keys))
    qs = sorted({r["q"] for r in rows})
    cell = {(r["store"], r["q"]): r for r in rows}
    table_rows, means = [], {}
    for q in qs:
        values = [cell[k, q]["cv_geomean"] for k in keys if (k, q) in cell]
        complete = len(values) == len(keys)
        if complete:
            means[q] = sum(values) / len(values)
        table_rows.append([f"{q:g}", *(pct(cell[k, q]["cv_geomean"]) if (k, q) in cell
                                        else "–" for k in keys),
                           pct(means[q]) if complete else "incomplete"])
    best = min(means, key=means.get) if means else None
    for row in table_rows:
        if best is not None and row[0] == f"{best:g}":
            row[-1] = f"**{row[-1]}**"
    labels = []
    for key in keys:
        m = re.match(r"data/(\w+)/(\w+)\.sqlite", key)
        labels.append(store_label(*m.groups()) if m and m.group(1) in GPU_LABEL
                      and m.group(2) in BACKEND_LABEL else key)
    out += [table(["q", *labels, "mean"], table_rows), ""]
    missing_pairs = sum(1 for k in keys for q in qs if (k, q) not in cell)
    total_s = sum(r["seconds"] for r in rows)
    text = [f"The default, `kernelcast.models.extended.OVERLAP_Q`, is q = {OVERLAP_Q:g}."]
    if best is not None:
        if best == OVERLAP_Q:
            text.append(f"It is the q with the lowest mean CV ({pct(means[best])}).")
        else:
            text.append(f"The lowest mean CV here is at q = {best:g} ({pct(means[best])}), "
                        f"not at the default (mean at q = {OVERLAP_Q:g}: "
                        f"{pct(means.get(OVERLAP_Q))}).")
        close = sorted(q for q, v in means.items() if v - means[best] < 0.005)
        if len(close) > 1:
            text.append("Within half a point of the best: q = "
                        + ", ".join(f"{q:g}" for q in close) + ".")
    if missing_pairs:
        text.append(f"The table is incomplete: {missing_pairs} of its {len(keys) * len(qs)} "
                    "store and q pairs have no row yet (the benchmark may still be "
                    "running); a mean is shown only for a q that every store has, and no "
                    "q is chosen from it.")
    ours = {}
    for gpu, backend in STORES:
        cv = results.get((gpu, backend), {}).get("models", {}).get("extended", {}).get("cv")
        if cv is not None:
            ours[store_label(gpu, backend)] = overall(cv)
    if ours and (float(OVERLAP_Q) not in means):
        text.append("At the default q this page computes the CV itself (section "
                    "Cross-validation, same function and suites): "
                    + ", ".join(f"{k} {pct(v)}" for k, v in ours.items())
                    + (f"; mean {pct(sum(ours.values()) / len(ours))}"
                       if len(ours) == len(STORES) else "") + ".")
    for gpu, backend in STORES:
        cv = results.get((gpu, backend), {}).get("models", {}).get("extended", {}).get("cv")
        row = cell.get((f"data/{gpu}/{backend}.sqlite", float(OVERLAP_Q)))
        if cv is not None and row is not None:
            ours = overall(cv)
            if abs(ours - row["cv_geomean"]) > 0.0005:
                text.append(f"{store_label(gpu, backend)}: this page's CV at q = "
                            f"{OVERLAP_Q:g} is {pct(ours)}, the CSV's "
                            f"{pct(row['cv_geomean'])}.")
    out += [" ".join(text), "",
            f"Data: {', '.join(f'`{f}` ({data.file_commit(data.repo / f)})' for f in files)}; "
            f"{len(rows)} rows, {total_s / 60:.0f} min of cross-validation in all "
            "(on the machine that ran the benchmark). The stores' measurement and "
            "extension suites were measured "
            + dates_line(stores, ("measurement", "extension")) + "."]
    return out
