"""Fit and judge the learned model on the hardware facts (kernelcast.models.learned.facts)
on a GPU's measured corpus: the random loop families' variants
(data/GPU/corpus-loops-cuda.sqlite.xz, benchmarks/corpus_gpu.py) and the training corpus
(data/GPU/tuning-corpus-cuda.sqlite, where the GPU has it), with the committed summaries
(data/GPU/learned-summaries.json.xz). Writes data/GPU/learned-facts.json, which
scripts/results.py shows, and the profile fitted to the whole corpus
(data/profiles/<device>-cuda-learned-facts.json).

- *families held out*: the corpus's families are dealt into FOLDS groups (each random
  family and each training-corpus family whole); each group is predicted by a model
  fitted to the others: relative errors, and per family with at least 4 variants the
  regret of the top-1 pick and of the best of the top 3, and Spearman's ρ;
- *judged families*: the model fitted to the whole corpus ranks every measured variant of
  the judged tuning families (data/GPU/tuning-cuda.sqlite, where the GPU has it), which
  no fit ever sees.

Run:  .venv/bin/python benchmarks/learned_facts.py [--gpu h100] [--folds 10]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import lzma
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from tuning_learned import ranking_scores  # noqa: E402


def _unpacked(path: Path) -> Path:
    """*path*, or an unpacked copy of *path*.xz where only that is committed."""
    if path.exists():
        return path
    copy = Path(tempfile.mkdtemp(prefix="kernelcast-lf-")) / path.name
    copy.write_bytes(lzma.open(path.with_name(path.name + ".xz")).read())
    return copy


def concat(datasets):
    """One dataset of *datasets*, all measured on one device (else a refusal); its
    ``info.suite`` tells each case's source, its ``store`` is the first's."""
    import pandas as pd

    from kernelcast.errors import KernelcastError
    from kernelcast.fitting.dataset import Dataset

    devices = {d.identity["device"] for d in datasets}
    if len(devices) > 1:
        raise KernelcastError(f"the stores were measured on different devices: {devices}")
    first = datasets[0]
    return Dataset([c for d in datasets for c in d.cases],
                   np.concatenate([d.seconds for d in datasets]),
                   pd.concat([d.info for d in datasets], ignore_index=True),
                   first.identity, "learned-corpus", max(d.noise for d in datasets),
                   first.store, first.cache)  # a profile names one store: the first's


def load(gpu: str):
    """(training corpus, judged families) with known summaries only; the count of rows
    left out for want of a summary."""
    import kernelcast.models.learned.facts as lf
    from kernelcast.hardware import load_hardware
    from kernelcast.measure.store import Store
    from kernelcast.models.extended.facts import SummaryCache
    from kernelcast.tune.corpus import CORPUS
    from kernelcast.tune.families import FAMILIES
    from kernelcast.tune.variants import load_random_dataset, load_variant_dataset

    folder = ROOT / "data" / gpu
    lf.SUMMARIES = SummaryCache(folder / "learned-summaries.json.xz")
    hw = load_hardware(gpu)
    with Store(_unpacked(folder / "corpus-loops-cuda.sqlite")) as store:
        loops = load_random_dataset(store)
    loops.store = str(folder / "corpus-loops-cuda.sqlite.xz")  # the committed file
    corpus = judged = None  # a GPU may lack the tuning stores
    if (folder / "tuning-corpus-cuda.sqlite").is_file():
        with Store(folder / "tuning-corpus-cuda.sqlite") as store:
            corpus = load_variant_dataset(store, list(CORPUS.values()))
    if (folder / "tuning-cuda.sqlite").is_file():
        with Store(folder / "tuning-cuda.sqlite") as store:
            judged = load_variant_dataset(store, list(FAMILIES.values()), suite="tuning")

    def known(d):
        if d is None:
            return None, None
        keys = [SummaryCache.key(c.kernel_name, d.params(i), hw.name)
                for i, c in enumerate(d.cases)]
        mask = np.array([isinstance(lf.SUMMARIES.entries.get(k), dict) for k in keys])
        return d.subset(mask), int((~mask).sum())

    (loops, a), (corpus, b), (judged, c) = known(loops), known(corpus), known(judged)
    training = concat([loops, corpus]) if corpus is not None else loops
    return training, judged, {"random": a, "corpus": b, "judged": c}


def _per_family(data, predicted) -> dict:
    out = {}
    classes = np.asarray(data.info.kernel_class)
    for fam in sorted(set(classes)):
        rows = classes == fam
        if rows.sum() >= 4:
            out[fam] = ranking_scores(predicted[rows], data.seconds[rows])
    return out


def _summary(scores: dict) -> dict:
    top1 = np.array([s["top1"] for s in scores.values()])
    top3 = np.array([s["top3"] for s in scores.values()])
    rho = np.array([s["spearman"] for s in scores.values()])
    return {"families": len(scores), "mean_spearman": float(np.nanmean(rho)),
            "median_top1": float(np.median(top1)), "worst_top1": float(top1.max()),
            "top1_within_5_percent": float((top1 <= 0.05).mean()),
            "top3_within_2_percent": float((top3 <= 0.02).mean())}


_SHOWN = ("dram_bytes_read", "l2_sectors_read", "l1_sectors", "shared_wavefronts",
          "inst_executed", "waves", "group_size")


def misses(model, judged, predicted, scores, limit: float = 0.05) -> dict:
    """Per judged family whose top-1 pick is more than *limit* off the best: the pick and
    the best variant, measured and predicted, with the counters they were predicted
    from."""
    import kernelcast.models.learned.facts as lf
    from kernelcast.hardware import load_hardware

    hw = load_hardware(model.hardware_)
    out = {}
    classes = np.asarray(judged.info.kernel_class)
    for fam, s in scores.items():
        if s["top1"] <= limit:
            continue
        rows = np.where(classes == fam)[0]
        pick = rows[np.lexsort((rows, predicted[rows]))[0]]
        best = rows[np.argmin(judged.seconds[rows])]
        out[fam] = {}
        for role, i in (("pick", pick), ("best", best)):
            case = judged.cases[i]
            summary = lf.summary_with_geometry(case.kernel_name, case.kernel,
                                               judged.params(i), hw)
            out[fam][role] = {"variant": judged.cases[i].kernel_name.split("/", 1)[1],
                              "measured_s": float(judged.seconds[i]),
                              "predicted_s": float(predicted[i]),
                              **{k: summary[k] for k in _SHOWN}}
    return out


def layout_order(model) -> dict:
    """stencil2d tuned with its full space (``full_space``, one task per work-item):
    the share of pairs of a layout whose l.0 (``j.group``) is at least 32 and one whose
    l.0 is below 8 that the model ranks wide first (the issue's target: all of them)."""
    from kernelcast.tune.families import family
    from kernelcast.tune.space import apply, full_space, invalid

    fam = family("stencil2d")
    space = full_space(fam.build(), fam.params)
    wide, narrow = [], []
    for v in space.variants():
        group = v["j.group"]
        if (any(v[f"{a.iname}.per_item"] != 1 for a in space.axes)
                or 8 <= group < 32 or invalid(v, space, max_group_size=1024)):
            continue
        seconds = model.predict(apply(fam.build(), v, space), fam.params)
        (wide if group >= 32 else narrow).append(seconds)
    pairs = np.array(wide)[:, None] < np.array(narrow)[None, :]
    return {"wide": len(wide), "narrow": len(narrow), "ordered_share": float(pairs.mean())}


def _judged(model, judged) -> dict:
    """The judged families ranked by *model*, fitted to the whole corpus."""
    from kernelcast.metrics import geometric_mean, relative_errors

    predicted = model.predict_dataset(judged)
    scores = _per_family(judged, predicted)
    return {"variants": len(judged), "families": scores, "summary": _summary(scores),
            "misses": misses(model, judged, predicted, scores),
            "stencil2d_layouts": layout_order(model),
            "geomean_rel_error": geometric_mean(relative_errors(predicted, judged.seconds))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpu", default="h100", help="data/<gpu>/ holds the stores")
    parser.add_argument("--folds", type=int, default=10, help="groups of families")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    from kernelcast.errors import KernelcastError
    from kernelcast.metrics import geometric_mean, relative_errors
    from kernelcast.models import get_model
    from kernelcast.profile import save_profile

    started = time.perf_counter()
    try:
        data, judged, unknown = load(args.gpu)
    except (OSError, KernelcastError) as err:  # a store, summaries file or GPU unknown
        print(f"learned_facts.py: error: {err}", file=sys.stderr)
        return 1
    print(f"{len(data)} training variants of {data.info.kernel_class.nunique()} families, "
          f"{0 if judged is None else len(judged)} judged ({unknown} without a summary), "
          f"{time.perf_counter() - started:.0f} s", flush=True)
    families = sorted(set(data.info.kernel_class))
    fold_of = {f: k % args.folds for k, f in enumerate(
        np.random.default_rng(0).permutation(families))}
    folds = np.array([fold_of[f] for f in data.info.kernel_class])
    predicted = np.empty(len(data))
    for k in range(args.folds):
        held = folds == k
        model = get_model("learned-facts").fit(data.subset(~held))
        predicted[held] = model.predict_dataset(data.subset(held))
        print(f"fold {k + 1}/{args.folds}, {time.perf_counter() - started:.0f} s", flush=True)
    errors = relative_errors(predicted, data.seconds)
    random_rows = np.array([c.startswith("loops-") for c in data.info.kernel_class])
    held_out = _per_family(data, predicted)
    model = get_model("learned-facts").fit(data)
    device = data.identity["device"].lower().replace(" ", "-")
    profile = ROOT / "data" / "profiles" / f"{device}-cuda-learned-facts.json"
    save_profile(model, profile)
    result = {
        "date": dt.date.today().isoformat(),
        "identity": {k: data.identity.get(k) for k in ("backend", "device", "driver")},
        "training": {"variants": len(data), "families": len(families),
                     "random_variants": int(random_rows.sum()),
                     "corpus_variants": int((~random_rows).sum()),
                     "without_summary": unknown},
        "held_out": {
            "folds": args.folds,
            "geomean_rel_error": geometric_mean(errors),
            "random_geomean_rel_error": geometric_mean(errors[random_rows]),
            "corpus_geomean_rel_error": (geometric_mean(errors[~random_rows])
                                         if (~random_rows).any() else None),
            "within_30_percent": float((errors <= 0.3).mean()),
            "random_ranking": _summary({f: s for f, s in held_out.items()
                                        if f.startswith("loops-")}),
            "corpus_families": {f: s for f, s in held_out.items()
                                if not f.startswith("loops-")}},
        "judged": None if judged is None else _judged(model, judged),
        "fit_report": model.fit_report_,
        "profile": str(profile.relative_to(ROOT)),
        "seconds": round(time.perf_counter() - started, 1),
    }
    out = ROOT / "data" / args.gpu / "learned-facts.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: result[k] for k in ("training", "held_out", "judged")}, indent=1)
          [:4000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
