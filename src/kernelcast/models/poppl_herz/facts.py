"""Pöppl & Herz's model with its global-memory term from the hardware facts: every part of
the fitted model (tTransfer, tBase, the operations, U) as before, except that global
accesses are priced by the traffic the GPU sees and the level that serves it instead of
by their source-level access class:

memory = Σ_(direction, level) bytes(direction, level) · cost(direction, level) / U

The bytes come from kernelcast.facts (predicted from the kernel's Loopy twin, compiled by
NVIDIA's compiler), for a launch timed back to back: load sectors that hit L1; those L1
misses, served by DRAM for the bytes the launch reads from it, else by L2; stored
sectors, written to L2 and back to DRAM once a launch. DRAM's share is that of a
footprint that does not stay in L2 between launches (warm_dram_share of the bytes read
from DRAM and stored; kernelcast.models.extended.facts). Each byte is priced once, at the
level that serves it; U divides the sum as it divides every access of the Pöppl–Herz
model (bytes do not grow where a work-group leaves lanes empty, the time does: U is
measured on a kernel that loads and stores). No cost is fitted to a judged kernel:

- DRAM: the fitted cost of a coalesced float access (``global:read:coalesced``,
  ``global:write:coalesced``: the microbenchmarks stream more arrays than L2 holds) over
  its bytes;
- L2 and L1: DRAM's cost times the ratio of the levels' measured load throughputs (the
  criteria microbenchmarks' ``memory/load-throughput/*`` records, *throughputs*) or,
  without them, of their measured load latencies (the hardware description's
  ``*_latency_cycles``).

Why: an access class is read from the source, and one class costs very different
times as its data come from L1, L2 or DRAM (an array's size and reuse decide which).
Neither the slides nor the paper model cache levels or their traffic (their
"cache-aware" model prices access classes); this is beyond them.

Public names: PopplHerzFactsModel, LEVELS.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from kernelcast.errors import KernelcastError, ProfileError
from kernelcast.models.base import Parameter, register
from kernelcast.models.poppl_herz.curves import utilization
from kernelcast.models.poppl_herz.model import MOST_SECONDS, PopplHerzModel

#: the priced traffic: direction:level
LEVELS = ("read:l1", "read:l2", "read:dram", "write:l2", "write:dram")
_LAUNCH = ("global_size", "local_size", "bytes_in", "bytes_out")


@register
class PopplHerzFactsModel(PopplHerzModel):
    """The Pöppl–Herz model with global accesses priced by their predicted traffic per
    cache level (the module docstring). *hardware*: a packaged hardware name (default: the
    fitted device's); *throughputs*: a criteria microbenchmarks document whose load
    throughputs give the level ratios (default: the hardware's load latencies). It
    predicts a suite case (its OpenCL source and Loopy twin) or a pair (OpenCL source,
    Loopy kernel)."""

    name = "poppl-herz-facts"
    summary = ("Pöppl & Herz's model with global accesses priced by predicted L1, L2 and "
               "DRAM traffic (NVIDIA GPUs)")

    parameters = (
        PopplHerzModel.parameters[1],
        Parameter("hardware", "hardware", "the GPU whose caches price the accesses: a "
                  "packaged name or a hardware JSON file (default: the fitted device's)"),
        Parameter("throughputs", "file", "a criteria microbenchmarks document whose load "
                  "throughputs give the cache levels' cost ratios (default: the hardware's "
                  "load latencies)"),
    )

    def __init__(self, *, simd_width: int | None = None, hardware: str | None = None,
                 throughputs: str | None = None):
        super().__init__(classes=True, simd_width=simd_width)
        self.hardware = hardware
        self.throughputs = throughputs

    def fit(self, dataset) -> PopplHerzFactsModel:
        from kernelcast.hardware import hardware_for_device, load_hardware
        from kernelcast.models.extended import _hardware_name

        device = dataset.identity["device"]
        try:
            hw = load_hardware(self.hardware) if self.hardware else \
                hardware_for_device(device)
            name = _hardware_name(hw)
        except KernelcastError:
            raise KernelcastError(f"the {self.name} model describes NVIDIA GPUs with a "
                                  f"packaged hardware description; there is none for "
                                  f"{self.hardware or device}") from None
        ratios = _ratios(hw, self.throughputs)
        super().fit(dataset)
        self.memory_ = {"hardware": name, **_costs(self.terms_, *ratios)}
        _check_memory(self.memory_)
        return self

    # {{{ prediction

    def priced(self, counts) -> dict[str, tuple[str, float]]:
        """The Pöppl–Herz parts less global and __constant accesses (the facts price
        them)."""
        return {name: entry for name, entry in super().priced(counts).items()
                if name.count(":") != 2 or name.split(":")[0] not in ("global", "constant")}

    def parts(self, workload, params: dict) -> dict[str, float]:
        from kernelcast.models.poppl_herz.model import workload_of

        self.check_fitted()
        opencl, name, make, sizes = _split(workload, params)
        load = workload_of(opencl, params)
        parts = super().parts(load, params)
        u = utilization(load.group, self.simd_width_)
        for level, seconds in self._memory(name, make, sizes)[1].items():
            if seconds:
                parts[f"global:{level}"] = seconds / u
        return parts

    def details(self, workload, params: dict) -> dict:
        self.check_fitted()
        opencl, name, make, sizes = _split(workload, params)
        traffic, _, share = self._memory(name, make, sizes)
        return {**super().details(opencl, params), "hardware": self.memory_["hardware"],
                "warm_dram_share": share, "bytes": traffic,
                "seconds_per_byte": dict(self.memory_["costs"]),
                "sources": dict(self.memory_["sources"])}

    def _memory(self, name, make, sizes):
        """Bytes each level serves of the launch timed back to back, by direction and
        level (LEVELS), their seconds, and the share of its DRAM traffic that does not
        stay in L2 between launches (``warm_dram_share`` of its footprint: the bytes a
        cold launch reads from DRAM and the bytes it stores)."""
        from kernelcast.hardware import load_hardware
        from kernelcast.models import extended
        from kernelcast.models.extended.facts import warm_dram_share

        hw = load_hardware(self.memory_["hardware"])
        s = extended.SUMMARIES.summary(name, make, sizes, hw,
                                       needs=("load_sectors", "l1_hit_sectors"))
        if isinstance(s, str):
            raise KernelcastError(f"no hardware facts for {name}: {s}")
        sector = hw.sector_bytes
        missed = (s["load_sectors"] - s["l1_hit_sectors"]) * sector  # L1 asks L2
        stored = (s["l1_sectors"] - s["load_sectors"]) * sector  # stores go to L2
        share = warm_dram_share(s["dram_bytes_read"] + stored, hw.l2_cache_bytes)
        # stored sectors are written back once a launch unless the footprint stays in
        # L2 (a cold launch leaves some dirty in L2: its DRAM writes undercount them)
        dram = {"read": min(s["dram_bytes_read"], missed) * share, "write": stored * share}
        traffic = {"read:l1": s["l1_hit_sectors"] * sector,
                   "read:l2": missed - dram["read"], "read:dram": dram["read"],
                   "write:l2": stored - dram["write"], "write:dram": dram["write"]}
        costs = self.memory_["costs"]
        return traffic, {k: v * costs[k] for k, v in traffic.items()}, share

    # }}}

    # {{{ profiles

    def fitted_state(self) -> dict:
        state, memory = super().fitted_state(), self.memory_
        return {**state, "memory": {"hardware": memory["hardware"],
                                    "costs": dict(memory["costs"]),
                                    "sources": dict(memory["sources"])}}

    def restore(self, state: dict) -> None:
        if not isinstance(state, dict) or "memory" not in state:
            raise ProfileError("state.memory is missing: the per-level costs of a "
                               f"{self.name} profile")
        state = dict(state)
        memory = state.pop("memory")
        _check_memory(memory)
        super().restore(state)
        self.memory_ = memory

    # }}}


def _split(workload, params: dict) -> tuple:
    """(what the Pöppl–Herz parts read, summary name, Loopy kernel maker, its sizes) of a
    suite case or of a pair (OpenCL source or counts, Loopy kernel)."""
    from kernelcast.models.extended import launch_name

    if hasattr(workload, "kclass") and hasattr(workload, "kernel"):
        return workload, f"{workload.suite}:{workload.name}", workload.kernel, params
    if isinstance(workload, tuple) and len(workload) == 2:
        opencl, knl = workload
        sizes = {k: v for k, v in params.items() if k not in _LAUNCH}
        return opencl, launch_name(knl), lambda: knl, sizes
    raise KernelcastError(f"the poppl-herz-facts model needs the kernel's Loopy twin for "
                          f"its hardware facts: give a suite case or a pair (OpenCL source, "
                          f"Loopy kernel); a {type(workload).__name__} alone has none")


def _costs(terms: dict, ratios: dict, why: dict) -> dict:
    """Seconds per byte of each of LEVELS from the fitted *terms* and the levels' cost
    *ratios* to DRAM's (``_ratios``), and where each comes from."""
    from kernelcast.frontends.opencl import TYPE_BYTES

    costs, sources = {}, {}
    for direction in ("read", "write"):
        c = terms[f"global:{direction}:coalesced"][0]
        # the access microbenchmarks read and store floats
        dram = c / TYPE_BYTES["float"]
        costs[f"{direction}:dram"] = dram
        sources[f"{direction}:dram"] = (
            f"the fitted coalesced {direction} (global:{direction}:coalesced, {c:.4g} s "
            f"per access and work-item) over its {TYPE_BYTES['float']} bytes: streamed "
            "through more arrays than L2 holds, DRAM serves it")
        for level in ("l2", "l1") if direction == "read" else ("l2",):
            costs[f"{direction}:{level}"] = dram * ratios[level]
            sources[f"{direction}:{level}"] = (f"DRAM's cost × {ratios[level]:.4g}, "
                                               f"{why[level]}")
    return {"costs": costs, "sources": sources}


def _ratios(hw, throughputs) -> tuple[dict, dict]:
    """Per byte, L1's and L2's cost over DRAM's: DRAM's load throughput over theirs in
    the criteria microbenchmarks document *throughputs*, or without it their load
    latency over DRAM's (the hardware description)."""
    if throughputs is None:
        cycles = {k: getattr(hw, f"{k}_latency_cycles") for k in ("l1", "l2", "dram")}
        if None in cycles.values():
            raise KernelcastError(f"the hardware description of {hw.name} lacks the L1, L2 "
                                  "and DRAM load latencies (l1/l2/dram_latency_cycles)")
        sources = hw.sources or {}
        return ({k: cycles[k] / cycles["dram"] for k in ("l1", "l2")},
                {k: f"its load latency over DRAM's ({cycles[k]:g} / {cycles['dram']:g} "
                    f"cycles, {hw.name}: {sources.get(f'{k}_latency_cycles', 'measured')})"
                 for k in ("l1", "l2")})
    try:
        doc = json.loads(Path(throughputs).read_text())
        records = {r["name"]: r for r in doc["records"]}
        rate = {}
        for level in ("l1", "l2", "dram"):
            r = records[f"memory/load-throughput/{level}"]
            rate[level] = r["grid"] * r["block"] * r["ops_per_thread"] / r["min_s"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise KernelcastError(f"{throughputs}: no criteria microbenchmarks with the L1, L2 "
                              f"and DRAM load throughputs ({type(err).__name__}: {err})") \
            from None
    if doc.get("device") != hw.name:
        raise KernelcastError(f"{throughputs} was measured on {doc.get('device')!r}, not "
                              f"{hw.name}")
    return ({k: rate["dram"] / rate[k] for k in ("l1", "l2")},
            {k: f"DRAM's load throughput over {k.upper()}'s ({throughputs}: "
                f"memory/load-throughput/dram and /{k}, fastest runs)" for k in ("l1", "l2")})


def _check_memory(memory) -> None:
    """Raise a ProfileError unless *memory* names a packaged hardware and prices every
    level at a finite cost below a second per byte, at most DRAM's for L1 and L2."""
    from kernelcast.hardware import known_hardware

    if not isinstance(memory, dict) or set(memory) != {"hardware", "costs", "sources"} \
            or not isinstance(memory["sources"], dict):
        raise ProfileError("state.memory is not an object of hardware, costs and sources")
    if memory["hardware"] not in known_hardware():
        raise ProfileError(f"state.memory.hardware {memory['hardware']!r} is not a packaged "
                           f"hardware description ({', '.join(known_hardware())})")
    costs = memory["costs"]
    if not isinstance(costs, dict) or set(costs) != set(LEVELS):
        raise ProfileError(f"state.memory.costs needs {', '.join(LEVELS)}")
    for key, cost in costs.items():
        if isinstance(cost, bool) or not isinstance(cost, int | float) \
                or not (math.isfinite(cost) and 0 <= cost < MOST_SECONDS):
            raise ProfileError(f"state.memory.costs.{key} is {cost!r:.40}, not seconds per "
                               "byte from 0 to 1")
    if not costs["read:l1"] <= costs["read:l2"] <= costs["read:dram"] \
            or not costs["write:l2"] <= costs["write:dram"]:
        raise ProfileError("state.memory.costs: a byte served nearer than DRAM costs more "
                           "than one DRAM serves (L1 ≤ L2 ≤ DRAM per byte)")
