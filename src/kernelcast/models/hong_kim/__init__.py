"""The Hong–Kim model behind the model interface: hardware parameters (measured or read from
the device; kernelcast.hardware), a workload gathered from a kernel's
properties (inputs) and the MWP/CWP equations (equations).

Nothing is fitted to timings: ``fit`` resolves the hardware description, given by name or
path, or else the packaged one whose name is the dataset's device, and the registers per
thread by kernel name that the device's compiler reported, if given. Parts of
``explain`` are the memory, computation and synchronization terms of the regime that
applied.

The same equations on the hardware facts (warp requests and sectors, SASS instructions,
registers, latency by cache level) are ``hong-kim-facts``, kernelcast.models.hong_kim.facts.

Public names: HongKimModel, Hardware, Workload, Estimate, estimate, load_hardware,
known_hardware, hardware_for_device, workload.
"""

from __future__ import annotations

from dataclasses import asdict

from kernelcast.errors import KernelcastError
from kernelcast.frontends.files import json_kind
from kernelcast.hardware import (
    Hardware,
    hardware_for_device,
    hardware_from_dict,
    known_hardware,
    load_hardware,
    load_registers,
)
from kernelcast.models.base import Model, Parameter, as_properties, register
from kernelcast.models.hong_kim.equations import Estimate, Workload, estimate
from kernelcast.models.hong_kim.inputs import workload

__all__ = ["Estimate", "Hardware", "HongKimModel", "Workload", "estimate",
           "hardware_for_device", "known_hardware", "load_hardware", "workload"]


@register
class HongKimModel(Model):
    """The Hong–Kim model. *hardware*: a packaged GPU name (h100, h200, fx5600, c1060) or
    a JSON file; None takes the dataset's device. *registers*: a JSON file of registers
    per thread by kernel name (data/<gpu>/registers.json). A workload takes the registers
    listed under its kernel name (its Properties' ``kernel_name``), else
    *registers_per_thread*; without either, registers do not limit occupancy. One rule
    for ``predict``, ``explain`` and ``predict_dataset``, so that they agree on a case.
    The committed files are keyed by suite case (``arithmetic[add]/float32/g16x16``),
    while a suite kernel is named after its class alone (``arith_add``), without the
    dtype and work-group size its registers differ by: those counts do not reach it."""

    name = "hong-kim"
    summary = "Hong & Kim's analytical MWP/CWP model on measured hardware parameters"

    from_hardware = True
    parameters = (
        Parameter("hardware", "hardware", "the GPU: a packaged name (h100, h200, fx5600, "
                  "c1060) or a hardware JSON file (default: the measured device's)"),
        Parameter("registers", "file", "registers per thread of each kernel, by kernel "
                  "name, as the device's compiler reported them (a JSON file: "
                  "data/<gpu>/registers.json)"),
        Parameter("registers_per_thread", "optional count", "registers per thread of a kernel the "
                  "registers file does not list, as the compiler reports them (they limit "
                  "the blocks an SM holds)", at_predict=True),
    )

    def __init__(self, *, hardware: str | None = None, registers: str | None = None,
                 registers_per_thread: int | None = None):
        self.hardware = hardware
        self.registers = registers
        self.registers_per_thread = registers_per_thread

    def check_before_measuring(self, device: str) -> None:
        super().check_before_measuring(device)
        if self.hardware is not None:
            load_hardware(self.hardware)
        else:
            hardware_for_device(device)
        if self.registers:
            load_registers(self.registers)

    def fit(self, dataset=None) -> HongKimModel:
        """Resolve the hardware (and registers); *dataset* may be None when *hardware* is
        given."""
        if self.hardware is None and dataset is None:
            raise KernelcastError("the Hong–Kim model needs a hardware description "
                                  "(--hardware) or a dataset of a known device")
        self.hardware_ = (load_hardware(self.hardware) if self.hardware is not None
                          else hardware_for_device(dataset.identity["device"]))
        self.registers_ = {}
        if self.registers:
            self.registers_ = load_registers(self.registers)
        if dataset is not None:
            self.provenance_ = dataset.provenance()
        else:
            self.provenance_ = {"device": self.hardware_.name, "driver": "", "backend": "",
                                "suite": "", "store": "", "cases": 0}
        self.fit_report_ = {"criterion": "none: analytical, hardware parameters from "
                            + (self.hardware or "the packaged description of the device"),
                            "solver": []}
        return self

    def _estimate(self, props, params, registers) -> Estimate:
        return estimate(self.hardware_, workload(props, params, self.hardware_, registers))

    def _estimate_of(self, workload_, params: dict, registers: int | None = None
                     ) -> Estimate:
        """The estimate of *workload_* (a Loopy kernel or its properties) at *params*,
        with *registers* per thread, else those of its kernel name (the class
        docstring)."""
        self.check_fitted()
        props = as_properties(workload_)
        return self._estimate(props, params, registers or self.registers_.get(
            props.kernel_name, self.registers_per_thread))

    def explain(self, workload_, params: dict) -> dict[str, float]:
        est = self._estimate_of(workload_, params)
        parts = {k: v / self.hardware_.freq_hz for k, v in est.parts.items() if v}
        return dict(sorted(parts.items(), key=lambda kv: -abs(kv[1])))

    def details(self, workload_, params: dict, registers: int | None = None) -> dict:
        """Regime, bottleneck verdict, MWP, CWP and N of the estimate."""
        return self._details(self._estimate_of(workload_, params, registers))

    @staticmethod
    def _details(est: Estimate) -> dict:
        return {"regime": est.regime, "verdict": est.verdict, "mwp": est.mwp,
                "cwp": est.cwp, "n": est.n}

    def estimate(self, workload_, params: dict) -> Estimate:
        """The full estimate, with every quantity of the equations."""
        return self._estimate_of(workload_, params)

    def fitted_state(self) -> dict:
        self.check_fitted()
        hw = asdict(self.hardware_)
        hw["guessed"] = list(hw["guessed"])
        return {"hardware": hw, "registers": self.registers_}

    def restore(self, state: dict) -> None:
        hw = state.get("hardware")
        if not isinstance(hw, dict):
            raise KernelcastError("the profile has no hardware description")
        self.hardware_ = hardware_from_dict(hw, "state.hardware")
        registers = state.get("registers", {})
        if not isinstance(registers, dict):
            raise KernelcastError(f"state.registers is {json_kind(registers)}, not an object")
        for kernel, count in registers.items():
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise KernelcastError(f"state.registers.{kernel} is {json_kind(count)}, "
                                      "not a non-negative integer")
        self.registers_ = dict(registers)
