"""The hardware facts (kernelcast.facts) and the models on them: the predicted Nsight
Compute counters against the measured ones per GPU, by population, with the furthest
launches and why (data/<gpu>/counters/agreement.json and counters-held-out/, from
benchmarks/counters_agreement.py; what a prediction costs, data/counters-speed.json),
and the extended model on the facts next to the other models on every population
(data/<gpu>/facts-eval.json, benchmarks/facts_model.py).

Public names: FACT_LABELS, FACT_WHY, FACT_GROUPS, section_hardware_facts,
section_facts_model.
"""

from __future__ import annotations

import json
from pathlib import Path

from kernelcast.evaluation.results.common import GPU_LABEL, GPUS, Data, micro, pct, table

# what each metric of the agreement table is, in words
FACT_LABELS = {
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "global load sectors",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": "global store sectors",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "global load requests",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": "global store requests",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum": "shared-memory wavefronts",
    "lts__t_sectors_op_read.sum": "L2 read sectors",
    "lts__t_sectors_op_write.sum": "L2 write sectors",
    "dram__bytes_read.sum": "DRAM bytes read",
    "dram__bytes_write.sum": "DRAM bytes written",
    "smsp__inst_executed.sum": "warp instructions executed",
    "launch__registers_per_thread": "registers per thread (within 2)",
    "launch__occupancy_limit_registers": "groups per SM the registers allow",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum": "L1 hits of global loads",
    "smsp__sass_inst_executed_op_global_ld.sum": "global load instructions",
    "smsp__sass_inst_executed_op_shared_ld.sum": "shared load instructions",
}


# why a metric's furthest launches miss, as far as the counters and the SASS show it
FACT_WHY = {
    "lts__t_sectors_op_read.sum": "pow of doubles reads about 20,000 sectors at L2 "
    "beyond its code and constants (none of them from L1: lts__t_sectors_srcunit_tex_op_"
    "read is 0; tables, it seems); kernels without global loads read their code's "
    "1,000-3,000 sectors, with up to 2x between two profiles of the same launch; the "
    "warps of a group that miss L1 on one broadcast sector at once (pairwise) read it "
    "from L2 once where the model counts every miss; groups of one row of A·Aᵀ hit L1 "
    "far more often than the model's fully associative least-recently-used L1",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum": "the model's L1 is fully "
    "associative least-recently-used; the H100's keeps less of a shared operand "
    "streamed by groups of one row, and of gathers",
    "dram__bytes_read.sum": "pow of doubles reads about 100 KB that are none of the "
    "kernel's arrays; gathers over arrays larger than where L2 keeps data (random "
    "kernels at n = 4096) are reused more than the sampled L2 model sees",
    "dram__bytes_write.sum": "L2 writes back part of an output of 16 MB (random kernels "
    "at n = 2048: 20-90% of it measured) where the model keeps it all",
    "smsp__inst_executed.sum": "the slow paths of library code (pow of doubles) are taken "
    "to be skipped; pairwise's loop is not explained yet",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum": "kernels without shared memory "
    "whose work-items store several elements (axpy, stencil2d, outer, volume3d with "
    "per_item > 1) count one to two wavefronts per warp for each store beyond the first "
    "(7 a warp for axpy with two items, 13 for stencil2d with four), which no shared "
    "access of their SASS makes and ncu's per-instruction source counters do not break "
    "down",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "nvcc splits the fetch loops of "
    "finite_difference and convolution into several predicated copies",
}
FACT_GROUPS = (("suite", "suites"), ("random", "random"), ("tuning", "tuning"),
               ("corpus", "corpus"))


def section_hardware_facts(data: Data) -> list[str]:
    """The predicted Nsight Compute counters against the measured ones, per GPU."""
    out = ["## The hardware facts against Nsight Compute", "",
           "`kernelcast counters` (kernelcast.facts, docs/counters.md) predicts what one "
           "launch does to the hardware without running it: warp-level requests and "
           "sectors from the lanes' addresses, shared-memory wavefronts, L1/L2/DRAM "
           "traffic of a launch whose caches start cold (as ncu measures by default), "
           "registers, occupancy and the SASS instructions executed (NVIDIA's compiler "
           "from PyPI, no GPU). Every profiled launch of `benchmarks/counters_gpu.py` "
           "(the three suites, the Loopy twins of 40 random kernels of each set, and "
           "variants of every tuning and corpus family with every work-group shape of "
           "their spaces) is predicted again here by `benchmarks/counters_agreement.py`; "
           "a launch agrees where the prediction is within ±20% of the counter "
           "(registers: within 2; counts too small to matter, such as a few KiB of DRAM "
           "traffic, agree when both sides are below them). *ncu again*: how often a "
           "second profile of the same launches agrees with the first under the same "
           "rule — the counters' own run-to-run spread, a ceiling for any prediction. "
           "The held-out table is of launches that were profiled after the facts were "
           "built and not used to build them.", ""]
    for gpu in GPUS:
        path = data / gpu / "counters" / "agreement.json"
        if not path.exists():
            out += [f"**{GPU_LABEL[gpu]}**: not profiled yet ({data.missing(path)}).", ""]
            continue
        out += _facts_table(data, path, f"**{GPU_LABEL[gpu]}**", worst=True)
        held = data / gpu / "counters-held-out" / "agreement.json"
        if held.exists():
            out += _facts_table(data, held, f"**{GPU_LABEL[gpu]}, held out** (launches of "
                                "`benchmarks/counters_gpu.py plan --held-out`: random "
                                "kernels and family variants that kernelcast.facts was "
                                "not developed on)", worst=True, missed_only=True)
    out += _facts_speed(data)
    return out


def _facts_table(data: Data, path: Path, title: str, *, worst: bool, missed_only: bool = False
                 ) -> list[str]:
    """One agreement document of benchmarks/counters_agreement.py as a table (and its
    furthest launches with *worst*: of every metric, or of those below their target with
    *missed_only*)."""
    doc = json.loads(path.read_text())
    rows = []
    for metric, row in doc["metrics"].items():
        fams = row["families"]

        def share(prefix, fams=fams):
            keys = [k for k in fams if prefix is None and k == "all"
                    or prefix is not None and k.startswith(prefix + ":")]
            n = sum(fams[k]["launches"] for k in keys)
            a = sum(fams[k]["agree"] for k in keys)
            return f"{a / n:.0%} ({n})" if n else "–"

        again = doc.get("repeat", {}).get(metric)
        rows.append([FACT_LABELS.get(metric, metric), f"`{metric}`",
                     "–" if row["target"] is None else f"{row['target']:.0%}",
                     share(None), *(share(p) for p, _ in FACT_GROUPS),
                     f"{again['agree'] / again['launches']:.0%}" if again else "–"])
    out = [f"{title} ({doc['device']}, driver {doc['driver']}, "
           f"{(doc['ncu'] or '').split(' (')[0].replace('Version ', 'Nsight Compute ')}, "
           f"profiled {(doc['profiled'] or '')[:10]}, `{data.rel(path)}` "
           f"({data.file_commit(path)}); {doc['predicted']} of {doc['launches']} launches "
           "predicted). Share of launches within ±20% (launches compared):", "",
           table(["quantity", "Nsight Compute metric", "target", "all",
                  *(label for _, label in FACT_GROUPS), "ncu again"], rows,
                 ["l", "l", "r", "r", "r", "r", "r", "r", "r"]), ""]
    lines = []
    for metric, items in doc.get("worst", {}).items() if worst else ():
        row = doc["metrics"].get(metric, {})
        all_ = row.get("families", {}).get("all")
        if not items or missed_only and (
                row.get("target") is None or not all_
                or all_["agree"] >= row["target"] * all_["launches"]):
            continue
        shown = ", ".join(
            f"{w['launch']} (measured 0)" if not w["measured"] else
            f"{w['launch']} (predicted 0, measured {w['measured']:.3g})"
            if not w["predicted"] else
            f"{w['launch']} ({w['predicted'] / w['measured']:.2g}×)" for w in items[:3])
        why = FACT_WHY.get(metric)
        lines.append(f"- {FACT_LABELS.get(metric, metric)}: {shown}"
                     + (f". Why: {why}." if why else ""))
    if lines:
        out += ["Furthest off per metric (predicted / measured), and why:", "", *lines, ""]
    return out


def _facts_misses(facts: dict) -> list[str]:
    """Per tuning family whose top-1 pick is more than 5% slower than the best: the two
    variants' predicted counters side by side."""
    lines = []
    for fam, e in facts["tuning"].items():
        why = e.get("why")
        if e["top1"] <= 0.05 or not why:
            continue
        pick, best = why["pick"], why["best"]
        ratios = []
        for name, label in (("dram_bytes_read", "DRAM reads"),
                            ("dram_bytes_written", "DRAM writes"),
                            ("l2_sectors_read", "L2 reads"), ("l1_sectors", "L1 sectors"),
                            ("shared_wavefronts", "shared wavefronts"),
                            ("inst_executed", "instructions"), ("waves", "waves")):
            a, b = pick["facts"][name], best["facts"][name]
            if a or b:
                ratios.append(f"{label} {a / b:.2f}" if b else f"{label} {a:.3g} vs 0")
        lines.append(f"- **{fam}**: the pick `{pick['variant'].split('/', 1)[1]}` runs "
                     f"{micro(pick['measured_s'])} (predicted {micro(pick['predicted_s'])}), "
                     f"the best `{best['variant'].split('/', 1)[1]}` "
                     f"{micro(best['measured_s'])} (predicted "
                     f"{micro(best['predicted_s'])}); the pick's predicted counters over "
                     f"the best's: {', '.join(ratios)}.")
    if not lines:
        return []
    return ["Where the top-1 pick misses the best by more than 5% (facts):", "", *lines, ""]


def _facts_speed(data: Data) -> list[str]:
    path = data / "counters-speed.json"
    doc = data.load(path)
    if doc is None:
        return [data.missing(path)]
    parts = doc["summary"]
    return ["**Cost** (`benchmarks/counters_speed.py`, "
            f"{doc['machine']}, {doc['date']}, `{data.rel(path)}`): one kernel's counters, "
            "the compiler's results cached on disk: first prediction in a process median "
            f"{parts['cold']['median']:.2f} s, largest {parts['cold']['max']:.2f} s, "
            f"{parts['cold']['within_0.5s']:.0%} within 0.5 s "
            f"({parts['cold']['launches']} launches); the same launch again median "
            f"{parts['again']['median'] * 1e3:.2f} ms, largest "
            f"{parts['again']['max'] * 1e3:.1f} ms; the same kernel at new sizes median "
            f"{parts['resized']['median']:.2f} s.", ""]


def section_facts_model(data: Data) -> list[str]:
    """The extended model on the hardware facts next to the extended model on the
    paper's properties, on every population (benchmarks/facts_model.py)."""
    out = ["## The extended model on the hardware facts", "",
           "`facts` (kernelcast.models.extended.FactsModel; README, \"Three models\") is the "
           "extended model with its inputs taken from the predicted Nsight Compute "
           "counters instead of the paper's properties: DRAM bytes (of a launch timed "
           "back to back: none while its arrays stay in L2), L2 sectors, global L1 "
           "sectors, shared-memory wavefronts and the SASS instructions of each pipe, "
           "plus the extended model's per-work-item chains paid once per wave of "
           "resident work-groups (from the compiler's registers and shared memory, not "
           "fitted). The times of DRAM, L2, L1, instruction issue and the chain overlap "
           "(t = c + (Σ_r T_r^q)^(1/q), q = 3), and no prediction is below the launch's "
           "floor: its DRAM bytes at the DRAM bandwidth the device reports (memory clock × "
           "2 × bus width) and its instructions at 4 warp instructions an SM-cycle (the "
           "CUDA Programming Guide's 128 fp32 results a clock). Both models are fitted to the CUDA store's "
           "measurement and extension suites; nothing judged below is in that set. "
           "*Random*: share of the random kernels predicted within 0.7–1.3 of the "
           "measured time (timed through OpenCL, predicted from their Loopy twins, whose "
           "CUDA code the facts compile). *Tuning*: the families of "
           "`kernelcast.tune.families`, every measured variant ranked (top-1 regret, best "
           "of top 3, Spearman's ρ). `hong-kim` is Hong & Kim's equations on the paper's "
           "properties and `hong-kim-facts` the same equations on the facts "
           "(kernelcast.models.hong_kim.facts: warp requests coalesced or not by their "
           "sectors, SASS instructions, ptxas's registers, and a memory latency by where "
           "the loads are served, which neither paper models); both are analytical, so "
           "their *training* and *CV* columns are the same launches predicted, nothing "
           "fitted. Regenerated by `benchmarks/facts_model.py evaluate` into "
           "data/<gpu>/facts-eval.json.", ""]
    found = False
    for gpu, _, doc in data.documents("facts-eval.json"):
        found = True
        models = doc["models"]
        ident = doc["identity"]
        out += [f"**{GPU_LABEL[gpu]}** ({ident['device']}, {ident['backend']}, "
                f"{ident['driver']}; evaluated {doc['date'][:10]}):", ""]
        rows = []
        for name, e in models.items():
            worst = max(e["tuning"].values(), key=lambda f: f["top1"]) if e["tuning"] \
                else None
            rows.append([name, str(e["training"]["cases"]), pct(e["training"]["geomean"]),
                         pct(e["test"]["geomean"]), pct(e["test"]["max"]),
                         pct(e["validation"]["geomean"]), pct(e["cv"]["geomean"]),
                         *(f"{e['random'][s]['within_30pct']:.0%}" for s in
                           ("random-realistic", "random-unrestricted")),
                         f"{e['mean_spearman']:.2f}" if e["tuning"] else "–",
                         f"{worst['top1']:.0%}" if worst else "–"])
        out += [table(["model", "fitted on", "training", "test", "test, worst",
                       "validation", "CV", "random realistic", "random unrestricted",
                       "tuning mean ρ", "tuning worst top-1"], rows,
                      ["l", *("r" for _ in range(10))]), ""]
        families = next(iter(models.values()))["tuning"]
        if families:
            rows = [[fam, str(families[fam]["variants"]),
                     *(f"{m['tuning'][fam]['top1']:.0%} / {m['tuning'][fam]['top3']:.0%} / "
                       f"{m['tuning'][fam]['spearman']:.2f}" for m in models.values())]
                    for fam in families]
            out += [table(["family", "variants",
                           *(f"{n}: top-1 / top-3 / ρ" for n in models)], rows,
                          ["l", "r", *("r" for _ in models)]), ""]
        facts = models.get("facts")
        if facts:
            report = facts["fit_report"]
            rates = "; ".join(
                f"{name} {v['fitted']:.3g} {v['unit']} against a peak of {v['peak']:.3g}"
                + ("" if v["physical"] else " (faster than the peak: the term also stands "
                   "for work the other resources do at the same time)")
                for name, v in report["peaks"].items())
            out += [f"Fitted rates against the device's peaks: {rates}. The floor decides "
                    f"{report['floor_binding']} of the {facts['training']['cases']} fitted "
                    "launches.", ""]
            out += _facts_misses(facts)
            worst_cv = sorted(facts["cv"]["by_class"].items(), key=lambda kv: -kv[1])[:5]
            out += ["Cross-validation, the classes furthest off (facts): " + ", ".join(
                f"{k} {pct(v)}" for k, v in worst_cv) + ".", ""]
    if not found:
        out.append("*Not generated: no data/<gpu>/facts-eval.json.*")
    return out
