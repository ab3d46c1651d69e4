"""Readable results: the paper's Table 1 and Table 2 as text, markdown and CSV, and figures.

Public names: format_table1, format_table2, format_summary, write_report.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from kernelcast.models.profile import Profile
from kernelcast.models.features import FEATURE_UNITS as UNITS


def _params(p: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(p.items()))


def _seconds(s: float) -> str:
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6)):
        if abs(s) >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s * 1e9:.3g} ns"


def table1_frame(table: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({
        "kernel": table.kernel_class, "sizes": table.params.map(_params),
        "predicted": table.predicted_s.map(_seconds), "measured": table.measured_s.map(_seconds),
        "rel. error": table.rel_error.map(lambda e: f"{e:.1%}")})


def table2_frame(profile: Profile) -> pd.DataFrame:
    rows = sorted(profile.weights.items())
    return pd.DataFrame({"property": [n for n, _ in rows],
                         "weight (s)": [f"{w:.3e}" for _, w in rows],
                         "per": [UNITS.get(n, "") for n, _ in rows]})


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


def format_table2(profile, markdown=False) -> str:
    return (_markdown if markdown else _text)(table2_frame(profile))


def write_report(out, profile: Profile, table: pd.DataFrame, summary: pd.DataFrame,
                 cv: pd.DataFrame | None = None, cv_summary: pd.DataFrame | None = None,
                 breakdowns: dict[str, dict[str, float]] | None = None) -> list[Path]:
    """Markdown and CSV tables and PNG figures under *out*; returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    md = [f"# kernelcast report: {profile.device} ({profile.backend}, driver {profile.driver})",
          "", f"Profile fitted on {profile.fit.get('cases')} cases of the {profile.suite} "
          f"suite; kernelcast {profile.kernelcast_version}.", "",
          "## Table 1: test kernels, predicted and measured", "", format_table1(table, True),
          "", format_summary(summary, True), "", "## Table 2: weights", "",
          format_table2(profile, True)]
    if cv_summary is not None:
        suites = profile.fit.get("suites") or [profile.suite]
        md += ["", f"## Leave-one-class-out cross-validation ({' and '.join(suites)} "
               f"suite{'s' if len(suites) > 1 else ''})", "",
               format_summary(cv_summary, True)]
    path = out / "report.md"
    path.write_text("\n".join(md) + "\n", encoding="utf-8")
    written.append(path)
    for name, frame in (("table1.csv", table), ("summary.csv", summary),
                        ("weights.csv", table2_frame(profile)), ("cv.csv", cv)):
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
    ax.set(xlabel="measured (s)", ylabel="predicted (s)", title=profile.device)
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
