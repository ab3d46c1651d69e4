"""The fine-grained (criteria) model on the H100 and H200: its microbenchmarks
(data/<gpu>/criteria/microbenchmarks.json: throughput and latency per operation, the
memory hierarchy, the characterization functions, drawn by the page's Figures), the
paper's case studies measured (data/<gpu>/criteria/cases.json), the criteria of every
version judged from the committed Nsight Compute profiles (data/<gpu>/criteria/ncu.tar.xz)
with the GPU's criteria profile (data/profiles/*-cuda-criteria.json, read by a
``load_profile`` passed in: kernelcast.profile is a layer above evaluation) and drawn as
the advice figures, and kernelcast's symbolic counts against the hardware's counters
(data/h100/criteria/counters.json.xz).

Public names: CRITERIA_PAPER, CRITERIA_GPUS, section_criteria.
"""

from __future__ import annotations

import json
import math

from kernelcast.evaluation.results.common import Data, Figures, table

# The paper's case studies (§VI, GTX 780): measured speedups of the last
# version over the first, and the potential speedup its model predicted for the original.
CRITERIA_PAPER = {"reduction": ("4.98×", "5.8×"), "transpose": ("3×", "about 3.3×"),
                  "bfs": ("4.1×", "up to 10×")}
CRITERIA_GPUS = (("h100", "H100"), ("h200", "H200"))


def _functions(doc) -> dict:
    """The characterization functions of one GPU's microbenchmark document, and F_SHMEM
    of one warp alone beside the full GPU's."""
    from kernelcast.models.criteria.characterization import (characterize,
                                                             shared_memory_function)

    functions = characterize(doc).functions
    one_warp = shared_memory_function(
        {r["params"]["ways"]: r["one_warp"]["block_cycles_median"] / r["ops_per_thread"]
         for r in doc["records"] if r["kind"] == "bank-conflicts"})
    return {"F_SHMEM": functions["F_SHMEM"], "F_SHMEM, one warp": one_warp,
            **{n: functions[n] for n in ("F_Divergence", "F_DRAMThr", "F_ARITHThr")}}


def section_criteria(data: Data, figures: Figures | None = None,
                     load_profile=None) -> list[str]:
    """The section; *load_profile* (kernelcast.profile.load_profile) reads the criteria
    profiles that judge the case studies, which are left out without it."""
    out = ["## Fine-grained model: microbenchmarks, criteria, case studies and counters on the "
           "H100 and H200", ""]
    docs = [(label, data / gpu / "criteria" / "microbenchmarks.json")
            for gpu, label in CRITERIA_GPUS]
    docs = [(label, path, json.loads(path.read_text(encoding="utf-8")))
            for label, path in docs if path.exists()]
    if not docs:
        return out + [data.missing(data / "h100" / "criteria" / "microbenchmarks.json")]
    labels = [label for label, _, _ in docs]
    runs = "; ".join(
        f"{label}: {doc['device']} (sm_{doc['compute_capability']}, {doc['sms']} SMs, "
        f"driver {doc['nvidia_smi'].split(',')[0]}), {doc['date'][:10]}, `{data.rel(path)}` "
        f"({data.file_commit(path)}), "
        + ("all checks pass" if not sum(len(r.get("ptx_problems", [1]))
                                        + len(r.get("sass_problems", [1]))
                                        for r in doc["records"]) else "CHECKS FAIL")
        for label, path, doc in docs)
    first = docs[0][2]
    out += [f"`benchmarks/criteria_microbenchmarks.py measure`, {runs}; PTX and SASS "
            "listings beside each. Each of the "
            f"{len(first['records'])} microbenchmarks (`kernelcast.suites."
            "criteria_microbenchmarks`, docs/criteria.md) was compiled on the GPU's machine with "
            "nvcc to PTX and a cubin, disassembled with nvdisasm and checked at both levels "
            "(`kernelcast.facts.ptx_checks`: the target instruction at least once per "
            "counted operation, no backward branch between the clock reads, the inputs read "
            "from the clock, other instructions at most 5% of the target's; the paper's "
            "Figure 2 b and c); tests/test_criteria_gpu_data.py reruns the checks on the "
            f"committed listings. Each was then launched {first['warmup']} + "
            f"{first['runs']} times. *per SM per cycle*: the target operations of the whole "
            "launch over the fastest run's time, per SM, at the GPU's maximum SM clock "
            "(launch overhead included, so a lower bound); *latency*: the clock64 cycles of "
            "one block's timed region (median over blocks, fastest run) over one thread's "
            "operations.", ""]
    names = [r["name"] for r in first["records"] if r["kind"] == "throughput"]
    rows = []
    for name in names:
        row = [name.split("/", 1)[1]]
        for _, _, doc in docs:
            by = {r["name"]: r for r in doc["records"]}
            r, lat = by[name], by[name.replace("throughput/", "latency/")]
            ops = r["grid"] * r["block"] * r["ops_per_thread"]
            row += [f"{ops / r['min_s'] / doc['sms'] / (doc['clock_khz'] * 1e3):.1f}",
                    f"{lat['block_cycles_median'] / lat['ops_per_thread']:.1f}"]
        rows.append(row)
    out += [table(["operation"] + [f"{l}: {what}" for l in labels
                                   for what in ("per SM per cycle", "latency, cycles")], rows),
            ""]
    rows = []
    for r0 in first["records"]:
        if not r0["name"].startswith("memory/"):
            continue
        _, what, level = r0["name"].split("/")
        width = 4 if level == "shared" else 8  # bytes per access
        row = [what, {"dram": "DRAM", "shared": "shared"}.get(level, level.upper()),
               f"{r0['params']['footprint_bytes']:,} B"]
        for _, _, doc in docs:
            r = {x["name"]: x for x in doc["records"]}[r0["name"]]
            if what == "load-latency":  # the median run (characterize's latency)
                runs = sorted(r["block_cycles_median_per_run"])
                middle = (runs[(len(runs) - 1) // 2] + runs[len(runs) // 2]) / 2
                row.append(f"{middle / r['ops_per_thread']:.0f} cycles")
            else:  # accesses by every thread of the launch
                moved = r["grid"] * r["block"] * r["ops_per_thread"] * width
                row.append(f"{moved / r['min_s'] / 1e9:,.0f} GB/s")
        rows.append(row)
    out += ["**The memory hierarchy** (8-byte loads by pointer chasing, stores streaming, "
            "8-byte global and 4-byte shared; a latency is the median over the runs of each "
            "run's median block, since a DRAM chain's fastest run finds part of its "
            "footprint in L2; "
            "a latency chain is one warp, throughput the full GPU; *footprint*: the chased "
            "region, per block for throughput).", "",
            table(["access", "level", "footprint"] + labels, rows,
                  ["l", "l", "r"] + ["r"] * len(labels)), ""]
    functions = [(label, _functions(doc)) for label, _, doc in docs]
    rows = []
    for name in functions[0][1]:
        for label, fs in functions:
            f = fs[name]
            rows.append([name, label, ", ".join(f"{x:.3g}: {y:.2f}"
                                                for x, y in zip(f.x, f.y))])
    out += ["**Characterization functions** (`kernelcast.models.criteria.characterization`: "
            "sampled by the microbenchmarks, each sample the median block of the fastest "
            "run, monotone cubic interpolation between samples; docs/criteria.md says how "
            "each is read). F_SHMEM at r = 1 / ways, from dependent 32-bit shared loads that "
            "put *ways* lanes of a warp on one bank, with eight blocks of 256 threads on "
            "every SM (and one warp alone); F_Divergence at r = 1 / (1 + d), d the fraction "
            "of 128 if/else statements that split every warp in halves; F_DRAMThr and "
            "F_ARITHThr at the fraction f of each block's warps that stream from DRAM or "
            "run a chain of f32 adds: their throughput over that of all warps.", "",
            table(["function", "GPU", "samples (x: F)"], rows, ["l", "l", "l"]), ""]
    panels = [
        ("F_SHMEM", "transactions / accesses",
         [(f"{l}{w}", fs[n]) for l, fs in functions
          for n, w in (("F_SHMEM", ""), ("F_SHMEM, one warp", ", one warp"))]),
        ("F_Divergence", "executed / potential instructions",
         [(l, fs["F_Divergence"]) for l, fs in functions]),
        ("F_DRAMThr", "fraction of warps streaming",
         [(l, fs["F_DRAMThr"]) for l, fs in functions]),
        ("F_ARITHThr", "fraction of warps computing",
         [(l, fs["F_ARITHThr"]) for l, fs in functions])]
    if figures is not None:
        figures.characterization(panels, figures.folder / "characterization.png")
    out += ["![characterization functions](figures/characterization.png)", ""]
    out += _criteria_cases(data, figures, load_profile)
    out += _counters(data)
    return out


def _criteria_cases(data: Data, figures: Figures | None, load_profile) -> list[str]:
    docs = [(label, data / gpu / "criteria" / "cases.json") for gpu, label in CRITERIA_GPUS]
    docs = [(label, path, json.loads(path.read_text(encoding="utf-8")))
            for label, path in docs if path.exists()]
    if not docs:
        return [data.missing(data / "h100" / "criteria" / "cases.json")]
    rows = []
    for index, r0 in enumerate(docs[0][2]["records"]):
        row = [r0["application"], r0["version"], r0["description"]]
        for _, _, doc in docs:
            r = doc["records"][index]
            base = next(x for x in doc["records"] if x["application"] == r["application"])
            row += ["error" if "error" in r else
                    f"{r['min_span_s'] * 1e6:.1f} µs, {base['min_span_s'] / r['min_span_s']:.2f}×"
                    f"{'' if r['correct'] else ', WRONG'}, {r['hostsync_of_fastest']:.2f}"]
        rows.append(row)
    paper = "; ".join(f"{app} {measured} measured ({predicted} predicted)"
                      for app, (measured, predicted) in CRITERIA_PAPER.items())
    runs = "; ".join(f"{label} {doc['date'][:10]}, `{data.rel(path)}` ({data.file_commit(path)})"
                     for label, path, doc in docs)
    return ["**Case studies (§VI)** (`kernelcast.suites.criteria_cases`, "
            f"`benchmarks/criteria_cases.py measure`: {runs}; Nsight Compute "
            f"{docs[0][2]['ncu'].split(' (')[0].replace('Version ', '')} profiles of every "
            "launch, `--set full`, in ncu.tar.xz beside each). Every version was checked "
            f"against its reference and timed {docs[0][2]['warmup']} + {docs[0][2]['runs']} "
            "times with CUDA events around every launch and around the whole application. "
            "Per GPU: the fastest run's span; the speedup over the application's first "
            "version; HOSTSYNC, the launches' time over the span (the paper's §IV-A "
            f"criterion) of that run. The paper's GTX 780, last version over the first: "
            f"{paper}.", "",
            table(["application", "version", "what changed"]
                  + [f"{label}: time, speedup, HOSTSYNC" for label, _, _ in docs], rows,
                  ["l", "l", "l"] + ["r"] * len(docs)), ""] + _criteria_judged(
                      data, figures, load_profile)


def _criteria_judged(data: Data, figures: Figures | None, load_profile) -> list[str]:
    """The criteria of every case version, from the committed profiles, with the
    predicted potential speedup of each original against the measured speedups."""
    from kernelcast.models.criteria.advice import SHORT
    from kernelcast.evaluation.criteria_cases import profiled
    from kernelcast.models.criteria.criteria import CRITERIA

    if load_profile is None:
        return ["*Not generated: no reader of the criteria profiles was given "
                "(kernelcast.profile.load_profile).*", ""]
    judged = []
    for gpu, label in CRITERIA_GPUS:
        profile = data / "profiles" / (("nvidia-h100-80gb-hbm3" if gpu == "h100" else
                                        "nvidia-h200") + "-cuda-criteria.json")
        if not profile.exists() or not (data / gpu / "criteria" / "ncu.tar.xz").exists():
            continue
        model = load_profile(profile)
        judged.append((gpu, label, profile, [(record, model.assess(app)) for record, app
                                             in profiled(data / gpu / "criteria")]))
    if not judged:
        return [data.missing(data / "profiles" / "nvidia-h100-80gb-hbm3-cuda-criteria.json")]
    out = ["**The criteria of every version** (`kernelcast.models.criteria.criteria`, "
           "docs/criteria.md; the profiles "
           + ", ".join(f"`{data.rel(p)}`" for _, _, p, _ in judged)
           + " hold each GPU's characterization, fitted from its microbenchmarks by "
           "`benchmarks/criteria_microbenchmarks.py profile`). Each cell: the criterion in "
           "[0, 1] (1 best; — where it does not apply) and its potential speedup; "
           "*potential*: the overall potential speedup of §V (each launch's time over "
           "1/MEMTHR or 1/ARITHTHR as ncu calls it memory- or compute-bound, the gaps "
           "between launches gone); *measured*: the version's speedup over the first. "
           "`kernelcast advise` prints the same for any profile.", ""]
    for gpu, label, _, results in judged:
        rows = []
        for record, a in results:
            base = next(r for r, _ in results if r["application"] == record["application"])
            rows.append([f"{record['application']} {record['version']}"]
                        + [("—" if a.values[c] is None else f"{a.values[c]:.2f}")
                           + f" ({a.speedups[c]:.2f}×)" for c in CRITERIA]
                        + [f"{a.potential:.2f}×",
                           f"{base['min_span_s'] / record['min_span_s']:.2f}×"])
        out += [f"{label}:", "", table(["version"] + [SHORT[c] for c in CRITERIA]
                                      + ["potential", "measured"], rows), ""]
    rows = []
    for app, (measured, predicted) in CRITERIA_PAPER.items():
        row = [app, predicted, measured]
        for _, _, _, results in judged:
            versions = [(r, a) for r, a in results if r["application"] == app]
            first = versions[0][0]["min_span_s"]
            best = max(versions, key=lambda ra: first / ra[0]["min_span_s"])
            row += [f"{versions[0][1].potential:.1f}×",
                    f"{first / best[0]['min_span_s']:.2f}× ({best[0]['version']})"]
        rows.append(row)
    out += ["**Predicted against reached**: the potential speedup the model predicts for "
            "each application's original version, and the best speedup its versions "
            "reached, beside the paper's.", "",
            table(["application", "paper: predicted", "paper: reached"]
                  + [f"{label}: {what}" for _, label, _, _ in judged
                     for what in ("predicted", "reached")], rows), ""]
    gpu, label, _, results = judged[0]
    for app in CRITERIA_PAPER:
        versions = [(r, a) for r, a in results if r["application"] == app]
        first = versions[0][0]["min_span_s"]
        if figures is not None:
            figures.save(figures.advice(
                [(r["version"], a) for r, a in versions],
                title=f"{app} on the {label}: criteria (bars), potential speedups (dots)",
                measured={r["version"]: first / r["min_span_s"] for r, _ in versions}),
                figures.folder / f"criteria-{app}.png")
        out += [f"![criteria of {app}](figures/criteria-{app}.png)", ""]
    return out


def _counters(data: Data) -> list[str]:
    """Kernelcast's symbolic counts against Nsight Compute's counters."""
    import lzma

    from kernelcast.evaluation.criteria_counters import (QUANTITIES, agreement,
                                                     counter_only_families, families_off)

    path = data / "h100" / "criteria" / "counters.json.xz"
    if not path.exists():
        return [data.missing(path)]
    doc = json.loads(lzma.decompress(path.read_bytes()))
    ok = sum(c.get("status") == "ok" for c in doc["cases"])
    by_name = {q.name: q for q in QUANTITIES}
    rows = []
    for row in agreement(doc):
        q = by_name[row["quantity"]]
        off = families_off(doc, q)
        above = {f: r for f, r in off.items() if r > 1}
        below = {f: r for f, r in off.items() if r <= 1}

        def listed(families):
            return ", ".join(f"{f.split(':', 1)[1]} {r:.2g}×" for f, r in
                             sorted(families.items(), key=lambda fr: -abs(math.log(
                                 max(fr[1], 1e-6)))))

        why = "; ".join(part for part in (
            f"above ({listed(above)}): {q.over}" if above else "",
            f"below ({listed(below)}): {q.under}" if below else "") if part)
        only = counter_only_families(doc, q)
        if only:
            why = "; ".join(part for part in (why, "counted by the counter only: " + ", ".join(
                f"{f.split(':', 1)[1]} (up to {v:.3g})" for f, v in sorted(only.items())))
                if part)
        rows.append([row["quantity"], row["unit"], row["cases"],
                     f"{row['within_10pct']:.0%}" if row["cases"] else "—",
                     f"{row['within_2x']:.0%}" if row["cases"] else "—",
                     f"{row['median_ratio']:.3g}" if row["cases"] else "—",
                     row["counter_only"], why or "—"])
    return ["**Kernelcast's counts against the hardware's counters** (`benchmarks/"
            f"criteria_counters.py measure`, {doc['device']}, driver {doc['driver']}, "
            f"{doc['ncu'].split(' (')[0].replace('Version ', 'Nsight Compute ')}, "
            f"{doc['date'][:10]}, `{data.rel(path)}` ({data.file_commit(path)}); "
            "`kernelcast.evaluation.criteria_counters`). One launch of each of the "
            f"{len(doc['cases'])} kernels of the measurement, test and validation suites "
            f"({ok} profiled), at the largest size the H100's CUDA store holds, through the "
            "CUDA backend under ncu; kernelcast's properties (and the extended model's data "
            "volume and bank conflicts) at the same sizes. *within*: the share of cases "
            "whose counter is within ±10% (a factor 2) of the count; *median*: of "
            "counter/count; *counter only*: cases the counts give none and the counter "
            "some. Where they disagree: the families off by more than 10% with their "
            "median ratio, and the cause kernelcast expects for that direction (what "
            "the fitted models' inputs miss).", "",
            table(["quantity", "unit", "cases", "within ±10%", "within 2×", "median",
                   "counter only", "where and why they disagree"], rows,
                  ["l", "l", "r", "r", "r", "r", "r", "l"]), ""] + _counters_read(doc)


def _counters_read(doc) -> list[str]:
    """What the comparison says about the fitted models' inputs, with its numbers."""
    cases = {c["kernel"]: c for c in doc["cases"] if c.get("counters")}

    def extra_per_shared(kernel):
        c = cases[kernel]["counters"]
        return ((c["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"]
                 + c["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"])
                / (c["smsp__sass_inst_executed_op_shared_ld.sum"]
                   + c["smsp__sass_inst_executed_op_shared_st.sum"]))

    def sectors_per_store(kernel):
        c = cases[kernel]["counters"]
        return (c["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"]
                / c["smsp__sass_inst_executed_op_global_st.sum"])

    f64 = "matmul_tiled[square]/float64/g24x16"
    strided = "transpose[write_strided]/float32/g16x16"
    if f64 not in cases or strided not in cases:
        return []
    return ["What this says about the fitted models' inputs:", "",
            "- Global stores are counted exactly in bytes and instructions on every kernel; "
            "their sectors where no halo or second row shifts a warp's run. Loads are exact wherever each lane reads its own element; where the "
            "lanes of a warp read one address (matmul_naive, matvec, batched_matmul) ncu "
            "counts the broadcast once, and vector loads merge neighbours.",
            "- The stride classes look along local axis 0 only. In a 16-wide group a warp "
            f"holds two rows, and the strided transpose's store touches "
            f"{sectors_per_store(strided):.0f} sectors per warp instruction, not 32: the "
            "two rows write neighbouring elements.",
            "- The extended model's data volume is a floor on DRAM traffic, not a "
            "prediction of it: the matmuls re-read their operands many times once they "
            "outgrow the L2, strided accesses move whole sectors (scale_add[k] about k "
            "times the volume) and small outputs stay in the L2 during the launch.",
            "- Bank conflicts the counts miss: the float64 tiled matmul with 24-wide "
            f"groups makes {extra_per_shared(f64):.2f} extra shared passes per shared "
            "instruction on the H100, where kernelcast counts none (a row of the tile is "
            "24 doubles, 192 bytes, 48 banks, so rows two apart start on the same bank; why "
            "kernelcast's count misses it is not yet known). Float32 "
            "kernels without conflicts show well under 0.01 per instruction.",
            "- Floating-point counts are exact for add, mul and FMA code; divisions, powers "
            "and special functions run as instruction sequences several to 150 times longer "
            "than one operation, which the fitted weights absorb per operation kind.", ""]
