"""Microbenchmarks that extend the measurement suite for kernelcast's extended model.

The paper's measurement kernels all run with far more work-items than a GPU holds at once,
and none reads the same global data from several work-items. Kernels that users write
often do both: few, long-running work-items (reductions, products with one output per
work-item) and neighbouring work-items sharing data through the caches (stencils). These
two classes measure exactly those behaviours, so that the extended model's parallelism and
data-volume terms (kernelcast.models.features) have measurements to be fitted from:

- ``parallelism``: n work-items each run a loop of m steps, with n swept from one
  work-group to a few hundred thousand work-items at several loop lengths. Variants:
  ``columns`` (two coalesced streams, a[k, i]·b[k, i]), ``rows`` (two streams read along
  each work-item's own row, a[i, k]·b[i, k]) and ``local`` (a vector staged through
  local memory in group-sized tiles and read by every work-item).
- ``reuse``: a sliding-window sum of r neighbours, out[i] = Σ_{j<r} a[i+j], for r from 1
  to 27: the loads grow with r while the data moved from memory does not.

They were written after the validation kernels had shown these behaviours; no validation
or test kernel is among them, and they are never evaluated on (docs/suites.md).

Public names: EXTENSION, parallelism, reuse.
"""

from __future__ import annotations

import loopy as lp
import numpy as np

from kernelcast.suites.kernels import _make, _split_1d
from kernelcast.suites.suite import KernelClass, Suite

PARALLELISM_VARIANTS = ("columns", "rows", "local")
REUSE_WINDOWS = (1, 3, 9, 27)
MAX_ELEMENTS = 2 ** 26  # largest n·m of the parallelism class (512 MiB per float64 array)


def parallelism(variant: str, gsize=256, dtype=np.float32):
    """n work-items, each reducing m terms (see the module docstring for the variants)."""
    if variant == "columns":
        knl = _make("{[i,k]: 0<=i<n and 0<=k<m}", "out[i] = sum(k, a[k,i]*b[k,i])",
                    [lp.GlobalArg("a, b", dtype, shape=("m", "n")),
                     lp.GlobalArg("out", dtype, shape="n"), "..."],
                    name="parallelism_columns", assumptions="n, m >= 1")
        return _split_1d(knl, "i", gsize)
    if variant == "rows":
        knl = _make("{[i,k]: 0<=i<n and 0<=k<m}", "out[i] = sum(k, a[i,k]*b[i,k])",
                    [lp.GlobalArg("a, b", dtype, shape=("n", "m")),
                     lp.GlobalArg("out", dtype, shape="n"), "..."],
                    name="parallelism_rows", assumptions="n, m >= 1")
        return _split_1d(knl, "i", gsize)
    if variant == "local":
        gsize = int(gsize)
        knl = _make("{[i,k]: 0<=i<n and 0<=k<m}", "out[i] = a[i]*sum(k, x[k]*x[k])",
                    [lp.GlobalArg("a, out", dtype, shape="n"),
                     lp.GlobalArg("x", dtype, shape="m"), "..."],
                    name="parallelism_local",
                    assumptions=f"n >= 1 and m >= 1 and m mod {gsize} = 0")
        knl = _split_1d(knl, "i", gsize)
        knl = lp.split_iname(knl, "k", gsize)
        knl = lp.add_prefetch(knl, "x", ["k_inner"],
                              fetch_outer_inames=frozenset(["i_outer", "k_outer"]),
                              default_tag="l.0")
        return knl
    raise ValueError(f"unknown parallelism variant {variant!r}; known: {PARALLELISM_VARIANTS}")


def reuse(gsize=256, dtype=np.float32):
    """out[i] = Σ_{j<r} a[i+j]: r loads per work-item, neighbours share all but one."""
    knl = _make("{[i,j]: 0<=i<n and 0<=j<r}", "out[i] = sum(j, a[i+j])",
                [lp.GlobalArg("a", dtype, shape="n+r"), lp.GlobalArg("out", dtype, shape="n"),
                 "..."],
                name="reuse", assumptions="n >= 1 and r >= 1")
    return _split_1d(knl, "i", gsize)


def _dtype(case):
    return np.dtype(case.dtype).type


def _parallelism_sizes(variant, p):
    """n = 2^(p+2t) work-items for t = 0..5, loops of m = 2^8, 2^11, 2^14, n·m ≤ 2^26."""
    return [{"n": 2 ** (p + 2 * t), "m": 2 ** q} for t in range(6) for q in (8, 11, 14)
            if 2 ** (p + 2 * t + q) <= MAX_ELEMENTS]


def _reuse_sizes(variant, p):
    return [{"n": 2 ** (p + 2 * t), "r": r} for t in range(4) for r in REUSE_WINDOWS]


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
                lambda c: parallelism(c.variant, c.group_size[0], _dtype(c)),
                _parallelism_sizes, (8, 9), group_sizes=((256, 1),),
                reference=_ref_parallelism, check_params={"n": 300, "m": 512}),
    KernelClass("reuse", "kernelcast: sliding-window sums", ("",),
                lambda c: reuse(c.group_size[0], _dtype(c)), _reuse_sizes, (18, 19),
                group_sizes=((256, 1),), reference=_ref_reuse,
                check_params={"n": 1001, "r": 9}),
))
