"""The measurement stores: every registered model (kernelcast.models) fitted to each of
data/<gpu>/<backend>.sqlite, its Table 1 on the test and validation suites and its
leave-one-class-out cross-validation (``evaluate_store``, ``run_stores``: in worker
processes), and the sections made from them: the stores themselves (Data), every model
on every store (Summary), the test kernels beside Stevens & Klöckner's published Table 1
(Test kernels), the validation kernels (Validation) and the cross-validation by class.

``read_stores`` reads the stores' rows once for the sections; ``suite_dates`` and
``dates_line`` say when each store measured a suite.

Public names: PAPER_GPUS, PAPER_TABLE1, make_model, evaluate_store, run_stores,
read_stores, suite_dates, dates_line, section_data, section_summary, section_test,
section_validation, section_cv.
"""

from __future__ import annotations

import pickle
import time
import warnings

from kernelcast.evaluation.results.common import (BACKEND_LABEL, BACKENDS, GPU_LABEL,
                                                  GPUS, MODEL_LABEL, STORES, Data,
                                                  day_range, overall, params_text, pct,
                                                  published, seconds_text, store_label,
                                                  table)

# Stevens & Klöckner, "A Unified, Hardware-Fitted, Cross-GPU Performance Model", §5
# "Results", Table 1 ("Predicted vs. actual execution times (ms) for test kernels, and
# geometric mean of relative error"): the bold rows, the geometric mean of
# relative error of their model per test kernel and GPU, and its cross-GPU geometric mean
# (last column). The §5 text gives the cross-kernel means as 16%, 14% and 6% (Titan X,
# C2070, K40), N-body's cross-GPU mean as 43%, and says Radeon performance was irregular.
# Their measurements were made through OpenCL (Loopy/PyOpenCL), at sizes chosen per GPU.
PAPER_GPUS = ("GTX Titan X", "Tesla C2070", "Tesla K40", "Radeon R9 Fury")
PAPER_TABLE1 = {  # kernel: (Titan X, C2070, K40, R9 Fury, cross-GPU geometric mean)
    "finite_difference": (0.30, 0.10, 0.01, 0.63, 0.11),
    "skinny_matmul": (0.08, 0.10, 0.13, 0.28, 0.13),
    "nbody": (0.32, 0.27, 0.54, 0.76, 0.43),
    "convolution": (0.10, 0.13, 0.03, 0.23, 0.10),
    "overall": (0.16, 0.14, 0.06, 0.42, None),
}


_CACHE = None  # one PropertyCache per process


# ---------------------------------------------------------------- the models, per store

def make_model(data: Data, name: str, gpu: str):
    """Model *name* as the page fits it: a model that takes a registers file (Hong–Kim)
    with data/<gpu>/registers.json where there is one."""
    from kernelcast.models import get_model, model_class

    if model_class(name).parameter("registers") is not None:
        registers = data / gpu / "registers.json"
        return get_model(name, registers=str(registers) if registers.exists() else None)
    return get_model(name)


def evaluate_store(data_root, gpu: str, backend: str, do_cv: bool, progress=None) -> dict:
    """Fit every model to the store data_root/<gpu>/<backend>.sqlite, Table 1 of the test
    and validation suites, and leave-one-class-out cross-validation (with *do_cv*); each
    model's fit time, training error and fitted sizes. Runs in a worker process, or in
    this one; *progress* (a function of one line of text) hears of each fit."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _evaluate_store(Data(data_root), gpu, backend, do_cv, progress or _quiet)


def _quiet(message: str) -> None:
    pass


def _evaluate_store(data: Data, gpu: str, backend: str, do_cv: bool, log) -> dict:
    global _CACHE
    from kernelcast.errors import KernelcastError
    from kernelcast.evaluation.crossval import cross_validate
    from kernelcast.evaluation.tables import table1
    from kernelcast.fitting.dataset import PropertyCache, load_dataset
    from kernelcast.measure.store import Store
    from kernelcast.models import model_names

    if _CACHE is None:
        _CACHE = PropertyCache()
    _known_facts(data, gpu)
    label = store_label(gpu, backend)
    path = data / gpu / f"{backend}.sqlite"
    result = {"gpu": gpu, "backend": backend, "path": data.rel(path), "models": {},
              "errors": [], "cv_done": do_cv}
    if not path.exists():
        result["missing"] = True
        return result
    with Store(path) as store:
        result["identity"] = {**store.identity, "compute_units": store.compute_units}
        suites = {}
        for suite in ("test", "validation"):
            try:
                suites[suite] = load_dataset(store, suite, cache=_CACHE)
            except KernelcastError as err:
                result["errors"].append(f"{suite}: {err}")
        for name in model_names():
            entry = result["models"][name] = {}
            model = make_model(data, name, gpu)
            try:
                fit_suites = model.fit_suites("measurement")
                fitting = load_dataset(store, fit_suites, suite="measurement",
                                       cache=_CACHE)
                start = time.perf_counter()
                model.fit(fitting)
                entry["fit_s"] = time.perf_counter() - start
            except Exception as err:  # noqa: BLE001 - the page says what failed
                entry["error"] = f"fit: {type(err).__name__}: {err}"
                log(f"{label} {name}: {entry['error']}")
                continue
            report = getattr(model, "fit_report_", {})
            entry.update(suites=list(fit_suites), cases=len(fitting),
                         training=report.get("training_geomean_rel_error"),
                         resident_items=getattr(model, "resident_items_", None),
                         negative_weights=len(report.get("negative_weights") or []),
                         weights=len(getattr(model, "weights_", {}) or {}),
                         q=getattr(model, "q", None),
                         hardware=getattr(getattr(model, "hardware_", None), "name", None),
                         registers=len(getattr(model, "registers_", {}) or {}))
            log(f"{label} {name}: fitted to {len(fitting)} cases in {entry['fit_s']:.1f} s")
            for suite, dataset in suites.items():
                try:
                    entry[suite] = table1(model, dataset,
                                          details=name == "hong-kim" and suite == "test")
                except Exception as err:  # noqa: BLE001
                    entry[f"{suite}_error"] = f"{type(err).__name__}: {err}"
            if do_cv:
                start = time.perf_counter()
                try:
                    cv = cross_validate(model, fitting)
                    entry["cv"] = cv[["case_name", "suite", "kernel_class", "rel_error",
                                      "unseen_properties"]]
                except Exception as err:  # noqa: BLE001
                    entry["cv_error"] = f"{type(err).__name__}: {err}"
                entry["cv_s"] = time.perf_counter() - start
                log(f"{label} {name}: cross-validated in {entry['cv_s']:.0f} s")
    return result


def _known_facts(data: Data, gpu: str) -> None:
    """The facts model reads its launches' facts from data/<gpu>/facts-summaries.json.xz
    (benchmarks/facts_model.py summaries) instead of predicting them again."""
    import kernelcast.models.extended as extended
    from kernelcast.models.extended.facts import SummaryCache

    extended.SUMMARIES = SummaryCache(data / gpu / "facts-summaries.json.xz")
    extended.SUMMARIES.path = None


def run_stores(data_root, jobs: int, do_cv: bool, progress=None) -> dict:
    """``evaluate_store`` of every store, keyed by (gpu, backend): in this process where
    *jobs* is 1, else in *jobs* worker processes (spawned; *progress* goes with them where
    it can be pickled, a module-level function)."""
    results = {}
    if jobs <= 1:
        for gpu, backend in STORES:
            results[gpu, backend] = evaluate_store(data_root, gpu, backend, do_cv, progress)
        return results
    try:
        pickle.dumps(progress)
    except (pickle.PicklingError, AttributeError, TypeError):
        progress = None
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        # the H100 and H200 stores of one backend go to different workers first
        futures = {pool.submit(evaluate_store, data_root, gpu, backend, do_cv,
                               progress): (gpu, backend)
                   for backend in BACKENDS for gpu in GPUS}
        for future, key in futures.items():
            results[key] = future.result()
    return results


# ---------------------------------------------------------------- store contents

def read_stores(data: Data) -> dict:
    """Every store's rows (as a DataFrame) and identity, read once in the main process."""
    from kernelcast.measure.store import Store, read_measurements

    stores = {}
    for gpu, backend in STORES:
        path = data / gpu / f"{backend}.sqlite"
        if not path.exists():
            continue
        frame = read_measurements(path)
        with Store(path) as store:
            meta = dict(store.meta)
        stores[gpu, backend] = {"frame": frame, "meta": meta, "path": path}
    return stores


def suite_dates(stores, gpu, backend, suites) -> str:
    info = stores.get((gpu, backend))
    if info is None:
        return "–"
    frame = info["frame"]
    return day_range(frame[frame.suite.isin(suites)].recorded_at)


def dates_line(stores, suites) -> str:
    """When each store measured *suites*: "H100 OpenCL 2026-11-23; ..." (one date for
    all when they agree)."""
    parts = {store_label(g, b): suite_dates(stores, g, b, suites)
             for g, b in STORES if (g, b) in stores}
    if not parts:
        return "no store present"
    if len(set(parts.values())) == 1:
        return next(iter(parts.values())) + " (all stores)"
    return "; ".join(f"{k} {v}" for k, v in parts.items())


# ---------------------------------------------------------------- sections

def section_data(data: Data, stores) -> list[str]:
    out = ["## Data", "",
           "The four measurement stores everything below is computed from (rows that "
           "were timed: status `ok` or `unstable`; docs/measurement.md describes the "
           "protocol). \"Commit\" is the last commit of the store file.", ""]
    rows = []
    for gpu, backend in STORES:
        path = data / gpu / f"{backend}.sqlite"
        info = stores.get((gpu, backend))
        if info is None:
            rows.append([store_label(gpu, backend), f"`{data.rel(path)}` missing", "", "", "",
                         "", "", "", ""])
            continue
        frame, meta = info["frame"], info["meta"]
        timed = frame[frame.status.isin(("ok", "unstable"))]
        counts = timed.suite.value_counts()
        rows.append([store_label(gpu, backend), f"`{data.rel(path)}`", meta.get("device", ""),
                     meta.get("driver", ""), meta.get("compute_units", "–"),
                     " / ".join(str(int(counts.get(s, 0))) for s in
                                ("measurement", "extension", "test", "validation")),
                     int((frame.status == "unstable").sum()),
                     day_range(frame.recorded_at), data.file_commit(path)])
    out.append(table(["store", "file", "device", "driver", "CUs",
                      "timed rows: measurement / extension / test / validation",
                      "unstable", "measured", "commit"], rows,
                     ["l", "l", "l", "l", "r", "r", "r", "l", "l"]))
    device_files = []
    for gpu in GPUS:
        for name in ("gpu.txt", "gpu-clocks.txt", "devices.txt", "devices-unregistered.txt",
                     "cuda-device.json"):
            if (data / gpu / name).exists():
                device_files.append(f"`data/{gpu}/{name}`")
    out += ["", "Device descriptions: " + (", ".join(device_files) or "none present") + "."]
    for gpu in GPUS:
        path = data / gpu / "gpu.txt"
        if path.exists():
            lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
            if len(lines) >= 2:
                out += ["", f"{GPU_LABEL[gpu]} (`{data.rel(path)}`, from `nvidia-smi`: name, "
                        f"driver, memory): {lines[-1].strip()}."]
    return out


def section_summary(results, stores, names) -> list[str]:
    from kernelcast.models import model_class

    out = ["## Summary", "",
           "Geometric mean of relative error |predicted − measured| / measured, per model, "
           "GPU and backend. *Training*: on the cases the model is fitted to. *Test*: the "
           "paper's four test kernels (§5; two p series per store, every case in Table 1 "
           "below). "
           "*Validation*: the nine validation kernels (`kernelcast.suites.validation`, "
           "never fitted). *CV*: leave-one-class-out cross-validation over the classes "
           "the model is fitted on (the paper's model and Hong–Kim: the measurement "
           "suite; the extended and facts models: the measurement and extension suites). "
           "The facts model is the extended model on the predicted hardware counters "
           "(section \"The extended model on the hardware facts\" below). Hong–Kim "
           "fits nothing: it has no training error, and its CV figure is its plain "
           "prediction of the measurement suite. Rows with *as published* are Stevens & Klöckner's own "
           "figures for their model (§5, Table 1), on other GPUs and sizes.", ""]
    rows = []
    for name in names:
        for gpu, backend in STORES:
            res = results.get((gpu, backend), {})
            entry = res.get("models", {}).get(name)
            if res.get("missing") or entry is None:
                rows.append([MODEL_LABEL[name], GPU_LABEL[gpu], BACKEND_LABEL[backend],
                             "store missing", "–", "–", "–", "–"])
                continue
            if "error" in entry:
                rows.append([MODEL_LABEL[name], GPU_LABEL[gpu], BACKEND_LABEL[backend],
                             entry["error"], "–", "–", "–", "–"])
                continue
            cv = overall(entry.get("cv")) if "cv" in entry else None
            rows.append([MODEL_LABEL[name], GPU_LABEL[gpu], BACKEND_LABEL[backend],
                         f"{entry['cases']} ({' + '.join(entry['suites'])})",
                         "–" if model_class(name).from_hardware else pct(entry.get("training")),
                         pct(overall(entry.get("test"))),
                         pct(overall(entry.get("validation"))),
                         pct(cv) if cv is not None else
                         ("skipped" if not res.get("cv_done") else "–")])
    for i, gpu in enumerate(PAPER_GPUS):
        rows.append(["paper, as published", gpu, "OpenCL", "their measurement suite", "–",
                     published(PAPER_TABLE1["overall"][i]), "–", "–"])
    out.append(table(["model", "GPU", "backend", "fitted on (cases)", "training", "test",
                      "validation", "CV"], rows, ["l", "l", "l", "l", "r", "r", "r", "r"]))
    notes = []
    for gpu, backend in STORES:
        ext = results.get((gpu, backend), {}).get("models", {}).get("extended", {})
        if ext.get("resident_items") and ext.get("q") is not None:
            units = results[gpu, backend]["identity"].get("compute_units")
            per_unit = (f" ({ext['resident_items'] // units} per compute unit)"
                        if units else "")
            notes.append(f"{store_label(gpu, backend)} {ext['resident_items']}{per_unit}")
    q = next((e.get("q") for r in results.values()
              for e in [r.get("models", {}).get("extended", {})] if e.get("q")), None)
    if notes:
        out += ["", f"The extended model's fit (overlap exponent q = {q:g}) keeps these "
                "resident work-items per wave: " + "; ".join(notes) + "."]
    neg = [f"{store_label(g, b)} {results[g, b]['models']['paper']['negative_weights']}"
           for g, b in STORES if results.get((g, b), {}).get("models", {}).get(
               "paper", {}).get("weights")]
    if neg:
        out += ["", "Negative weights in the paper's unconstrained fit (it allows them, as "
                "the paper's Table 2 has some): " + "; ".join(neg) + "."]
    out += ["", "Data: the stores above. Measurement and extension suites measured "
            + dates_line(stores, ("measurement", "extension")) + "; test suite "
            + dates_line(stores, ("test",)) + "; validation suite "
            + dates_line(stores, ("validation",)) + "."]
    return out


def section_test(data: Data, results, stores, names) -> list[str]:
    from kernelcast.evaluation.tables import side_by_side, side_by_side_summary

    out = ["## Test kernels (Table 1) next to the paper's", "",
           "Geometric mean of relative error per test kernel: each model on each store, "
           "and Stevens & Klöckner's published errors of their model (§5, Table 1; "
           "published to two decimals, shown as whole percent). Their GPUs are of 2010–"
           "2015 and their sizes were chosen per GPU, so the comparison is of the "
           "method's accuracy, not of the same measurements.", ""]
    summaries = {}
    for gpu, backend in STORES:
        entry = results.get((gpu, backend), {}).get("models", {})
        tables = {n: entry[n]["test"] for n in names if "test" in entry.get(n, {})}
        if tables:
            summaries[gpu, backend] = side_by_side_summary(tables)
    if not summaries:
        return out + ["*Not generated: no store has test rows.*"]
    kernels = [k for k in ("finite_difference", "skinny_matmul", "nbody", "convolution",
                           "overall")
               if any(k in s.index for s in summaries.values())]
    rows = []
    for kernel in kernels:
        for name in names:
            row = [kernel if name == names[0] else "",
                   MODEL_LABEL[name]]
            for key in STORES:
                s = summaries.get(key)
                row.append(pct(s.loc[kernel, name]) if s is not None and kernel in s.index
                           and name in s.columns else "–")
            paper = PAPER_TABLE1.get(kernel)
            if name == "paper" and paper:
                row += [" / ".join(published(v) for v in paper[:4]), published(paper[4])]
            else:
                row += ["", ""]
            rows.append(row)
    out.append(table(["kernel", "model", *(store_label(g, b) for g, b in STORES),
                      "published: Titan X / C2070 / K40 / R9 Fury",
                      "published, cross-GPU"], rows,
                     ["l", "l", "r", "r", "r", "r", "r", "r"]))
    for gpu, backend in STORES:
        res = results.get((gpu, backend), {})
        entry = res.get("models", {})
        tables = {n: entry[n]["test"] for n in names if "test" in entry.get(n, {})}
        out += ["", f"### Table 1, {store_label(gpu, backend)}", ""]
        if res.get("missing"):
            out.append(data.missing(data / gpu / f"{backend}.sqlite"))
            continue
        if not tables:
            out.append("*Not generated: " + "; ".join(res.get("errors", [])
                                                     or ["no test rows"]) + ".*")
            continue
        frame = side_by_side(tables)
        hk = tables.get("hong-kim")
        verdicts = (hk.set_index("case_name").loc[frame.case_name, "verdict"].tolist()
                    if hk is not None and "verdict" in hk else None)
        rows = []
        for i, row in enumerate(frame.itertuples(index=False)):
            line = [row.kernel_class, params_text(row.params), seconds_text(row.measured_s)]
            for name in tables:
                line += [seconds_text(frame[name].iloc[i]),
                         pct(frame[f"{name} error"].iloc[i])]
            if verdicts is not None:
                line.append(verdicts[i])
            rows.append(line)
        headers = ["kernel", "sizes", "measured"]
        for name in tables:
            headers += [MODEL_LABEL[name], "error"]
        if verdicts is not None:
            headers.append("Hong–Kim verdict")
        out.append(table(headers, rows, ["l", "l"] + ["r"] * (len(headers) - 2
                                                              - (verdicts is not None))
                         + (["l"] if verdicts is not None else [])))
        out += ["", f"Data: `data/{gpu}/{backend}.sqlite`, test suite, measured "
                f"{suite_dates(stores, gpu, backend, ('test',))}; models fitted to the "
                f"same store (measured {suite_dates(stores, gpu, backend, ('measurement', 'extension'))})."]
    return out


def section_validation(data: Data, results, stores, names) -> list[str]:
    from kernelcast.evaluation.tables import side_by_side_summary
    from kernelcast.metrics import summarize

    out = ["## Validation kernels", "",
           "Geometric mean of relative error per validation kernel (no model is ever "
           "fitted to these); section *What the evidence supports* says what they do "
           "not cover.", ""]
    for gpu, backend in STORES:
        res = results.get((gpu, backend), {})
        entry = res.get("models", {})
        tables = {n: entry[n]["validation"] for n in names
                  if "validation" in entry.get(n, {})}
        out += [f"### {store_label(gpu, backend)}", ""]
        if res.get("missing"):
            out += [data.missing(data / gpu / f"{backend}.sqlite"), ""]
            continue
        if not tables:
            out += ["*Not generated: no validation rows.*", ""]
            continue
        summary = side_by_side_summary(tables)
        first = next(iter(tables.values()))
        cases = summarize(first).cases
        rng = first.groupby("kernel_class").measured_s.agg(["min", "max"])
        rows = []
        for kernel in summary.index:
            span = ("" if kernel == "overall" else
                    f"{seconds_text(rng.loc[kernel, 'min'])} – "
                    f"{seconds_text(rng.loc[kernel, 'max'])}")
            rows.append([kernel, int(cases.loc[kernel]), span,
                         *(pct(summary.loc[kernel, n]) for n in tables)])
        out += [table(["kernel", "cases", "measured", *(MODEL_LABEL[n] for n in tables)],
                      rows, ["l", "r", "l"] + ["r"] * len(tables)), "",
                f"Data: `data/{gpu}/{backend}.sqlite`, validation suite, measured "
                f"{suite_dates(stores, gpu, backend, ('validation',))}.", ""]
    return out[:-1]


def section_cv(data: Data, results, stores, names) -> list[str]:
    from kernelcast.metrics import geometric_mean

    out = ["## Cross-validation by class", "",
           "Leave-one-class-out: for each class of a model's fitting suites, the model is "
           "fitted to every other class and predicts the held-out one "
           "(`kernelcast.evaluation.crossval`). Geometric mean of relative error of the "
           "held-out cases; \"–\" where a model is not fitted on the class. *Unseen* "
           "counts the weighted features of the held-out class that no other class has "
           "(they count as zero in its prediction), paper / extended. Hong–Kim fits "
           "nothing: its figures are its predictions of those classes.", ""]
    if not any(r.get("cv_done") for r in results.values()):
        return out + ["*Skipped in this run (`--no-cv`).*"]
    for gpu, backend in STORES:
        res = results.get((gpu, backend), {})
        entry = res.get("models", {})
        cvs = {n: entry[n]["cv"] for n in names if "cv" in entry.get(n, {})}
        out += [f"### {store_label(gpu, backend)}", ""]
        if res.get("missing"):
            out += [data.missing(data / gpu / f"{backend}.sqlite"), ""]
            continue
        if not cvs:
            errors = [entry[n].get("cv_error") for n in names if entry.get(n, {}).get(
                "cv_error")]
            out += ["*Not generated" + (": " + "; ".join(errors) if errors else "") + ".*",
                    ""]
            continue
        classes = {}
        for cv in cvs.values():
            for (suite, kclass), group in cv.groupby(["suite", "kernel_class"]):
                classes.setdefault((suite, kclass), len(group))
        rows = []
        for (suite, kclass) in sorted(classes, key=lambda k: (k[0] != "measurement", k[1])):
            row = [kclass, suite, classes[suite, kclass]]
            for name in cvs:
                group = cvs[name][cvs[name].kernel_class == kclass]
                row.append(pct(geometric_mean(group.rel_error)) if len(group) else "–")
            unseen = []
            for name in ("paper", "extended"):
                group = cvs.get(name)
                if group is None:
                    continue
                sel = group[group.kernel_class == kclass]
                unseen.append(str(len({p for s in sel.unseen_properties for p in
                                       s.split(", ") if p})) if len(sel) else "–")
            row.append(" / ".join(unseen))
            rows.append(row)
        rows.append(["**overall**", "", "", *(f"**{pct(geometric_mean(cv.rel_error))}**"
                                              for cv in cvs.values()), ""])
        seconds = ", ".join(f"{MODEL_LABEL[n]} {entry[n]['cv_s']:.0f} s" for n in cvs)
        out += [table(["class", "suite", "cases", *(MODEL_LABEL[n] for n in cvs), "unseen"],
                      rows, ["l", "l", "r"] + ["r"] * len(cvs) + ["r"]), "",
                f"Data: `data/{gpu}/{backend}.sqlite`, measured "
                f"{suite_dates(stores, gpu, backend, ('measurement', 'extension'))}. "
                f"Time to cross-validate here: {seconds}.", ""]
    return out[:-1]
