"""The Pöppl–Herz microbenchmarks added for what real OpenCL kernels execute (double
precision, math built-ins, __local accesses, barriers): their sources run on PoCL and
compute what they say, the front-end counts in them what they measure plus the known
extra of each step, the fit recovers known costs from synthetic times, the model prices
a built-in without a benchmark of its own by the table, and a profile fitted before them
still predicts as it did, warning of what it cannot price."""

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kernelcast.errors import UncountedWarning
from kernelcast.fitting.dataset import Dataset, load_dataset
from kernelcast.frontends.opencl import count_kernel
from kernelcast.measure.store import Store
from kernelcast.models import PopplHerzModel
from kernelcast.suites import poppl_herz as bench
from kernelcast.profile import load_profile, save_profile

DATA = Path(__file__).resolve().parent.parent / "data"
GROUP = bench.GROUP

# one step of each built-in chain, in float64 (w: the step's loaded value)
STEP = {"fabs": lambda r, w: np.abs(r - w), "sqrt": lambda r, w: np.sqrt(r + w),
        "rsqrt": lambda r, w: 1 / np.sqrt(r + w), "exp": lambda r, w: np.exp(w - r),
        "log": lambda r, w: np.log(np.abs(r) + w), "sin": lambda r, w: np.sin(r + w),
        "pow": lambda r, w: w ** (1.25 - r), "fmax": lambda r, w: np.maximum(r - w, w),
        "fma": lambda r, w: r * 0.5 + w, "native_exp": lambda r, w: np.exp(w - r),
        "native_sqrt": lambda r, w: np.sqrt(r + w),
        "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}
# what a step adds besides its built-in, as the front-end counts it
EXTRA = {"fabs": ["sub"], "sqrt": ["add"], "rsqrt": ["add"], "exp": ["sub"],
         "log": ["call.fabs", "add"], "sin": ["add"], "pow": ["sub"], "fmax": ["sub"],
         "fma": [], "native_exp": ["sub"], "native_sqrt": ["add"]}


def _added(suite="poppl-herz"):
    """One case of each added variant (the reference size)."""
    cases = {}
    for case in bench.added(suite).cases():
        cases.setdefault(case.variant if case.class_name != "barrier"
                         else f"barrier:{case.variant}", case)
    return cases


# {{{ the suites

def test_the_added_variants_are_those_the_task_names():
    ops = {f"{k}:{t}" for k, t in bench.ADDED_OPS}
    assert {"add:double", "sub:double", "mul:double", "div:double",
            "call.sqrt:double", "call.exp:double"} <= ops
    assert {f"call.{f}:float" for f in ("sqrt", "rsqrt", "exp", "log", "sin", "pow", "fabs",
                                        "fmax", "fma", "native_exp", "native_sqrt")} <= ops
    variants = set(_added())
    assert {"local:read:coalesced:8", "local:write:coalesced:1", "barrier:32",
            "call.native_sqrt:float:128"} <= variants
    assert not {v for v in variants if v.startswith("global:")}


def test_added_is_the_full_suite_less_the_first_one():
    for suite in (bench.SUITE, bench.SUITE_CPU):
        added = {c.name for c in bench.added(suite.name).cases()}
        first = {c.name for c in suite.cases()
                 if c.class_name in ("empty", "wgsize", "transfer")
                 or c.variant.rsplit(":", 1)[0] in {f"{k}:{t}" for k, t in bench.OPS}
                 or c.variant.startswith("global:")}
        assert added | first == {c.name for c in suite.cases()} and not added & first
        assert bench.added(suite.name).measure_extra is None  # no copies


def test_the_module_says_what_each_step_adds():
    assert bench.EXTRAS == {k: tuple(v) for k, v in EXTRA.items()}
    assert set(bench.STEPS) == set(EXTRA)


def test_a_variant_survives_the_split_and_names_a_kernel():
    case = _added()["call.native_exp:float:8"]
    assert case.variant.split(":") == ["call.native_exp", "float", "8"]
    assert bench.kernel_name(case) == "ph_op_call_native_exp_float_8"
    assert f"void {bench.kernel_name(case)}(" in bench.source_of(case)
    assert bench.kernel_name(_added()["barrier:4"]) == "ph_barrier_4"

# }}}


# {{{ what the front-end counts in them

@pytest.mark.parametrize("variant", sorted(_added()))
def test_the_front_end_counts_what_each_benchmark_measures(variant):
    case = _added()[variant]
    counts = count_kernel(bench.source_of(case))
    count = int(variant.rsplit(":", 1)[1])
    if case.class_name == "op":
        kind, typ, _ = variant.split(":")
        want = {f"{kind}:{typ}": count}
        for extra in EXTRA.get(kind.removeprefix("call."), []):
            want[f"{extra}:{typ}"] = want.get(f"{extra}:{typ}", 0) + count
        accesses = {"global:read:coalesced": 2, "global:write:coalesced": 1}
        barriers = 0
    elif case.class_name == "barrier":  # a local store and a barrier a step
        want = {"sub:int": 1}
        accesses = {"local:write:coalesced": count, "local:read:coalesced": 1,
                    "global:write:coalesced": 1}
        barriers = count
    elif ":read:" in variant:  # every row stored, COUNT read and added up
        want = {"sub:int": 1, **({"add:float": count - 1} if count > 1 else {})}
        accesses = {"local:write:coalesced": bench.READ_ARRAYS,
                    "local:read:coalesced": count, "global:write:coalesced": 1}
        barriers = 1
    else:  # COUNT rows stored, one read
        want = {"sub:int": 1}
        accesses = {"local:write:coalesced": count, "local:read:coalesced": 1,
                    "global:write:coalesced": 1}
        barriers = 1
    assert counts.ops == want
    assert {k: v for k, v in counts.accesses.items() if not k.startswith("private:")} \
        == accesses
    assert counts.barriers == barriers

# }}}


# {{{ run on PoCL

def _reference(case, inputs: dict) -> np.ndarray:
    """What the benchmark stores, in float64."""
    count = int(case.variant.rsplit(":", 1)[-1])
    if case.class_name == "barrier":
        return np.full(len(inputs["res"]), count + 0.5)
    if case.class_name == "access":
        rows = count if ":read:" in case.variant else 1
        return np.full(len(inputs["res"]), sum(k + 1.5 for k in range(rows)))
    kind = case.variant.split(":")[0].removeprefix("call.")
    u, v = inputs["a"].astype(np.float64), inputs["b"].astype(np.float64)
    r = u
    for k in range(count):
        r = STEP[kind](r, v if k % 2 == 0 else u)
    return r


def test_the_added_sources_compile_and_compute_what_they_say_on_pocl(pocl):
    """Every added variant on two work-groups, with inputs in [0.5, 1.5] as measured:
    up to 8 steps (and every barrier count) against its chain or sum evaluated in NumPy;
    the longest chains finite and within the range benchmarks.STEPS says (a chain such
    as log's amplifies rounding where |r| + w < 1, so they are not compared)."""
    import pyopencl as cl

    rng = np.random.default_rng(7)
    n = 2 * GROUP
    longest = max(bench.SIZES["poppl-herz-cpu"].op_counts)

    def checked(case):  # the op chains longer than 8 steps in between are built alike
        count = int(case.variant.rsplit(":", 1)[-1])
        return (case.class_name != "op" or count <= 8
                or (count == longest and case.variant.startswith("call.")))

    cases = [c for c in _added("poppl-herz-cpu").values() if checked(c)]
    assert {c.class_name for c in cases} == {"op", "access", "barrier"}
    for case in cases:
        program = cl.Program(pocl.context, bench.source_of(case)).build()
        host, buffers = {}, []
        for name, dtype, written in bench._names(case.class_name, case.variant):
            host[name] = (np.full(n, np.nan, dtype) if written
                          else rng.uniform(0.5, 1.5, n).astype(dtype))
            buffers.append(cl.Buffer(pocl.context, cl.mem_flags.READ_WRITE
                                     | cl.mem_flags.COPY_HOST_PTR, hostbuf=host[name]))
        getattr(program, bench.kernel_name(case))(pocl.queue, (n,), (GROUP,), *buffers,
                                                  np.int32(n))
        out = np.empty_like(host["res"])
        cl.enqueue_copy(pocl.queue, out, buffers[-1])
        pocl.queue.finish()
        count = int(case.variant.rsplit(":", 1)[-1])
        if count == longest and case.variant.startswith("call."):
            assert np.isfinite(out).all() and -0.7 <= out.min() and out.max() <= 4.5
        if count > 8 and case.class_name == "op":
            continue  # the longest chain of a call: finite and in range, above
        tol = 1e-12 if out.dtype == np.float64 else 1e-4
        np.testing.assert_allclose(out, _reference(case, host), rtol=tol, atol=tol,
                                   err_msg=case.variant)


def test_the_added_benchmarks_are_timed_through_the_campaign_on_pocl(pocl, tmp_path):
    """Through kernelcast's own measurement (the Loopy stand-in declares the doubles)."""
    from kernelcast.measure.campaign import run_campaign, suite_jobs

    wanted = {"add:double:4", "call.exp:double:4", "call.pow:float:4",
              "local:read:coalesced:2", "local:write:coalesced:2", "2"}
    cases = [c for c in bench.added("poppl-herz-cpu").cases()
             if c.variant in wanted and c.params["n"] == 2**16]
    assert len(cases) == len(wanted)
    with Store(tmp_path / "ph.sqlite", pocl.identity) as store:
        result = run_campaign(suite_jobs(cases), pocl, store, runs=6, drop=2, progress=None)
        rows = store.rows()
        codes = {store.code(r["code_sha256"]) for r in rows}
    assert result.statuses.get("ok", 0) + result.statuses.get("unstable", 0) == len(cases)
    assert {r["kernel_class"] for r in rows} == {"op", "access", "barrier"}
    assert any("pow(v, 1.25f - r)" in code for code in codes)

# }}}


# {{{ the fit, on synthetic times

@pytest.fixture(scope="module")
def pocl_dataset(tmp_path_factory):
    """The committed PoCL microbenchmarks (of the first suite)."""
    import lzma

    store = tmp_path_factory.mktemp("pocl") / "poppl-herz.sqlite"
    with lzma.open(DATA / "pocl" / "poppl-herz.sqlite.xz") as packed:
        store.write_bytes(packed.read())
    with Store(store) as opened:
        return load_dataset(opened, "poppl-herz-cpu")


#: the costs the synthetic times are made of, seconds per work-item and unit
TRUE = {"call.sqrt:float": 0.4e-12, "local:write:coalesced": 0.05e-12,
        "local:read:coalesced": 0.08e-12, "barrier": 0.3e-12}


def _synthetic(dataset, first):
    """*dataset* with the added rows of TRUE's families: 9 µs + 3 ps per work-item +
    TRUE's cost per unit counted + the price (by *first*, the fit of *dataset*) of the
    extra operations of each step, and of the barrier's local stores at TRUE's cost."""
    cases = [c for c in bench.added("poppl-herz-cpu").cases()
             if (c.variant.rsplit(":", 1)[0] if c.class_name != "barrier" else "barrier")
             in TRUE]
    seconds = []
    for case in cases:
        n, count = case.params["n"], int(case.variant.rsplit(":", 1)[-1])
        key = "barrier" if case.class_name == "barrier" else case.variant.rsplit(":", 1)[0]
        t = 9e-6 + 3e-12 * n + TRUE[key] * count * n
        if key == "call.sqrt:float":
            c, curve = first.terms_["add:float"]
            t += curve(count) * c * n
        elif key == "local:read:coalesced" and count > 1:
            c, curve = first.terms_["add:float"]
            t += curve(count - 1) * c * n
        elif key == "barrier":
            t += TRUE["local:write:coalesced"] * count * n
        seconds.append(t)
    info = pd.DataFrame([{"case_name": c.name, "suite": c.suite,
                          "kernel_class": c.class_name, "variant": c.variant,
                          "dtype": None, "params": c.params, "status": "ok"} for c in cases])
    return Dataset(dataset.cases + cases, np.concatenate([dataset.seconds, seconds]),
                   pd.concat([dataset.info, info], ignore_index=True), dataset.identity,
                   dataset.suite, dataset.noise, dataset.store)


def test_the_fit_recovers_known_costs_of_a_built_in_local_accesses_and_barriers(
        pocl_dataset, tmp_path):
    first = PopplHerzModel().fit(pocl_dataset)
    model = PopplHerzModel().fit(_synthetic(pocl_dataset, first))
    for key, cost in TRUE.items():
        c, curve = model.terms_[key]
        assert c == pytest.approx(cost, rel=1e-6), key
        counts = (1, 2, 8) if key.startswith("local") else (1, 2, 16, 32)
        assert [curve(k) for k in counts] == pytest.approx(counts, rel=1e-4), key
    for key, term in first.terms_.items():  # the first suite's terms are untouched
        assert model.terms_[key] == term
    assert "call.exp:float" not in model.terms_  # not measured: not fitted
    path = tmp_path / "ph.json"
    save_profile(model, path)
    assert load_profile(path).fitted_state() == model.fitted_state()


def test_a_kernel_with_built_ins_local_memory_and_barriers_is_priced_by_them(pocl_dataset):
    first = PopplHerzModel().fit(pocl_dataset)
    model = PopplHerzModel().fit(_synthetic(pocl_dataset, first))
    params = {"global_size": [1 << 16], "local_size": [GROUP]}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parts = model.explain(KERNEL, params)
    assert parts["barrier"] == pytest.approx(TRUE["barrier"] * (1 << 16), rel=1e-4)
    assert parts["call.native_sqrt:float"] == pytest.approx(  # priced as sqrt
        model.terms_["call.sqrt:float"][0] * (1 << 16), rel=1e-4)
    assert "local:read:interval" in parts and "local:write:coalesced" in parts
    (warning,) = [w for w in caught if issubclass(w.category, UncountedWarning)]
    assert "'call.sin:double'" in str(warning.message)  # no double sin: never float's
    assert "mul:double" in str(warning.message)

# }}}


# {{{ the table of built-ins priced by another's benchmark

MEASURED = ["call.sqrt:float", "call.rsqrt:float", "call.exp:float", "call.log:float",
            "call.sin:float", "call.pow:float", "call.fabs:float", "call.fmax:float",
            "call.fma:float", "call.native_exp:float", "call.native_sqrt:float",
            "call.sqrt:double", "call.exp:double", "add:double", "local:read:coalesced",
            "local:write:coalesced", "barrier", "add:float", "add:int"]


@pytest.mark.parametrize("counted, term", [
    ("call.sqrt:float", "call.sqrt:float"),
    ("call.native_sqrt:float", "call.native_sqrt:float"),
    ("call.native_sin:float", "call.sin:float"),
    ("call.native_cos:float", "call.sin:float"),
    ("call.cos:float", "call.sin:float"),
    ("call.tan:float", "call.sin:float"),
    ("call.log2:float", "call.log:float"),
    ("call.native_log10:float", "call.log:float"),
    ("call.exp2:float", "call.exp:float"),
    ("call.exp10:float", "call.exp:float"),
    ("call.native_exp2:float", "call.native_exp:float"),
    ("call.half_exp:float", "call.native_exp:float"),
    ("call.native_rsqrt:float", "call.rsqrt:float"),
    ("call.fmin:float", "call.fmax:float"),
    ("call.max:float", "call.fmax:float"),
    ("call.mad:float", "call.fma:float"),
    ("call.powr:float", "call.pow:float"),
    ("call.exp2:double", "call.exp:double"),
    ("call.native_sqrt:double", "call.sqrt:double"),
    ("call.sin:double", "call.sin:double"),  # no double sin: itself, so uncounted
    ("call.fmin:double", "call.fmin:double"),
    ("call.max:uint", "call.max:int"),  # integers: int's, never fmax's
    ("call.floor:float", "call.floor:float"),
    ("mul:double", "mul:double"),
    ("add:double", "add:double"),
    ("local:read:complex", "local:read:coalesced"),
    ("local:write:identical", "local:write:coalesced"),
    ("barrier", "barrier"),
])
@pytest.mark.parametrize("classes", [True, False])
def test_curve_key_maps_as_the_table_says(counted, term, classes):
    model = PopplHerzModel(classes=classes)
    model.terms_ = dict.fromkeys(MEASURED)
    assert model._curve_key(counted) == term


def test_without_the_added_terms_every_key_is_its_own():
    """A profile fitted before the built-ins were measured: nothing is renamed to a term
    it does not have (the warning names what the kernel counts)."""
    model = PopplHerzModel()
    model.terms_ = {"add:float": None, "global:read:coalesced": None}
    for key in ("call.native_cos:float", "call.mad:float", "mul:double"):
        assert model._curve_key(key) == key

# }}}


# {{{ a profile fitted before them

KERNEL = """#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void mixed(__global const float *restrict a, __global double *restrict d,
                    __global float *restrict out)
{
    __local float tile[256];
    int i = get_global_id(0);
    int l = get_local_id(0);
    tile[l] = a[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    out[i] = native_sqrt(tile[(l * 32) & 255]) + a[i] * 2.0f;
    d[i] = sin(d[i]) * 3.0;
}
"""


def test_a_profile_without_the_added_terms_predicts_as_before_and_names_them():
    """The committed H200 profile (its store has no added benchmarks): the added kinds
    count as zero with one UncountedWarning naming each, the rest is priced as before;
    the H100's (whose store has them) prices them."""
    model = load_profile(DATA / "profiles" / "nvidia-h200-opencl-poppl-herz.json")
    assert "barrier" not in model.terms_
    h100 = load_profile(DATA / "profiles" / "nvidia-h100-80gb-hbm3-opencl-poppl-herz.json")
    for key in ("barrier", "call.native_sqrt:float", "mul:double", "local:write:coalesced"):
        assert key in h100.terms_, key
    params = {"global_size": [1 << 20], "local_size": [GROUP]}
    with pytest.warns(UncountedWarning) as caught:
        parts = model.explain(KERNEL, params)
    message = " ".join(str(w.message) for w in caught)
    for key in ("barrier", "call.native_sqrt:float", "call.sin:double", "mul:double",
                "local:read:interval", "local:write:coalesced"):
        assert f"'{key}'" in message
        assert key not in parts
    counts = count_kernel(KERNEL)
    known = {k for k in {**counts.ops, **counts.accesses} if model.terms_.get(k, (0,))[0]}
    assert set(parts) == {"base", *known}
    with pytest.warns(UncountedWarning):
        assert sum(parts.values()) == pytest.approx(model.predict(KERNEL, params),
                                                    rel=1e-12)

# }}}
