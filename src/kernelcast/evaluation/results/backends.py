"""OpenCL and CUDA compared: the same cases timed through both backends on one GPU
(the stores data/<gpu>/opencl.sqlite and cuda.sqlite, paired by case name), CUDA time
over OpenCL time per suite and for the kernels where they differ by more than 5%, the
launch overhead of an empty kernel and the unstable rows of each store.

Public names: section_backends.
"""

from __future__ import annotations

import math

from kernelcast.evaluation.results.common import (GPU_LABEL, GPUS, STORES, store_label,
                                                  table)
from kernelcast.evaluation.results.stores import dates_line

def section_backends(stores) -> list[str]:
    import numpy as np

    out = ["## OpenCL and CUDA compared", "",
           "The same cases timed through both backends on one GPU (paired by case name), "
           "CUDA time / OpenCL time; geometric mean, and the range, over the cases whose "
           "OpenCL time exceeds 50 µs (clear of launch overhead), with all paired cases "
           "in the last column. `benchmarks/backend_comparison.py` prints it per kernel "
           "variant.", ""]

    def geo(values):
        values = np.asarray(values, float)
        return float(np.exp(np.log(values).mean())) if len(values) else float("nan")

    pairs = {}
    for gpu in GPUS:
        cl, cu = stores.get((gpu, "opencl")), stores.get((gpu, "cuda"))
        if cl is None or cu is None:
            continue
        merged = cl["frame"].merge(cu["frame"], on="case_name", suffixes=("_cl", "_cu"))
        merged = merged[merged.min_s_cl.notna() & merged.min_s_cu.notna()].copy()
        merged["ratio"] = merged.min_s_cu / merged.min_s_cl
        pairs[gpu] = merged
    if not pairs:
        return out + ["*Not generated: no GPU has both an OpenCL and a CUDA store.*"]
    rows = []
    for gpu, merged in pairs.items():
        for suite in ("measurement", "extension", "test", "validation"):
            group = merged[merged.suite_cl == suite]
            if not len(group):
                continue
            long = group[group.min_s_cl > 50e-6]
            rows.append([GPU_LABEL[gpu], suite, len(long),
                         f"{geo(long.ratio):.3f}" if len(long) else "–",
                         f"{long.ratio.min():.3f} – {long.ratio.max():.3f}" if len(long)
                         else "–", len(group), f"{geo(group.ratio):.3f}"])
    out += [table(["GPU", "suite", "cases > 50 µs", "CUDA / OpenCL", "range",
                   "all paired", "CUDA / OpenCL, all"], rows,
                  ["l", "l", "r", "r", "r", "r", "r"]), ""]
    for merged in pairs.values():
        merged["kernel"] = (merged.kernel_class_cl + merged.variant_cl.fillna("").map(
            lambda v: f"[{v}]" if v else "") + " " + merged.dtype_cl.fillna("–"))
    long = {gpu: m[m.min_s_cl > 50e-6] for gpu, m in pairs.items()}
    kernels = sorted({k for m in long.values() for k in m.kernel.unique()})
    differ, alike = [], []
    for kernel in kernels:
        ratios = {gpu: long[gpu][long[gpu].kernel == kernel].ratio for gpu in long}
        means = [geo(r) for r in ratios.values() if len(r)]
        if any(abs(math.log(m)) > math.log(1.05) for m in means):
            row = [kernel]
            for gpu in GPUS:
                r = ratios.get(gpu)
                row += ([len(r), f"{geo(r):.3f}", f"{r.min():.3f} – {r.max():.3f}"]
                        if r is not None and len(r) else ["–", "–", "–"])
            differ.append(row)
        else:
            alike.append(kernel)
    heads = ["kernel"]
    for gpu in GPUS:
        heads += [f"{GPU_LABEL[gpu]} cases", f"{GPU_LABEL[gpu]} CUDA / OpenCL",
                  f"{GPU_LABEL[gpu]} range"]
    out += [f"Kernels (class, variant, precision) whose CUDA / OpenCL geometric mean "
            f"over cases above 50 µs differs from 1 by more than 5% on either GPU "
            f"({len(differ)} of {len(kernels)}; the other {len(alike)} agree within 5%):",
            "", table(heads, differ, ["l"] + ["r"] * (len(heads) - 1)), ""]
    notes = []
    for gpu, merged in pairs.items():
        empty = merged[merged.kernel_class_cl == "empty"]
        if len(empty):
            notes.append(f"- {GPU_LABEL[gpu]}: the shortest empty-kernel launch reads "
                         f"{empty.min_s_cl.min() * 1e6:.1f} µs through OpenCL events and "
                         f"{empty.min_s_cu.min() * 1e6:.1f} µs through CUDA events.")
    for gpu, backend in STORES:
        if (gpu, backend) not in stores:
            continue
        frame = stores[gpu, backend]["frame"]
        unstable = frame[frame.status == "unstable"]
        if len(unstable):
            notes.append(f"- {store_label(gpu, backend)}: {len(unstable)} of {len(frame)} "
                         "rows unstable, all shorter than "
                         f"{unstable.min_s.max() * 1e6:.1f} µs.")
    out += ["Launch overhead and timing noise (a row is *unstable* when its median time "
            "exceeds its minimum by more than 10% after two re-measurements):", "",
            *notes, "",
            "Where the backends differ, the compilers differ (docs/measurement.md): NVRTC's "
            "default float32 division is IEEE-exact where NVIDIA's OpenCL uses a faster "
            "approximate one, cupy compiles with flush-to-zero, and the tiled products "
            "compile differently. Data: the four stores, measured "
            + dates_line(stores, ("measurement", "extension", "test", "validation"))
            + "."]
    return out
