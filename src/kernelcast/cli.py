"""The ``kernelcast`` command line.

Commands: ``properties`` (symbolic and evaluated properties of a kernel), ``suites`` (the
cases of a kernel suite), ``devices``, ``measure`` (time kernels into a store) and ``demo``
(the main job). Errors print one line and exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings

from kernelcast.errors import KernelcastError
from kernelcast.models.features import MODELS


def _pairs(items, convert, what):
    result = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise KernelcastError(f"expected NAME=VALUE for {what}, got {item!r}")
        try:
            result[name.strip()] = convert(value)
        except ValueError:
            raise KernelcastError(f"{what} {name}: not a number: {value!r}") from None
    return result


def _int(text: str) -> int:
    value = float(text)
    if not value.is_integer():
        raise KernelcastError(f"sizes must be integers, got {text!r}")
    return int(value)


def _cmd_properties(args) -> int:
    from kernelcast.kernel import load_factory
    from kernelcast.properties import extract_properties
    from kernelcast.properties.display import properties_json, properties_table

    factory = load_factory(args.kernel)
    params = _pairs(args.param, _int, "--param") if args.param else None
    stats = _pairs(args.stat, float, "--stat")
    props = extract_properties(factory(), data_statistics=stats)
    if args.json:
        json.dump(properties_json(props, params), sys.stdout, indent=2)
        print()
    else:
        print(properties_table(props, params))
    return 0


def _cmd_suites(args) -> int:
    from collections import Counter

    from kernelcast.suites.paper import get_suite

    suite = get_suite(args.suite)
    cases = suite.cases(_pairs(args.p, _int, "--p"), args.dtype, args.group_set)
    if args.json:
        json.dump([{"name": c.name, "class": c.class_name, "variant": c.variant,
                    "dtype": c.dtype, "group_size": list(c.group_size), "p": c.p, "t": c.t,
                    "params": c.params} for c in cases], sys.stdout, indent=1)
        print()
        return 0
    print(f"suite {suite.name}: {len(cases)} cases")
    print(f"{'class':<18} {'variant':<14} {'dtype':<8} {'group':>7} {'p':>3} {'t':>2}  params")
    for c in cases:
        params = " ".join(f"{k}={v}" for k, v in sorted(c.params.items()))
        print(f"{c.class_name:<18} {c.variant or '-':<14} {c.dtype or '-':<8} "
              f"{'{}x{}'.format(*c.group_size):>7} {c.p:>3} {c.t:>2}  {params}")
    counts = Counter(c.class_name for c in cases)
    print("\ncases per class: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return 0


def _cmd_devices(args) -> int:
    from kernelcast.measure.devices import list_devices

    devices = list_devices()
    if args.json:
        json.dump([d.as_dict() for d in devices], sys.stdout, indent=1)
        print()
        return 0
    if not devices:
        print("no OpenCL or CUDA devices found")
        return 0
    print(f"{'backend':<7} {'kind':<10} {'name':<34} {'platform':<28} {'driver':<14} "
          f"{'CUs':>4} {'MHz':>5} {'memory':>9} {'max group':>9}")
    for d in devices:
        print(f"{d.backend:<7} {d.kind:<10} {d.name[:34]:<34} {d.platform[:28]:<28} "
              f"{d.driver[:14]:<14} {d.compute_units:>4} {d.clock_mhz:>5} "
              f"{d.global_mem_bytes / 2**30:>6.1f} GiB {d.max_group_size:>9}")
    return 0


def _measured_kernel(args):
    """The factory and sizes of ``measure --kernel``, refused if sizes are missing."""
    import loopy as lp

    from kernelcast.errors import NotALoopyKernelError, ParameterError
    from kernelcast.kernel import load_factory
    from kernelcast.measure.arrays import size_parameters

    factory = load_factory(args.kernel)
    params = _pairs(args.param, _int, "--param")
    knl = factory()
    if not isinstance(knl, (lp.TranslationUnit, lp.LoopKernel)):
        raise NotALoopyKernelError(f"{args.kernel} returned {type(knl).__name__}, "
                                   "not a Loopy kernel")
    missing = [p for p in size_parameters(knl) if p not in params]
    if missing:
        raise ParameterError(f"{args.kernel} needs sizes for {', '.join(missing)}: "
                             f"--param {' '.join(f'{p}=SIZE' for p in missing)}")
    return factory, params


def _cmd_measure(args) -> int:
    from kernelcast.measure.backends import make_backend
    from kernelcast.measure.campaign import measure_kernel, measure_suite
    from kernelcast.measure.store import Store

    if bool(args.kernel) == bool(args.suite):
        raise KernelcastError("give either --suite NAME or --kernel FILE.py:FACTORY")
    if args.kernel:  # checked before a store is opened
        factory, params = _measured_kernel(args)
    backend = make_backend(args.backend, args.device, args.build_options or "")
    print(f"measuring on {backend.device.name} ({backend.name}, driver "
          f"{backend.device.driver}) into {args.db}", file=sys.stderr)
    options = {"runs": args.runs, "tolerance": args.tolerance, "verify": not args.no_verify}
    with Store(args.db, backend.identity) as store:
        if args.kernel:
            result = measure_kernel(factory, params, backend, store, **options)
        else:
            from kernelcast.suites.paper import get_suite

            suite = get_suite(args.suite)
            classes = args.classes.split(",") if args.classes else None
            if args.p == ["max"]:
                sizes = {c.name: max(c.p_choices) for c in suite.classes
                         if classes is None or c.name in classes}
            else:
                sizes = _pairs(args.p, _int, "--p")
            result = measure_suite(suite, backend, store, p=sizes, dtypes=args.dtype,
                                   group_set=args.group_set, classes=classes, **options)
    counts = ", ".join(f"{v} {k}" for k, v in sorted(result.statuses.items()))
    print(f"done: {result.measured} measured ({counts or 'none'}), "
          f"{result.skipped} already in {args.db}")
    return 0


def _measure_options(args) -> dict:
    return {"runs": args.runs, "tolerance": args.tolerance}


def _print_evaluation(profile, table, summary, cv_summary=None) -> None:
    from kernelcast.report import format_summary, format_table1, format_table2

    print(f"Table 1: test kernels on {profile.device} ({profile.backend}), predicted by the "
          f"profile fitted on {profile.fit.get('cases')} {profile.suite} cases\n")
    print(format_table1(table))
    print("\ngeometric mean of relative error per kernel\n")
    print(format_summary(summary))
    print("\nTable 2: weights\n")
    print(format_table2(profile))
    if profile.fit.get("negative_weights"):
        print(f"\nnegative weights (the paper's unconstrained fit allows them): "
              f"{', '.join(profile.fit['negative_weights'])}; --nonnegative forbids them")
    if cv_summary is not None:
        print("\nleave-one-class-out cross-validation over the classes the profile was "
              "fitted on\n")
        print(format_summary(cv_summary))


def _cmd_calibrate(args) -> int:
    from kernelcast.workflow import calibrate

    profile, path = calibrate(args.device, args.backend, args.db, args.profile, args.suite,
                              args.nonnegative, model=args.model, **_measure_options(args))
    fit = profile.fit
    print(f"profile written to {path}: {len(profile.weights)} weights from {fit['cases']} "
          f"cases ({fit['criterion']}), training geometric-mean relative error "
          f"{fit['training_geomean_rel_error']:.1%}")
    if fit["negative_weights"]:
        print(f"negative weights: {', '.join(fit['negative_weights'])}")
    return 0


def _hong_kim_hardware(args):
    from kernelcast.models.hardware import load_hardware

    if args.model != "hong-kim":
        if args.hardware:
            raise KernelcastError("--hardware is for --model hong-kim; the fitted models "
                                  "take a --profile")
        if not args.profile:
            raise KernelcastError(f"--model {args.model} needs --profile")
        return None
    if not args.hardware:
        raise KernelcastError("--model hong-kim needs --hardware (a GPU name such as h100, "
                              "or a JSON file; see kernelcast.models.hardware)")
    return load_hardware(args.hardware)


def _predict_hong_kim(args, hardware) -> int:
    from kernelcast.kernel import load_factory
    from kernelcast.models.hong_kim import estimate
    from kernelcast.models.hong_kim_inputs import shared_memory_bytes, workload
    from kernelcast.properties import extract_properties

    params = _pairs(args.param, _int, "--param")
    knl = load_factory(args.kernel)()
    props = extract_properties(knl, data_statistics=_pairs(args.stat, float, "--stat"))
    wl = workload(props, params, shared_memory_bytes(knl, params), args.registers)
    est = estimate(hardware, wl)
    if args.json:
        json.dump({"device": hardware.name, "model": "hong-kim", "params": params,
                   "seconds": est.seconds, "workload": wl.__dict__,
                   "estimate": est.as_dict()}, sys.stdout, indent=1)
        print()
        return 0
    print(f"predicted run time on {hardware.name} (Hong–Kim): {est.seconds:.4g} s, "
          f"{est.verdict}")
    print(f"  MWP {est.mwp:.3g}, CWP {est.cwp:.3g}, N {est.n:.3g} active warps per SM, "
          f"{est.rep:.3g} rounds of {est.active_blocks_per_sm:.3g} blocks on "
          f"{est.active_sms} SMs; case: {est.regime}")
    print(f"  per thread: {wl.comp_insts:.4g} computation, {wl.coal_mem_insts:.4g} "
          f"coalesced and {wl.uncoal_mem_insts:.4g} uncoalesced memory, "
          f"{wl.synch_insts:.4g} synchronization instructions")
    return 0


def _cmd_predict(args) -> int:
    from kernelcast.evaluate import explain
    from kernelcast.kernel import load_factory
    from kernelcast.models.profile import load_profile
    from kernelcast.properties import extract_properties

    hardware = _hong_kim_hardware(args)
    if hardware is not None:
        return _predict_hong_kim(args, hardware)
    profile = load_profile(args.profile)
    params = _pairs(args.param, _int, "--param")
    props = extract_properties(load_factory(args.kernel)(),
                               data_statistics=_pairs(args.stat, float, "--stat"))
    parts = explain(props, params, profile)
    total = sum(parts.values())
    if args.json:
        json.dump({"device": profile.device, "params": params, "seconds": total,
                   "breakdown": parts}, sys.stdout, indent=1)
        print()
        return 0
    print(f"predicted run time on {profile.device} ({profile.backend}): {total:.4g} s")
    for name, seconds in parts.items():
        if seconds:
            print(f"  {name:<28} {seconds:>12.4g} s  {seconds / total:>7.1%}")
    return 0


def _cmd_evaluate(args) -> int:
    from kernelcast.evaluate import PropertyCache, cross_validate, summarize
    from kernelcast.measure.store import Store
    from kernelcast.models.profile import load_profile
    from kernelcast.workflow import evaluate_profile

    hardware = _hong_kim_hardware(args)
    if hardware is not None:
        return _evaluate_hong_kim(args, hardware)
    profile = load_profile(args.profile)
    cache = PropertyCache()
    table, summary = evaluate_profile(profile, args.db, False if args.no_measure else None,
                                      cache=cache, **_measure_options(args))
    cv_summary = None
    if args.cv:
        with Store(args.db or profile.store) as store:
            cv_summary = summarize(cross_validate(store, profile.suite, cache=cache,
                                                  model=profile.model))
    _print_evaluation(profile, table, summary, cv_summary)
    return 0


def _evaluate_hong_kim(args, hardware) -> int:
    from pathlib import Path

    from kernelcast.evaluate import hong_kim_table, summarize
    from kernelcast.measure.store import Store
    from kernelcast.report import format_summary

    if not args.db:
        raise KernelcastError("--model hong-kim evaluates the measurements of a store: "
                              "give --db")
    registers = None
    if args.registers:
        registers = json.loads(Path(args.registers).read_text())
    with Store(args.db) as store:
        if store.identity["device"] != hardware.name:
            print(f"note: the store holds {store.identity['device']}, the hardware "
                  f"description is {hardware.name}", file=sys.stderr)
        table = hong_kim_table(hardware, store, args.suite, registers=registers)
    print(f"# Hong–Kim model on {hardware.name}: {args.suite} suite of {args.db}\n")
    print("| kernel | sizes | measured s | predicted s | error | case | bottleneck |")
    print("| --- | --- | ---: | ---: | ---: | --- | --- |")
    for row in table.itertuples():
        sizes = ", ".join(f"{k}={v}" for k, v in row.params.items())
        print(f"| {row.kernel_class} | {sizes} | {row.measured_s:.4g} | "
              f"{row.predicted_s:.4g} | {row.rel_error:.1%} | {row.regime} | "
              f"{row.verdict} |")
    print()
    print(format_summary(summarize(table), markdown=True))
    return 0


def _cmd_report(args) -> int:
    from kernelcast.evaluate import PropertyCache, cross_validate, explain, summarize
    from kernelcast.measure.store import Store
    from kernelcast.models.profile import load_profile
    from kernelcast.report import write_report
    from kernelcast.suites.paper import TEST_SUITE_OF, get_suite
    from kernelcast.workflow import evaluate_profile

    profile = load_profile(args.profile)
    cache = PropertyCache()
    table, summary = evaluate_profile(profile, args.db, False, cache=cache)
    with Store(args.db or profile.store) as store:
        cv = cross_validate(store, profile.suite, cache=cache, model=profile.model)
    breakdowns = {}
    for kclass in get_suite(TEST_SUITE_OF.get(profile.suite, "test")).classes:
        largest = table[table.kernel_class == kclass.name].sort_values("measured_s").tail(1)
        if len(largest):
            case = next(c for c in kclass.cases("", kclass.p_choices[0])
                        ).with_params(largest.params.iloc[0])
            breakdowns[f"{kclass.name} {_params_text(case.params)}"] = explain(
                case.kernel(), case.params, profile)
    files = write_report(args.out, profile, table, summary, cv, summarize(cv), breakdowns)
    for path in files:
        print(path)
    return 0


def _params_text(params) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(params.items()))


def _cmd_demo(args) -> int:
    from kernelcast.evaluate import PropertyCache, cross_validate, summarize
    from kernelcast.measure.store import Store
    from kernelcast.workflow import calibrate, evaluate_profile

    print("kernelcast demo: calibrate the best device present (a GPU: the paper's measurement "
          "suite and kernelcast's extension suite, for kernelcast's model; a CPU: the paper's "
          "suite at CPU sizes, for the paper's model), then predict the paper's test kernels "
          "(Stevens & Klöckner §4-5)\n", flush=True)
    cache = PropertyCache()
    start = time.perf_counter()
    profile, path = calibrate(args.device, args.backend, cache=cache)
    print(f"\ncalibrated in {time.perf_counter() - start:.0f} s; profile: {path}\n",
          flush=True)
    table, summary = evaluate_profile(profile, cache=cache)
    with Store(profile.store) as store:
        cv_summary = summarize(cross_validate(store, profile.suite, cache=cache,
                                              model=profile.model))
    print()
    _print_evaluation(profile, table, summary, cv_summary)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kernelcast", description="Predict GPU kernel run times from Loopy kernels.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("properties", help="symbolic and evaluated properties of a kernel")
    p.add_argument("kernel", help="FILE.py:FACTORY, a function returning a Loopy kernel")
    p.add_argument("--param", nargs="+", action="extend", metavar="NAME=SIZE",
                   help="evaluate at these sizes")
    p.add_argument("--stat", nargs="+", action="extend", metavar="NAME=VALUE",
                   help="statistics for data-dependent loop bounds or conditions")
    p.add_argument("--json", action="store_true", help="print JSON for machines")
    p.set_defaults(run=_cmd_properties)

    p = sub.add_parser("suites", help="list the cases of a kernel suite (paper §4.1, §5)")
    p.add_argument("--suite", default="measurement", help="measurement or test")
    p.add_argument("--p", nargs="+", action="extend", metavar="CLASS=P",
                   help="base size exponent of a class (default: the paper's smallest)")
    p.add_argument("--dtype", nargs="+", action="extend", metavar="DTYPE",
                   help="only these precisions (float32, float64)")
    p.add_argument("--group-set", metavar="SET",
                   help="a §4.1 group-size set such as '2-D Med' instead of the default")
    p.add_argument("--json", action="store_true", help="print JSON for machines")
    p.set_defaults(run=_cmd_suites)

    p = sub.add_parser("devices", help="list the OpenCL and CUDA devices")
    p.add_argument("--json", action="store_true", help="print JSON for machines")
    p.set_defaults(run=_cmd_devices)

    p = sub.add_parser("measure", help="time kernels on a device into a measurement store")
    p.add_argument("--suite", help="measurement or test")
    p.add_argument("--kernel", help="FILE.py:FACTORY, a function returning a Loopy kernel")
    p.add_argument("--param", nargs="+", action="extend", metavar="NAME=SIZE",
                   help="sizes for --kernel")
    p.add_argument("--db", required=True, help="the SQLite measurement store")
    p.add_argument("--device", help="a substring of the device or platform name "
                   "(default: the best device)")
    p.add_argument("--backend", default="opencl", choices=("opencl", "cuda"))
    p.add_argument("--build-options", help="options for the device compiler")
    p.add_argument("--p", nargs="+", action="extend", metavar="CLASS=P",
                   help="base size exponent of a class (default: chosen as in §4.2); "
                   "'max' for the largest allowed p of every class")
    p.add_argument("--classes", help="only these classes, comma-separated")
    p.add_argument("--dtype", nargs="+", action="extend", metavar="DTYPE")
    p.add_argument("--group-set", metavar="SET")
    p.add_argument("--runs", type=int, default=30, help="launches per attempt (paper: 30)")
    p.add_argument("--tolerance", type=float, default=0.10,
                   help="largest median/min - 1 of a stable case")
    p.add_argument("--no-verify", action="store_true",
                   help="skip checking suite kernels against their references")
    p.set_defaults(run=_cmd_measure)

    def timing_args(p):
        p.add_argument("--runs", type=int, default=30, help="launches per attempt (paper: 30)")
        p.add_argument("--tolerance", type=float, default=0.10,
                       help="largest median/min - 1 of a stable case")

    p = sub.add_parser("calibrate", help="measure the measurement suite, fit, write a profile")
    p.add_argument("--device", help="a substring of the device name (default: the best)")
    p.add_argument("--backend", default="opencl", choices=("opencl", "cuda"))
    p.add_argument("--db", help="measurement store (default: kernelcast-data/<device>.sqlite)")
    p.add_argument("--profile", help="where to write the profile (default: beside the store)")
    p.add_argument("--suite", help="measurement (GPU default) or measurement-cpu (CPU default)")
    p.add_argument("--nonnegative", action="store_true", help="fit non-negative weights")
    p.add_argument("--model", choices=MODELS,
                   help="paper: the paper's properties (the baseline); kernelcast: plus data "
                        "volume, bank conflicts and per-work-item terms, fitted with the "
                        "extension suite too (GPUs only). Default: kernelcast on a GPU, "
                        "paper on a CPU")
    timing_args(p)
    p.set_defaults(run=_cmd_calibrate)

    p = sub.add_parser("predict", help="predict a kernel's run time with a profile "
                                       "or the Hong–Kim model")
    p.add_argument("kernel", help="FILE.py:FACTORY, a function returning a Loopy kernel")
    p.add_argument("--profile", help="a fitted profile (models paper and kernelcast)")
    p.add_argument("--model", default="fitted", choices=("fitted", "hong-kim"),
                   help="fitted: the profile's model; hong-kim: the analytical model of "
                        "Hong & Kim on --hardware")
    p.add_argument("--hardware", help="for hong-kim: h100, h200, fx5600, c1060 or a JSON "
                                      "file")
    p.add_argument("--registers", type=int, metavar="N",
                   help="for hong-kim: registers per thread, as the compiler reports them "
                        "(limits the blocks an SM holds)")
    p.add_argument("--param", nargs="+", action="extend", metavar="NAME=SIZE", required=True)
    p.add_argument("--stat", nargs="+", action="extend", metavar="NAME=VALUE")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=_cmd_predict)

    p = sub.add_parser("evaluate", help="Table 1 and Table 2 of a profile on the test suite")
    p.add_argument("--profile", help="a fitted profile (models paper and kernelcast)")
    p.add_argument("--model", default="fitted", choices=("fitted", "hong-kim"),
                   help="hong-kim: Table 1 of the Hong–Kim model on --hardware, from --db")
    p.add_argument("--hardware", help="for hong-kim: h100, h200, fx5600, c1060 or a JSON "
                                      "file")
    p.add_argument("--suite", default="test", help="for hong-kim: the suite to evaluate")
    p.add_argument("--registers", help="for hong-kim: registers per kernel "
                                       "(data/<gpu>/registers.json)")
    p.add_argument("--db", help="measurement store (default: the profile's)")
    p.add_argument("--no-measure", action="store_true",
                   help="only read the store, even when the device is present")
    p.add_argument("--cv", action="store_true",
                   help="also leave-one-class-out cross-validation")
    timing_args(p)
    p.set_defaults(run=_cmd_evaluate)

    p = sub.add_parser("report", help="markdown, CSV and figures of a profile's evaluation")
    p.add_argument("--profile", required=True)
    p.add_argument("--db", help="measurement store (default: the profile's)")
    p.add_argument("--out", required=True, help="folder for the report")
    p.set_defaults(run=_cmd_report)

    p = sub.add_parser("demo", help="the main job: calibrate the best device, evaluate")
    p.add_argument("--device", help="a substring of the device name (default: the best)")
    p.add_argument("--backend", default="opencl", choices=("opencl", "cuda"))
    p.set_defaults(run=_cmd_demo)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    from loopy.diagnostic import LoopyWarning

    warnings.filterwarnings("ignore", category=LoopyWarning)
    try:
        return args.run(args)
    except KernelcastError as err:
        print(f"kernelcast: error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into head and the like
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
