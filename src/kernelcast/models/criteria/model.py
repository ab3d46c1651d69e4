"""The fine-grained model behind the Model protocol (kernelcast.models.base): fitted from a
GPU's microbenchmarks (its characterization functions, latencies and arithmetic
throughput, kernelcast.models.criteria.characterization), it judges a profiled
application (kernelcast.models.criteria.criteria.Application) and predicts how long the
application could take: each launch's measured time over its overall potential speedup,
the gaps between launches gone (§V). ``explain`` gives that time per launch;
``details`` the whole assessment, criteria included. A profile keeps the
characterization (``fitted_state``), so advice needs no GPU.

Public names: CriteriaModel.
"""

from __future__ import annotations

import json
from pathlib import Path

from kernelcast.errors import KernelcastError, ProfileError
from kernelcast.frontends.files import check_regular_file
from kernelcast.models.base import Model, register
from kernelcast.models.criteria.characterization import DeviceCharacterization, characterize
from kernelcast.models.criteria.criteria import (
    MEMTHR_SATURATED,
    Application,
    Assessment,
    assess,
    check_saturation,
)

SUITE = "criteria-microbenchmarks"


@register
class CriteriaModel(Model):
    """The fine-grained model. *saturation*: MEMTHR at or above it counts as 1 in the
    THROUGHPUT/OCCUPANCY criterion (§IV-H's "MemThr ≈ 1")."""

    name = "criteria"
    summary = ("the fine-grained model: optimization criteria and potential speedups "
               "from an Nsight Compute profile, weighted by microbenchmarked functions")
    workload = "profile"

    def __init__(self, *, saturation: float = MEMTHR_SATURATED):
        self.saturation = saturation

    def fit(self, measurements) -> CriteriaModel:
        """Fit to a microbenchmark document (what benchmarks/criteria_microbenchmarks.py
        measure writes), given as a dict or the path of its JSON file."""
        try:
            check_saturation(self.saturation)
        except ValueError as err:
            raise KernelcastError(str(err)) from None
        store = ""
        if isinstance(measurements, str | Path):
            store = str(measurements)
            check_regular_file(store, "microbenchmark document")  # a FIFO would block
            try:
                measurements = json.loads(Path(measurements).read_text(encoding="utf-8"))
            except (OSError, ValueError) as err:
                raise KernelcastError(f"{store}: not a microbenchmark document: {err}") \
                    from None
        if not isinstance(measurements, dict) or "records" not in measurements:
            raise KernelcastError("the criteria model is fitted from the microbenchmarks "
                                  "of benchmarks/criteria_microbenchmarks.py measure")
        try:
            self.device_ = characterize(measurements)
        except (KeyError, ValueError) as err:
            raise KernelcastError(f"the microbenchmarks cannot characterize the GPU: "
                                  f"{err}") from None
        driver = str(measurements.get("nvidia_smi", "")).split(",")[0].strip()
        self.provenance_ = {"device": measurements["device"], "driver": driver,
                            "backend": "cuda", "compute_units": measurements.get("sms"),
                            "suite": SUITE, "store": store, "suites": [SUITE],
                            "cases": len(measurements["records"])}
        self.fit_report_ = {"criterion": "sampling, quantization (median block of the "
                            "fastest run) and monotone cubic interpolation", "solver": [],
                            "measured": measurements.get("date", "")}
        return self

    def _application(self, workload) -> Application:
        if not isinstance(workload, Application):
            raise KernelcastError("the criteria model judges a profiled application "
                                  "(an Nsight Compute CSV), not "
                                  f"{type(workload).__name__}")
        return workload

    def assess(self, workload) -> Assessment:
        """The criteria, potential speedups and overall potential of *workload*."""
        self.check_fitted()
        return assess(self._application(workload), self.device_, self.saturation)

    def explain(self, workload, params: dict | None = None) -> dict[str, float]:
        """Seconds per launch ("#i kernel") at the launch's overall potential speedup."""
        result = self.assess(workload)
        parts = {f"#{i} {k.kernel}": k.seconds / k.potential
                 for i, k in enumerate(result.kernels)}
        return dict(sorted(parts.items(), key=lambda kv: -kv[1]))

    def details(self, workload, params: dict | None = None) -> dict:
        return {"assessment": self.assess(workload)}

    def fitted_state(self) -> dict:
        self.check_fitted()
        return {"characterization": self.device_.as_dict()}

    def restore(self, state: dict) -> None:
        """The characterization a profile keeps, each field checked, and the
        profile's *saturation*; a one-line ProfileError naming what is wrong."""
        try:
            check_saturation(self.saturation)
        except ValueError as err:
            raise ProfileError(f"params.{err}") from None
        data = state.get("characterization")
        if not isinstance(data, dict):
            raise ProfileError("the profile has no characterization")
        try:
            self.device_ = DeviceCharacterization.from_dict(data)
        except ValueError as err:
            raise ProfileError(f"state.characterization is broken: {err}") from None
