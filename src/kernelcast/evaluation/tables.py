"""Table 1 of any model (Stevens & Klöckner §5: per case, predicted and measured seconds
and the relative error) and every model's Table 1 side by side on the same cases.

Public names: table1, side_by_side, side_by_side_summary.
"""

from __future__ import annotations

import pandas as pd

from kernelcast.metrics import relative_errors, summarize

_ORDER = ["kernel_class", "measured_s"]


def table1(model, dataset, details: bool = False) -> pd.DataFrame:
    """Per case of *dataset*: its information, ``predicted_s``, ``measured_s`` and
    ``rel_error``, sorted by kernel and measured time. With *details*, the model's
    ``details`` per case (Hong–Kim's regime, verdict, MWP, CWP, N) as more columns."""
    predicted = model.predict_dataset(dataset)
    table = dataset.info.assign(predicted_s=predicted, measured_s=dataset.seconds,
                                rel_error=relative_errors(predicted, dataset.seconds))
    if details:
        extra = pd.DataFrame([_details(model, dataset, i) for i in range(len(dataset))])
        table = pd.concat([table, extra], axis=1)
    return table.sort_values(_ORDER, kind="stable").reset_index(drop=True)


def _details(model, dataset, i) -> dict:
    return model.details(dataset.properties(i), dataset.params(i))


def side_by_side(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per case: its information, status and measured time, then each model's
    predicted seconds (``<model>``) and relative error (``<model> error``). *tables* maps
    model names to their Table 1 on the same dataset."""
    names = list(tables)
    first = tables[names[0]]
    keep = [c for c in ("case_name", "suite", "kernel_class", "variant", "dtype", "params",
                        "status", "measured_s") if c in first]
    result = first[keep].copy()
    for name in names:
        table = tables[name].set_index("case_name").loc[result.case_name]
        result[name] = table.predicted_s.to_numpy()
        result[f"{name} error"] = table.rel_error.to_numpy()
    return result


def side_by_side_summary(tables: dict[str, pd.DataFrame], by: str = "kernel_class"
                         ) -> pd.DataFrame:
    """Geometric-mean relative error per group, then overall, one column per model (NaN
    where a model's table has no such group, as in cross-validations over different
    suites)."""
    frame = pd.DataFrame({name: summarize(table, by).geomean_rel_error
                          for name, table in tables.items()})
    return frame.loc[[*(g for g in frame.index if g != "overall"), "overall"]]
