"""A validation suite of common HPC kernels that are in no fitting set.

Users predict kernels no suite contains; these nine classes measure how well a profile does
on such kernels. None of them may ever be used for fitting (every model's fit_suites names
only measurement and extension suites). Each class has a generator, a NumPy reference and four sizes.
Every generator takes its group size *gsize*, an int for the 1-D kernels and (x, y) for the
2-D ones (x along local axis 0), as kernelcast.suites.kernels' do; its default is the group
size the suite measures.

Public names: VALIDATION and the generators stencil3d, batched_matmul, matvec_rows,
matvec_cols, rotation_f64, column_sums, special_elementwise, stencil2d_f64,
transpose_tiles.
"""

from __future__ import annotations

import loopy as lp
import numpy as np

from kernelcast.suites.kernels import group_2d, make_kernel, split_1d, split_2d
from kernelcast.suites.suite import KernelClass, Suite, one_d


def stencil3d(gsize=(16, 16), dtype=np.float32):
    """7-point Laplacian-like stencil on an n³ grid with a one-cell halo; no prefetch."""
    knl = make_kernel("{[i,j,k]: 0<=i,j,k<n}",
                "out[i+1,j+1,k+1] = 0.5f*u[i+1,j+1,k+1] + 0.125f*(u[i,j+1,k+1] + u[i+2,j+1,k+1]"
                " + u[i+1,j,k+1] + u[i+1,j+2,k+1] + u[i+1,j+1,k] + u[i+1,j+1,k+2])",
                [lp.GlobalArg("u, out", dtype, shape=("n+2", "n+2", "n+2")), "..."],
                name="stencil3d", assumptions="n >= 1")
    knl = split_2d(knl, "j", "k", gsize)
    return lp.tag_inames(knl, {"i": "g.2"})


def batched_matmul(gsize=(16, 16), dtype=np.float32):
    """c[b] = a[b] @ bm[b] for a batch of 16×16 matrices, one matrix per work-group of
    gx × gy work-items (columns on local axis 0): with the default 16 × 16 one element of
    c per work-item; an axis shorter than 16 walks the rest of the matrix in a loop. A group
    axis longer than the matrix's is refused (its extra work-items would have nothing to
    do, and Loopy would launch a smaller group than asked for)."""
    gx, gy = group_2d(gsize)
    if not (1 <= gx <= 16 and 1 <= gy <= 16):
        raise ValueError(f"batched_matmul runs one 16×16 matrix per work-group: its group "
                         f"axes are 1 to 16 work-items, not {gx}×{gy}")
    knl = make_kernel("{[b,i,j,k]: 0<=b<nb and 0<=i,j,k<16}",
                "c[b,i,j] = sum(k, a[b,i,k]*bm[b,k,j])",
                [lp.GlobalArg("a, bm, c", dtype, shape=("nb", 16, 16)), "..."],
                name="batched_matmul", assumptions="nb >= 1")
    knl = lp.tag_inames(knl, {"b": "g.0"})
    # a group axis of 16 takes the matrix axis as it is (the kernel measured in data/)
    for iname, size, axis in (("i", gy, "l.1"), ("j", gx, "l.0")):
        if size == 16:
            knl = lp.tag_inames(knl, {iname: axis})
        else:
            knl = lp.split_iname(knl, iname, size, inner_tag=axis)
    return knl


def matvec_rows(gsize=256, dtype=np.float32):
    """y = A x, row-major A, one row per work-item (neighbouring work-items read rows n
    apart)."""
    knl = make_kernel("{[i,j]: 0<=i,j<n}", "y[i] = sum(j, a[i,j]*x[j])",
                [lp.GlobalArg("a", dtype, shape=("n", "n")),
                 lp.GlobalArg("x, y", dtype, shape="n"), "..."],
                name="matvec_rows", assumptions="n >= 1")
    return split_1d(knl, "i", gsize)


def matvec_cols(gsize=256, dtype=np.float32):
    """y = Aᵀ x for row-major A: work-item i walks column i, so reads are coalesced."""
    knl = make_kernel("{[i,j]: 0<=i,j<n}", "y[i] = sum(j, a[j,i]*x[j])",
                [lp.GlobalArg("a", dtype, shape=("n", "n")),
                 lp.GlobalArg("x, y", dtype, shape="n"), "..."],
                name="matvec_cols", assumptions="n >= 1")
    return split_1d(knl, "i", gsize)


def rotation_f64(gsize=256, dtype=np.float64):
    """BLAS-1 plane rotation (drot): x' = c x + s y, y' = c y − s x."""
    knl = make_kernel("{[i]: 0<=i<n}",
                """
                xo[i] = c*x[i] + s*y[i]
                yo[i] = c*y[i] - s*x[i]
                """,
                [lp.GlobalArg("x, y, xo, yo", dtype, shape="n"), lp.ValueArg("c, s", dtype),
                 lp.ValueArg("n", np.int32)],
                name="rotation", assumptions="n >= 1")
    return split_1d(knl, "i", gsize)


def column_sums(gsize=256, dtype=np.float32):
    """s[j] = sum over i of A[i, j] for an m×n row-major A with m = n/16."""
    knl = make_kernel("{[i,j]: 0<=i<m and 0<=j<n}", "s[j] = sum(i, a[i,j])",
                [lp.GlobalArg("a", dtype, shape=("m", "n")),
                 lp.GlobalArg("s", dtype, shape="n"), "..."],
                name="column_sums", assumptions="n >= 1 and m >= 1")
    return split_1d(knl, "j", gsize)


def special_elementwise(gsize=256, dtype=np.float32):
    """y = exp(-x)·sin(x) + log(x + 1) + sqrt(x): special functions, one pass."""
    knl = make_kernel("{[i]: 0<=i<n}", "y[i] = exp(-x[i])*sin(x[i]) + log(x[i] + 1) + sqrt(x[i])",
                [lp.GlobalArg("x, y", dtype, shape="n"), "..."],
                name="special_elementwise", assumptions="n >= 1")
    return split_1d(knl, "i", gsize)


def stencil2d_f64(gsize=(16, 16), dtype=np.float64):
    """9-point 2-D stencil in float64 on an (n+2)² grid, no prefetch."""
    terms = " + ".join(f"u[i+{a},j+{b}]" for a in range(3) for b in range(3) if (a, b) != (1, 1))
    knl = make_kernel("{[i,j]: 0<=i,j<n}", f"out[i+1,j+1] = 0.2d*u[i+1,j+1] + 0.1d*({terms})",
                [lp.GlobalArg("u, out", dtype, shape=("n+2", "n+2")), "..."],
                name="stencil2d_f64", assumptions="n >= 1")
    return split_2d(knl, "i", "j", gsize)


def transpose_tiles(gsize=(32, 8), dtype=np.float32):
    """out = aᵀ staged through local memory in gx×gx tiles by gx×gy work-groups, each
    work-item moving ceil(gx/gy) elements: 32×32 tiles by 32×8 groups, four elements each,
    by default. A group taller than wide (gy > gx) is refused: the tile has only gx rows."""
    gx, gy = group_2d(gsize)
    if not 1 <= gy <= gx:
        raise ValueError(f"transpose_tiles stages gx×gx tiles through gx×gy groups, so "
                         f"1 ≤ gy ≤ gx; not {gx}×{gy}")
    knl = make_kernel("{[i,j]: 0<=i,j<n}", "out[i, j] = a[j, i]",
                [lp.GlobalArg("a, out", dtype, shape=("n", "n")), "..."],
                name="transpose_tiles", assumptions="n >= 1")
    knl = lp.split_iname(knl, "i", gx, outer_tag="g.1")
    knl = lp.split_iname(knl, "i_inner", gy, outer_tag="unr", inner_tag="l.1")
    knl = lp.split_iname(knl, "j", gx, outer_tag="g.0", inner_tag="l.0")
    knl = lp.add_prefetch(knl, "a", ["i_inner_outer", "i_inner_inner", "j_inner"],
                          fetch_outer_inames="i_outer, j_outer",
                          dim_arg_names=["f_row", "f_col"], default_tag=None)
    knl = lp.split_iname(knl, "f_row", gy, outer_tag="unr", inner_tag="l.1")
    return lp.tag_inames(knl, {"f_col": "l.0"})


# {{{ references

def _f64(a):
    return np.asarray(a, dtype=np.float64)


def _ref_stencil3d(case, a):
    u = _f64(a["u"])
    out = np.full_like(u, np.nan)
    c = u[1:-1, 1:-1, 1:-1]
    out[1:-1, 1:-1, 1:-1] = 0.5 * c + 0.125 * (u[:-2, 1:-1, 1:-1] + u[2:, 1:-1, 1:-1]
                                               + u[1:-1, :-2, 1:-1] + u[1:-1, 2:, 1:-1]
                                               + u[1:-1, 1:-1, :-2] + u[1:-1, 1:-1, 2:])
    return {"out": out.astype(a["u"].dtype)}


def _ref_batched(case, a):
    return {"c": np.einsum("bik,bkj->bij", _f64(a["a"]), _f64(a["bm"])).astype(a["a"].dtype)}


def _ref_matvec_rows(case, a):
    return {"y": (_f64(a["a"]) @ _f64(a["x"])).astype(a["x"].dtype)}


def _ref_matvec_cols(case, a):
    return {"y": (_f64(a["a"]).T @ _f64(a["x"])).astype(a["x"].dtype)}


def _ref_rotation(case, a):
    x, y, c, s = _f64(a["x"]), _f64(a["y"]), float(a["c"]), float(a["s"])
    return {"xo": c * x + s * y, "yo": c * y - s * x}


def _ref_column_sums(case, a):
    return {"s": _f64(a["a"]).sum(axis=0).astype(a["a"].dtype)}


def _ref_special(case, a):
    x = _f64(a["x"])
    return {"y": (np.exp(-x) * np.sin(x) + np.log(x + 1) + np.sqrt(x)).astype(a["x"].dtype)}


def _ref_stencil2d(case, a):
    u = _f64(a["u"])
    out = np.full_like(u, np.nan)
    n = u.shape[0] - 2
    ring = sum(u[i:i + n, j:j + n] for i in range(3) for j in range(3) if (i, j) != (1, 1))
    out[1:-1, 1:-1] = 0.2 * u[1:-1, 1:-1] + 0.1 * ring
    return {"out": out}


def _ref_transpose(case, a):
    return {"out": np.ascontiguousarray(a["a"].T)}

# }}}


def _sizes(formula):
    return lambda variant, p, group: [formula(p + t) for t in range(4)]


def _dtype(case):
    return np.dtype(case.dtype).type


VALIDATION = Suite("validation", (
    KernelClass("stencil3d", "3-D 7-point stencil", ("",),
                lambda c: stencil3d(c.group_size, _dtype(c)), _sizes(lambda e: {"n": 2**e}),
                (6, 7), group_sizes=((16, 16),), dtypes=("float32",),
                reference=_ref_stencil3d, check_params={"n": 21}),
    KernelClass("batched_matmul", "batched 16×16 matrix products", ("",),
                lambda c: batched_matmul(c.group_size, _dtype(c)),
                _sizes(lambda e: {"nb": 2**e}), (10, 12), group_sizes=((16, 16),),
                dtypes=("float32",), reference=_ref_batched, check_params={"nb": 5}),
    KernelClass("matvec_rows", "matrix-vector product, one row per work-item", ("",),
                lambda c: matvec_rows(one_d(c), _dtype(c)),
                _sizes(lambda e: {"n": 2**e}), (11, 12), group_sizes=((256, 1),),
                dtypes=("float32",), reference=_ref_matvec_rows, check_params={"n": 300}),
    KernelClass("matvec_cols", "transposed matrix-vector product, coalesced", ("",),
                lambda c: matvec_cols(one_d(c), _dtype(c)),
                _sizes(lambda e: {"n": 2**e}), (11, 12), group_sizes=((256, 1),),
                dtypes=("float32",), reference=_ref_matvec_cols, check_params={"n": 300}),
    KernelClass("rotation_f64", "BLAS-1 plane rotation, float64", ("",),
                lambda c: rotation_f64(one_d(c), _dtype(c)),
                _sizes(lambda e: {"n": 2**e}), (20, 22), group_sizes=((256, 1),),
                dtypes=("float64",), reference=_ref_rotation, check_params={"n": 1001}),
    KernelClass("column_sums", "column sums of a row-major matrix (a reduction)", ("",),
                lambda c: column_sums(one_d(c), _dtype(c)),
                _sizes(lambda e: {"n": 2**e, "m": 2**e // 16}), (12, 13),
                group_sizes=((256, 1),), dtypes=("float32",), reference=_ref_column_sums,
                check_params={"n": 600, "m": 37}),
    KernelClass("special_elementwise", "exp, sin, log and sqrt elementwise", ("",),
                lambda c: special_elementwise(one_d(c), _dtype(c)),
                _sizes(lambda e: {"n": 2**e}), (20, 22), group_sizes=((256, 1),),
                dtypes=("float32",), reference=_ref_special, check_params={"n": 1001}),
    KernelClass("stencil2d_f64", "2-D 9-point stencil, float64", ("",),
                lambda c: stencil2d_f64(c.group_size, _dtype(c)),
                _sizes(lambda e: {"n": 2**e}), (10, 11), group_sizes=((16, 16),),
                dtypes=("float64",), reference=_ref_stencil2d, check_params={"n": 37}),
    KernelClass("transpose_tiles", "transpose through 32×32 local tiles, 32×8 groups", ("",),
                lambda c: transpose_tiles(c.group_size, _dtype(c)),
                _sizes(lambda e: {"n": 2**e}), (10, 11), group_sizes=((32, 8),),
                dtypes=("float32",), reference=_ref_transpose, check_params={"n": 45}),
))
