"""Readable results: Table 1 and Table 2 of the paper for any model, every model side by
side, cross-validation summaries, as text, markdown and CSV, and figures. The one place
that formats tables.

Public names: format_seconds, format_table1, format_table2, format_summary,
format_side_by_side, format_side_by_side_summary, print_evaluation, write_report.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from kernelcast.evaluation.tables import side_by_side, side_by_side_summary
from kernelcast.metrics import summarize


def _params(p: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(p.items()))


def format_seconds(s: float) -> str:
    """Seconds with a readable unit: 236 µs, 1.5 ms."""
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6)):
        if abs(s) >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s * 1e9:.3g} ns"


def table1_frame(table: pd.DataFrame) -> pd.DataFrame:
    """Table 1 for reading; a model's details (Hong–Kim's case and bottleneck) too."""
    frame = pd.DataFrame({
        "kernel": table.kernel_class, "sizes": table.params.map(_params),
        "predicted": table.predicted_s.map(format_seconds),
        "measured": table.measured_s.map(format_seconds),
        "rel. error": table.rel_error.map(lambda e: f"{e:.1%}")})
    for column, title in (("regime", "case"), ("verdict", "bottleneck")):
        if column in table:
            frame[title] = table[column]
    return frame


def table2_frame(model) -> pd.DataFrame:
    """The weights of a weighted model (Table 2), by property name."""
    units = model.feature_units()
    rows = sorted(model.weights_.items())
    return pd.DataFrame({"property": [n for n, _ in rows],
                         "weight (s)": [f"{w:.3e}" for _, w in rows],
                         "per": [units.get(n, "") for n, _ in rows]})


def summary_frame(summary: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"kernel": summary.index, "cases": summary.cases.astype(int),
                         "geo. mean rel. error": summary.geomean_rel_error.map(
                             lambda e: f"{e:.1%}"),
                         "max rel. error": summary.max_rel_error.map(lambda e: f"{e:.1%}")})


def _markdown(frame: pd.DataFrame) -> str:
    head = "| " + " | ".join(frame.columns) + " |"
    rule = "| " + " | ".join("---" for _ in frame.columns) + " |"
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(False)]
    return "\n".join([head, rule, *body])


def _text(frame: pd.DataFrame) -> str:
    return frame.to_string(index=False)


def format_table1(table, markdown=False) -> str:
    return (_markdown if markdown else _text)(table1_frame(table))


def format_summary(summary, markdown=False) -> str:
    return (_markdown if markdown else _text)(summary_frame(summary))


def format_table2(model, markdown=False) -> str:
    return (_markdown if markdown else _text)(table2_frame(model))


def _percent(e) -> str:
    return "–" if pd.isna(e) else f"{e:.1%}"


def format_side_by_side(tables: dict, markdown=False) -> str:
    """Every case once: measured, then each model's prediction and relative error."""
    frame = side_by_side(tables)
    out = pd.DataFrame({"kernel": frame.kernel_class, "sizes": frame.params.map(_params),
                        "measured": frame.measured_s.map(format_seconds)})
    for name in tables:
        out[name] = frame[name].map(format_seconds)
        out[f"{name} error"] = frame[f"{name} error"].map(_percent)
    return (_markdown if markdown else _text)(out)


def format_side_by_side_summary(tables: dict, markdown=False) -> str:
    """Geometric-mean relative error per kernel and overall, a column per model."""
    summary = side_by_side_summary(tables)
    cases = summarize(next(iter(tables.values()))).cases.astype(int)
    out = pd.DataFrame({"kernel": summary.index, "cases": cases.loc[summary.index]})
    for name in summary.columns:
        out[name] = summary[name].map(_percent)
    return (_markdown if markdown else _text)(out)


def print_evaluation(model, tables: dict, cv: dict | None = None) -> None:
    """What `kernelcast evaluate` prints: Table 1 of one model (with Table 2 of a weighted
    model) or every model side by side, and cross-validation summaries."""
    prov = model.provenance_
    backend = f" ({prov['backend']})" if prov.get("backend") else ""
    if len(tables) == 1:
        table = tables[model.name]
        origin = (f"fitted on {prov.get('cases')} cases of the "
                  f"{' and '.join(prov.get('suites') or [])} suites"
                  if hasattr(model, "weights_") else model.fit_report_.get("criterion", ""))
        print(f"Table 1: {model.name} model on {prov['device']}{backend}, {origin}\n")
        print(format_table1(table))
        print("\ngeometric mean of relative error per kernel\n")
        print(format_summary(summarize(table)))
        if hasattr(model, "weights_"):
            print("\nTable 2: weights\n")
            print(format_table2(model))
            if model.fit_report_.get("negative_weights"):
                print(f"\nnegative weights (the paper's unconstrained fit allows them): "
                      f"{', '.join(model.fit_report_['negative_weights'])}; --nonnegative "
                      "forbids them")
    else:
        print(f"Table 1 of every model on {prov['device']}{backend}, on the same "
              f"{len(next(iter(tables.values())))} measured cases\n")
        print(format_side_by_side(tables))
        print("\ngeometric mean of relative error per kernel\n")
        print(format_side_by_side_summary(tables))
    if cv:
        print("\nleave-one-class-out cross-validation over the classes each model is "
              "fitted on: geometric mean of relative error\n")
        print(format_side_by_side_summary(cv))


def write_report(out, model, table: pd.DataFrame, cv: pd.DataFrame | None = None,
                 breakdowns: dict[str, dict[str, float]] | None = None) -> list[Path]:
    """Markdown and CSV tables and PNG figures under *out*; returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    prov = model.provenance_
    summary = summarize(table)
    md = [f"# kernelcast report: {prov['device']} ({prov['backend']}, driver "
          f"{prov['driver']})", "",
          f"The {model.name} model, fitted on {prov.get('cases')} cases of the "
          f"{' and '.join(prov.get('suites') or [])} suites; kernelcast "
          f"{prov.get('kernelcast_version', '')}.", "",
          "## Table 1: test kernels, predicted and measured", "", format_table1(table, True),
          "", format_summary(summary, True)]
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
    weights = table2_frame(model) if hasattr(model, "weights_") else None
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
