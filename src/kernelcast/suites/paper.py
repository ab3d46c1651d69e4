"""The paper's two suites: the measurement kernels of §4.1 and the test kernels of §5.

Size cases follow the paper's formulas with the base exponent p as a parameter; group sizes
are the set the paper used on its newest GPU (Titan X) for the measurement classes, and the
256-work-item groups it reports for the test kernels. docs/suites.md lists everything next
to the paper's text.

Public names: MEASUREMENT, TEST, MEASUREMENT_CPU, TEST_CPU, TEST_SUITE_OF, get_suite and
all_suites (which also know the suites of the other modules of kernelcast.suites), and
case_of (a suite case from a plan entry's suite, class, variant, dtype, group, p and
params, as benchmark plans record them).
"""

from __future__ import annotations

import numpy as np

from kernelcast.errors import UsageError
from kernelcast.suites import kernels as k
from kernelcast.suites.suite import KernelClass, Suite, one_d

ARITHMETIC_K = (256, 512, 728)


def _dtype(case):
    return np.dtype(case.dtype).type


def _powers(count, step=1):
    return lambda variant, p, group: [{"n": 2 ** (p + step * t)} for t in range(count)]


def _matmul_shapes(variant, p, group):
    """§4.1's shape cases with the largest dimension N = 2^(p+t): one dimension halved."""
    shapes = {"square": (1, 1, 1), "l_half": (1, 1, 2), "m_half": (1, 2, 1),
              "n_half": (2, 1, 1)}[variant]
    sizes = []
    for t in range(4):
        big = 2 ** (p + t)
        sizes.append({name: big // div for name, div in zip("nml", shapes, strict=True)})
    return sizes


def _arithmetic_sizes(variant, p, group):
    return [{"n": 2 ** (p + t), "k": kk} for kk in ARITHMETIC_K for t in range(3)]


def _skinny_sizes(variant, p, group):
    return [{"n": 2 ** (p + t), "l": 2 ** (p + t), "m": 8 * 2 ** (p + t)} for t in range(4)]


MEASUREMENT = Suite("measurement", (
    KernelClass("matmul_tiled", "§4.1 Matrix Multiplication",
                ("square", "l_half", "m_half", "n_half"),
                lambda c: k.matmul_tiled(c.group_size, _dtype(c)), _matmul_shapes,
                (7, 8, 9), "2-D Large", reference="matmul",
                check_params={"n": 37, "m": 50, "l": 45}),
    KernelClass("matmul_naive", "§4.1 Naive Matrix Multiplication", ("",),
                lambda c: k.matmul_naive(c.group_size, _dtype(c)), _powers(4),
                (6, 8, 9), "2-D Large", reference="matmul",
                check_params={"n": 45}),
    KernelClass("scale_add", "§4.1 Vector Scale and Add", ("1", "2", "3"),
                lambda c: k.scale_add(int(c.variant), one_d(c), _dtype(c)), _powers(4, 2),
                (18, 20, 21), "1-D Large",
                check_params={"n": 1003}),
    KernelClass("transpose", "§4.1 Transpose", k.TRANSPOSE_VARIANTS,
                lambda c: k.transpose(c.variant, c.group_size, _dtype(c)), _powers(4),
                (10, 11), "2-D Med",
                check_params={"n": 45}),
    KernelClass("global_access", "§4.1 Stride-1 Global Access", k.GLOBAL_ACCESS_VARIANTS,
                lambda c: k.global_access(c.variant, one_d(c), _dtype(c)), _powers(9),
                (17, 18, 19, 20), "1-D Large",
                check_params={"n": 1001}),
    KernelClass("filled_stride", "§4.1 Stride-2 and Stride-3 Filled Global Access", ("2", "3"),
                lambda c: k.filled_stride(int(c.variant), one_d(c), _dtype(c)),
                _powers(4, 3), (15, 16, 17), "1-D Large",
                check_params={"n": 600}),
    KernelClass("arithmetic", "§4.1 Arithmetic Operations", k.ARITHMETIC_OPS,
                lambda c: k.arithmetic(c.variant, c.group_size, _dtype(c)), _arithmetic_sizes,
                (7, 8), "2-D Large",
                check_params={"n": 20, "k": 7}),
    KernelClass("empty", "§4.1 Empty kernel", ("",),
                lambda c: k.empty(c.group_size), _powers(6), (8, 9, 10), "2-D Large",
                dtypes=(),
                check_params={"n": 40}),
))

TEST = Suite("test", (
    KernelClass("finite_difference", "§5 Finite Differences", ("",),
                lambda c: k.finite_difference(c.group_size, _dtype(c)), _powers(4),
                (10, 11), group_sizes=((16, 16),), dtypes=("float32",),
                check_params={"n": 37}),
    KernelClass("skinny_matmul", "§5 'Skinny' Matrix Multiplication", ("",),
                lambda c: k.matmul_tiled(c.group_size, _dtype(c)), _skinny_sizes,
                (9, 10), group_sizes=((16, 16),), dtypes=("float32",), reference="matmul",
                check_params={"n": 20, "l": 20, "m": 160}),
    KernelClass("nbody", "§5 N-Body", ("",),
                lambda c: k.nbody(one_d(c), _dtype(c)), _powers(4),
                (10, 11), group_sizes=((256, 1),), dtypes=("float32",),
                check_params={"n": 300}),
    KernelClass("convolution", "§5 Convolution", ("",),
                lambda c: k.convolution(c.group_size, _dtype(c)), _powers(4),
                (6, 7, 8), group_sizes=((16, 16),), dtypes=("float32",),
                check_params={"n": 21}),
))

# The same suites at sizes a CPU (PoCL) runs in minutes: every p lowered so that the
# largest case has about 10^6-10^8 operations; one group size per class.
MEASUREMENT_CPU = MEASUREMENT.scaled("measurement-cpu", {
    "matmul_tiled": 4, "matmul_naive": 3, "scale_add": 6, "transpose": 4, "global_access": 5,
    "filled_stride": 6, "arithmetic": 4, "empty": 4})
TEST_CPU = TEST.scaled("test-cpu", {
    "finite_difference": 4, "skinny_matmul": 6, "nbody": 3, "convolution": 3})


def all_suites() -> dict[str, Suite]:
    """Every suite kernelcast knows, by name."""
    from kernelcast.suites.extension import EXTENSION
    from kernelcast.suites.poppl_herz import SUITE as POPPL_HERZ
    from kernelcast.suites.poppl_herz import SUITE_CPU as POPPL_HERZ_CPU
    from kernelcast.suites.random_kernels import RANDOM_SUITES
    from kernelcast.suites.validation import VALIDATION

    return {s.name: s for s in (MEASUREMENT, TEST, MEASUREMENT_CPU, TEST_CPU, VALIDATION,
                                EXTENSION, POPPL_HERZ, POPPL_HERZ_CPU, *RANDOM_SUITES)}

TEST_SUITE_OF = {"measurement": "test", "measurement-cpu": "test-cpu"}


def get_suite(name: str) -> Suite:
    suites = all_suites()
    try:
        return suites[name]
    except KeyError:
        raise UsageError(f"unknown suite {name!r}; known: {', '.join(suites)}") from None


def case_of(entry: dict):
    """The suite Case a plan entry names (its keys suite, class, variant, dtype, group,
    p and params)."""
    from kernelcast.suites.suite import Case

    suite = get_suite(entry["suite"])
    return Case(suite.name, suite.kernel_class(entry["class"]), entry["variant"],
                entry["dtype"], tuple(entry["group"]), entry["p"], 0, dict(entry["params"]))
