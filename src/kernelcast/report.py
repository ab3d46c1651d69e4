"""Readable results: Table 1 and Table 2 of the paper for any model, every model side by
side, cross-validation summaries, as text, markdown and CSV, and figures: the report's
(predicted against measured, the breakdown of predicted times) and the criteria model's
(``advice_figure``), and those of the results page (``random_kernels_figure``,
``characterization_figure``, ``tuning_methodology_figure``: drawn and written at 90 dpi).
A report figure's title names its model, device and profile date; its legend, outside the
plot, holds at most LEGEND_LIMIT (8) entries.

``format_table`` is the one function that formats a table, printed or written: one style
everywhere, and printed tables fit in ``WIDTH`` (100) columns — a table wider than that is
split into parts that repeat its first columns, and a text column too wide on its own
wraps. Statuses of a measurement other than ``ok`` are explained where they appear
(``STATUS_MEANINGS``, ``status_notes``).

Public names: WIDTH, STATUS_MEANINGS, format_table, format_seconds, format_table1,
format_table2, format_summary, format_side_by_side, format_side_by_side_summary,
status_notes, negative_notes, print_evaluation, check_report_paths, write_report,
LEGEND_LIMIT, COLORS, GREY, figure_title, group_smallest, save_figure, scatter_figure,
breakdown_figure, advice_figure, random_kernels_figure, characterization_figure,
tuning_methodology_figure.
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
from kernelcast.units import format_seconds

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

    save_figure(scatter_figure(model, table), out / "predicted_vs_measured.png")
    written.append(out / "predicted_vs_measured.png")
    if breakdowns:
        save_figure(breakdown_figure(model, breakdowns), out / "breakdown.png")
        written.append(out / "breakdown.png")
    return written


# Figures. Each is a matplotlib Figure on its own Agg canvas: no pyplot and no
# matplotlib.use, so the caller's backend is left as it was. Layout is constrained, so
# every label, title and legend lies inside the figure.

LEGEND_LIMIT = 8  # entries a legend holds; the smallest of more are drawn as one "other"

# distinct colours (matplotlib's tab10 without its grey, which marks "other")
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#bcbd22", "#17becf")
GREY = "#b0b0b0"


def _figure(size):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save_figure(fig, path) -> Path:
    """Write *fig* to *path* (its folder made; the format from the suffix)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    return path


def figure_title(model, what: str) -> str:
    """*what* a figure shows and by which model; under it the device, backend and the day
    the profile was written, so that a figure read alone says where it comes from."""
    prov = model.provenance_
    backend = f" ({prov['backend']})" if prov.get("backend") else ""
    date = str(prov.get("created_at") or "")[:10]
    return (f"{model.name} model: {what}\n{prov['device']}{backend}"
            + (f", profile of {date}" if date else ""))


def group_smallest(weights: dict, keep: int) -> tuple[list, list]:
    """The keys of *weights*, largest first, as (shown, grouped): all shown when there are
    at most *keep*, else the *keep* − 1 largest, the rest grouped into one legend entry."""
    order = sorted(weights, key=lambda k: (-weights[k], str(k)))
    return (order, []) if len(order) <= keep else (order[:keep - 1], order[keep - 1:])


def scatter_figure(model, table: pd.DataFrame):
    """Predicted against measured time of every case of *table*, a colour per kernel
    class (the classes with fewest cases grouped when there are too many), with the
    ±20% band around the diagonal."""
    fig = _figure((7.5, 5.2))
    ax = fig.add_subplot()
    counts = table.groupby("kernel_class").size().to_dict()
    shown, rest = group_smallest(counts, LEGEND_LIMIT - 1)  # one entry is the band
    groups = [(k, [k], c) for k, c in zip(sorted(shown), COLORS)]
    if rest:
        groups.append((f"other ({len(rest)} kernels)", rest, GREY))
    for label, kernels, color in groups:
        rows = table[table.kernel_class.isin(kernels)]
        ax.loglog(rows.measured_s, rows.predicted_s, "o", color=color, label=label)
    lo = min(table.measured_s.min(), table.predicted_s.min()) / 1.5
    hi = max(table.measured_s.max(), table.predicted_s.max()) * 1.5
    ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)
    ax.fill_between([lo, hi], [lo * 0.8, hi * 0.8], [lo * 1.2, hi * 1.2], color="0.85",
                    label="±20%")
    ax.set(xlabel="measured (s)", ylabel="predicted (s)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1), title="kernel")
    fig.suptitle(figure_title(model, "predicted against measured run time"), fontsize=10)
    return fig


def breakdown_figure(model, breakdowns: dict[str, dict[str, float]]):
    """A bar per case of *breakdowns* (label: {term: seconds}): each term's share of its
    positive contributions; the terms with the smallest summed share grouped as one
    "other" so that the legend holds at most LEGEND_LIMIT entries."""
    labels = list(breakdowns)
    shares = {}
    for k, parts in breakdowns.items():
        total = sum(max(v, 0.0) for v in parts.values()) or 1.0
        shares[k] = {n: max(v, 0.0) / total for n, v in parts.items()}
    totals = {}
    for parts in shares.values():
        for n, v in parts.items():
            totals[n] = totals.get(n, 0.0) + v
    shown, rest = group_smallest({n: t for n, t in totals.items() if t > 0}, LEGEND_LIMIT)
    columns = [(n, [shares[k].get(n, 0.0) for k in labels], c)
               for n, c in zip(shown, COLORS)]
    if rest:
        columns.append((f"other ({len(rest)} terms)",
                        [sum(shares[k].get(n, 0.0) for n in rest) for k in labels], GREY))
    fig = _figure((9, 0.5 * len(labels) + 2.2))
    ax = fig.add_subplot()
    left = [0.0] * len(labels)
    for name, widths, color in columns:
        ax.barh(labels, widths, left=left, color=color, label=name)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    ax.invert_yaxis()  # the first case on top
    ax.set(xlabel="share of the predicted time (positive contributions)", xlim=(0, 1))
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1), title="term")
    fig.suptitle(figure_title(model, "terms of the predicted time of each test kernel"),
                 fontsize=10)
    return fig


def advice_figure(versions: list, title: str = "", measured: dict | None = None,
                  model=None):
    """The criteria model's Figures 5–7 (kernelcast.models.criteria.advice) for
    *versions* (label, assessment) of one application: per criterion a bar per version
    (its value, left axis) with a dot at its potential speedup (right axis), a criterion
    not judged (no span, no shared memory...) drawn hatched and labelled so, never as an
    empty bar that reads as 0; beside them each version's overall potential speedup and
    the *measured* speedup of each version over the first where given. The title names
    *model*'s device and profile date where *model* is given, else the device that
    judged."""
    from matplotlib.patches import Patch

    from kernelcast.models.criteria.advice import SHORT
    from kernelcast.models.criteria.criteria import CRITERIA

    n = len(versions)
    fig = _figure((12, 4.6))
    left, right = fig.subplots(1, 2, width_ratios=[5, 1.3])
    twin = left.twinx()
    width = 0.8 / n
    handles = []
    unjudged = False
    for i, (label, a) in enumerate(versions):
        color = COLORS[i % len(COLORS)]
        handles.append(Patch(color=color, alpha=0.85, label=label))
        xs = [j + (i - (n - 1) / 2) * width for j in range(len(CRITERIA))]
        judged = [(x, c) for x, c in zip(xs, CRITERIA) if a.values[c] is not None]
        left.bar([x for x, _ in judged], [a.values[c] for _, c in judged], width,
                 color=color, alpha=0.85)
        twin.plot([x for x, _ in judged], [a.speedups[c] for _, c in judged], "o",
                  color="black", markersize=3.5)
        for x, c in zip(xs, CRITERIA):
            if a.values[c] is None:
                unjudged = True
                left.bar(x, 1.0, width, facecolor="0.95", edgecolor="0.6", hatch="///")
                left.text(x, 0.5, "not judged", rotation=90, ha="center", va="center",
                          fontsize=7, color="0.25",
                          bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})
    if unjudged:
        handles.append(Patch(facecolor="0.95", edgecolor="0.6", hatch="///",
                             label="not judged"))
    left.set_xticks(range(len(CRITERIA)))
    left.set_xticklabels([SHORT[c] for c in CRITERIA], fontsize=8, rotation=20)
    left.set_ylim(0, 1.05)
    left.set_ylabel("criterion (bars, 1 best)")
    twin.set_ylabel("potential speedup (dots)")
    twin.set_ylim(bottom=0.9)
    xs = range(n)
    right.bar(xs, [a.potential for _, a in versions],
              color=[COLORS[i % len(COLORS)] for i in xs], alpha=0.85)
    if measured:
        handles += right.plot(xs, [measured.get(label, float("nan")) for label, _ in versions],
                              "k*", markersize=8, label="measured speedup")
    right.set_xticks(list(xs))
    right.set_xticklabels([label.split("-")[0] for label, _ in versions], fontsize=8)
    right.set_ylabel("overall potential speedup")
    fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 6),
               fontsize=8)
    what = title or versions[0][0]
    if model is not None:
        heading = figure_title(model, what)
    else:
        heading = (f"criteria model: {what}\njudged with the characterization of the "
                   f"{versions[0][1].device}")
    fig.suptitle(heading, fontsize=10)
    return fig


# The results page's figures (kernelcast.evaluation.results draws them through these).

def _page_figure(size, rows: int, cols: int):
    """A figure of rows × cols axes laid out by tight_layout, as the results page's
    figures are."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size)
    FigureCanvasAgg(fig)
    return fig, fig.subplots(rows, cols, squeeze=False)


def _write_page_figure(fig, path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    return path


def random_kernels_figure(docs: list, labels: dict, path) -> Path:
    """Predicted against measured run time of the random kernels (the Pöppl–Herz slides'
    figures), log-log, a panel per model (columns: those of *labels*, model name to its
    label, fitted on some device) and device (rows: *docs*, (label, random-eval
    document) pairs), realistic and unrestricted sets in two colours, the lines 1×, 0.7×
    and 1.3×. Written to *path*."""
    import numpy as np

    models = [m for m in labels if any("sets" in d["models"].get(m, {}) for _, d in docs)]
    fig, axes = _page_figure((3 * len(models), 3 * len(docs)), len(docs), len(models))
    for row, (label, doc) in enumerate(docs):
        for col, model in enumerate(models):
            ax = axes[row][col]
            entry = doc["models"].get(model, {})
            for set_name, colour in (("realistic", "tab:blue"), ("unrestricted", "tab:orange")):
                entry_set = entry.get("sets", {}).get(set_name, {})
                measured = np.asarray(entry_set.get("measured_s", []))
                ratios = np.array([np.nan if r is None else r
                                   for r in entry_set.get("ratios", [])], dtype=float)
                keep = (ratios > 0) & np.isfinite(ratios)
                if keep.any():
                    ax.loglog(measured[keep] * 1e6, measured[keep] * ratios[keep] * 1e6, ".",
                              ms=2, alpha=0.5, color=colour, label=set_name)
            if not ax.has_data():
                ax.text(0.5, 0.5, "not fitted on this device", ha="center", va="center",
                        fontsize=7, transform=ax.transAxes)
                ax.set_xticks([])
                ax.set_yticks([])
                ax.set_title(f"{labels[model]}\n{label}", fontsize=8)
                continue
            low, high = ax.get_xlim()
            xs = np.array([low, high])
            ax.plot(xs, xs, "k-", lw=0.5)
            ax.plot(xs, 0.7 * xs, "k:", lw=0.5)
            ax.plot(xs, 1.3 * xs, "k:", lw=0.5)
            ax.set_ylabel("predicted µs", fontsize=7)
            ax.set_title(f"{labels[model]}\n{label}", fontsize=8)
            ax.set_xlabel("measured µs", fontsize=7)
            ax.tick_params(labelsize=6)
            if row == 0 and col == 0:
                ax.legend(fontsize=6)
    fig.tight_layout()
    return _write_page_figure(fig, path)


def characterization_figure(panels: list, path) -> Path:
    """The criteria model's characterization functions over their samples (its paper's
    Figure 4, and the other three): a panel per (title, x label, [(label, function)]) of
    *panels*, each function a monotone interpolation with its samples as dots. Written
    to *path*."""
    import numpy as np

    fig, axes = _page_figure((3.2 * len(panels), 2.8), 1, len(panels))
    for ax, (title, xlabel, functions) in zip(axes[0], panels):
        for label, f in functions:
            r = np.linspace(f.x[0], f.x[-1], 200)
            ax.plot(r, f(r), "-", lw=1, label=label)
            ax.plot(f.x, f.y, "o", ms=3, color=ax.lines[-1].get_color())
        ax.set_title(title, fontsize=8)
        ax.set_xlabel(xlabel, fontsize=7)
        ax.tick_params(labelsize=6)
        if len(functions) > 1:
            ax.legend(fontsize=6)
    fig.tight_layout()
    return _write_page_figure(fig, path)


def tuning_methodology_figure(doc: dict, path, label=str) -> Path:
    """Score curves of the search strategies over the first 20 measurements, a panel per
    family of *doc* (benchmarks/tuning_methodology.py's document): Kernel Tuner's
    strategies in grey, kernelcast's guided searches in colour, named by *label* (a
    function of the search's name). Written to *path*."""
    families = list(doc["families"])
    cols = 4
    rows = (len(families) + cols - 1) // cols
    fig, axes = _page_figure((3.2 * cols, 2.7 * rows), rows, cols)
    colours = {}
    for i, name in enumerate(families):
        ax = axes[i // cols][i % cols]
        e = doc["families"][name]
        for search, r in e["searches"].items():
            curve = r.get("score", [])[:20]
            if not curve:
                continue
            xs = range(1, len(curve) + 1)
            if not search.startswith("kernelcast:"):
                ax.plot(xs, curve, color="0.75", lw=0.8,
                        label="Kernel Tuner strategies" if i == 0 and not colours.get("kt")
                        else None)
                colours["kt"] = True
            elif search.endswith("+feedback"):
                ax.plot(xs, curve, lw=1.2, label=label(search) if i == 0 else None)
        ax.axhline(0, color="k", lw=0.5)
        ax.axhline(1, color="k", lw=0.5, ls=":")
        ax.set_ylim(-1.0, 1.05)
        ax.set_title(f"{name} ({e['variants']} variants, {e['within_5_percent']} within 5%)",
                     fontsize=8)
        ax.set_xlabel("measurements", fontsize=7)
        ax.set_ylabel("score (0 random, 1 best)", fontsize=7)
        ax.tick_params(labelsize=6)
    for j in range(len(families), rows * cols):
        axes[j // cols][j % cols].axis("off")
    fig.legend(loc="lower center", fontsize=7, ncol=4)
    fig.suptitle("Search strategies on spaces measured exhaustively on an H100 "
                 "(benchmarks/tuning_methodology.py)", fontsize=9)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return _write_page_figure(fig, path)
