"""What `kernelcast evaluate` prints: every table in one style (kernelcast.report's
format_table), every line within 100 columns on the committed stores and profiles, and
statuses other than ok explained where they appear."""

import contextlib
import io
import re
from pathlib import Path

import pandas as pd
import pytest

from kernelcast import report
from kernelcast.cli import main

ROOT = Path(__file__).resolve().parent.parent
PROFILES = ROOT / "data" / "profiles"


def _evaluate(*args):
    """stdout of `kernelcast evaluate ARGS --no-measure` and the text of every table
    format_table made meanwhile."""
    made = []
    original = report.format_table

    def recording(*a, **k):
        text = original(*a, **k)
        made.append(text)
        return text

    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out):
        mp.setattr(report, "format_table", recording)
        assert main(["evaluate", *args, "--no-measure"]) == 0
    return out.getvalue(), made


@pytest.fixture(scope="module")
def every_model():
    return _evaluate("--profile", str(PROFILES / "nvidia-h200-opencl-extended.json"),
                     "--model", "all")


@pytest.fixture(scope="module")
def paper():
    return _evaluate("--profile", str(PROFILES / "nvidia-h100-80gb-hbm3-opencl-paper.json"))


def _width(text):
    return max(len(line) for line in text.splitlines())


@pytest.mark.parametrize("profile", ["nvidia-h100-80gb-hbm3-opencl-extended",
                                     "nvidia-h100-80gb-hbm3-cuda-hong-kim"])
def test_one_model_fits_100_columns(profile):
    out, made = _evaluate("--profile", str(PROFILES / f"{profile}.json"))
    assert "Table 1" in out and made
    assert _width(out) <= 100


def test_paper_model_with_table_2_fits_100_columns(paper):
    out, _ = paper
    assert "Table 2" in out and "negative weights" in out
    assert _width(out) <= 100  # was 165: the units of Table 2 are a legend now


def test_every_model_side_by_side_fits_100_columns(every_model):
    out, _ = every_model
    for name in ("paper", "extended", "hong-kim"):
        assert name in out
    assert _width(out) <= 100  # was 116


@pytest.mark.parametrize("run", ["paper", "every_model"])
def test_every_printed_table_comes_from_format_table(run, request):
    """Whatever is not a table made by format_table is prose: no column alignment."""
    out, made = request.getfixturevalue(run)
    rest = out
    for text in made:
        assert text in rest
        rest = rest.replace(text, "", 1)
    for line in rest.splitlines():
        assert not re.search(r"\S {2,}\S", line) and not line.startswith(" "), line
        assert not set(line) <= {"-", " "} or not line, line
    rules = [line for line in out.splitlines() if line and set(line) <= {"-", " "}]
    assert len(rules) == len(made) >= 3


def test_side_by_side_keeps_every_case_once(every_model):
    """Predicted times of every model, then their relative errors, one row per case."""
    out, _ = every_model
    times, errors = out.split("relative error |predicted − measured| / measured")
    errors = errors.split("geometric mean")[0]
    for part in (times, errors):
        header = next(line for line in part.splitlines() if line.startswith("kernel"))
        assert header.split()[-3:] == ["paper", "extended", "hong-kim"]
        rows = [line for line in part.splitlines() if line.startswith("nbody")]
        assert len(rows) == 5
    assert all(len(row.split()) == 2 + 2 + 3 * 2 for row in times.splitlines()
               if row.startswith("nbody"))  # kernel, size, then times with units
    assert all(len(row.split()) == 2 + 3 for row in errors.splitlines()
               if row.startswith("nbody"))


def test_format_table_splits_and_wraps_to_the_width():
    wide = pd.DataFrame({"kernel": ["a", "b"], **{f"model {i}": ["1.5 ms", "20.1%"]
                                                  for i in range(30)}})
    text = report.format_table(wide, width=60)
    assert _width(text) <= 60
    parts = text.split("\n\n")
    assert len(parts) > 1 and all(p.startswith("kernel") for p in parts)
    long = pd.DataFrame({"key": ["a"], "meaning": ["word " * 60]})
    text = report.format_table(long, width=50)
    assert _width(text) <= 50 and len(text.splitlines()) > 3
    assert text.count("word") == 60


def test_markdown_and_text_align_alike():
    frame = pd.DataFrame({"kernel": ["nbody"], "measured": ["1.5 ms"], "error": ["2.0%"]})
    assert report.format_table(frame, markdown=True).splitlines()[1] == \
        "| --- | ---: | ---: |"
    text = report.format_table(frame).splitlines()
    assert text[0] == "kernel  measured  error" and text[2] == "nbody     1.5 ms   2.0%"


def _with_an_unstable_case():
    from kernelcast.fitting.dataset import load_dataset
    from kernelcast.measure.store import Store
    from kernelcast.evaluation.tables import table1
    from kernelcast.profile import load_profile

    model = load_profile(PROFILES / "nvidia-h100-80gb-hbm3-opencl-paper.json")
    with Store(ROOT / "data" / "h100" / "opencl.sqlite") as store:
        table = table1(model, load_dataset(store, "test"))
    table.loc[3, "status"] = "unstable"
    return model, table


def _flat(text):
    return " ".join(text.split())


def test_unstable_cases_are_marked_and_explained(tmp_path):
    model, table = _with_an_unstable_case()
    meaning = _flat(report.STATUS_MEANINGS["unstable"])
    assert "median of the kept runs exceeded the minimum by more than the tolerance" in meaning
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        report.print_evaluation(model, {model.name: table})
    assert meaning in _flat(out.getvalue()) and "unstable (1 of 21 cases)" in out.getvalue()
    lines = out.getvalue().splitlines()
    assert sum(line.split()[-1:] == ["unstable"] for line in lines) == 1  # the case's row
    assert _width(out.getvalue()) <= 100
    report.write_report(tmp_path, model, table)
    assert meaning in _flat((tmp_path / "report.md").read_text())


def test_every_status_has_a_meaning_in_code_and_docs():
    from kernelcast.measure import store

    statuses = {*store.STATUSES, "crashed", "size_out_of_range", "failed"}
    assert statuses <= set(report.STATUS_MEANINGS)
    cli = (ROOT / "docs" / "cli.md").read_text()
    for status in report.STATUS_MEANINGS:
        assert f"`{status}`" in cli
    assert _flat(report.STATUS_MEANINGS["unstable"]) in _flat(cli)


def test_cross_validations_over_different_classes_side_by_side():
    """Models fitted on different suites hold out different classes; overall stays last."""
    from kernelcast.evaluation.tables import side_by_side_summary

    a = pd.DataFrame({"kernel_class": ["x", "y"], "rel_error": [0.1, 0.2]})
    b = pd.DataFrame({"kernel_class": ["x", "z", "y"], "rel_error": [0.1, 0.3, 0.2]})
    summary = side_by_side_summary({"a": a, "b": b})
    assert list(summary.index) == ["x", "y", "z", "overall"]
    text = report.format_side_by_side_summary({"a": a, "b": b})
    assert "cases" not in text and "–" in text


def test_a_prediction_of_no_positive_time_is_shown_and_said_to_be_one():
    import pandas as pd

    from kernelcast.report import negative_notes

    tables = {"paper": pd.DataFrame({"case_name": ["nbody/n=128", "fd/n=64", "mm/n=32"],
                                     "predicted_s": [-1.93e-6, 2.0e-6, 0.0]}),
              "extended": pd.DataFrame({"case_name": ["nbody/n=128"], "predicted_s": [3e-6]})}
    [note] = negative_notes(tables)
    assert note.startswith("the paper model predicts no positive time for 2 of 3 cases "
                           "(nbody/n=128, mm/n=32)")
