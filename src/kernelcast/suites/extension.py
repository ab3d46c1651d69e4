"""Microbenchmarks that extend the measurement suite for kernelcast's extended model.

The paper's measurement kernels all run with far more work-items than a GPU holds at once,
and none reads the same global data from several work-items. Kernels that users write
often do both: few, long-running work-items (reductions, products with one output per
work-item) and neighbouring work-items sharing data through the caches (stencils). These
two classes measure exactly those behaviours, so that the extended model's parallelism and
data-volume terms (kernelcast.models.extended.features) have measurements to be fitted from:

- ``parallelism``: n work-items each run a loop of m steps, with n swept from one
  work-group to a few hundred thousand work-items at several loop lengths. Variants:
  ``columns`` (two coalesced streams, a[k, i]·b[k, i]), ``rows`` (two streams read along
  each work-item's own row, a[i, k]·b[i, k]) and ``local`` (a vector staged through
  local memory in group-sized tiles and read by every work-item).
- ``reuse``: a sliding-window sum of r neighbours, out[i] = Σ_{j<r} a[i+j], for r from 1
  to 27: the loads grow with r while the data moved from memory does not.

- ``local_reads``: each work-item stores one value into a group-sized local tile and
  then sums r values of it (r from 4 to 256, at most the group size g), read ``spread``
  over the banks
  (tile[(lid + k) mod g]), as a ``broadcast`` (tile[k]) or with two-way bank conflicts
  (``stride2``: tile[(2·lid + k) mod g]). In the paper's suite every
  local-memory kernel reads two local values per multiply-add and a fixed number per
  stored value, so the fit cannot tell local loads from flops or local stores apart.
- ``chain``: each work-item runs one dependent chain of m steps, so that a step must
  wait for the one before: ``fma`` (x = x·c + d), ``special`` (x = rsqrt(x) + c),
  ``local`` (an index chased through a local tile) and ``global`` (an index chased
  through a global array of N = 2^26 elements, five or more times the L2 caches of
  today's GPUs). With few
  work-items these kernels take their operations' latencies, not their throughputs;
  ``global`` is also the pointer-chasing microbenchmark of the Hong–Kim model.
- ``guarded``: each work-item sums m values, each step under a condition on the step
  (``if (k != lid) acc += v``, the "skip myself" of pairwise kernels): ``local``
  (v = tile[(lid + k) mod g]), ``special`` (v = rsqrt of that) and ``global``
  (v = a[k, lid], coalesced, from a table of m×g values that stays in L2), and ``poly4``
  and ``poly16`` (v = a degree-4 or -16 polynomial of the tile value, Horner, as in
  ``intensity``), and ``tiled16`` (``poly16`` with k = g·ko + ki and the tile value read
  as tile[lid + ki] from a tile that holds the group's values twice: the same values,
  through an index affine in the unrolled ki instead of a mask computed anew in every
  step). Only the add carries a step to the next; the condition, a branch in
  every iteration, keeps the compiler from loading ahead, so a step also waits for its
  own load, rsqrt and polynomial (kernelcast.properties.recurrence).

- ``intensity``: few to some work-groups, each work-item summing m values through a
  polynomial of degree d (Horner: 2d + 1 flops per value), the values read from a local tile
  (``local1``, ``local4``, ``local16``) or a coalesced global table (``global1`` …).
  Everywhere else in the fitting suites a work-item that runs long does one or two flops
  per load, so its loads and its flops cannot be told apart; here the ratio goes from 3
  to 33. Only the add to the sum carries a step to the next.

- ``halo``: a cross of 2r + 1 values in each direction summed from a tile of the
  work-group's (gy + 2r) × (gx + 2r) block, prefetched into local memory with its halo
  (out[i, j] = Σ_k u[i+k, j+r] + u[i+r, j+k]), for r = 2, 3, 4, 8 and group shapes
  32 × 8 and 64 × 4. A tile larger than its work-group makes Loopy's fetch loop run once
  or twice (up to five times) depending on the work-item, and NVIDIA's compilers leave
  each such iteration in its own branch, so a work-item's loads of the tile wait for one
  another (kernelcast.properties.recurrence.varying_loops). From one work-group to
  millions, from L2 to DRAM.

They were written after the validation and test kernels had shown these behaviours; no
validation or test kernel is among them, and they are never evaluated on
(docs/suites.md).

The 1-D classes were measured with work-groups of GROUP_SIZE = 256 work-items, the halo
class with 32 × 8 and 64 × 4. The generators, the NumPy references and the size rules all
take the group size (g) from the case, so a case built with another group size is sized
and checked for that size; the kernels that index a tile through a mask (lid + k) & (g − 1)
(``local_reads``, ``chain``'s ``local``, ``guarded``'s tile variants, ``intensity``'s
``local`` ones) need g to be a power of two.

Public names: EXTENSION, parallelism, reuse, local_reads, chain, guarded, intensity, halo.
"""

from __future__ import annotations

import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from loopy.symbolic import TypeCast, parse

from kernelcast.suites.kernels import literal, make_kernel, split_1d, split_2d
from kernelcast.suites.suite import KernelClass, Suite, one_d

PARALLELISM_VARIANTS = ("columns", "rows", "local")
REUSE_WINDOWS = (1, 3, 9, 27)
LOCAL_READS_VARIANTS = ("spread", "broadcast", "stride2")
LOCAL_READS_COUNTS = (4, 16, 64, 256)
CHAIN_VARIANTS = ("fma", "special", "local", "global")
CHAIN_ARRAY = 2 ** 26  # elements of the array ``global`` chases through: 256 MiB or more
CHAIN_STEP = 4099  # elements between successive addresses of ``global``: a new line each
GUARDED_VARIANTS = ("local", "special", "global", "poly4", "poly16", "tiled16")
INTENSITY_DEGREES = (1, 4, 16)
_INTENSITY = {f"{source}{d}": (source, d) for source in ("local", "global")
              for d in INTENSITY_DEGREES}  # variant -> (where values come from, degree)
INTENSITY_VARIANTS = tuple(_INTENSITY)
INTENSITY_COEFFICIENT = 0.25  # of every Horner step: p = p·v + c, from p = c
HALO_RADII = (2, 3, 4, 8)
HALO_VARIANTS = tuple(f"r{r}" for r in HALO_RADII)
MAX_ELEMENTS = 2 ** 26  # largest n·m of the parallelism class (512 MiB per float64 array)
GROUP_SIZE = 256  # work-items per group of the 1-D classes, as measured
CHAIN_STEPS = 2 ** 27  # most work-items × steps of a chain or guarded case
INTENSITY_VALUES = 2 ** 25  # most work-items × values of an intensity case


def parallelism(variant: str, gsize=GROUP_SIZE, dtype=np.float32):
    """n work-items, each reducing m terms (see the module docstring for the variants)."""
    if variant == "columns":
        knl = make_kernel("{[i,k]: 0<=i<n and 0<=k<m}", "out[i] = sum(k, a[k,i]*b[k,i])",
                    [lp.GlobalArg("a, b", dtype, shape=("m", "n")),
                     lp.GlobalArg("out", dtype, shape="n"), "..."],
                    name="parallelism_columns", assumptions="n, m >= 1")
        return split_1d(knl, "i", gsize)
    if variant == "rows":
        knl = make_kernel("{[i,k]: 0<=i<n and 0<=k<m}", "out[i] = sum(k, a[i,k]*b[i,k])",
                    [lp.GlobalArg("a, b", dtype, shape=("n", "m")),
                     lp.GlobalArg("out", dtype, shape="n"), "..."],
                    name="parallelism_rows", assumptions="n, m >= 1")
        return split_1d(knl, "i", gsize)
    if variant == "local":
        gsize = int(gsize)
        knl = make_kernel("{[i,k]: 0<=i<n and 0<=k<m}", "out[i] = a[i]*sum(k, x[k]*x[k])",
                    [lp.GlobalArg("a, out", dtype, shape="n"),
                     lp.GlobalArg("x", dtype, shape="m"), "..."],
                    name="parallelism_local",
                    assumptions=f"n >= 1 and m >= 1 and m mod {gsize} = 0")
        knl = split_1d(knl, "i", gsize)
        knl = lp.split_iname(knl, "k", gsize)
        knl = lp.add_prefetch(knl, "x", ["k_inner"],
                              fetch_outer_inames=frozenset(["i_outer", "k_outer"]),
                              default_tag="l.0")
        return knl
    raise ValueError(f"unknown parallelism variant {variant!r}; known: {PARALLELISM_VARIANTS}")


def reuse(gsize=GROUP_SIZE, dtype=np.float32):
    """out[i] = Σ_{j<r} a[i+j]: r loads per work-item, neighbours share all but one."""
    knl = make_kernel("{[i,j]: 0<=i<n and 0<=j<r}", "out[i] = sum(j, a[i+j])",
                [lp.GlobalArg("a", dtype, shape="n+r"), lp.GlobalArg("out", dtype, shape="n"),
                 "..."],
                name="reuse", assumptions="n >= 1 and r >= 1")
    return split_1d(knl, "i", gsize)


def _power_of_two(gsize) -> int:
    """*gsize* as an int, refused unless a power of two: the kernels that wrap an index
    into a group-sized tile do so with a mask, (lid + k) & (g - 1)."""
    g = int(gsize)
    if g < 1 or g & (g - 1):
        raise ValueError(f"this kernel needs a power-of-two group size, not {g}")
    return g


def _groups_of(gsize: int, extent: str) -> str:
    """The domain of ng explicit work-groups (go) of gsize work-items (li), each running a
    loop k of *extent* steps."""
    return f"{{[go, li, k]: 0<=go<ng and 0<=li<{gsize} and 0<=k<{extent}}}"


def local_reads(variant: str, gsize=GROUP_SIZE, dtype=np.float32):
    """out[i] = Σ_{k<r} tile[...]: one local store and r local loads per work-item."""
    g = _power_of_two(gsize)
    if variant not in LOCAL_READS_VARIANTS:
        raise ValueError(f"unknown local_reads variant {variant!r}; known: "
                         f"{LOCAL_READS_VARIANTS}")
    index = {"spread": f"(li + k) & {g - 1}", "broadcast": "k",
             "stride2": f"(2*li + k) & {g - 1}"}[variant]
    knl = make_kernel(_groups_of(g, "r"),
                [f"tile[li] = a[{g}*go + li] {{id=fill}}",
                 f"out[{g}*go + li] = sum(k, tile[{index}]) {{dep=fill}}"],
                [lp.GlobalArg("a, out", dtype, shape=(f"{g}*ng",)),
                 lp.TemporaryVariable("tile", dtype, shape=(g,),
                                      address_space=lp.AddressSpace.LOCAL), "..."],
                name=f"local_reads_{variant}",
                assumptions=f"ng >= 1 and r >= 1 and r <= {g}")
    return lp.tag_inames(knl, {"go": "g.0", "li": "l.0"})


def chain(variant: str, gsize=GROUP_SIZE, dtype=np.float32):
    """Each work-item runs a dependent chain of m steps (see the module docstring)."""
    g = _power_of_two(gsize) if variant == "local" else int(gsize)
    c = lambda v: literal(v, dtype)  # noqa: E731
    item = f"{g}*go + li"
    args = [lp.GlobalArg("out", dtype, shape=(f"{g}*ng",))]
    if variant in ("fma", "special"):
        step = (f"x = x*{c(0.999)} + {c(0.001)}" if variant == "fma"
                else f"x = rsqrt(x) + {c(0.5)}")
        instructions = [f"<> x = a[{item}] {{id=init}}",
                        f"{step} {{id=step, dep=init, inames=go:li:k}}",
                        f"out[{item}] = x {{dep=step}}"]
        args.append(lp.GlobalArg("a", dtype, shape=(f"{g}*ng",)))
    elif variant in ("local", "global"):
        # the next index depends on the value just loaded (0 or 1 as an integer: inputs
        # lie in [0.5, 1.5)), so each load waits for the one before
        j = prim.Variable("j")
        if variant == "local":
            loaded, stride, size = prim.Variable("tile"), 32, g  # one bank per work-item
            start, fill = "li", [f"tile[li] = a[{item}] {{id=fill}}"]
            args += [lp.TemporaryVariable("tile", dtype, shape=(g,),
                                          address_space=lp.AddressSpace.LOCAL),
                     lp.GlobalArg("a", dtype, shape=(f"{g}*ng",))]
        else:
            # work-items start 64 elements apart: no two share a line of the first step
            loaded, stride, size = prim.Variable("a"), CHAIN_STEP, prim.Variable("N")
            start, fill = f"64*({item})", []
            args += [lp.GlobalArg("a", dtype, shape=("N",)), lp.ValueArg("N", np.int32)]
        advance = prim.BitwiseAnd((j + stride + stride * TypeCast(np.dtype(np.int32),
                                                                  loaded[j]),
                                   size - 1))
        instructions = [*fill,
                        f"<int32> j = ({start}) & ({size} - 1) {{id=init, inames=go:li}}",
                        lp.Assignment(j, advance, id="step",
                                      depends_on=frozenset({"init", *(["fill"] if fill
                                                                      else [])}),
                                      within_inames=frozenset({"go", "li", "k"})),
                        f"out[{item}] = j {{dep=step}}"]
    else:
        raise ValueError(f"unknown chain variant {variant!r}; known: {CHAIN_VARIANTS}")
    domain = _groups_of(g, "m")
    if variant == "global":  # N sizes only the array: name it as a parameter of the domain
        domain = "[N, m, ng] -> " + domain
    knl = make_kernel(domain, instructions, [*args, "..."], name=f"chain_{variant}",
                assumptions="ng >= 1 and m >= 1" + (" and N >= 1" if variant == "global" else ""))
    return lp.tag_inames(knl, {"go": "g.0", "li": "l.0"})


def guarded(variant: str, gsize=GROUP_SIZE, dtype=np.float32):
    """Each work-item sums m values, each step under the condition k ≠ lid (see the module
    docstring)."""
    if variant not in GUARDED_VARIANTS:
        raise ValueError(f"unknown guarded variant {variant!r}; known: {GUARDED_VARIANTS}")
    tiled = variant.startswith("tiled")
    g = int(gsize) if tiled or variant == "global" else _power_of_two(gsize)
    item = f"{g}*go + li"
    steps = ("ko", "ki") if tiled else ("k",)
    k = prim.Variable("ko") * g + prim.Variable("ki") if tiled else prim.Variable("k")
    li, acc = prim.Variable("li"), prim.Variable("acc")
    in_step = {"within_inames": frozenset({"go", "li", *steps}),
               "predicates": frozenset({prim.Comparison(k, "!=", li)})}
    loads = []
    if variant == "global":
        value, fill = "a[k, li]", []
        args = [lp.GlobalArg("a", dtype, shape=("m", g))]
    elif tiled:  # the same values as tile[(li + k) & (g - 1)], through an affine index
        value = "tile[li + ki]"
        fill = [f"tile[li] = a[{item}] {{id=fill}}",
                f"tile[{g} + li] = a[{item}] {{id=fill2}}"]
        args = [lp.TemporaryVariable("tile", dtype, shape=(2 * g,),
                                     address_space=lp.AddressSpace.LOCAL),
                lp.GlobalArg("a", dtype, shape=(f"{g}*ng",))]
    else:
        value = f"tile[(li + k) & {g - 1}]"
        fill = [f"tile[li] = a[{item}] {{id=fill}}"]
        args = [lp.TemporaryVariable("tile", dtype, shape=(g,),
                                     address_space=lp.AddressSpace.LOCAL),
                lp.GlobalArg("a", dtype, shape=(f"{g}*ng",))]
    if variant == "special":
        value = f"rsqrt({value})"
    elif variant.startswith(("poly", "tiled")):  # the load under the condition, per step
        args.append(lp.TemporaryVariable("v", dtype, address_space=lp.AddressSpace.PRIVATE))
        loads = [lp.Assignment(prim.Variable("v"), parse(value), id="load",
                               depends_on=frozenset({"fill", "fill2"} if tiled
                                                    else {"fill"}), **in_step)]
        value = _horner("v", _degree(variant), dtype)
    step = lp.Assignment(acc, acc + parse(value), id="step",
                         depends_on=frozenset({"init", *(["fill"] if fill else []),
                                               *(["load"] if loads else [])}),
                         **in_step)
    instructions = [*fill, *loads, f"<> acc = {literal(0, dtype)} {{id=init, inames=go:li}}",
                    step, f"out[{item}] = acc {{dep=step}}"]
    domain = (f"{{[go, li, ko, ki]: 0<=go<ng and 0<=li<{g} and ko>=0 and 0<=ki<{g} and "
              f"{g}*ko + ki < m}}" if tiled else _groups_of(g, "m"))
    knl = make_kernel(domain, instructions,
                [lp.GlobalArg("out", dtype, shape=(f"{g}*ng",)), *args, "..."],
                name=f"guarded_{variant}", assumptions="ng >= 1 and m >= 1")
    if tiled:
        knl = lp.prioritize_loops(knl, "ko,ki")
    return lp.tag_inames(knl, {"go": "g.0", "li": "l.0"})


def _degree(variant: str) -> int:
    """The polynomial degree of a ``guarded`` variant: poly4 → 4, tiled16 → 16."""
    return int(variant.removeprefix("poly").removeprefix("tiled"))


def _horner(value: str, degree: int, dtype) -> str:
    c = literal(INTENSITY_COEFFICIENT, dtype)
    poly = c
    for _ in range(degree):
        poly = f"({poly})*{value} + {c}"
    return poly


def intensity(variant: str, gsize=GROUP_SIZE, dtype=np.float32):
    """Each work-item sums a degree-d polynomial of m values (see the module docstring)."""
    g = int(gsize)
    if variant not in INTENSITY_VARIANTS:
        raise ValueError(f"unknown intensity variant {variant!r}; known: "
                         f"{INTENSITY_VARIANTS}")
    source, degree = _INTENSITY[variant]
    if source == "local":
        g = _power_of_two(g)
    item = f"{g}*go + li"
    if source == "local":
        fill = [f"tile[li] = a[{item}] {{id=fill}}"]
        load = f"<> v = tile[(li + k) & {g - 1}] {{id=load, dep=fill, inames=go:li:k}}"
        args = [lp.TemporaryVariable("tile", dtype, shape=(g,),
                                     address_space=lp.AddressSpace.LOCAL),
                lp.GlobalArg("a", dtype, shape=(f"{g}*ng",))]
    else:
        fill, load = [], "<> v = a[k, li] {id=load, inames=go:li:k}"
        args = [lp.GlobalArg("a", dtype, shape=("m", g))]
    instructions = [*fill, load, f"<> acc = {literal(0, dtype)} {{id=init, inames=go:li}}",
                    f"acc = acc + {_horner('v', degree, dtype)} "
                    "{id=step, dep=init:load, inames=go:li:k}",
                    f"out[{item}] = acc {{dep=step}}"]
    knl = make_kernel(_groups_of(g, "m"), instructions,
                [lp.GlobalArg("out", dtype, shape=(f"{g}*ng",)), *args, "..."],
                name=f"intensity_{variant}", assumptions="ng >= 1 and m >= 1")
    return lp.tag_inames(knl, {"go": "g.0", "li": "l.0"})


def halo(variant: str, gsize=(32, 8), dtype=np.float32):
    """out[i, j] = Σ_{k ≤ 2r} u[i+k, j+r] + u[i+r, j+k] through a local tile with halo."""
    if variant not in HALO_VARIANTS:
        raise ValueError(f"unknown halo variant {variant!r}; known: {HALO_VARIANTS}")
    r = int(variant[1:])
    knl = make_kernel(f"{{[i,j,k]: 0<=i,j<n and 0<=k<={2 * r}}}",
                f"out[i, j] = sum(k, u[i+k, j+{r}] + u[i+{r}, j+k])",
                [lp.GlobalArg("u", dtype, shape=(f"n+{2 * r}", f"n+{2 * r}")),
                 lp.GlobalArg("out", dtype, shape=("n", "n")), "..."],
                name=f"halo_{variant}", assumptions="n >= 1")
    knl = split_2d(knl, "i", "j", gsize)
    return lp.add_prefetch(knl, "u", ["i_inner", "j_inner", "k"], fetch_bounding_box=True,
                           default_tag="l.auto")


def _dtype(case):
    return np.dtype(case.dtype).type


_GROUP = (GROUP_SIZE, 1)


def _parallelism_sizes(variant, p, group):
    """n = 2^(p+2t) work-items for t = 0..5, loops of m = 2^8, 2^11, 2^14, n·m ≤ 2^26
    (for ``local``, only the m that are multiples of the group size g: x is staged through
    local memory in tiles of g)."""
    g = group[0]
    return [{"n": 2 ** (p + 2 * t), "m": 2 ** q} for t in range(6) for q in (8, 11, 14)
            if 2 ** (p + 2 * t + q) <= MAX_ELEMENTS
            and (variant != "local" or 2 ** q % g == 0)]


def _reuse_sizes(variant, p, group):
    return [{"n": 2 ** (p + 2 * t), "r": r} for t in range(4) for r in REUSE_WINDOWS]


def _local_reads_sizes(variant, p, group):
    """n = 2^(p+2t) work-items, t = 0..2, in ng = n/g groups of g, each work-item reading
    r = 4 to 256 local values, r ≤ g."""
    g = group[0]
    return [{"ng": max(1, 2 ** (p + 2 * t) // g), "r": r} for t in range(3)
            for r in LOCAL_READS_COUNTS if r <= g]


def _chain_sizes(variant, p, group):
    """ng = 2^(p+3t) work-groups of g, t = 0..3, chains of m = 2^6, 2^9, 2^12 steps,
    at most CHAIN_STEPS = 2^27 steps in all."""
    g = group[0]
    array = {"N": CHAIN_ARRAY} if variant == "global" else {}
    return [{"ng": 2 ** (p + 3 * t), "m": 2 ** q, **array} for t in range(4)
            for q in (6, 9, 12) if 2 ** (p + 3 * t + q) * g <= CHAIN_STEPS]


def _guarded_sizes(variant, p, group):
    """As the chain class: ng = 2^(p+3t) work-groups, m = 2^6, 2^9, 2^12 steps."""
    return _chain_sizes("", p, group)


def _intensity_sizes(variant, p, group):
    """As the chain class, with at most INTENSITY_VALUES = 2^25 values in all (2^29 flops
    at degree 16)."""
    return [s for s in _chain_sizes("", p, group)
            if s["ng"] * group[0] * s["m"] <= INTENSITY_VALUES]


def _halo_sizes(variant, p, group):
    """n × n outputs, n = 2^(p+2t), t = 0..4: a few work-groups to far beyond L2."""
    return [{"n": 2 ** (p + 2 * t)} for t in range(5)]


def _ref_halo(case, args):
    u, n = args["u"], args["n"]
    r = int(case.variant[1:])
    return {"out": sum(u[k:k + n, r:r + n] + u[r:r + n, k:k + n] for k in range(2 * r + 1))}


def _ref_local_reads(case, args):
    a, r, g = args["a"], args["r"], case.group_size[0]
    tiles = a.reshape(-1, g)
    lanes = np.arange(g)
    if case.variant == "spread":
        picks = [(lanes + k) % g for k in range(r)]
    elif case.variant == "stride2":
        picks = [(2 * lanes + k) % g for k in range(r)]
    else:
        picks = [np.full(g, k) for k in range(r)]
    return {"out": sum(tiles[:, pick] for pick in picks).reshape(-1)}


def _ref_chain(case, args):
    a, m, g = args["a"], args["m"], case.group_size[0]
    one = a.dtype.type
    if case.variant in ("fma", "special"):
        x = a.copy()
        for _ in range(m):
            x = x * one(0.999) + one(0.001) if case.variant == "fma" else (
                one(1) / np.sqrt(x) + one(0.5))
        return {"out": x}
    items = np.arange(a.shape[0] if case.variant == "local" else g * args["ng"])
    if case.variant == "local":
        j, stride, size = items % g, 32, g
        lookup = a.reshape(-1, g)[items // g]
        value = lambda j: lookup[np.arange(len(items)), j]  # noqa: E731
    else:
        j, stride, size = (64 * items) % args["N"], CHAIN_STEP, args["N"]
        value = lambda j: a[j]  # noqa: E731
    for _ in range(m):
        j = (j + stride + stride * value(j).astype(np.int32)) & (size - 1)
    return {"out": j.astype(a.dtype)}


def _step_values(args, from_global: bool, g: int):
    """work-item × step: a[k, lid] of the m×g table, or tile[(lid + k) mod g] of the
    work-item's group of g."""
    a, m = args["a"], args["m"]
    if from_global:
        return np.tile(a.T, (args["ng"], 1))
    lanes, steps = np.arange(g), np.arange(m)
    return a.reshape(-1, g)[:, (lanes[:, None] + steps[None, :]) % g].reshape(-1, m)


def _horner_values(values, degree):
    one = values.dtype.type
    poly = np.full_like(values, one(INTENSITY_COEFFICIENT))
    for _ in range(degree):
        poly = poly * values + one(INTENSITY_COEFFICIENT)
    return poly


def _ref_guarded(case, args):
    a, m, g = args["a"], args["m"], case.group_size[0]
    lanes, steps = np.arange(g), np.arange(m)
    values = _step_values(args, case.variant == "global", g)
    if case.variant == "special":
        values = 1 / np.sqrt(values)
    elif case.variant.startswith(("poly", "tiled")):
        values = _horner_values(values, _degree(case.variant))
    keep = steps[None, :] != np.tile(lanes, len(values) // g)[:, None]
    return {"out": np.where(keep, values, 0).sum(axis=1, dtype=a.dtype)}


def _ref_intensity(case, args):
    source, degree = _INTENSITY[case.variant]
    values = _horner_values(_step_values(args, source == "global", case.group_size[0]),
                            degree)
    return {"out": values.sum(axis=1, dtype=args["a"].dtype)}


def _ref_parallelism(case, args):
    if case.variant == "columns":
        return {"out": np.einsum("ki,ki->i", args["a"], args["b"])}
    if case.variant == "rows":
        return {"out": np.einsum("ik,ik->i", args["a"], args["b"])}
    return {"out": args["a"] * np.dot(args["x"], args["x"])}


def _ref_reuse(case, args):
    a, n, r = args["a"], args["n"], args["r"]
    return {"out": sum(a[j:j + n] for j in range(r))}


EXTENSION = Suite("extension", (
    KernelClass("parallelism", "kernelcast: work-items × loop length", PARALLELISM_VARIANTS,
           lambda c: parallelism(c.variant, one_d(c), _dtype(c)),
           _parallelism_sizes, (8, 9), group_sizes=(_GROUP,),
           reference=_ref_parallelism, check_params={"n": 300, "m": 512}),
    KernelClass("reuse", "kernelcast: sliding-window sums", ("",),
           lambda c: reuse(one_d(c), _dtype(c)), _reuse_sizes, (18, 19),
           group_sizes=(_GROUP,), reference=_ref_reuse,
           check_params={"n": 1001, "r": 9}),
    KernelClass("local_reads", "kernelcast: local loads per local store", LOCAL_READS_VARIANTS,
           lambda c: local_reads(c.variant, one_d(c), _dtype(c)),
           _local_reads_sizes, (18, 19), group_sizes=(_GROUP,),
           reference=_ref_local_reads, check_params={"ng": 3, "r": 37}),
    KernelClass("chain", "kernelcast: dependent chains (latency)", CHAIN_VARIANTS,
           lambda c: chain(c.variant, one_d(c), _dtype(c)), _chain_sizes,
           (0, 1), group_sizes=(_GROUP,), reference=_ref_chain,
           check_params={"ng": 2, "m": 50, "N": 2 ** 14}),
    KernelClass("guarded", "kernelcast: a condition in every step (latency)", GUARDED_VARIANTS,
           lambda c: guarded(c.variant, one_d(c), _dtype(c)), _guarded_sizes,
           (0, 1), group_sizes=(_GROUP,), reference=_ref_guarded,
           check_params={"ng": 2, "m": 300}),
    KernelClass("intensity", "kernelcast: flops per load of long-running work-items",
           INTENSITY_VARIANTS,
           lambda c: intensity(c.variant, one_d(c), _dtype(c)), _intensity_sizes,
           (0, 1), group_sizes=(_GROUP,), reference=_ref_intensity,
           check_params={"ng": 2, "m": 300}),
    KernelClass("halo", "kernelcast: tiles with halos (fetch loops)", HALO_VARIANTS,
           lambda c: halo(c.variant, c.group_size, _dtype(c)), _halo_sizes, (5, 6),
           group_sizes=((32, 8), (64, 4)), reference=_ref_halo,
           check_params={"n": 77}),
))
