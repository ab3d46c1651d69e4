"""The fine-grained model behind the Model protocol (kernelcast.models.base): fitted from a
GPU's microbenchmarks (kernelcast.fitting.microbenchmarks.load_microbenchmarks reads
them) into its characterization functions, latencies and arithmetic throughput
(kernelcast.models.criteria.characterization), it judges a profiled application
(kernelcast.models.criteria.criteria.Application) and predicts how long the
application could take: each launch's measured time over its overall potential speedup,
the gaps between launches gone (§V). ``explain`` gives that time per launch;
``details`` the whole assessment, criteria included. A profile keeps the
characterization (``fitted_state``), so advice needs no GPU.

Public names: CriteriaModel.
"""

from __future__ import annotations

from kernelcast.errors import KernelcastError, ProfileError
from kernelcast.fitting.microbenchmarks import Microbenchmarks
from kernelcast.models.base import Model, Parameter, register
from kernelcast.models.criteria.characterization import DeviceCharacterization, characterize
from kernelcast.models.criteria.criteria import (
    MEMTHR_SATURATED,
    Application,
    Assessment,
    assess,
    check_saturation,
)


@register
class CriteriaModel(Model):
    """The fine-grained model. *saturation*: MEMTHR at or above it counts as 1 in the
    THROUGHPUT/OCCUPANCY criterion (§IV-H's "MemThr ≈ 1")."""

    name = "criteria"
    summary = ("the fine-grained model: optimization criteria and potential speedups "
               "from an Nsight Compute profile, weighted by microbenchmarked functions")
    workload = "profile"

    fitted_from = "microbenchmarks"
    parameters = (Parameter("saturation", "number", "MEMTHR at or above which the "
                            "THROUGHPUT/OCCUPANCY criterion counts it as saturated "
                            f"(default {MEMTHR_SATURATED:g})", metavar="X", low=0, high=1,
                            open_low=True),)

    def __init__(self, *, saturation: float = MEMTHR_SATURATED):
        self.saturation = saturation

    def fit(self, dataset: Microbenchmarks) -> CriteriaModel:
        """Fit to a GPU's microbenchmarks (*dataset*: what
        kernelcast.fitting.microbenchmarks.load_microbenchmarks reads); *saturation* is
        checked here, before anything is fitted."""
        try:
            check_saturation(self.saturation)
        except ValueError as err:
            raise KernelcastError(str(err)) from None
        if not isinstance(dataset, Microbenchmarks):
            raise KernelcastError("the criteria model is fitted from a GPU's "
                                  "microbenchmarks (kernelcast.fitting.microbenchmarks."
                                  f"load_microbenchmarks), not a {type(dataset).__name__}")
        try:
            self.device_ = characterize(dataset.document)
        except (KeyError, ValueError) as err:
            raise KernelcastError(f"the microbenchmarks cannot characterize the GPU: "
                                  f"{err}") from None
        self.provenance_ = dataset.provenance()
        self.fit_report_ = {"criterion": "sampling, quantization (median block of the "
                            "fastest run) and monotone cubic interpolation", "solver": [],
                            "measured": dataset.document.get("date", "")}
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
