"""Fit the learned model (kernelcast.models.learned) to the training corpus measured on a
GPU (data/<gpu>/tuning-corpus-<backend>.sqlite, benchmarks/tuning_gpu.py --corpus), and
cross-validate it there, family by family: each corpus family is ranked by a model fitted
to the others (regret of the top-1 pick and the best of the top 3, Spearman's ρ), the
evidence that it ranks kernels it never saw. Writes the profile fitted to the whole corpus
(data/profiles/<device>-<backend>-learned.json), which benchmarks/tuning_regret.py then
judges on the tuning families, and data/<gpu>/tuning-learned.json, which
scripts/results.py shows. The judged families are never in the corpus
(tests/test_tune_corpus.py).

Run:  .venv/bin/python benchmarks/tuning_learned.py [--gpu h100] [--backend cuda]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def ranking_scores(predicted, measured) -> dict:
    """Regret of the top-1 pick and of the best of the top 3 and 5 (ties broken by
    position), and Spearman's ρ."""
    from scipy.stats import spearmanr

    order = np.lexsort((np.arange(len(predicted)), predicted))
    best = measured.min()
    return {**{f"top{k}": float(measured[order[:k]].min() / best - 1) for k in (1, 3, 5)},
            "spearman": float(spearmanr(predicted, measured).statistic)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpu", default="h100", help="data/<gpu>/ holds the corpus store")
    parser.add_argument("--backend", default="cuda", help="the store's backend")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    from kernelcast.measure.store import Store
    from kernelcast.models import get_model
    from kernelcast.profile import save_profile
    from kernelcast.tune.corpus import CORPUS
    from kernelcast.tune.variants import load_variant_dataset

    folder = ROOT / "data" / args.gpu
    with Store(folder / f"tuning-corpus-{args.backend}.sqlite") as store:
        data = load_variant_dataset(store, list(CORPUS.values()))
        identity = store.identity
    started = time.perf_counter()
    for i in range(len(data)):  # count every variant once (the disk cache keeps them)
        data.properties(i)
    counted = time.perf_counter() - started
    print(f"{len(data)} corpus variants counted in {counted:.0f} s", flush=True)
    families = list(dict.fromkeys(data.info.kernel_class))
    cv = {}
    for held in families:
        mask = (data.info.kernel_class == held).to_numpy()
        model = get_model("learned").fit(data.subset(~mask))
        test = data.subset(mask)
        scores = ranking_scores(model.predict_dataset(test), test.seconds)
        cv[held] = {"variants": int(mask.sum()), **scores}
        print(f"held out {held}: {mask.sum()} variants, top-1 {scores['top1']:.1%}, "
              f"top-3 {scores['top3']:.1%}, rho {scores['spearman']:.2f}", flush=True)
    model = get_model("learned").fit(data)
    device = identity["device"].lower().replace(" ", "-")
    path = save_profile(model, ROOT / "data" / "profiles" /
                        f"{device}-{args.backend}-learned.json")
    doc = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
           "identity": identity, "variants": len(data), "families": families,
           "counting_seconds": counted, "cross_validation": cv,
           "mean_spearman": float(np.mean([c["spearman"] for c in cv.values()])),
           "training_geomean_rel_error": model.fit_report_["training_geomean_rel_error"]}
    out = folder / "tuning-learned.json"
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {path.relative_to(ROOT)} and {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
