"""Readable results: Table 1 and Table 2 of the paper for any model, every model side by
side, cross-validation summaries, as text, markdown and CSV, and figures.

``format_table`` is the one function that formats a table, printed or written: one style
everywhere, and printed tables fit in ``WIDTH`` (100) columns — a table wider than that is
split into parts that repeat its first columns, and a text column too wide on its own
wraps. Statuses of a measurement other than ``ok`` are explained where they appear
(``STATUS_MEANINGS``, ``status_notes``).

Public names: WIDTH, STATUS_MEANINGS, format_table, format_seconds, format_table1,
format_table2, format_summary, format_side_by_side, format_side_by_side_summary,
status_notes, negative_notes, print_evaluation, check_report_paths, write_report.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pandas as pd

from kernelcast.errors import UsageError
from kernelcast.evaluation.tables import side_by_side, side_by_side_summary
from kernelcast.frontends.files import check_regular_file, describe_os_error
from kernelcast.metrics import summarize

WIDTH = 100

# One line per status a measurement can have (kernelcast.measure.store, docs/cli.md).
STATUS_MEANINGS = {
    "ok": "timed: the median of the kept runs was within the tolerance (10%) of their "
          "minimum, which is the time",
    "unstable": "the median of the kept runs exceeded the minimum by more than the "
                "tolerance (10%) in every attempt, so the time is the steadiest attempt's "
                "minimum and less trustworthy",
    "compile_error": "the code could not be generated or the device compiler rejected it "
                     "(the message has the compiler's log)",
    "launch_error": "the device failed to run the kernel",
    "out_of_memory": "the arrays did not fit on the device, or it ran out while launching",
    "wrong_answer": "the kernel did not compute its NumPy reference (max_rel_error says by "
                    "how much)",
    "size_out_of_range": "a size does not fit the integer type of the kernel argument that "
                         "carries it",
    "failed": "any other error while preparing or running the case (the message names it)",
    "crashed": "the process measuring the case died (signal in the message); the campaign "
               "went on",
}

_NUMBER = re.compile(r"[-+−]?(\d[\d.,]*(e[-+]?\d+)?|inf|nan)( ?(%|s|ms|µs|ns))?|[–-]")


def _numeric(cells) -> bool:
    """Whether a column holds numbers (with a unit or %), to be right-aligned."""
    cells = [c for c in cells if c]
    return bool(cells) and all(_NUMBER.fullmatch(c) for c in cells)


def format_table(frame: pd.DataFrame, markdown: bool = False, width: int = WIDTH,
                 keys: int = 1) -> str:
    """*frame* as a table: a header, a rule, a line per row; numbers right-aligned, text
    left-aligned. Text that is too wide for *width* columns is split into several tables
    that each repeat the first *keys* columns (one column too wide alone wraps its
    cells); markdown is left whole, for a renderer to wrap."""
    header = [str(c) for c in frame.columns]
    rows = [["" if pd.isna(v) else str(v) for v in row]
            for row in frame.itertuples(index=False)]
    right = [_numeric([r[i] for r in rows]) for i in range(len(header))]
    if markdown:
        rule = ["---:" if r else "---" for r in right]
        return "\n".join("| " + " | ".join(cells) + " |" for cells in [header, rule, *rows])
    widths = [max([len(header[i]), *(len(r[i]) for r in rows)]) for i in range(len(header))]
    keys = min(keys, len(header))
    parts, part, used = [], [], sum(widths[i] + 2 for i in range(keys))
    for i in range(keys, len(header)):
        if part and used + widths[i] > width:
            parts.append(part)
            part, used = [], sum(widths[i] + 2 for i in range(keys))
        part.append(i)
        used += widths[i] + 2
    parts.append(part)
    return "\n\n".join(_text_table(header, rows, right, widths, [*range(keys), *part], width)
                       for part in parts)


def _text_table(header, rows, right, widths, columns, width) -> str:
    widths = {i: widths[i] for i in columns}
    excess = sum(widths.values()) + 2 * (len(columns) - 1) - width
    text = [i for i in columns if not right[i]]
    if excess > 0 and text:  # one column too wide alone: wrap the widest text column
        widest = max(text, key=widths.get)
        widths[widest] = max(widths[widest] - excess, 12)

    def lines(cells):
        wrapped = {i: textwrap.wrap(cells[i], widths[i], break_on_hyphens=False) or [""]
                   for i in columns}
        for k in range(max(len(w) for w in wrapped.values())):
            parts = [(wrapped[i][k] if k < len(wrapped[i]) else "") for i in columns]
            yield "  ".join(p.rjust(widths[i]) if right[i] else p.ljust(widths[i])
                            for p, i in zip(parts, columns, strict=True)).rstrip()

    rule = "  ".join("-" * widths[i] for i in columns)
    return "\n".join([*lines(header), rule, *(line for row in rows for line in lines(row))])


def _params(p: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(p.items()))


def _percent(e) -> str:
    return "–" if pd.isna(e) else f"{e:.1%}"


def format_seconds(s: float) -> str:
    """Seconds with a readable unit: 236 µs, 1.5 ms."""
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6)):
        if abs(s) >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s * 1e9:.3g} ns"


def _with_status(frame: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """A status column when some case is not plainly ok (its meaning is printed below)."""
    if "status" in table and (table.status != "ok").any():
        frame["status"] = table.status.to_numpy()
    return frame


def table1_frame(table: pd.DataFrame) -> pd.DataFrame:
    """Table 1 for reading; Hong–Kim's bottleneck too (its other details are in the
    report's CSV and `predict --json`)."""
    frame = pd.DataFrame({
        "kernel": table.kernel_class, "sizes": table.params.map(_params),
        "predicted": table.predicted_s.map(format_seconds),
        "measured": table.measured_s.map(format_seconds),
        "rel. error": table.rel_error.map(_percent)})
    if "verdict" in table:
        frame["bottleneck"] = table.verdict
    return _with_status(frame, table)


def weights_frame(model) -> pd.DataFrame:
    """The weights of a weighted model (Table 2) with what one unit of each property is."""
    units = model.feature_units()
    rows = sorted(model.weights_.items())
    return pd.DataFrame({"property": [n for n, _ in rows], "weight_s": [w for _, w in rows],
                         "per": [units.get(n, "") for n, _ in rows]})


def table2_frames(model) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 2 (property, weight, a key to its unit) and the legend of the unit keys."""
    weights = weights_frame(model)
    units = list(dict.fromkeys(weights.per))
    keys = ([chr(ord("a") + i) for i in range(len(units))] if len(units) <= 26
            else [str(i + 1) for i in range(len(units))])
    key = dict(zip(units, keys, strict=True))
    table = pd.DataFrame({"property": weights.property,
                          "weight (s)": weights.weight_s.map(lambda w: f"{w:.3e}"),
                          "per": weights.per.map(key)})
    return table, pd.DataFrame({"per": keys, "unit": units})


def summary_frame(summary: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"kernel": summary.index, "cases": summary.cases.astype(int),
                         "geo. mean rel. error": summary.geomean_rel_error.map(_percent),
                         "max rel. error": summary.max_rel_error.map(_percent)})


def format_table1(table, markdown=False) -> str:
    return format_table(table1_frame(table), markdown, keys=2)


def format_summary(summary, markdown=False) -> str:
    return format_table(summary_frame(summary), markdown)


def format_table2(model, markdown=False) -> str:
    """Table 2, then the legend of its unit keys (a weight is seconds per one unit)."""
    table, legend = table2_frames(model)
    return (format_table(table, markdown) + "\n\nper: a weight is seconds per one of these "
            "units\n\n" + format_table(legend, markdown))


def format_side_by_side(tables: dict, markdown=False) -> str:
    """Every case once, in two tables: measured and each model's predicted time; each
    model's relative error."""
    frame = side_by_side(tables)
    keys = {"kernel": frame.kernel_class.to_numpy(),
            "sizes": frame.params.map(_params).to_numpy()}
    times = pd.DataFrame({**keys, "measured": frame.measured_s.map(format_seconds)})
    errors = pd.DataFrame(keys)
    for name in tables:
        times[name] = frame[name].map(format_seconds).to_numpy()
        errors[name] = frame[f"{name} error"].map(_percent).to_numpy()
    errors = _with_status(errors, frame)
    return (format_table(times, markdown, keys=3)
            + "\n\nrelative error |predicted − measured| / measured\n\n"
            + format_table(errors, markdown, keys=2))


def format_side_by_side_summary(tables: dict, markdown=False) -> str:
    """Geometric-mean relative error per kernel and overall, a column per model; the
    number of cases too where every model has the same."""
    summary = side_by_side_summary(tables)
    cases = [summarize(t).cases.astype(int) for t in tables.values()]
    out = pd.DataFrame({"kernel": summary.index})
    if all(c.equals(cases[0]) for c in cases):
        out["cases"] = cases[0].reindex(summary.index).to_numpy()
    for name in summary.columns:
        out[name] = summary[name].map(_percent).to_numpy()
    return format_table(out, markdown)


def status_notes(statuses) -> list[str]:
    """One line per status other than ok among *statuses*: how many cases, what it means."""
    counts = pd.Series(list(statuses)).value_counts()
    return [f"{status} ({count} of {len(statuses)} cases): "
            f"{STATUS_MEANINGS.get(status, 'see docs/cli.md')}."
            for status, count in counts.items() if status != "ok"]


def negative_notes(tables: dict) -> list[str]:
    """One line per model of *tables* that predicts a time of zero or less for some case:
    shown as it is (it is the model's answer), never passed off as a run time."""
    notes = []
    for name, table in tables.items():
        bad = table[~(table.predicted_s > 0)]
        if len(bad):
            cases = ", ".join(bad.case_name.astype(str)[:3]) + (", ..." if len(bad) > 3 else "")
            notes.append(f"the {name} model predicts no positive time for {len(bad)} of "
                         f"{len(table)} cases ({cases}): its weights combine to zero or less "
                         "there (an unconstrained fit's negative weights); kc.predict "
                         "refuses such a prediction")
    return notes


def _say(text: str = "") -> None:
    """Print prose wrapped to WIDTH columns."""
    print(textwrap.fill(text, WIDTH) if text else "")


def _statuses(table: pd.DataFrame) -> list:
    return list(table.status) if "status" in table else []


def _origin(model) -> str:
    """What the model was fitted on, or that it is analytical (Hong–Kim fits nothing)."""
    prov = model.provenance_
    if hasattr(model, "weights_"):
        return (f"fitted on {prov.get('cases')} cases of the "
                f"{' and '.join(prov.get('suites') or [])} suites")
    criterion = model.fit_report_.get("criterion", "")
    return "not fitted" + (f": {criterion.split(': ', 1)[-1]}" if criterion else "")


def print_evaluation(model, tables: dict, cv: dict | None = None) -> None:
    """What `kernelcast evaluate` prints: Table 1 of one model (with Table 2 of a weighted
    model) or every model side by side, and cross-validation summaries."""
    prov = model.provenance_
    backend = f" ({prov['backend']})" if prov.get("backend") else ""
    first = next(iter(tables.values()))
    if len(tables) == 1:
        _say(f"Table 1: {model.name} model on {prov['device']}{backend}, {_origin(model)}")
        _say()
        print(format_table1(first))
    else:
        _say(f"Table 1 of every model on {prov['device']}{backend}, on the same "
             f"{len(first)} measured cases: predicted run time")
        _say()
        print(format_side_by_side(tables))
    for note in status_notes(_statuses(first)):
        _say()
        _say(note)
    for note in negative_notes(tables):
        _say()
        _say(note)
    _say()
    _say("geometric mean of relative error per kernel")
    _say()
    print(format_summary(summarize(first)) if len(tables) == 1
          else format_side_by_side_summary(tables))
    if len(tables) == 1 and hasattr(model, "weights_"):
        _say()
        _say("Table 2: weights")
        _say()
        print(format_table2(model))
        if model.fit_report_.get("negative_weights"):
            _say()
            _say(f"negative weights (the paper's unconstrained fit allows them): "
                 f"{', '.join(model.fit_report_['negative_weights'])}; --nonnegative "
                 "forbids them")
    if cv:
        _say()
        _say("leave-one-class-out cross-validation over the classes each model is fitted "
             "on: geometric mean of relative error")
        _say()
        print(format_side_by_side_summary(cv))


_REPORT_FILES = ("report.md", "table1.csv", "summary.csv", "weights.csv", "cv.csv",
                "predicted_vs_measured.png", "breakdown.png")


def check_report_paths(out) -> None:
    """Refuse (UsageError naming it) a file of the report under *out* that is there and
    is not a regular file: a FIFO would block the writer forever, and a device node
    would be written to."""
    for name in _REPORT_FILES:
        check_regular_file(Path(out) / name, "file of the report")


def write_report(out, model, table: pd.DataFrame, cv: pd.DataFrame | None = None,
                 breakdowns: dict[str, dict[str, float]] | None = None) -> list[Path]:
    """Markdown and CSV tables and PNG figures under *out*; returns the files written.
    Every path is checked (``check_report_paths``) before any is written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UsageError(f"cannot make the report folder {out}: {describe_os_error(err)}"
                         ) from None
    check_report_paths(out)
    written = []
    prov = model.provenance_
    summary = summarize(table)
    md = [f"# kernelcast report: {prov['device']} ({prov['backend']}, driver "
          f"{prov['driver']})", "",
          f"The {model.name} model, {_origin(model)}; kernelcast "
          f"{prov.get('kernelcast_version', '')}.", "",
          "## Table 1: test kernels, predicted and measured", "", format_table1(table, True)]
    md += [line for note in status_notes(_statuses(table)) for line in ("", note)]
    md += [line for note in negative_notes({model.name: table}) for line in ("", note)]
    md += ["", format_summary(summary, True)]
    if hasattr(model, "weights_"):
        md += ["", "## Table 2: weights", "", format_table2(model, True)]
    if cv is not None:
        suites = prov.get("suites") or [prov.get("suite")]
        md += ["", f"## Leave-one-class-out cross-validation ({' and '.join(suites)} "
               f"suite{'s' if len(suites) > 1 else ''})", "",
               format_summary(summarize(cv), True)]
    path = out / "report.md"
    path.write_text("\n".join(md) + "\n", encoding="utf-8")
    written.append(path)
    weights = weights_frame(model) if hasattr(model, "weights_") else None
    for name, frame in (("table1.csv", table), ("summary.csv", summary),
                        ("weights.csv", weights), ("cv.csv", cv)):
        if frame is not None:
            frame.to_csv(out / name, index=name == "summary.csv")
            written.append(out / name)

    fig, ax = plt.subplots(figsize=(5.5, 5))
    for kernel, group in table.groupby("kernel_class"):
        ax.loglog(group.measured_s, group.predicted_s, "o", label=kernel)
    lo = min(table.measured_s.min(), table.predicted_s.min()) / 1.5
    hi = max(table.measured_s.max(), table.predicted_s.max()) * 1.5
    ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)
    ax.fill_between([lo, hi], [lo * 0.8, hi * 0.8], [lo * 1.2, hi * 1.2], color="0.85",
                    label="±20%")
    ax.set(xlabel="measured (s)", ylabel="predicted (s)", title=prov["device"])
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "predicted_vs_measured.png", dpi=120)
    plt.close(fig)
    written.append(out / "predicted_vs_measured.png")

    if breakdowns:
        names = sorted({k for parts in breakdowns.values() for k in parts})
        fig, ax = plt.subplots(figsize=(7, 0.6 * len(breakdowns) + 1.5))
        left = {kernel: 0.0 for kernel in breakdowns}
        labels = list(breakdowns)
        totals = {k: sum(max(v, 0.0) for v in breakdowns[k].values()) or 1.0 for k in labels}
        for name in names:
            widths = [max(breakdowns[k].get(name, 0.0), 0.0) / totals[k] for k in labels]
            if any(widths):
                ax.barh(labels, widths, left=[left[k] for k in labels], label=name)
                for k, w in zip(labels, widths, strict=True):
                    left[k] += w
        ax.set(xlabel="share of the predicted time (positive contributions)", xlim=(0, 1))
        ax.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.2))
        fig.tight_layout()
        fig.savefig(out / "breakdown.png", dpi=120, bbox_inches="tight")
        plt.close(fig)
        written.append(out / "breakdown.png")
    return written
