"""The extended model: extents checked against independent counts, its features, and a fit
on the committed H100 measurements."""

import math
from pathlib import Path

import numpy as np
import pytest

import kernelcast as kc
from kernelcast.errors import KernelcastError
from kernelcast.evaluation.crossval import cross_validate
from kernelcast.evaluation.tables import table1
from kernelcast.fitting.dataset import load_dataset
from kernelcast.measure.arrays import array_specs
from kernelcast.measure.codegen import generate
from kernelcast.measure.store import Store
from kernelcast.models import ExtendedModel, PaperModel, model_class
from kernelcast.models.extended import OVERLAP_Q
from kernelcast.models.extended.features import features
from kernelcast.profile import load_profile, save_profile
from kernelcast.suites.extension import EXTENSION
from kernelcast.suites.paper import MEASUREMENT, TEST
from kernelcast.suites.validation import VALIDATION, matvec_cols

DATA = Path(__file__).resolve().parents[1] / "data"
H100 = DATA / "h100" / "opencl.sqlite"


def _one_case_per_kernel():
    seen = {}
    for suite in (MEASUREMENT, TEST, VALIDATION, EXTENSION):
        for case in suite.cases():
            key = (suite.name, case.class_name, case.variant, case.dtype)
            seen.setdefault(key, case.check_case())
    return list(seen.values())


@pytest.mark.parametrize("case", _one_case_per_kernel(), ids=lambda c: c.kernel_name)
def test_extent_matches_arrays_and_launch_sizes(case, gpu_suite_properties):
    """Work-items from the generated launch configuration, bytes from the arrays the
    measurement layer allocates: neither goes through the symbolic counts. (The
    properties are extracted into the session's cache, where the fit below finds them.)"""
    knl = case.kernel()
    extent = gpu_suite_properties.properties(case).extent(case.params)
    specs, _ = array_specs(knl, case.params)
    read = knl.default_entrypoint.get_read_variables()
    assert extent["bytes_read"] == sum(s.nbytes for s in specs if s.name in read)
    assert extent["bytes_written"] == sum(s.nbytes for s in specs if s.written)
    groups, block = generate(knl, "opencl").launch_sizes(case.params)
    assert extent["work_items"] == math.prod(groups) * math.prod(block)


def test_extended_features_of_a_matrix_vector_product():
    n = 300
    props = kc.extract_properties(matvec_cols(256, np.float32))
    paper = PaperModel().features(props, {"n": n})
    assert paper == props.evaluate({"n": n})
    ext = features(props, {"n": n})
    work_items = 512  # two groups of 256
    assert ext["bytes_read"] == (n * n + n) * 4
    assert ext["bytes_written"] == n * 4
    # each work-item reads a[j, i] (stride 1) and x[j] (stride 0) n times: 2n·n loads
    assert ext["item_loads_coalesced_32"] == pytest.approx(2 * n * n / work_items)
    assert ext["item_flops_f32"] == pytest.approx(2 * n * n / work_items)
    assert not {k for k in ext if k.startswith("item_") and k.endswith(("_64", "_f64"))}
    assert "item_loads_other_32" not in ext and "item_local_loads_32" not in ext
    assert {k: v for k, v in ext.items() if k in paper} == paper
    # the same kernel in float64: the same counts under the 64-bit names
    ext64 = features(kc.extract_properties(matvec_cols(256, np.float64)), {"n": n})
    assert ext64["item_loads_coalesced_64"] == ext["item_loads_coalesced_32"]
    assert ext64["item_flops_f64"] == ext["item_flops_f32"]
    assert "item_loads_coalesced_32" not in ext64 and "item_flops_f32" not in ext64


def test_special_functions_on_serial_paths_take_the_kernels_precision():
    from kernelcast.suites.kernels import nbody

    props = kc.extract_properties(nbody(256))
    ext = features(props, {"n": 1024})
    # one rsqrt per pair, on the path through a branch-serialized iteration, counted with
    # the special functions on loop-carried paths (N-body has none)
    assert ext["item_recurrence_special_f32"] == pytest.approx(1024)
    assert "item_recurrence_special_f64" not in ext
    assert ext["item_recurrence_local_loads"] == pytest.approx(1024)
    assert "item_serial_global_loads" not in ext


def test_the_extended_model_needs_gpu_suites():
    assert model_class("paper").fit_suites("measurement-cpu") == ("measurement-cpu",)
    assert ExtendedModel.fit_suites("measurement") == ("measurement", "extension")
    with pytest.raises(KernelcastError, match="--model paper"):
        ExtendedModel.fit_suites("measurement-cpu")
    with pytest.raises(KernelcastError, match="unknown model"):
        model_class("roofline")


@pytest.fixture(scope="module")
def fitted(gpu_suite_properties):
    with Store(H100) as store:
        dataset = load_dataset(store, ("measurement", "extension"),
                               cache=gpu_suite_properties)
        validation = load_dataset(store, "validation", cache=gpu_suite_properties)
    return ExtendedModel().fit(dataset), dataset, validation


def test_extended_fit_on_h100_data(fitted, tmp_path):
    model, _dataset, validation = fitted
    assert model.provenance_["suites"] == ["extension", "measurement"]
    assert min(model.weights_.values()) >= 0
    assert {"bytes_read", "item_loads_coalesced_32", "item_flops_f32"} <= set(model.weights_)
    assert model.fit_report_["criterion"].startswith("log error")
    assert model.q == OVERLAP_Q and "overlap" in model.fit_report_["criterion"]
    assert all(s["success"] for s in model.fit_report_["solver"])
    table = table1(model, validation)
    assert set(table.kernel_class) == {c.name for c in VALIDATION.classes}
    assert np.isfinite(table.predicted_s).all() and (table.predicted_s > 0).all()

    knl = matvec_cols(256, np.float32)
    parts = kc.explain(knl, {"n": 8192}, model)
    assert sum(parts.values()) == pytest.approx(kc.predict(knl, {"n": 8192}, model))
    assert parts["item_loads_coalesced_32"] > 0  # the one-work-item chain is charged

    again = load_profile(save_profile(model, tmp_path / "p.json"))
    assert again.name == "extended" and again.weights_ == model.weights_
    assert again.q == OVERLAP_Q and again.resident_items_ == model.resident_items_


def test_paper_profiles_refuse_extended_weights(fitted, tmp_path):
    import json

    model, _, _ = fitted
    path = save_profile(model, tmp_path / "p.json")
    doc = json.loads(path.read_text())
    path.write_text(json.dumps({**doc, "model": "paper", "params": {"nonnegative": True}}))
    with pytest.raises(KernelcastError, match="unknown property 'bytes_read'"):
        load_profile(path)


def test_cross_validation_covers_the_extension_classes(fitted):
    model, dataset, _ = fitted
    before = dict(model.weights_)
    small = dataset.subset(dataset.info.kernel_class.isin(
        ["parallelism", "reuse", "matmul_tiled", "scale_add"]).to_numpy())
    cv = cross_validate(model, small)
    assert set(cv.kernel_class) == {"parallelism", "reuse", "matmul_tiled", "scale_add"}
    assert np.isfinite(cv.rel_error).all()
    assert model.weights_ == before  # the template is cloned, never refitted


def test_calibrating_the_kernelcast_model_on_a_cpu_is_refused_before_measuring(
        capsys, tmp_path):
    from kernelcast.cli import main

    db = tmp_path / "cpu.sqlite"
    assert main(["calibrate", "--device", "portable", "--model", "extended",
                 "--db", str(db)]) == 1
    assert "--model paper" in capsys.readouterr().err
    assert not db.exists()


def test_the_default_model_is_the_extended_on_gpus_and_the_papers_on_cpus():
    from kernelcast.workflow import default_model

    assert default_model("measurement") == "extended"
    assert default_model("measurement-cpu") == "paper"


def test_evaluate_cross_validates_the_model_of_the_profile(capsys):
    """`evaluate --cv` of an extended profile holds out the classes it was fitted on,
    the extension classes among them, and refits the extended model (not the paper's)."""
    from kernelcast.cli import main

    profile = str(DATA / "profiles" / "nvidia-h100-80gb-hbm3-opencl-extended.json")
    assert main(["evaluate", "--profile", profile, "--no-measure", "--cv"]) == 0
    out = capsys.readouterr().out
    cv = out[out.index("leave-one-class-out"):]
    assert "guarded" in cv and "intensity" in cv
    overall = [line for line in cv.splitlines() if line.lstrip().startswith("overall")][0]
    assert float(overall.split()[2].rstrip("%")) < 100  # the paper's model: 610%


def test_evaluate_puts_every_model_side_by_side(capsys):
    """`evaluate --model all` fits the models the profile does not hold to the same store
    and prints every model's prediction of each of the same measured cases."""
    from kernelcast.cli import main

    profile = str(DATA / "profiles" / "nvidia-h100-80gb-hbm3-opencl-extended.json")
    assert main(["evaluate", "--profile", profile, "--no-measure", "--model", "all"]) == 0
    out = capsys.readouterr().out
    table, summary = out.split("geometric mean of relative error per kernel")
    times, errors = table.split("relative error |predicted − measured| / measured")
    for part in (times, errors):  # predicted times, then relative errors (tests/test_output)
        header = next(line for line in part.splitlines() if "sizes" in line)
        assert header.split()[-3:] == ["paper", "extended", "hong-kim"]
    rows = [line for line in times.splitlines() if line.strip().startswith("nbody")]
    assert len(rows) == 5  # the five N-body cases, each once, with three predictions
    # kernel, sizes, measured (number and unit), then per model a time (number and unit)
    assert all(len(row.split()) == 4 + 3 * 2 for row in rows)
    overall = next(line for line in summary.splitlines() if line.strip().startswith("overall"))
    assert len(overall.split()) == 2 + 3  # kernel, cases, one error per model
