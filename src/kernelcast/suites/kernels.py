"""Loopy kernel generators for the paper's kernels (Stevens & Klöckner §3.1, §4.1, §5).

Each generator returns a Loopy TranslationUnit with dtypes fixed and hardware axes tagged,
ready for kernelcast.extract_properties and for execution. A 1-D group size is an int; a
2-D group size is (x, y) in work-items, x along local axis 0. docs/suites.md says where a
kernel's details go beyond what the paper states.

Public names: scale, matmul_tiled, matmul_naive, scale_add, transpose, global_access,
filled_stride, arithmetic, empty, finite_difference, nbody, convolution, ARITHMETIC_OPS,
TRANSPOSE_VARIANTS, GLOBAL_ACCESS_VARIANTS, FILLED_TERMS, arithmetic_expression; and the
builders the other suites share: make_kernel, split_1d, split_2d, group_2d, literal.
"""

from __future__ import annotations

import loopy as lp
import numpy as np

LANG = (2018, 2)
ARITHMETIC_OPS = ("add", "mul", "div", "pow", "rsqrt")
TRANSPOSE_VARIANTS = ("prefetch", "read_strided", "write_strided")
GLOBAL_ACCESS_VARIANTS = ("copy", "sum4", "index")
FILLED_TERMS = 256  # pairwise (triowise) sums per work-item in the filled-stride kernels


def make_kernel(domains, instructions, args=("...",), **kwargs):
    """lp.make_kernel in the Loopy language version every suite kernel is written in."""
    return lp.make_kernel(domains, instructions, list(args), lang_version=LANG, **kwargs)


def group_2d(gsize) -> tuple[int, int]:
    """A 2-D group size (x, y) as ints."""
    gx, gy = gsize
    return int(gx), int(gy)


def split_1d(knl, iname, gsize):
    """*iname* split into work-groups of *gsize* work-items along axis 0."""
    return lp.split_iname(knl, iname, int(gsize), outer_tag="g.0", inner_tag="l.0")


def split_2d(knl, row, col, gsize):
    """Rows on local axis 1, columns (the fast axis of row-major data) on local axis 0."""
    gx, gy = group_2d(gsize)
    knl = lp.split_iname(knl, row, gy, outer_tag="g.1", inner_tag="l.1")
    return lp.split_iname(knl, col, gx, outer_tag="g.0", inner_tag="l.0")


def literal(value: float, dtype) -> str:
    """A float literal of the kernel's precision: Loopy reads 0.5f as float32 and 0.5d as
    float64, but a bare 0.5 as float32 whenever float32 holds it exactly."""
    return f"{float(value)!r}" + ("f" if np.dtype(dtype) == np.float32 else "d")


# {{{ §3.1 and the measurement kernels (§4.1)

def scale(gsize=256, dtype=np.float32):
    """The example of §3.1: ``out[i] = 2*a[i]``."""
    knl = make_kernel("{[i]: 0<=i<n}", "out[i] = 2*a[i]", name="scale", assumptions="n >= 1")
    knl = lp.add_dtypes(knl, {"a": dtype})
    return split_1d(knl, "i", gsize)


def matmul_tiled(gsize=(16, 16), dtype=np.float32):
    """c = a @ b for row-major a (n×m) and b (m×l), prefetching tiles into local memory.

    Each work-group computes a gy×gx tile of c; a is fetched in gy×gx tiles and b in
    gx×gx tiles along the summation axis (square gsz×gsz tiles when gx = gy, §4.1).
    """
    gx, _gy = group_2d(gsize)
    knl = make_kernel("{[i,j,k]: 0<=i<n and 0<=j<l and 0<=k<m}",
                "c[i, j] = sum(k, a[i, k]*b[k, j])",
                name="matmul_tiled", assumptions="n, m, l >= 1")
    knl = lp.add_dtypes(knl, {"a, b": dtype})
    knl = split_2d(knl, "i", "j", gsize)
    knl = lp.split_iname(knl, "k", gx)
    knl = lp.add_prefetch(knl, "a", ["i_inner", "k_inner"], default_tag="l.auto")
    knl = lp.add_prefetch(knl, "b", ["k_inner", "j_inner"], default_tag="l.auto")
    return lp.add_inames_for_unused_hw_axes(knl)


def matmul_naive(gsize=(16, 16), dtype=np.float32):
    """c = a @ b for square row-major n×n matrices, one element of c per work-item."""
    knl = make_kernel("{[i,j,k]: 0<=i,j,k<n}", "c[i, j] = sum(k, a[i, k]*b[k, j])",
                name="matmul_naive", assumptions="n >= 1")
    knl = lp.add_dtypes(knl, {"a, b": dtype})
    return split_2d(knl, "i", "j", gsize)


def scale_add(stride=1, gsize=256, dtype=np.float32):
    """z = alpha*x + beta*y on every *stride*-th element of length-n vectors."""
    s = int(stride)
    knl = make_kernel("{[i]: 0<=i and %d*i<n}" % s,
                f"z[{s}*i] = alpha*x[{s}*i] + beta*y[{s}*i]",
                [lp.GlobalArg("x, y, z", dtype, shape="n"), lp.ValueArg("alpha, beta", dtype),
                 lp.ValueArg("n", np.int32)],
                name=f"scale_add_s{s}", assumptions="n >= 1")
    return split_1d(knl, "i", gsize)


def transpose(variant="prefetch", gsize=(16, 16), dtype=np.float32):
    """out = aᵀ for square row-major n×n matrices, one element per work-item.

    ``prefetch`` stages tiles in local memory so that both reads and writes have stride 1;
    ``read_strided`` writes with stride 1 and reads with stride n; ``write_strided`` reads
    with stride 1 and writes with stride n.
    """
    if variant not in TRANSPOSE_VARIANTS:
        raise ValueError(f"transpose variant must be one of {TRANSPOSE_VARIANTS}")
    knl = make_kernel("{[i,j]: 0<=i,j<n}", "out[i, j] = a[j, i]",
                [lp.GlobalArg("a, out", dtype, shape=("n", "n")), "..."],
                name=f"transpose_{variant}", assumptions="n >= 1")
    if variant == "write_strided":
        knl = split_2d(knl, "j", "i", gsize)
    else:
        knl = split_2d(knl, "i", "j", gsize)
    if variant == "prefetch":
        knl = lp.add_prefetch(knl, "a", ["i_inner", "j_inner"], default_tag="l.auto")
    return knl


def global_access(variant="copy", gsize=256, dtype=np.float32):
    """Stride-1 global access: ``copy`` (1 load, 1 store), ``sum4`` (4 loads, 1 store),
    ``index`` (0 loads, 1 store: each element's index)."""
    inputs = {"copy": ["a"], "sum4": ["a", "b", "c", "d"], "index": []}.get(variant)
    if inputs is None:
        raise ValueError(f"global access variant must be one of {GLOBAL_ACCESS_VARIANTS}")
    expr = " + ".join(f"{name}[i]" for name in inputs) or "i"
    knl = make_kernel("{[i]: 0<=i<n}", f"out[i] = {expr}",
                [lp.GlobalArg(", ".join([*inputs, "out"]), dtype, shape="n"), "..."],
                name=f"global_{variant}", assumptions="n >= 1")
    return split_1d(knl, "i", gsize)


def filled_stride(stride=2, gsize=256, dtype=np.float32):
    """Sums of pairwise (stride 2) or triowise (stride 3) sums of a column-major
    stride×N array, with every element used (§4.1 "stride-2/3 filled").

    Each work-group fetches its stride×gsize block into local memory one row at a time —
    elements i, i+stride, i+2·stride, ... then i+1, i+1+stride, ... — and each of the n
    work-items sums FILLED_TERMS column sums of its block, starting at its own column.
    The array has N = gsize·ceil(n/gsize) columns, so every group fetches a full block.
    """
    s, g = int(stride), int(gsize)
    terms = " + ".join(f"xf[{r}, (ii + k) % {g}]" for r in range(s))
    knl = make_kernel(
        ["{[io, ii, k]: 0<=io and %d*io<n and 0<=ii<%d and 0<=k<%d}" % (g, g, FILLED_TERMS),
         "{[fr, fi]: 0<=fr<%d and 0<=fi<%d}" % (s, g)],
        f"""
        xf[fr, fi] = x[fr, {g}*io + fi] {{id=fetch}}
        if {g}*io + ii < n
            out[{g}*io + ii] = sum(k, {terms}) {{dep=fetch}}
        end
        """,
        [lp.GlobalArg("x", dtype, shape=(s, f"{g}*((n + {g - 1}) // {g})"), order="F"),
         lp.GlobalArg("out", dtype, shape="n"),
         lp.TemporaryVariable("xf", dtype, shape=(s, g), address_space=lp.AddressSpace.LOCAL),
         lp.ValueArg("n", np.int32)],
        name=f"filled_stride{s}", assumptions="n >= 1")
    return lp.tag_inames(knl, {"io": "g.0", "ii": "l.0", "fi": "l.0"})


def arithmetic_expression(op: str, dtype) -> str:
    """6-10 operations of one kind on values made from the indices i, j and s."""
    c = lambda v: literal(v, dtype)  # noqa: E731
    if op == "add":
        return (f"((s + {c(0.5)}) - (i + {c(0.25)})) + ((j + {c(1.5)}) - (s - {c(2.5)}))"
                f" + (i - {c(0.75)})")
    if op == "mul":
        return (f"(s*{c(1.0001)})*(i*{c(0.9999)})*(j*{c(1.0002)})*(s*{c(0.9998)})"
                f"*{c(1.0003)}")
    if op == "div":
        return (f"(s / {c(1.01)} / {c(1.02)}) + (i / {c(1.03)} / {c(1.04)})"
                f" + (j / {c(1.05)} / {c(1.06)})")
    if op == "pow":
        return (f"(((s + {c(0.5)})**{c(1.01)})**{c(1.02)})**{c(0.97)}"
                f" + (((i + j + {c(0.5)})**{c(0.99)})**{c(1.03)})**{c(0.98)}")
    if op == "rsqrt":
        return " + ".join(f"rsqrt({v} + {c(k + 1.0)})"
                          for k, v in enumerate(["s", "i", "j", "s", "i", "j"]))
    raise ValueError(f"arithmetic op must be one of {ARITHMETIC_OPS}")


def arithmetic(op="add", gsize=(16, 16), dtype=np.float32):
    """An n×n output, each element a sum over s < k of an expression of 6-10 operations
    of one kind (add/subtract, multiply, divide, power, rsqrt) on its indices; no global
    loads."""
    knl = make_kernel("{[i,j,s]: 0<=i,j<n and 0<=s<k}",
                f"out[i, j] = sum(s, {arithmetic_expression(op, dtype)})",
                [lp.GlobalArg("out", dtype, shape=("n", "n")), lp.ValueArg("n, k", np.int32)],
                name=f"arith_{op}", assumptions="n >= 1 and k >= 1")
    return split_2d(knl, "i", "j", gsize)


def empty(gsize=(16, 16)):
    """No work: launches the groups of an n×n grid, one work-item per element."""
    knl = make_kernel("{[i,j]: 0<=i,j<n}", "for i, j\n ... nop\nend",
                [lp.ValueArg("n", np.int32)], name="empty", assumptions="n >= 1")
    return split_2d(knl, "i", "j", gsize)

# }}}


# {{{ the test kernels (§5)

def finite_difference(gsize=(16, 16), dtype=np.float32):
    """5-point stencil with a quadratic source term on an n×n grid (§5).

    ``u`` is (n+2)×(n+2) with a one-cell halo; each work-group prefetches its gy×gx tile
    plus halo into local memory.
    """
    knl = make_kernel("{[i,j]: 0<=i,j<n}",
                "result[i+1, j+1] = u[i+1, j+1]**2 + -1 + (-4)*u[i+1, j+1]"
                " + u[i+2, j+1] + u[i, j+1] + u[i+1, j+2] + u[i+1, j]",
                [lp.GlobalArg("u", dtype, shape=("n+2", "n+2")),
                 lp.GlobalArg("result", dtype, shape=("n+2", "n+2")), "..."],
                name="finite_difference", assumptions="n >= 1")
    knl = split_2d(knl, "i", "j", gsize)
    return lp.add_prefetch(knl, "u", ["i_inner", "j_inner"], fetch_bounding_box=True,
                           default_tag="l.auto")


def nbody(gsize=256, dtype=np.float32):
    """Sum of inverse distances from each of n points to all others (§5).

    Positions are a 3×n column-major array. Each work-item keeps its own point in private
    memory; each work-group prefetches the other points in 3×gsize blocks into local
    memory, one column per work-item.
    """
    g = int(gsize)
    knl = make_kernel("{[i,j,k]: 0<=i,j<n and 0<=k<3}",
                "pot[i] = sum(j, rsqrt(sum(k, (x$i[k, i] - x$j[k, j])**2)) if i != j else 0)",
                [lp.GlobalArg("x", dtype, shape=(3, "n"), order="F"), "..."],
                name="nbody", assumptions="n >= 1")
    knl = split_1d(knl, "i", g)
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
    m[i, c, w+x-ξ, w+y-η] * f[j, c, w+ξ, w+η]`` with w = 3: the paper's formula with each
    image stored one color plane after another and padded to (n+2w)×(n+2w). Each
    work-group computes a gy×gx tile of one filter's output for all three images; it
    prefetches its filter, and for each image the tile of all three planes plus halo.
    """
    knl = make_kernel(
        "{[i, j, c, x, y, xi, eta]: 0<=i,j,c<3 and 0<=x,y<n and -3<=xi,eta<=3}",
        "r[i, j, x, y] = sum((c, xi, eta), m[i, c, 3+x-xi, 3+y-eta] * f[j, c, 3+xi, 3+eta])",
        [lp.GlobalArg("m", dtype, shape=(3, 3, "n+6", "n+6")),
         lp.GlobalArg("f", dtype, shape=(3, 3, 7, 7)),
         lp.GlobalArg("r", dtype, shape=(3, 3, "n", "n")), "..."],
        name="convolution", assumptions="n >= 1")
    knl = split_2d(knl, "x", "y", gsize)
    knl = lp.tag_inames(knl, {"j": "g.2"})
    knl = lp.add_prefetch(knl, "f[j,:,:,:]", fetch_outer_inames="y_outer, x_outer, j",
                          default_tag="l.auto")
    return lp.add_prefetch(knl, "m", ["c", "x_inner", "y_inner", "xi", "eta"],
                           fetch_outer_inames="y_outer, x_outer, j, i",
                           fetch_bounding_box=True, default_tag="l.auto")

# }}}
