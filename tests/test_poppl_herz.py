"""The Pöppl–Herz model: its curves on data with a known answer, the slides' U, the model
fitted end to end from microbenchmarks measured on PoCL (committed under data/pocl/, and a
few measured here for real), the sizes it takes, the simple variant, and `kernelcast
predict` on a .cl file (tests/test_model_protocol.py runs it through the Model protocol)."""

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from opencl_sample import OPENCL_SAMPLE

from kernelcast.cli import main
from kernelcast.errors import KernelcastError, ParameterError
from kernelcast.fitting.dataset import load_dataset
from kernelcast.measure.store import Store
from kernelcast.models import PopplHerzModel
from kernelcast.suites import poppl_herz as bench
from kernelcast.models.poppl_herz.curves import (
    fit_line,
    fit_piecewise,
    fit_simd_width,
    utilization,
)
from kernelcast.profile import load_profile, save_profile

PACKED = Path(__file__).resolve().parent.parent / "data" / "pocl" / "poppl-herz.sqlite.xz"

KERNEL = OPENCL_SAMPLE


# {{{ curves

def test_a_line_through_exact_points_is_found():
    line = fit_line([1, 2, 4, 8], [3, 5, 9, 17])
    assert line.slope == pytest.approx(2) and line.intercept == pytest.approx(1)


def test_the_two_piece_curve_finds_a_known_saturation_point():
    n = np.array([1, 2, 4, 8, 16, 32, 64, 128], float)
    truth = np.where(n <= 16, 0.8 * n ** 0.6 + 0.2, 0.25 * n + 1.0)
    curve = fit_piecewise(n, truth)
    assert curve.n_sat == 16
    assert curve.b == pytest.approx(0.6, abs=1e-3)
    assert curve.a2 == pytest.approx(0.25, abs=1e-6)
    assert [curve(v) for v in n] == pytest.approx(truth, rel=1e-4)
    assert curve(0) == 0.0


def test_a_straight_line_needs_no_saturation_point():
    n = np.array([1, 2, 4, 8, 16], float)
    curve = fit_piecewise(n, 2 * n)
    assert [curve(v) for v in n] == pytest.approx(2 * n, rel=1e-6)
    assert curve(64) == pytest.approx(128, rel=1e-3)  # beyond: the tangent


def _slides_u(n_wg, n_xu):
    """U exactly as the slides write it: A + B."""
    lo, hi = n_wg // n_xu, math.ceil(n_wg / n_xu)
    return lo / hi + (n_wg % n_xu) / n_xu * (hi - lo) / hi


@pytest.mark.parametrize("n_xu", [1, 8, 16, 32])
def test_u_is_the_slides_formula(n_xu):
    for n_wg in range(1, 1025):
        assert utilization(n_wg, n_xu) == pytest.approx(_slides_u(n_wg, n_xu), rel=1e-12)
    assert utilization(64, 32) == 1.0 and utilization(48, 32) == 0.75


@pytest.mark.parametrize("width", [8, 16, 32])
def test_the_simd_width_is_recovered_from_times_shaped_by_u(width):
    groups = list(range(1, 65)) + list(range(80, 1025, 16))
    rng = np.random.default_rng(1)
    seconds = [2e-3 / utilization(g, width) * (1 + 0.02 * rng.standard_normal())
               for g in groups]
    assert fit_simd_width(groups, seconds) == width

# }}}


# {{{ the model fitted on PoCL microbenchmarks (committed)

@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    import lzma

    store = tmp_path_factory.mktemp("pocl") / "poppl-herz.sqlite"
    store.write_bytes(lzma.open(PACKED).read())
    with Store(store) as opened:
        return load_dataset(opened, "poppl-herz-cpu")


@pytest.fixture(scope="module")
def fitted(dataset):
    return PopplHerzModel().fit(dataset)


def test_the_committed_store_holds_every_microbenchmark(dataset):
    """Of the first suite: the committed store was measured before the microbenchmarks
    of benchmarks.added (built-ins, double, __local accesses, barriers)."""
    classes = set(dataset.info.kernel_class)
    assert classes == {"empty", "op", "access", "wgsize", "transfer"}
    added = {c.name for c in bench.added("poppl-herz-cpu").cases()}
    assert {c.name for c in bench.SUITE_CPU.cases()} - added <= set(dataset.info.case_name)
    assert not added & set(dataset.info.case_name)
    assert (dataset.info.kernel_class == "transfer").sum() == 2 * len(
        bench.SIZES["poppl-herz-cpu"].copies)


def test_the_fit_has_a_term_for_every_measured_op_and_access(fitted):
    keys = {f"{k}:{t}" for k, t in bench.OPS} | {"convert:int"}
    keys |= {":".join(a) for a in bench.ACCESSES}
    assert keys <= set(fitted.terms_)
    assert fitted.base_.slope > 0 and fitted.base_.intercept > 0
    assert fitted.transfer_["to"].slope > 0 and fitted.transfer_["from"].slope > 0
    assert all(c >= 0 for c, _ in fitted.terms_.values())


def test_a_fit_without_copies_is_refused(dataset):
    keep = (dataset.info.kernel_class != "transfer").to_numpy()
    with pytest.raises(KernelcastError, match="transfer"):
        PopplHerzModel().fit(dataset.subset(keep))


def test_a_copy_it_was_fitted_to_is_no_kernel_it_predicts(dataset, fitted):
    """The copies are timed to fit tTransfer; predict, explain and predict_dataset refuse
    them in one line (transfer() prices a kernel's copies)."""
    copy = next(c for c in dataset.cases if c.class_name == "transfer")
    for method in (fitted.predict, fitted.explain, fitted.details):
        with pytest.raises(KernelcastError, match="copy between host and device") as err:
            method(copy, copy.params)
        assert "\n" not in str(err.value)
    with pytest.raises(KernelcastError, match=r"transfer\[\w+\]/g1x1/bytes=\d+ is a copy"):
        fitted.predict_dataset(dataset)


@pytest.mark.parametrize("params, message", [
    ({"global_size": 64}, "global_size must be a list of integers"),
    ({"global_size": []}, "global_size must be a list of integers"),
    ({"global_size": [64.5]}, "global_size must be an integer, got 64.5"),
    ({"global_size": ["64"]}, "global_size must be an integer, got '64'"),
    ({"global_size": [64], "local_size": [True]}, "local_size must be an integer"),
    ({"global_size": [64], "bytes_in": 1.5}, "bytes_in must be an integer"),
])
def test_sizes_that_are_not_integers_are_refused(fitted, params, message):
    """Never truncated or read from text, as int() would."""
    with pytest.raises(ParameterError, match=re.escape(message)):
        fitted.predict(KERNEL, params)
    assert fitted.predict(KERNEL, {"global_size": [np.int64(64)]}) > 0  # NumPy's integers


def test_a_suite_case_is_predicted_at_the_n_given(dataset, fitted):
    """A suite case's own n where params give none."""
    case = next(c for c in dataset.cases if c.class_name == "op")
    n = case.params["n"]
    assert fitted.predict(case, {}) == fitted.predict(case, {"n": n})
    assert fitted.predict(case, {"n": 2 * n}) > fitted.predict(case, {"n": n})


def test_explain_sums_to_predict_and_work_scales_it(fitted):
    small = {"global_size": [256, 256], "local_size": [16, 16]}
    large = {"global_size": [1024, 1024], "local_size": [16, 16]}
    parts = fitted.explain(KERNEL, small)
    assert sum(parts.values()) == pytest.approx(fitted.predict(KERNEL, small), rel=1e-12)
    assert "base" in parts and "div:float" in parts
    assert "global:read:interval" in parts and "global:read:complex" in parts
    # t = c_fixed + c_base nWI + sum of W(n) c nWI / U: with the same counts and group
    # (U) and 16 times the work-items, everything but c_fixed grows 16-fold
    fixed = fitted.base_.intercept
    assert fitted.predict(KERNEL, large) - fixed == pytest.approx(
        16 * (fitted.predict(KERNEL, small) - fixed), rel=1e-9)


def test_a_work_group_that_fills_fewer_lanes_pays_for_the_idle_ones(fitted):
    """Groups of w - 1 work-items on SIMD units of w lanes: U = (w - 1) / w, so the
    operations and accesses of 64 (w - 1) x 64 work-items cost what those of 64 w x 64
    work-items in full groups do; only the base cost, c_base per work-item, is smaller,
    by c_base x 64 x 64."""
    width = fitted.simd_width_
    if width == 1:
        pytest.skip("this device's measured SIMD width is 1: U is always 1")
    full = fitted.predict(KERNEL, {"global_size": [width * 64, 64], "local_size": [width, 1]})
    part = fitted.predict(KERNEL, {"global_size": [width * 64 - 64, 64],
                                   "local_size": [width - 1, 1]})
    assert part == pytest.approx(full - fitted.base_.slope * 64 * 64, rel=1e-12)


def test_the_simple_model_prices_every_read_as_coalesced(dataset, fitted):
    simple = PopplHerzModel(classes=False).fit(dataset)
    params = {"global_size": [512, 512], "local_size": [16, 16]}
    parts = simple.explain(KERNEL, params)
    assert not any(k.endswith((":interval", ":complex", ":constant", ":coalesced"))
                   for k in parts)
    c, curve = fitted.terms_["global:read:coalesced"]
    work_items = 512 * 512
    assert parts["global:read"] == pytest.approx(curve(3) * c * work_items, rel=1e-12)
    assert simple.predict(KERNEL, params) != fitted.predict(KERNEL, params)


def test_the_qualitative_table_has_the_slides_rows(fitted):
    rows = fitted.table(KERNEL, {"global_size": [1024, 1024], "local_size": [32, 8]})
    names = [r[0] for r in rows]
    for wanted in ("base cost", "work-group size", "transfer to device",
                   "transfer from device", "final prediction", "div:float"):
        assert wanted in names
    final = rows[names.index("final prediction")][2]
    parts = [r[2] for r in rows if r[0] in ("kernel", "transfer to device",
                                            "transfer from device")]
    assert final == pytest.approx(sum(parts))

# }}}


# {{{ measured here, for real, on PoCL

def test_microbenchmarks_and_copies_run_on_pocl(pocl, tmp_path):
    from kernelcast.measure.campaign import run_campaign, suite_jobs

    cases = [c for c in bench.SUITE_CPU.cases()
             if c.variant in ("add:float:4", "global:read:interval:2",
                              "global:write:coalesced:2") and c.params["n"] == 2**16]
    cases += [next(c for c in bench.SUITE_CPU.cases() if c.class_name == "empty")]
    with Store(tmp_path / "ph.sqlite", pocl.identity) as store:
        result = run_campaign(suite_jobs(cases), pocl, store, runs=6, drop=2, progress=None)
        added = bench.measure_transfers(pocl, store, (4096, 65536), suite="poppl-herz-cpu",
                                        runs=6, drop=2)
        rows = store.rows()
        codes = {store.code(r["code_sha256"]) for r in rows if r["code_sha256"]}
    assert result.statuses.get("ok", 0) + result.statuses.get("unstable", 0) == len(cases)
    assert added == 4
    assert {r["kernel_class"] for r in rows} == {"op", "access", "empty", "transfer"}
    assert any("(i + 1) & 0x7F" in code for code in codes)  # the source, not Loopy's

# }}}


# {{{ the command line

@pytest.fixture(scope="module")
def profile(fitted, tmp_path_factory):
    path = tmp_path_factory.mktemp("ph") / "ph.json"
    save_profile(fitted, path)
    return path


@pytest.fixture()
def kernel_file(tmp_path):
    path = tmp_path / "sample.cl"
    path.write_text(KERNEL)
    return path


def test_predict_prints_the_slides_table(profile, kernel_file, capsys):
    code = main(["predict", str(kernel_file), "--profile", str(profile),
                 "--global-size", "1024", "1024", "--local-size", "32", "8"])
    out = capsys.readouterr().out
    assert code == 0
    assert "cost type" in out and "final prediction" in out and "div:float" in out
    assert "work-group factor U" in out


def test_predict_json_sums(profile, kernel_file, capsys):
    main(["predict", str(kernel_file), "--profile", str(profile), "--global-size", "512",
          "512", "--local-size", "16", "16", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert sum(doc["breakdown"].values()) == pytest.approx(doc["seconds"])
    assert doc["kernel"] == "sample"


@pytest.mark.parametrize("extra, message", [
    ([], "needs --global-size"),
    (["--global-size", "100", "--local-size", "3"], "not a multiple"),
    (["--global-size", "64", "64", "--local-size", "8"], "as many numbers"),
    (["--global-size", "64", "--param", "n=4"], "--param is for Loopy kernels"),
    (["--global-size", "64", "--stat", "x=0.5"], "keyed by the source line"),
])
def test_predict_refuses_bad_opencl_flags(profile, kernel_file, capsys, extra, message):
    code = main(["predict", str(kernel_file), "--profile", str(profile), *extra])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err


def test_a_syntax_error_in_the_source_is_one_line(profile, tmp_path, capsys):
    bad = tmp_path / "bad.cl"
    bad.write_text("__kernel void k(__global float *a) {\n  a[0] = 1.0f\n}\n")
    code = main(["predict", str(bad), "--profile", str(profile), "--global-size", "64"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and "bad.cl:3:" in err


# }}}


@pytest.fixture
def thinned_cpu_suite(monkeypatch):
    """The CPU suite with its every class, op and access, at fewer counts (an op's
    fewest and most, a line through two points; an access's fewest, a middle and most),
    two work-item counts and ten work-group sizes: a quarter of its cases and PoCL builds
    (each build a third of a second on a cold cache). The fit reads the same classes and
    curves."""
    import dataclasses

    sizes = bench.SIZES["poppl-herz-cpu"]
    thin = dataclasses.replace(sizes, op_counts=(1, 64), access_counts=(1, 4, 32),
                               sweep=(sizes.reference // 4, sizes.reference))
    assert set(thin.sweep) < set(sizes.sweep)
    assert set(thin.op_counts) < set(sizes.op_counts)
    assert set(thin.access_counts) < set(sizes.access_counts)
    monkeypatch.setitem(bench.SIZES, "poppl-herz-cpu", thin)
    monkeypatch.setattr(bench, "WG_SIZES", (1, 2, 4, 8, 16, 32, 64, 128, 256, 1024))
    monkeypatch.setattr(bench, "SUITE_CPU", bench._suite("poppl-herz-cpu"))
    return bench.SUITE_CPU


def test_calibrate_then_predict_end_to_end_on_pocl(pocl_device, thinned_cpu_suite, tmp_path,
                                                   capsys):
    """The CPU suite's microbenchmarks and copies measured on PoCL (thinned), the model
    fitted from them and a .cl kernel predicted with the profile. Five launches a case,
    the fewest the protocol takes (four dropped, one kept): the measurement protocol is
    tested elsewhere."""
    db, prof = tmp_path / "ph.sqlite", tmp_path / "ph.json"
    code = main(["calibrate", "--model", "poppl-herz", "--device", pocl_device.name,
                 "--db", str(db), "--profile", str(prof), "--runs", "5"])
    assert code == 0, capsys.readouterr().err[-2000:]
    model = load_profile(prof)
    assert model.name == "poppl-herz"
    assert model.provenance_["suites"] == ["poppl-herz-cpu"]
    copies = 2 * len(bench.SIZES["poppl-herz-cpu"].copies)  # to and from the device
    assert model.provenance_["cases"] == len(list(thinned_cpu_suite.cases())) + copies
    assert {f"{k}:{t}" for k, t in bench.ADDED_OPS} | {"local:read:coalesced", "barrier"} \
        <= set(model.terms_)
    kernel = tmp_path / "k.cl"
    kernel.write_text(KERNEL)
    capsys.readouterr()
    assert main(["predict", str(kernel), "--profile", str(prof), "--global-size", "256",
                 "256", "--local-size", "16", "16", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["seconds"] > 0 and doc["transfer"]["to"] > 0
