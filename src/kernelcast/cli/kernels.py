"""Verbs about kernels and devices: properties, suites, devices."""

from __future__ import annotations

import json
import sys
from collections import Counter

from kernelcast.frontends.arguments import pairs, integer, sizes, statistics


def kernel_properties(spec: str, stat_items):
    """The Properties of the kernel that ``FILE.py:FACTORY`` *spec* makes, with the
    statistics of ``--stat`` (refused where the kernel does not use them)."""
    from kernelcast.frontends.files import load_kernel
    from kernelcast.frontends.loopy import check_statistics
    from kernelcast.properties import extract_properties

    stats = statistics(stat_items)  # malformed --stat before the kernel is made
    knl = load_kernel(spec)
    props = extract_properties(knl, data_statistics=stats)
    check_statistics(knl, stats)
    return props


def properties(args) -> int:
    from kernelcast.properties.display import properties_json, properties_table

    params = sizes(args.param) if args.param else None
    props = kernel_properties(args.kernel, args.stat)
    if args.json:
        json.dump(properties_json(props, params), sys.stdout, indent=2)
        print()
    else:
        print(properties_table(props, params))
    return 0


def suites(args) -> int:
    from kernelcast.suites.paper import get_suite

    suite = get_suite(args.suite)
    cases = suite.cases(pairs(args.p, integer, "--p"), args.dtype, args.group_set)
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


def _cuda_absence(found) -> str | None:
    """Why no CUDA device is listed, or None where one is."""
    import importlib.util

    if any(d.backend == "cuda" for d in found):
        return None
    if importlib.util.find_spec("cupy") is None:
        return "cupy is not installed"
    return "cupy finds no CUDA device or driver"


def _opencl_absence(found) -> str | None:
    import importlib.util

    if any(d.backend == "opencl" for d in found):
        return None
    if importlib.util.find_spec("pyopencl") is None:
        return "pyopencl is not installed"
    return "the OpenCL ICD loader offers no device"


def devices(args) -> int:
    from kernelcast.measure.devices import list_devices

    found = list_devices()
    absent = {backend: why for backend, why in (("opencl", _opencl_absence(found)),
                                               ("cuda", _cuda_absence(found))) if why}
    if args.json:
        json.dump({"devices": [d.as_dict() for d in found],
                   "backends": {b: {"available": b not in absent,
                                    **({"reason": absent[b]} if b in absent else {})}
                                for b in ("opencl", "cuda")}}, sys.stdout, indent=1)
        print()
        return 0
    if found:
        print(f"{'backend':<7} {'kind':<10} {'name':<34} {'platform':<28} {'driver':<14} "
              f"{'CUs':>4} {'MHz':>5} {'memory':>9} {'max group':>9}  instance")
    for d in found:
        print(f"{d.backend:<7} {d.kind:<10} {d.name[:34]:<34} {d.platform[:28]:<28} "
              f"{d.driver[:14]:<14} {d.compute_units:>4} {d.clock_mhz:>5} "
              f"{d.global_mem_bytes / 2**30:>6.1f} GiB {d.max_group_size:>9}  {d.instance}")
    for backend, why in absent.items():
        print(f"{'OpenCL' if backend == 'opencl' else 'CUDA'}: not available ({why})")
    return 0
