"""Untuned kernel factories for ``kernelcast tune examples/tunable.py:NAME``.

Each kernel's parallel loops are left unmapped to the hardware, so ``kernelcast tune``
can explore their work-groups, tasks per work-item, unrolling, split reductions and
prefetches (docs/tuning.md). Each docstring gives the sizes to pass, e.g.::

    kernelcast tune examples/tunable.py:softmax --param rows=4096 cols=1024 \\
        --model hong-kim --hardware h100 --measure-top 3
"""

import loopy as lp
import numpy as np


def softmax():
    """Row-wise softmax of a rows × cols float32 matrix: the row's maximum, the sum of
    exp(a - max), then each element's exp(a - max) / sum; one row per work-item
    (``--param rows=4096 cols=1024``)."""
    return lp.make_kernel(
        "{[i, j, k, l]: 0 <= i < rows and 0 <= j, k, l < cols}",
        """
        <> top = reduce(max, j, a[i, j])
        <> total = sum(k, exp(a[i, k] - top))
        out[i, l] = exp(a[i, l] - top) / total
        """,
        [lp.GlobalArg("a", np.float32, shape=("rows", "cols")),
         lp.GlobalArg("out", np.float32, shape=("rows", "cols"), is_output=True),
         lp.ValueArg("rows, cols", np.int32)],
        name="softmax", lang_version=(2018, 2))


def matmul():
    """c = a b, n × n float32, one element of c per task (``--param n=1024``)."""
    return lp.make_kernel(
        "{[i, j, k]: 0 <= i, j, k < n}",
        "c[i, j] = sum(k, a[i, k] * b[k, j])",
        [lp.GlobalArg("a, b", np.float32, shape=("n", "n")),
         lp.GlobalArg("c", np.float32, shape=("n", "n"), is_output=True),
         lp.ValueArg("n", np.int32)],
        name="matmul", lang_version=(2018, 2))


def matvec():
    """y = a x, n × n float32: a reduction per row, which the default space may split
    across work-items (``--param n=4096``)."""
    return lp.make_kernel(
        "{[i, j]: 0 <= i, j < n}",
        "y[i] = sum(j, a[i, j] * x[j])",
        [lp.GlobalArg("a", np.float32, shape=("n", "n")),
         lp.GlobalArg("x", np.float32, shape=("n",)),
         lp.GlobalArg("y", np.float32, shape=("n",), is_output=True),
         lp.ValueArg("n", np.int32)],
        name="matvec", lang_version=(2018, 2))


def stencil2d():
    """One 5-point Jacobi step on the interior of an n × n float32 grid (its border is
    not written). Its loops start at 0, so the tile of u can be prefetched into local
    memory with its halo (``--param n=4096``)."""
    return lp.make_kernel(
        "{[i, j]: 0 <= i, j < n - 2}",
        "v[i + 1, j + 1] = 0.2f * (u[i + 1, j + 1] + u[i, j + 1] + u[i + 2, j + 1]"
        " + u[i + 1, j] + u[i + 1, j + 2])",
        [lp.GlobalArg("u", np.float32, shape=("n", "n")),
         lp.GlobalArg("v", np.float32, shape=("n", "n"), is_output=True),
         lp.ValueArg("n", np.int32)],
        name="stencil2d", lang_version=(2018, 2))


def transpose():
    """b = aᵀ, n × n float32: whichever loop is fastest, one of the two global accesses
    is strided (``--param n=4096``)."""
    return lp.make_kernel(
        "{[i, j]: 0 <= i, j < n}",
        "b[i, j] = a[j, i]",
        [lp.GlobalArg("a", np.float32, shape=("n", "n")),
         lp.GlobalArg("b", np.float32, shape=("n", "n"), is_output=True),
         lp.ValueArg("n", np.int32)],
        name="transpose", lang_version=(2018, 2))
