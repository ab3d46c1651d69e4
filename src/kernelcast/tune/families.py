"""Kernel families for judging tuning: untuned Loopy kernels with their spaces.

Each family is one computation whose variants differ only in how it maps to the GPU
(kernelcast.tune.space). They are measured exhaustively on a GPU as the ground truth a
tuner's picks are judged against, and never enter a fitting set. Sizes: ``params`` for
the GPU (tens of microseconds to milliseconds on an H100), ``check_params`` small enough
to run every variant on PoCL.

- ``matmul``: C = A B, float32, a reduction over k per element;
- ``stencil2d``: a 5-point Jacobi step on a 2-D grid;
- ``stencil3d``: a 7-point Jacobi step on a 3-D grid;
- ``transpose``: B = Aᵀ;
- ``matvec``: y = A x, a reduction per row;
- ``axpy``: y = a x + y elementwise, with work per item.

Public names: Family, FAMILIES, family.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from kernelcast.errors import UsageError
from kernelcast.tune.space import Axis, Prefetch, Space


@dataclass(frozen=True)
class Family:
    """A computation, its untuned kernel, its space and sizes."""

    name: str
    build: Callable
    space: Space
    params: dict
    check_params: dict
    reference: Callable[[dict], dict]


def _kernel(domain, insns, args, name):
    import loopy as lp

    return lp.make_kernel(domain, insns, args, name=name, lang_version=(2018, 2))


def _matmul():
    import loopy as lp

    return _kernel("{[i, j, k]: 0 <= i < n and 0 <= j < n and 0 <= k < n}",
                   "c[i, j] = sum(k, a[i, k] * b[k, j])",
                   [lp.GlobalArg("a, b", np.float32, shape=("n", "n")),
                    lp.GlobalArg("c", np.float32, shape=("n", "n"), is_output=True),
                    lp.ValueArg("n", np.int32)], "matmul")


def _stencil2d():
    import loopy as lp

    return _kernel("{[i, j]: 1 <= i < n - 1 and 1 <= j < n - 1}",
                   "v[i, j] = 0.2f * (u[i, j] + u[i - 1, j] + u[i + 1, j] + u[i, j - 1]"
                   " + u[i, j + 1])",
                   [lp.GlobalArg("u", np.float32, shape=("n", "n")),
                    lp.GlobalArg("v", np.float32, shape=("n", "n"), is_output=True),
                    lp.ValueArg("n", np.int32)], "stencil2d")


def _stencil3d():
    import loopy as lp

    return _kernel("{[i, j, k]: 1 <= i < n - 1 and 1 <= j < n - 1 and 1 <= k < n - 1}",
                   "v[i, j, k] = (u[i, j, k] + u[i - 1, j, k] + u[i + 1, j, k]"
                   " + u[i, j - 1, k] + u[i, j + 1, k] + u[i, j, k - 1] + u[i, j, k + 1])"
                   " / 7.0f",
                   [lp.GlobalArg("u", np.float32, shape=("n", "n", "n")),
                    lp.GlobalArg("v", np.float32, shape=("n", "n", "n"), is_output=True),
                    lp.ValueArg("n", np.int32)], "stencil3d")


def _transpose():
    import loopy as lp

    return _kernel("{[i, j]: 0 <= i < n and 0 <= j < n}", "b[i, j] = a[j, i]",
                   [lp.GlobalArg("a", np.float32, shape=("n", "n")),
                    lp.GlobalArg("b", np.float32, shape=("n", "n"), is_output=True),
                    lp.ValueArg("n", np.int32)], "transpose")


def _matvec():
    import loopy as lp

    return _kernel("{[i, j]: 0 <= i < n and 0 <= j < n}", "y[i] = sum(j, a[i, j] * x[j])",
                   [lp.GlobalArg("a", np.float32, shape=("n", "n")),
                    lp.GlobalArg("x", np.float32, shape=("n",)),
                    lp.GlobalArg("y", np.float32, shape=("n",), is_output=True),
                    lp.ValueArg("n", np.int32)], "matvec")


def _axpy():
    import loopy as lp

    return _kernel("{[i]: 0 <= i < n}", "z[i] = 2.5f * x[i] + y[i]",
                   [lp.GlobalArg("x, y", np.float32, shape=("n",)),
                    lp.GlobalArg("z", np.float32, shape=("n",), is_output=True),
                    lp.ValueArg("n", np.int32)], "axpy")


def _interior(v, u):
    out = np.full_like(u, np.nan)
    out[tuple(slice(1, -1) for _ in u.shape)] = v
    return out


def _stencil2d_ref(a):
    u = a["u"]
    return {"v": _interior(0.2 * (u[1:-1, 1:-1] + u[:-2, 1:-1] + u[2:, 1:-1]
                                  + u[1:-1, :-2] + u[1:-1, 2:]), u)}


def _stencil3d_ref(a):
    u = a["u"]
    c = (slice(1, -1),) * 3
    s = (u[c] + u[:-2, 1:-1, 1:-1] + u[2:, 1:-1, 1:-1] + u[1:-1, :-2, 1:-1]
         + u[1:-1, 2:, 1:-1] + u[1:-1, 1:-1, :-2] + u[1:-1, 1:-1, 2:]) / 7
    return {"v": _interior(s, u)}


_GROUPS = (16, 32, 64, 128, 256)

FAMILIES = {f.name: f for f in (
    Family("matmul", _matmul,
           Space((Axis("j", (16, 32, 64, 128), (1, 2, 4)), Axis("i", (1, 2, 4, 8, 16),
                                                               (1, 2, 4))),
                 (("k", (1, 4, 8)),), tile=(("k", (1, 16)),),
                 prefetch=(Prefetch("a", ("i", "k")), Prefetch("b", ("k", "j"))),
                 restrict=("(tile.k > 1) == (prefetch.a or prefetch.b)",
                           "tile.k == 1 or (i.group >= 8 and unroll.k <= 4)")),
           {"n": 1024}, {"n": 40}, lambda a: {"c": a["a"] @ a["b"]}),
    Family("stencil2d", _stencil2d,
           Space((Axis("j", _GROUPS, (1, 2, 4)), Axis("i", (1, 2, 4, 8, 16), (1, 2, 4))),),
           {"n": 8192}, {"n": 37}, _stencil2d_ref),
    Family("stencil3d", _stencil3d,
           Space((Axis("k", (16, 32, 64, 128), (1, 2)), Axis("j", (1, 2, 4, 8), (1, 2)),
                  Axis("i", (1, 2, 4), (1, 2)))),
           {"n": 512}, {"n": 13}, _stencil3d_ref),
    Family("transpose", _transpose,
           Space((Axis("j", (16, 32, 64, 128), (1, 2)), Axis("i", (1, 2, 4, 8, 16),
                                                              (1, 2))),
                 prefetch=(Prefetch("a", ("j", "i"), pad=(0, 1)),),
                 restrict=("prefetch.a or pad.a == 0",
                           "not prefetch.a or i.group * i.per_item > 1")),
           {"n": 8192}, {"n": 36}, lambda a: {"b": a["a"].T.copy()}),
    Family("matvec", _matvec,
           Space((Axis("i", (32, 64, 128, 256, 512), (1, 2, 4)),), (("j", (1, 4, 8)),),
                 split=(("j", (1, 2, 4, 8, 16, 32)),)),
           {"n": 16384}, {"n": 50}, lambda a: {"y": a["a"] @ a["x"]}),
    Family("axpy", _axpy,
           Space((Axis("i", (64, 128, 256, 512, 1024), (1, 2, 4, 8, 16)),)),
           {"n": 1 << 26}, {"n": 1000}, lambda a: {"z": 2.5 * a["x"] + a["y"]}),
)}


def family(name: str) -> Family:
    try:
        return FAMILIES[name]
    except KeyError:
        raise UsageError(f"no tuning family {name!r}; known: "
                         f"{', '.join(FAMILIES)}") from None
