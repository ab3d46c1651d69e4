"""Kernels that together exercise every property family and every stride class, each with
its closed-form counts worked out by hand.

``ZOO`` maps a name to (factory, closed forms, sizes): the closed forms are functions of
the parameter dict, one per property the kernel must have (every other property must be
absent), and ``sizes`` are parameter values to check them at, small enough for the
brute-force count too.
"""

from __future__ import annotations

import loopy as lp
import numpy as np
import pyopencl.cltypes as cltypes

from kernelcast.suites import extension
from kernelcast.suites import kernels as paper

LANG = (2018, 2)


def cdiv(a, b):
    return -(-a // b)


def _1d(instructions, dtypes, args=("...",), g=32, domain="{[i]: 0<=i<n}", **kw):
    knl = lp.make_kernel(domain, instructions, list(args), lang_version=LANG,
                         assumptions="n >= 1", **kw)
    if dtypes:
        knl = lp.add_dtypes(knl, dtypes)
    return lp.split_iname(knl, "i", g, outer_tag="g.0", inner_tag="l.0")


def scale_f32():
    return paper.scale(gsize=32)


def axpy_f64():
    return _1d("z[i] = alpha*x[i] + y[i]", {"x, y": np.float64, "alpha": np.float64})


def strided(stride, used):
    """Each work-item touches `used` consecutive elements of a stride-`stride` row."""
    return _1d(f"y[{stride}*i + r] = 3*x[{stride}*i + r]", None,
               [lp.GlobalArg("x, y", np.float32, shape=(f"{stride}*n",)), "..."],
               domain=f"{{[i, r]: 0<=i<n and 0<=r<{used}}}")


def uniform():
    return _1d("out[i] = a[i]*c[0] + c[1]",
               None, [lp.GlobalArg("a", np.float32, shape="n"),
                      lp.GlobalArg("c", np.float32, shape=(2,)), "..."])


def gather():
    return _1d("out[i] = a[idx[i]]", None,
               [lp.GlobalArg("a", np.float32, shape="n"),
                lp.GlobalArg("idx", np.int32, shape="n"), "..."])


def nonaffine():
    return _1d("out[i] = a[(i*i) % n]", None,
               [lp.GlobalArg("a", np.float32, shape="n"), "..."])


def copy_float4():
    return _1d("out[i] = a[i]", {"a": cltypes.float4})


def transpose_naive():
    knl = lp.make_kernel("{[i, j]: 0<=i,j<n}", "out[i, j] = a[j, i]", lang_version=LANG,
                         assumptions="n >= 1")
    knl = lp.add_dtypes(knl, {"a": np.float32})
    knl = lp.split_iname(knl, "i", 8, outer_tag="g.1", inner_tag="l.1")
    return lp.split_iname(knl, "j", 8, outer_tag="g.0", inner_tag="l.0")


def column_read():
    return _1d("out[i] = a[i, 0]", None, [lp.GlobalArg("a", np.float32, shape=("n", "n")),
                                          "..."])


def special_f32():
    return _1d("out[i] = rsqrt(a[i]) + exp(b[i]) * a[i]**3 / b[i] - sqrt(b[i])",
               {"a, b": np.float32})


def all_ops_f64():
    return _1d("out[i] = (x[i] + y[i]) * x[i] / y[i] + x[i]**1.5 + sin(y[i])",
               {"x, y": np.float64})


def predicated():
    return _1d("""
        if i >= 5
            out[i] = a[i] + 1
        end
        """, {"a": np.float32})


def matmul_tiled():
    return paper.matmul_tiled(gsize=(8, 8))


def finite_difference():
    return paper.finite_difference(gsize=(8, 8))


def nbody():
    return paper.nbody(gsize=16)


def convolution():
    return paper.convolution(gsize=(4, 4))


def intensity_local4():
    return extension.intensity("local4", gsize=16)


def intensity_global1_f64():
    return extension.intensity("global1", gsize=16, dtype=np.float64)


def _s1_1d(loads=1, stores=1):
    """Forms shared by one-load, one-store stride-1 kernels."""
    forms = {}
    if loads:
        forms["load_global_32_s1"] = lambda p: loads * p["n"]
    if stores:
        forms["store_global_32_s1"] = lambda p: stores * p["n"]
    if loads and stores:
        forms["minls_global_32_s1"] = lambda p: min(loads, stores) * p["n"]
    return forms


def _groups(g):
    return {"workgroup": lambda p: cdiv(p["n"], g), "launch": lambda p: 1}


SIZES_1D = [{"n": 33}, {"n": 64}, {"n": 100}]

ZOO = {
    "scale_f32": (scale_f32, {
        "mul_f32": lambda p: p["n"], **_s1_1d(1), **_groups(32)}, SIZES_1D),
    "axpy_f64": (axpy_f64, {
        "mul_f64": lambda p: p["n"], "add_f64": lambda p: p["n"],
        "load_global_64_s1": lambda p: 2 * p["n"], "store_global_64_s1": lambda p: p["n"],
        "minls_global_64_s1": lambda p: p["n"], **_groups(32)}, SIZES_1D),
    "uniform": (uniform, {
        "mul_f32": lambda p: p["n"], "add_f32": lambda p: p["n"],
        "load_global_32_s0": lambda p: 2 * p["n"], **_s1_1d(1), **_groups(32)}, SIZES_1D),
    "gather": (gather, {
        "load_global_32_s1": lambda p: p["n"], "load_global_32_irregular": lambda p: p["n"],
        "store_global_32_s1": lambda p: p["n"], "minls_global_32_s1": lambda p: p["n"],
        **_groups(32)}, SIZES_1D),
    "nonaffine": (nonaffine, {
        "load_global_32_irregular": lambda p: p["n"], "store_global_32_s1": lambda p: p["n"],
        **_groups(32)}, SIZES_1D),
    "copy_float4": (copy_float4, {
        "load_global_128_s1": lambda p: p["n"], "store_global_128_s1": lambda p: p["n"],
        "minls_global_128_s1": lambda p: p["n"], **_groups(32)}, SIZES_1D),
    "transpose_naive": (transpose_naive, {
        "load_global_32_4ofmore": lambda p: p["n"] ** 2,
        "store_global_32_s1": lambda p: p["n"] ** 2,
        "workgroup": lambda p: cdiv(p["n"], 8) ** 2, "launch": lambda p: 1},
        [{"n": 8}, {"n": 20}]),
    "column_read": (column_read, {
        "load_global_32_1ofmore": lambda p: p["n"], "store_global_32_s1": lambda p: p["n"],
        **_groups(32)}, SIZES_1D),
    "special_f32": (special_f32, {
        "special_f32": lambda p: 3 * p["n"], "pow_f32": lambda p: p["n"],
        "mul_f32": lambda p: p["n"], "div_f32": lambda p: p["n"],
        "add_f32": lambda p: 2 * p["n"], **_s1_1d(5), **_groups(32)}, SIZES_1D),
    "all_ops_f64": (all_ops_f64, {
        "add_f64": lambda p: 3 * p["n"], "mul_f64": lambda p: p["n"],
        "div_f64": lambda p: p["n"], "pow_f64": lambda p: p["n"],
        "special_f64": lambda p: p["n"], "load_global_64_s1": lambda p: 6 * p["n"],
        "store_global_64_s1": lambda p: p["n"], "minls_global_64_s1": lambda p: p["n"],
        **_groups(32)}, SIZES_1D),
    "predicated": (predicated, {
        "add_f32": lambda p: p["n"] - 5, "load_global_32_s1": lambda p: p["n"] - 5,
        "store_global_32_s1": lambda p: p["n"] - 5,
        "minls_global_32_s1": lambda p: p["n"] - 5, **_groups(32)}, SIZES_1D),
    "matmul_tiled": (matmul_tiled, {
        "add_f32": lambda p: p["n"] * p["m"] * p["l"],
        "mul_f32": lambda p: p["n"] * p["m"] * p["l"],
        "load_global_32_s1": lambda p: (p["n"] * p["m"] * cdiv(p["l"], 8)
                                        + p["m"] * p["l"] * cdiv(p["n"], 8)),
        "store_global_32_s1": lambda p: p["n"] * p["l"],
        "minls_global_32_s1": lambda p: p["n"] * p["l"],
        "load_local_32": lambda p: 2 * p["n"] * p["m"] * p["l"],
        "store_local_32": lambda p: (p["n"] * p["m"] * cdiv(p["l"], 8)
                                     + p["m"] * p["l"] * cdiv(p["n"], 8)),
        "barrier": lambda p: 2 * cdiv(p["m"], 8) * cdiv(p["n"], 8) * cdiv(p["l"], 8) * 64,
        "workgroup": lambda p: cdiv(p["n"], 8) * cdiv(p["l"], 8), "launch": lambda p: 1},
        [{"n": 16, "m": 8, "l": 24}, {"n": 16, "m": 16, "l": 16}]),
    "finite_difference": (finite_difference, {
        "add_f32": lambda p: 6 * p["n"] ** 2, "mul_f32": lambda p: 2 * p["n"] ** 2,
        # each 8×8 tile fetches itself plus a one-cell halo
        "load_global_32_s1": lambda p: (p["n"] + 2 * cdiv(p["n"], 8)) ** 2,
        "store_global_32_s1": lambda p: p["n"] ** 2,
        "minls_global_32_s1": lambda p: p["n"] ** 2,
        "load_local_32": lambda p: 6 * p["n"] ** 2,
        "store_local_32": lambda p: (p["n"] + 2 * cdiv(p["n"], 8)) ** 2,
        "barrier": lambda p: cdiv(p["n"], 8) ** 2 * 64,
        "workgroup": lambda p: cdiv(p["n"], 8) ** 2, "launch": lambda p: 1},
        [{"n": 8}, {"n": 16}]),
    "nbody": (nbody, {
        # the k-sum runs where i != j; rsqrt sits in a select, evaluated for every pair
        "add_f32": lambda p: 7 * p["n"] ** 2 - 6 * p["n"],
        "mul_f32": lambda p: 3 * (p["n"] ** 2 - p["n"]),
        "special_f32": lambda p: p["n"] ** 2,
        "load_global_32_3of3": lambda p: 3 * p["n"] + 3 * p["n"] * cdiv(p["n"], 16),
        "store_global_32_s1": lambda p: p["n"],
        "load_local_32": lambda p: 3 * (p["n"] ** 2 - p["n"]),
        "store_local_32": lambda p: 3 * p["n"] * cdiv(p["n"], 16),
        "barrier": lambda p: 2 * cdiv(p["n"], 16) ** 2 * 16,
        "workgroup": lambda p: cdiv(p["n"], 16), "launch": lambda p: 1},
        [{"n": 16}, {"n": 48}]),
    "convolution": (convolution, {
        "add_f32": lambda p: 1323 * p["n"] ** 2, "mul_f32": lambda p: 1323 * p["n"] ** 2,
        # per group: its filter (3·49) and, per image, 3 planes of (4+6)² pixels
        "load_global_32_s1": lambda p: 3141 * cdiv(p["n"], 4) ** 2,
        "store_global_32_s1": lambda p: 9 * p["n"] ** 2,
        "minls_global_32_s1": lambda p: min(3141 * cdiv(p["n"], 4) ** 2, 9 * p["n"] ** 2),
        "load_local_32": lambda p: 2646 * p["n"] ** 2,
        "store_local_32": lambda p: 3141 * cdiv(p["n"], 4) ** 2,
        "barrier": lambda p: 3 * cdiv(p["n"], 4) ** 2 * 16 * 6,
        "workgroup": lambda p: 3 * cdiv(p["n"], 4) ** 2, "launch": lambda p: 1},
        [{"n": 4}, {"n": 8}]),
    # ng groups of 16 work-items, m steps each: p = ((c·v + c)·v + c)…, acc + p
    "intensity_local4": (intensity_local4, {
        "add_f32": lambda p: 5 * 16 * p["ng"] * p["m"],
        "mul_f32": lambda p: 4 * 16 * p["ng"] * p["m"],
        "load_global_32_s1": lambda p: 16 * p["ng"],
        "store_global_32_s1": lambda p: 16 * p["ng"],
        "minls_global_32_s1": lambda p: 16 * p["ng"],
        "load_local_32": lambda p: 16 * p["ng"] * p["m"],
        "store_local_32": lambda p: 16 * p["ng"],
        "barrier": lambda p: 16 * p["ng"],
        "workgroup": lambda p: p["ng"], "launch": lambda p: 1},
        [{"ng": 1, "m": 5}, {"ng": 3, "m": 7}]),
    # every group reads the same m×16 table a[k, li]
    "intensity_global1_f64": (intensity_global1_f64, {
        "add_f64": lambda p: 2 * 16 * p["ng"] * p["m"],
        "mul_f64": lambda p: 16 * p["ng"] * p["m"],
        "load_global_64_s1": lambda p: 16 * p["ng"] * p["m"],
        "store_global_64_s1": lambda p: 16 * p["ng"],
        "minls_global_64_s1": lambda p: 16 * p["ng"],
        "workgroup": lambda p: p["ng"], "launch": lambda p: 1},
        [{"ng": 1, "m": 5}, {"ng": 3, "m": 7}]),
}

# Strided access: every class of the amortized stride fraction, for loads and stores.
STRIDED = {
    (2, 1): "1of2", (2, 2): "2of2",
    (3, 1): "1of3", (3, 2): "2of3", (3, 3): "3of3",
    (4, 1): "1of4", (4, 2): "2of4", (4, 3): "3of4", (4, 4): "4of4",
    (8, 2): "1ofmore", (8, 4): "2ofmore", (8, 6): "3ofmore", (8, 8): "4ofmore",
}
for (stride, used), cls in STRIDED.items():
    ZOO[f"strided_{stride}_{used}"] = (
        lambda stride=stride, used=used: strided(stride, used), {
            f"load_global_32_{cls}": lambda p, u=used: u * p["n"],
            f"store_global_32_{cls}": lambda p, u=used: u * p["n"],
            f"minls_global_32_{cls}": lambda p, u=used: u * p["n"],
            "mul_f32": lambda p, u=used: u * p["n"], **_groups(32)},
        SIZES_1D)


def two_launches():
    """A global barrier splits this kernel into two device launches, which kernelcast
    refuses to model or measure as one."""
    knl = lp.make_kernel("{[i, j]: 0<=i,j<n}",
                         """
                         tmp[i] = 2*a[i] {id=first}
                         ... gbarrier {id=barrier, dep=first}
                         out[j] = tmp[n - 1 - j] {dep=barrier}
                         """,
                         [lp.GlobalArg("a, tmp, out", np.float32, shape="n"), "..."],
                         name="two_launches", lang_version=(2018, 2))
    knl = lp.split_iname(knl, "i", 64, outer_tag="g.0", inner_tag="l.0")
    return lp.split_iname(knl, "j", 64, outer_tag="g.0", inner_tag="l.0")
