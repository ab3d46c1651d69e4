"""The extended model on the hardware facts (``facts``, kernelcast.models.extended.FactsModel)
judged on every population the project measured on a GPU, next to the extended model on
the paper's properties; writes data/<gpu>/facts-eval.json, which scripts/results.py shows.

  python benchmarks/facts_model.py summaries [--gpu h100] [--jobs N] [--again]
      predicts the hardware facts of every launch judged below (a fraction of a second
      each: the compile and the cache model) in N processes, into
      data/<gpu>/facts-summaries.json.xz, so that evaluating takes seconds, not minutes.
  python benchmarks/facts_model.py evaluate [--gpu h100]
      fits both models to the CUDA store's measurement and extension suites and reports:
      the test and validation kernels (geometric-mean error), leave-one-class-out
      cross-validation, the random kernels of both sets (share within 0.7-1.3 of the
      measured time; timed through OpenCL, predicted from their Loopy twins) and the
      tuning families (top-1 and best-of-top-3 regret, Spearman's rho).

No case judged is in the fitting set: the fit sees the measurement and extension suites
only.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

FIT = ("measurement", "extension")
JUDGED = ("test", "validation")
RANDOM = ("random-realistic", "random-unrestricted")


def _summaries_path(gpu: str) -> Path:
    return ROOT / "data" / gpu / "facts-summaries.json.xz"


def _datasets(gpu: str) -> dict:
    """name -> Dataset of every population judged: the CUDA store's suites and the
    random kernels' store."""
    from poppl_herz import _store

    from kernelcast.fitting.dataset import PropertyCache, load_dataset
    from kernelcast.measure.store import Store
    from kernelcast.tune.variants import DiskPropertyCache

    folder = ROOT / "data" / gpu
    cache = PropertyCache()
    out = {}
    for backend in ("opencl", "cuda"):  # the CUDA store's last: the one judged
        with Store(folder / f"{backend}.sqlite") as store:
            out["fit"] = load_dataset(store, FIT, cache=cache)
            for suite in JUDGED:
                out[suite] = load_dataset(store, suite, cache=cache)
            if backend == "opencl":
                out = {f"opencl-{k}": v for k, v in out.items()}
    with Store(_store(folder, "random")) as store:
        for suite in RANDOM:  # thousands of Loopy twins: their properties kept on disk
            out[suite] = load_dataset(store, suite, cache=DiskPropertyCache())
    return out


def _tuning(gpu: str) -> dict:
    """family -> [(variant key, measured seconds, kernel maker)] of the tuning store."""
    from kernelcast.measure.store import Store
    from kernelcast.tune.families import FAMILIES
    from kernelcast.tune.space import apply, variant_key

    path = ROOT / "data" / gpu / "tuning-cuda.sqlite"
    if not path.exists():
        return {}
    with Store(path) as store:
        measured = {r["case_name"]: r["min_s"] for r in store.rows()
                    if r["status"] in ("ok", "unstable")}
    out = {}
    for name, fam in FAMILIES.items():
        rows = []
        for variant in fam.space.variants():
            key = f"{name}/{variant_key(variant)}"
            if key in measured:
                rows.append((key, measured[key],
                             lambda f=fam, v=variant: apply(f.build(), v, f.space)))
        out[name] = (fam.params, rows)
    return out


# {{{ summaries

_WORK: dict = {}


def _init(gpu: str, again: bool = False) -> None:
    warnings.simplefilter("ignore")
    _WORK["data"] = _datasets(gpu)
    _WORK["tuning"] = _tuning(gpu)
    _WORK["gpu"] = gpu
    from kernelcast.models.extended.facts import SummaryCache

    _WORK["known"] = set() if again else _complete(SummaryCache(_summaries_path(gpu)).entries)


def _complete(entries: dict) -> set[str]:
    """The keys of *entries* that need no computing again: failures, and summaries with
    every count of MEMORY_UNITS too."""
    from kernelcast.models.extended.facts import MEMORY_UNITS

    return {k for k, v in entries.items()
            if isinstance(v, str) or all(n in v for n in MEMORY_UNITS)}


def _task_list(gpu: str, known) -> list[tuple]:
    """The launches not in *known*, each once."""
    from kernelcast.hardware import load_hardware
    from kernelcast.models.extended.facts import SummaryCache

    hw = load_hardware(gpu)
    data, tuning = _datasets(gpu), _tuning(gpu)
    tasks, keys = [], set(known)
    for name, d in data.items():
        for i, case in enumerate(d.cases):
            key = SummaryCache.key(f"{case.suite}:{case.name}", d.params(i), hw.name)
            if key not in keys:
                keys.add(key)
                tasks.append(("case", name, i))
    tasks += [("variant", fam, i) for fam, (_, rows) in tuning.items()
              for i in range(len(rows))]
    return tasks


def _one(task) -> tuple[str, dict | str]:
    from kernelcast.hardware import load_hardware
    from kernelcast.models.extended import launch_name
    from kernelcast.models.extended.facts import SummaryCache, launch_summary

    hw = load_hardware(_WORK["gpu"])
    kind, name, i = task
    if kind == "case":
        dataset = _WORK["data"][name]
        case = dataset.cases[i]
        params = dataset.params(i)
        key = SummaryCache.key(f"{case.suite}:{case.name}", params, hw.name)
        make = case.kernel
    else:
        params, rows = _WORK["tuning"][name]
        make = rows[i][2]
        knl = make()
        key = SummaryCache.key(launch_name(knl), params, hw.name)
        if key in _WORK["known"]:
            return key, None
        make = lambda knl=knl: knl  # noqa: E731
    try:
        return key, launch_summary(make(), params, hw)
    except Exception as err:  # noqa: BLE001 - recorded, shown by evaluate
        return key, f"{type(err).__name__}: {err}"


def summaries(args) -> int:
    from kernelcast.models.extended.facts import SummaryCache

    warnings.simplefilter("ignore")
    cache = SummaryCache(_summaries_path(args.gpu))
    tasks = _task_list(args.gpu, set() if args.again else _complete(cache.entries))
    print(f"{len(tasks)} launches; {len(cache.entries)} known", flush=True)
    start, done = time.monotonic(), 0
    with ProcessPoolExecutor(args.jobs, initializer=_init,
                             initargs=(args.gpu, args.again)) as pool:
        for key, value in pool.map(_one, tasks, chunksize=8):
            if value is not None:
                cache.entries[key] = value
            done += 1
            if done % 200 == 0:
                rate = done / (time.monotonic() - start)
                print(f"{done}/{len(tasks)} ({rate:.1f}/s)", flush=True)
                cache.save()
    cache.save()
    failed = [k for k, v in cache.entries.items() if isinstance(v, str)]
    print(f"wrote {_summaries_path(args.gpu).relative_to(ROOT)}: {len(cache.entries)} "
          f"launches, {len(failed)} without facts, {time.monotonic() - start:.0f} s on "
          f"{args.jobs} processes", flush=True)
    return 0

# }}}


# {{{ evaluate

def _errors(model, dataset) -> dict:
    import numpy as np

    from kernelcast.metrics import geometric_mean, relative_errors

    predicted = np.asarray(model.predict_dataset(dataset), dtype=float)
    e = relative_errors(predicted, dataset.seconds)
    worst = int(np.argmax(e))
    return {"cases": len(dataset), "geomean": geometric_mean(e), "max": float(e.max()),
            "worst": dataset.cases[worst].name}


def _random(model, dataset, unextracted: set) -> dict:
    """Share of the kernels within 0.7-1.3; a twin whose properties could not be
    extracted (UNEXTRACTED) has no prediction and counts as outside."""
    import numpy as np

    keep = np.array([(c.suite, c.kernel_name) not in unextracted for c in dataset.cases])
    r = np.full(len(dataset), np.nan)
    r[keep] = (np.asarray(model.predict_dataset(dataset.subset(keep)), dtype=float)
               / dataset.seconds[keep])
    within = (r > 0.7) & (r < 1.3)
    return {"kernels": len(r), "within_30pct": float(np.mean(within)),
            "not_predicted": int((~keep).sum()),
            "median_ratio": float(np.nanmedian(r)),
            "worst": sorted(((float(x), c.name) for x, c in zip(r, dataset.cases,
                                                                   strict=True)
                             if np.isfinite(x)), key=lambda t: -abs(np.log(t[0])))[:5]}


def _ranking(model, tuning) -> dict:
    from scipy.stats import spearmanr

    out = {}
    for fam, (params, rows) in tuning.items():
        predicted = [model.seconds(make(), params) for _, _, make in rows]
        best = min(t for _, t, _ in rows)
        order = sorted(range(len(rows)), key=lambda i: (predicted[i], rows[i][0]))
        fastest = min(range(len(rows)), key=lambda i: rows[i][1])
        out[fam] = {"variants": len(rows),
                    "top1": rows[order[0]][1] / best - 1,
                    "top3": min(rows[i][1] for i in order[:3]) / best - 1,
                    "spearman": float(spearmanr(predicted, [t for _, t, _ in rows])
                                      .statistic),
                    "pick": rows[order[0]][0]}
        if getattr(model, "needs_kernel", False):  # what the facts see of the two
            out[fam]["why"] = {label: {"variant": rows[i][0], "measured_s": rows[i][1],
                                       "predicted_s": predicted[i],
                                       "facts": _summary_of(model, rows[i][2](),
                                                            params)}
                               for label, i in (("pick", order[0]), ("best", fastest))}
    return out


def _summary_of(model, knl, params) -> dict:
    import kernelcast.models.extended as extended
    from kernelcast.hardware import load_hardware

    hw = model.hardware_
    hw = load_hardware(hw) if isinstance(hw, str) else hw
    return extended.SUMMARIES.summary(extended.launch_name(knl), lambda: knl, params, hw)


def evaluate(args) -> int:
    import numpy as np

    import kernelcast.models.extended as extended
    from kernelcast.evaluation.crossval import cross_validate
    from kernelcast.metrics import geometric_mean
    from kernelcast.models import get_model
    from kernelcast.models.extended.facts import SummaryCache

    warnings.simplefilter("ignore")
    extended.SUMMARIES = SummaryCache(_summaries_path(args.gpu))
    from poppl_herz import EXTRACT_LIMIT_S, _warm

    data, tuning = _datasets(args.gpu), _tuning(args.gpu)
    # properties whose extraction runs away (barvinok on some unrestricted twins) are
    # found with a time limit first; those twins have no prediction from either model
    unextracted = _warm([c for s in RANDOM for c in data[s].cases], args.jobs)
    doc = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
           "identity": {k: v for k, v in _identity(args.gpu).items()},
           "unextracted": sorted(" ".join(k) for k in unextracted),
           "extract_limit_s": EXTRACT_LIMIT_S, "models": {}}
    for name in args.models:
        start = time.monotonic()
        model = get_model(name).fit(data["fit"])
        entry = {"fit_seconds": time.monotonic() - start,
                 "training": _errors(model, data["fit"]),
                 **{suite: _errors(model, data[suite]) for suite in JUDGED}}
        cv = cross_validate(get_model(name), data["fit"])
        entry["cv"] = {"geomean": geometric_mean(cv.rel_error.to_numpy()),
                       "by_class": {k: geometric_mean(g.rel_error.to_numpy())
                                    for k, g in cv.groupby("kernel_class")}}
        entry["random"] = {s: _random(model, data[s], unextracted) for s in RANDOM}
        entry["tuning"] = _ranking(model, tuning)
        entry["mean_spearman"] = float(np.mean([f["spearman"] for f in
                                                entry["tuning"].values()]))
        if name == "facts":
            entry["fit_report"] = {k: v for k, v in model.fit_report_.items()
                                   if k != "solver"}
            entry["weights"] = model.weights_
        doc["models"][name] = entry
        print(f"{name}: training {entry['training']['geomean']:.1%}, test "
              f"{entry['test']['geomean']:.1%}, validation "
              f"{entry['validation']['geomean']:.1%}, CV {entry['cv']['geomean']:.1%}; "
              "random within 0.7-1.3: " + ", ".join(
                  f"{s} {v['within_30pct']:.0%}" for s, v in entry["random"].items())
              + f"; tuning mean rho {entry['mean_spearman']:.2f}; " + ", ".join(
                  f"{f} {v['top1']:.0%}/{v['top3']:.0%}/{v['spearman']:.2f}"
                  for f, v in entry["tuning"].items()), flush=True)
    out = ROOT / "data" / args.gpu / "facts-eval.json"
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


def _identity(gpu: str) -> dict:
    from kernelcast.measure.store import Store

    with Store(ROOT / "data" / gpu / "cuda.sqlite") as store:
        return dict(store.identity)

# }}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("summaries", help="predict the facts of every judged launch")
    s.add_argument("--gpu", default="h100", help="data/<gpu>/ holds the stores")
    s.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="processes (default: every core)")
    s.add_argument("--again", action="store_true",
                   help="predict every launch again, known or not (after the facts change)")
    e = sub.add_parser("evaluate", help="fit and judge the models")
    e.add_argument("--gpu", default="h100", help="data/<gpu>/ holds the stores")
    e.add_argument("--models", nargs="+",
                   default=["extended", "facts", "hong-kim", "hong-kim-facts"],
                   help="models to fit and judge")
    e.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="processes that extract the random twins' properties first")
    args = parser.parse_args()
    return summaries(args) if args.command == "summaries" else evaluate(args)


if __name__ == "__main__":
    sys.exit(main())
