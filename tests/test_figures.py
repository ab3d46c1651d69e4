"""The figures of kernelcast.report, read as a person reads them: a legend of at most eight
entries in distinct colours, outside the plot and over no label; a title naming the model,
the device and the profile's date; no text cut off at the figure's edge; criteria the
criteria model did not judge marked "not judged", not drawn as bars of 0; and drawing
them leaves matplotlib's backend as the caller chose."""

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from kernelcast import report
from kernelcast.models.criteria.criteria import CRITERIA, Assessment

ROOT = Path(__file__).resolve().parent.parent
MODEL = SimpleNamespace(name="extended", provenance_={
    "device": "NVIDIA H100 80GB HBM3", "backend": "opencl",
    "created_at": "2026-11-25T11:42:27+00:00"})
CRITERIA_MODEL = SimpleNamespace(name="criteria", provenance_={
    "device": "NVIDIA H100 80GB HBM3", "backend": "cuda",
    "created_at": "2026-11-26T05:17:48+00:00"})


def _breakdowns(terms=24):
    """Four cases of *terms* terms each; term i weighs about i + 1, so t00.. are least."""
    return {f"kernel{k} n={1024 << k}": {f"t{i:02d}": (i + 1) * (1 + 0.1 * k)
                                         for i in range(terms)} for k in range(4)}


def _table(classes=10):
    rows = [{"kernel_class": f"class{c}", "measured_s": 1e-5 * (c + 1) * (i + 1),
             "predicted_s": 1.1e-5 * (c + 1) * (i + 1)}
            for c in range(classes) for i in range(c + 1)]  # class c has c + 1 cases
    return pd.DataFrame(rows)


def _assessment(label, values):
    speedups = {c: 1.0 if v is None else 1 / max(v, 0.1) for c, v in values.items()}
    return (label, Assessment(label, (), values, speedups, 3.0, 1e-3,
                              device="NVIDIA H100 80GB HBM3"))


VALUES = {c: 0.5 for c in CRITERIA} | {"HOSTSYNC": None, "SHMEM_EFFICIENCY": None,
                                        "DIVERGENCE": 0.0}


def _figures():
    return {"scatter": report.scatter_figure(MODEL, _table()),
            "breakdown": report.breakdown_figure(MODEL, _breakdowns()),
            "advice": report.advice_figure(
                [_assessment("1-naive", VALUES), _assessment("2-tiled", VALUES)],
                "transpose", {"1-naive": 1.0, "2-tiled": 2.0}, CRITERIA_MODEL)}


def _legend(fig):
    found = [*fig.legends, *(a.get_legend() for a in fig.axes if a.get_legend())]
    assert len(found) == 1
    return found[0]


def _labels(legend):
    return [t.get_text() for t in legend.get_texts()]


@pytest.mark.parametrize("name", ["scatter", "breakdown", "advice"])
def test_a_legend_has_at_most_eight_entries_in_distinct_colours(name):
    legend = _legend(_figures()[name])
    handles = legend.legend_handles
    assert 2 <= len(handles) <= report.LEGEND_LIMIT
    colours = [tuple(h.get_facecolor()) if hasattr(h, "get_facecolor")
               else h.get_color() for h in handles]
    assert len(set(map(str, colours))) == len(colours)


def test_the_breakdown_groups_the_terms_of_least_share_as_other():
    labels = _labels(_legend(report.breakdown_figure(MODEL, _breakdowns())))
    assert labels == [f"t{i:02d}" for i in range(23, 16, -1)] + ["other (17 terms)"]
    labels = _labels(_legend(report.breakdown_figure(MODEL, _breakdowns(terms=8))))
    assert len(labels) == 8 and not any(x.startswith("other") for x in labels)


def test_the_scatter_groups_the_kernels_of_fewest_cases_as_other():
    labels = _labels(_legend(report.scatter_figure(MODEL, _table())))
    assert labels == [f"class{c}" for c in range(4, 10)] + ["other (4 kernels)", "±20%"]


@pytest.mark.parametrize("name", ["scatter", "breakdown", "advice"])
def test_the_title_names_the_model_the_device_and_the_profile_date(name):
    title = _figures()[name].get_suptitle()
    model = CRITERIA_MODEL if name == "advice" else MODEL
    for part in (f"{model.name} model", "NVIDIA H100 80GB HBM3",
                 model.provenance_["created_at"][:10]):
        assert part in title


def _drawn_texts(fig):
    """The texts drawn on *fig*: titles, axis and tick labels in view, annotations."""
    texts = [*fig.texts, *([fig._suptitle] if fig._suptitle else [])]
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            ticks = [t for t in [*axis.get_major_ticks(), *axis.get_minor_ticks()]
                     if lo - 1e-9 * (hi - lo) <= t.get_loc() <= hi + 1e-9 * (hi - lo)]
            texts += [axis.label, *(x for t in ticks for x in (t.label1, t.label2))]
        texts += [ax.title, *ax.texts]
    return [t for t in texts if t.get_visible() and t.get_text().strip()]


@pytest.mark.parametrize("name", ["scatter", "breakdown", "advice"])
def test_no_text_is_cut_off_and_the_legend_covers_no_plot_or_label(name):
    fig = _figures()[name]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legend = _legend(fig)
    edge = fig.bbox.padded(1)  # a pixel of rounding
    boxes = {t.get_text(): t.get_window_extent(renderer)
             for t in [*_drawn_texts(fig), *legend.get_texts(), legend.get_title()]
             if t.get_text().strip()}
    assert [text for text, box in boxes.items()
            if not (edge.contains(box.x0, box.y0) and edge.contains(box.x1, box.y1))] == []
    box = legend.get_window_extent(renderer)
    assert edge.contains(box.x0, box.y0) and edge.contains(box.x1, box.y1)
    assert not any(box.overlaps(ax.get_window_extent(renderer)) for ax in fig.axes)
    assert [t.get_text() for t in _drawn_texts(fig)
            if box.overlaps(t.get_window_extent(renderer))] == []


def test_criteria_not_judged_are_marked_not_drawn_as_zero():
    versions = [_assessment("1-naive", VALUES), _assessment("2-tiled", VALUES)]
    fig = report.advice_figure(versions, "transpose")
    left = fig.axes[0]
    marks = [t for t in left.texts if t.get_text() == "not judged"]
    assert len(marks) == 2 * 2  # two criteria of two versions
    assert "not judged" in _labels(_legend(fig))
    unjudged = [j for j, c in enumerate(CRITERIA) if VALUES[c] is None]
    for t in marks:  # each over the group of a criterion not judged
        assert min(abs(t.get_position()[0] - j) for j in unjudged) < 0.5
    hatched = [p for p in left.patches if p.get_hatch()]
    assert len(hatched) == 4 and all(p.get_height() > 0.9 for p in hatched)
    # without a model, the title names the model and the device that judged
    assert "criteria model" in fig.get_suptitle()
    assert "NVIDIA H100 80GB HBM3" in fig.get_suptitle()


def test_drawing_figures_leaves_the_backend_as_the_caller_chose(tmp_path):
    code = f"""
import matplotlib
before = matplotlib.get_backend()
import kernelcast.models.criteria.advice as advice
import kernelcast.report
assert matplotlib.get_backend() == before, "import"
from kernelcast.models.criteria.criteria import CRITERIA, Assessment
a = Assessment("app", (), {{c: 0.5 for c in CRITERIA}}, {{c: 1.0 for c in CRITERIA}}, 2.0, 1e-3,
               device="GPU")
kernelcast.report.save_figure(kernelcast.report.advice_figure([("app", a)]),
                              {str(tmp_path / "advice.png")!r})
kernelcast.report.save_figure(kernelcast.report.breakdown_figure(
    type("M", (), {{"name": "paper", "provenance_": {{"device": "GPU"}}}}),
    {{"k": {{"launch": 1.0}}}}), {str(tmp_path / "breakdown.png")!r})
print(before, matplotlib.get_backend())
"""
    env = {**os.environ, "MPLBACKEND": "svg"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["svg", "svg"]
    for name in ("advice.png", "breakdown.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
