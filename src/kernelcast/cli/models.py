"""Verbs that use models: predict, evaluate, report, demo."""

from __future__ import annotations

import json
import sys
import time

from kernelcast.frontends.arguments import sizes
from kernelcast.errors import KernelcastError, UsageError
from kernelcast.cli.model_flags import model_params


def _model(args):
    """The model of ``--profile`` (predict: or of the profile of ``--model`` that
    ``--device`` names, which becomes ``args.profile``), with the parameters given at
    prediction time; or one made from ``--model``'s parameters where the model needs no
    profile (its hardware)."""
    from kernelcast.models import get_model, model_class
    from kernelcast.profile import load_profile, named_like

    device = getattr(args, "device", None) if args.command == "predict" else None
    if device is not None and not args.profile:
        opencl = str(getattr(args, "kernel", "")).endswith(".cl")
        args.profile = str(_device_profile(args.model, device, "opencl" if opencl else None))
        args.found_by_device = True
    if args.profile:
        model = load_profile(args.profile)
        if args.command == "predict" and args.model not in (None, model.name):
            raise UsageError(f"the profile holds the {model.name} model, not {args.model}")
        if device is not None and not named_like(device, model.provenance_["device"]):
            raise UsageError(f"{args.profile} is a profile of {model.provenance_['device']}, "
                             f"not of a device named like {device!r}; drop --device or "
                             "give that device's profile")
        for key, value in model_params(args, model.name, with_profile=True).items():
            setattr(model, key, value)
        return model
    name = args.model or "paper"
    params = model_params(args, name)
    cls = model_class(name)
    if cls.from_hardware:
        if not params.get("hardware"):
            raise UsageError(f"--model {name} needs --hardware "
                             f"({cls.parameter('hardware').describe()}) or a --profile")
        return get_model(name, **params).fit()
    if args.command == "predict":
        from kernelcast.profile import find_profiles

        have = sorted({doc["device"] for _, doc in find_profiles(name)})
        where = f" (profiles found: {'; '.join(have)})" if have else ""
        raise UsageError(f"--model {name} needs --device NAME{where} or --profile FILE (fit "
                         f"one with `kernelcast calibrate --model {name}` or `kernelcast "
                         "fit`)")
    raise UsageError(f"--model {name} needs --profile (fit one with "
                     "`kernelcast calibrate` or `kernelcast fit`)")


def _device_profile(model: str | None, device: str, backend: str | None = None):
    """The profile of *model* whose device *device* names (kernelcast.profile.
    find_profiles): the device whose name it is (ignoring case) or the only one it names
    a part of; where several folders hold one, the first folder's (kernelcast-data/, what
    calibrate wrote here, before data/profiles/, the committed ones); of *backend* where
    it has profiles of both (a .cl kernel: OpenCL's). One-line errors for
    none (saying how to fit one), for several devices and for several profiles of the
    device in one folder (backends, instances): never another device's profile."""
    from kernelcast.profile import find_profiles

    if not model:
        raise UsageError("--device finds a model's profile of that device: give --model "
                         "too (poppl-herz for a .cl kernel)")
    if not device.strip():
        raise UsageError("--device: give a part of the device's name, such as h100")
    found = find_profiles(model, device)
    if backend is not None and any(doc.get("backend") == backend for _, doc in found):
        found = [(p, doc) for p, doc in found if doc.get("backend") == backend]
    if not found:
        raise UsageError(_no_profile(model, device))
    devices = sorted({doc["device"] for _, doc in found})
    exact = [d for d in devices if d.lower() == device.strip().lower()]
    if len(devices) > 1 and not exact:
        raise UsageError(f"--device {device!r} names several devices with a {model} "
                         f"profile ({'; '.join(devices)}); name one more fully")
    name = (exact or devices)[0]
    paths = [path for path, doc in found if doc["device"] == name]
    first = [path for path in paths if path.parent == paths[0].parent]
    if len(first) > 1:
        kinds = ", ".join(f"{path.name}" for path in first)
        raise UsageError(f"{paths[0].parent} holds several {model} profiles of {name} "
                         f"({kinds}); pass --profile FILE")
    return first[0]


def _no_profile(model: str, device: str) -> str:
    """The one line for no profile of *model* for *device*: the devices that have one,
    and how to fit one: from the committed measurements where the repository has them
    (data/<gpu>/poppl-herz.sqlite.xz), else by calibrating the device."""
    import shlex

    from kernelcast.profile import find_profiles, profile_folders

    have = sorted({doc["device"] for _, doc in find_profiles(model)})
    where = " or ".join(f"{folder}/" for folder in profile_folders())
    text = f"no {model} profile of a device named like {device!r} in {where}"
    if have:
        text += f" (there are profiles of {'; '.join(have)})"
    store = _committed_store(model, device)
    if store is not None:
        script = store.parents[2] / "scripts" / "fit_profiles.sh"
        return (f"{text}; fit it from the committed measurements {store}: {script} "
                f"{model} (writes data/profiles/), or pass --profile FILE")
    return (f"{text}; measure and fit one on that device: kernelcast calibrate --model "
            f"{model} --device {shlex.quote(device)} (writes kernelcast-data/, where "
            "--device finds it), or pass --profile FILE")


def _committed_store(model: str, device: str):
    """The committed measurements *model* is fitted from for *device*: the store named
    after the model, data/<gpu>/<model>.sqlite.xz, beside a device.json naming the device
    (in the current folder or the source checkout); None where there is none."""
    from kernelcast.frontends.files import read_json_file
    from kernelcast.profile import named_like, profile_folders

    for root in [f.parent for f in profile_folders() if f.parts[-2:] == ("data", "profiles")]:
        for info in sorted(root.glob("*/device.json")):
            store = info.parent / f"{model}.sqlite.xz"
            try:
                named = read_json_file(info, "device description").get("device", "")
            except (KernelcastError, AttributeError):
                continue
            if store.is_file() and isinstance(named, str) and named_like(device, named):
                return store
    return None


def opencl_flags(args) -> list[str]:
    """The flags given that only a .cl kernel takes."""
    return [flag for flag in ("--global-size", "--local-size", "--kernel-name",
                              "--build-options", "--arg", "--array", "--bytes-in",
                              "--bytes-out")
            if getattr(args, flag[2:].replace("-", "_"), None)]


def check_opencl_launch(args) -> None:
    """Refuse a .cl kernel's flags where they do not make a launch."""
    if args.param:
        raise UsageError("--param is for Loopy kernels; a .cl kernel takes its scalar "
                         "arguments as --arg NAME=VALUE and its launch as --global-size "
                         "and --local-size")
    if not args.global_size:
        raise UsageError("a .cl kernel needs --global-size")
    _check_launch(args.global_size, args.local_size)


def _opencl_flags(args) -> bool:
    """Whether the kernel is OpenCL source; refuses flags that belong to the other kind."""
    opencl = args.kernel.endswith(".cl")
    if opencl:
        check_opencl_launch(args)
    else:
        cl_flags = opencl_flags(args)
        if cl_flags:
            raise UsageError(f"{cl_flags[0]} is for a .cl kernel")
        if not args.param:
            raise UsageError("the kernel's sizes are needed: --param NAME=SIZE ...")
        from kernelcast.models import model_class

        if args.model and model_class(args.model).workload == "opencl":
            raise UsageError(f"the {args.model} model predicts OpenCL source: give a .cl "
                             "file")
    return opencl


def _check_launch(global_size, local_size) -> None:
    """Refuse an NDRange OpenCL 1.2 cannot launch: 1 to 3 dimensions, as many local
    sizes as global ones, each local size dividing its global size (whole work-groups)."""
    if len(global_size) > 3:
        raise UsageError(f"--global-size has {len(global_size)} numbers; an OpenCL launch "
                         "has 1 to 3 dimensions")
    if not local_size:
        return
    if len(local_size) != len(global_size):
        raise UsageError(f"--local-size needs as many numbers as --global-size "
                         f"({len(global_size)}), got {len(local_size)}")
    for d, (g, size) in enumerate(zip(global_size, local_size)):
        if g % size:
            raise UsageError(f"the global size {g} is not a multiple of the local size "
                             f"{size} (dimension {d} of --global-size and --local-size); "
                             "OpenCL 1.2 launches whole work-groups")


def opencl_counts(args):
    """(KernelCounts, local size) of the .cl kernel the flags launch."""
    from pathlib import Path

    from kernelcast.frontends.arguments import line_statistics, scalar_arguments
    from kernelcast.frontends.files import check_regular_file
    from kernelcast.frontends.opencl import count_kernel

    check_regular_file(args.kernel, "OpenCL source")  # a FIFO would block the read
    try:
        text = Path(args.kernel).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"cannot read {args.kernel}: {err}") from None
    local = args.local_size or [1] * len(args.global_size)
    counts = count_kernel(text, args.kernel_name, path=args.kernel,
                          options=getattr(args, "build_options", None) or "",
                          scalars=scalar_arguments(getattr(args, "arg", None)),
                          global_size=args.global_size, local_size=local,
                          stats=line_statistics(args.stat))
    return counts, local


def _predict_opencl(args, model) -> int:
    from kernelcast.report import format_seconds

    counts, local = opencl_counts(args)
    params = {"global_size": args.global_size, "local_size": local,
              **({"bytes_in": args.bytes_in} if args.bytes_in else {}),
              **({"bytes_out": args.bytes_out} if args.bytes_out else {})}
    rows = model.table(counts, params)
    total = model.predict(counts, params)
    device = model.provenance_["device"]
    if args.json:
        doc = {"device": device, "model": model.name, **_profile_key(args),
               "kernel": counts.name,
               "params": params, "seconds": total, "breakdown": model.explain(counts, params),
               "transfer": model.transfer(counts, params),
               "table": [{"cost": c, "count": n, "microseconds": us} for c, n, us in rows],
               **model.details(counts, params)}
        json.dump(doc, sys.stdout, indent=1)
        print()
        return 0
    print(f"predicted run time of {counts.name} on {device}, {model.name} model"
          f"{'' if model.classes else ' (simple)'}: {format_seconds(total)} "
          "(kernel; with copies below)")
    _print_found(args)
    print(f"  {'cost type':<30} {'# in kernel':>12} {'time in µs':>12}")
    for cost, count, micro in rows:
        text = "-" if micro is None else f"{micro:.4g}"
        print(f"  {cost:<30} {count:>12} {text:>12}")
    return 0


def _profile_key(args) -> dict:
    """predict's JSON key "profile": the profile's path, where one predicts."""
    return {"profile": str(args.profile)} if args.profile else {}


def _print_found(args) -> None:
    """predict's line naming the profile that --device found."""
    if getattr(args, "found_by_device", False):
        print(f"  profile: {args.profile} (found for --device {args.device!r})")


def _opencl_properties(args, model):
    """The paper properties of a .cl kernel at its launch, for a Loopy-kernel model."""
    from kernelcast.frontends.arguments import array_sizes, scalar_arguments
    from kernelcast.properties.opencl import opencl_properties

    if args.bytes_in or args.bytes_out:
        raise UsageError("--bytes-in and --bytes-out are for the poppl-herz model; the "
                         f"{model.name} model predicts the kernel alone")
    counts, local = opencl_counts(args)
    return opencl_properties(counts, args.global_size, local,
                             scalars=scalar_arguments(getattr(args, "arg", None)),
                             array_elements=array_sizes(getattr(args, "array", None)))


def predict(args) -> int:
    from kernelcast.cli.kernels import kernel_properties
    from kernelcast.report import format_seconds

    opencl = _opencl_flags(args)
    model = _model(args)
    if opencl and model.workload == "opencl":
        return _predict_opencl(args, model)
    if model.workload == "opencl":
        raise UsageError("a poppl-herz profile predicts OpenCL source: give a .cl file")
    if opencl:
        params, props = {}, _opencl_properties(args, model)
    elif getattr(model, "needs_kernel", False):  # it compiles the kernel itself
        from kernelcast.frontends.files import load_kernel

        if args.stat:
            raise UsageError("--stat is for the models on the paper's properties; the "
                             f"{model.name} model reads no data statistics")
        params = sizes(args.param)
        props = load_kernel(args.kernel)
    else:
        params = sizes(args.param)
        props = kernel_properties(args.kernel, args.stat)
    total = model.predict(props, params)  # refuses a time that is not positive
    parts = model.explain(props, params)
    details = model.details(props, params)
    device = model.provenance_["device"]
    terms = model.terms(props, params) if args.explain and hasattr(model, "terms") else None
    if args.explain and terms is None:
        raise UsageError(f"--explain is for the weighted models (paper, extended, facts); "
                         f"the {model.name} model's parts are its breakdown")
    if args.json:
        doc = {"device": device, "model": model.name, **_profile_key(args),
               "params": params, "seconds": total,
               "breakdown": parts, **details, **({"terms": terms} if terms else {})}
        if hasattr(model, "estimate"):  # Hong–Kim: every quantity of the equations
            doc["estimate"] = model.estimate(props, params).as_dict()
        json.dump(doc, sys.stdout, indent=1)
        print()
        return 0
    backend = model.provenance_.get("backend")
    print(f"predicted run time on {device}{f' ({backend})' if backend else ''}, "
          f"{model.name} model: {format_seconds(total)}")
    _print_found(args)
    if details:
        print("  " + ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}"
                               for k, v in details.items()))
    if terms:
        print(f"  {'term':<28} {'time':>10} {'share':>7}  {'value':>11}  counter it stands on")
        for t in terms:
            value = "" if t["value"] is None else f"{t['value']:.4g}"
            print(f"  {t['term']:<28} {format_seconds(t['seconds']):>10} "
                  f"{t['seconds'] / total:>7.1%}  {value:>11}  {t['counter'] or '-'}")
        return 0
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

    from kernelcast.suites.paper import get_suite

    for suite in (args.suite, args.fit_suite):  # unknown names before any store is read
        if suite is not None:
            get_suite(suite)
    cache = PropertyCache()
    if args.profile:
        model = _model(args)
    elif args.db and args.model and args.model != "all":
        model = fit_store(args.db, args.model, args.fit_suite, cache,
                          **model_params(args, args.model))
    else:
        raise UsageError("give --profile, or --db with --model NAME")
    if model.workload == "variant":
        raise UsageError(f"the {model.name} model is fitted to measured variants and ranks "
                         "a kernel's variants (kernelcast tune); evaluate judges the models "
                         "fitted from a store's suites")
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

    _check_out_folder(args.out)  # before the evaluation, which takes a while
    model = load_profile(args.profile)
    cache = PropertyCache()
    table = run(model, args.db, False, cache=cache)[model.name]
    suite = model.provenance_.get("suite") or "measurement"
    with Store(args.db or model.provenance_["store"]) as store:
        cv = cross_validate(model.clone(), load_dataset(  # the long part: progress on stderr
            store, model.fit_suites(suite), suite=suite, cache=cache), progress=sys.stderr)
    breakdowns = {}
    for kclass, rows in table.groupby("kernel_class"):
        case = _case_of(rows.sort_values("measured_s").iloc[-1])
        breakdowns[f"{kclass} {_params_text(case.params)}"] = model.explain(
            cache.properties(case), case.params)
    for path in write_report(args.out, model, table, cv, breakdowns):
        print(path)
    return 0


def _check_out_folder(out) -> None:
    """Refuse an --out where no folder can be made: a file, a path through a file, a
    name too long, a folder that cannot be written."""
    import os
    from pathlib import Path

    from kernelcast.frontends.files import describe_os_error
    from kernelcast.report import check_report_paths

    path = Path(out)
    if not str(out):
        raise UsageError("--out: give a folder for the report")
    for part in path.parts:
        if len(os.fsencode(part)) > 255:
            raise UsageError(f"--out {out}: file name too long")
    try:
        if path.exists() and not path.is_dir():
            raise UsageError(f"--out {out} is a file, not a folder for the report")
        folder = path
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
    except OSError as err:
        raise UsageError(f"--out {out}: {describe_os_error(err)}") from None
    if not folder.is_dir():
        raise UsageError(f"--out {out}: {folder} is a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"--out {out}: cannot write in {folder}: permission denied")
    check_report_paths(out)


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
    model, path = calibrate(args.device, args.backend, cache=cache,
                            wait=getattr(args, "wait", 0.0))
    print(f"\ncalibrated in {time.perf_counter() - start:.0f} s; profile: {path}\n",
          flush=True)
    tables = run(model, others=("all",), cache=cache)
    cv = _cross_validations([model.name], model, None, cache)
    print()
    print_evaluation(model, tables, cv)
    return 0
