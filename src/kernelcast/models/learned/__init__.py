"""The learned model: gradient-boosted trees (LightGBM) over scale-free features of a
kernel's symbolic properties, fitted to measured variants of a training corpus of kernel
families (kernelcast.tune.corpus), for ranking the variants of other kernels.

The paper's and the extended model are fitted to microbenchmarks whose work-groups have
one shape; how a kernel's time moves with its work-group shape, its work per work-item and
its occupancy of the device is what tuning ranks, and no weighted sum of totals captures
it. This model learns that from variants of kernels other than the ones it ranks.

What it predicts is log(seconds per byte of data the launch moves) — ``bytes_read`` +
``bytes_written`` of the extended model's features, which a variant of a kernel does not
change — from features that do not grow with the problem's size (``FEATURES``): the
arithmetic intensity and the data volume (log2), how often each byte is accessed (reuse
through caches), how much of each global access's sector is used, the launch's
work-items, work-group size and work-groups per compute unit (the device's, read from
the measurement store), and per work-item counts of loads, flops, local loads, barriers
and loop-carried chains. The trees' settings are fixed in ``TREE_PARAMS``; a fit is
deterministic (one thread, LightGBM's deterministic mode).

``explain`` splits a prediction into exact parts: the base (the corpus's mean time per
byte times the bytes moved) and, feature by feature in order of effect, what multiplying
by that feature's factor (e to its SHAP value) adds.

A fit records each feature's training range (min, max over the fitted rows); a profile
keeps it with the booster's sha256. ``predict`` warns (ExtrapolationWarning) when a
feature lies outside its range, and when the same kernel with every size parameter
multiplied (``GROWTH``) is predicted to take less time: the corpus measured each family
at one size, so between the families' sizes the trees need not grow with the work. A
profile's booster is read as kernelcast.models.learned.booster describes (checksum, then
a separate process, then this one).

Public names: LearnedModel, FEATURES, TREE_PARAMS, GROWTH, learned_features.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from kernelcast.errors import ExtrapolationWarning, KernelcastError, ProfileError
from kernelcast.metrics import geometric_mean, relative_errors
from kernelcast.models.base import Model, Parameter, as_properties, register
from kernelcast.models.learned.booster import checksum, quiet_native, vet
from kernelcast.properties.vocabulary import OP_KINDS, PROPERTY_NAMES

FEATURES = (
    "log2_bytes_moved", "log2_intensity", "reuse", "global_utilization",
    "broadcast_share", "store_share", "f64_share", "special_share",
    "log2_work_items", "log2_group_size", "log2_groups_per_unit",
    "item_global_loads", "item_strided_loads", "item_flops", "item_local_loads",
    "item_barriers", "item_recurrence", "local_conflicts_per_access",
)

#: LightGBM's settings: small trees (7 leaves) and 300 rounds, chosen by leave-one-family-out
#: cross-validation on the training corpus alone (docs/history.md); one thread and
#: LightGBM's deterministic mode, so that two fits are bit-identical.
TREE_PARAMS = {
    "objective": "regression", "learning_rate": 0.05, "num_leaves": 7,
    "min_data_in_leaf": 10, "lambda_l2": 1.0, "deterministic": True,
    "force_row_wise": True, "num_threads": 1, "seed": 0, "verbose": -1,
    "feature_pre_filter": False,
}
ROUNDS = 300

#: Multipliers of every size parameter at which ``predict`` checks that the time grows:
#: 2 finds a step between neighbouring sizes; 256 one across the corpus's data volumes
#: (2^17 to 2^29.6 bytes, one size per family), where the trees' size splits lie.
GROWTH = (2, 256)

_FLOPS = tuple(n for n in PROPERTY_NAMES if n.split("_")[0] in OP_KINDS)
_SPECIAL = tuple(n for n in _FLOPS if n.split("_")[0] in ("div", "pow", "special"))


def _utilization(stride_class: str) -> float:
    """The share of the fetched sectors an access class uses: 1 for strides 0 and 1,
    k/N for "kofN", k/8 for "kofmore", 1/8 for irregular."""
    if stride_class in ("s0", "s1"):
        return 1.0
    if stride_class == "irregular":
        return 0.125
    k, _, n = stride_class.partition("of")
    return int(k) / (8 if n == "more" else int(n))


def _global_accesses(values: dict) -> list[tuple[str, float, int, str]]:
    """(direction, count, bytes per access, stride class) of every global access kind."""
    out = []
    for name, count in values.items():
        parts = name.split("_")
        if count and parts[0] in ("load", "store") and parts[1] == "global":
            out.append((parts[0], count, int(parts[2]) // 8, parts[3]))
    return out


def learned_features(props, params: dict, compute_units: int) -> dict[str, float]:
    """The FEATURES of a kernel (its Properties) at *params* on a device with
    *compute_units*, and ``bytes_moved`` (the scale the model predicts per unit of)."""
    from kernelcast.models.extended.features import features

    v = features(props, params)
    moved = max(v.get("bytes_read", 0.0) + v.get("bytes_written", 0.0), 1.0)
    flops = sum(v.get(n, 0.0) for n in _FLOPS)
    accesses = _global_accesses(v)
    accessed = sum(c * b for _, c, b, _ in accesses) or 1.0
    loads = sum(c for d, c, _, _ in accesses if d == "load")
    strided = sum(c for d, c, _, s in accesses if d == "load" and s not in ("s0", "s1"))
    items = max(v["work_items"], 1.0)
    groups = max(v.get("workgroup", 1.0), 1.0)
    local = sum(c for n, c in v.items() if "_local_" in n and n.split("_")[0] in (
        "load", "store"))
    recurrence = sum(c for n, c in v.items() if n.startswith(("item_recurrence_",
                                                             "item_serial_")))
    return {
        "bytes_moved": moved,
        "log2_bytes_moved": math.log2(moved),
        "log2_intensity": math.log2((flops + 1.0) / moved),
        "reuse": accessed / moved,
        "global_utilization": sum(c * b * _utilization(s) for _, c, b, s in accesses)
        / accessed,
        "broadcast_share": sum(c * b for _, c, b, s in accesses if s == "s0") / accessed,
        "store_share": v.get("bytes_written", 0.0) / moved,
        "f64_share": sum(v.get(n, 0.0) for n in _FLOPS if n.endswith("f64"))
        / max(flops, 1.0),
        "special_share": sum(v.get(n, 0.0) for n in _SPECIAL) / max(flops, 1.0),
        "log2_work_items": math.log2(items),
        "log2_group_size": math.log2(items / groups),
        "log2_groups_per_unit": math.log2(groups / compute_units),
        "item_global_loads": loads / items,
        "item_strided_loads": strided / items,
        "item_flops": flops / items,
        "item_local_loads": v.get("item_local_loads_32", 0.0)
        + v.get("item_local_loads_64", 0.0),
        "item_barriers": v.get("item_barriers", 0.0),
        "item_recurrence": recurrence,
        "local_conflicts_per_access": v.get("local_conflicts", 0.0) / max(local, 1.0),
    }


@register
class LearnedModel(Model):
    """The learned model; see the module docstring. *rounds*: boosting rounds."""

    name = "learned"
    summary = ("gradient-boosted trees over scale-free property features, fitted to "
               "measured variants of a training corpus (for tuning)")
    workload = "variant"

    features = FEATURES  # the trees' inputs, in order
    per = "byte moved"  # what the trees predict the log of seconds per
    tree_params = TREE_PARAMS

    parameters = (Parameter("rounds", "count", f"boosting rounds (default {ROUNDS})"),)

    def __init__(self, *, rounds: int = ROUNDS):
        self.rounds = rounds

    @classmethod
    def fit_suites(cls, suite: str) -> tuple[str, ...]:
        raise KernelcastError("the learned model is fitted from measured variants of the "
                              "tuning corpus (benchmarks/tuning_gpu.py --corpus; "
                              "benchmarks/tuning_learned.py), not from a suite")

    def _units(self) -> int:
        units = self.provenance_.get("compute_units") if hasattr(self, "provenance_") \
            else None
        return int(units or 1)

    def _row(self, props, params, units) -> tuple[np.ndarray, float]:
        f = learned_features(props, params, units)
        return np.array([f[n] for n in FEATURES], dtype=float), f["bytes_moved"]

    def _workload_row(self, workload, params) -> tuple[np.ndarray, float]:
        """(features, the scale the trees predict a multiple of) of *workload*."""
        return self._row(as_properties(workload), params, self._units())

    def _case_row(self, dataset, i: int, fitting: bool) -> tuple[np.ndarray, float]:
        units = int(dataset.identity.get("compute_units") or 1) if fitting else self._units()
        return self._row(dataset.properties(i), dataset.params(i), units)

    def _matrix(self, dataset, fitting: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(features, scales) of every case of *dataset*."""
        rows = [self._case_row(dataset, i, fitting) for i in range(len(dataset))]
        return np.array([r[0] for r in rows]), np.array([r[1] for r in rows])

    def fit(self, dataset) -> LearnedModel:
        import lightgbm as lgb

        if not isinstance(self.rounds, int) or isinstance(self.rounds, bool) \
                or self.rounds < 1:
            raise KernelcastError(f"rounds must be a positive integer, not {self.rounds!r}")
        self._before_fit(dataset)
        X, moved = self._matrix(dataset, fitting=True)
        y = np.log(dataset.seconds / moved)
        with quiet_native():
            train = lgb.Dataset(X, y, feature_name=list(self.features), free_raw_data=False)
            booster = lgb.train(self.tree_params, train, num_boost_round=self.rounds)
        self.booster_ = booster.model_to_string()
        self.ranges_ = {n: [float(X[:, i].min()), float(X[:, i].max())]
                        for i, n in enumerate(self.features)}
        self._booster = booster
        self._set_fitted(dataset, {})
        errors = relative_errors(self.predict_dataset(dataset), dataset.seconds)
        self.fit_report_ = {
            "criterion": f"LightGBM regression of log(seconds per {self.per}), "
                         f"{self.rounds} rounds",
            # boosting runs its rounds to the end: no solver whose convergence could fail
            "solver": [],
            "families": sorted(set(dataset.info.kernel_class)),
            "training_geomean_rel_error": geometric_mean(errors),
            "training_max_rel_error": float(errors.max())}
        return self

    def _model(self):
        import lightgbm as lgb

        if getattr(self, "_booster", None) is None:
            vet(self.booster_, self._probe_rows())  # a no-op after restore's check
            with quiet_native():
                self._booster = lgb.Booster(model_str=self.booster_)
        return self._booster

    def _raw(self, X: np.ndarray, **options) -> np.ndarray:
        """The trees' values (or contributions) for the rows of *X*, LightGBM silenced."""
        booster = self._model()
        with quiet_native():
            return booster.predict(X, num_threads=1, verbosity=-1, **options)

    def _before_fit(self, dataset) -> None:
        """Anything a fit needs to know of *dataset* before its features."""

    def _log_parts(self, workload, params) -> tuple[np.ndarray, float, np.ndarray]:
        """(features, scale, the trees' contributions) of *workload*."""
        self.check_fitted()
        x, moved = self._workload_row(workload, params)
        return x, moved, self._raw(x[None, :], pred_contrib=True)[0]

    def seconds(self, workload, params: dict) -> float:
        self.check_fitted()
        x, moved = self._workload_row(workload, params)
        return float(moved * math.exp(self._raw(x[None, :])[0]))

    def predict(self, workload, params: dict) -> float:
        """Seconds, as ``Model.predict``; an ExtrapolationWarning where a feature lies
        outside its training range or more work (every size parameter times a factor of
        ``GROWTH``) is predicted to take less time. The larger sizes go through the trees
        in the same call."""
        self.check_fitted()
        props, units = as_properties(workload), self._units()
        x, moved = self._row(props, params, units)
        rows, scales, larger = [x], [moved], []
        for factor in GROWTH if params else ():
            grown = {name: value * factor for name, value in params.items()}
            try:
                row, grown_moved = self._row(props, grown, units)
            except KernelcastError:  # sizes the kernel's assumptions refuse: no check
                continue
            rows.append(row)
            scales.append(grown_moved)
            larger.append(factor)
        times = [scale * math.exp(raw) for scale, raw in  # math.exp, as in ``seconds``
                 zip(scales, self._raw(np.array(rows)), strict=True)]
        seconds = self._checked(times[0], workload, params)
        where = f"{getattr(props, 'kernel_name', None) or 'the kernel'} at {params}"
        outside = self._outside(x)
        if outside:
            warnings.warn(f"the learned model extrapolates for {where}: "
                          f"{'; '.join(outside)} (its trees carry the edge's value "
                          "beyond it)", ExtrapolationWarning, stacklevel=2)
        for factor, more in zip(larger, times[1:], strict=True):
            if more < seconds:
                from kernelcast.units import format_seconds

                warnings.warn(f"the learned model predicts less time for more work: "
                              f"{format_seconds(seconds)} for {where} but "
                              f"{format_seconds(more)} with every size ×{factor}; it was "
                              "fitted at one size per corpus family and does not follow "
                              "this kernel across sizes", ExtrapolationWarning,
                              stacklevel=2)
                break
        return seconds

    def _outside(self, x: np.ndarray) -> list[str]:
        """A phrase for each feature of *x* beyond its training range: its name, value
        and range."""
        out = []
        for name, value in zip(self.features, x, strict=True):
            lo, hi = self.ranges_[name]
            if not lo <= value <= hi:
                out.append(f"{name} {value:.4g} is outside its training range "
                           f"{lo:.4g} … {hi:.4g}")
        return out

    def _probe_rows(self) -> list[list[float]]:
        """Rows at the training ranges' low ends, high ends and middles, which a
        separate process predicts before this one reads a profile's booster."""
        lo = [self.ranges_[n][0] for n in self.features]
        hi = [self.ranges_[n][1] for n in self.features]
        return [lo, hi, [(a + b) / 2 for a, b in zip(lo, hi, strict=True)]]

    def explain(self, workload, params: dict) -> dict[str, float]:
        _, moved, contrib = self._log_parts(workload, params)
        return self._parts(moved, contrib)

    def _parts(self, moved: float, contrib: np.ndarray) -> dict[str, float]:
        """The base and, feature by feature in order of effect, what each factor adds."""
        current = moved * math.exp(contrib[-1])
        parts = {"base": current}
        for i in sorted(range(len(self.features)), key=lambda i: -abs(contrib[i])):
            if contrib[i] == 0:
                continue
            after = current * math.exp(contrib[i])
            parts[self.features[i]] = after - current
            current = after
        return dict(sorted(parts.items(), key=lambda kv: -abs(kv[1])))

    def predict_dataset(self, dataset) -> np.ndarray:
        self.check_fitted()
        X, moved = self._matrix(dataset)
        return moved * np.exp(self._raw(X))

    def fitted_state(self) -> dict:
        self.check_fitted()
        return {"features": list(self.features), "booster": self.booster_,
                "checksum": checksum(self.booster_), "ranges": self.ranges_}

    def restore(self, state: dict) -> None:
        """The booster, its checksum and the features' training ranges from a profile;
        a booster whose checksum does not match, or that LightGBM cannot read in a
        separate process, is refused (ProfileError)."""
        booster, names = state.get("booster"), state.get("features")
        if not isinstance(booster, str) or not booster:
            raise KernelcastError("the profile has no booster")
        if names != list(self.features):
            raise KernelcastError("the profile's features are not this kernelcast's "
                                  "(refit it)")
        if "checksum" not in state:
            raise ProfileError("its booster has no checksum (state.checksum): written "
                               "before checksums, or damaged; refit it")
        try:
            sound = state["checksum"] == checksum(booster)
        except UnicodeEncodeError:  # lone surrogates from \ud800-style JSON escapes
            sound = False
        if not sound:
            raise ProfileError("damaged: its booster's checksum does not match; refit or "
                               "restore it")
        self.ranges_ = _ranges(state.get("ranges"), self.features)
        self.booster_ = booster
        self._booster = None
        vet(booster, self._probe_rows())


def _ranges(ranges, features=FEATURES) -> dict[str, list[float]]:
    """A profile's training ranges, checked: [low, high] finite numbers, low <= high,
    for every feature."""
    if not isinstance(ranges, dict) or set(ranges) != set(features):
        raise ProfileError("state.ranges must give [low, high] of every feature "
                           f"({', '.join(features)}); refit it")
    out = {}
    for name in features:
        pair = ranges[name]
        if not (isinstance(pair, list) and len(pair) == 2
                and all(isinstance(v, int | float) and not isinstance(v, bool)
                        and math.isfinite(v) for v in pair) and pair[0] <= pair[1]):
            raise ProfileError(f"state.ranges.{name} is {pair!r}, not [low, high] with "
                               "finite low <= high")
        out[name] = [float(pair[0]), float(pair[1])]
    return out
