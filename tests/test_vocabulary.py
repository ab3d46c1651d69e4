from fractions import Fraction

import pytest

from kernelcast.properties.vocabulary import (
    PROPERTY_NAMES,
    STRIDE_CLASSES,
    UNITS,
    stride_class,
)


def test_vocabulary_is_fixed_and_complete():
    assert len(PROPERTY_NAMES) == len(set(PROPERTY_NAMES))
    assert PROPERTY_NAMES[:10] == (
        "add_f32", "mul_f32", "div_f32", "pow_f32", "special_f32",
        "add_f64", "mul_f64", "div_f64", "pow_f64", "special_f64")
    for direction in ("load", "store"):
        for bits in (32, 64, 128):
            for cls in STRIDE_CLASSES:
                assert f"{direction}_global_{bits}_{cls}" in PROPERTY_NAMES
                assert f"minls_global_{bits}_{cls}" in PROPERTY_NAMES
            assert f"{direction}_local_{bits}" in PROPERTY_NAMES
    assert PROPERTY_NAMES[-3:] == ("barrier", "workgroup", "launch")
    assert set(UNITS) == set(PROPERTY_NAMES)


@pytest.mark.parametrize(("stride", "util", "expected"), [
    (0, None, "s0"), (1, None, "s1"), (-1, None, "s1"), (None, None, "irregular"),
    # the paper's rule for stride 2: 50% or less is 1/2, more is 2/2
    (2, Fraction(1, 2), "1of2"), (2, Fraction(51, 100), "2of2"), (2, Fraction(1), "2of2"),
    (-2, Fraction(1, 2), "1of2"),
    (3, Fraction(1, 3), "1of3"), (3, Fraction(34, 100), "2of3"), (3, Fraction(2, 3), "2of3"),
    (3, Fraction(9, 10), "3of3"),
    (4, Fraction(1, 4), "1of4"), (4, Fraction(1, 2), "2of4"), (4, Fraction(3, 4), "3of4"),
    (4, Fraction(99, 100), "4of4"),
    (5, Fraction(1, 5), "1ofmore"), (1024, Fraction(1, 1024), "1ofmore"),
    (8, Fraction(1, 2), "2ofmore"), (8, Fraction(3, 4), "3ofmore"), (8, Fraction(1), "4ofmore"),
])
def test_stride_class_binning(stride, util, expected):
    assert stride_class(stride, util) == expected


def test_stride_above_one_needs_utilization():
    with pytest.raises(ValueError):
        stride_class(2, None)
