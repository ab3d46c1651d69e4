"""Bad input gets an error that names the problem."""

import loopy as lp
import numpy as np
import pytest

import kernelcast as kc
from kernelcast.suites import kernels


@pytest.fixture(scope="module")
def scale_props():
    return kc.extract_properties(kernels.scale(64))


def test_not_a_loopy_kernel():
    with pytest.raises(kc.NotALoopyKernelError, match="expected a Loopy kernel"):
        kc.extract_properties("out[i] = 2*a[i]")
    assert issubclass(kc.NotALoopyKernelError, kc.KernelcastError)


def test_dtypes_not_fixed_names_the_argument():
    knl = lp.make_kernel("{[i]: 0<=i<n}", "out[i] = 2*a[i]", lang_version=(2018, 2))
    with pytest.raises(kc.DtypeNotFixedError, match="'a'|: a"):
        kc.extract_properties(knl)


def test_loop_kernel_is_accepted():
    knl = kernels.scale(64).default_entrypoint
    assert "mul_f32" in kc.extract_properties(knl).names


@pytest.mark.parametrize(("params", "match"), [
    ({}, "missing n"),
    ({"n": 10, "m": 3}, "unknown m"),
    ({"m": 3}, "missing n; unknown m"),
    ({"n": -1}, "must not be negative"),
    ({"n": 2.5}, "must be an integer"),
    ({"n": "4096"}, "must be an integer"),
    ({"n": True}, "must be an integer"),
    ({"n": 0}, "violate the assumptions"),
])
def test_bad_parameters(scale_props, params, match):
    with pytest.raises(kc.ParameterError, match=match):
        scale_props.evaluate(params)


def test_integral_floats_and_numpy_ints_are_sizes(scale_props):
    assert scale_props.evaluate({"n": 128.0}) == scale_props.evaluate({"n": np.int64(128)})


def test_params_must_be_a_mapping(scale_props):
    with pytest.raises(kc.ParameterError, match="mapping"):
        scale_props.evaluate([("n", 3)])


def test_several_device_launches_are_refused():
    knl = lp.make_kernel(
        "{[i, j]: 0<=i,j<n}",
        """
        tmp[i] = 2*a[i] {id=first}
        ... gbarrier {id=sync, dep=first}
        out[j] = tmp[j] + 1 {dep=sync}
        """,
        [lp.GlobalArg("tmp", np.float32, shape="n"), "..."],
        lang_version=(2018, 2), assumptions="n >= 1")
    knl = lp.add_dtypes(knl, {"a": np.float32})
    knl = lp.split_iname(knl, "i", 32, outer_tag="g.0", inner_tag="l.0")
    knl = lp.split_iname(knl, "j", 32, outer_tag="g.0", inner_tag="l.0")
    with pytest.raises(kc.UnsupportedKernelError, match="device launches"):
        kc.extract_properties(knl)


def test_uncounted_types_warn():
    knl = lp.make_kernel("{[i]: 0<=i<n}", "out[i] = a[i] + a[i]", lang_version=(2018, 2),
                         assumptions="n >= 1")
    knl = lp.add_dtypes(knl, {"a": np.float16})
    knl = lp.split_iname(knl, "i", 32, outer_tag="g.0", inner_tag="l.0")
    with pytest.warns(kc.UncountedWarning):
        props = kc.extract_properties(knl)
    assert props.names == ("workgroup", "launch")
