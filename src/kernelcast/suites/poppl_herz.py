"""The Pöppl–Herz microbenchmarks: OpenCL C kernels that kernelcast writes, measures and
fits the model's parameters from (the slides' figures: empty kernels, basic operations at
increasing counts and work-item counts, memory accesses of each class, work-group sizes,
host↔device copies).

Every kernel is 1-D, ``i = get_global_id(0)`` over ``n`` work-items, and is timed as
written (``KernelClass.source``); its Loopy stand-in only declares the same arguments and
the launch geometry, so these kernels are not checked against a reference. Classes:

- ``empty``: an empty body, n swept (tBase).
- ``op``: variant ``KIND:TYPE:COUNT``: two coalesced loads, a chain of COUNT operations of
  one kind and type alternating between the two loaded values, one coalesced store; COUNT
  swept at the reference size (W_op), and the fewest and most operations swept over n
  (c_op). (No kernel has zero operations: a compiler drops the second load of such a
  kernel, so it would not be a baseline.) Double precision (``add:double``, ...) is the
  same chain in doubles. A math built-in's chain (KIND ``call.NAME``: ``call.sqrt:float:8``)
  applies the built-in COUNT times to an argument made of the chain's value and the
  step's loaded value (``STEPS``): ``r = sqrt(r + v); r = sqrt(r + u); ...``. The extra
  operation of a step (here one ``add:float``) keeps the compiler from folding the chain
  (as it folds ``fabs(fabs(r))`` and ``fmax(fmax(r, v), r)``) and the argument in range
  (``exp(w - r)`` stays within (0, e^1.5], ``log(fabs(r) + w)`` above 0); the front-end
  counts it and the fit subtracts its price (``EXTRAS``: what each step adds).
- ``access``: variant ``SPACE:DIRECTION:CLASS:COUNT``: COUNT global reads of one class
  (kernelcast.frontends.opencl's classes) summed into one value that is stored, or
  COUNT coalesced stores of constants into as many arrays (no read, no operation).
  ``local:read:coalesced:COUNT``: every work-item stores a constant into each row of a
  ``__local float tile[8][256]`` (``tile[k][l]``, l its local id), a barrier, then COUNT
  rows read at the mirrored position ``tile[k][255 - l]`` (another work-item's element:
  no compiler forwards it) and summed into one stored value; ``local:write:coalesced:COUNT``
  stores COUNT rows, a barrier, one row read back and stored. As for global coalesced
  accesses, COUNT is 1 to 8.
- ``barrier``: variant = COUNT: a local store and a barrier, COUNT times (barriers with
  nothing between them may be merged by a compiler), then one local read stored. The
  stores alternate between two rows of a ``__local`` array: the front-end counts a store
  to the element stored last as ``identical``.
- ``wgsize``: variant = the work-group size, 1 to 1024: one load, one float division, one
  store (the slides' work-group figure).

Operations, accesses and barriers added to the first suite (``ADDED_OPS``,
``LOCAL_ACCESSES``, ``barrier``): ``added(name)`` is the suite of them alone, to measure
them into a store of the others.

Host↔device copies are not kernels: ``measure_transfers`` times them through the OpenCL
backend and stores them as rows of class ``transfer`` (variants ``to`` and ``from``,
params ``{"bytes": ...}``).

Public names: SUITE, SUITE_CPU, Sizes, SIZES, OPS, ADDED_OPS, STEPS, EXTRAS, ACCESSES,
LOCAL_ACCESSES, added, source_of, kernel_name, measure_transfers.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np

from kernelcast.suites.suite import Case, KernelClass, Suite

# (kind, type) of the measured operations; C spelling of each kind.
OPS = (("add", "float"), ("sub", "float"), ("mul", "float"), ("div", "float"),
       ("add", "int"), ("sub", "int"), ("mul", "int"), ("div", "int"), ("mod", "int"),
       ("and", "int"), ("convert", "float"))
_C_OP = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%", "and": "&"}
#: One step of each built-in's chain: r is the chain's value, {w} the step's loaded value
#: (v and u in turn), {f} the suffix of the type's literals. Where r stays, inputs in
#: [0.5, 1.5]: fabs, sqrt, rsqrt, sin, native_sqrt within [0, 2.5]; exp within
#: (0, e^1.5]; log within [-0.7, 1.7]; pow within [0.4, 2], never at w^0 = 1 (its
#: special case); fmax within [0.5, 1.5]; fma within [1, 3].
STEPS = {"fabs": "fabs(r - {w})", "sqrt": "sqrt(r + {w})", "rsqrt": "rsqrt(r + {w})",
         "exp": "exp({w} - r)", "log": "log(fabs(r) + {w})", "sin": "sin(r + {w})",
         "pow": "pow({w}, 1.25{f} - r)", "fmax": "fmax(r - {w}, {w})",
         "fma": "fma(r, 0.5{f}, {w})", "native_exp": "native_exp({w} - r)",
         "native_sqrt": "native_sqrt(r + {w})"}
#: What a step of each chain adds besides its built-in, as the front-end counts it (kinds
#: of the chain's type): the fit subtracts their price.
EXTRAS = {"fabs": ("sub",), "sqrt": ("add",), "rsqrt": ("add",), "exp": ("sub",),
          "log": ("call.fabs", "add"), "sin": ("add",), "pow": ("sub",), "fmax": ("sub",),
          "fma": (), "native_exp": ("sub",), "native_sqrt": ("add",)}
#: Measured since the first suite, in the order they are fitted (a chain after those that
#: price its extra operations): double precision, then the built-ins.
ADDED_OPS = (("add", "double"), ("sub", "double"), ("mul", "double"), ("div", "double"),
             *((f"call.{f}", "float") for f in STEPS),
             ("call.sqrt", "double"), ("call.exp", "double"))
# (space, direction, class) of the measured accesses.
ACCESSES = (("global", "read", "coalesced"), ("global", "read", "constant"),
            ("global", "read", "interval"), ("global", "read", "identical"),
            ("global", "read", "complex"), ("global", "write", "coalesced"))
LOCAL_ACCESSES = (("local", "write", "coalesced"), ("local", "read", "coalesced"))
READ_ARRAYS = 8  # distinct input arrays of the coalesced-read benchmark (local: rows)


@dataclass(frozen=True)
class Sizes:
    """Where a device's microbenchmarks run: the reference work-item count, the swept
    counts, the op counts and access counts, and the copy sizes in bytes."""

    reference: int
    sweep: tuple[int, ...]
    empty: tuple[int, ...]
    op_counts: tuple[int, ...]
    access_counts: tuple[int, ...]
    copies: tuple[int, ...]


SIZES = {
    "poppl-herz": Sizes(2**22, tuple(2**k for k in (16, 18, 20, 22, 24)),
                        tuple(2**k for k in range(10, 25, 2)),
                        (1, 2, 4, 8, 16, 32, 64, 128), (1, 2, 4, 8, 16, 32),
                        tuple(2**k for k in range(12, 29, 2))),
    "poppl-herz-cpu": Sizes(2**16, tuple(2**k for k in (12, 14, 16, 18)),
                            tuple(2**k for k in range(8, 19, 2)),
                            (1, 2, 4, 8, 16, 32, 64), (1, 2, 4, 8, 16, 32),
                            tuple(2**k for k in range(12, 27, 2))),
}
GROUP = 256
WG_SIZES = tuple(range(1, 65)) + tuple(range(80, 1025, 16))


def _ctype(t: str) -> str:
    return {"float": "float", "int": "int", "double": "double"}[t]


def _op_source(name: str, kind: str, typ: str, count: int) -> str:
    ctype = "float" if kind == "convert" else _ctype(typ)
    suffix = "f" if ctype == "float" else ""
    lines = [f"    {ctype} u = a[i];", f"    {ctype} v = b[i];", f"    {ctype} r = u;"]
    for k in range(count):
        operand = "v" if k % 2 == 0 else "u"
        if kind == "convert":  # float -> int -> float: two conversions a step
            lines.append("    r = (float)(int)r;")
        elif kind.startswith("call."):
            lines.append(f"    r = {STEPS[kind[5:]].format(w=operand, f=suffix)};")
        else:
            lines.append(f"    r = r {_C_OP[kind]} {operand};")
    body = "\n".join(lines)
    pragma = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if ctype == "double" else ""
    return (f"{pragma}__kernel void {name}(__global const {ctype} *restrict a,\n"
            f"    __global const {ctype} *restrict b, __global {ctype} *restrict res,\n"
            f"    const int n)\n{{\n    int i = get_global_id(0);\n{body}\n"
            f"    res[i] = r;\n}}\n")


def _read(cls: str, k: int) -> str:
    if cls == "coalesced":
        return f"a{k}[i]"
    if cls == "constant":
        return f"a0[{k}]"
    if cls == "interval":
        return f"a0[(i + {k}) & 0x7F]"
    if cls == "identical":
        return "a0[i]"
    return f"a0[(i * 32 + {k}) & (n - 1)]"  # complex: a stride of 32 elements


def _local_source(name: str, direction: str, count: int) -> str:
    """Stores into rows of a __local array (all of them before COUNT reads, or COUNT),
    a barrier, reads of the mirrored element (COUNT, or one), their sum stored."""
    rows = READ_ARRAYS if direction == "read" else count
    reads = count if direction == "read" else 1
    stores = "".join(f"    tile[{k}][l] = {k + 1}.5f;\n" for k in range(rows))
    total = " + ".join(f"tile[{k}][m]" for k in range(reads))
    return (f"__kernel void {name}(__global float *restrict res, const int n)\n{{\n"
            f"    __local float tile[{READ_ARRAYS}][{GROUP}];\n"
            f"    int i = get_global_id(0);\n    int l = get_local_id(0);\n"
            f"    int m = {GROUP - 1} - l;\n{stores}    barrier(CLK_LOCAL_MEM_FENCE);\n"
            f"    float r = {total};\n    res[i] = r;\n}}\n")


def _barrier_source(name: str, count: int) -> str:
    steps = "".join(f"    tile[{k % 2}][l] = {k + 1}.5f;\n    barrier(CLK_LOCAL_MEM_FENCE);\n"
                    for k in range(count))
    return (f"__kernel void {name}(__global float *restrict res, const int n)\n{{\n"
            f"    __local float tile[2][{GROUP}];\n"
            f"    int i = get_global_id(0);\n    int l = get_local_id(0);\n"
            f"    int m = {GROUP - 1} - l;\n{steps}"
            f"    res[i] = tile[{(count - 1) % 2}][m];\n}}\n")


def _access_source(name: str, direction: str, cls: str, count: int) -> str:
    inputs = READ_ARRAYS if cls == "coalesced" else 1
    params = [f"__global const float *restrict a{k}" for k in range(inputs)]
    if direction == "write":  # constants stored: no read, no operation
        params = [f"__global float *restrict res{k}" for k in range(READ_ARRAYS)]
        body = "\n".join(f"    res{k}[i] = {k + 1}.5f;" for k in range(count))
    else:
        params.append("__global float *restrict res")
        reads = " + ".join(_read(cls, k) for k in range(count))
        body = f"    float r = {reads};\n    res[i] = r;"
    return (f"__kernel void {name}({', '.join(params)}, const int n)\n{{\n"
            f"    int i = get_global_id(0);\n{body}\n}}\n")


def _names(cls: str, variant: str) -> list[tuple[str, np.dtype, bool]]:
    """The stand-in's arrays (name, dtype, written), in the source's order."""
    f32 = np.dtype(np.float32)
    if cls in ("empty", "barrier") or variant.startswith("local:"):
        return [("res", f32, True)]
    if cls == "wgsize":
        return [("a", f32, False), ("res", f32, True)]
    if cls == "op":
        kind, typ, _ = variant.split(":")
        dtype = np.dtype(np.int32) if typ == "int" and kind != "convert" else f32
        dtype = np.dtype(np.float64) if typ == "double" else dtype
        return [("a", dtype, False), ("b", dtype, False), ("res", dtype, True)]
    _, direction, acls, _ = variant.split(":")
    if direction == "write":
        return [(f"res{k}", f32, True) for k in range(READ_ARRAYS)]
    inputs = READ_ARRAYS if acls == "coalesced" else 1
    return [(f"a{k}", f32, False) for k in range(inputs)] + [("res", f32, True)]


def kernel_name(case: Case) -> str:
    """``ph_CLASS_VARIANT`` with ':' and '.' as '_' (``ph_op_call_sqrt_float_8``)."""
    parts = [case.class_name] + (case.variant.split(":") if case.variant else [])
    return ("ph_" + "_".join(parts)).replace(".", "_")


def source_of(case: Case) -> str:
    """The OpenCL C source of a microbenchmark case."""
    name, cls = kernel_name(case), case.class_name
    if cls == "empty":
        return f"__kernel void {name}(__global float *restrict res, const int n)\n{{\n}}\n"
    if cls == "wgsize":
        return (f"__kernel void {name}(__global const float *restrict a,\n"
                f"    __global float *restrict res, const int n)\n{{\n"
                f"    int i = get_global_id(0);\n    res[i] = 1.5f / a[i];\n}}\n")
    if cls == "op":
        kind, typ, count = case.variant.split(":")
        return _op_source(name, kind, typ, int(count))
    if cls == "barrier":
        return _barrier_source(name, int(case.variant))
    space, direction, acls, count = case.variant.split(":")
    if space == "local":
        return _local_source(name, direction, int(count))
    return _access_source(name, direction, acls, int(count))


def _stand_in(case: Case):
    """A Loopy kernel with the source's arguments and launch geometry."""
    import loopy as lp

    g = case.group_size[0]
    arrays = _names(case.class_name, case.variant)
    args = [lp.GlobalArg(a, dtype, shape=("n",)) for a, dtype, _ in arrays]
    args.append(lp.ValueArg("n", np.int32))
    out = next(a for a, _, written in arrays if written)
    knl = lp.make_kernel("{[i]: 0 <= i < n}", f"{out}[i] = 0", args,
                         name=kernel_name(case), assumptions=f"n >= {g} and n mod {g} = 0",
                         lang_version=(2018, 2))
    return lp.split_iname(knl, "i", g, outer_tag="g.0", inner_tag="l.0")


def transfer_sizes(variant: str, p: int, group) -> list[dict]:
    """No case to launch: copies are timed by measure_transfers."""
    return []


def _sizes_for(sizes: Sizes, cls: str):
    def sizes_of(variant: str, p: int, group) -> list[dict]:
        if cls == "empty":
            return [{"n": n} for n in sizes.empty]
        if cls == "wgsize":
            g = group[0]
            return [{"n": g * max(1, round(sizes.reference / g))}]
        if cls in ("access", "barrier"):
            return [{"n": sizes.reference}]
        count = int(variant.rsplit(":", 1)[1])
        points = [{"n": sizes.reference}]
        if count in (sizes.op_counts[0], sizes.op_counts[-1]):
            points += [{"n": n} for n in sizes.sweep if n != sizes.reference]
        return points
    return sizes_of


def _variants(sizes: Sizes, ops, accesses) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The op and access variants of *ops* and *accesses* at *sizes*' counts."""
    return (tuple(f"{k}:{t}:{c}" for k, t in ops for c in sizes.op_counts),
            tuple(f"{s}:{d}:{c}:{n}" for s, d, c in accesses for n in sizes.access_counts
                  if n <= READ_ARRAYS or (d, c) not in (("read", "coalesced"),
                                                        ("write", "coalesced"))))


def _suite(name: str) -> Suite:
    sizes = SIZES[name]
    op_variants, access_variants = _variants(sizes, OPS + ADDED_OPS,
                                             ACCESSES + LOCAL_ACCESSES)
    common = dict(section="Pöppl–Herz", build=_stand_in, p_choices=(0,), dtypes=(),
                  source=source_of)
    extra = functools.partial(measure_transfers, copies=sizes.copies, suite=name)
    return Suite(name, (
        KernelClass("empty", variants=("",), sizes=_sizes_for(sizes, "empty"),
                    group_sizes=((GROUP, 1),), **common),
        KernelClass("op", variants=op_variants, sizes=_sizes_for(sizes, "op"),
                    group_sizes=((GROUP, 1),), **common),
        KernelClass("access", variants=access_variants, sizes=_sizes_for(sizes, "access"),
                    group_sizes=((GROUP, 1),), **common),
        KernelClass("barrier", variants=tuple(str(n) for n in sizes.access_counts),
                    sizes=_sizes_for(sizes, "barrier"), group_sizes=((GROUP, 1),), **common),
        KernelClass("transfer", variants=("to", "from"), sizes=transfer_sizes,
                    group_sizes=((1, 1),), **common),
        KernelClass("wgsize", variants=("",), sizes=_sizes_for(sizes, "wgsize"),
                    group_sizes=tuple((g, 1) for g in WG_SIZES), **common),
    ), measure_extra=extra)


def added(name: str) -> Suite:
    """The microbenchmarks of the suite *name* added since its first version (ADDED_OPS,
    LOCAL_ACCESSES, barriers) and nothing else (no copies): measured into a store of the
    others, they complete it. Rows keep the suite's name."""
    suite = {s.name: s for s in (SUITE, SUITE_CPU)}[name]
    ops, accesses = _variants(SIZES[name], ADDED_OPS, LOCAL_ACCESSES)
    return Suite(name, (replace(suite.kernel_class("op"), variants=ops),
                        replace(suite.kernel_class("access"), variants=accesses),
                        suite.kernel_class("barrier")))




# {{{ host <-> device copies

def measure_transfers(backend, store, copies: tuple[int, ...], *, suite: str = "poppl-herz",
                      runs: int = 30, drop: int = 4, progress=None) -> int:
    """Time copies of each size in *copies* (bytes) to and from the device of *backend*
    (an OpenCL backend) by the timing protocol, into *store* as rows of *suite*, class
    "transfer"; rows already stored are skipped. Rows added."""
    from kernelcast.errors import KernelcastError, UsageError
    from kernelcast.measure.campaign import failure_fields
    from kernelcast.measure.store import measurement_key
    from kernelcast.version import __version__

    if backend.name != "opencl":
        raise UsageError("the Pöppl–Herz copies are timed through OpenCL (--backend opencl)")
    done, added = store.keys(), 0
    for direction in ("to", "from"):
        for nbytes in copies:
            name = f"transfer[{direction}]/bytes={nbytes}"
            params = {"bytes": nbytes}
            key = measurement_key(name, None, "", params, backend.identity, __version__)
            if key in done:
                continue
            row = {"key": key, "case_name": name, "suite": suite,
                   "kernel_class": "transfer", "variant": direction, "params": params,
                   "group_size": [1, 1], "p": 0, "t": 0, "dtype": None,
                   "kernelcast_version": __version__, "code_sha256": None,
                   "build_options": ""}
            try:
                timing = backend.time_copies(nbytes, direction, runs=runs, drop=drop)
                row.update(status=timing.status, min_s=timing.min, median_s=timing.median,
                           times_s=list(timing.times), dropped=timing.drop,
                           attempts=timing.attempts, spreads=list(timing.spreads))
            except KernelcastError as err:
                row.update(failure_fields(err))
            if store.add(row) is not None:
                added += 1
                if progress is not None:
                    what = (f"min {row['min_s'] * 1e6:.1f} µs" if row.get("min_s")
                            else row["status"])
                    print(f"{name}: {what}", file=progress, flush=True)
    return added

# }}}


SUITE = _suite("poppl-herz")
SUITE_CPU = _suite("poppl-herz-cpu")
