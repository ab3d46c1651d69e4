"""Tuning: each model's ranking of the tuning families' variants against every variant
measured (data/<gpu>/tuning-regret.json, benchmarks/tuning_regret.py), the learned
model's training corpus cross-validated by family (data/<gpu>/tuning-learned.json), the
speed of ranking (data/ranking-speed.json) and the search strategies judged by the
autotuning methodology (data/h100/tuning-methodology.json, with its score curves drawn
by the page's Figures). The sections only read what the benchmarks wrote: nothing here
runs kernelcast.tune.

Public names: search_label, section_tuning, section_tuning_corpus,
section_ranking_speed, section_tuning_methodology.
"""

from __future__ import annotations

from kernelcast.evaluation.results.common import Data, Figures, seconds_text, stamp, table

def section_tuning(data: Data) -> list[str]:
    out = ["## Tuning (in progress)", ""]
    for gpu, _, doc in data.documents("tuning-regret.json"):
        ident, noise = doc["identity"], doc["noise"]
        truth = data / gpu / "tuning-cuda.sqlite"
        driver = (data.load(data / gpu / "tuning-cuda.json") or {}).get("nvidia_driver")
        out += [f"`benchmarks/tuning_regret.py`, {stamp(doc)}: "
                f"each model's ranking of every variant of the tuning families "
                "(`kernelcast.tune.families`), against every variant measured on "
                f"{ident['device']} through {ident['backend']} ({ident['driver']}, NVIDIA "
                f"driver {driver or 'unknown'}; `{data.rel(truth)}`, {data.file_commit(truth)}; "
                "`benchmarks/tuning_gpu.py`). These rows are in no fitting set. Regret: "
                "the measured time of the model's top-1 pick (or the best of its top 3) "
                "over the best measured, minus 1; ρ: Spearman's rank correlation of "
                "predicted and measured times. Run-to-run noise, "
                f"{noise['repeated']} variants timed again: median "
                f"{noise['median_abs']:.2%}, at most {noise['max_abs']:.1%}. Targets "
                "(issue 23): top-1 within 5%, best of top 3 within 2%, mean ρ ≥ 0.8.", ""]
        families = doc["families"]
        models = list(next(iter(families.values()))["models"])
        rows = []
        for name, e in families.items():
            cells = [name, str(e["variants"]), str(e["within_5_percent"]),
                     seconds_text(e["best_s"])]
            cells += [f"{e['models'][m]['top1']:.0%} / {e['models'][m]['top3']:.0%} / "
                      f"{e['models'][m]['spearman']:.2f}" for m in models]
            cells.append(f"{e['seconds_per_variant'] * 1e3:.0f} ms")
            rows.append(cells)
        means = [sum(e["models"][m]["spearman"] for e in families.values()) / len(families)
                 for m in models]
        rows.append(["mean ρ", "", "", "", *(f"{x:.2f}" for x in means), ""])
        out += [table(["family", "variants", "within 5%", "best",
                       *(f"{m}: top-1 / top-3 / ρ" for m in models), "ranking"],
                      rows, ["l", "r", "r", "r", *("r" for _ in models), "r"]), ""]
        skipped = {n: len(e["not_counted"]) for n, e in families.items() if e["not_counted"]}
        if skipped:
            out.append("Variants whose properties could not be counted (left out of the "
                       "ranking): " + ", ".join(f"{n} {k}" for n, k in skipped.items())
                       + " (a RecursionError compiling their evaluator; issue 23's note).")
        out.append("Ranking: seconds per variant to make it, count its properties (cold "
                   "cache) and predict it with every model, on this 2-core machine.")
    if len(out) == 2:
        out.append("*Not generated: no data/<gpu>/tuning-regret.json.*")
    return out


def section_tuning_corpus(data: Data) -> list[str]:
    out = ["## Tuning: the learned model's training corpus", ""]
    for gpu, _, doc in data.documents("tuning-learned.json"):
        ident = doc["identity"]
        store = data / gpu / "tuning-corpus-cuda.sqlite"
        driver = (data.load(data / gpu / "tuning-corpus-cuda.json") or {}).get(
            "nvidia_driver")
        out += [f"`benchmarks/tuning_learned.py`, {stamp(doc)}: "
                "the learned model (`kernelcast.models.learned`) is fitted to every variant "
                f"of the training corpus (`kernelcast.tune.corpus`, {doc['variants']} "
                f"variants of {len(doc['families'])} kernels that are not the judged "
                f"families), measured on {ident['device']} through {ident['backend']} "
                f"({ident['driver']}, NVIDIA driver {driver or 'unknown'}; `{data.rel(store)}`, "
                f"{data.file_commit(store)}). Leave-one-family-out: each corpus family ranked by "
                "a model fitted to the other families. Counting the corpus's properties "
                f"took {doc['counting_seconds']:.0f} s on this 2-core machine.", ""]
        rows = [[name, str(e["variants"]), f"{e['top1']:.1%}", f"{e['top3']:.1%}",
                 f"{e['spearman']:.2f}"] for name, e in doc["cross_validation"].items()]
        rows.append(["mean ρ", "", "", "", f"{doc['mean_spearman']:.2f}"])
        out += [table(["held-out family", "variants", "top-1", "top-3", "ρ"], rows,
                      ["l", "r", "r", "r", "r"]), ""]
    if len(out) == 2:
        out.append("*Not generated: no data/<gpu>/tuning-learned.json.*")
    return out


def section_ranking_speed(data: Data) -> list[str]:
    out = ["## Ranking speed", ""]
    doc = data.load(data / "ranking-speed.json")
    if doc is None:
        return out + ["*Not generated: no data/ranking-speed.json.*"]
    machine, target = doc["machine"], doc["target"]
    out += [f"`benchmarks/ranking_speed.py`, {stamp(doc)}, on "
            f"{machine['cores']} cores ({machine['cpu']}, Python {machine['python']}): every "
            "variant of the tuning families made, checked against an H100's limits, counted "
            f"from a cold cache ({doc['cold']}) and predicted with `{doc['profile']}`, in one "
            "process and on a local Dask cluster (its start counted). Target (issue 23): "
            f"{target['variants']:,} variants in at most {target['seconds']:.0f} s. The "
            "1-minute load average is the machine's while it ran: other processes slow "
            "both runs. Rankings identical in both runs: "
            f"{'yes' if doc['identical_rankings'] else 'NO'}.", ""]
    rows = [[str(r["workers"]), f"{r['variants']:,}", f"{r['seconds']:.0f} s",
             f"{r['ms_per_variant']:.0f} ms", f"{r['variants_per_60s']:,}",
             f"{r['load_average_1min']['mean']:.1f}"] for r in doc["runs"]]
    out += [table(["processes", "variants", "in all", "per variant", "per 60 s",
                   "load average"], rows, ["r", "r", "r", "r", "r", "r"]), ""]
    return out


def search_label(name: str) -> str:
    """How the page names a search of tuning-methodology.json: kernelcast:MODEL as
    "kernelcast MODEL (order)", kernelcast:MODEL+feedback as "kernelcast MODEL +
    feedback"."""
    model, _, feedback = name.removeprefix("kernelcast:").partition("+")
    return f"kernelcast {model}" + (" + feedback" if feedback else " (order)")


def section_tuning_methodology(data: Data, figures: Figures | None = None
                               ) -> list[str]:
    """Tuners judged by the autotuning community's methodology (Willemsen et al.)."""
    out = ["## Search strategies, judged by the autotuning methodology", ""]
    path = data / "h100" / "tuning-methodology.json"
    doc = data.load(path)
    if doc is None:
        return out + ["*Not generated: no data/h100/tuning-methodology.json.*"]
    if figures is not None:
        figures.tuning_methodology(doc, figures.folder / "tuning-methodology.png",
                                   search_label)
    families = list(doc["families"])
    out += [f"`benchmarks/tuning_methodology.py`, {stamp(doc)} "
            f"(`{data.rel(path)}`, {data.file_commit(path)}), Kernel Tuner {doc['kernel_tuner']}, "
            f"{doc['seeds']} seeds per Kernel Tuner strategy; kernelcast's searches are "
            "deterministic (one run). The spaces: the six judged families and the two "
            "search families (conv2d, nbody), every variant measured on an H100 "
            f"(`{'`, `'.join(doc.get('stores', [doc.get('store')]))}`); none is in any fitting set. The score "
            "after k measurements is (random search's expected best − the search's best) "
            "/ (random search's expected best − the best variant): 0 is random search "
            "without replacement (its exact expectation), 1 the best found at once "
            "(`kernelcast.tune.methodology`, after Willemsen et al., FGCS 2024). Every "
            "evaluation counts as a measurement, a repeat included. Each cell: the mean "
            "score over the methodology's budget range (1 to where random search is "
            "expected 95% of the way from the median to the best, at most 100), then the "
            "median measurements to reach within 5% of the best (in brackets, seeds that "
            "never did within the budget; – where half or more). Kernel Tuner's "
            "strategies run as replays of its simulation mode on the same spaces. "
            "kernelcast (order): measure in the model's ranking; + feedback: the guided "
            "search (`kernelcast.tune.guided`, its one configuration), no early stop.", "",
            "![score curves](figures/tuning-methodology.png)", ""]

    def cell(r):
        if not r or "aggregate" not in r:
            return "–"
        w = r["to_within_5"]
        reach = "–" if w["median"] is None else f"{w['median']:g}"
        fails = f" ({w['failures']})" if w.get("failures") else ""
        return f"{r['aggregate']:.2f} / {reach}{fails}"

    searches = list(next(iter(doc["families"].values()))["searches"])
    rows = [[s if not s.startswith("kernelcast:") else search_label(s),
             *(cell(doc["families"][f]["searches"].get(s)) for f in families)]
            for s in searches]
    heads = [f"{f} ({doc['families'][f]['variants']}, {doc['families'][f]['within_5_percent']} "
             "within 5%)" for f in families]
    out += [table(["search", *heads], rows, ["l", *("r" for _ in families)]), ""]
    strategies = [s for s in searches if not s.startswith("kernelcast:")]
    guided = [s for s in searches if s.endswith("+feedback")]
    rows = []
    for s in guided:
        five = [f for f in families
                if (doc["families"][f]["searches"][s]["to_within_5"]["median"] or 10**9) <= 5]
        high = [f for f in families if doc["families"][f]["searches"][s]["aggregate"] >= 0.9]
        above = []
        for f in families:
            e = doc["families"][f]["searches"]
            mine = e[s]["score"][:20]
            best = [max(e[k]["score"][i] for k in strategies if len(e[k].get("score", []))
                        > i) for i in range(len(mine))]
            if all(a > b for a, b in zip(mine, best)):
                above.append(f)
        rows.append([search_label(s), f"{len(five)} of {len(families)}",
                     f"{len(high)} of {len(families)}", f"{len(above)} of {len(families)}",
                     ", ".join(f for f in families if f not in five) or "none"])
    out += ["**Against the targets** (within 5% in at most 5 measurements, a score of at "
            "least 0.9, and above every Kernel Tuner strategy at every budget up to 20 "
            "measurements, on every family): families where each guided search meets "
            "each.", "",
            table(["search", "within 5% in ≤ 5", "score ≥ 0.9",
                   "above every strategy to 20", "families over 5 measurements"], rows,
                  ["l", "r", "r", "r", "l"]), ""]
    return out
