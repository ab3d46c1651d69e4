"""The ``project`` verb: GROPHECY's layout search of a code skeleton, projected on a GPU.

``kernelcast project SKELETON.sk --hardware GPU`` reads the skeleton (``--define NAME=N``
overriding its macros), searches the layout space of one of its ``parallel_for`` loops
(narrowed by a ``--hints`` TOML file), projects every layout through the Hong–Kim model
(kernelcast.models.grophecy.search) and prints the ``--top`` N fastest: a header (what
was searched, how many layouts were left out and why, how long it took), a table (rank,
projected time, GFLOP/s where the skeleton defines ``FLOPS``, the bottleneck verdict of
GROPHECY's footnote 5 and each factor of the layout), then the best layout in words with
the MWP, CWP − 1 and N − 1 that give its verdict. ``--json`` prints one JSON object
instead. On a terminal, a search that runs past a second shows its progress on stderr,
erased when it ends; stdout only ever holds the result.

Public names: project.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import textwrap
import time
from dataclasses import asdict
from pathlib import Path

from kernelcast.frontends.arguments import integer, pairs
from kernelcast.cli.args import positive_int
from kernelcast.errors import KernelcastError, UsageError

_WIDTH = 100  # columns, as kernelcast.report's tables
_NBSP = "\u00a0"

#: The macro that gives a kernel's floating-point operations (for GFLOP/s).
FLOPS = "FLOPS"

_NO_FLOPS = (f"GFLOP/s not shown: the skeleton defines no {FLOPS} macro (add "
             f"'#define {FLOPS} ...' or --define {FLOPS}=N)")


def _count(text: str, flag: str, least: int) -> int:
    """An integer flag value of at least *least*, else a one-line UsageError."""
    try:
        if least >= 1:
            return positive_int(text)
        value = int(text)
        if value < least:
            raise ValueError(text)
        return value
    except (argparse.ArgumentTypeError, ValueError):
        what = "a positive integer" if least >= 1 else f"an integer of at least {least}"
        raise UsageError(f"{flag}: expected {what}, got {text!r}") from None


def _defines(items) -> dict[str, int]:
    """{NAME: integer} from --define NAME=VALUE; one line naming the flag otherwise."""
    out = {}
    for name, value in pairs(items, str, "--define").items():
        try:
            out[name] = integer(value)
        except (UsageError, ValueError, OverflowError):
            raise UsageError(f"--define {name}: expected an integer, got {value.strip()!r}"
                             ) from None
    return out


def _load(path: str, defines: dict[str, int]):
    """The skeleton; a --define that names no macro the skeleton defines or uses (a typo)
    is refused, except FLOPS, which only this verb reads."""
    from kernelcast.frontends.skeleton import load_skeleton

    skeleton = load_skeleton(path, defines or None)
    written = {m.name for m in skeleton.macros if m.line is not None}
    for name in defines:
        if name in written or name == FLOPS:
            continue
        rest = {k: v for k, v in defines.items() if k != name}
        try:
            load_skeleton(path, rest or None)
        except KernelcastError:
            continue  # the skeleton uses the macro and leaves its value to -D
        macros = ", ".join(sorted(written)) or "none"
        raise UsageError(f"--define {name}: {path} has no macro {name} (its macros: "
                         f"{macros})")
    return skeleton


def _kernel(skeleton, index):
    kernels = skeleton.kernels
    if index is None:
        if len(kernels) != 1:
            lines = ", ".join(str(k.line) for k in kernels)
            raise UsageError(f"{skeleton.path} has {len(kernels)} parallel_for loops "
                             f"(lines {lines}); choose one with --kernel 0..{len(kernels) - 1}")
        return 0, kernels[0]
    index = _count(index, "--kernel", 0)
    if index >= len(kernels):
        raise UsageError(f"--kernel {index}: {skeleton.path} has {len(kernels)} parallel_for "
                         f"loop{'s' if len(kernels) > 1 else ''} (--kernel 0.."
                         f"{len(kernels) - 1})")
    return index, kernels[index]


def _flops(skeleton) -> int | None:
    try:
        flops = skeleton.macro(FLOPS)
    except KeyError:
        return None
    if flops < 0:
        raise UsageError(f"{skeleton.path}: {FLOPS} is {flops}; it counts the kernel's "
                         "floating-point operations, so it cannot be negative")
    return flops


class _Progress:
    """Layouts searched so far, on one line of a terminal's stderr that is rewritten in
    place (at most five times a second, never wider than the terminal, so that it never
    wraps) once the search has run a second, and erased when it ends; nothing where stderr
    is not a terminal (the result says how many were searched and how long it took)."""

    def __init__(self, what: str):
        self.stream = sys.stderr
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self.what, self.start, self.width = what, time.perf_counter(), 0
        self.shown = -math.inf

    def __call__(self, searched: int) -> None:
        now = time.perf_counter()
        if not self.live or now - self.start < 1 or now - self.shown < 0.2:
            return
        columns = shutil.get_terminal_size().columns - 1
        line = (f"kernelcast: {self.what}: {searched} layouts searched, "
                f"{now - self.start:.0f} s")[:columns]
        print("\r" + line.ljust(self.width), end="", file=self.stream, flush=True)
        self.shown, self.width = now, len(line)

    def close(self) -> None:
        if self.width:
            print("\r" + " " * self.width + "\r", end="", file=self.stream, flush=True)
            self.width = 0


def _cells(layout) -> dict[str, str]:
    """Each factor of *layout*, short enough for a table row."""
    tasks = math.prod(layout.fold)
    return {
        "block": "×".join(map(str, layout.block)),
        "folding": "none" if tasks == 1 else "×".join(map(str, layout.fold)),
        "staging": ", ".join(f"{k} by {s}" for k, s in layout.stages) or "none",
        "caching": ", ".join(layout.cached) or "none",
        "unrolling": "by 16" if layout.unroll else "none",
    }


def _gflops(flops, seconds):
    return None if flops is None else flops / seconds / 1e9


def _why(estimate) -> str:
    """Footnote 5's comparison behind the verdict, in numbers (each "X = v" unbreakable
    by _say)."""
    bounds = {"memory-bound": ("MWP", estimate.mwp),
              "compute-bound": ("CWP − 1", estimate.cwp - 1),
              "not enough warps": ("N − 1", estimate.n - 1)}
    name, _ = bounds[estimate.verdict]
    values = ", ".join(f"{n} = {v:.3g}".replace(" ", _NBSP) for n, v in bounds.values())
    tie = ("; CWP − 1 ties with it, as CWP was capped at N" if estimate.verdict ==
           "not enough warps" and estimate.cwp == estimate.n else "")
    return f"{name.replace(' ', _NBSP)} is the smallest of {values}{tie}"


def _layout_json(rank, projection, indices, flops) -> dict:
    layout, e = projection.layout, projection.estimate
    return {
        "rank": rank,
        "seconds": projection.seconds,
        "gflops": _gflops(flops, projection.seconds),
        "verdict": e.verdict,
        "regime": e.regime,
        "mwp": e.mwp,
        "cwp": e.cwp,
        "n": e.n,
        "block": dict(zip(indices, layout.block)),
        "fold": dict(zip(indices, layout.fold)),
        "stages": dict(layout.stages),
        "cached": list(layout.cached),
        "unroll": layout.unroll,
        "described": layout.describe(indices),
        "workload": asdict(projection.characteristics.workload),
    }


def _left_out(infeasible: dict) -> str:
    return "; ".join(f"{n} that {why}" for why, n in infeasible.items())


def _say(text: str) -> None:
    """*text* within the width of a table; a name or "X = v" (joined by no-break spaces)
    is never split."""
    print(textwrap.fill(text, _WIDTH, subsequent_indent="  ", break_long_words=False,
                        break_on_hyphens=False).replace(_NBSP, " "))


def project(args) -> int:
    from kernelcast.models.grophecy.search import load_hints, search
    from kernelcast.models.hong_kim import load_hardware
    from kernelcast.report import format_seconds, format_table

    top = _count(args.top, "--top", 1)
    defines = _defines(args.define)
    skeleton = _load(args.skeleton, defines)
    index, kernel = _kernel(skeleton, args.kernel)
    flops = _flops(skeleton)
    hardware = load_hardware(args.hardware)
    hints = load_hints(args.hints) if args.hints else None

    space = f"parallel_for({', '.join(map(str, kernel.dims))}) : {', '.join(kernel.indices)}"
    where = f"{skeleton.path}, kernel {index} (line {kernel.line})"
    progress = _Progress(f"{Path(skeleton.path).name} on {args.hardware}")
    started = time.perf_counter()
    try:
        result = search(skeleton, hardware, kernel=kernel, hints=hints, progress=progress)
    finally:
        progress.close()
    took = time.perf_counter() - started
    if not result.projections:
        why = f"{result.searched} layouts searched, all left out: {_left_out(result.infeasible)}"
        if hints is not None:
            raise UsageError(f"{args.hints}: no hinted layout fits {hardware.name} ({why})")
        raise KernelcastError(f"no layout of {where} fits {hardware.name} ({why})")

    shown = result.projections[:top]
    indices = list(kernel.indices)
    best = result.best
    ties = sum(1 for p in result.projections
               if math.isclose(p.seconds, best.seconds, rel_tol=1e-12)) - 1

    if args.json:
        doc = {
            "skeleton": skeleton.path,
            "kernel": {"index": index, "line": kernel.line, "indices": indices,
                       "dims": list(kernel.dims)},
            "defines": defines,
            "hardware": hardware.name,
            "flops": flops,
            "hints": args.hints,
            "searched": result.searched,
            "feasible": len(result.projections),
            "infeasible": result.infeasible,
            "search_seconds": took,
            "ties_with_best": ties,
            "layouts": [_layout_json(rank, p, indices, flops)
                        for rank, p in enumerate(shown, 1)],
        }
        json.dump(doc, sys.stdout, indent=1)
        print()
        return 0

    _say(f"{where}: {space}")
    left = f"; left out: {_left_out(result.infeasible)}" if result.infeasible else ""
    hinted = f", narrowed by {args.hints}," if args.hints else ""
    _say(f"on {hardware.name}: {result.searched} layouts searched{hinted} in {took:.1f} s; "
         f"{len(result.projections)} feasible{left}")
    if flops is None:
        _say(_NO_FLOPS)
    which = (f"the {len(shown)} fastest" if len(shown) < len(result.projections)
             else f"all {len(shown)}")
    print(f"{which}, by projected time (Hong–Kim; bottleneck by GROPHECY's footnote 5):")
    print()
    rows = []
    for rank, p in enumerate(shown, 1):
        row = {"#": rank, "time": format_seconds(p.seconds)}
        if flops is not None:
            row["GFLOP/s"] = f"{_gflops(flops, p.seconds):.4g}"
        row["bottleneck"] = p.estimate.verdict
        rows.append({**row, **_cells(p.layout)})
    import pandas as pd

    print(format_table(pd.DataFrame(rows)))
    print()
    words = best.layout.describe(indices)
    factors = "; ".join(f"{factor}: {words[factor]}" for factor in
                        ("block", "folding", "staging", "caching", "unrolling"))
    tied = (f" ({ties} other layout{'s project' if ties > 1 else ' projects'} the same "
            "time; the simplest is shown)" if ties else "")
    rate = f", {_gflops(flops, best.seconds):.4g} GFLOP/s" if flops is not None else ""
    _say(f"best: {factors}{tied}")
    _say(f"  {format_seconds(best.seconds)}{rate}, {best.estimate.verdict}: "
         f"{_why(best.estimate)}")
    return 0
