"""The untuned matrix product the tune tests and the fuzz write into kernel files:
out = a @ b with a reduction of 4, no loop mapped to the hardware yet.

Public names: matmul_source.
"""

_MATMUL = '''

def NAME():
    return lp.make_kernel(
        "{[i, j, k]: 0 <= i < n and 0 <= j < m and 0 <= k < 4}",
        "out[i, j] = sum(k, a[i, k] * b[k, j])",
        [lp.GlobalArg("a", np.float32, shape=("n", 4)),
         lp.GlobalArg("b", np.float32, shape=(4, "m")),
         lp.GlobalArg("out", np.float32, shape=("n", "m"), is_output=True),
         lp.ValueArg("n, m", np.int32)],
        name="mm", lang_version=(2018, 2))
'''


def matmul_source(name: str = "build") -> str:
    """The factory *name*'s source; the file needs ``import loopy as lp`` and ``import
    numpy as np`` above it."""
    return _MATMUL.replace("NAME", name)
