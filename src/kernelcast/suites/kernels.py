"""Loopy kernel generators for the paper's kernels (Stevens & Klöckner §3.1, §4.1, §5).

Each generator returns a Loopy TranslationUnit with dtypes fixed and hardware axes tagged,
ready for kernelcast.extract_properties and for execution. Group sizes are (x, y) tuples
in work-items, x along local axis 0.

Public names: scale, matmul_tiled, finite_difference, nbody, convolution.
"""

from __future__ import annotations

import loopy as lp
import numpy as np

LANG = (2018, 2)


def _make(domains, instructions, args=("...",), **kwargs):
    return lp.make_kernel(domains, instructions, list(args), lang_version=LANG, **kwargs)


def _group_2d(gsize) -> tuple[int, int]:
    gx, gy = gsize
    return int(gx), int(gy)


def scale(gsize=256, dtype=np.float32):
    """The example of §3.1: ``out[i] = 2*a[i]``."""
    knl = _make("{[i]: 0<=i<n}", "out[i] = 2*a[i]", name="scale", assumptions="n >= 1")
    knl = lp.add_dtypes(knl, {"a": dtype})
    return lp.split_iname(knl, "i", int(gsize), outer_tag="g.0", inner_tag="l.0")


def matmul_tiled(gsize=(16, 16), dtype=np.float32):
    """c = a @ b for row-major a (n×m) and b (m×l), prefetching tiles into local memory.

    Each work-group computes a gy×gx tile of c; a is fetched in gy×gx tiles and b in
    gx×gx tiles along the summation axis (square gsz×gsz tiles when gx = gy, §4.1).
    """
    gx, gy = _group_2d(gsize)
    knl = _make("{[i,j,k]: 0<=i<n and 0<=j<l and 0<=k<m}",
                "c[i, j] = sum(k, a[i, k]*b[k, j])",
                name="matmul_tiled", assumptions="n, m, l >= 1")
    knl = lp.add_dtypes(knl, {"a, b": dtype})
    knl = lp.split_iname(knl, "i", gy, outer_tag="g.1", inner_tag="l.1")
    knl = lp.split_iname(knl, "j", gx, outer_tag="g.0", inner_tag="l.0")
    knl = lp.split_iname(knl, "k", gx)
    knl = lp.add_prefetch(knl, "a", ["i_inner", "k_inner"], default_tag="l.auto")
    knl = lp.add_prefetch(knl, "b", ["k_inner", "j_inner"], default_tag="l.auto")
    return lp.add_inames_for_unused_hw_axes(knl)


def finite_difference(gsize=(16, 16), dtype=np.float32):
    """5-point stencil with a quadratic source term on an n×n grid (§5).

    ``u`` is (n+2)×(n+2) with a one-cell halo; each work-group prefetches its gy×gx tile
    plus halo into local memory.
    """
    gx, gy = _group_2d(gsize)
    knl = _make("{[i,j]: 0<=i,j<n}",
                "result[i+1, j+1] = u[i+1, j+1]**2 + -1 + (-4)*u[i+1, j+1]"
                " + u[i+2, j+1] + u[i, j+1] + u[i+1, j+2] + u[i+1, j]",
                [lp.GlobalArg("u", dtype, shape=("n+2", "n+2")),
                 lp.GlobalArg("result", dtype, shape=("n+2", "n+2")), "..."],
                name="finite_difference", assumptions="n >= 1")
    knl = lp.split_iname(knl, "i", gy, outer_tag="g.1", inner_tag="l.1")
    knl = lp.split_iname(knl, "j", gx, outer_tag="g.0", inner_tag="l.0")
    return lp.add_prefetch(knl, "u", ["i_inner", "j_inner"], fetch_bounding_box=True,
                           default_tag="l.auto")


def nbody(gsize=256, dtype=np.float32):
    """Sum of inverse distances from each of n points to all others (§5).

    Positions are a 3×n column-major array. Each work-item keeps its own point in private
    memory; each work-group prefetches the other points in 3×gsize blocks into local
    memory, one column per work-item.
    """
    g = int(gsize)
    knl = _make("{[i,j,k]: 0<=i,j<n and 0<=k<3}",
                "pot[i] = sum(j, rsqrt(sum(k, (x$i[k, i] - x$j[k, j])**2)) if i != j else 0)",
                [lp.GlobalArg("x", dtype, shape=(3, "n"), order="F"), "..."],
                name="nbody", assumptions="n >= 1")
    knl = lp.split_iname(knl, "i", g, outer_tag="g.0", inner_tag="l.0")
    knl = lp.split_iname(knl, "j", g)
    knl = lp.add_prefetch(knl, "x$j", ["k", "j_inner"], dim_arg_names=["xj_k", "xj_j"],
                          fetch_outer_inames=frozenset(["i_outer", "j_outer"]),
                          default_tag=None)
    knl = lp.tag_inames(knl, {"xj_j": "l.0"})
    return lp.add_prefetch(knl, "x$i", ["k"], dim_arg_names=["xi_k"],
                           fetch_outer_inames=frozenset(["i_outer", "i_inner"]),
                           temporary_address_space=lp.AddressSpace.PRIVATE,
                           default_tag="unr")


def convolution(gsize=(16, 16), dtype=np.float32):
    """Three 7×7 filters over three n×n RGB images (§5).

    ``r[i,j,x,y] = sum over -w<=ξ,η<=w and colors c of
    m[i, w+x-ξ, w+y-η, c] * f[j, w+ξ, w+η, c]`` with w = 3; images are padded to
    (n+2w)×(n+2w). Each work-group handles a gy×gx tile of one output image and
    prefetches its filter.
    """
    gx, gy = _group_2d(gsize)
    knl = _make(
        "{[i, j, c, x, y, xi, eta]: 0<=i,j,c<3 and 0<=x,y<n and -3<=xi,eta<=3}",
        "r[i, j, x, y] = sum((xi, eta, c), m[i, 3+x-xi, 3+y-eta, c] * f[j, 3+xi, 3+eta, c])",
        [lp.GlobalArg("m", dtype, shape=(3, "n+6", "n+6", 3)),
         lp.GlobalArg("f", dtype, shape=(3, 7, 7, 3)),
         lp.GlobalArg("r", dtype, shape=(3, 3, "n", "n")), "..."],
        name="convolution", assumptions="n >= 1")
    knl = lp.split_iname(knl, "y", gx, outer_tag="g.0", inner_tag="l.0")
    knl = lp.split_iname(knl, "x", gy, outer_tag="g.1", inner_tag="l.1")
    knl = lp.tag_inames(knl, {"j": "g.2"})
    knl = lp.add_prefetch(knl, "f[j,:,:,:]", fetch_outer_inames="y_outer, x_outer, j",
                          default_tag="l.auto")
    return knl
