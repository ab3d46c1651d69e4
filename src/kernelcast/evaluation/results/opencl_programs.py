"""Real OpenCL programs predicted from source by every model, from
data/<gpu>/opencl-programs-eval.json (benchmarks/opencl_programs.py evaluate): the share
of launches within 0.7–1.3 per model and GPU and predicted/measured per kernel; their
memory counters predicted from source against Nsight Compute
(data/h100/opencl-counters.json: ``opencl_counters``), and each model's hits by what
bounds the launch (data/h100/opencl-hierarchy.json: ``opencl_causes``).

Public names: OPENCL_PROGRAM_MODELS, OPENCL_COUNTERS, section_opencl_programs,
opencl_counters, opencl_causes.
"""

from __future__ import annotations

import json

from kernelcast.evaluation.results.common import Data, pct, table

OPENCL_PROGRAM_MODELS = {"poppl-herz": "Pöppl–Herz (classes)",
                         "poppl-herz-simple": "Pöppl–Herz (simple)", "paper": "paper",
                         "extended": "extended", "hong-kim": "Hong–Kim"}


def section_opencl_programs(data: Data) -> list[str]:
    out = ["## Real OpenCL programs, predicted from source by every model", ""]
    docs = [(label, json.loads((data / d / "opencl-programs-eval.json").read_text(
        encoding="utf-8"))) for d, label in (("h100", "H100"), ("h200", "H200"))
        if (data / d / "opencl-programs-eval.json").exists()]
    if not docs:
        return out + ["*Not generated: no data/<gpu>/opencl-programs-eval.json "
                      "(benchmarks/opencl_programs.py evaluate).*"]
    out += ["OpenCL C kernels of the kinds applications ship (`kernelcast.suites."
            "opencl_programs`, sources in data/opencl-programs/: PolyBench/GPU's linear "
            "algebra, data mining and stencils, reductions and scans, softmax, CSR spmv, "
            "image filters, k-means, kNN, N-body, Black-Scholes; naive and tiled "
            "variants), written from the computations' definitions with loops bounded by "
            "size arguments, triangular loops, edge guards, several kernels per file, "
            "`-D` options and typedefs; each at two sizes with the launch such code uses, "
            "checked against a NumPy reference and timed by the paper's protocol "
            "(`benchmarks/opencl_programs.py measure`). No launch is in any fitting set. "
            "Every model predicts from the source alone with the committed OpenCL "
            "profiles of the device: Pöppl–Herz from the front-end's counts, the paper, "
            "extended and Hong–Kim models from the paper's properties of the source "
            "(`benchmarks/opencl_programs.py evaluate`). *within*: share of launches with "
            "0.7 < predicted/measured < 1.3; *geomean*: geometric mean of "
            "|predicted/measured − 1|; *best*: the model nearest the measurement, per "
            "launch.", ""]
    rows = []
    for label, doc in docs:
        for model, name in OPENCL_PROGRAM_MODELS.items():
            m = doc["models"].get(model)
            if m is None:
                continue
            failed = f"{len(m['failed'])} not predicted" if m["failed"] else "—"
            rows.append([label, name, pct(m["within_30pct"], 0),
                         pct(m["geomean_rel_error"], 0), f"{m['median_ratio']:.2f}",
                         str(m["launches"]), failed])
        best = doc["best_per_launch"]
        rows.append([label, "best per launch", pct(best["within_30pct"], 0), "", "", "",
                     ", ".join(f"{k} {v}" for k, v in sorted(best["models"].items(),
                                                              key=lambda kv: -kv[1]))])
    out += [f"- {label}: {doc['device']}, driver {doc['driver']}, measured "
            f"{doc['measured'][:10]}; {doc['launches']} launches of {doc['kernels']} kernels."
            for label, doc in docs] + [""]
    out.append(table(["GPU", "model", "within", "geomean", "median ratio", "launches",
                      "not predicted / best"], rows, ["l", "l", "r", "r", "r", "r", "l"]))
    label, doc = docs[0]
    models = [m for m in OPENCL_PROGRAM_MODELS if m in doc["models"]]
    out += ["", f"Per kernel on the {label} (predicted/measured at its two sizes):", ""]
    kernels: dict = {}
    for e in doc["per_launch"]:
        kernels.setdefault((e["program"], e["kernel"]), []).append(e)
    rows = []
    for (program, kernel), entries in kernels.items():
        def ratio(e, m):
            v = e["predicted_s"].get(m)
            return f"{v / e['measured_s']:.2f}" if isinstance(v, float) else "—"
        rows.append([f"{kernel} ({program})",
                     " / ".join(f"{e['measured_s'] * 1e6:.0f}" for e in entries)]
                    + [" / ".join(ratio(e, m) for e in entries) for m in models])
    out.append(table(["kernel", "measured µs"] + [OPENCL_PROGRAM_MODELS[m] for m in models],
                     rows, ["l", "r"] + ["r"] * len(models)))
    return out + [""] + opencl_counters(data) + [""] + opencl_causes(data)


OPENCL_COUNTERS = {
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "global load requests",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "global load sectors",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": "global store requests",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": "global store sectors",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": "shared load wavefronts",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": "shared store wavefronts",
    "smsp__sass_inst_executed_op_shared_ld.sum": "shared load instructions",
    "smsp__sass_inst_executed_op_shared_st.sum": "shared store instructions",
}


def opencl_counters(data: Data) -> list[str]:
    """The memory counters predicted from the programs' source against ncu's."""
    out = ["### Their memory counters, predicted from source, against Nsight Compute", ""]
    path = data / "h100" / "opencl-counters.json"
    doc = data.load(path)
    if doc is None:
        return out + [data.missing(path)]
    out += [f"`kernelcast counters KERNEL.cl` (`kernelcast.facts.opencl`) for each launch "
            f"above, against ncu {doc['ncu'] or ''} on the {doc['device']} (driver "
            f"{doc['driver']}, {doc['profiled'][:10]}; `benchmarks/opencl_counters.py`, "
            f"`{data.rel(path)}`). ncu profiles CUDA, not OpenCL: each kernel ran as its CUDA "
            "translation (`kernelcast.frontends.opencl.cuda`, NVRTC) on the same inputs "
            "and launch, its outputs checked against the program's reference"
            + (f" ({', '.join(doc['not_right'])} computed something else and are left "
               "out)" if doc["not_right"] else " (all right)")
            + ". *within 20%*: launches where predicted/measured is in 0.8–1.2, of those "
            "where either is nonzero; *geomean ratio*: geometric mean of predicted/"
            "measured.", ""]
    rows = [[name, f"{s['within_20pct']} of {s['launches']}",
             f"{s['geomean_ratio']:.2f}" if s["geomean_ratio"] else "—"]
            for metric, name in OPENCL_COUNTERS.items()
            if (s := doc["summary"].get(metric)) and s["launches"]]
    out.append(table(["counter", "within 20%", "geomean ratio"], rows, ["l", "r", "r"]))
    misses = []
    for r in doc["per_launch"]:
        off = [f"{OPENCL_COUNTERS[m]} {c['ratio']:.2f}" for m, c in r["counters"].items()
               if c["ratio"] is not None and abs(c["ratio"] - 1) > 0.2]
        if off:
            misses.append(f"{r['launch'].split('/')[0]} ({'; '.join(off)})")
    if misses:
        out += ["", "Outside 20%: " + ", ".join(dict.fromkeys(misses)) + "."]
    return out


def opencl_causes(data: Data) -> list[str]:
    """Each model's hits on the programs' launches, by what bounds the launch."""
    out = ["### What bounds their launches", ""]
    path = data / "h100" / "opencl-hierarchy.json"
    doc = data.load(path)
    if doc is None:
        return out + [data.missing(path)]
    models = [m for m in next(iter(doc["classes"].values())) if m != "launches"]
    out += [f"Each launch above, profiled for its DRAM, L2 and L1 traffic, instructions and "
            f"the SMs' and DRAM's throughput on the {doc['device']} (driver "
            f"{doc['driver']}, {doc['profiled'][:10]}; `benchmarks/opencl_counters.py "
            f"profile --hierarchy` and `causes`, `{data.rel(path)}`), is put in the first class "
            "it fits: under a quarter of a wave (`launch__waves_per_multiprocessor`), DRAM- "
            "or SM-bound (≥ 60% of peak throughput), reuse in L1 (≥ 3 L1 sectors per L2 "
            "sector), none saturated. The count of launches within 0.7–1.3 per model:", ""]
    rows = [[name, str(c["launches"]), *(str(c[m]) for m in models)]
            for name, c in doc["classes"].items()]
    out.append(table(["bound by", "launches", *models], rows,
                     ["l", "r", *("r" for _ in models)]))
    return out
