"""The guided search (kernelcast.tune.guided) replayed on spaces measured exhaustively:
how many measurements each setting needs to reach a variant within 5% of the best.

  predict: every measured variant of the training corpus (tuning-corpus-BACKEND.sqlite)
      predicted by each fitted profile of the GPU, into a scratch file (--predictions),
      made once.
  choose: replays of candidate settings on the training corpus only, the set the one
      configuration (kernelcast.tune.guided.SETTINGS) is chosen on.

The judged families are scored by benchmarks/tuning_methodology.py, never here.

Run:  .venv/bin/python benchmarks/guided_search.py choose [--gpu h100] [--models hong-kim]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

MODELS = ["paper", "extended", "hong-kim"]
SCRATCH = Path(tempfile.gettempdir()) / "kernelcast-corpus-predictions.json"


def predictions(gpu: str, backend: str, models: list[str], scratch: Path) -> dict:
    """{family: {"times", "variants", "predicted"}} of the training corpus's variants
    timed in data/<gpu>/tuning-corpus-BACKEND.sqlite, as benchmarks/tuning_methodology.py
    makes them for the judged families (kept in *scratch*)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from tuning_methodology import predictions as predict

    from kernelcast.tune.corpus import CORPUS

    store = ROOT / "data" / gpu / f"tuning-corpus-{backend}.sqlite"
    return predict(store, CORPUS, backend, models, scratch)


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
            cands = [Candidate(k, e["variants"][k], e["predicted"][m][k]) for k in e["times"]]
            plain = sorted(cands, key=lambda c: (c.predicted_s, c.key))
            counts = [to_five([c.key for c in plain], e["times"])]
            for s in settings:
                n = to_five(replay(cands, e["times"], settings=s), e["times"])
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
    data = predictions(args.gpu, args.backend, MODELS, Path(args.predictions))
    if args.step == "choose":
        choose(data, args.models, args.budget)
    return 0


if __name__ == "__main__":
    sys.exit(main())
