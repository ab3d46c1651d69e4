"""Kernelcast's symbolic counts checked against Nsight Compute's hardware counters
(issue 25, "Beyond the paper"; benchmarks/criteria_counters.py measures them).

A *counters document* holds, per kernel case, ``counts`` (the paper's properties and the
extended model's ``bytes_read``, ``bytes_written``, ``local_conflicts``, ``work_items``,
evaluated at the case's parameters), ``counters`` (the ncu metrics of METRICS for one
launch, by name) and ``group`` (the work-group size). Each Quantity pairs what the counts
predict with what the counters measured, in the same unit:

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

Public names: WARP, SECTOR_BYTES, METRICS, Quantity, QUANTITIES, sectors_per_warp,
pairs, agreement, families_off, counter_only_families.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from kernelcast.properties.vocabulary import ACCESS_BITS, STRIDE_CLASSES

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
