"""How well each model tunes: its ranking of every measured variant of the tuning
families against the GPU's ground truth (benchmarks/tuning_gpu.py); writes
data/<gpu>/tuning-regret.json, which scripts/results.py shows.

For each family and model (the fitted profiles of the device, data/profiles/):
- regret of the top-1 pick: its measured time over the best measured, minus 1; and of
  the best of the top 3 and top 5;
- Spearman's rank correlation between predicted and measured times over the family;
- ranking speed: seconds per variant to make it, count its properties and predict it.
The run-to-run noise is the spread of the repeated variants (tuning-repeat-*.sqlite).

Run:  .venv/bin/python benchmarks/tuning_regret.py [--gpu h100] [--backend cuda]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpu", default="h100", help="data/<gpu>/ holds the ground truth")
    parser.add_argument("--backend", default="cuda", help="the stores' backend")
    parser.add_argument("--models", nargs="+", default=["paper", "extended", "hong-kim", "learned"],
                        help="fitted profiles to rank with")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    from scipy.stats import spearmanr

    from kernelcast.measure.store import Store
    from kernelcast.profile import load_profile
    from kernelcast.properties import cached_properties
    from kernelcast.tune.families import FAMILIES
    from kernelcast.tune.space import apply, variant_key

    folder = ROOT / "data" / args.gpu
    with Store(folder / f"tuning-{args.backend}.sqlite") as store:
        identity = store.identity
        measured = {r["case_name"]: r["min_s"] for r in store.rows()
                    if r["status"] in ("ok", "unstable")}
    with Store(folder / f"tuning-repeat-{args.backend}.sqlite") as store:
        again = {r["case_name"]: r["min_s"] for r in store.rows() if r["min_s"]}
    ratios = [again[k] / measured[k] for k in again if k in measured]
    device = identity["device"].lower().replace(" ", "-")
    models = {m: load_profile(ROOT / "data" / "profiles" / f"{device}-{args.backend}-{m}.json")
              for m in args.models}
    doc = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
           "identity": identity,
           "noise": {"repeated": len(ratios),
                     "median_abs": statistics.median(abs(r - 1) for r in ratios),
                     "max_abs": max(abs(r - 1) for r in ratios)},
           "families": {}}
    failures: dict[str, list[str]] = {}
    for name, fam in FAMILIES.items():
        rows = []
        started = time.perf_counter()
        for variant in fam.space.variants():
            key = f"{name}/{variant_key(variant)}"
            if key not in measured:
                continue
            try:
                props = cached_properties(apply(fam.build(), variant, fam.space))
            except RecursionError as err:  # kernelcast's compiled evaluator: see the note
                failures.setdefault(name, []).append(f"{key}: {type(err).__name__}")
                continue
            rows.append((key, measured[key],
                         {m: model.seconds(props, fam.params) for m, model in models.items()}))
        per_variant = (time.perf_counter() - started) / max(1, len(rows))
        best = min(t for _, t, _ in rows)
        entry = {"variants": len(rows), "not_counted": failures.get(name, []),
                 "best_s": best,
                 "within_5_percent": sum(t <= 1.05 * best for _, t, _ in rows),
                 "seconds_per_variant": per_variant, "models": {}}
        for m in models:
            order = sorted(rows, key=lambda r, m=m: (r[2][m], r[0]))
            regret = {f"top{k}": min(t for _, t, _ in order[:k]) / best - 1
                      for k in (1, 3, 5)}
            rho = spearmanr([r[2][m] for r in rows], [r[1] for r in rows]).statistic
            entry["models"][m] = {**regret, "spearman": float(rho), "pick": order[0][0]}
        doc["families"][name] = entry
        print(f"{name}: {len(rows)} variants, {per_variant * 1e3:.0f} ms each; " + "; ".join(
            f"{m} top1 {e['top1']:.0%} top3 {e['top3']:.0%} rho {e['spearman']:.2f}"
            for m, e in entry["models"].items()), flush=True)
    out = folder / "tuning-regret.json"
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
