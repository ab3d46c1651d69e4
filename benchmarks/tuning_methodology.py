"""Tuners judged as the field judges them (kernelcast.tune.methodology: the methodology of
Willemsen et al., FGCS 2024): on each tuning family, measured exhaustively, the score of
each search after 1..B measurements (0: random search, 1: the best variant at once), its
mean over the budget, and the measurements it needs to get within 5% of the best.
Writes data/<gpu>/tuning-methodology.json.

The searches:
- Kernel Tuner's strategies (STRATEGIES), replayed in its simulation mode on the family
  exported as a cache file (kernelcast.tune.kerneltuner.export_cache), with a restriction
  that admits only the variants of the judged space, max_fevals B, seeds 0..S-1
  (tune_kernel's seed, Python's and NumPy's generators seeded alike); the first B
  evaluations are scored (kernelcast.tune.methodology.kernel_tuner_order). Every
  evaluation counts as a measurement: the ones its cache serves again (the methodology
  counts Kernel Tuner's results list so) and a configuration outside the judged space
  that a strategy evaluates anyway (a measurement without a time). "repeats_free" scores
  the same runs with each repeat free, which is what a user of its cache pays. Where a
  strategy fails ("errors"), its run stopped there and keeps its best. bayes_opt and
  diff_evo draw from generators the seeds do not reach, so their figures move from run
  to run (by up to 0.2 in an aggregate here); "random_search_standard_error" says how
  far 20 seeds of random search may stray from 0.
- kernelcast's model order: every variant ranked by a fitted profile's prediction
  (data/profiles/<device>-<backend>-MODEL.json), measured in that order.
- kernelcast's guided search (kernelcast.tune.guided.replay, budget B, no early stop):
  the model's order corrected by what it has measured; judged where the module exists.

The families: the six judged ones (kernelcast.tune.families.FAMILIES, timed in
data/<gpu>/tuning-<backend>.sqlite) and the search families (SEARCH_FAMILIES, timed in
data/<gpu>/tuning-search-<backend>.sqlite.xz). The judged space of a family is its
variants timed (ok, unstable) that every model can predict; all searches see the same. B is --budget or, on a small space, the most measurements at which the score is
defined (the variants less those tied at the best). The aggregate is the mean score over
budgets 1..cutoff, the methodology's range (random search expected 95% of the way from
the median to the best), and over 1..20 ("aggregate_20").

Predictions are made once into a scratch file (--predictions); the facts models count a
variant's hardware facts, which takes minutes. --families/--strategies/--models run a
subset, and the file written then holds only that.

Run:  .venv/bin/python benchmarks/tuning_methodology.py [--gpu h100] [--seeds 20]
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")  # two processes share two cores

import argparse  # noqa: E402
import datetime as dt  # noqa: E402
import json  # noqa: E402
import lzma  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

# the classics, then the ones Kernel Tuner 1.5 added as its best: the LLM-generated
# hybrid_vndx and adaptive_tabu_greywolf (Willemsen et al., "Automated Algorithm Design
# for Auto-Tuning Optimizers", 2025) and the strategies hyperparameter-tuned in "Tuning
# the Tuner" (2025)
STRATEGIES = ["random_sample", "genetic_algorithm", "simulated_annealing", "bayes_opt",
              "dual_annealing", "diff_evo", "pso", "greedy_ils", "firefly_algorithm",
              "basinhopping", "mls", "hybrid_vndx", "adaptive_tabu_greywolf"]
MODELS = ["paper", "extended", "hong-kim", "learned", "facts", "learned-facts"]
WITHIN = 1.05
SCRATCH = Path(tempfile.gettempdir()) / "kernelcast-methodology-predictions.json"


def predictions(store_path: Path, families: dict, backend: str, models: list[str],
                scratch: Path) -> dict:
    """{family: {"times": {key: s}, "variants": {key: variant}, "predicted": {model:
    {key: s}}, "not_counted": [key: why]}} over the variants of *families* timed in
    *store_path* that every model predicts; kept in *scratch* family by family, and read
    back from it."""
    from kernelcast.measure.store import Store
    from kernelcast.profile import load_profile
    from kernelcast.properties import cached_properties
    from kernelcast.tune.space import apply, variant_key

    FAMILIES = families  # noqa: N806
    with Store(store_path) as store:
        device = store.identity["device"].lower().replace(" ", "-")
        timed = {r["case_name"]: r for r in store.rows() if not r["damage"]}
    timed = {k: r["min_s"] for k, r in timed.items() if r["status"] in ("ok", "unstable")}
    profiles = {m: load_profile(ROOT / "data" / "profiles" / f"{device}-{backend}-{m}.json")
                for m in models}
    out = json.loads(scratch.read_text()) if scratch.exists() else {}
    size = {n: sum(k.startswith(f"{n}/") for k in timed) for n in FAMILIES}
    for name, fam in sorted(FAMILIES.items(), key=lambda kv: size[kv[0]]):  # small first
        if name in out:
            continue
        entry = {"times": {}, "variants": {}, "predicted": {m: {} for m in models},
                 "not_counted": []}
        started = time.perf_counter()
        for variant in fam.space.variants():
            key = variant_key(variant)
            if f"{name}/{key}" not in timed:
                continue
            try:
                knl = apply(fam.build(), variant, fam.space)
                props = cached_properties(knl)
                seconds = {m: p.seconds(knl if getattr(p, "needs_kernel", False) else props,
                                        fam.params) for m, p in profiles.items()}
            except (RecursionError, ArithmeticError, ValueError) as err:
                entry["not_counted"].append(f"{key}: {type(err).__name__}")
                continue
            entry["times"][key] = timed[f"{name}/{key}"]
            entry["variants"][key] = variant
            for m, s in seconds.items():
                entry["predicted"][m][key] = s
        out[name] = entry
        scratch.write_text(json.dumps(out))
        print(f"predicted {name}: {len(entry['times'])} variants "
              f"({len(entry['not_counted'])} not counted, "
              f"{time.perf_counter() - started:.0f} s)", flush=True)
    return out


def replay(task: tuple) -> dict:
    """One Kernel Tuner strategy, one seed: the keys it evaluated, in order."""
    from kernelcast.tune.methodology import kernel_tuner_order

    cache, strategy, seed, allowed, budget = task
    started = time.perf_counter()
    order, error = kernel_tuner_order(cache, strategy, budget=budget, seed=seed,
                                      allowed=allowed)
    return {"order": order, "error": error and error[:200],
            "seconds": time.perf_counter() - started}


def guided(task: tuple) -> dict:
    """The guided search's order for one model's predictions."""
    from kernelcast.tune.guided import Candidate
    from kernelcast.tune.guided import replay as guided_replay

    warnings.simplefilter("ignore")
    variants, predicted, times, budget = task
    floor = 1e-9  # the paper's unconstrained weights can predict no time or less
    cands = [Candidate(k, variants[k], max(predicted[k], floor)) for k in times]
    started = time.perf_counter()
    order = guided_replay(cands, times, budget=budget, stop=False)
    return {"order": order[:budget], "seconds": time.perf_counter() - started}


def judge(times: dict, orders: list[list], budget: int, cutoff: int) -> dict:
    """A search's score curve over 1..budget (mean over its runs), aggregates and
    measurements to within 5%; where its runs measure a variant again, the same with each
    repeat free ("repeats_free": what a tuner whose cache serves repeats pays)."""
    from kernelcast.tune.methodology import aggregate, measurements_to, score_curve

    curve = score_curve(times, orders, budget)
    counts = [measurements_to(times, o[:budget], WITHIN) for o in orders]
    out = {"runs": len(orders),
           "score": [round(float(s), 4) for s in curve],
           "aggregate": round(aggregate(curve, cutoff), 4),
           "aggregate_20": round(aggregate(curve, 20), 4),
           "to_within_5": {"median": _median(counts),
                           "failures": sum(c is None for c in counts), "counts": counts},
           "unique": statistics.fmean(len(set(o[:budget])) for o in orders),
           "ended_early": sum(len(o) < budget for o in orders)}
    if any(len(set(o)) < len(o) for o in orders):
        firsts = [list(dict.fromkeys(o)) for o in orders]
        free = judge(times, firsts, budget, cutoff)
        out["repeats_free"] = {k: free[k] for k in ("score", "aggregate", "aggregate_20",
                                                    "to_within_5", "ended_early")}
    return out


def _median(counts: list) -> float | None:
    """The median count, a failure (None) counting as more than any; None where half or
    more of the runs failed."""
    ranked = sorted(counts, key=lambda c: (c is None, c or 0))
    middle = ranked[(len(ranked) - 1) // 2:len(ranked) // 2 + 1]
    return None if any(c is None for c in middle) else statistics.fmean(middle)


def _canonical(variant: dict) -> frozenset:
    """A variant as its parameters at other than their off value, whatever the order."""
    from kernelcast.tune.space import parse_variant_key, variant_key
    return frozenset(parse_variant_key(variant_key(variant)).items())


def kernel_tuner_keys(cache: str, times: dict) -> dict:
    """{Kernel Tuner cache key: kernelcast key} for the variants in *times*."""
    from kernelcast.tune.space import parse_variant_key

    data = json.loads(Path(cache).read_text())
    names = data["tune_params_keys"]
    ours = {frozenset(parse_variant_key(k).items()): k for k in times}
    out = {}
    for kt_key, entry in data["cache"].items():
        key = ours.get(_canonical({n: entry[n] for n in names}))
        if key is not None:
            out[kt_key] = key
    return out


def family(name: str, entry: dict, args, store: Path, tmp: str, pool) -> dict:
    """Every search judged on one family."""
    import kernelcast.tune.methodology as tm
    from kernelcast.tune.kerneltuner import export_cache

    times = entry["times"]
    budget = min(args.budget, tm.usable_budget(times))
    cutoff = tm.cutoff_budget(times)
    scored = min(cutoff, budget)  # the budgets the aggregate is the mean over
    best = min(times.values())
    baseline = tm.expected_best(times, budget)
    # how far the aggregate of random search over the seeds may stray from 0: at most
    # the mean of its exact spread at each budget, on the score's scale, over sqrt(seeds)
    noise = tm.aggregate(tm.baseline_spread(times, budget) / (baseline - best), scored)
    out = {"variants": len(times), "best_s": best,
           "within_5_percent": sum(t <= WITHIN * best for t in times.values()),
           "budget": budget, "cutoff": cutoff, "aggregated_over": scored,
           "random_search_standard_error": round(noise / args.seeds ** 0.5, 4),
           "not_counted": entry["not_counted"],
           "baseline_s": [float(x) for x in baseline],
           "methodology_baseline_s": list(map(float, tm.methodology_baseline(times, budget))),
           "searches": {}}
    cache = str(Path(tmp) / f"{name}.json")
    export_cache(store, name, cache)
    keys = kernel_tuner_keys(cache, times)
    if len(keys) != len(times):
        raise SystemExit(f"{name}: {len(times) - len(keys)} variants not in the cache file")
    for strategy in args.strategies:
        started = time.perf_counter()
        runs = list(pool.map(replay, [(cache, strategy, seed, sorted(keys), budget)
                                      for seed in range(args.seeds)]))
        errors = sorted({r["error"] for r in runs if r["error"]})
        orders = [[keys.get(k) for k in r["order"]] for r in runs if r["order"]]
        result = judge(times, orders, budget, scored) if orders else {"runs": 0}
        result["errors"] = errors
        out["searches"][strategy] = result
        _progress(name, strategy, result, time.perf_counter() - started)
    for m in args.models:
        predicted = entry["predicted"][m]
        order = sorted(times, key=lambda k: (predicted[k], k))
        out["searches"][f"kernelcast:{m}"] = judge(times, [order], budget, scored)
        _progress(name, f"kernelcast:{m}", out["searches"][f"kernelcast:{m}"], 0.0)
    if _has_guided():
        tasks = [(entry["variants"], entry["predicted"][m], times, budget)
                 for m in args.models]
        for m, r in zip(args.models, pool.map(guided, tasks)):
            result = judge(times, [r["order"]], budget, scored)
            out["searches"][f"kernelcast:{m}+feedback"] = result
            _progress(name, f"kernelcast:{m}+feedback", result, r["seconds"])
    return out


def _has_guided() -> bool:
    try:
        from kernelcast.tune.guided import replay  # noqa: F401
    except ImportError:
        return False
    return True


def _progress(name: str, search: str, r: dict, seconds: float) -> None:
    if not r.get("runs"):
        print(f"{name} {search}: no runs ({r.get('errors')})", flush=True)
        return
    print(f"{name} {search}: aggregate {r['aggregate']:.3f} (to 20: {r['aggregate_20']:.3f})"
          f", within 5% median {r['to_within_5']['median']} failures "
          f"{r['to_within_5']['failures']}/{r['runs']} ({seconds:.0f} s)"
          + (f" errors {r['errors']}" if r.get("errors") else ""), flush=True)


def table(doc: dict) -> None:
    """Per family and search: aggregate, aggregate to 20, median measurements to 5%."""
    for name, fam in doc["families"].items():
        print(f"\n{name}: {fam['variants']} variants ({fam['within_5_percent']} within 5%), "
              f"budget {fam['budget']}, aggregate over 1..{fam['aggregated_over']} "
              f"(cutoff {fam['cutoff']}), random search within "
              f"±{fam['random_search_standard_error']} of 0")
        kt = {s: r for s, r in fam["searches"].items()
              if not s.startswith("kernelcast") and r.get("runs")}
        for search, r in fam["searches"].items():
            if not r.get("runs"):
                print(f"  {search:32s} no runs: {r.get('errors')}")
                continue
            margin = ""
            if search.startswith("kernelcast") and kt:
                top = min(20, fam["budget"])
                margin = min(r["score"][k] - max(o["score"][k] for o in kt.values())
                             for k in range(top))
                margin = f"  margin over Kernel Tuner to {top}: {margin:+.3f}"
            median = r["to_within_5"]["median"]
            print(f"  {search:32s} {r['aggregate']:6.3f} {r['aggregate_20']:6.3f} "
                  f"{'-' if median is None else f'{median:g}':>6s} "
                  f"fail {r['to_within_5']['failures']}/{r['runs']}{margin}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpu", default="h100")
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--models", nargs="+", default=MODELS)
    parser.add_argument("--strategies", nargs="+", default=STRATEGIES)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--budget", type=int, default=100,
                        help="measurements judged (at most the score's usable budget)")
    parser.add_argument("--families", nargs="*", help="default: all")
    parser.add_argument("--predictions", default=str(SCRATCH),
                        help="scratch file of the models' predictions (made if missing)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", help="default: data/<gpu>/tuning-methodology.json")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    from importlib.metadata import version

    from kernelcast.tune.families import FAMILIES, SEARCH_FAMILIES

    folder = ROOT / "data" / args.gpu
    judged = folder / f"tuning-{args.backend}.sqlite"
    packed = folder / f"tuning-search-{args.backend}.sqlite.xz"
    doc = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
           "kernel_tuner": version("kernel_tuner"),
           "methodology": "Willemsen et al., FGCS 2024 (autotuning-methodology 1.1.0), "
                          "as kernelcast.tune.methodology computes it",
           "seeds": args.seeds, "within": WITHIN,
           "stores": [str(judged.relative_to(ROOT)), str(packed.relative_to(ROOT))],
           "guided": _has_guided(), "families": {}}
    with tempfile.TemporaryDirectory() as tmp, ProcessPoolExecutor(args.jobs) as pool:
        search = Path(tmp) / packed.stem
        if packed.exists():
            search.write_bytes(lzma.decompress(packed.read_bytes()))
        for store, families in ((judged, FAMILIES), (search, SEARCH_FAMILIES)):
            if not store.exists():
                continue
            data = predictions(store, families, args.backend, MODELS,
                               Path(args.predictions))
            for name in args.families or [f for f in families if f in data]:
                if name in families:
                    doc["families"][name] = family(name, data[name], args, store, tmp,
                                                   pool)
    table(doc)
    out = Path(args.out) if args.out else folder / "tuning-methodology.json"
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
