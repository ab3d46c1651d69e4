"""The paper's kernel suites: enumeration per §4.1/§5, and every kernel checked on PoCL
against its NumPy reference."""

import loopy as lp
import numpy as np
import pytest

from kernelcast.errors import KernelcastError, ParameterError
from kernelcast.measure.arrays import array_specs, host_arguments
from kernelcast.suites import kernels
from kernelcast.suites.paper import MEASUREMENT, TEST, get_suite
from kernelcast.suites.extension import EXTENSION
from kernelcast.suites.validation import VALIDATION
from kernelcast.suites.suite import GROUP_SETS, KernelClass, choose_p
from kernelcast.suites.verify import TOLERANCE, check_case, relative_error

def _one_case_per_kernel():
    """Each class × variant × dtype once, with the middle group size of its set, at the
    class's checking sizes (small, not multiples of the group sizes)."""
    chosen = {}
    for suite in (MEASUREMENT, TEST, VALIDATION, EXTENSION):
        for case in suite.cases():
            groups = case.kclass.groups()
            if case.group_size == groups[len(groups) // 2]:
                chosen.setdefault(case.kernel_name, case)
    return [case.check_case() for case in chosen.values()]


CASES = _one_case_per_kernel()


@pytest.mark.parametrize("case", CASES, ids=[c.kernel_name for c in CASES])
def test_kernel_matches_reference_on_pocl(case, pocl):
    errors = check_case(case, pocl, seed=1)
    assert set(errors) == {s.name for s in array_specs(case.kernel(), case.params)[0]
                           if s.written}
    for name, error in errors.items():
        assert error < TOLERANCE[case.dtype] or (case.dtype is None and error == 0), name


def test_every_class_variant_and_precision_is_checked():
    checked = {(c.class_name, c.variant, c.dtype) for c in CASES}
    # 21 measurement kernels × 2 + empty; tests; validation; extension (27 kernels × 2)
    assert len(checked) == 43 + 4 + 9 + 54
    for kclass in MEASUREMENT.classes:
        for variant in kclass.variants:
            for dtype in kclass.dtypes or (None,):
                assert (kclass.name, variant, dtype) in checked


def test_a_wrong_kernel_is_caught(pocl):
    """A kernel that computes 3a where the reference says 2a, or writes half the output."""
    def triple(case):
        knl = lp.make_kernel("{[i]: 0<=i<n}", "out[i] = 3*a[i]", name="scale")
        return lp.split_iname(lp.add_dtypes(knl, {"a": np.float32}), "i", 64,
                              outer_tag="g.0", inner_tag="l.0")

    def half(case):
        knl = lp.make_kernel("{[i]: 0<=i<n and 2*i<n}", "out[i] = 2*a[i]",
                             [lp.GlobalArg("a, out", np.float32, shape="n"), "..."],
                             name="scale")
        return lp.split_iname(knl, "i", 64, outer_tag="g.0", inner_tag="l.0")

    for build in (triple, half):
        kclass = KernelClass("scale", "§3.1", ("",), build, lambda v, p: [{"n": 100}], (0,),
                             group_sizes=((64, 1),), dtypes=("float32",))
        case = next(kclass.cases("demo", 0))
        error = check_case(case, pocl)["out"]
        assert error > 0.3


def test_relative_error_requires_matching_unwritten_elements():
    expected = np.array([1.0, np.nan, 3.0])
    assert relative_error(np.array([1.0, np.nan, 3.0]), expected) == 0
    assert relative_error(np.array([1.0, 7.0, 3.0]), expected) == float("inf")
    assert relative_error(np.array([np.nan, np.nan, 3.0]), expected) == float("inf")
    assert relative_error(np.array([1.0, np.nan, 3.3]), expected) == pytest.approx(
        0.3 / np.sqrt(10))


# {{{ enumeration against the paper's text

def _sizes(suite, name, p, key="n", **match):
    return [c.params[key] for c in suite.cases({name: p}, dtypes=["float32"])
            if c.class_name == name and c.group_size == c.kclass.groups()[0]
            and all(getattr(c, k) == v for k, v in match.items())]


def test_measurement_sizes_follow_section_4_1():
    assert _sizes(MEASUREMENT, "scale_add", 20, variant="2") == [2**20, 2**22, 2**24, 2**26]
    assert _sizes(MEASUREMENT, "global_access", 17, variant="copy") == [
        2**t for t in range(17, 26)]
    assert _sizes(MEASUREMENT, "filled_stride", 15, variant="3") == [2**15, 2**18, 2**21, 2**24]
    assert _sizes(MEASUREMENT, "empty", 8) == [2**t for t in range(8, 14)]
    assert _sizes(MEASUREMENT, "transpose", 11, variant="prefetch") == [2**11, 2**12, 2**13,
                                                                          2**14]
    arith = [(c.params["k"], c.params["n"]) for c in MEASUREMENT.cases({"arithmetic": 7})
             if c.class_name == "arithmetic" and c.variant == "div" and c.dtype == "float64"
             and c.group_size == (16, 16)]
    assert arith == [(k, 2**e) for k in (256, 512, 728) for e in (7, 8, 9)]
    shapes = {c.variant: (c.params["n"], c.params["m"], c.params["l"])
              for c in MEASUREMENT.cases({"matmul_tiled": 9})
              if c.class_name == "matmul_tiled" and c.t == 1}
    assert shapes == {"square": (1024, 1024, 1024), "l_half": (1024, 1024, 512),
                      "m_half": (1024, 512, 1024), "n_half": (512, 1024, 1024)}


def test_measurement_suite_counts_f32_and_f64_and_three_group_sizes():
    cases = MEASUREMENT.cases()
    assert len(cases) == 762
    assert {c.dtype for c in cases} == {"float32", "float64", None}
    assert {c.group_size for c in cases if c.class_name == "scale_add"} == set(
        GROUP_SETS["1-D Large"])
    assert {c.group_size for c in cases if c.class_name == "transpose"} == set(
        GROUP_SETS["2-D Med"])
    assert len({c.name for c in cases}) == len(cases)
    small = MEASUREMENT.cases(group_set="2-D Small", dtypes=["float32"])
    assert {c.group_size for c in small if c.class_name == "arithmetic"} == set(
        GROUP_SETS["2-D Small"])
    assert {c.group_size for c in small if c.class_name == "scale_add"} == set(
        GROUP_SETS["1-D Large"])  # a 2-D set leaves 1-D classes alone


def test_test_suite_follows_section_5():
    cases = TEST.cases({"skinny_matmul": 10, "convolution": 8})
    assert [c.class_name for c in cases].count("nbody") == 4
    skinny = [c.params for c in cases if c.class_name == "skinny_matmul"]
    assert skinny[0] == {"n": 1024, "l": 1024, "m": 8192}
    assert all(p["n"] == p["l"] == p["m"] // 8 for p in skinny)
    assert [c.params["n"] for c in cases if c.class_name == "convolution"] == [256, 512, 1024,
                                                                              2048]
    assert {c.group_size for c in cases} == {(16, 16), (256, 1)}
    assert {c.dtype for c in cases} == {"float32"}


def test_bad_suite_requests_are_refused_clearly():
    with pytest.raises(KernelcastError, match="unknown suite 'nope'"):
        get_suite("nope")
    with pytest.raises(KernelcastError, match=r"allows \[18, 20, 21\]"):
        MEASUREMENT.cases({"scale_add": 19})
    with pytest.raises(KernelcastError, match="has no class 'fft'"):
        MEASUREMENT.cases({"fft": 3})
    with pytest.raises(KernelcastError, match="unknown dtypes"):
        MEASUREMENT.cases(dtypes=["float16"])
    with pytest.raises(KernelcastError, match="unknown group-size set"):
        MEASUREMENT.cases(group_set="3-D Huge")


def test_choose_p_takes_the_smallest_size_above_launch_overhead():
    kclass = MEASUREMENT.kernel_class("empty")  # p in 8, 9, 10
    times = {8: 2e-6, 9: 6e-6, 10: 20e-6}
    assert choose_p(kclass, times.get, 5e-6) == 9
    assert choose_p(kclass, times.get, 1e-6) == 8
    assert choose_p(kclass, times.get, 1.0) == 10  # none reaches it: the largest
    assert choose_p(kclass, {8: 2e-6, 9: None}.get, 5e-6) == 8  # 9 ran out of memory
    with pytest.raises(KernelcastError, match="no allowed p"):
        choose_p(kclass, lambda p: None, 5e-6)

# }}}


# {{{ arguments

def test_arguments_follow_declared_layouts():
    knl = kernels.nbody(256)
    args = host_arguments(knl, {"n": 10}, np.random.default_rng(0))
    assert args["x"].shape == (3, 10) and args["x"].flags.f_contiguous
    assert np.isnan(args["pot"]).all()
    assert ((args["x"] >= 0.5) & (args["x"] < 1.5)).all()
    args = host_arguments(kernels.scale_add(2), {"n": 7}, np.random.default_rng(0))
    assert args["n"] == 7 and args["n"].dtype == np.int32
    assert args["alpha"].dtype == np.float32 and 0.5 <= args["alpha"] < 1.5
    specs = {s.name: s for s in array_specs(kernels.filled_stride(3, 256), {"n": 300})[0]}
    assert specs["x"].shape == (3, 512) and specs["x"].strides == (1, 3)
    assert specs["x"].nbytes == 3 * 512 * 4 and not specs["x"].written


def test_missing_sizes_are_named():
    with pytest.raises(ParameterError, match="'m'"):
        host_arguments(kernels.matmul_tiled(), {"n": 4, "l": 4}, np.random.default_rng(0))

# }}}
