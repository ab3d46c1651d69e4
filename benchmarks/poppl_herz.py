"""Pöppl & Herz's evaluation (issue 24): the microbenchmarks and the random kernels measured
on one device, then every model judged on the random kernels.

  measure (on the device): the Pöppl–Herz microbenchmarks and copies into
      DIR/poppl-herz.sqlite and the two random sets into DIR/random.sqlite, through
      OpenCL; with --cpu the CPU-sized suites (and the measurement-cpu suite, which the
      fitted models need, into DIR/opencl.sqlite). Writes DIR/device.json (device, driver,
      preferred work-group multiple, date). --only added measures only the
      microbenchmarks added since the committed stores were measured (double precision,
      math built-ins, __local accesses, barriers: benchmarks.added) into
      DIR/poppl-herz.sqlite: into an unpacked copy of a committed store, they complete it
      (the store refuses them where the device or driver is not the store's).
  evaluate (anywhere, no device): fits the Pöppl–Herz model (both variants, and the one
      on the hardware facts, which reads the random kernels' facts from
      DIR/facts-summaries.json.xz and its level ratios from
      DIR/criteria/microbenchmarks.json) from DIR/poppl-herz.sqlite and the paper and
      extended models from DIR/opencl.sqlite,
      resolves Hong–Kim's and GROPHECY's hardware (GROPHECY projects each kernel's
      code skeleton at its launch, RandomKernel.grophecy_workload), predicts every timed
      random kernel and writes
      DIR/random-eval.json: per model and set, the fraction with 0.7 < predicted/measured
      < 1.3, the geometric-mean relative error and every ratio (for the scatter plots).
      The Loopy models also predict each kernel's OpenCL source directly, from its paper
      properties (kernelcast.properties.opencl), and are compared with their
      predictions of the Loopy twin. No random kernel is in any fitting set.

Run:  python benchmarks/poppl_herz.py measure --out data/h100 [--device NVIDIA] [--cpu]
          [--count 600] [--only microbenchmarks|added|random]
      python benchmarks/poppl_herz.py evaluate --dir data/h100 [--models ...]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
import warnings
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

SETS = ("realistic", "unrestricted")
MODELS = ("poppl-herz", "poppl-herz-simple", "poppl-herz-facts", "paper", "extended",
          "hong-kim", "grophecy")


def _suite_names(cpu: bool) -> tuple[str, list[str], str]:
    tail = "-cpu" if cpu else ""
    return (f"poppl-herz{tail}", [f"random-{s}{tail}" for s in SETS],
            f"measurement{tail}")


def measure(args) -> int:
    import pyopencl as cl

    from kernelcast.measure.backends import make_backend
    from kernelcast.measure.store import Store
    from kernelcast.suites.campaign import measure_suite
    from kernelcast.suites.paper import get_suite
    from kernelcast.suites.suite import Suite

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    backend = make_backend("opencl", args.device)
    micro, randoms, measurement = _suite_names(args.cpu)
    platform = next(p for p in cl.get_platforms()
                    if p.name.strip() == backend.device.platform)
    cl_device = platform.get_devices()[backend.device.index]
    context = cl.Context([cl_device])
    program = cl.Program(context, "__kernel void k(__global float *a) "
                         "{ a[get_global_id(0)] = 1.0f; }").build()
    multiple = program.k.get_work_group_info(
        cl.kernel_work_group_info.PREFERRED_WORK_GROUP_SIZE_MULTIPLE, cl_device)
    info = {"device": backend.device.name, "driver": backend.device.driver,
            "platform": backend.device.platform, "compute_units": backend.device.compute_units,
            "preferred_work_group_size_multiple": int(multiple),
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    (out / "device.json").write_text(json.dumps(info, indent=1) + "\n")
    print(json.dumps(info), flush=True)
    start = time.monotonic()
    if args.only in (None, "microbenchmarks"):
        with Store(out / "poppl-herz.sqlite", backend.identity, create_dirs=True) as store:
            measure_suite(get_suite(micro), backend, store)
        print(f"microbenchmarks: {time.monotonic() - start:.0f} s", flush=True)
    if args.only == "added":
        from kernelcast.suites.poppl_herz import added

        with Store(out / "poppl-herz.sqlite", backend.identity, create_dirs=True) as store:
            measure_suite(added(micro), backend, store)
        print(f"added microbenchmarks: {time.monotonic() - start:.0f} s", flush=True)
    if args.only in (None, "random"):
        with Store(out / "random.sqlite", backend.identity, create_dirs=True) as store:
            for name in randoms:
                suite = get_suite(name)
                kclass = suite.classes[0]
                kept = replace(kclass, variants=kclass.variants[:args.count])
                measure_suite(Suite(suite.name, (kept,)), backend, store)
        print(f"random kernels: {time.monotonic() - start:.0f} s", flush=True)
    if args.cpu and args.only in (None, "measurement"):
        with Store(out / "opencl.sqlite", backend.identity, create_dirs=True) as store:
            measure_suite(get_suite(measurement), backend, store)
    return 0


def _store(directory: Path, name: str) -> Path:
    """DIR/NAME.sqlite, or its unpacked copy where only DIR/NAME.sqlite.xz is there (the
    committed stores are xz-compressed to keep the tree small)."""
    import lzma
    import tempfile

    path = directory / f"{name}.sqlite"
    packed = path.with_name(path.name + ".xz")
    if path.exists() or not packed.exists():
        return path
    unpacked = Path(tempfile.mkdtemp(prefix="kernelcast-ph-")) / path.name
    unpacked.write_bytes(lzma.open(packed).read())
    return unpacked


def _ratios(model, dataset, unextracted: set, workloads=None) -> list[float]:
    """predicted/measured per case; NaN where the model has no prediction (a Loopy
    twin whose properties could not be extracted in time). *workloads*: what the model
    predicts instead of each case's own (the OpenCL source's properties)."""
    loopy = model.workload == "kernel"
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, case in enumerate(dataset.cases):
            if workloads is not None:
                workload = workloads[i]
            elif loopy and (case.suite, case.kernel_name) in unextracted:
                workload = None
            elif model.workload == "skeleton":
                workload = _random_kernel(case).grophecy_workload()
            else:
                workload = dataset.properties(i) if loopy else case
            if workload is None:
                out.append(float("nan"))
                continue
            seconds = model.seconds(workload, dataset.params(i))
            out.append(float(seconds / dataset.seconds[i]))
    return out


def _random_kernel(case):
    from kernelcast.suites.random_kernels import random_kernel

    return random_kernel(case.suite.split("-")[1], int(case.variant), case.params["n"])


def _source_properties(dataset) -> list:
    """The paper properties of each case's OpenCL source at its launch (None where the
    mapping refuses it)."""
    from kernelcast.properties.opencl import opencl_properties

    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for case in dataset.cases:
            n = case.params["n"]
            try:
                out.append(opencl_properties(case.kclass.source(case), (n, n),
                                             case.group_size))
            except Exception as err:  # noqa: BLE001 - recorded as not predicted
                print(f"{case.name}: no properties of the source: {err}", flush=True)
                out.append(None)
    return out


def _agreement(source, twin) -> dict:
    """How the predictions from the OpenCL source compare with those of the twin."""
    import numpy as np

    r = np.asarray(source, dtype=float) / np.array(twin, dtype=float)  # None is NaN
    r = r[np.isfinite(r)]
    dev = np.abs(r - 1)
    return {"kernels": len(r), "equal_1pct": float(np.mean(dev < 0.01)),
            "within_10pct": float(np.mean(dev < 0.10)),
            "median_deviation": float(np.median(dev)), "max_deviation": float(dev.max())}


def _tags(case) -> list[str]:
    """What a random kernel has that may make it hard to predict (for the breakdown of
    failures): complex or interval global reads, integer division or remainder, a
    work-group size that is not a multiple of 32, its size."""
    from kernelcast.frontends.opencl import count_kernel

    counts = count_kernel(case.kclass.source(case))
    tags = [f"n={case.params['n']}"]
    if counts.accesses.get("global:read:complex"):
        tags.append("complex reads")
    tags.append("interval reads" if counts.accesses.get("global:read:interval")
                else "no interval read")
    if counts.ops.get("div:int") or counts.ops.get("mod:int"):
        tags.append("int div/mod")
    if (case.group_size[0] * case.group_size[1]) % 32:
        tags.append("group < warp multiple")
    return tags


def _summary(ratios, info, measured) -> dict:
    import numpy as np

    from kernelcast.metrics import geometric_mean

    r = np.asarray(ratios)
    predicted = np.isfinite(r)
    finite = predicted & (r > 0)
    return {"kernels": len(r), "within_30pct": float(np.mean((r > 0.7) & (r < 1.3))),
            "geomean_rel_error": geometric_mean(np.abs(r[finite] - 1)),
            "median_ratio": float(np.median(r[predicted])) if predicted.any() else None,
            "not_predicted": int((~predicted).sum()),
            "nonpositive": int((predicted & ~finite).sum()),
            "ratios": [round(x, 5) if np.isfinite(x) else None for x in ratios],
            "variants": [str(v) for v in info.variant],
            "measured_s": [float(f"{m:.5g}") for m in measured]}


def _current(store, dataset):
    """*dataset* without rows timed on a source that the generator no longer makes (a
    kernel changed since it was measured), and how many were left out."""
    import hashlib

    import numpy as np

    stored = {(r["suite"], r["case_name"]): r["code_sha256"] for r in store.rows()}
    keep = np.array([stored.get((c.suite, c.name)) == hashlib.sha256(
        c.kclass.source(c).encode()).hexdigest() for c in dataset.cases])
    return dataset.subset(keep), int((~keep).sum())


def _fitted(name, directory: Path, cpu: bool):
    from kernelcast.fitting.dataset import load_dataset
    from kernelcast.measure.store import Store
    from kernelcast.models import get_model, model_class

    micro, _, measurement = _suite_names(cpu)
    if name == "poppl-herz-facts":
        import kernelcast.models.extended as extended
        from kernelcast.models.extended.facts import SummaryCache

        extended.SUMMARIES = SummaryCache(directory / "facts-summaries.json.xz")
        extended.SUMMARIES.path = None  # read, never written
        levels = directory / "criteria" / "microbenchmarks.json"
        model = get_model(name, throughputs=str(levels) if levels.exists() else None)
    elif name.startswith("poppl-herz"):
        model = get_model("poppl-herz", classes=name == "poppl-herz")
    if name.startswith("poppl-herz"):
        with Store(_store(directory, "poppl-herz")) as store:
            return model.fit(load_dataset(store, micro))
    model = get_model(name)
    if name in ("hong-kim", "grophecy") and cpu:
        raise RuntimeError(f"the {name} model describes GPUs")
    if name == "grophecy":
        with Store(_store(directory, "random")) as store:
            return model.fit(load_dataset(store, _suite_names(cpu)[1][0]))
    with Store(_store(directory, "opencl")) as store:
        return model.fit(load_dataset(store, model_class(name).fit_suites(measurement)))


EXTRACT_LIMIT_S = 60


def _warm(cases, jobs: int) -> set:
    """Extract the properties of every case's kernel into the on-disk cache, in *jobs*
    processes (the Loopy models' predictions then read them from there); the (suite,
    kernel name) of those whose extraction failed or ran longer than EXTRACT_LIMIT_S.
    A process that runs too long is killed (barvinok does not return to Python for a
    signal); the kernels it may have been running are then tried one at a time."""
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    rows = {(c.suite, c.kernel_name): {
        "suite": c.suite, "kernel_class": c.class_name, "variant": c.variant,
        "dtype": c.dtype, "group_size": list(c.group_size), "p": c.p, "t": c.t,
        "params": c.params} for c in cases}
    pending, suspects, failed, done = list(rows), [], set(), 0

    def finish(name, error):
        nonlocal done
        done += 1
        if error:
            failed.add(name)
            print(f"properties of {name}: {error}", flush=True)
        if done % 100 == 0:
            print(f"properties: {done}/{len(rows)}", flush=True)

    while pending or suspects:
        alone = not pending  # suspects, one at a time: no queued task looks running
        batch = pending or suspects[:1]
        pool = ProcessPoolExecutor(1 if alone else max(jobs, 1))
        futures = {pool.submit(_extract, rows[name]): name for name in batch}
        started, stuck = time.monotonic(), []
        while futures:
            finished, _ = wait(futures, timeout=5, return_when=FIRST_COMPLETED)
            for future in finished:
                name = futures.pop(future)
                finish(name, future.exception() or future.result())
            if finished:
                started = time.monotonic()
            elif time.monotonic() - started > EXTRACT_LIMIT_S:
                stuck = [name for future, name in futures.items() if future.running()]
                break
        if stuck:
            for process in list(pool._processes.values()):
                process.kill()
        pool.shutdown(wait=False, cancel_futures=True)
        left = [n for n in futures.values() if n not in stuck]
        if alone:
            suspects = suspects[1:]
            for name in stuck:
                finish(name, f"longer than {EXTRACT_LIMIT_S} s")
        else:
            suspects += stuck
            pending = left
    return failed


def _extract(row) -> str:
    """Extract one kernel's properties into the cache; "" or why not."""
    import warnings

    from kernelcast.fitting.dataset import case_from_row
    from kernelcast.properties import cached_properties

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cached_properties(case_from_row(row).kernel())
        return ""
    except Exception as err:  # noqa: BLE001 - recorded: the kernel is not predicted
        return f"{type(err).__name__}: {err}"[:200]


def evaluate(args) -> int:
    from kernelcast.fitting.dataset import load_dataset
    from kernelcast.measure.store import Store
    from kernelcast.tune.variants import DiskPropertyCache

    directory = Path(args.dir)
    cpu = args.cpu
    _, randoms, _ = _suite_names(cpu)
    data, stale = {}, {}
    with Store(_store(directory, "random")) as store:
        for name in randoms:
            data[name], stale[name] = _current(
                store, load_dataset(store, name, cache=DiskPropertyCache()))
    unextracted = set()
    if any(not m.startswith("poppl-herz") and m != "grophecy" for m in args.models):
        unextracted = _warm([c for d in data.values() for c in d.cases], args.jobs)
    result = {"device": json.loads((directory / "device.json").read_text()),
              "evaluated": dt.date.today().isoformat(), "stale_rows_left_out": stale,
              "unextracted": sorted(" ".join(k) for k in unextracted),
              "tags": {s: [_tags(c) for c in d.cases] for s, d in zip(SETS, data.values(),
                                                                     strict=True)},
              "models": {}}
    sources = {}
    if any(not m.startswith("poppl-herz") and m != "grophecy" for m in args.models):
        start = time.monotonic()
        sources = {s: _source_properties(d) for s, d in zip(SETS, data.values(),
                                                               strict=True)}
        print(f"properties of the OpenCL sources: {time.monotonic() - start:.0f} s",
              flush=True)
    for name in args.models:
        start = time.monotonic()
        try:
            model = _fitted(name, directory, cpu)
        except Exception as err:  # noqa: BLE001 - a model that cannot be fitted here
            result["models"][name] = {"error": f"{type(err).__name__}: {err}"}
            print(f"{name}: not fitted: {err}", flush=True)
            continue
        fitted = time.monotonic() - start
        per_set = {}
        for set_name, dataset in zip(SETS, data.values(), strict=True):
            per_set[set_name] = _summary(_ratios(model, dataset, unextracted), dataset.info,
                                         dataset.seconds)
            s = per_set[set_name]
            print(f"{name} {set_name}: {s['kernels']} kernels, within 0.7-1.3: "
                  f"{s['within_30pct']:.0%}, geomean error {s['geomean_rel_error']:.0%}, "
                  f"median ratio {s['median_ratio']:.2f}", flush=True)
            if model.workload != "kernel":
                continue
            ratios = _ratios(model, dataset, unextracted, sources[set_name])
            source = _summary(ratios, dataset.info, dataset.seconds)
            del source["variants"], source["measured_s"]  # the twin's, above
            source["versus_twin"] = _agreement(ratios, s["ratios"])
            s["opencl_source"] = source
            o = s["opencl_source"]
            print(f"{name} {set_name} from the OpenCL source: within 0.7-1.3 "
                  f"{o['within_30pct']:.0%}, geomean error {o['geomean_rel_error']:.0%}; "
                  f"equal to the twin's (1%) {o['versus_twin']['equal_1pct']:.0%}",
                  flush=True)
        result["models"][name] = {"fit_seconds": round(fitted, 1), "sets": per_set,
                                  "predict_seconds": round(time.monotonic() - start
                                                           - fitted, 1)}
        if name.startswith("poppl-herz"):
            result["models"][name]["fitted"] = model.fitted_state()
    (directory / "random-eval.json").write_text(json.dumps(result, indent=1) + "\n")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    m = verbs.add_parser("measure", help="measure microbenchmarks and random kernels")
    m.add_argument("--out", required=True, help="folder of the stores")
    m.add_argument("--device", help="a substring of the OpenCL device's name")
    m.add_argument("--cpu", action="store_true", help="the CPU-sized suites")
    m.add_argument("--count", type=int, default=600, help="random kernels per set")
    m.add_argument("--only", choices=("microbenchmarks", "added", "random", "measurement"),
                   help="measure only these (added: the microbenchmarks added since the "
                        "committed stores, into DIR/poppl-herz.sqlite)")
    e = verbs.add_parser("evaluate", help="judge every model on the random kernels")
    e.add_argument("--dir", required=True, help="folder of the stores")
    e.add_argument("--cpu", action="store_true", help="the stores hold CPU-sized suites")
    e.add_argument("--jobs", type=int, default=1,
                   help="processes that extract the Loopy twins' properties first")
    e.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS,
                   help="models to judge")
    args = parser.parse_args()
    return measure(args) if args.verb == "measure" else evaluate(args)


if __name__ == "__main__":
    raise SystemExit(main())
