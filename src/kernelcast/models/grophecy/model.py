"""GROPHECY behind kernelcast's model interface (kernelcast.models.base.Model).

Its workload is a code skeleton, not a Loopy kernel: a path to a ``.sk`` file or a parsed
Skeleton, optionally paired with a Layout as ``(skeleton, layout)``. ``params`` override
the skeleton's macros (sizes). ``predict`` gives the projected seconds of the best layout
of the search (§6.2), or of the layout given; ``explain`` splits it into the Hong–Kim
memory, computation and synchronization terms; ``details`` adds the layout in words and
the bottleneck verdict; ``project`` returns the whole SearchResult.

Nothing is fitted to timings: like the Hong–Kim model, ``fit`` only resolves the hardware
description (a packaged GPU name or a JSON file), and a profile keeps it.

Public names: GrophecyModel.
"""

from __future__ import annotations

import numbers
from dataclasses import asdict
from pathlib import Path

from kernelcast.errors import KernelcastError, UsageError
from kernelcast.frontends.skeleton import load_skeleton
from kernelcast.frontends.skeleton.ir import Skeleton
from kernelcast.models.base import Model, Parameter, register
from kernelcast.models.grophecy.characterize import Characterizer
from kernelcast.models.grophecy.layouts import Layout
from kernelcast.models.grophecy.search import (
    Projection,
    SearchResult,
    load_hints,
    search,
)
from kernelcast.models.hong_kim.equations import estimate
from kernelcast.hardware import hardware_from_dict, load_hardware


@register
class GrophecyModel(Model):
    """GROPHECY's projection. *hardware*: a packaged GPU name (h100, h200, fx5600, c1060)
    or a JSON file; *hints*: a TOML hints file narrowing the layout search."""

    name = "grophecy"
    summary = "GROPHECY: the best code layout of a skeleton, projected through Hong–Kim"
    workload = "skeleton"

    from_hardware = True
    parameters = (
        Parameter("hardware", "hardware", "the GPU: a packaged name (h100, h200, fx5600, "
                  "c1060) or a hardware JSON file"),
        Parameter("hints", "file", "a TOML file narrowing the layout search: block, fold, "
                  "stage, cache, unroll (docs/cli.md)"),
    )

    def __init__(self, *, hardware: str | None = None, hints: str | None = None):
        self.hardware = hardware
        self.hints = hints

    def fit(self, dataset=None) -> GrophecyModel:
        """Resolve the hardware (from *hardware*, or the packaged description of the
        dataset's device) and read the hints."""
        from kernelcast.hardware import hardware_for_device

        if self.hardware is None and dataset is None:
            raise KernelcastError("GROPHECY needs a hardware description (--hardware) or "
                                  "a dataset of a known device")
        self.hardware_ = (load_hardware(self.hardware) if self.hardware is not None
                          else hardware_for_device(dataset.identity["device"]))
        self.hints_ = load_hints(self.hints) if self.hints else None
        self.provenance_ = (dataset.provenance() if dataset is not None else
                            {"device": self.hardware_.name, "driver": "", "backend": "",
                             "suite": "", "store": "", "cases": 0})
        self.fit_report_ = {"criterion": "none: analytical, hardware parameters from "
                            + (self.hardware or "the packaged description of the device"),
                            "solver": []}
        self._searches: dict = {}
        return self

    @staticmethod
    def _skeleton(workload, params: dict | None) -> tuple[Skeleton, Layout | None]:
        layout = None
        if isinstance(workload, tuple) and len(workload) == 2 and isinstance(workload[1],
                                                                             Layout):
            workload, layout = workload
        defines = {}
        for key, value in (params or {}).items():  # the skeleton's macros: integers
            # NumPy's integers too; never a float or text, which int() would truncate or read
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise UsageError(f"GROPHECY's params set the skeleton's macros, which are "
                                 f"integers: {key} is {value!r:.40}")
            defines[str(key)] = int(value)
        if isinstance(workload, str | Path):
            return load_skeleton(workload, defines=defines or None), layout
        if isinstance(workload, Skeleton):
            if defines:
                return load_skeleton(workload.path, defines=defines), layout
            return workload, layout
        raise UsageError("GROPHECY projects code skeletons: give a .sk path, a Skeleton or "
                         f"(skeleton, Layout), not {type(workload).__name__}")

    def project(self, workload, params: dict | None = None) -> SearchResult:
        """Every layout's projection (the search of §6.2) for the skeleton *workload*."""
        self.check_fitted()
        skeleton, _ = self._skeleton(workload, params)
        key = (skeleton, tuple(sorted((params or {}).items())))  # not its path: a
        # skeleton parsed from text has none of its own
        if key not in self._searches:
            self._searches = {key: search(skeleton, self.hardware_, hints=self.hints_)}
        return self._searches[key]

    def _projection(self, workload, params) -> Projection:
        self.check_fitted()
        skeleton, layout = self._skeleton(workload, params)
        if layout is None:
            return self.project(skeleton, params).best
        if len(skeleton.kernels) != 1:
            raise UsageError(f"{skeleton.path} has {len(skeleton.kernels)} parallel_for "
                             "loops; project one at a time")
        ch = Characterizer(skeleton, skeleton.kernels[0], self.hardware_)
        characteristics = ch.characterize(layout)
        return Projection(characteristics, estimate(self.hardware_, characteristics.workload))

    def seconds(self, workload, params: dict) -> float:
        return self._projection(workload, params).seconds

    def explain(self, workload, params: dict) -> dict[str, float]:
        est = self._projection(workload, params).estimate
        parts = {k: v / self.hardware_.freq_hz for k, v in est.parts.items() if v}
        return dict(sorted(parts.items(), key=lambda kv: -abs(kv[1])))

    def details(self, workload, params: dict) -> dict:
        """The layout in words, the bottleneck verdict and MWP, CWP, N."""
        p = self._projection(workload, params)
        skeleton, _ = self._skeleton(workload, params)
        return {"layout": p.layout.describe(skeleton.kernels[0].indices),
                "verdict": p.estimate.verdict,
                "regime": p.estimate.regime, "mwp": p.estimate.mwp,
                "cwp": p.estimate.cwp, "n": p.estimate.n}

    def fitted_state(self) -> dict:
        self.check_fitted()
        hw = asdict(self.hardware_)
        hw["guessed"] = list(hw["guessed"])
        return {"hardware": hw}

    def restore(self, state: dict) -> None:
        hw = state.get("hardware")
        if not isinstance(hw, dict):
            raise KernelcastError("the profile has no hardware description")
        self.hardware_ = hardware_from_dict(hw, "state.hardware")
        self.hints_ = load_hints(self.hints) if self.hints else None
        self._searches = {}
