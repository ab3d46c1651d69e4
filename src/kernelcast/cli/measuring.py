"""Verbs that measure or fit: measure, calibrate, fit."""

from __future__ import annotations

import sys

from kernelcast.frontends.arguments import integer, pairs, sizes
from kernelcast.cli.spread import cluster_args, cluster_context, device_count, spread_devices
from kernelcast.errors import KernelcastError, UsageError


def _measured_kernel(args):
    """The kernel builder and sizes of ``measure --kernel``, refused if the factory fails
    or sizes are missing or unfit."""
    import functools

    from kernelcast.frontends.files import build_kernel, load_factory
    from kernelcast.measure.arrays import check_sizes, size_parameters

    factory = load_factory(args.kernel)
    params = sizes(args.param)

    @functools.wraps(factory)  # jobs are named after the factory where the kernel is not
    def build():
        return build_kernel(factory, args.kernel)

    knl = build()
    missing = [p for p in size_parameters(knl) if p not in params]
    if missing:
        raise UsageError(f"{args.kernel} needs sizes for {', '.join(missing)}: "
                         f"--param {' '.join(f'{p}=SIZE' for p in missing)}")
    check_sizes(knl, params)  # n=0 against n >= 1, n=2**31 for an int32 n: nothing stored
    return build, params


def measure(args) -> int:
    import contextlib

    from kernelcast.measure.backends import make_backend
    from kernelcast.measure.campaign import measure_kernel, run_campaign
    from kernelcast.measure.store import Store


    if bool(args.kernel) == bool(args.suite):
        raise UsageError("give either --suite NAME or --kernel FILE.py:FACTORY")
    spread = getattr(args, "devices", None) is not None
    count = device_count(getattr(args, "devices", None))
    workers, scheduler, timeout = cluster_args(args)
    if (spread or scheduler is not None) and args.kernel:
        raise UsageError(f"{'--devices' if spread else '--scheduler'} spreads a suite's "
                         "cases; one --kernel runs on one device")
    if spread and scheduler is not None and count is not None:
        raise UsageError("with --scheduler, --devices all: each of the cluster's workers "
                         "takes a device of its own")
    if args.kernel:  # checked before a store is opened
        build, params = _measured_kernel(args)
    wait = getattr(args, "wait", 0.0)
    backend = make_backend(args.backend, args.device, args.build_options or "", wait=wait,
                           locked=not spread)  # with --devices, the workers lock theirs
    options = {"runs": args.runs, "tolerance": args.tolerance, "verify": not args.no_verify}
    with contextlib.ExitStack() as stack:
        stack.enter_context(backend)
        campaign, where = run_campaign, f"{backend.device.name}"
        devices = (spread_devices(backend.device, count)
                   if spread and scheduler is None else None)
        client = stack.enter_context(cluster_context(workers, scheduler, timeout, devices))
        if client is not None:
            from kernelcast.tune.distributed import campaign_on

            campaign = campaign_on(client, wait=wait, per_device=spread)
        if devices:
            where = (f"{len(devices)} × {backend.device.name} "
                     f"({', '.join(d.instance for d in devices)})")
        elif scheduler is not None:
            where = (f"{backend.device.name} on the workers of {scheduler}"
                     + (", each on a device of its own" if spread else ""))
        store = stack.enter_context(Store(args.db, backend.identity))
        print(f"measuring on {where} ({backend.name}, driver {backend.device.driver}) "
              f"into {args.db}", file=sys.stderr)
        if args.kernel:
            result = measure_kernel(build, params, backend, store, **options)
        else:
            from kernelcast.suites.campaign import measure_suite
            from kernelcast.suites.paper import get_suite

            suite = get_suite(args.suite)
            classes = args.classes.split(",") if args.classes else None
            if args.p == ["max"]:
                chosen = {c.name: max(c.p_choices) for c in suite.classes
                          if classes is None or c.name in classes}
            else:
                chosen = pairs(args.p, integer, "--p")
            result = measure_suite(suite, backend, store, p=chosen, dtypes=args.dtype,
                                   group_set=args.group_set, classes=classes,
                                   campaign=campaign, **options)
    if result.devices:
        print("measured per device: " + ", ".join(f"{k} {v}" for k, v in
                                                   sorted(result.devices.items())),
              file=sys.stderr)
    counts = ", ".join(f"{v} {k}" for k, v in sorted(result.statuses.items()))
    print(f"done: {result.measured} measured ({counts or 'none'}), "
          f"{result.skipped} already in {args.db}")
    from kernelcast.report import STATUS_MEANINGS

    for status in sorted(set(result.statuses) - {"ok"}):  # what each other status means
        print(f"  {status}: {STATUS_MEANINGS[status]}", file=sys.stderr)
    timed = sum(result.statuses.get(s, 0) for s in ("ok", "unstable"))
    if result.measured and not timed:
        print(f"kernelcast: error: no case could be timed ({counts}); the messages are in "
              f"{args.db}", file=sys.stderr)
        return 1
    return 0


def _print_fit(model, path) -> None:
    fit = model.fit_report_
    line = f"profile written to {path}: {model.name} model"
    if hasattr(model, "weights_"):
        line += (f", {len(model.weights_)} weights from {model.provenance_['cases']} cases "
                 f"({fit['criterion']}), training geometric-mean relative error "
                 f"{fit['training_geomean_rel_error']:.1%}")
    print(line)
    if fit.get("negative_weights"):
        print(f"negative weights: {', '.join(fit['negative_weights'])}")
    failed = [s for s in fit.get("solver", []) if not s["success"]]
    if failed:
        print("solver warnings: " + "; ".join(f"{s['method']}: {s['message']}"
                                              for s in failed))


def _params(args) -> dict:
    """The chosen model's keyword arguments from the command line (a model must be named
    for them)."""
    from kernelcast.cli.model_flags import model_params

    return model_params(args, args.model)


def calibrate(args) -> int:
    from kernelcast.models import model_class
    from kernelcast.workflow import calibrate as run

    if args.model and model_class(args.model).fitted_from == "microbenchmarks":
        return _calibrate_microbenchmarks(args)
    if getattr(args, "devices", None) is not None:
        return _calibrate_devices(args)
    model, path = run(args.device, args.backend, args.db, args.profile, args.suite,
                      model=args.model, params=_params(args), runs=args.runs,
                      tolerance=args.tolerance, wait=getattr(args, "wait", 0.0))
    _print_fit(model, path)
    return 0


def _calibrate_microbenchmarks(args) -> int:
    """calibrate --model criteria: its microbenchmarks on the first CUDA device, into the
    folder --db (default kernelcast-data/<model>-microbenchmarks/), then its profile."""
    from pathlib import Path

    from kernelcast.workflow import calibrate_criteria

    for flag, given in (("--devices", args.devices), ("--device", args.device),
                        ("--suite", args.suite)):
        if given is not None:
            raise UsageError(f"{flag} is not for --model {args.model}: its microbenchmarks "
                             "run on the first CUDA device (CUDA_VISIBLE_DEVICES picks "
                             "another)")
    folder = Path(args.db or Path("kernelcast-data") / f"{args.model}-microbenchmarks")
    model, path = calibrate_criteria(folder, args.profile, params=_params(args),
                                     progress=sys.stdout, wait=args.wait)
    print(f"profile written to {path}: {model.name} model, "
          f"{model.provenance_['cases']} microbenchmarks in {folder}")
    return 0


def _calibrate_devices(args) -> int:
    from kernelcast.measure.devices import find_device
    from kernelcast.workflow import calibrate_devices

    count = device_count(args.devices)
    if args.db or args.profile:
        raise UsageError("--devices writes a store and a profile per device, named after "
                         "it: not with --db or --profile")
    params = _params(args)
    devices = spread_devices(find_device(args.device, args.backend), count)
    done = calibrate_devices(devices, args.backend, suite=args.suite, model=args.model,
                             params=params, wait=getattr(args, "wait", 0.0),
                             runs=args.runs, tolerance=args.tolerance)
    failed = []
    for device, outcome in zip(devices, done, strict=True):
        if isinstance(outcome, BaseException):
            failed.append((device, outcome))
            continue
        store, profile, fit = outcome
        error = fit.get("training_geomean_rel_error")
        quality = (f", training geometric-mean relative error {error:.1%}"
                   if error is not None else "")
        print(f"{device.instance}: profile written to {profile} (store {store}){quality}")
    for device, err in failed:
        if not isinstance(err, KernelcastError):
            raise err  # a bug: the traceback goes with it (--debug)
        message = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        print(f"kernelcast: error: {device.instance}: {message}", file=sys.stderr)
    if failed:  # a usage error on every device (a bad --suite) stays one
        if len(failed) == len(devices) and all(isinstance(e, UsageError) for _, e in failed):
            return 2
        return 1
    return 0


def fit(args) -> int:
    from kernelcast.profile import save_profile
    from kernelcast.workflow import fit_store

    model = fit_store(args.db, args.model, args.suite, profile_path=args.profile,
                      progress=sys.stderr, **_params(args))
    model.progress = None
    _print_fit(model, save_profile(model, args.profile))
    return 0
