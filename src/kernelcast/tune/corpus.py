"""A training corpus of kernel families for a learned cost model.

The six families of kernelcast.tune.families are the test set a tuner is judged on and
never enter a fitting set. These families are different computations, to be measured on a
GPU and trained on, that cover the same behaviour classes: coalesced, strided and broadcast
reads; reductions inside a work-item; reuse across neighbouring work-items through caches;
compute-bound and memory-bound; 1-D, 2-D and 3-D grids; few and many work-groups. Each is
a :class:`~kernelcast.tune.families.Family` (float32): an untuned Loopy kernel, its space
(kernelcast.tune.space), ``params`` for the GPU (tens of microseconds to milliseconds on an
H100), ``check_params`` small enough to run any variant on PoCL, and a NumPy reference.

- ``outer``: c[i, j] = x[i] y[j], an outer product (broadcast reads, a large write);
- ``colsum``: s[j] = Σ_i a[i, j], column sums (a reduction over the slow axis, coalesced
  across j; few work-groups);
- ``conv1d``: y[i] = Σ_{k<15} w[k] x[i + k], a 15-tap 1-D convolution (neighbour reuse,
  a broadcast filter);
- ``poly``: y[i] = a degree-16 polynomial of x[i] by Horner's rule (compute-bound,
  elementwise);
- ``hblur``: y[i, j] = (Σ_{k=-3..3} x[i, j + k]) / 7 on the columns 3 … n − 4 (a
  horizontal blur: reuse along the fast axis only);
- ``pairsum``: y[i, j] = a[i, 2j] + a[i, 2j + 1] (stride-2 reads);
- ``aat``: c[i, j] = Σ_k a[i, k] a[j, k], A Aᵀ (a reduction whose operands are both read
  along rows: one broadcast, one strided across work-items);
- ``pairwise``: y[i] = Σ_j 1 / (1 + (x[i] − x[j])²), an all-pairs reduction written as
  an explicit accumulation loop (compute-bound, broadcast reads);
- ``volume3d``: v[i, j, k] = u[i, j, k] s[k] + u[i, j, k]², 3-D elementwise with a
  broadcast vector.

Local memory, as the judged families use it (matmul's tiles, transpose's padded
prefetch, matvec's split reduction), enters through three families' spaces; the variants
that use none of it keep their names and their code (``variant_key`` leaves the new
parameters out at their "off" values):

- ``colsum``: the reduction over i split across 2 … 32 work-items (a tree reduction in
  local memory, barriers per level), or tiled by 16 with a's tile (16 rows × the
  group's columns) staged in local memory each step (each work-item reads back only
  what it fetched, so Loopy needs no barrier);
- ``conv1d``: x's tile with its 14-element halo prefetched (one fetch per work-group,
  reused by 15 neighbouring work-items), with or without the 15 taps of w;
- ``pairsum``: a's tile (2 × the group's columns, the stride-2 reads served from local
  memory after a coalesced fetch), padded by 0 or 1 element per row.

Restrictions keep them runnable on a device with 1024 work-items and 48 KiB of local
memory per work-group. Loopy refuses the rest: a prefetch of one row of work-items
leaves a local axis unused (``outer``'s x and y, ``volume3d``'s s, any 1-D tile in a
2-D or 3-D group, and pairsum's with one row per group); a tile of an array read at two
index patterns has no fixed size (``aat``'s a, read as a[i, k] and a[j, k];
``pairwise``'s x, read as x[i] and x[j]); ``pairwise``'s explicit accumulation is no
reduction Loopy can split; ``hblur``'s loop starts at 3, and Loopy sizes its clipped
tile by the whole array.

Public names: CORPUS, corpus_family, POLY_COEFFICIENTS, CONV_TAPS, BLUR_HALF.
"""

from __future__ import annotations

import numpy as np

from kernelcast.errors import UsageError
from kernelcast.tune.families import Family, _kernel
from kernelcast.tune.space import Axis, Prefetch, Space

#: The coefficients c0 … c16 of ``poly``: y = Σ_k c_k x^k with c_k = 1 / (k + 1).
POLY_COEFFICIENTS = tuple(1.0 / (k + 1) for k in range(17))
#: Taps of ``conv1d``.
CONV_TAPS = 15
#: Half-width of ``hblur``'s window (2 × 3 + 1 = 7 points).
BLUR_HALF = 3


def _outer():
    import loopy as lp

    return _kernel("{[i, j]: 0 <= i < n and 0 <= j < n}", "c[i, j] = x[i] * y[j]",
                   [lp.GlobalArg("x, y", np.float32, shape=("n",)),
                    lp.GlobalArg("c", np.float32, shape=("n", "n"), is_output=True),
                    lp.ValueArg("n", np.int32)], "outer")


def _colsum():
    import loopy as lp

    return _kernel("{[i, j]: 0 <= i < n and 0 <= j < n}", "s[j] = sum(i, a[i, j])",
                   [lp.GlobalArg("a", np.float32, shape=("n", "n")),
                    lp.GlobalArg("s", np.float32, shape=("n",), is_output=True),
                    lp.ValueArg("n", np.int32)], "colsum")


def _conv1d():
    import loopy as lp

    return _kernel(f"{{[i, k]: 0 <= i < n and 0 <= k < {CONV_TAPS}}}",
                   "y[i] = sum(k, w[k] * x[i + k])",
                   [lp.GlobalArg("w", np.float32, shape=(CONV_TAPS,)),
                    lp.GlobalArg("x", np.float32, shape=(f"n + {CONV_TAPS - 1}",)),
                    lp.GlobalArg("y", np.float32, shape=("n",), is_output=True),
                    lp.ValueArg("n", np.int32)], "conv1d")


def _float(c: float) -> str:
    return f"{np.float32(c)}f"


def _poly():
    import loopy as lp

    horner = _float(POLY_COEFFICIENTS[-1])
    for c in reversed(POLY_COEFFICIENTS[:-1]):
        horner = f"({horner}) * t + {_float(c)}"
    return _kernel("{[i]: 0 <= i < n}", f"<float32> t = x[i]\ny[i] = {horner}",
                   [lp.GlobalArg("x", np.float32, shape=("n",)),
                    lp.GlobalArg("y", np.float32, shape=("n",), is_output=True),
                    lp.ValueArg("n", np.int32)], "poly")


def _hblur():
    import loopy as lp

    terms = " + ".join(f"x[i, j + {k}]" if k > 0 else f"x[i, j - {-k}]" if k else "x[i, j]"
                       for k in range(-BLUR_HALF, BLUR_HALF + 1))
    return _kernel(f"{{[i, j]: 0 <= i < n and {BLUR_HALF} <= j < n - {BLUR_HALF}}}",
                   f"y[i, j] = ({terms}) / {2 * BLUR_HALF + 1}.0f",
                   [lp.GlobalArg("x", np.float32, shape=("n", "n")),
                    lp.GlobalArg("y", np.float32, shape=("n", "n"), is_output=True),
                    lp.ValueArg("n", np.int32)], "hblur")


def _pairsum():
    import loopy as lp

    return _kernel("{[i, j]: 0 <= i < n and 0 <= j < n}",
                   "y[i, j] = a[i, 2 * j] + a[i, 2 * j + 1]",
                   [lp.GlobalArg("a", np.float32, shape=("n", "2 * n")),
                    lp.GlobalArg("y", np.float32, shape=("n", "n"), is_output=True),
                    lp.ValueArg("n", np.int32)], "pairsum")


def _aat():
    import loopy as lp

    return _kernel("{[i, j, k]: 0 <= i < n and 0 <= j < n and 0 <= k < n}",
                   "c[i, j] = sum(k, a[i, k] * a[j, k])",
                   [lp.GlobalArg("a", np.float32, shape=("n", "n")),
                    lp.GlobalArg("c", np.float32, shape=("n", "n"), is_output=True),
                    lp.ValueArg("n", np.int32)], "aat")


def _pairwise():
    import loopy as lp

    # an explicit accumulation, so that the difference is computed (and x[j] read) once
    # per pair: Loopy's sum() would need it written out twice
    return _kernel("{[i, j]: 0 <= i < n and 0 <= j < n}",
                   """
                   for i
                     <float32> xi = x[i] {id=xi}
                     <float32> acc = 0.0f {id=init}
                     for j
                       <float32> d = xi - x[j] {id=d, dep=xi}
                       acc = acc + 1.0f / (1.0f + d * d) {id=upd, dep=init:d}
                     end
                     y[i] = acc {dep=upd}
                   end
                   """,
                   [lp.GlobalArg("x", np.float32, shape=("n",)),
                    lp.GlobalArg("y", np.float32, shape=("n",), is_output=True),
                    lp.ValueArg("n", np.int32)], "pairwise")


def _volume3d():
    import loopy as lp

    return _kernel("{[i, j, k]: 0 <= i < n and 0 <= j < n and 0 <= k < n}",
                   "<float32> t = u[i, j, k]\nv[i, j, k] = t * s[k] + t * t",
                   [lp.GlobalArg("u", np.float32, shape=("n", "n", "n")),
                    lp.GlobalArg("s", np.float32, shape=("n",)),
                    lp.GlobalArg("v", np.float32, shape=("n", "n", "n"), is_output=True),
                    lp.ValueArg("n", np.int32)], "volume3d")


def _poly_ref(a):
    x = a["x"].astype(np.float64)
    y = np.full_like(x, POLY_COEFFICIENTS[-1])
    for c in reversed(POLY_COEFFICIENTS[:-1]):
        y = y * x + c
    return {"y": y}


def _conv1d_ref(a):
    x, w = a["x"].astype(np.float64), a["w"].astype(np.float64)
    n = x.size - (CONV_TAPS - 1)
    return {"y": sum(w[k] * x[k:k + n] for k in range(CONV_TAPS))}


def _hblur_ref(a):
    x = a["x"].astype(np.float64)
    n, h = x.shape[1], BLUR_HALF
    out = np.full_like(x, np.nan)
    out[:, h:n - h] = sum(x[:, h + k:n - h + k] for k in range(-h, h + 1)) / (2 * h + 1)
    return {"y": out}


def _pairwise_ref(a):
    x = a["x"].astype(np.float64)
    return {"y": (1.0 / (1.0 + (x[:, None] - x[None, :]) ** 2)).sum(axis=1)}


def _volume3d_ref(a):
    u, s = a["u"].astype(np.float64), a["s"].astype(np.float64)
    return {"v": u * s[None, None, :] + u * u}


_GROUPS_1D = (32, 64, 128, 256, 512, 1024)
_GROUPS_FAST = (16, 32, 64, 128, 256)

CORPUS = {f.name: f for f in (
    Family("outer", _outer,
           Space((Axis("j", _GROUPS_FAST, (1, 2, 4)), Axis("i", (1, 2, 4, 8, 16),
                                                           (1, 2, 4)))),
           {"n": 8192}, {"n": 37},
           lambda a: {"c": np.outer(a["x"].astype(np.float64), a["y"])}),
    Family("colsum", _colsum,
           Space((Axis("j", (32, 64, 128, 256, 512), (1, 2, 4)),), (("i", (1, 4, 8)),),
                 tile=(("i", (1, 16)),), split=(("i", (1, 2, 4, 8, 16, 32)),),
                 prefetch=(Prefetch("a", ("j", "i")),),
                 restrict=("(tile.i > 1) == prefetch.a", "tile.i == 1 or split.i == 1",
                           # 16 rows × the group's columns, float32: at most 32 KiB
                           "not prefetch.a or j.group * j.per_item <= 512")),
           {"n": 8192}, {"n": 45},
           lambda a: {"s": a["a"].astype(np.float64).sum(axis=0)}),
    Family("conv1d", _conv1d,
           Space((Axis("i", _GROUPS_1D, (1, 2, 4, 8)),), (("k", (1, 3, 5, 15)),),
                 prefetch=(Prefetch("x", ("i", "k")), Prefetch("w", ("k",))),
                 restrict=("prefetch.x or not prefetch.w",)),
           {"n": 1 << 24}, {"n": 1000}, _conv1d_ref),
    Family("poly", _poly,
           Space((Axis("i", _GROUPS_1D, (1, 2, 4, 8, 16)),)),
           {"n": 1 << 24}, {"n": 1000}, _poly_ref),
    Family("hblur", _hblur,
           Space((Axis("j", _GROUPS_FAST, (1, 2, 4)), Axis("i", (1, 2, 4, 8), (1, 2, 4)))),
           {"n": 8192}, {"n": 37}, _hblur_ref),
    Family("pairsum", _pairsum,
           Space((Axis("j", _GROUPS_FAST, (1, 2, 4)), Axis("i", (1, 2, 4, 8), (1, 2))),
                 prefetch=(Prefetch("a", ("j", "i"), pad=(0, 1)),),
                 restrict=("prefetch.a or pad.a == 0",
                           # a fetch by one row of work-items leaves local axis 1 unused
                           "not prefetch.a or i.group * i.per_item > 1",
                           # rows × 2 × columns, float32: at most 32 KiB
                           "not prefetch.a or j.group * j.per_item * i.group * i.per_item"
                           " <= 4096")),
           {"n": 8192}, {"n": 37},
           lambda a: {"y": a["a"][:, 0::2].astype(np.float64) + a["a"][:, 1::2]}),
    Family("aat", _aat,
           Space((Axis("j", (16, 32, 64, 128), (1, 2, 4)), Axis("i", (1, 2, 4, 8, 16),
                                                                (1, 2))),
                 (("k", (1, 4)),)),
           {"n": 1024}, {"n": 40},
           lambda a: {"c": a["a"].astype(np.float64) @ a["a"].astype(np.float64).T}),
    Family("pairwise", _pairwise,
           Space((Axis("i", _GROUPS_1D, (1, 2, 4)),), (("j", (1, 4, 8)),)),
           {"n": 16384}, {"n": 300}, _pairwise_ref),
    Family("volume3d", _volume3d,
           Space((Axis("k", (16, 32, 64, 128), (1, 2)), Axis("j", (1, 2, 4, 8), (1, 2)),
                  Axis("i", (1, 2, 4), (1, 2)))),
           {"n": 384}, {"n": 13}, _volume3d_ref),
)}


def corpus_family(name: str) -> Family:
    """The corpus family called *name*; UsageError for an unknown one."""
    try:
        return CORPUS[name]
    except KeyError:
        raise UsageError(f"no corpus family {name!r}; known: "
                         f"{', '.join(CORPUS)}") from None
