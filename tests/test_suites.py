"""The paper's kernel suites: enumeration per §4.1/§5, and every kernel checked on PoCL
against its NumPy reference."""

from dataclasses import replace
from pathlib import Path

import loopy as lp
import numpy as np
import pytest

from kernelcast.errors import KernelcastError, ParameterError
from kernelcast.measure.arrays import array_specs, host_arguments
from kernelcast.measure.codegen import generate
from kernelcast.suites import extension, kernels, validation
from kernelcast.suites.paper import MEASUREMENT, TEST, get_suite
from kernelcast.suites.extension import EXTENSION
from kernelcast.suites.validation import VALIDATION
from kernelcast.suites.suite import GROUP_SETS, Case, KernelClass, choose_p

from kernelcast.measure.verify import TOLERANCE, check_case, relative_error

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
        kclass = KernelClass("scale", "§3.1", ("",), build, lambda v, p, g: [{"n": 100}], (0,),
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


# {{{ group sizes other than the measured ones

# 1-D: 64 work-items (a power of two, as the masked tile indices need; r = 37 of the
# local_reads check fits, m = 512 of parallelism's is a multiple); 2-D: small, not square
OTHER_GROUPS = {"halo": (16, 4), "stencil3d": (8, 4), "batched_matmul": (8, 4),
                "stencil2d_f64": (8, 4), "transpose_tiles": (16, 4)}


def _other_group(kclass):
    return OTHER_GROUPS.get(kclass.name, (64, 1))


def _other_group_cases(suite):
    """Each class × variant once (float32 where it has it), with the class's group size
    replaced, at its checking sizes."""
    chosen = {}
    for kclass in suite.classes:
        other = replace(kclass, group_set=None, group_sizes=(_other_group(kclass),))
        for case in other.cases(suite.name, other.p_choices[0]):
            if case.dtype in ("float32", None) or "float32" not in kclass.dtypes:
                chosen.setdefault(case.kernel_name, case)
    return [case.check_case() for case in chosen.values()]


OTHER_GROUP_CASES = _other_group_cases(EXTENSION) + _other_group_cases(VALIDATION)


def _block(case):
    """The work-items per group (x, y) of *case*'s launch."""
    block = generate(case.kernel(), "opencl").launch_sizes(case.params)[1]
    assert all(b == 1 for b in block[2:])
    return tuple(block[:2]) if len(block) > 1 else (block[0], 1)


@pytest.mark.parametrize("case", OTHER_GROUP_CASES, ids=[c.kernel_name for c in OTHER_GROUP_CASES])
def test_other_group_sizes_match_references_on_pocl(case, pocl):
    """The kernels launch the group size of the case, and the references (extension:
    tiles, lanes and item counts of the case's group size) agree with them."""
    assert _block(case) == case.group_size
    errors = check_case(case, pocl, seed=2)
    assert set(errors) == {s.name for s in array_specs(case.kernel(), case.params)[0]
                           if s.written}
    for name, error in errors.items():
        assert error < TOLERANCE[case.dtype], name


def test_other_group_cases_cover_every_extension_and_validation_kernel():
    covered = {(c.suite, c.class_name, c.variant) for c in OTHER_GROUP_CASES}
    assert covered == {(suite.name, k.name, v) for suite in (EXTENSION, VALIDATION)
                       for k in suite.classes for v in k.variants}
    for case in OTHER_GROUP_CASES:
        measured = get_suite(case.suite).kernel_class(case.class_name).group_sizes
        assert case.group_size == _other_group(case.kclass) not in measured


VALIDATION_GENERATORS = {
    "stencil3d": validation.stencil3d, "batched_matmul": validation.batched_matmul,
    "matvec_rows": validation.matvec_rows, "matvec_cols": validation.matvec_cols,
    "rotation_f64": validation.rotation_f64, "column_sums": validation.column_sums,
    "special_elementwise": validation.special_elementwise,
    "stencil2d_f64": validation.stencil2d_f64, "transpose_tiles": validation.transpose_tiles}


@pytest.mark.parametrize("name", sorted(VALIDATION_GENERATORS))
def test_validation_generators_launch_the_group_size_they_are_given(name):
    """Every generator's default is its class's group size, and a group size given to it
    is the one its kernel launches with: (x, y) for the 2-D kernels, x alone for 1-D."""
    generate_kernel = VALIDATION_GENERATORS[name]
    kclass = VALIDATION.kernel_class(name)
    params = kclass.check_params
    two_d = name in OTHER_GROUPS

    def block(knl):
        grid, block = generate(knl, "opencl").launch_sizes(params)
        assert all(b == 1 for b in block[2:])
        return tuple(block[:2]) if two_d else block[0]

    default = kclass.group_sizes[0] if two_d else kclass.group_sizes[0][0]
    assert block(generate_kernel()) == default
    others = [(8, 4), (4, 2), (12, 6)] if two_d else [32, 64, 96]
    for gsize in others:
        assert block(generate_kernel(gsize)) == gsize


def test_validation_refuses_groups_its_kernels_cannot_launch():
    with pytest.raises(ValueError, match="1 to 16"):
        validation.batched_matmul((32, 8))
    with pytest.raises(ValueError, match="gy ≤ gx"):
        validation.transpose_tiles((8, 16))
    case = Case("validation", VALIDATION.kernel_class("matvec_rows"), "", "float32", (16, 16),
                11, 0, {"n": 300})
    with pytest.raises(KernelcastError, match="1-D kernel class"):
        case.kernel()


def test_extension_sizes_follow_the_group_size():
    def sizes(name, p, g, variant=None):
        kclass = EXTENSION.kernel_class(name)
        if g is not None:
            kclass = replace(kclass, group_sizes=((g, 1),))
        return [c.params for c in kclass.cases("extension", p, dtypes=["float32"])
                if variant is None or c.variant == variant]

    # the measured group size: as measured
    reads = sizes("local_reads", 18, None, "spread")
    assert [(s["ng"], s["r"]) for s in reads[::4]] == [(2**10, 4), (2**12, 4), (2**14, 4)]
    assert max(s["ng"] * 256 * s["m"] for s in sizes("chain", 1, None)) == 2**27
    # another: the same numbers of work-items, tiles no longer than the group, the same
    # totals of steps and values
    for g in (64, 1024):
        reads = sizes("local_reads", 18, g, "spread")
        assert {s["ng"] * g for s in reads} == {2**18, 2**20, 2**22}
        assert {s["r"] for s in reads} == {r for r in extension.LOCAL_READS_COUNTS if r <= g}
        for name, total in (("chain", 2**27), ("guarded", 2**27), ("intensity", 2**25)):
            steps = [s["ng"] * g * s["m"] for s in sizes(name, 1, g)]
            assert max(steps) <= total < 8 * max(steps), name  # ng and m go up 8-fold
        local = sizes("parallelism", 8, g, "local")
        assert local and all(s["m"] % g == 0 for s in local)
    assert len(sizes("chain", 3, 64)) > len(sizes("chain", 3, None)) > len(sizes("chain", 3, 1024))
    assert {s["m"] for s in sizes("parallelism", 8, 1024, "local")} == {2**11, 2**14}


def test_extension_refuses_group_sizes_its_kernels_cannot_index():
    kclass = EXTENSION.kernel_class("local_reads")
    case = Case("extension", kclass, "spread", "float32", (16, 12), 18, 0, {"ng": 1, "r": 4})
    with pytest.raises(KernelcastError, match="1-D kernel class"):
        case.kernel()
    for build in (lambda: extension.local_reads("spread", 96),
                  lambda: extension.chain("local", 96),
                  lambda: extension.guarded("poly4", 96),
                  lambda: extension.intensity("local1", 96)):
        with pytest.raises(ValueError, match="power-of-two"):
            build()
    extension.guarded("tiled16", 96)  # no mask: any group size
    extension.intensity("global1", 96)


STORE = Path(__file__).resolve().parent.parent / "data" / "h100" / "opencl.sqlite"


def test_stored_extension_and_validation_rows_keep_their_code():
    """The kernels measured in data/ (at the default group sizes) still generate the code
    they were measured with: a generator that takes its group size from the case must not
    change the code of the case it was measured as."""
    from kernelcast.measure.store import Store

    with Store(STORE) as store:
        rows = [r for r in store.rows() if r["suite"] in ("extension", "validation")]
    stored = {}
    for row in rows:
        key = (row["suite"], row["kernel_class"], row["variant"] or "", row["dtype"],
               tuple(row["group_size"]), row["backend"])
        stored.setdefault(key, set()).add(row["code_sha256"])
    assert len(stored) > 60
    for (suite, name, variant, dtype, group, backend), hashes in stored.items():
        kclass = get_suite(suite).kernel_class(name)
        case = Case(suite, kclass, variant, dtype, group, 0, 0, {})
        assert {generate(case.kernel(), backend).code_sha256} == hashes, (name, variant)

# }}}
