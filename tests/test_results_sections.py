"""The results page's sections (kernelcast.evaluation.results) on the committed data/:
what a section prints against the same quantity read straight from the committed files
with sqlite3, json and csv. No model is fitted: the sections tested read stores and
benchmark documents only."""

import csv
import json
import sqlite3
from pathlib import Path

import pytest

from kernelcast.evaluation.results import Data, Figures
from kernelcast.evaluation.results import (calibration, hardware, overlap, reliability,
                                           stores, tuning)
from kernelcast.evaluation.results.common import STORES, store_label

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
SUITES = ("measurement", "extension", "test", "validation")


def _table(lines: list[str], after: str | None = None) -> list[list[str]]:
    """The body rows of the first markdown table in *lines* (after the first line that
    starts with *after*), as lists of cells."""
    if after is not None:
        lines = lines[next(i for i, line in enumerate(lines) if line.startswith(after)):]
    text = next(line for line in lines if line.startswith("| "))
    return [row[2:-2].split(" | ") for row in text.splitlines()[2:]]


def _count(path: Path, sql: str) -> dict:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return dict(db.execute(sql).fetchall())


@pytest.fixture(scope="module")
def data():
    return Data(DATA)


@pytest.fixture(scope="module")
def frames(data):
    return stores.read_stores(data)


def _stores_present():
    present = [(g, b) for g, b in STORES if (DATA / g / f"{b}.sqlite").exists()]
    if not present:
        pytest.skip("no measurement store in data/")
    return present


def test_data_counts_each_stores_timed_and_unstable_rows(data, frames):
    rows = {r[0]: r for r in _table(stores.section_data(data, frames))}
    for gpu, backend in _stores_present():
        path = DATA / gpu / f"{backend}.sqlite"
        timed = _count(path, "SELECT suite, COUNT(*) FROM measurements "
                             "WHERE status IN ('ok', 'unstable') GROUP BY suite")
        unstable = _count(path, "SELECT status, COUNT(*) FROM measurements "
                                "GROUP BY status").get("unstable", 0)
        row = rows[store_label(gpu, backend)]
        assert row[1] == f"`data/{gpu}/{backend}.sqlite`"
        assert [int(n) for n in row[5].split(" / ")] == [timed.get(s, 0) for s in SUITES]
        assert int(row[6]) == unstable


def test_calibration_counts_every_row_of_each_suite(data, frames):
    rows = _table(calibration.section_calibration(data, frames))
    shown = {(r[0], r[1]): int(r[2]) for r in rows}
    for gpu, backend in _stores_present():
        counts = _count(DATA / gpu / f"{backend}.sqlite",
                        "SELECT suite, COUNT(*) FROM measurements GROUP BY suite")
        for suite in SUITES:
            if counts.get(suite):
                assert shown[store_label(gpu, backend), suite] == counts[suite]


def test_overlap_means_each_q_over_the_stores_of_the_csvs(data):
    files = sorted((DATA / "cv").glob("overlap-exponent*.csv"))
    if not files:
        pytest.skip("no data/cv/overlap-exponent*.csv")
    cv = {}
    for path in files:
        with path.open(newline="") as handle:
            for record in csv.DictReader(handle):
                cv[record["store"], float(record["q"])] = float(record["cv_geomean"])
    lines = overlap.section_overlap(data, {}, {})
    keys = {store for store, _ in cv}
    means = {q: sum(cv[k, q] for k in keys) / len(keys)
             for q in {q for _, q in cv} if all((k, q) in cv for k in keys)}
    best = min(means, key=means.get)
    rows = {float(r[0]): r[-1] for r in _table(lines)}
    assert set(rows) == {q for _, q in cv}
    for q, mean in means.items():
        text = f"{100 * mean:.1f}%"
        assert rows[q] == (f"**{text}**" if q == best else text)
    assert f"; {len(cv)} rows, " in lines[-1]


def test_reliability_sums_the_kills_and_corruptions(data):
    path = DATA / "reliability.json"
    if not path.exists():
        pytest.skip("no data/reliability.json")
    doc = json.loads(path.read_text(encoding="utf-8"))
    text = "\n".join(reliability.section_reliability(data))
    kills = doc["kills"]
    assert f"**Kills**: {kills['survived']} of {kills['total']} survived" in text
    lines = [line for line in text.splitlines() if line.startswith("- **Corruptions, ")]
    assert len(lines) == 2
    for kind, line in zip(("value", "byte"), lines):
        counts = doc["corruptions"][kind]
        assert f"**: {sum(counts.values())} copies of a finished store: " in line
        assert all(f"{n} {outcome}" in line for outcome, n in counts.items())
        assert line.endswith(f"undetected: {counts.get('undetected', 0)}.")


def test_hardware_counts_the_kernels_of_each_registers_file(data):
    text = "\n".join(hardware.section_hardware(data))
    for gpu in ("h100", "h200"):
        path = DATA / gpu / "registers.json"
        if path.exists():
            kernels = len(json.loads(path.read_text()))
            assert f"`data/{gpu}/registers.json` ({kernels} kernels, " in text


def test_tuning_methodology_counts_the_families_each_search_reaches(data):
    path = DATA / "h100" / "tuning-methodology.json"
    if not path.exists():
        pytest.skip("no data/h100/tuning-methodology.json")
    doc = json.loads(path.read_text(encoding="utf-8"))
    families = doc["families"]
    lines = tuning.section_tuning_methodology(data)
    table = next(line for line in lines if line.startswith("| search |"))
    heads = table.splitlines()[0][2:-2].split(" | ")[1:]
    assert [h.split(" (")[0] for h in heads] == list(families)
    for head, (name, e) in zip(heads, families.items()):
        assert head.startswith(f"{name} ({e['variants']}, {e['within_5_percent']} within")
    targets = {r[0]: r for r in _table(lines, "**Against the targets**")}
    for search in next(iter(families.values()))["searches"]:
        if not search.endswith("+feedback"):
            continue
        fast = sum(1 for f in families.values()
                   if f["searches"][search]["to_within_5"]["median"] is not None
                   and f["searches"][search]["to_within_5"]["median"] <= 5)
        model = search.removeprefix("kernelcast:").removesuffix("+feedback")
        assert targets[f"kernelcast {model} + feedback"][1] == f"{fast} of {len(families)}"


def test_sections_read_the_data_root_not_the_working_folder(data, tmp_path, monkeypatch):
    here = hardware.section_hardware(data)
    monkeypatch.chdir(tmp_path)
    assert hardware.section_hardware(Data(DATA)) == here
    assert not any(tmp_path.iterdir())


def test_a_section_draws_its_figure_into_the_figures_folder(data, tmp_path):
    if not (DATA / "h100" / "tuning-methodology.json").exists():
        pytest.skip("no data/h100/tuning-methodology.json")
    drawn = []

    def draw(*args):
        drawn.append(args)

    figures = Figures(tmp_path, random_kernels=draw, characterization=draw,
                      tuning_methodology=draw, advice=draw, save=draw)
    lines = tuning.section_tuning_methodology(data, figures)
    [(doc, path, label)] = drawn
    assert path == tmp_path / "tuning-methodology.png"
    assert "![score curves](figures/tuning-methodology.png)" in lines
    assert list(doc["families"]) == list(json.loads(
        (DATA / "h100" / "tuning-methodology.json").read_text(encoding="utf-8"))["families"])
