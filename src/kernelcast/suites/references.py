"""NumPy references for the kernels of kernelcast.suites.kernels.

Each reference takes a suite Case (variant, parameter values, group size) and the kernel's
arguments (host arrays and scalars by name, as kernelcast.measure.arrays makes them), and
returns the
expected value of every array the kernel writes. Elements a kernel never writes are NaN:
kernels run on NaN-poisoned outputs, so a kernel that writes too little or too much shows.
Sums are formed in float64 and cast to the kernel's precision at the end.

Public names: REFERENCES (reference name of a kernel class -> reference function).
"""

from __future__ import annotations

import re

import numpy as np

from kernelcast.suites.kernels import FILLED_TERMS, arithmetic_expression


def _cast(array, like):
    return np.asarray(array).astype(like.dtype if hasattr(like, "dtype") else np.float64)


def _f64(a):
    return np.asarray(a, dtype=np.float64)


def scale(case, a):
    return {"out": _cast(2 * _f64(a["a"]), a["a"])}


def matmul(case, a):
    return {"c": _cast(_f64(a["a"]) @ _f64(a["b"]), a["a"])}


def scale_add(case, a):
    s = int(case.variant)
    z = np.full(case.params["n"], np.nan)
    z[::s] = a["alpha"] * _f64(a["x"])[::s] + a["beta"] * _f64(a["y"])[::s]
    return {"z": _cast(z, a["x"])}


def transpose(case, a):
    return {"out": _cast(_f64(a["a"]).T, a["a"])}


def global_access(case, a):
    inputs = {"copy": "a", "sum4": "abcd", "index": ""}[case.variant]
    dtype = a["out"].dtype
    if not inputs:
        return {"out": np.arange(case.params["n"]).astype(dtype)}
    return {"out": _cast(sum(_f64(a[name]) for name in inputs), a["out"])}


def filled_stride(case, a):
    """out[b*g + ii] = sum over k < FILLED_TERMS of the column sum of column
    b*g + (ii+k) mod g of x."""
    g, n = case.group_size[0], case.params["n"]
    column_sums = _f64(a["x"]).sum(axis=0)
    idx = np.arange(n)
    base, ii = idx // g * g, idx % g
    k = np.arange(FILLED_TERMS)
    out = column_sums[base[:, None] + (ii[:, None] + k[None, :]) % g].sum(axis=1)
    return {"out": _cast(out, a["out"])}


def arithmetic(case, a):
    """Evaluates the kernel's own expression (the definition of the class) in float64."""
    n, k = case.params["n"], case.params["k"]
    i, j, s = np.meshgrid(np.arange(n, dtype=np.float64), np.arange(n, dtype=np.float64),
                          np.arange(k, dtype=np.float64), indexing="ij")
    expr = re.sub(r"(\d)[fd]\b", r"\1", arithmetic_expression(case.variant, np.float64))
    value = eval(expr, {"__builtins__": {}}, {"i": i, "j": j, "s": s,  # noqa: S307
                                              "rsqrt": lambda x: 1 / np.sqrt(x)})
    return {"out": _cast(value.sum(axis=2), a["out"])}


def finite_difference(case, a):
    u = _f64(a["u"])
    c = u[1:-1, 1:-1]
    result = np.full_like(u, np.nan)
    result[1:-1, 1:-1] = (c**2 - 1 - 4 * c + u[2:, 1:-1] + u[:-2, 1:-1]
                          + u[1:-1, 2:] + u[1:-1, :-2])
    return {"result": _cast(result, a["u"])}


def nbody(case, a):
    x = _f64(a["x"])
    d2 = ((x[:, :, None] - x[:, None, :]) ** 2).sum(axis=0)
    np.fill_diagonal(d2, np.inf)
    return {"pot": _cast((1 / np.sqrt(d2)).sum(axis=1), a["x"])}


def convolution(case, a):
    """r[i,j,x,y] = sum over c, -3<=ξ,η<=3 of m[i,c,3+x-ξ,3+y-η] f[j,c,3+ξ,3+η]."""
    m, f, n = _f64(a["m"]), _f64(a["f"]), case.params["n"]
    r = np.zeros((3, 3, n, n))
    for xi in range(-3, 4):
        for eta in range(-3, 4):
            window = m[:, :, 3 - xi:3 - xi + n, 3 - eta:3 - eta + n]
            r += np.einsum("icxy,jc->ijxy", window, f[:, :, 3 + xi, 3 + eta])
    return {"r": _cast(r, a["m"])}


def empty(case, a):
    return {}


REFERENCES = {
    "scale": scale, "matmul": matmul,
    "scale_add": scale_add, "transpose": transpose, "global_access": global_access,
    "filled_stride": filled_stride, "arithmetic": arithmetic, "empty": empty,
    "finite_difference": finite_difference, "nbody": nbody, "convolution": convolution,
}
