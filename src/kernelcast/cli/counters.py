"""The ``counters`` verb: the Nsight Compute counters of one launch of a Loopy kernel,
predicted without running it (kernelcast.facts), and side by side with a profile of the
same launch.

``kernelcast counters FILE.py:FACTORY --param NAME=SIZE ... --hardware h100|h200|FILE``
prints a table of the predicted counters (each exact, sampled, or from the compiler and
CUDA's occupancy rules; a missing one with why), then the access sites that the sectors
and wavefronts come from, the compiler's line and the occupancy line. ``--hardware`` is
required: counters of one GPU are never assumed for another. ``--json`` prints one JSON
object (``LaunchFacts.to_json``; a value that is not finite becomes null).
``--no-compiler`` leaves out what needs NVIDIA's compiler; without the compiler the
memory counters still print, with a one-line warning.

``--compare PROFILE.csv`` reads ncu's raw page (``ncu --csv --page raw``) and puts the
launch of the same kernel function beside the prediction: predicted, measured and their
ratio (predicted / measured). Of several launches of the function, the first whose grid
and block are the prediction's is taken, and the output says so (stderr with ``--json``);
a profile with no launch of that shape is refused ("the profile is of another launch"); a
profile of another GPU than ``--hardware`` is a DeviceMismatchWarning.

Public names: counters, pick_launch, AGREEMENT.
"""

from __future__ import annotations

import json
import math
import re
import sys
import textwrap
import warnings
from pathlib import Path

from kernelcast.errors import DeviceMismatchWarning, UsageError

# Counters that come from the compiler's resources and CUDA's occupancy rules (neither
# counted from addresses nor sampled).
_COMPILER = frozenset({
    "launch__registers_per_thread", "launch__shared_mem_per_block_static",
    "launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps", "launch__occupancy_limit_blocks",
    "launch__waves_per_multiprocessor", "sm__maximum_warps_per_active_cycle_pct"})

# Counters that the SASS executed counts give or complete, where the compiler ran.
_WITH_SASS = frozenset({
    "smsp__inst_executed.sum", "smsp__sass_inst_executed_op_global_ld.sum",
    "smsp__sass_inst_executed_op_global_st.sum", "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"})

# A unit that Nsight Compute scaled (--print-units auto): compared only in base units.
_SCALED_UNIT = re.compile(r"[KMGT](byte|sector|inst|request|block|thread|warp|cycle)s?(/.*)?")

# Where a prediction and a measurement agree (the targets of the facts: within 20%).
AGREEMENT = 0.20


def _kind(facts, name: str) -> str:
    if name not in facts.counters:
        return "missing"
    if name in _COMPILER or (facts.compiler is not None and name in _WITH_SASS):
        return "compiler"  # its resources, occupancy rules, or SASS counts
    return "exact" if name in facts.exact else "sampled"


def _finite(value):
    """*value* (a number), or None where it is missing or not finite."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if math.isfinite(value) else None


def _shown(value) -> str:
    value = _finite(value)
    if value is None:
        return "–"
    if float(value).is_integer() or abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4g}"


def _cut(text, width: int = 60) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[:width - 1] + "…"


def _ratio(predicted, measured):
    """predicted / measured; 1 where both are 0, None where it is not defined."""
    predicted, measured = _finite(predicted), _finite(measured)
    if predicted is None or measured is None:
        return None
    if measured == 0:
        return 1.0 if predicted == 0 else None
    return predicted / measured


# {{{ the profile

def _read_profile(path_text: str):
    from kernelcast.frontends.files import read_regular_file
    from kernelcast.frontends.profiler import read_ncu_csv

    path = Path(path_text)
    data = read_regular_file(path, "CSV of Nsight Compute")  # a FIFO is refused, not read
    if data is None:
        raise UsageError(f"{path}: no such file or directory")
    launches = read_ncu_csv(data.decode("utf-8", errors="replace"), str(path))
    if not launches:
        raise UsageError(f"{path}: the profile holds no launch")
    return launches


def _function(name: str) -> str:
    """A kernel name as ncu prints it, less a C++ signature: ``void f(float *)`` -> f."""
    head = name.split("(")[0].split()
    return head[-1] if head else ""


def _dims(text) -> tuple[int, ...] | None:
    """ncu's "(256, 2, 1)" as integers, trailing ones dropped; None if it is not one."""
    match = re.fullmatch(r"\s*\(?\s*(\d+(?:\s*,\s*\d+){0,2})\s*\)?\s*", str(text))
    if match is None:
        return None
    dims = [int(d) for d in match.group(1).split(",")]
    while len(dims) > 1 and dims[-1] == 1:
        dims.pop()
    return tuple(dims)


def _shape(dims) -> tuple[int, ...]:
    dims = [int(d) for d in dims] or [1]
    while len(dims) > 1 and dims[-1] == 1:
        dims.pop()
    return tuple(dims)


def _geometry(launch) -> tuple:
    """(grid, block) of a profiled launch: its dimensions where ncu printed them, else
    the totals launch__grid_size and launch__block_size (as 1-tuples), else None each."""
    grid, block = _dims(launch.grid), _dims(launch.block)
    if grid is None:
        total = _finite(launch.metrics.get("launch__grid_size"))
        grid = (int(total),) if total is not None and float(total).is_integer() else None
    if block is None:
        total = _finite(launch.metrics.get("launch__block_size"))
        block = (int(total),) if total is not None and float(total).is_integer() else None
    return grid, block


def _same(measured, predicted) -> bool:
    if measured is None:
        return False
    if len(measured) == 1:
        return measured[0] == math.prod(predicted)
    return measured == predicted


def _words(dims) -> str:
    return "?" if dims is None else " × ".join(str(d) for d in dims)


def pick_launch(launches, facts, path: str = "<ncu>"):
    """The launch of *launches* (kernelcast.frontends.profiler.Launch) that *facts*
    predicts: of the launches of its kernel function, the first of the same grid and
    block; and a note where there were several (else ""). One-line UsageErrors where
    the profile has no launch of the function, or none of that grid and block."""
    named = [x for x in launches if x.kernel == facts.kernel or
             _function(x.kernel) == facts.kernel]
    if not named:
        others = list(dict.fromkeys(_cut(x.kernel, 40) for x in launches))
        listed = ", ".join(others[:8]) + (f" and {len(others) - 8} more"
                                          if len(others) > 8 else "")
        raise UsageError(f"{path}: no launch of {facts.kernel}; the profile has launches "
                         f"of {listed}")
    grid, block = _shape(facts.grid), _shape(facts.block)
    alike = [x for x in named if _same(_geometry(x)[0], grid) and
             _same(_geometry(x)[1], block)]
    if not alike:
        their_grid, their_block = _geometry(named[0])
        raise UsageError(f"{path}: the profile is of another launch (grid "
                         f"{_words(their_grid)} vs {_words(grid)} predicted, block "
                         f"{_words(their_block)} vs {_words(block)})")
    note = ""
    if len(named) > 1:
        note = (f"{path} has {len(named)} launches of {facts.kernel}, {len(alike)} of "
                f"this grid and block; comparing the first of them (ncu's ID {alike[0].id})")
    return alike[0], note


def _check_device(launch, hardware: str, path: str) -> str:
    """The GPU the launch was profiled on; a DeviceMismatchWarning where it is not
    *hardware*."""
    device = launch.metrics.get("device__attribute_display_name")
    if not isinstance(device, str) or not device.strip():
        return ""

    def key(name: str) -> str:
        return " ".join(name.split()).casefold()

    if key(device) != key(hardware):
        warnings.warn(DeviceMismatchWarning(
            f"{path} was profiled on the {_cut(device)}, the prediction is for the "
            f"{_cut(hardware)}: their counters need not agree"), stacklevel=2)
    return device


def _check_units(launch, names, path: str) -> None:
    for name in names:
        unit = launch.units.get(name, "")
        if _SCALED_UNIT.fullmatch(unit):
            raise UsageError(f"{path}: {name} is in {_cut(unit, 20)}, a scaled unit; "
                             "profile with ncu --print-units base")

# }}}


# {{{ output

def _frame(rows, columns):
    import pandas as pd

    return pd.DataFrame(rows, columns=columns)


def _header(facts, params: dict) -> str:
    sizes = " ".join(f"{k}={v}" for k, v in sorted(params.items()))
    return (f"{facts.kernel}{' at ' + sizes if sizes else ''} on the {facts.hardware}: "
            f"grid {_words(facts.grid)} groups, block {_words(facts.block)} threads")


def _metric_table(facts, rows, measured: bool) -> str:
    from kernelcast.report import format_table

    table = []
    for name, predicted, value in rows:
        row = [name, _shown(predicted)]
        if measured:
            ratio = _ratio(predicted, value)
            row += [_shown(value), "–" if ratio is None else f"{ratio:.2f}"]
        table.append([*row, _kind(facts, name)])
    columns = ["counter", "predicted"] + (["measured", "ratio"] if measured else [])
    return format_table(_frame(table, [*columns, "how"]))


def _rows(facts, launch) -> list[tuple]:
    """(metric, predicted, measured) of every predicted or missing counter, and of every
    PRINCIPAL one the profile has, in PRINCIPAL's order."""
    from kernelcast.facts import PRINCIPAL, compare

    rows = compare(facts, launch.metrics if launch is not None else {})
    known = {r[0] for r in rows}
    rows += [(n, None, None) for n in PRINCIPAL if n in facts.missing and n not in known]
    order = {n: i for i, n in enumerate(PRINCIPAL)}
    return sorted(rows, key=lambda r: order.get(r[0], len(order)))


def _site_table(facts) -> str:
    from kernelcast.report import format_table

    rows = []
    for s in facts.sites:
        shared = s.site.space != "global"
        total = s.wavefronts if shared else s.sectors
        rows.append([str(s.site.id), _cut(s.site.insn_id, 24), _cut(s.site.array, 16),
                     "shared" if shared else "global", s.site.direction,
                     str(s.access_bytes), _shown(s.requests),
                     f"{s.sectors_per_request:.2f}", _shown(total),
                     "exact" if s.exact else "sampled"])
    return format_table(_frame(rows, ["site", "instruction", "array", "space", "op",
                                      "bytes", "requests", "per request", "total", "how"]),
                        keys=3)


def _why_missing(facts) -> str:
    for name in ("launch__registers_per_thread", *facts.missing):
        if name in facts.missing:
            return _cut(facts.missing[name], 300)
    return ""


def _compiler_line(facts) -> str:
    c = facts.compiler
    if c is None:
        return f"compiler: not run ({_why_missing(facts) or 'no compiler facts'})"
    return (f"compiler: {c.registers} registers per thread, spills {c.spill_store_bytes} B "
            f"stored / {c.spill_load_bytes} B loaded, static shared {c.shared_bytes:,} B; "
            f"{c.compiler}, {c.arch}")


def _occupancy_line(facts) -> str:
    occ = facts.occupancy
    if occ is None:
        return "occupancy: not predicted (it needs the compiler's registers)"
    limits = ", ".join(occ.limiting) or "–"
    if occ.groups_per_sm == 0:
        return f"occupancy: no group fits on an SM (limited by {limits})"
    waves = _finite(occ.waves)
    return (f"occupancy: {occ.groups_per_sm} groups per SM, limited by {limits} "
            f"({occ.occupancy_pct:.4g}% of the SM's warps)"
            + (f"; {waves:.4g} waves" if waves is not None else ""))


def _caches_line(facts) -> str:
    caches = facts.caches
    if caches is None:
        return "caches: not simulated (they need the groups an SM holds: the compiler)"
    groups = math.prod(facts.grid)
    how = (f"{caches.groups_simulated:,} of {groups:,} groups simulated, scaled"
           if caches.sampled else f"all {groups:,} groups simulated")
    return f"caches: cold at the launch's start, as ncu measures by default; {how}"


def _not_predicted(facts) -> list[str]:
    by_reason: dict[str, list[str]] = {}
    for name, why in facts.missing.items():
        if name not in facts.counters:
            by_reason.setdefault(_cut(why, 300), []).append(name)
    return [f"not predicted ({why}): {', '.join(names)}" for why, names in by_reason.items()]


def _agreement(rows) -> str:
    ratios = [_ratio(p, m) for _, p, m in rows]
    judged = [r for r in ratios if r is not None]
    within = sum(1 for r in judged if abs(r - 1) <= AGREEMENT)
    return (f"within ±{AGREEMENT:.0%} of the profile: {within} of {len(judged)} counters "
            "both give")


def _print_table(facts, params, rows, launch, note: str) -> None:
    from kernelcast.report import WIDTH

    out = textwrap.wrap(_header(facts, params), WIDTH, subsequent_indent="  ")
    if launch is not None:
        out += textwrap.wrap(f"measured: ncu's launch {launch.id} ({_cut(launch.kernel)})"
                             + (f"; {note}" if note else ""), WIDTH, subsequent_indent="  ")
    out += ["", _metric_table(facts, rows, launch is not None)]
    if launch is not None:
        out.append(_agreement(rows))
    for line in _not_predicted(facts):
        out += textwrap.wrap(line, WIDTH, subsequent_indent="  ")
    out += ["", ("access sites: where the sectors come from (bytes per lane; 32-byte sectors "
                 "of a global access,"),
            "wavefronts of a shared one, per warp request and in total)",
            _site_table(facts) if facts.sites else "  none", ""]
    for line in (_compiler_line(facts), _occupancy_line(facts), _caches_line(facts)):
        out += textwrap.wrap(line, WIDTH, subsequent_indent="  ")
    print("\n".join(out))


def _json_safe(doc):
    """*doc* with every number that is not finite made null (JSON has no NaN)."""
    if isinstance(doc, dict):
        return {k: _json_safe(v) for k, v in doc.items()}
    if isinstance(doc, list | tuple):
        return [_json_safe(v) for v in doc]
    if isinstance(doc, float) and not math.isfinite(doc):
        return None
    return doc


def _print_json(facts, rows, launch, path, device) -> None:
    doc = facts.to_json()
    if launch is not None:
        doc["measured"] = {n: _finite(m) for n, _, m in rows}
        doc["ratio"] = {n: _ratio(p, m) for n, p, m in rows}
        doc["profile"] = {"path": path, "launch": launch.id, "kernel": launch.kernel,
                          "device": device or None}
    print(json.dumps(_json_safe(doc), indent=1, allow_nan=False))

# }}}


def counters(args) -> int:
    from kernelcast.frontends.arguments import sizes, statistics
    from kernelcast.cli.models import opencl_flags
    from kernelcast.facts import predict_counters
    from kernelcast.facts.counters import hardware_named
    from kernelcast.frontends.files import load_kernel
    from kernelcast.frontends.loopy import check_statistics
    from kernelcast.measure.arrays import check_sizes

    if not args.hardware:
        raise UsageError("counters needs --hardware h100, h200 or a JSON file: the "
                         "predicted counters are one GPU's, never assumed for another")
    if args.kernel.endswith(".cl"):
        return _opencl_counters(args)
    cl_flags = opencl_flags(args)
    if cl_flags:
        raise UsageError(f"{cl_flags[0]} is for a .cl kernel")
    params = sizes(args.param or [])
    stats = statistics(args.stat)  # malformed flags before anything is read
    hw = hardware_named(args.hardware)
    launches = _read_profile(args.compare) if args.compare else None
    knl = load_kernel(args.kernel)
    check_statistics(knl, stats)
    check_sizes(knl, params)  # sizes that no launch could have (beyond the argument type)
    facts = predict_counters(knl, params, hw, data_statistics=stats or None,
                             compiler=not args.no_compiler)
    return _report(args, facts, params, launches)


def _opencl_counters(args) -> int:
    """``counters`` of a .cl kernel: its warp-level memory counters
    (kernelcast.facts.opencl), the rest listed as not predicted."""
    from kernelcast.frontends.arguments import scalar_arguments
    from kernelcast.cli.models import check_opencl_launch, opencl_counts
    from kernelcast.facts.counters import hardware_named
    from kernelcast.facts.opencl import opencl_launch_facts

    check_opencl_launch(args)
    hw = hardware_named(args.hardware)
    launches = _read_profile(args.compare) if args.compare else None
    counts, local = opencl_counts(args)
    scalars = scalar_arguments(args.arg)
    facts = opencl_launch_facts(counts, args.global_size, local, scalars=scalars,
                                hardware=hw)
    return _report(args, facts, scalars, launches)


def _report(args, facts, params, launches) -> int:
    """Print *facts* (table or JSON), beside the profiled launch where one is given."""
    if not args.no_compiler and facts.compiler is None and not args.kernel.endswith(".cl"):
        print(f"kernelcast: warning: the compiler's counters are not predicted: "
              f"{_why_missing(facts)}", file=sys.stderr)
    launch, note, device = None, "", ""
    if launches is not None:
        launch, note = pick_launch(launches, facts, args.compare)
        _check_units(launch, [n for n in facts.counters if n in launch.metrics],
                     args.compare)
        device = _check_device(launch, facts.hardware, args.compare)
        if note and args.json:
            print(f"kernelcast: note: {note}", file=sys.stderr)
    rows = _rows(facts, launch)
    if args.json:
        _print_json(facts, rows, launch, args.compare, device)
    else:
        _print_table(facts, params, rows, launch, note)
    return 0
