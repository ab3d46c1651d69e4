"""Verbs that use models: predict, evaluate, report, demo."""

from __future__ import annotations

import json
import sys
import time

from kernelcast.cli.args import sizes, statistics
from kernelcast.errors import UsageError
from kernelcast.cli.measuring import model_params


def _model(args):
    """The model of ``--profile``, or one made from ``--model`` (and ``--hardware``)."""
    from kernelcast.models import HongKimModel
    from kernelcast.profile import load_profile

    if args.profile:
        model = load_profile(args.profile)
        if args.command == "predict" and args.model not in (None, model.name):
            raise UsageError(f"the profile holds the {model.name} model, not {args.model}")
        if getattr(args, "hardware", None) and model.name != "hong-kim":
            raise UsageError("--hardware is for --model hong-kim; the fitted models take "
                             "a --profile")
        return model
    if args.model == "hong-kim":
        if not args.hardware:
            raise UsageError("--model hong-kim needs --hardware (a GPU name such as h100, "
                             "or a JSON file) or a --profile")
        return HongKimModel(hardware=args.hardware,
                            registers_per_thread=getattr(args, "registers", None)).fit()
    raise UsageError(f"--model {args.model or 'paper'} needs --profile (fit one with "
                     "`kernelcast calibrate` or `kernelcast fit`)")


def predict(args) -> int:
    from kernelcast.frontends.files import load_factory
    from kernelcast.properties import extract_properties
    from kernelcast.report import format_seconds

    model = _model(args)
    params = sizes(args.param)
    props = extract_properties(load_factory(args.kernel)(),
                               data_statistics=statistics(args.stat))
    total = model.predict(props, params)  # refuses a time that is not positive
    parts = model.explain(props, params)
    details = model.details(props, params)
    device = model.provenance_["device"]
    if args.json:
        doc = {"device": device, "model": model.name, "params": params, "seconds": total,
               "breakdown": parts, **details}
        if hasattr(model, "estimate"):  # Hong–Kim: every quantity of the equations
            doc["estimate"] = model.estimate(props, params).as_dict()
        json.dump(doc, sys.stdout, indent=1)
        print()
        return 0
    backend = model.provenance_.get("backend")
    print(f"predicted run time on {device}{f' ({backend})' if backend else ''}, "
          f"{model.name} model: {format_seconds(total)}")
    if details:
        print("  " + ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}"
                               for k, v in details.items()))
    for name, seconds in parts.items():
        print(f"  {name:<28} {format_seconds(seconds):>10}  {seconds / total:>7.1%}")
    return 0


def _cross_validations(names, model, db, cache) -> dict:
    """Leave-one-class-out cross-validation of every model named in *names* on the
    suites each is fitted from, in *db* (default: the store of *model*)."""
    from kernelcast.evaluation.crossval import cross_validate
    from kernelcast.fitting.dataset import load_dataset
    from kernelcast.measure.store import Store
    from kernelcast.models import get_model

    suite = model.provenance_.get("suite") or "measurement"
    result = {}
    with Store(db or model.provenance_["store"]) as store:
        for name in names:
            template = model.clone() if name == model.name else get_model(name)
            dataset = load_dataset(store, template.fit_suites(suite), suite=suite,
                                   cache=cache)
            result[name] = cross_validate(template, dataset, progress=sys.stderr)
    return result


def evaluate(args) -> int:
    from kernelcast.fitting.dataset import PropertyCache
    from kernelcast.report import print_evaluation
    from kernelcast.workflow import evaluate as run, fit_store

    cache = PropertyCache()
    if args.profile:
        model = _model(args)
    elif args.db and args.model and args.model != "all":
        model = fit_store(args.db, args.model, args.fit_suite, cache,
                          **model_params(args))
    else:
        raise UsageError("give --profile, or --db with --model NAME")
    others = ("all",) if args.model == "all" else (args.model,) if args.model else ()
    tables = run(model, args.db, False if args.no_measure else None, others, args.suite,
                 cache=cache, runs=args.runs, tolerance=args.tolerance)
    cv = _cross_validations(tables, model, args.db, cache) if args.cv else None
    print_evaluation(model, tables, cv)
    return 0


def report(args) -> int:
    from kernelcast.evaluation.crossval import cross_validate
    from kernelcast.fitting.dataset import PropertyCache, load_dataset
    from kernelcast.measure.store import Store
    from kernelcast.profile import load_profile
    from kernelcast.report import write_report
    from kernelcast.workflow import evaluate as run

    model = load_profile(args.profile)
    cache = PropertyCache()
    table = run(model, args.db, False, cache=cache)[model.name]
    suite = model.provenance_.get("suite") or "measurement"
    with Store(args.db or model.provenance_["store"]) as store:
        cv = cross_validate(model.clone(), load_dataset(
            store, model.fit_suites(suite), suite=suite, cache=cache))
    breakdowns = {}
    for kclass, rows in table.groupby("kernel_class"):
        case = _case_of(rows.sort_values("measured_s").iloc[-1])
        breakdowns[f"{kclass} {_params_text(case.params)}"] = model.explain(
            cache.properties(case), case.params)
    for path in write_report(args.out, model, table, cv, breakdowns):
        print(path)
    return 0


def _case_of(row):
    """The suite case of a Table 1 row of the test suite (one variant, one group size)."""
    from kernelcast.suites.paper import get_suite

    kclass = get_suite(row.suite).kernel_class(row.kernel_class)
    return next(kclass.cases(row.suite, kclass.p_choices[0])).with_params(row.params)


def _params_text(params) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(params.items()))


def demo(args) -> int:
    from kernelcast.fitting.dataset import PropertyCache
    from kernelcast.report import print_evaluation
    from kernelcast.workflow import calibrate, evaluate as run

    print("kernelcast demo: calibrate the best device present (a GPU: the paper's measurement "
          "suite and kernelcast's extension suite, for the extended model; a CPU: the "
          "paper's suite at CPU sizes, for the paper's model), then predict the paper's "
          "test kernels with every model that can be fitted there (Stevens & Klöckner "
          "§4-5)\n", flush=True)
    cache = PropertyCache()
    start = time.perf_counter()
    model, path = calibrate(args.device, args.backend, cache=cache)
    print(f"\ncalibrated in {time.perf_counter() - start:.0f} s; profile: {path}\n",
          flush=True)
    tables = run(model, others=("all",), cache=cache)
    cv = _cross_validations([model.name], model, None, cache)
    print()
    print_evaluation(model, tables, cv)
    return 0
