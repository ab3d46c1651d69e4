"""Data-dependent control flow: statistics as the paper allows (§2), else a clear error."""

import loopy as lp
import numpy as np
import pytest

import kernelcast as kc
from kernelcast.properties.vocabulary import PROPERTY_NAMES


def spmv():
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
         lp.GlobalArg("values, x", np.float32, shape=lp.auto), "..."],
        lang_version=(2018, 2), assumptions="n >= 1")
    return lp.split_iname(knl, "i", 64, outer_tag="g.0", inner_tag="l.0")


def clipped():
    knl = lp.make_kernel(
        "{[i]: 0<=i<n}",
        """
        if a[i] > 0
            out[i] = 2*a[i]
        end
        """, lang_version=(2018, 2), assumptions="n >= 1")
    knl = lp.add_dtypes(knl, {"a": np.float32, "out": np.float32})
    return lp.split_iname(knl, "i", 64, outer_tag="g.0", inner_tag="l.0")


def test_data_dependent_loop_bound_needs_statistics():
    with pytest.raises(kc.DataDependentError, match="rowlen"):
        kc.extract_properties(spmv())


def test_loop_bound_statistics_give_expected_counts():
    props = kc.extract_properties(spmv(), data_statistics={"rowlen": 12.5})
    assert props.params == ("n",)
    assert props.evaluate({"n": 100}) == {
        "add_f32": 1250.0, "mul_f32": 1250.0,
        "load_global_32_s1": 200.0,          # row_ptr[i], row_ptr[i+1]
        "load_global_32_irregular": 3750.0,  # values, x, cols: indices read data
        "store_global_32_s1": 100.0, "minls_global_32_s1": 100.0,
        "workgroup": 2.0, "launch": 1.0}
    assert "rowlen" in str(props.symbolic("add_f32"))


def test_data_dependent_condition_needs_a_fraction():
    with pytest.raises(kc.DataDependentError, match="fraction"):
        kc.extract_properties(clipped())
    props = kc.extract_properties(clipped(), data_statistics={"insn": 0.25})
    values = props.evaluate({"n": 400})
    assert values["mul_f32"] == 100.0
    assert values["store_global_32_s1"] == 100.0
    # the condition's own load runs for every work-item, the guarded one for a quarter
    assert values["load_global_32_s1"] == 500.0
    assert set(props.names) <= set(PROPERTY_NAMES)


def test_statistics_must_be_numbers():
    with pytest.raises(kc.ParameterError):
        kc.extract_properties(spmv(), data_statistics={"rowlen": -1})
    with pytest.raises(kc.ParameterError):
        kc.extract_properties(spmv(), data_statistics={"rowlen": "many"})
