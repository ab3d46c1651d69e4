"""The untuned matrix product the tune tests and the fuzz share: out = a @ b with a
reduction of 4, no loop mapped to the hardware yet. As source a kernel file holds
(``matmul_source``), as a Loopy factory (``build``) with the sizes it runs at on PoCL
(``PARAMS``), and as the files a user hands `kernelcast tune`: a kernel file
(``FACTORY``, whose factory is ``build``) and a space file (``SPACE_TOML``, 8 variants).

Public names: matmul_source, build, PARAMS, FACTORY, SPACE_TOML.
"""

import loopy as lp
import numpy as np

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


_namespace = {"lp": lp, "np": np}
exec(matmul_source("build"), _namespace)  # the factory a kernel file holds, here
build = _namespace["build"]
PARAMS = {"n": 24, "m": 40}
FACTORY = "import loopy as lp\nimport numpy as np\n" + matmul_source()
SPACE_TOML = "[axes.j]\ngroup = [4, 8]\nper_item = [1, 2]\n[axes.i]\ngroup = [1, 2]\n"
