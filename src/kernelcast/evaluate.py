"""Fitting and evaluating the linear model on stored measurements (paper §4.3, §5).

Rows of a measurement store are turned back into suite cases, their kernels' properties
extracted once per kernel and evaluated at each row's sizes, and paired with the measured
minimum times. From these: a device profile fitted on the measurement suite
(``fit_profile``), the paper's Table 1 for the test suite (``table1``), and
leave-one-class-out cross-validation (``cross_validate``).

Relative error is |predicted − measured| / measured; summaries use the geometric mean, as
the paper does.

Public names: predict, explain, PropertyCache, case_from_row, dataset, fit_profile, table1,
summarize, cross_validate, geometric_mean, timing_noise.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from kernelcast.version import __version__
from kernelcast.errors import KernelcastError
from kernelcast.models.features import features, fit_suites
from kernelcast.models.linear import LinearModel, geometric_mean, relative_errors
from kernelcast.models.overlap import OVERLAP_Q, OverlapModel, term_group
from kernelcast.models.profile import Profile
from kernelcast.properties import Properties, extract_properties
from kernelcast.suites.suite import Case

TIMED = ("ok", "unstable")


def _values(knl_or_props, params, model) -> dict[str, float]:
    props = knl_or_props if isinstance(knl_or_props, Properties) else extract_properties(
        knl_or_props)
    return features(props, params, model)


def predict(knl, params: dict, profile: Profile) -> float:
    """Predicted run time in seconds of *knl* (a Loopy kernel, or its Properties) at
    *params* on the profile's device."""
    return profile.predict_values(_values(knl, params, profile.model))


def explain(knl, params: dict, profile: Profile) -> dict[str, float]:
    """Seconds contributed by each property (weight × count), largest first; they sum to
    ``predict``."""
    parts = profile.contributions(_values(knl, params, profile.model))
    return dict(sorted(parts.items(), key=lambda kv: -abs(kv[1])))


class PropertyCache:
    """Properties of suite kernels, extracted once per kernel."""

    def __init__(self):
        self._props: dict[str, Properties] = {}

    def properties(self, case: Case) -> Properties:
        if case.kernel_name not in self._props:
            self._props[case.kernel_name] = extract_properties(case.kernel())
        return self._props[case.kernel_name]

    def values(self, case: Case, model: str = "paper") -> dict[str, float]:
        return features(self.properties(case), case.params, model)


def case_from_row(row: dict) -> Case | None:
    """The suite case a store row measured, or None for rows of no suite."""
    from kernelcast.suites.paper import get_suite

    if not row.get("suite") or not row.get("kernel_class"):
        return None
    kclass = get_suite(row["suite"]).kernel_class(row["kernel_class"])
    return Case(row["suite"], kclass, row["variant"] or "", row["dtype"],
                tuple(row["group_size"]), row["p"], row["t"], dict(row["params"]))


def dataset(rows: list[dict], suite: str | tuple[str, ...], cache: PropertyCache | None = None,
            statuses=TIMED, model: str = "paper"
            ) -> tuple[pd.DataFrame, np.ndarray, pd.DataFrame]:
    """(*model*'s features, measured seconds, row information) for the timed rows of
    *suite* (a name or a tuple of names)."""
    cache = cache or PropertyCache()
    suites = (suite,) if isinstance(suite, str) else tuple(suite)
    values, times, info = [], [], []
    for row in rows:
        if row["suite"] not in suites or row["status"] not in statuses:
            continue
        case = case_from_row(row)
        values.append(cache.values(case, model))
        times.append(row["min_s"])
        info.append({"case_name": row["case_name"], "kernel_class": row["kernel_class"],
                     "variant": row["variant"], "dtype": row["dtype"],
                     "params": row["params"], "status": row["status"]})
    if not values:
        raise KernelcastError(f"the store has no timed rows of the {' or '.join(suites)} "
                              "suite")
    X = pd.DataFrame(values).fillna(0.0)
    X = X.loc[:, (X != 0).any(axis=0)]
    return X, np.array(times), pd.DataFrame(info)


def timing_noise(rows: list[dict], suites: tuple[str, ...], statuses=TIMED) -> float:
    """The median over the timed rows of *suites* of median/minimum time − 1: how far a
    repeated timing strays, the error below which a fit cannot tell misfit from noise
    (about 1% on the H100 and H200). At least 0.1%."""
    spreads = [row["median_s"] / row["min_s"] - 1 for row in rows
               if row["suite"] in suites and row["status"] in statuses]
    return max(float(np.median(spreads)), 1e-3) if spreads else 1e-3


def _log_scale(rows, suites, model, statuses=TIMED) -> float | None:
    """kernelcast's model is fitted in log space at the timing noise, the paper's not."""
    return timing_noise(rows, suites, statuses) if model == "kernelcast" else None


def _overlap(model) -> float | None:
    """kernelcast's model overlaps per-work-item terms and totals, the paper's adds them."""
    return OVERLAP_Q if model == "kernelcast" else None


def _fit(X, y, nonnegative, log_scale=None, overlap=None, compute_units=None):
    if overlap is not None:
        return OverlapModel(overlap, log_scale, compute_units).fit(X, y)
    return LinearModel(nonnegative=nonnegative, log_scale=log_scale).fit(X, y)


def _weights(model) -> dict[str, float]:
    return {name: float(w) for name, w in zip(model.feature_names_in_, model.coef_, strict=True)
            if term_group(name) != "context"}


def fit_profile(store, suite: str = "measurement", nonnegative: bool = False,
                cache: PropertyCache | None = None, statuses=TIMED,
                model: str = "paper") -> Profile:
    """Fit *model* to the rows of *store* (a kernelcast Store) of measurement suite *suite*
    and, for the kernelcast model, of the extension suite. The kernelcast model is always
    fitted with non-negative weights (kernelcast.models.features says why), in log space
    at the store's timing noise (kernelcast.models.linear says why), with the work-items
    the device holds at once fitted from the compute units the store records
    (kernelcast.models.overlap)."""
    suites = fit_suites(model, suite)
    nonnegative = nonnegative or model == "kernelcast"
    rows = store.rows()
    X, y, _info = dataset(rows, suites, cache, statuses, model)
    log_scale = _log_scale(rows, suites, model, statuses)
    kind, overlap = model, _overlap(model)
    model = _fit(X, y, nonnegative, log_scale, overlap, store.compute_units)
    errors = relative_errors(model.predict(X), y)
    identity = store.identity
    resident = getattr(model, "resident_items_", None)
    return Profile(
        weights=_weights(model),
        device=identity["device"], driver=identity["driver"], backend=identity["backend"],
        suite=suite, store=str(store.path.resolve()), model=kind,
        kernelcast_version=__version__, overlap=overlap,
        resident_items=None if resident is None else int(resident),
        fit={"suites": list(suites), "cases": len(y), "nonnegative": nonnegative,
             "criterion": ("relative least squares" if log_scale is None else
                           f"log error, soft L1 at the timing noise {log_scale:.2%}"
                           + ("" if overlap is None else
                              f"; per-work-item terms and totals overlap, q = {overlap}")
                           + ("" if resident is None else
                              f", in waves of {int(resident)} work-items")),
             "negative_weights": model.negative_weights_,
             "training_geomean_rel_error": geometric_mean(errors),
             "training_max_rel_error": float(errors.max())})


def table1(profile: Profile, store, suite: str = "test",
           cache: PropertyCache | None = None, other_device: bool = False) -> pd.DataFrame:
    """The paper's Table 1: per test case, predicted and measured seconds and the
    relative error. A store of another device is refused unless *other_device* (to see
    how one GPU's profile predicts another)."""
    if store.identity["device"] != profile.device and not other_device:
        raise KernelcastError(f"the profile is for {profile.device}, the store holds "
                              f"measurements of {store.identity['device']}")
    X, y, info = dataset(store.rows(), suite, cache, model=profile.model)
    predicted = np.array([profile.predict_values(dict(row)) for _, row in X.iterrows()])
    table = info.assign(predicted_s=predicted, measured_s=y,
                        rel_error=relative_errors(predicted, y))
    return table.sort_values(["kernel_class", "measured_s"]).reset_index(drop=True)


def hong_kim_table(hardware, store, suite: str = "test", cache: PropertyCache | None = None,
                   registers: dict | None = None) -> pd.DataFrame:
    """Table 1 of the Hong–Kim model on *hardware* (kernelcast.models.hardware) for the
    timed rows of *suite* in *store*, with its regime, bottleneck verdict, MWP, CWP and
    N per case. *registers* maps kernel names to the registers per thread their compiler
    reported (data/<gpu>/registers.json); without it, registers do not limit occupancy."""
    from kernelcast.models.hong_kim import estimate
    from kernelcast.models.hong_kim_inputs import (local_temporaries, shared_memory_bytes,
                                                   workload)

    cache = cache or PropertyCache()
    temporaries: dict[str, list] = {}
    rows = []
    for row in store.rows():
        if row["suite"] != suite or row["status"] not in TIMED:
            continue
        case = case_from_row(row)
        if case.kernel_name not in temporaries:
            temporaries[case.kernel_name] = local_temporaries(case.kernel())
        shared = shared_memory_bytes(temporaries[case.kernel_name], case.params)
        regs = (registers or {}).get(case.kernel_name, {}).get("registers")
        est = estimate(hardware, workload(cache.properties(case), case.params, shared,
                                          regs))
        rows.append({"case_name": row["case_name"], "kernel_class": row["kernel_class"],
                     "variant": row["variant"], "dtype": row["dtype"],
                     "params": row["params"], "predicted_s": est.seconds,
                     "measured_s": row["min_s"], "regime": est.regime,
                     "verdict": est.verdict, "mwp": est.mwp, "cwp": est.cwp, "n": est.n})
    if not rows:
        raise KernelcastError(f"the store has no timed rows of the {suite} suite")
    table = pd.DataFrame(rows)
    table["rel_error"] = relative_errors(table.predicted_s.to_numpy(),
                                         table.measured_s.to_numpy())
    return table.sort_values(["kernel_class", "measured_s"]).reset_index(drop=True)


def summarize(table: pd.DataFrame, by: str = "kernel_class") -> pd.DataFrame:
    """Geometric mean (and max) of relative error per group and overall."""
    groups = table.groupby(by).rel_error
    summary = pd.DataFrame({"cases": groups.size(), "geomean_rel_error": groups.agg(
        geometric_mean), "max_rel_error": groups.max()})
    summary.loc["overall"] = [len(table), geometric_mean(table.rel_error),
                              table.rel_error.max()]
    return summary


def cross_validate(store, suite: str = "measurement", nonnegative: bool = False,
                   cache: PropertyCache | None = None, model: str = "paper") -> pd.DataFrame:
    """Leave-one-class-out over the classes *model* is fitted from: fit on all other
    classes, predict the held-out one. Returns one row per measured case with its
    relative error."""
    nonnegative = nonnegative or model == "kernelcast"
    rows, suites = store.rows(), fit_suites(model, suite)
    X, y, info = dataset(rows, suites, cache, model=model)
    log_scale, overlap = _log_scale(rows, suites, model), _overlap(model)
    parts = []
    for held_out in sorted(info.kernel_class.unique()):
        test = (info.kernel_class == held_out).to_numpy()
        train_X = X[~test].loc[:, (X[~test] != 0).any(axis=0)]
        model = _fit(train_X, y[~test], nonnegative, log_scale, overlap, store.compute_units)
        test_X = X[test].reindex(columns=train_X.columns, fill_value=0.0)
        unseen = [c for c in X.columns if c not in train_X.columns and (X[test][c] != 0).any()]
        predicted = model.predict(test_X)
        parts.append(info[test].assign(predicted_s=predicted, measured_s=y[test],
                                       rel_error=relative_errors(predicted, y[test]),
                                       unseen_properties=", ".join(unseen)))
    return pd.concat(parts, ignore_index=True)
