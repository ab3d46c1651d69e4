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

``SEARCH_FAMILIES`` holds larger families for judging search strategies: each has 500 or
more variants that run on a device with 1024 work-items and 48 KiB of local memory per
work-group (the restrictions keep every variant of the space within both, and Loopy makes
each), spanning work-group shapes (occupancy), tasks per work-item (registers),
unrolling and local memory, so that the fastest variants are a small part of the space.
They are measured apart from ``FAMILIES`` (benchmarks/tuning_gpu.py), which scripts
iterate over the data measured for it, and never enter a fitting set either.

- ``conv2d``: y[i, j] = Σ_{p,q<7} w[p, q] x[i + p, j + q], a 7 × 7 filter held in an
  argument, float32 (1,080 variants). The filter loops have a fixed trip count: unrolled
  by 7 or not (the outer one only where the inner one is); x's tile with its 6-element
  halo prefetched into local memory or not; tiling q by its whole length (``tile.q`` = 7)
  runs a work-item's tasks inside the filter loops, one accumulator each (register
  blocking, which raises the registers per work-item with its tasks, at most 8).
- ``nbody``: the gravitational acceleration at n target points from m source masses,
  a[:, i] = Σ_j s[3, j] d / (|d|² + ε²)^{3/2} with d = s[:3, j] − t[:, i] (ε² =
  NBODY_SOFTENING; positions as rows x, y, z of t, sources as rows x, y, z, mass of s),
  float32, one reciprocal square root and about 20 operations per pair, a source's
  four values read into registers (``sj``) by one statement (768 variants). The loop
  over sources, tiled by 32, 128 or 512 or not, with the tile of s prefetched into local
  memory or not, is unrolled by 1 to 8; a work-item's 1 to 16 targets share each source
  read where the loop is tiled (three accumulators per target, so the registers per
  work-item grow with its targets and the unrolling).

``family`` finds a family of either mapping by name.

Public names: Family, FAMILIES, SEARCH_FAMILIES, family, CONV2D_FILTER, NBODY_SOFTENING.
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


#: The side of ``conv2d``'s square filter.
CONV2D_FILTER = 7
#: ``nbody``'s softening ε², which keeps a pair's force finite at any distance.
NBODY_SOFTENING = 0.01


def _conv2d():
    import loopy as lp

    f = CONV2D_FILTER
    return _kernel(f"{{[i, j, p, q]: 0 <= i, j < n and 0 <= p, q < {f}}}",
                   "y[i, j] = sum((p, q), w[p, q] * x[i + p, j + q])",
                   [lp.GlobalArg("w", np.float32, shape=(f, f)),
                    lp.GlobalArg("x", np.float32, shape=(f"n + {f - 1}", f"n + {f - 1}")),
                    lp.GlobalArg("y", np.float32, shape=("n", "n"), is_output=True),
                    lp.ValueArg("n", np.int32)], "conv2d")


def _nbody():
    import loopy as lp

    # a source's four values go to registers (sj) by one statement, the only one that
    # reads s: Loopy then names one reader in its barrier's comment, not one of several
    # in an order that changes from process to process (and the code's hash with it);
    # explicit accumulations compute the difference and the force factor once per pair
    knl = _kernel("{[i, j, c]: 0 <= i < n and 0 <= j < m and 0 <= c < 4}",
                  f"""
                  for i
                    <float32> xi = t[0, i] {{id=xi}}
                    <float32> yi = t[1, i] {{id=yi}}
                    <float32> zi = t[2, i] {{id=zi}}
                    <float32> ax = 0.0f {{id=ax0}}
                    <float32> ay = 0.0f {{id=ay0}}
                    <float32> az = 0.0f {{id=az0}}
                    for j
                      for c
                        sj[c] = s[c, j] {{id=sj}}
                      end
                      <float32> dx = sj[0] - xi {{id=dx, dep=xi:sj}}
                      <float32> dy = sj[1] - yi {{id=dy, dep=yi:sj}}
                      <float32> dz = sj[2] - zi {{id=dz, dep=zi:sj}}
                      <float32> r = rsqrt(dx * dx + dy * dy + dz * dz
                                          + {NBODY_SOFTENING}f) {{id=r, dep=dx:dy:dz}}
                      <float32> f = sj[3] * r * r * r {{id=f, dep=r:sj}}
                      ax = ax + f * dx {{id=ax, dep=ax0:f}}
                      ay = ay + f * dy {{id=ay, dep=ay0:f}}
                      az = az + f * dz {{id=az, dep=az0:f}}
                    end
                    a[0, i] = ax {{dep=ax}}
                    a[1, i] = ay {{dep=ay}}
                    a[2, i] = az {{dep=az}}
                  end
                  """,
                  [lp.GlobalArg("s", np.float32, shape=(4, "m")),
                   lp.GlobalArg("t", np.float32, shape=(3, "n")),
                   lp.GlobalArg("a", np.float32, shape=(3, "n"), is_output=True),
                   lp.TemporaryVariable("sj", np.float32, shape=(4,),
                                        address_space=lp.AddressSpace.PRIVATE),
                   lp.ValueArg("n, m", np.int32)], "nbody")
    return lp.tag_inames(knl, {"c": "unr"})


def _conv2d_ref(a):
    x, w = a["x"].astype(np.float64), a["w"].astype(np.float64)
    f = CONV2D_FILTER
    n = x.shape[0] - (f - 1)
    return {"y": sum(w[p, q] * x[p:p + n, q:q + n] for p in range(f) for q in range(f))}


def _nbody_ref(a):
    s, t = a["s"].astype(np.float64), a["t"].astype(np.float64)
    d = s[:3, None, :] - t[:, :, None]  # (3, n, m)
    r2 = (d * d).sum(axis=0) + np.float32(NBODY_SOFTENING)
    return {"a": (d * (s[3] / r2 ** 1.5)).sum(axis=2)}


SEARCH_FAMILIES = {f.name: f for f in (
    Family("conv2d", _conv2d,
           Space((Axis("j", (32, 64, 128), (1, 2, 4)), Axis("i", (1, 2, 4, 8), (1, 2, 4))),
                 (("p", (1, CONV2D_FILTER)), ("q", (1, CONV2D_FILTER))),
                 tile=(("q", (1, CONV2D_FILTER)),),
                 prefetch=(Prefetch("x", ("i", "j", "p", "q")),),
                 # at most 8 tasks per work-item: x's tile is then at most 22 × 518
                 # floats (45,584 bytes); a tile of q with one task changes nothing
                 restrict=("j.per_item * i.per_item <= 8", "unroll.p <= unroll.q",
                           "tile.q == 1 or j.per_item * i.per_item > 1")),
           {"n": 8192}, {"n": 37}, _conv2d_ref),
    Family("nbody", _nbody,
           Space((Axis("i", (32, 64, 128, 256, 512, 1024), (1, 2, 4, 8, 16)),),
                 (("j", (1, 2, 4, 8)),), tile=(("j", (1, 32, 128, 512)),),
                 prefetch=(Prefetch("s", ("c", "j")),),
                 # a tile is what a prefetch fetches, and what shares the sources among
                 # a work-item's targets (with one target and no prefetch it changes
                 # nothing)
                 restrict=("tile.j > 1 or not prefetch.s",
                           "tile.j == 1 or prefetch.s or i.per_item > 1")),
           # n a multiple of every group's targets, at both sizes: PoCL 3.1 corrupts its
           # heap running a group some of whose work-items have no target while private
           # arrays live across a barrier (512 work-items × 16 targets at n = 300, which
           # compute the reference on an H100)
           {"n": 131072, "m": 4096}, {"n": 16384, "m": 77}, _nbody_ref),
)}


def family(name: str) -> Family:
    """The judged (FAMILIES) or search (SEARCH_FAMILIES) family called *name*;
    UsageError for an unknown one."""
    found = FAMILIES.get(name) or SEARCH_FAMILIES.get(name)
    if found is None:
        raise UsageError(f"no tuning family {name!r}; known: "
                         f"{', '.join([*FAMILIES, *SEARCH_FAMILIES])}")
    return found
