"""Relative error and its summaries. Relative error is |predicted − measured| / measured;
summaries use the geometric mean, as Stevens & Klöckner do.

Public names: relative_errors, geometric_mean, summarize.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas


def relative_errors(predicted, measured) -> np.ndarray:
    """|predicted - measured| / measured, elementwise."""
    predicted, measured = np.asarray(predicted, float), np.asarray(measured, float)
    return np.abs(predicted - measured) / measured


def geometric_mean(values) -> float:
    """exp(mean(log v)), with values below 1e-12 counted as 1e-12 (an exact prediction
    would otherwise send it to zero); NaN for no values."""
    values = np.clip(np.asarray(values, float), 1e-12, None)
    return float(np.exp(np.log(values).mean())) if len(values) else float("nan")


def summarize(table: pandas.DataFrame, by: str = "kernel_class",
              column: str = "rel_error") -> pandas.DataFrame:
    """Cases, geometric mean and max of relative error per group and overall."""
    import pandas as pd  # imported when needed: the models, which every command line
    # builds on, use the rest

    groups = table.groupby(by)[column]
    summary = pd.DataFrame({"cases": groups.size(), "geomean_rel_error": groups.agg(
        geometric_mean), "max_rel_error": groups.max()})
    summary.loc["overall"] = [len(table), geometric_mean(table[column]),
                              table[column].max()]
    return summary
