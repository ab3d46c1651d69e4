"""Characterization functions (seed 003, §III-B): how a functional component's performance
falls as an application uses it less well, measured by microbenchmarks of increasing
intensity and turned into a function by sampling, quantization and interpolation.

- *sampling*: the microbenchmark's intensity levels (for shared memory, 1- to 32-way bank
  conflicts), each timed many times;
- *quantization*: each level's value is the median over its blocks' cycle counts of the
  fastest run, so one slow block or one slow launch does not move it (the latencies of
  DeviceCharacterization: the median over the runs of that median, since a chain's
  fastest run may find part of its footprint in a nearer cache);
- *interpolation*: between levels, a monotone cubic (scipy's PchipInterpolator, which does
  not overshoot between samples as a spline would); outside them, the nearest level.

Two forms, by how the paper's criteria use them (kernelcast's inference; the paper shows
the functions without formulas, docs/criteria.md):

- F_SHMEM and F_Divergence *multiply a ratio* r in (0, 1] (shared transactions per access;
  executed over potentially executed instructions): F(r) = performance at r / (performance
  at 1 × r), so that r × F(r) is the measured relative performance, and F is 1 where
  performance falls exactly as r does.
- F_DRAMThr and F_ARITHThr *scale a peak*: MEMTHR = achieved / (peak × F). At a fraction f
  of the GPU's warps doing the work, F(f) is the throughput they reach over the throughput
  of all of them, so that peak × F(f) is what the hardware delivers at that load.

Public names: Characterization, shared_memory_function, divergence_function,
utilization_function.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Characterization:
    """F sampled at ratios ``x`` (ascending, in (0, 1]) with values ``y``."""

    name: str
    x: tuple[float, ...]
    y: tuple[float, ...]

    def __post_init__(self):
        if len(self.x) != len(self.y) or len(self.x) < 2:
            raise ValueError(f"{self.name}: needs two or more samples, as many x as y")
        if not all(math.isfinite(v) for v in self.x + self.y):
            raise ValueError(f"{self.name}: the samples must be finite numbers")
        if any(b <= a for a, b in zip(self.x, self.x[1:])):
            raise ValueError(f"{self.name}: the ratios must ascend")
        # x is a ratio of transactions or instructions, or a fraction of the warps
        if not (0 < self.x[0] and self.x[-1] <= 1):
            raise ValueError(f"{self.name}: the ratios x must lie in (0, 1], not "
                             f"{self.x[0]:g} to {self.x[-1]:g}")
        # y is a relative performance: a component doing no work at all is no sample
        # (MEMTHR and ARITHTHR divide by F_DRAMThr and F_ARITHThr)
        if min(self.y) <= 0:
            raise ValueError(f"{self.name}: the values y must be positive, not "
                             f"{min(self.y):g}")

    def __call__(self, ratio):
        from scipy.interpolate import PchipInterpolator

        r = np.clip(np.asarray(ratio, dtype=float), self.x[0], self.x[-1])
        value = PchipInterpolator(self.x, self.y)(r)
        return float(value) if np.ndim(value) == 0 else value

    def as_dict(self) -> dict:
        return {"name": self.name, "x": list(self.x), "y": list(self.y)}


def shared_memory_function(cycles_by_ways: dict[int, float]) -> Characterization:
    """F_SHMEM from the bank-conflict microbenchmark: *cycles_by_ways* maps the conflict
    degree (1 = none, ..., 32) to the cycles of one dependent shared load. The ratio of
    transactions to accesses is 1 / ways; relative performance is cycles(1) / cycles(w)."""
    if 1 not in cycles_by_ways:
        raise ValueError("F_SHMEM needs the conflict-free (1-way) sample")
    base = cycles_by_ways[1]
    points = sorted((1.0 / w, base / c) for w, c in cycles_by_ways.items())
    return Characterization("F_SHMEM", tuple(r for r, _ in points),
                            tuple(p / r for r, p in points))


def divergence_function(cycles_by_fraction: dict[float, float]) -> Characterization:
    """F_Divergence from the divergence microbenchmark: *cycles_by_fraction* maps the
    fraction d of its if/else statements that split each warp in halves (0 … 1) to its
    cycles. A statement whose sides are equal issues its side once when uniform and both
    sides when divergent, so executed over potentially executed instructions is
    r = 1 / (1 + d); relative performance is cycles(0) / cycles(d)."""
    if 0 not in cycles_by_fraction:
        raise ValueError("F_Divergence needs the sample without divergence (d = 0)")
    base = cycles_by_fraction[0]
    points = sorted((1.0 / (1.0 + d), base / c) for d, c in cycles_by_fraction.items())
    return Characterization("F_Divergence", tuple(r for r, _ in points),
                            tuple(p / r for r, p in points))


def utilization_function(name: str, seconds_by_fraction: dict[float, float]) -> Characterization:
    """F_DRAMThr or F_ARITHThr from an intensity microbenchmark: *seconds_by_fraction* maps
    the fraction f of warps that work (each doing the same work) to the launch's seconds.
    Throughput is f / seconds; F(f) is it over the throughput at f = 1."""
    if 1 not in seconds_by_fraction:
        raise ValueError(f"{name} needs the sample with every warp working (f = 1)")
    full = 1.0 / seconds_by_fraction[1]
    points = sorted((f, f / t / full) for f, t in seconds_by_fraction.items())
    return Characterization(name, tuple(f for f, _ in points), tuple(v for _, v in points))


@dataclass(frozen=True)
class DeviceCharacterization:
    """What the fine-grained model knows of one GPU from its microbenchmarks: the four
    characterization functions, the latency in cycles of one dependent access at each
    memory level (``shared``, ``l1``, ``l2``, ``dram``), and the f32 add throughput in
    operations per SM per cycle (§V's activity classification weighs arithmetic with it)."""

    device: str
    functions: dict[str, Characterization]
    latency_cycles: dict[str, float]
    arith_per_sm_cycle: float

    def __post_init__(self):
        if not isinstance(self.device, str) or not self.device.strip():
            raise ValueError(f"device must be the GPU's name, not {self.device!r}")
        missing = set(FUNCTIONS) - set(self.functions)
        if missing:
            raise ValueError(f"the characterization lacks {sorted(missing)}")
        # a dependent access takes at least a cycle; a million cycles (about half a
        # millisecond) is a thousand times the DRAM latency of any GPU
        if set(self.latency_cycles) != set(LEVELS):
            raise ValueError(f"latency_cycles needs {', '.join(LEVELS)}, not "
                             f"{', '.join(self.latency_cycles) or 'none'}")
        for level, cycles in self.latency_cycles.items():
            if not 1 <= cycles <= 1e6:
                raise ValueError(f"latency_cycles.{level} is {cycles:g}, not 1 to 10^6 "
                                 "cycles")
        # an SM adds at least one float per cycle, and none has more than 1024 f32
        # lanes (the H100 has 128)
        if not 1 <= self.arith_per_sm_cycle <= 1024:
            raise ValueError(f"arith_per_sm_cycle must be 1 to 1024 f32 adds per SM per "
                             f"cycle, not {self.arith_per_sm_cycle:g}")

    def as_dict(self) -> dict:
        return {"device": self.device,
                "functions": {n: f.as_dict() for n, f in self.functions.items()},
                "latency_cycles": dict(self.latency_cycles),
                "arith_per_sm_cycle": self.arith_per_sm_cycle}

    @classmethod
    def from_dict(cls, state: dict) -> DeviceCharacterization:
        """The characterization *state* (``as_dict``) describes; a ValueError naming the
        first field that is missing, of the wrong type or out of its range."""
        functions = {}
        for name, f in _field(state, "functions", dict).items():
            where = f"functions.{name}"
            if _field(f, "name", str, where) != name:
                raise ValueError(f"{where}.name is {f['name']!r}, not {name!r}")
            functions[name] = Characterization(
                name, *(tuple(_number(v, f"{where}.{k}")
                              for v in _field(f, k, list, where)) for k in ("x", "y")))
        latency = {k: _number(v, f"latency_cycles.{k}")
                   for k, v in _field(state, "latency_cycles", dict).items()}
        return cls(_field(state, "device", str), functions, latency,
                   _number(state.get("arith_per_sm_cycle"), "arith_per_sm_cycle"))


def _field(doc, key: str, kind: type, where: str = ""):
    """*doc*[*key*], which must be a *kind*; a ValueError naming it otherwise."""
    name = f"{where}.{key}" if where else key
    if not isinstance(doc, dict):
        raise ValueError(f"{where or 'the characterization'} is "
                         f"{type(doc).__name__}, not an object")
    if key not in doc:
        raise ValueError(f"{name} is missing")
    if not isinstance(doc[key], kind):
        should = {dict: "an object", list: "a list", str: "a string"}[kind]
        raise ValueError(f"{name} is {type(doc[key]).__name__}, not {should}")
    return doc[key]


def _number(value, where: str) -> float:
    """*value* as a float where it is a finite number (an integer too large for a float
    is not); a ValueError naming *where* otherwise."""
    if not isinstance(value, bool) and isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if math.isfinite(number):
            return number
    raise ValueError(f"{where} is {repr(value)[:40]}, not a finite number")


FUNCTIONS = ("F_SHMEM", "F_Divergence", "F_DRAMThr", "F_ARITHThr")
LEVELS = ("shared", "l1", "l2", "dram")


def characterize(doc: dict) -> DeviceCharacterization:
    """The DeviceCharacterization of a microbenchmark document (what
    benchmarks/criteria_microbenchmarks.py measure writes: ``device``, ``sms``,
    ``clock_khz`` and ``records``). A record missing from it is a ValueError naming it."""
    by_name = {r["name"]: r for r in doc["records"]}

    def record(name):
        if name not in by_name:
            raise ValueError(f"the microbenchmark {name!r} was not measured")
        return by_name[name]

    def per_op(timing, r):  # cycles of one dependent operation
        return timing["block_cycles_median"] / r["ops_per_thread"]

    conflicts = [r for r in doc["records"] if r["kind"] == "bank-conflicts"]
    functions = {
        "F_SHMEM": shared_memory_function({r["params"]["ways"]: per_op(r, r)
                                           for r in conflicts}),
        "F_Divergence": divergence_function(
            {r["params"]["divergent_fraction"]: r["block_cycles_median"]
             for r in doc["records"] if r["kind"] == "divergence"}),
        "F_DRAMThr": utilization_function("F_DRAMThr", {
            r["params"]["fraction"]: r["min_s"] for r in doc["records"]
            if r["name"].startswith("dram-intensity/")}),
        "F_ARITHThr": utilization_function("F_ARITHThr", {
            r["params"]["fraction"]: r["min_s"] for r in doc["records"]
            if r["name"].startswith("arith-intensity/")})}
    def latency_of(timing, r):
        # a latency is the median over the runs, not the fastest run's: a DRAM chain
        # that a launch finds partly in L2 is fastest (300 cycles on the H100 against a
        # median of 716), so its fastest run measures L2 as much as DRAM
        return float(np.median(timing["block_cycles_median_per_run"])) / r["ops_per_thread"]

    shared = record("shared/conflicts-1")
    latency = {"shared": latency_of(shared["one_warp"], shared),
               **{level: latency_of(record(f"memory/load-latency/{level}"),
                                    record(f"memory/load-latency/{level}"))
                  for level in ("l1", "l2", "dram")}}
    add = record("throughput/f32/add")
    ops = add["grid"] * add["block"] * add["ops_per_thread"]
    arith = ops / add["min_s"] / doc["sms"] / (doc["clock_khz"] * 1e3)
    return DeviceCharacterization(doc["device"], functions, latency, arith)
