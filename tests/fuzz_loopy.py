"""Loopy kernel-file inputs of the command-line fuzz (tests/fuzzing.py): a file of kernel
factories, good ones and ones that fail in every way; Python files that fail at import,
are not Python or not UTF-8; and sizes and statistics, good and malformed.

Public names: KERNELS, FACTORIES, BROKEN_FILES, SIZES_GOOD, SIZES_BAD, STATS.
"""

KERNELS = '''"""Kernel factories for the fuzz: good ones and ones that fail in every way."""
import sys

import loopy as lp
import numpy as np


def scale():
    knl = lp.make_kernel("{[i]: 0<=i<n}", "out[i] = 2*a[i]", lang_version=(2018, 2),
                         assumptions="n >= 1")
    knl = lp.add_dtypes(knl, {"a": np.float32})
    return lp.split_iname(knl, "i", 128, outer_tag="g.0", inner_tag="l.0")


def loop_kernel():
    return scale().default_entrypoint


def sequential():
    knl = lp.make_kernel("{[i, j]: 0<=i<n and 0<=j<m}", "out[i] = sum(j, a[i, j])",
                         lang_version=(2018, 2), assumptions="n >= 1 and m >= 1")
    return lp.add_dtypes(knl, {"a": np.float32})


def untyped():
    knl = lp.make_kernel("{[i]: 0<=i<n}", "out[i] = 2*a[i]", lang_version=(2018, 2))
    return lp.split_iname(knl, "i", 32, outer_tag="g.0", inner_tag="l.0")


def divides():
    return 1 / 0


def needs(n, m=3):
    return n


def keyword_only(*, n):
    return n


def variadic(*args, **kwargs):
    return scale()


def number():
    return 42


def nothing():
    return None


def source():
    return "out[i] = 2*a[i]"


def exits():
    sys.exit(3)


def recurses():
    return recurses()


def import_error():
    import no_such_module_for_the_fuzz  # noqa: F401


class Factory:
    def __call__(self):
        return scale()


instance = Factory()
not_callable = 5
'''

FACTORIES = ("scale", "loop_kernel", "sequential", "untyped", "divides", "needs",
             "keyword_only", "variadic", "number", "nothing", "source", "exits", "recurses",
             "import_error", "instance", "Factory", "not_callable", "missing", "")

BROKEN_FILES = {
    "import_error.py": b"import no_such_module_for_the_fuzz\n",
    "raises.py": b"raise ValueError('at import')\n",
    "exits.py": b"import sys\nsys.exit(4)\n",
    "syntax.py": b"def scale(:\n    pass\n",
    "indent.py": b"def scale():\nreturn 1\n",
    "latin1.py": b"# caf\xe9\nx = '\xe9'\ndef scale():\n    return x\n",
    "empty.py": b"",
    "binary.py": bytes(range(256)),
    "notpython.txt": KERNELS.encode(),
    "kernels": KERNELS.encode(),
}

SIZES_GOOD = ("n=1000", "n=4096", "n=1", "n=128")
SIZES_BAD = ("n=0", "n=-1", f"n={2**31}", f"n={2**63}", "n=1e99", "n=1e999", "n=x", "n=",
             "=5", "n", "n=1.5", "n=nan", "n=inf", "n=-inf", "n=0x10", "n==5", "n=5=6",
             f"n={10**30}", "n=" + "9" * 5000, "n=\u0663", " n = 7 ", "m=3", "n=1e3",
             "n=-0", "N=10", "n=10 ", "n=1_000", "", "=", "==", "n=\x7f")
STATS = ("rowlen=12.5", "rowlen=0", "rowlen=-1", "rowlen=x", "rowlen", "=3", "rowlen=",
         "rowlen=nan", "rowlen=inf", "rowlen=1e308", "foo=1", "rowlen=1", "insn=0.5")
