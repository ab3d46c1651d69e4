"""Kernelcast's symbolic counts checked against Nsight Compute's hardware counters: one
launch of every kernel of the measurement, test and validation suites, profiled with a
short list of ncu metrics (METRICS), compared per property (benchmarks/criteria_counters.py
is its command line).

The measurement:

- ``plan_cases(store)``: every kernel of SUITES once, at the largest parameters a
  measurement store holds for it (rows ok or unstable; largest by the product of the
  parameters, then by t), or else the largest size case of its class at the largest p the
  suite allows; kernelcast.suites.paper.case_of rebuilds a plan entry's suite Case.
- ``run_plan(plan, log)`` (what ncu profiles; needs cupy): each case of a plan in order,
  built with kernelcast.measure.codegen, compiled by the CUDA backend (NVRTC), its arrays
  allocated by the backend (random inputs, NaN outputs), launched once and synchronized.
  It prints nothing on stdout (ncu writes its CSV there); a case that fails is one line on
  stderr and the run goes on. With a log, each case is recorded just before its launch
  (index, CUDA function, grid and block).
- ``measure_counters(out, run_command)`` (needs cupy and ncu): the plan with each case's
  function name and counts (its properties and the extended model's data volume and bank
  conflicts at its parameters), then, in chunks of cases, ``ncu --csv --page raw
  --metrics METRICS --kernel-name regex:^(functions)$`` over *run_command* (a process
  that runs ``run_plan`` on a chunk; no warm-up: ncu flushes the caches before each
  replay pass). ncu's rows are matched to the logged launches in order, by function name
  and grid size (``match``); a metric an ==ERROR== line of ncu names is dropped and the
  chunk run again (``unknown_metrics``); chunks past the budget are skipped. It writes
  OUT/plan.json, OUT/launches.jsonl, OUT/ncu.tar.xz (the CSV of every chunk) and the
  *counters document* (``write_document``: OUT/counters.json, xz-compressed as
  counters.json.xz when over MAX_JSON_BYTES), rewritten after every chunk;
  ``load_document`` reads either.

The comparison: a counters document holds, per kernel case, ``counts`` (the paper's
properties and the extended model's ``bytes_read``, ``bytes_written``,
``local_conflicts``, ``work_items``, evaluated at the case's parameters), ``counters``
(the ncu metrics of METRICS for one launch, by name) and ``group`` (the work-group size).
Each Quantity pairs what the counts predict with what the counters measured, in the same
unit:

- floating-point operations, per work-item (thread): ``flops_f32`` is add_f32 + mul_f32
  against fadd + fmul + 2 ffma (an FMA is one add and one multiplication); ``add_f32`` is
  add_f32 against fadd + ffma, ``mul_f32`` mul_f32 against fmul + ffma; the same for f64
  with dadd, dmul, dfma. Divisions, powers and special functions are left out of these
  sums: on the GPU they become sequences of these instructions.
- special functions: special_* + pow_* against XU-pipe warp instructions × 32.
- global memory, loads and stores separately: bytes requested (accesses × bits/8 against
  ncu's bytes per sector × L1 sectors), L1 sectors (the rule of sectors_per_warp against
  l1tex sectors) and warp instructions (accesses / 32 against SASS LDG/STG instructions).
- DRAM bytes: the extended model's data volume (per array, the smaller of its size and the
  bytes its accesses cover) against dram__bytes_read, dram__bytes_write and their sum.
- local (shared) memory: load_local_* / store_local_* against shared LDS/STS warp
  instructions × 32, and local_conflicts / 32 against l1tex bank conflicts and against
  shared wavefronts minus shared instructions (kernelcast counts the extra passes once
  per work-item access; ncu once per warp instruction).

A case enters a quantity's comparison where the counts predict more than zero and ncu
reported every metric the quantity needs; one whose counts predict zero but whose counter
exceeds the quantity's floor is counted apart (``counter_only``).

Public names: WARP, SECTOR_BYTES, METRICS, SUITES, MAX_JSON_BYTES, Quantity, QUANTITIES,
sectors_per_warp, pairs, agreement, families_off, counter_only_families, plan_cases,
label, run_plan, launch_each, case_counts, device_info, match, profile_chunk, unknown_metrics,
write_csvs, write_document, load_document, measure_counters.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import lzma
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import tarfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kernelcast.errors import KernelcastError
from kernelcast.properties.vocabulary import ACCESS_BITS, STRIDE_CLASSES
from kernelcast.suites.paper import case_of

WARP = 32
SECTOR_BYTES = 32

# Every name was checked against the raw page of ncu 2025.3 on an H100 (the metrics of
# data/h100/criteria/ncu.tar.xz, or their base names there with another roll-up).
METRICS = (
    "gpu__time_duration.sum", "launch__grid_size", "launch__block_size",
    "dram__bytes_read.sum", "dram__bytes_write.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sectors_srcunit_tex_op_write.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio",
    "smsp__sass_inst_executed_op_global_ld.sum", "smsp__sass_inst_executed_op_global_st.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum", "smsp__sass_inst_executed_op_shared_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    *(f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum"
      for op in ("fadd", "fmul", "ffma", "dadd", "dmul", "dfma")),
    "sm__inst_executed_pipe_xu.sum",
)

_STRIDE = {"s0": 0, "s1": 1, **{f"{k}of{s}": s for s in (2, 3, 4) for k in range(1, s + 1)}}


def _run_sectors(items: int, bits: int, stride_class: str) -> int:
    """Sectors one run of *items* consecutive work-items along local axis 0 touches."""
    size = bits // 8
    stride = _STRIDE.get(stride_class)
    if stride == 0:
        return 1
    if stride is None:  # strides above 4 and irregular: a sector per work-item
        return items
    spanned = -(-items * stride * size // SECTOR_BYTES)  # sectors the run's span covers
    return spanned if stride == 1 else min(items, spanned)


def sectors_per_warp(bits: int, stride_class: str, group=(WARP, 1)) -> float:
    """The 32-byte sectors one warp instruction of a kernelcast access class touches, on
    average over the warps of one work-group of size *group* (its first axis is local
    axis 0, the fastest; work-items fill warps in that order).

    A warp splits into runs of consecutive work-items along local axis 0 (one run where
    that axis has 32 or more, several in a 2-D group such as 16×16). Each run, assumed to
    start on a sector boundary, touches: stride 0 (``s0``) one sector; stride 1
    ceil(run × bytes / 32); stride S of 2 to 4 (``kofS``, whatever k) ceil(run × S ×
    bytes / 32), at most one per work-item; strides above 4 and irregular accesses one
    sector per work-item. So 32 work-items touch 4 sectors with 32-bit stride-1 loads, 8
    with 64-bit ones, 8 with 32-bit stride-2 ones and 32 with a transpose's columns.
    """
    if bits not in ACCESS_BITS or stride_class not in STRIDE_CLASSES:
        raise ValueError(f"no access class {bits}-bit {stride_class!r}")
    width = max(int(group[0]), 1)
    items = width * math.prod(int(g) for g in group[1:])
    total = 0
    for first in range(0, items, WARP):
        runs = Counter(lane // width for lane in range(first, min(first + WARP, items)))
        total += sum(_run_sectors(n, bits, stride_class) for n in runs.values())
    return total * WARP / items


# {{{ what the counts predict, what the counters measured

def _sum(values: dict, names) -> float:
    return sum(values.get(n, 0.0) for n in names)


def _global(direction: str):
    return [(f"{direction}_global_{b}_{c}", b, c) for b in ACCESS_BITS for c in STRIDE_CLASSES]


def _global_bytes(direction):
    return lambda counts, case: sum(counts.get(n, 0.0) * b / 8 for n, b, _ in _global(direction))


def _global_sectors(direction):
    def predict(counts, case):
        group = tuple(case.get("group") or (WARP, 1))
        return sum(counts[n] * sectors_per_warp(b, c, group) / WARP
                   for n, b, c in _global(direction) if counts.get(n))
    return predict


def _global_instructions(direction):
    return lambda counts, case: _sum(counts, [n for n, _, _ in _global(direction)]) / WARP


def _metric(*terms):
    """The sum of coefficient × metric over *terms* ((coefficient, name) pairs); None
    when ncu reported one of them as no number."""
    def measure(counters):
        values = [counters.get(name) for _, name in terms]
        if any(not isinstance(v, (int, float)) for v in values):
            return None
        return sum(c * v for (c, _), v in zip(terms, values, strict=True))
    return measure


def _thread(op):
    return f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum"


def _requested(op):
    """Bytes requested: ncu's average bytes per sector × sectors."""
    ratio = f"smsp__sass_average_data_bytes_per_sector_mem_global_op_{op}.ratio"
    sectors = f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum"

    def measure(counters):
        r, s = counters.get(ratio), counters.get(sectors)
        if not isinstance(s, (int, float)):
            return None
        if s == 0:
            return 0.0
        return r * s if isinstance(r, (int, float)) else None
    return measure


@dataclass(frozen=True)
class Quantity:
    """One comparison: *predict(counts, case)* and *measure(counters)* in one unit; the
    reasons to expect the counters above (*over*) or below (*under*) the counts."""

    name: str
    unit: str
    predict: Callable[[dict, dict], float]
    measure: Callable[[dict], float | None]
    over: str
    under: str
    floor: float = 0.0  # counters at or below it count as nothing where counts predict 0


def _global_quantities(direction: str, op: str) -> tuple[Quantity, ...]:
    """Bytes requested, L1 sectors and warp instructions of global loads or stores."""
    kept = ("repeated loads kept in registers (loop-invariant loads, references Loopy "
            "counts each time)" if direction == "load" else "stores merged by the compiler")
    extra = ("accesses outside the domains the counts take (guards, halos), or accesses "
             "the compiler issues again")
    return (
        Quantity(f"global_{direction}_bytes", "bytes requested", _global_bytes(direction),
                 _requested(op), extra,
                 f"{kept}; or ncu counting a uniform (stride-0) warp {direction} as the "
                 "bytes of one element rather than one per work-item"),
        Quantity(f"global_{direction}_sectors", "L1 sectors", _global_sectors(direction),
                 _metric((1, f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum")),
                 "runs of a warp that start off a sector boundary (rows of 2-D groups, "
                 "halo offsets), uniform accesses that differ along local axis 1; " + extra,
                 "strides above 4 and irregular accesses are taken as one sector per "
                 "work-item, where smaller strides or gathers with locality touch fewer; "
                 f"{kept}"),
        Quantity(f"global_{direction}_instructions", "warp instructions",
                 _global_instructions(direction),
                 _metric((1, f"smsp__sass_inst_executed_op_global_{op}.sum")),
                 "partial warps (groups or guards that leave lanes idle); " + extra,
                 f"vector {direction}s (64/128-bit) merge neighbouring accesses; {kept}"),
    )


_EXPANSION = ("division, pow and special functions expand into add/mul/FMA sequences "
              "(IEEE division, range reduction) that the counts leave out")
_FOLDED = "the compiler folded or shared operations (constants, common subexpressions)"

QUANTITIES = (
    *(Quantity(f"flops_{p}", "thread operations",
               lambda c, case, p=p: _sum(c, (f"add_{p}", f"mul_{p}")),
               _metric((1, _thread(f"{x}add")), (1, _thread(f"{x}mul")), (2, _thread(f"{x}fma"))),
               _EXPANSION, _FOLDED)
      for p, x in (("f32", "f"), ("f64", "d"))),
    *(Quantity(f"{op}_{p}", "thread operations",
               lambda c, case, op=op, p=p: c.get(f"{op}_{p}", 0.0),
               _metric((1, _thread(f"{x}{op}")), (1, _thread(f"{x}fma"))),
               _EXPANSION, _FOLDED)
      for p, x in (("f32", "f"), ("f64", "d")) for op in ("add", "mul")),
    Quantity("special_functions", "thread instructions",
             lambda c, case: _sum(c, ("special_f32", "special_f64", "pow_f32", "pow_f64")),
             _metric((WARP, "sm__inst_executed_pipe_xu.sum")),
             "the XU pipe also runs conversions (int<->float) and reciprocals of divisions; "
             "pow takes two (log2, exp2); warps are assumed full",
             "min/max/fabs count as special but run on the ALU/FMA pipes; float64 and "
             "precise float32 functions run as FMA sequences"),
    *_global_quantities("load", "ld"),
    *_global_quantities("store", "st"),
    Quantity("dram_read", "bytes", lambda c, case: c.get("bytes_read", 0.0),
             _metric((1, "dram__bytes_read.sum")),
             "data re-read from DRAM: the working set outgrows the 50 MB L2 (large "
             "matrices, strided and transposed reads), partial sectors",
             "the volume counts whole arrays that the launch only partly reads",
             floor=2 ** 20),
    Quantity("dram_write", "bytes", lambda c, case: c.get("bytes_written", 0.0),
             _metric((1, "dram__bytes_write.sum")),
             "partial-sector writes read and write whole sectors; evicted lines written "
             "more than once",
             "written data still in the write-back L2 when the kernel ends: ncu counts "
             "DRAM traffic during the launch only",
             floor=2 ** 20),
    Quantity("dram_bytes", "bytes",
             lambda c, case: c.get("bytes_read", 0.0) + c.get("bytes_written", 0.0),
             _metric((1, "dram__bytes_read.sum"), (1, "dram__bytes_write.sum")),
             "as dram_read and dram_write", "as dram_read and dram_write", floor=2 ** 20),
    *(Quantity(f"local_{what}", "thread accesses",
               lambda c, case, d=direction: _sum(c, [f"{d}_local_{b}" for b in ACCESS_BITS]),
               _metric((WARP, f"smsp__sass_inst_executed_op_shared_{op}.sum")),
               "partial warps or guarded accesses still issue whole-warp instructions",
               "vector shared accesses (LDS.64/128) and values kept in registers across "
               "unrolled iterations")
      for what, direction, op in (("loads", "load", "ld"), ("stores", "store", "st"))),
    Quantity("local_conflicts", "extra passes per warp instruction",
             lambda c, case: c.get("local_conflicts", 0.0) / WARP,
             _metric((1, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"),
                     (1, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum")),
             "ncu also counts the second wavefront of 64/128-bit accesses and conflicts "
             "of warps other than the first one kernelcast samples",
             "kernelcast samples the first warp at the first loop iteration; vector "
             "accesses change the pattern"),
    Quantity("local_extra_wavefronts", "shared wavefronts beyond one per warp instruction",
             lambda c, case: c.get("local_conflicts", 0.0) / WARP,
             _metric((1, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"),
                     (1, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"),
                     (-1, "smsp__sass_inst_executed_op_shared_ld.sum"),
                     (-1, "smsp__sass_inst_executed_op_shared_st.sum")),
             "a warp's 64-bit (128-bit) shared access takes 2 (4) wavefronts without any "
             "conflict, which kernelcast counts as one pass",
             "as local_conflicts"),
)

# }}}


def _label(case: dict) -> str:
    return f"{case.get('suite')}:{case.get('kernel')}"


def pairs(document: dict, quantity: Quantity) -> tuple[list, int]:
    """((label, predicted, measured) of every case compared, number of cases whose counts
    predict zero but whose counter exceeds the floor) for *quantity* in *document*."""
    compared, counter_only = [], 0
    for case in document.get("cases", ()):
        counts, counters = case.get("counts"), case.get("counters")
        if not counts or not counters:
            continue
        measured = quantity.measure(counters)
        if measured is None:
            continue
        predicted = quantity.predict(counts, case)
        if predicted > 0:
            compared.append((_label(case), predicted, measured))
        elif measured > quantity.floor:
            counter_only += 1
    return compared, counter_only


def agreement(document: dict, quantities=QUANTITIES, tolerance: float = 0.1) -> list[dict]:
    """Per quantity: ``cases`` compared, the share of them whose counter is within
    ±*tolerance* of the count (``within_10pct``) and within a factor 2 (``within_2x``),
    the ``median_ratio`` counter/count, ``counter_only`` (see pairs), and ``reason``: the
    quantity's expected cause where the median ratio is off by more than *tolerance*, or a
    note where it is not but the cases spread."""
    rows = []
    for q in quantities:
        compared, counter_only = pairs(document, q)
        ratios = [m / p for _, p, m in compared]
        n = len(ratios)
        median = statistics.median(ratios) if ratios else None
        if median is None:
            reason = ""
        elif median > 1 + tolerance:
            reason = "counters above: " + q.over
        elif median < 1 - tolerance:
            reason = "counters below: " + q.under
        elif sum(abs(r - 1) <= tolerance for r in ratios) < 0.75 * n:
            reason = "median agrees, cases spread (see the worst ones)"
        else:
            reason = ""
        rows.append({
            "quantity": q.name, "unit": q.unit, "cases": n,
            "within_10pct": sum(abs(r - 1) <= tolerance for r in ratios) / n if n else None,
            "within_2x": sum(0.5 <= r <= 2 for r in ratios) / n if n else None,
            "median_ratio": median, "counter_only": counter_only, "reason": reason})
    return rows


def families_off(document: dict, quantity: Quantity, tolerance: float = 0.1
                 ) -> dict[str, float]:
    """The kernel families (suite:class[variant]) with a case off by more than
    *tolerance*, each with its median ratio counter/count."""
    ratios: dict[str, list[float]] = {}
    for label, predicted, measured in pairs(document, quantity)[0]:
        ratios.setdefault(label.split("/")[0], []).append(measured / predicted)
    return {family: statistics.median(r) for family, r in ratios.items()
            if any(abs(x - 1) > tolerance for x in r)}


def counter_only_families(document: dict, quantity: Quantity) -> dict[str, float]:
    """The kernel families with cases whose counts give *quantity* none and whose counter
    exceeds its floor, each with the largest counter among them."""
    found: dict[str, float] = {}
    for case in document.get("cases", ()):
        counts, counters = case.get("counts"), case.get("counters")
        if not counts or not counters or quantity.predict(counts, case) > 0:
            continue
        measured = quantity.measure(counters)
        if measured is not None and measured > quantity.floor:
            family = _label(case).split("/")[0]
            found[family] = max(found.get(family, 0.0), measured)
    return found


# {{{ the plan

SUITES = ("measurement", "test", "validation")


def _largest(candidates):
    """The (params, t) of largest parameters: by their product, then by t."""
    return max(candidates, key=lambda pt: (math.prod(pt[0].values()), pt[1]))


def _store_sizes(store: Path) -> dict:
    """(suite, kernel name) -> [(params, t)] of the store's ok and unstable rows."""
    from kernelcast.measure.store import Store

    sizes: dict = {}
    if not Path(store).exists():
        return sizes
    with Store(store) as db:
        for row in db.rows():
            if row["status"] in ("ok", "unstable") and not row["damage"] and row["suite"]:
                kernel = row["case_name"].rsplit("/", 1)[0]
                sizes.setdefault((row["suite"], kernel), []).append(
                    (dict(row["params"]), row["t"] or 0))
    return sizes


def plan_cases(store) -> list[dict]:
    """One entry per kernel of SUITES, in suite order, at the largest parameters the
    measurement store at *store* holds for it (``source`` "store"), else at the largest
    size case of its class (``source`` "suite"; a store that does not exist holds none)."""
    from kernelcast.suites.paper import get_suite

    measured = _store_sizes(store)
    plan = []
    for suite_name in SUITES:
        suite = get_suite(suite_name)
        largest_p = {c.name: max(c.p_choices) for c in suite.classes}
        kernels: dict = {}
        for case in suite.cases(largest_p):
            kernels.setdefault(case.kernel_name, []).append(case)
        for kernel, cases in kernels.items():
            first = cases[0]
            rows = measured.get((suite_name, kernel))
            if rows:
                params, _ = _largest(rows)
                source = "store"
            else:
                params, _ = _largest([(c.params, c.t) for c in cases])
                source = "suite"
            plan.append({"index": len(plan), "suite": suite_name, "class": first.class_name,
                         "variant": first.variant, "dtype": first.dtype,
                         "group": list(first.group_size), "p": first.p, "kernel": kernel,
                         "params": dict(params), "source": source})
    return plan


def plan_label(entry: dict) -> str:
    """A plan entry as suite:kernel/params, as the lines of a run name it."""
    params = ",".join(f"{k}={v}" for k, v in sorted(entry["params"].items()))
    return f"{entry['suite']}:{entry['kernel']}/{params}"

# }}}


# {{{ run (under ncu)

#: what starts each line a run writes on stderr (a case that failed, or no CUDA)
RUN_PREFIX = "criteria_counters run:"


def run_plan(plan_path, log_path=None, first: int = 0, count: int | None = None) -> int:
    """Launch the entries *first* to *first* + *count* of the plan at *plan_path* once
    each (see the module docstring); 1 where there is no CUDA device to run them on."""
    import numpy as np

    from kernelcast.measure.arrays import array_specs, scalar_arguments, typed_kernel
    from kernelcast.measure.codegen import generate_case

    def prepare(entry):
        case = case_of(entry)
        knl = case.kernel()
        specs, scalars = array_specs(typed_kernel(knl), case.params)
        values = scalar_arguments(scalars, case.params, np.random.default_rng(0))
        return generate_case(knl, "cuda", case), specs, values, case.params

    entries = json.loads(Path(plan_path).read_text())
    return launch_each(entries[first:None if count is None else first + count], prepare,
                       lambda entry: f"case {entry['index']} ({plan_label(entry)})",
                       RUN_PREFIX, log_path)


def launch_each(entries, prepare, describe, prefix: str, log_path=None) -> int:
    """Launch each of *entries* once on the first CUDA device, as ncu profiles them:
    *prepare*(entry) gives its (GeneratedKernel, ArraySpecs, scalar values, parameters).
    A launch that fails is one line on stderr, *prefix* and *describe*(entry) first, and
    the next one runs. Each launch's function, grid and block are appended to *log_path*
    (JSON lines, with the entry's "index") before it runs. 1 where there is no CUDA
    device."""
    try:
        from kernelcast.measure.backends.cuda import CudaBackend
        from kernelcast.measure.devices import find_device

        backend = CudaBackend(find_device(None, "cuda"))
    except KernelcastError as err:
        print(f"{prefix} {err}", file=sys.stderr)
        return 1
    log = open(log_path, "a") if log_path else None  # noqa: SIM115 - one line per launch
    try:
        for entry in entries:
            args = {}
            try:
                generated, specs, scalars, params = prepare(entry)
                compiled = backend.compile(generated)
                args = backend.allocate(specs, scalars, seed=0)
                grid, block = generated.launch_sizes(params)
                if log:
                    log.write(json.dumps({"index": entry["index"], "function": generated.name,
                                          "grid": list(grid), "block": list(block)}) + "\n")
                    log.flush()
                backend.time_launches(compiled, generated, args, params, 1)
            except Exception as err:  # noqa: BLE001 - one line, then the next launch
                message = " ".join(str(err).split())[:300]
                print(f"{prefix} {describe(entry)}: {type(err).__name__}: {message}",
                      file=sys.stderr, flush=True)
            finally:
                backend.release(args)
    finally:
        if log:
            log.close()
    return 0

# }}}


# {{{ measure

#: a counters document larger than this is written xz-compressed
MAX_JSON_BYTES = 2 * 2 ** 20


def case_counts(case) -> dict:
    """The case's properties and extended features at its parameters (nonzero ones)."""
    from kernelcast.models.extended.features import extend
    from kernelcast.properties import extract_properties

    props = extract_properties(case.kernel())
    values, extent = props.evaluate_with_extent(case.params)
    return {k: _round(v) for k, v in extend(values, extent).items()
            if v and not k.startswith("item_")}


def _round(value):
    """Integers as integers, other numbers to 5 significant digits."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2 ** 62:
        return int(value)
    return float(f"{value:.5g}") if isinstance(value, float) else value


def _output(command) -> str:
    """What *command* prints, stripped; empty where it cannot run."""
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=120
                              ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def device_info() -> dict:
    """The CUDA device, its driver, ncu's version and the date of a measurement."""
    from kernelcast.measure.devices import cuda_devices

    devices = cuda_devices()
    smi = _output(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    ncu = _output(["ncu", "--version"])
    return {"device": devices[0].name if devices else None,
            "cuda": devices[0].driver if devices else None,
            "driver": smi.splitlines()[0] if smi else None,
            "ncu": ncu.splitlines()[-1] if ncu else None,
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}


def match(logged: list[dict], launches: list) -> dict:
    """Plan index -> ncu Launch: the rows in order, each to the next logged launch of the
    same function whose grid, where ncu gives one, has as many groups (a logged launch
    with no such row gets none; up to two unmatched rows are skipped)."""
    matched, row = {}, 0
    for entry in logged:
        for ahead in range(row, min(row + 3, len(launches))):
            launch = launches[ahead]
            grid = launch.metrics.get("launch__grid_size")
            if launch.kernel == entry["function"] and (
                    not isinstance(grid, float) or grid == math.prod(entry["grid"])):
                matched[entry["index"]] = launch
                row = ahead + 1
                break
    return matched


def write_document(out, document: dict) -> Path:
    """Write *document* as OUT/counters.json, or as OUT/counters.json.xz where its JSON
    exceeds MAX_JSON_BYTES (the other one removed); the path written."""
    text = json.dumps(document, indent=1) + "\n"
    plain, packed = Path(out) / "counters.json", Path(out) / "counters.json.xz"
    for stale in (plain, packed):
        stale.unlink(missing_ok=True)
    if len(text) > MAX_JSON_BYTES:
        packed.write_bytes(lzma.compress(text.encode()))
        return packed
    plain.write_text(text)
    return plain


def load_document(path) -> dict:
    """The counters document at *path* (.json, or .json.xz)."""
    path = Path(path)
    data = path.read_bytes()
    return json.loads(lzma.decompress(data) if path.suffix == ".xz" else data)


def _ncu(metrics: list, names: list, command: list, timeout: float) -> tuple[str, str]:
    """(stdout, stderr) of ncu profiling *command* (a process's argv) with *metrics*, only
    the kernels named *names*; ncu and what it started are killed after *timeout* s."""
    process = subprocess.Popen(
        ["ncu", "--csv", "--page", "raw", "--target-processes", "all",
         "--metrics", ",".join(metrics), "--kernel-name", "regex:^(" + "|".join(names) + ")$",
         *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    try:
        return process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, _ = process.communicate()
        return stdout, f"ncu timed out after {timeout:.0f} s"


def write_csvs(path, csvs: dict) -> None:
    """ncu's CSV of every chunk (name -> text) as one xz-compressed tar at *path*."""
    with tarfile.open(path, "w:xz") as tar:
        for name, text in csvs.items():
            data = text.encode()
            member = tarfile.TarInfo(name)
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))


def profile_chunk(part: int, todo: list, metrics: list, dropped: list, command: list,
                  log_path: Path, timeout: float, document: dict, progress=None
                  ) -> tuple[str, str, list]:
    """Profile one chunk: *command* launches the records *todo* (each with "index" and
    "function") and logs them to *log_path*; a metric ncu does not know is dropped (into
    *dropped*, said on *progress*, default stdout) and the chunk run again. Sets each
    record's "status" and "counters" and the document's "units"; returns (ncu's CSV, its
    notes, the launches logged)."""
    from kernelcast.frontends.profiler import read_ncu_csv

    log_path = Path(log_path)
    before = log_path.read_text()
    while True:
        text, note = _ncu(metrics, sorted({r["function"] for r in todo}), command, timeout)
        bad = unknown_metrics(f"{text}\n{note}", metrics)
        if not bad:
            break
        print(f"chunk {part}: ncu does not know {', '.join(bad)}; again without",
              file=progress, flush=True)
        metrics[:] = [m for m in metrics if m not in bad]
        dropped += bad
        log_path.write_text(before)
    logged = [json.loads(line) for line in log_path.read_text()[len(before):].splitlines()]
    try:
        launches = read_ncu_csv(text, f"chunk {part}")
    except Exception as err:  # noqa: BLE001 - no rows: the chunk's cases get none
        launches, note = [], f"{note}\n{err}".strip()
    matched = match(logged, launches)
    for launch in launches[:1]:
        document["units"].update(launch.units)
    for r in todo:
        launch = matched.get(r["index"])
        r["status"] = "ok" if launch else (
            "no ncu row" if any(e["index"] == r["index"] for e in logged)
            else "not launched")
        if launch:
            r["counters"] = {m: _round(v) for m, v in launch.metrics.items()}
    return text, note, logged


def unknown_metrics(text: str, metrics: list) -> list:
    """The metrics of *metrics* that ncu's ==ERROR== lines in *text* name (none where
    they name every one: then the error is not about a name)."""
    errors = [line for line in text.splitlines() if line.startswith("==ERROR==")]
    named = [m for m in metrics
             if any(m in line or m.rsplit(".", 1)[0] in line for line in errors)]
    return named if len(named) < len(metrics) else []


def measure_counters(out, run_command, store, *, chunk: int = 50, budget: float = 540,
                     only: str | None = None, progress=None) -> tuple[dict, Path]:
    """Measure the counters of every case of ``plan_cases(store)`` (whose label matches
    the regular expression *only*, if given) into the folder *out* (see the module
    docstring); *run_command(plan_path, log_path, first, count)* is the argv of a process
    that runs ``run_plan`` on those entries. Chunks of *chunk* cases; those that would
    start with less than 30 s left of *budget* seconds are skipped. Progress lines go to
    *progress* (default stdout). Returns (the counters document, the path written)."""
    from kernelcast.measure.codegen import generate_case

    start = time.monotonic()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    info = device_info()
    print(json.dumps(info), file=progress, flush=True)
    entries = [e for e in plan_cases(store) if not only or re.search(only, plan_label(e))]
    records = []
    for entry in entries:
        record = dict(entry)
        case = case_of(entry)
        try:
            record["function"] = generate_case(case.kernel(), "cuda", case).name
            record["counts"] = case_counts(case)
        except Exception as err:  # noqa: BLE001 - recorded, and the case is not run
            record["error"] = f"{type(err).__name__}: {err}"[:300]
        records.append(record)
    runnable = [r for r in records if "error" not in r]
    plan_path = out / "plan.json"
    plan_path.write_text(json.dumps(runnable, indent=1) + "\n")
    metrics, dropped = list(METRICS), []
    print(f"{len(records)} cases, {len(runnable)} to run; counts in "
          f"{time.monotonic() - start:.0f} s", file=progress, flush=True)
    document = {**info, "metrics": metrics, "dropped_metrics": dropped, "units": {},
                "notes": [], "cases": records}
    csvs = {}
    log_path = out / "launches.jsonl"
    log_path.write_text("")
    for part, begin in enumerate(range(0, len(runnable), chunk)):
        todo = runnable[begin:begin + chunk]
        if budget - (time.monotonic() - start) < 30:
            print(f"chunk {part}: skipped, the budget of {budget:.0f} s is spent",
                  file=progress, flush=True)
            for r in todo:
                r["status"] = "skipped"
            continue
        began = time.monotonic()
        text, note, logged = profile_chunk(
            part, todo, metrics, dropped, run_command(plan_path, log_path, begin, len(todo)),
            log_path, max(budget - (time.monotonic() - start), 10), document, progress)
        csvs[f"chunk-{part:02d}.csv"] = text
        profiled = sum("counters" in r for r in todo)
        print(f"chunk {part}: {len(todo)} cases, {len(logged)} launched, {profiled} "
              f"profiled in {time.monotonic() - began:.0f} s", file=progress, flush=True)
        notes = [line for line in f"{text}\n{note}".splitlines()
                 if line.startswith(("==ERROR==", "==WARNING==", RUN_PREFIX,
                                     "ncu timed out", f"chunk {part}:"))]
        document["notes"] += notes
        for line in notes[:8]:
            print(f"  {line[:200]}", file=progress, flush=True)
        write_document(out, document)
    written = write_document(out, document)
    write_csvs(out / "ncu.tar.xz", csvs)
    statuses = {}
    for r in records:
        status = r.get("status", "error" if "error" in r else "?")
        statuses[status] = statuses.get(status, 0) + 1
    print(f"wrote {written} ({', '.join(f'{k} {v}' for k, v in sorted(statuses.items()))}) "
          f"in {time.monotonic() - start:.0f} s", file=progress, flush=True)
    return document, written

# }}}
