"""Example kernel factories for ``kernelcast properties examples/kernels.py:NAME``."""

import loopy as lp
import numpy as np


def scale():
    """The paper's §3.1 example: out[i] = 2*a[i], 256 work-items per group."""
    knl = lp.make_kernel("{[i]: 0<=i<n}", "out[i] = 2*a[i]", lang_version=(2018, 2),
                         assumptions="n >= 1")
    knl = lp.add_dtypes(knl, {"a": np.float32})
    return lp.split_iname(knl, "i", 256, outer_tag="g.0", inner_tag="l.0")


def spmv_csr():
    """Sparse matrix-vector product in CSR form: its row lengths come from data."""
    knl = lp.make_kernel(
        ["{[i]: 0<=i<n}", "{[jj]: 0<=jj<rowlen}"],
        """
        for i
            <> start = row_ptr[i]
            <> rowlen = row_ptr[i+1] - start
            y[i] = sum(jj, values[start + jj] * x[cols[start + jj]])
        end
        """,
        [lp.GlobalArg("row_ptr, cols", np.int32, shape=lp.auto),
         lp.GlobalArg("values, x", np.float32, shape=lp.auto), lp.ValueArg("n", np.int32),
         "..."],
        lang_version=(2018, 2), assumptions="n >= 1", name="spmv_csr")
    return lp.split_iname(knl, "i", 128, outer_tag="g.0", inner_tag="l.0")


def transpose_naive():
    """out = aᵀ, n×n float32, one element per work-item in 32×32 groups: reads coalesced,
    writes strided by a row (``kernelcast advise`` reports the L1/L2 granularity)."""
    from kernelcast.suites.kernels import transpose

    return transpose("write_strided", gsize=(32, 32))


def transpose_tiled():
    """out = aᵀ through a 32×32 tile of local memory (lp.add_prefetch): both global
    accesses coalesced, the tile read across its rows."""
    from kernelcast.suites.kernels import transpose

    return transpose("prefetch", gsize=(32, 32))
