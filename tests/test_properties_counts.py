"""Exact closed forms and an independent brute-force count for the kernel zoo."""

import islpy as isl
import pytest
from bruteforce import brute_force_properties
from kernel_zoo import STRIDED, ZOO

import kernelcast as kc

NAMES = sorted(ZOO)


def eval_isl(obj, params):
    """Evaluate an isl (fold of) piecewise quasi-polynomial at *params* with isl itself."""
    point = isl.Point.zero(obj.domain().space)
    for name, value in params.items():
        pos = obj.domain().space.find_dim_by_name(isl.dim_type.param, name)
        point = point.set_coordinate_val(isl.dim_type.param, pos, value)
    return obj.eval(point).to_python()


@pytest.fixture(scope="module")
def extracted():
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = kc.extract_properties(ZOO[name][0]())
        return cache[name]

    return get


@pytest.mark.parametrize("name", NAMES)
def test_closed_forms(name, extracted):
    _factory, forms, sizes = ZOO[name]
    props = extracted(name)
    assert set(props.names) == set(forms)
    for params in sizes:
        values = props.evaluate(params)
        assert values == {k: float(f(params)) for k, f in forms.items()}, params


@pytest.mark.parametrize("name", NAMES)
def test_brute_force_agrees(name, extracted):
    factory, _forms, sizes = ZOO[name]
    props = extracted(name)
    for params in sizes:
        assert brute_force_properties(factory(), params) == props.evaluate(params), params


def test_zoo_covers_every_family_and_stride_class():
    seen = set()
    for name in NAMES:
        seen |= set(ZOO[name][1])
    for cls in ("s0", "s1", "irregular", *STRIDED.values()):
        assert f"load_global_32_{cls}" in seen
    for cls in ("s1", *STRIDED.values()):
        assert f"store_global_32_{cls}" in seen
        assert f"minls_global_32_{cls}" in seen
    for family in ("add_f32", "mul_f32", "div_f32", "pow_f32", "special_f32",
                   "add_f64", "mul_f64", "div_f64", "pow_f64", "special_f64",
                   "load_global_64_s1", "load_global_128_s1", "store_global_128_s1",
                   "load_local_32", "store_local_32", "barrier", "workgroup", "launch"):
        assert family in seen


def test_symbolic_counts_are_exact_isl_objects(extracted):
    props = extracted("matmul_tiled")
    load = props.symbolic("load_global_32_s1")
    for params in ({"n": 16, "m": 8, "l": 24}, {"n": 40, "m": 9, "l": 17}):
        expected = props.evaluate(params)
        assert eval_isl(load, params) == expected["load_global_32_s1"]
        minls = eval_isl(props.symbolic("minls_global_32_s1"), params)
        assert minls == expected["minls_global_32_s1"]
    assert props.symbolic("load_global_64_s1").is_zero()
    with pytest.raises(KeyError):
        props.symbolic("load_global_33_s1")


def test_evaluation_matches_isl_away_from_multiples(extracted):
    # Non-multiples of the group size exercise the floor terms of the compiled evaluator.
    for name in ("finite_difference", "nbody", "matmul_tiled", "convolution"):
        props = extracted(name)
        for k in (1, 7, 37, 130):
            params = {p: k + i for i, p in enumerate(props.params)}
            values = props.evaluate(params)
            for prop in props.names:
                assert values[prop] == float(eval_isl(props.symbolic(prop), params)), (
                    name, prop, params)


def test_vector_orders_by_requested_names(extracted):
    props = extracted("axpy_f64")
    vec = props.vector({"n": 10}, ["launch", "add_f64", "add_f32"])
    assert vec == [1.0, 10.0, 0.0]
