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


def _demo_cases():
    from kernelcast.suites import kernels as k

    return [
        ("§3.1 scale", k.scale(256), {"n": 2**20}),
        ("§5 finite differences", k.finite_difference((16, 16)), {"n": 2**11}),
        ("§5 skinny matrix multiplication", k.matmul_tiled((16, 16)),
         {"n": 2**10, "m": 2**13, "l": 2**10}),
        ("§5 N-body", k.nbody(256), {"n": 2**11}),
        ("§5 convolution", k.convolution((16, 16)), {"n": 2**8}),
    ]


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


def _cmd_measure(args) -> int:
    from kernelcast.measure.backends import make_backend
    from kernelcast.measure.campaign import measure_kernel, measure_suite
    from kernelcast.measure.store import Store

    if bool(args.kernel) == bool(args.suite):
        raise KernelcastError("give either --suite NAME or --kernel FILE.py:FACTORY")
    backend = make_backend(args.backend, args.device, args.build_options or "")
    print(f"measuring on {backend.device.name} ({backend.name}, driver "
          f"{backend.device.driver}) into {args.db}", file=sys.stderr)
    options = {"runs": args.runs, "tolerance": args.tolerance, "verify": not args.no_verify}
    with Store(args.db, backend.identity) as store:
        if args.kernel:
            from kernelcast.kernel import load_factory

            factory = load_factory(args.kernel)
            params = _pairs(args.param, _int, "--param")
            result = measure_kernel(factory, params, backend, store, **options)
        else:
            from kernelcast.suites.paper import get_suite

            result = measure_suite(
                get_suite(args.suite), backend, store, p=_pairs(args.p, _int, "--p"),
                dtypes=args.dtype, group_set=args.group_set,
                classes=args.classes.split(",") if args.classes else None, **options)
    counts = ", ".join(f"{v} {k}" for k, v in sorted(result.statuses.items()))
    print(f"done: {result.measured} measured ({counts or 'none'}), "
          f"{result.skipped} already in {args.db}")
    return 0


def _cmd_demo(args) -> int:
    from kernelcast.properties import extract_properties
    from kernelcast.properties.display import properties_table

    print("kernelcast demo: symbolic properties of the paper's example kernels "
          "(Stevens & Klöckner §3.1, §5)\n")
    for title, knl, params in _demo_cases():
        start = time.perf_counter()
        props = extract_properties(knl)
        elapsed = time.perf_counter() - start
        print(f"== {title} (extracted in {elapsed:.2f} s)")
        print(properties_table(props, params))
        print()
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
                   help="base size exponent of a class (default: chosen as in §4.2)")
    p.add_argument("--classes", help="only these classes, comma-separated")
    p.add_argument("--dtype", nargs="+", action="extend", metavar="DTYPE")
    p.add_argument("--group-set", metavar="SET")
    p.add_argument("--runs", type=int, default=30, help="launches per attempt (paper: 30)")
    p.add_argument("--tolerance", type=float, default=0.10,
                   help="largest median/min - 1 of a stable case")
    p.add_argument("--no-verify", action="store_true",
                   help="skip checking suite kernels against their references")
    p.set_defaults(run=_cmd_measure)

    p = sub.add_parser("demo", help="the main job: properties of the paper's kernels")
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
