"""The learned model on the hardware facts: the same gradient-boosted trees as
kernelcast.models.learned, whose inputs are a launch's predicted counters instead of its
symbolic properties, fitted to thousands of measured variants of random loop families
(kernelcast.tune.random_families) and of the training corpus (kernelcast.tune.corpus).

A launch is summarized by ``launch_summary`` (kernelcast.models.extended.facts: DRAM, L2,
L1 and shared-memory traffic, SASS warp instructions per pipe, waves) and its geometry
(``launch_geometry``: work-groups and work-items per group). The trees predict
log(seconds / floor), where the floor is the time of the launch's DRAM bytes (as a launch
repeated back to back moves them) and warp instructions at the device's peaks
(``floor_seconds``); no prediction is below the floor. ``FACT_FEATURES`` are the floor's
log2, how much of it is memory, and ratios that do not grow with the problem: cache
traffic per DRAM byte, instructions per sector, the instruction mix, resident waves,
the work-group shape and work per work-item.

It predicts from a Loopy kernel (``needs_kernel``), which it compiles; the summaries of a
dataset's cases come from ``SUMMARIES`` (kernelcast.models.extended.facts.SummaryCache),
keyed by the case's name, which benchmarks/learned_facts.py fills from the committed
summaries.

Public names: LearnedFactsModel, FACT_FEATURES, SUMMARIES, launch_geometry,
fact_features.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from kernelcast.errors import ExtrapolationWarning, KernelcastError
from kernelcast.models.base import Parameter, register
from kernelcast.models.extended.facts import (
    SummaryCache,
    floor_seconds,
    peaks,
    warm_dram_share,
)
from kernelcast.models.learned import TREE_PARAMS, LearnedModel

FACT_FEATURES = (
    "log2_floor_seconds", "dram_share_of_floor", "warm_dram_share",
    "log2_l2_per_dram", "log2_l1_per_l2", "log2_shared_per_inst", "log2_inst_per_sector",
    "fp32_share", "fp64_share", "xu_share", "store_share",
    "waves", "log2_workgroups", "log2_group_size", "log2_groups_per_sm",
    "log2_inst_per_item", "log2_l2_per_floor", "log2_l1_per_floor", "log2_inst_per_floor",
    "log2_shared_per_floor", "log2_resident_warps_per_sm",
)

#: LightGBM's settings: the learned model's with 15 leaves and 600 rounds, chosen by
#: 5-fold cross-validation over whole random families of the H100 corpus (7, 15, 31 and
#: 63 leaves: 15.0%, 13.6%, 13.5%, 13.5% held-out error; mean Spearman ρ within a family
#: 0.51, 0.52, 0.51, 0.49); the judged families took no part
FACT_TREE_PARAMS = {**TREE_PARAMS, "num_leaves": 15}
FACT_ROUNDS = 600

#: launch summaries by case name or compiled code; benchmarks load the committed ones
SUMMARIES = SummaryCache()


def launch_geometry(knl, params: dict) -> dict[str, float]:
    """Work-groups and work-items per group of one launch of *knl* at *params*, from
    Loopy's grid (no code generated)."""
    import loopy as lp
    from pymbolic import evaluate

    try:
        grid, block = knl.default_entrypoint.get_grid_size_upper_bounds_as_exprs(
            knl.callables_table)
    except lp.LoopyError:  # a local axis that only a split reduction's code uses
        knl = lp.preprocess_program(knl)
        grid, block = knl.default_entrypoint.get_grid_size_upper_bounds_as_exprs(
            knl.callables_table)
    values = {k: int(v) for k, v in params.items()}
    return {"workgroups": float(math.prod(int(evaluate(g, values)) for g in grid)),
            "group_size": float(math.prod(int(evaluate(b, values)) for b in block))}


def fact_features(summary: dict, hardware) -> dict[str, float]:
    """FACT_FEATURES of a launch's *summary* (``launch_summary`` with ``launch_geometry``)
    on *hardware*, and ``floor_seconds``, the scale the trees predict a multiple of."""
    s = summary
    dram = s["dram_bytes_read"] + s["dram_bytes_written"]
    share = warm_dram_share(dram, hardware.l2_cache_bytes)
    floor = floor_seconds(s, share, hardware)
    peak = peaks(hardware)
    l2 = s["l2_sectors_read"] + s["l2_sectors_written"]
    inst = max(s["inst_executed"], 1.0)
    items = max(s["workgroups"] * s["group_size"], 1.0)
    return {
        "floor_seconds": floor,
        "log2_floor_seconds": math.log2(floor),
        "dram_share_of_floor": dram * share / peak["dram"] / floor,
        "warm_dram_share": share,
        "log2_l2_per_dram": math.log2((32 * l2 + 32) / (dram * share + 32)),
        "log2_l1_per_l2": math.log2((s["l1_sectors"] + 1) / (l2 + 1)),
        "log2_shared_per_inst": math.log2((s["shared_wavefronts"] + 1) / inst),
        "log2_inst_per_sector": math.log2(inst / (s["l1_sectors"] + l2 + 1)),
        "fp32_share": s["inst_fp32"] / inst,
        "fp64_share": s["inst_fp64"] / inst,
        "xu_share": s["inst_xu"] / inst,
        "store_share": s["l2_sectors_written"] / max(l2, 1.0),
        "waves": s["waves"],
        "log2_workgroups": math.log2(max(s["workgroups"], 1.0)),
        "log2_group_size": math.log2(max(s["group_size"], 1.0)),
        "log2_groups_per_sm": math.log2(max(s["workgroups"], 1.0) / hardware.active_sms),
        "log2_inst_per_item": math.log2(32 * inst / items),
        # each count over what the floor's time moves or issues at the peaks
        "log2_l2_per_floor": math.log2((32 * l2 + 32) / (floor * peak["dram"])),
        "log2_l1_per_floor": math.log2((32 * s["l1_sectors"] + 32) / (floor * peak["dram"])),
        "log2_inst_per_floor": math.log2(inst / (floor * peak["issue"])),
        "log2_shared_per_floor": math.log2((s["shared_wavefronts"] + 1)
                                           / (floor * peak["issue"])),
        # warps resident on an SM at once: its occupancy, as the waves count it
        "log2_resident_warps_per_sm": math.log2(
            max(s["group_size"] / 32, 1.0) * max(s["workgroups"], 1.0)
            / (max(s["waves"], 1.0) * hardware.active_sms)),
    }


def summary_with_geometry(name: str, make_kernel, params: dict, hardware) -> dict:
    """The summary of a launch from ``SUMMARIES`` (computed where not known), with its
    geometry added where the summary lacks it."""
    summary = SUMMARIES.summary(name, make_kernel, params, hardware)
    if isinstance(summary, str):  # a failure recorded when the summaries were computed
        raise KernelcastError(f"no hardware facts for {name}: {summary}")
    if "workgroups" not in summary:
        summary.update(launch_geometry(make_kernel(), params))
    return summary


@register
class LearnedFactsModel(LearnedModel):
    """The learned model on the hardware facts; see the module docstring."""

    name = "learned-facts"
    summary = ("gradient-boosted trees over a launch's predicted hardware counters, fitted "
               "to measured variants of random loop families and the training corpus "
               "(for tuning)")
    workload = "variant"
    needs_kernel = True
    features = FACT_FEATURES
    per = "second of the launch's floor at the device's peaks"
    tree_params = FACT_TREE_PARAMS

    parameters = (Parameter("rounds", "count", f"boosting rounds (default {FACT_ROUNDS})"),)

    def __init__(self, *, rounds: int = FACT_ROUNDS):
        super().__init__(rounds=rounds)

    @classmethod
    def fit_suites(cls, suite: str) -> tuple[str, ...]:
        raise KernelcastError("the learned model on the facts is fitted from measured "
                              "variants of random loop families and the tuning corpus "
                              "(benchmarks/corpus_gpu.py; benchmarks/learned_facts.py), "
                              "not from a suite")

    def _hardware(self, dataset=None):
        from kernelcast.models.extended import _hardware_of

        fitted = hasattr(self, "hardware_")
        return _hardware_of(self.hardware_ if fitted else dataset.identity["device"], fitted)

    def _before_fit(self, dataset) -> None:
        from kernelcast.models.extended import _hardware_name

        self.__dict__.pop("hardware_", None)
        self.hardware_ = _hardware_name(self._hardware(dataset))

    def _vector(self, summary, hw) -> tuple[np.ndarray, float]:
        f = fact_features(summary, hw)
        return np.array([f[n] for n in self.features], dtype=float), f["floor_seconds"]

    def _workload_row(self, workload, params) -> tuple[np.ndarray, float]:
        import loopy as lp

        from kernelcast.models.extended import launch_name, loopy_kernel

        knl = loopy_kernel(workload, self.name)
        if not isinstance(knl, lp.TranslationUnit):  # compiling it would fail deep inside
            raise KernelcastError(f"the learned model on the facts predicts a Loopy kernel, "
                                  f"which it compiles, not a {type(workload).__name__}")
        hw = self._hardware()
        return self._vector(summary_with_geometry(launch_name(knl), lambda: knl, params, hw),
                            hw)

    def _case_row(self, dataset, i: int, fitting: bool) -> tuple[np.ndarray, float]:
        case = dataset.cases[i]
        hw = self._hardware(dataset)
        return self._vector(summary_with_geometry(case.kernel_name, case.kernel,
                                                  dataset.params(i), hw), hw)

    def seconds(self, workload, params: dict) -> float:
        """Never below the floor."""
        self.check_fitted()
        x, floor = self._workload_row(workload, params)
        return float(floor * max(1.0, math.exp(self._raw(x[None, :])[0])))

    def predict(self, workload, params: dict) -> float:
        """Seconds, as ``Model.predict``; an ExtrapolationWarning where a feature lies
        outside its training range."""
        self.check_fitted()
        x, floor = self._workload_row(workload, params)
        seconds = self._checked(float(floor * max(1.0, math.exp(self._raw(x[None, :])[0]))),
                                workload, params)
        outside = self._outside(x)
        if outside:
            warnings.warn(f"the learned model on the facts extrapolates at {params}: "
                          f"{'; '.join(outside)} (its trees carry the edge's value "
                          "beyond it)", ExtrapolationWarning, stacklevel=2)
        return seconds

    def explain(self, workload, params: dict) -> dict[str, float]:
        """As the learned model's, from the floor; a launch predicted below its floor
        gets the difference as the part ``floor``."""
        _, floor, contrib = self._log_parts(workload, params)
        parts = self._parts(floor, contrib)
        below = floor - sum(parts.values())
        if below > 0:
            parts["floor"] = below
        return parts

    def predict_dataset(self, dataset) -> np.ndarray:
        self.check_fitted()
        X, floor = self._matrix(dataset)
        return floor * np.maximum(1.0, np.exp(self._raw(X)))

    def fitted_state(self) -> dict:
        return {**super().fitted_state(), "hardware": self.hardware_}

    def restore(self, state: dict) -> None:
        from kernelcast.hardware import known_hardware

        hardware = state.get("hardware")
        if hardware not in known_hardware():
            raise KernelcastError(f"hardware {hardware!r} is not a packaged hardware "
                                  f"description ({', '.join(known_hardware())})")
        super().restore(state)
        self.hardware_ = hardware
