"""The guided search (kernelcast.tune.guided) replayed on spaces measured exhaustively:
how many measurements each setting needs to reach a variant within 5% of the best.

  predict: every measured variant of the training corpus (tuning-corpus-BACKEND.sqlite)
      and of the judged families (tuning-BACKEND.sqlite) predicted by each fitted profile
      of the GPU, into a scratch file (--predictions), made once.
  choose: replays of candidate settings on the training corpus only, the set the one
      configuration (kernelcast.tune.guided.SETTINGS) is chosen on.

The judged families are scored by benchmarks/tuning_methodology.py, never here.

Run:  .venv/bin/python benchmarks/guided_search.py choose [--gpu h100] [--models hong-kim]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

MODELS = ["paper", "extended", "hong-kim"]
SCRATCH = Path(tempfile.gettempdir()) / "kernelcast-guided-predictions.json"


def predictions(gpu: str, backend: str, models: list[str], corpus: bool) -> dict:
    """{family: {"measured": {key: s}, "noise": spread, "predicted": {model: {key: s}},
    "variants": {key: variant}}} for the corpus or the judged families."""
    from kernelcast.measure.store import Store
    from kernelcast.profile import load_profile
    from kernelcast.properties import cached_properties
    from kernelcast.tune.corpus import CORPUS
    from kernelcast.tune.families import FAMILIES
    from kernelcast.tune.space import apply, variant_key

    folder = ROOT / "data" / gpu
    name = f"tuning-corpus-{backend}" if corpus else f"tuning-{backend}"
    with Store(folder / f"{name}.sqlite") as store:
        device = store.identity["device"].lower().replace(" ", "-")
        rows = {r["case_name"]: r for r in store.rows() if r["status"] in ("ok", "unstable")}
    profiles = {m: load_profile(ROOT / "data" / "profiles" / f"{device}-{backend}-{m}.json")
                for m in models}
    out = {}
    for fname, fam in (CORPUS if corpus else FAMILIES).items():
        entry = {"measured": {}, "spreads": [], "predicted": {m: {} for m in models},
                 "variants": {}}
        for variant in fam.space.variants():
            key = variant_key(variant)
            row = rows.get(f"{fname}/{key}")
            if row is None:
                continue
            try:
                props = cached_properties(apply(fam.build(), variant, fam.space))
            except RecursionError:
                continue
            entry["measured"][key] = row["min_s"]
            entry["spreads"].append(row["median_s"] / row["min_s"] - 1)
            entry["variants"][key] = variant
            for m, p in profiles.items():
                entry["predicted"][m][key] = p.seconds(props, fam.params)
        entry["noise"] = statistics.median(entry.pop("spreads"))
        out[fname] = entry
        print(f"predicted {fname}: {len(entry['measured'])} variants", flush=True)
    return out


def to_five(order: list[str], times: dict) -> int | None:
    best = min(times.values())
    return next((i + 1 for i, k in enumerate(order) if times[k] <= 1.05 * best), None)


def choose(data: dict, models: list[str], budget: int) -> None:
    from kernelcast.tune.guided import Candidate, Settings, replay

    settings = [Settings(b, budget) for b in (1, 2, 4)]
    for m in models:
        print(f"model {m}: measurements to within 5% (model order | batch 1, 2, 4)")
        totals = {s: [] for s in settings}
        for fname, e in data.items():
            cands = [Candidate(k, e["variants"][k], e["predicted"][m][k]) for k in e["measured"]]
            plain = sorted(cands, key=lambda c: (c.predicted_s, c.key))
            counts = [to_five([c.key for c in plain], e["measured"])]
            for s in settings:
                n = to_five(replay(cands, e["measured"], settings=s, noise=e["noise"]),
                            e["measured"])
                counts.append(n)
                totals[s].append(n if n is not None else 2 * budget)
            print(f"  {fname:12s} {len(cands):4d} variants: " + "  ".join(
                "-" if n is None else str(n) for n in counts), flush=True)
        print("  geometric means: " + "  ".join(
            f"batch {s.batch}: {statistics.geometric_mean(v):.1f}" for s, v in totals.items()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("step", choices=["predict", "choose"])
    parser.add_argument("--gpu", default="h100")
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--models", nargs="+", default=MODELS)
    parser.add_argument("--budget", type=int, default=40)
    parser.add_argument("--predictions", default=str(SCRATCH))
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    scratch = Path(args.predictions)
    if scratch.exists():
        data = json.loads(scratch.read_text())
    else:
        data = {"corpus": predictions(args.gpu, args.backend, MODELS, corpus=True)}
        scratch.write_text(json.dumps(data))
    if args.step == "choose":
        choose(data["corpus"], args.models, args.budget)
    return 0


if __name__ == "__main__":
    sys.exit(main())
