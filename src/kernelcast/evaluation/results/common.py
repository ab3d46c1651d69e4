"""What every section of the results page shares: the stores' GPUs and backends and their
labels, the formatting of numbers and markdown tables, the data root the sections read
(``Data``: paths on the page relative to the repository that holds it, and each file's
last commit from git) and the figure drawers passed in from above (``Figures``).

Public names: GPUS, BACKENDS, STORES, GPU_LABEL, BACKEND_LABEL, MODEL_LABEL, Data,
Figures, pct, published, seconds_text, stamp, micro, table, params_text, store_label, day_range,
overall.
"""

from __future__ import annotations

import json
import math
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

GPUS = ("h100", "h200")
BACKENDS = ("opencl", "cuda")
STORES = tuple((gpu, backend) for gpu in GPUS for backend in BACKENDS)
GPU_LABEL = {"h100": "H100", "h200": "H200"}
BACKEND_LABEL = {"opencl": "OpenCL", "cuda": "CUDA"}
MODEL_LABEL = {"paper": "paper", "extended": "extended", "facts": "facts",
               "hong-kim": "Hong–Kim", "hong-kim-facts": "Hong–Kim on the facts"}


class Data:
    """The data root (a repository's data/ folder) the sections read. ``data / "h100"`` is
    a path under it; the repository is its parent folder: paths on the page are written
    relative to it (``rel``), and git in it says when a file was last committed."""

    def __init__(self, root):
        self.dir = Path(root).resolve()
        self.repo = self.dir.parent

    def __truediv__(self, name) -> Path:
        return self.dir / name

    def rel(self, path) -> str:
        try:
            return str(Path(path).resolve().relative_to(self.repo))
        except ValueError:
            return str(path)

    def missing(self, path, script: str | None = None) -> str:
        """The line a section writes for a missing input (and the benchmark that writes
        it, *script*)."""
        run = (f" Run `.venv/bin/python benchmarks/{script}` to write it." if script
               else "")
        return f"*Not generated: `{self.rel(path)}` is missing.*" + run

    def load(self, path):
        """The JSON document at *path*; None where there is no such file."""
        path = Path(path)
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None

    def documents(self, name) -> list[tuple[str, Path, dict]]:
        """(gpu, path, document) of data/<gpu>/*name* for each GPU that has it."""
        found = [(gpu, self.dir / gpu / name) for gpu in GPUS]
        return [(gpu, path, self.load(path)) for gpu, path in found if path.exists()]

    def git(self, *args) -> str | None:
        try:
            run = subprocess.run(["git", *args], cwd=self.repo, text=True,
                                 capture_output=True, check=True)
        except (OSError, subprocess.CalledProcessError):
            return None
        return run.stdout.strip()

    def code_commit(self) -> str:
        """The repository's commit, and whether the code and data the page is made from
        (src, scripts, benchmarks, data; not the page and figures being rewritten) differ
        from it."""
        head = self.git("rev-parse", "--short", "HEAD")
        if head is None:
            return "unknown (no git)"
        dirty = self.git("status", "--porcelain", "--untracked-files=no", "--", "src",
                         "scripts", "benchmarks", "data")
        return head + (" with uncommitted changes" if dirty else "")

    def file_commit(self, path) -> str:
        """Last commit touching *path*, and whether the working copy differs from it."""
        path = Path(path)
        if not path.exists():
            return "missing"
        status = self.git("status", "--porcelain", "--", self.rel(path))
        last = self.git("log", "-1", "--format=%h %cs", "--", self.rel(path))
        if status is None:
            return "unknown (no git)"
        if status.startswith("??"):
            return "not committed"
        return (last or "not committed") + (", changed since" if status else "")


@dataclass(frozen=True)
class Figures:
    """The figures the page's sections draw, and the folder they go to. The page links
    each as ``figures/<name>.png``, so *folder* is the figures/ folder beside the page.
    The drawers are kernelcast.report's (a layer above evaluation), passed in by whoever
    writes the page: ``random_kernels(docs, labels, path)``,
    ``characterization(panels, path)``, ``tuning_methodology(doc, path, label)`` draw and
    write a file; ``advice(versions, title=, measured=)`` returns a figure that
    ``save(figure, path)`` writes. Without a Figures, a section writes its links and draws
    nothing."""

    folder: Path
    random_kernels: Callable
    characterization: Callable
    tuning_methodology: Callable
    advice: Callable
    save: Callable


# ---------------------------------------------------------------- formatting

def pct(value, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{100 * value:.{digits}f}%"


def published(value) -> str:
    """A published figure at the precision it was published (two decimals)."""
    return "–" if value is None else f"{round(100 * value)}%"


def seconds_text(s) -> str:
    """Seconds in a readable unit with three significant digits: 18.1 µs, 2.00 ms."""
    if s is None or (isinstance(s, float) and math.isnan(s)):
        return "–"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if abs(s) >= scale or unit == "ns":
            v = s / scale
            digits = 0 if abs(v) >= 100 else 1 if abs(v) >= 10 else 2
            return f"{v:.{digits}f} {unit}"
    return str(s)


def stamp(doc) -> str:
    """When a benchmark document was written: its ISO date to the minute, in UTC."""
    return f"{doc['date'][:16].replace('T', ' ')} UTC"


def micro(s) -> str:
    return "–" if s is None else f"{s * 1e6:.1f} µs"


def table(headers, rows, align=None) -> str:
    """A markdown table; *align* is "l" or "r" per column (default: the first left, the
    rest right)."""
    align = align or ["l"] + ["r"] * (len(headers) - 1)
    rule = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def params_text(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(params.items()))


def store_label(gpu, backend) -> str:
    return f"{GPU_LABEL[gpu]} {BACKEND_LABEL[backend]}"


def day_range(stamps) -> str:
    days = sorted({str(s)[:10] for s in stamps if s})
    if not days:
        return "–"
    return days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"


def overall(tab) -> float | None:
    """The geometric mean of relative error of a Table 1 (None where there is none)."""
    from kernelcast.metrics import geometric_mean

    return None if tab is None or not len(tab) else geometric_mean(tab.rel_error)
