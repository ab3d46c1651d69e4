"""Against Kernel Tuner (issue 23): how many measurements each of Kernel Tuner's search
strategies needs, replayed in its simulation mode on the measured data of the tuning
families, to reach a variant within 5% of the best measured; against kernelcast's way
(rank every variant with a model, measure in ranked order), whose count is the 1-based
position of the first within-5% variant in the model's ranking. Writes
data/<gpu>/tuning-kerneltuner.json, which scripts/results.py shows.

Both sides see the same variants: those timed (ok, unstable) in data/<gpu>/tuning-<backend>.sqlite.
Each family is exported as a Kernel Tuner cache file (kernelcast.tune.kerneltuner.export_cache)
and Kernel Tuner is given a restriction that admits only the timed configurations, so
the failed ones are not in its search space. A strategy's count is the number of unique
configurations it evaluated (in the order of its results) up to and including the first
within 5% of the best; it is a failure where none is reached within max_fevals (the
family's number of variants) or before the strategy stops by itself (the genetic algorithm
does, on small spaces, once its population repeats itself). The median counts a failure
as more than any count (none where half the seeds or more failed); the mean is over the
seeds that got there. Each strategy runs with seeds 0..N-1 (tune_kernel's seed,
and Python's and NumPy's generators seeded alike). The other strategies repeat exactly
from run to run; bayes_opt does not (its medians moved by up to a factor of 2 between
runs of 20 seeds, on transpose 7.5 to 16), so its figures are approximate.
--families/--strategies run a subset, and the file written then holds only that.

The models' rankings are made as benchmarks/tuning_regret.py makes them (cached_properties
and the fitted profiles), kept in a scratch file (--rankings) so a rerun is quick.

Run:  .venv/bin/python benchmarks/tuning_kerneltuner.py [--gpu h100] [--seeds 20]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import random
import statistics
import sys
import tempfile
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

STRATEGIES = ["random_sample", "genetic_algorithm", "simulated_annealing", "bayes_opt"]
WITHIN = 1.05


def rankings(folder: Path, backend: str, models: list[str]) -> dict:
    """{family: {"measured": {key: s}, "models": {model: [keys, best predicted first]}}}."""
    from kernelcast.measure.store import Store
    from kernelcast.profile import load_profile
    from kernelcast.properties import cached_properties
    from kernelcast.tune.families import FAMILIES
    from kernelcast.tune.space import apply, variant_key

    with Store(folder / f"tuning-{backend}.sqlite") as store:
        identity = store.identity
        measured = {r["case_name"]: r["min_s"] for r in store.rows()
                    if r["status"] in ("ok", "unstable")}
    device = identity["device"].lower().replace(" ", "-")
    profiles = {m: load_profile(ROOT / "data" / "profiles" / f"{device}-{backend}-{m}.json")
                for m in models}
    out = {}
    for name, fam in FAMILIES.items():
        rows = []
        for variant in fam.space.variants():
            key = f"{name}/{variant_key(variant)}"
            if key not in measured:
                continue
            try:
                props = cached_properties(apply(fam.build(), variant, fam.space))
            except RecursionError:
                continue  # as tuning_regret.py: not counted
            rows.append((key, {m: p.seconds(props, fam.params) for m, p in profiles.items()}))
        out[name] = {"measured": {k: measured[k] for k, _ in rows},
                     "models": {m: [k for k, _ in sorted(rows, key=lambda r, m=m: (r[1][m], r[0]))]
                                for m in profiles}}
        print(f"ranked {name}: {len(rows)} variants", flush=True)
    return out


def replay(task: tuple) -> dict:
    """One strategy, one seed, one family's cache: the count to within 5% (None if never)."""
    cache, strategy, seed, timed = task
    import kernel_tuner as kt
    import numpy as np
    warnings.simplefilter("ignore")
    data = json.loads(Path(cache).read_text())
    names = data["tune_params_keys"]
    tune_params = {k: data["tune_params"][k] for k in names}
    allowed = set(timed)
    best = min(timed.values())

    def restrict(p):
        return ",".join(str(p[k]) for k in names) in allowed

    random.seed(seed)
    np.random.seed(seed)
    options = {"max_fevals": len(allowed)}
    if strategy == "random_sample":
        options["fraction"] = 1.0
    started = time.perf_counter()
    with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull):
        results, _ = kt.tune_kernel(data["kernel_name"], "__kernel void k() {}",
                                    data["problem_size"], [], tune_params, lang="OpenCL",
                                    restrictions=[restrict], cache=cache, simulation_mode=True,
                                    strategy=strategy, strategy_options=options, quiet=True,
                                    seed=seed)
    seen: list[str] = []
    count = None
    for r in results:
        key = ",".join(str(r[k]) for k in names)
        if key in seen:
            continue
        seen.append(key)
        if key in allowed and timed[key] <= WITHIN * best:
            count = len(seen)
            break
    return {"count": count, "evaluated": len({",".join(str(r[k]) for k in names)
                                              for r in results}),
            "seconds": time.perf_counter() - started}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpu", default="h100")
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--models", nargs="+",
                        default=["paper", "extended", "hong-kim", "learned"],
                        help="fitted profiles to rank with")
    parser.add_argument("--strategies", nargs="+", default=STRATEGIES)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--families", nargs="*", help="default: all")
    parser.add_argument("--rankings", default=str(Path(tempfile.gettempdir())
                                                  / "kernelcast-tuning-rankings.json"),
                        help="scratch file of the models' rankings (made if missing)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    import kernel_tuner

    from kernelcast.tune.kerneltuner import export_cache

    folder = ROOT / "data" / args.gpu
    store = folder / f"tuning-{args.backend}.sqlite"
    scratch = Path(args.rankings)
    if scratch.exists():
        ranked = json.loads(scratch.read_text())
    else:
        ranked = rankings(folder, args.backend, args.models)
        scratch.write_text(json.dumps(ranked))
    families = args.families or list(ranked)
    doc = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
           "kernel_tuner": kernel_tuner.__version__ if hasattr(kernel_tuner, "__version__")
           else _version("kernel_tuner"),
           "within": WITHIN, "seeds": args.seeds, "store": str(store.relative_to(ROOT)),
           "families": {}}
    with tempfile.TemporaryDirectory() as tmp, ProcessPoolExecutor(args.jobs) as pool:
        for family in families:
            measured = ranked[family]["measured"]
            prefix = len(family) + 1
            timed = dict(_kt_key(k[prefix:], t) for k, t in measured.items())
            cache = str(Path(tmp) / f"{family}.json")
            export_cache(store, family, cache)
            best = min(measured.values())
            entry = {"variants": len(measured),
                     "within_5_percent": sum(t <= WITHIN * best for t in measured.values()),
                     "max_fevals": len(measured), "strategies": {}, "kernelcast": {}}
            for m, order in ranked[family]["models"].items():
                entry["kernelcast"][m] = next(i + 1 for i, k in enumerate(order)
                                              if measured[k] <= WITHIN * best)
            for strategy in args.strategies:
                started = time.perf_counter()
                tasks = [(cache, strategy, seed, timed) for seed in range(args.seeds)]
                runs = list(pool.map(replay, tasks))
                counts = [r["count"] for r in runs]
                reached = [c for c in counts if c is not None]
                entry["strategies"][strategy] = {
                    "counts": counts,
                    "median": _median(counts),
                    "mean_reached": statistics.fmean(reached) if reached else None,
                    "failures": len(counts) - len(reached),
                    "evaluated": [r["evaluated"] for r in runs],
                    "seconds": time.perf_counter() - started}
                e = entry["strategies"][strategy]
                print(f"{family} {strategy}: median {e['median']} mean {e['mean_reached']} "
                      f"failures {e['failures']} ({e['seconds']:.0f} s)", flush=True)
            print(f"{family} kernelcast: {entry['kernelcast']}", flush=True)
            doc["families"][family] = entry
    out = folder / "tuning-kerneltuner.json"
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


def _median(counts: list) -> float | None:
    """The median count, a failure (None) counting as more than any; None where half or
    more of the seeds failed."""
    ranked = sorted(counts, key=lambda c: (c is None, c or 0))
    n = len(ranked)
    middle = ranked[(n - 1) // 2:n // 2 + 1]
    if any(c is None for c in middle):
        return None
    return statistics.fmean(middle)


def _kt_key(key: str, seconds: float) -> tuple[str, float]:
    """A variant key (name=value,...) as Kernel Tuner's cache key, and its time."""
    from kernelcast.tune.kerneltuner import _parse_key
    return ",".join(str(v) for _, v in _parse_key(key)), seconds


def _version(package: str) -> str:
    from importlib.metadata import version
    return version(package)


if __name__ == "__main__":
    sys.exit(main())
