"""The learned model on the hardware facts (kernelcast.models.learned.facts), from
data/<gpu>/learned-facts.json (benchmarks/learned_facts.py): what it is fitted to, its
error on families held out, its ranking of the judged tuning families next to the
learned model on the paper's properties (data/<gpu>/tuning-regret.json), and where its
top-1 pick misses, with Nsight Compute's instruction count of those variants
(data/<gpu>/counters-misses/counters.json.xz).

Public names: section_learned_facts.
"""

from __future__ import annotations

import json
import lzma

from kernelcast.evaluation.results.common import Data, seconds_text, table

def section_learned_facts(data: Data) -> list[str]:
    """The learned model on the hardware facts, fitted to thousands of measured random
    loop-family variants and the training corpus (benchmarks/learned_facts.py)."""
    out = ["## The learned model on the hardware facts", ""]
    for gpu, _, doc in data.documents("learned-facts.json"):
        ident, train, held, judged = (doc["identity"], doc["training"], doc["held_out"],
                                      doc["judged"])
        store = data / gpu / "corpus-loops-cuda.sqlite.xz"
        meta = data.load(data / gpu / "corpus-loops-cuda.json")
        summaries = data / gpu / "learned-summaries.json.xz"
        out += [f"`benchmarks/learned_facts.py`, {doc['date']}: `learned-facts` "
                "(`kernelcast.models.learned.facts`) is the learned model's gradient-boosted "
                "trees with the predicted hardware counters as inputs (the floor at the "
                "device's peaks, cache traffic per DRAM byte and per floor, the SASS "
                "instruction mix, waves, work-group shape), predicting log(time / floor). "
                f"It is fitted to {train['variants']} variants of {train['families']} "
                f"families measured on {ident['device']} ({ident['backend']}, NVIDIA "
                f"driver {meta['nvidia_driver']}, {meta['date']}): "
                f"{train['random_variants']} variants of random loop families "
                "(`kernelcast.tune.random_families`: loops, reuse, reductions, random points "
                f"of `kernelcast tune`'s default space; `{data.rel(store)}`, {data.file_commit(store)}) "
                f"and {train['corpus_variants']} of the training corpus; "
                f"{(train['without_summary']['random'] or 0) + (train['without_summary']['corpus'] or 0)} timed "
                "variants have no summary "
                "(the facts failed or timed out) and are left out. The GPU machine timed "
                f"{meta['measure']['rate_per_s']:.1f} variants a second while "
                f"{meta['measure'].get('workers', 5)} of its 16 "
                f"cores generated and compiled them, and predicted "
                f"{meta['summaries']['rate_per_s']:.1f} summaries a second on "
                f"{meta['summaries'].get('processes', 16)} of them "
                f"(`{data.rel(summaries)}`).", "",
                f"*Families held out* ({held['folds']} groups of whole families, each "
                "predicted by a model fitted to the others): geometric-mean error "
                f"{held['geomean_rel_error']:.1%} ({held['random_geomean_rel_error']:.1%} on "
                "random variants"
                + (f", {held['corpus_geomean_rel_error']:.1%} on the corpus's"
                   if held["corpus_geomean_rel_error"] is not None else "") + "), "
                f"{held['within_30_percent']:.0%} within 30%. Within each random family "
                f"({held['random_ranking']['families']} with at least 4 variants): mean ρ "
                f"{held['random_ranking']['mean_spearman']:.2f}, median top-1 regret "
                f"{held['random_ranking']['median_top1']:.1%}, top-1 within 5% in "
                f"{held['random_ranking']['top1_within_5_percent']:.0%} of families, best of "
                f"top 3 within 2% in {held['random_ranking']['top3_within_2_percent']:.0%}.",
                ""]
        rows = [[n, f"{e['top1']:.1%}", f"{e['top3']:.1%}", f"{e['spearman']:.2f}"]
                for n, e in held["corpus_families"].items()]
        if rows:
            out += [table(["corpus family (held out)", "top-1", "top-3", "ρ"], rows,
                          ["l", "r", "r", "r"]), ""]
        if judged is None:
            out += [f"*Judged families*: not measured on the {gpu.upper()} "
                    f"(no data/{gpu}/tuning-cuda.sqlite), nor its training corpus.", ""]
            continue
        regret = data / gpu / "tuning-regret.json"
        before = (data.load(regret) or {}).get("families", {})
        rows = []
        for name, e in judged["families"].items():
            old = before.get(name, {}).get("models", {}).get("learned")
            rows.append([name, f"{e['top1']:.1%} / {e['top3']:.1%} / {e['spearman']:.2f}",
                         f"{old['top1']:.1%} / {old['top3']:.1%} / {old['spearman']:.2f}"
                         if old else "—"])
        j = judged["summary"]
        out += [f"*Judged families* ({judged['variants']} variants, in no fitting set), "
                "ranked by the model fitted to the whole corpus, next to the learned model "
                f"on the paper's properties (`{data.rel(regret)}`): mean ρ {j['mean_spearman']:.2f}, "
                f"worst top-1 regret {j['worst_top1']:.1%}, geometric-mean error "
                f"{judged['geomean_rel_error']:.1%}. Targets: top-1 within 5% and best of top "
                "3 within 2% in every family, mean ρ ≥ 0.8."
                + (f" stencil2d's layouts: {judged['stencil2d_layouts']['ordered_share']:.1%} "
                   f"of the pairs of a layout whose l.0 is at least 32 "
                   f"({judged['stencil2d_layouts']['wide']}) and one whose l.0 is below 8 "
                   f"({judged['stencil2d_layouts']['narrow']}) are ranked wide first "
                   "(target: all)." if judged.get("stencil2d_layouts") else ""), "",
                table(["judged family", "learned-facts: top-1 / top-3 / ρ",
                       "learned: top-1 / top-3 / ρ"], rows, ["l", "r", "r"]), ""]
        if judged.get("misses"):
            out += ["Where top-1 misses 5%, the pick and the best variant, measured and "
                    "predicted, with the counters predicted for them (DRAM bytes read, L2 "
                    "read and L1 sectors, shared wavefronts, warp instructions, waves, "
                    "work-items per group):", ""]
            ncu_path = data / gpu / "counters-misses" / "counters.json.xz"
            ncu = {}
            if ncu_path.exists():
                with lzma.open(ncu_path, "rt") as f:
                    ncu = {e["label"].split(":", 1)[1]: e["counters"]
                           for e in json.load(f)["launches"] if e.get("counters")}
            rows = []
            for fam, pair in judged["misses"].items():
                for role in ("pick", "best"):
                    e = pair[role]
                    c = ncu.get(f"{fam}/{e['variant']}", {})
                    measured_inst = c.get("smsp__inst_executed.sum")
                    rows.append([fam if role == "pick" else "", role, f"`{e['variant']}`",
                                 seconds_text(e["measured_s"]), seconds_text(e["predicted_s"]),
                                 f"{e['dram_bytes_read']:.3g}", f"{e['l2_sectors_read']:.3g}",
                                 f"{e['l1_sectors']:.3g}", f"{e['shared_wavefronts']:.3g}",
                                 f"{e['inst_executed']:.3g}",
                                 f"{measured_inst:.3g}" if measured_inst else "–",
                                 f"{e['waves']:.0f}", f"{e['group_size']:.0f}"])
            out += [table(["family", "", "variant", "measured", "predicted", "DRAM B",
                           "L2 sectors", "L1 sectors", "shared wf", "warp inst",
                           "ncu warp inst", "waves", "group"], rows,
                          ["l", "l", "l", *("r" for _ in range(10))]), ""]
            if ncu:
                out += [f"ncu column: Nsight Compute on the same variants (`{data.rel(ncu_path)}`, "
                        f"{data.file_commit(ncu_path)}). Where the predicted instructions are "
                        "a third or a quarter of ncu's, the facts make the pick look cheap "
                        "(the SASS count of loops over a work-item's tasks); where they "
                        "agree, the pick's slowness is in no counter shown.", ""]
    if len(out) == 2:
        out.append("*Not generated: no data/<gpu>/learned-facts.json.*")
    return out
