"""`kernelcast project`: GROPHECY's layout search of a code skeleton from the command line,
run for real through kernelcast.cli.main on the example skeletons."""

import argparse
import io
import json
import re
import sys
from pathlib import Path

import pytest

from kernelcast.cli import main
from kernelcast.cli.project import _Progress
from kernelcast.frontends.skeleton import load_skeleton
from kernelcast.models.grophecy.search import search
from kernelcast.models.hong_kim import load_hardware

ROOT = Path(__file__).resolve().parent.parent
SKELETONS = ROOT / "examples" / "skeletons"
MATMUL, HOTSPOT = str(SKELETONS / "matmul.sk"), str(SKELETONS / "hotspot.sk")
CASES = [(MATMUL, "c1060"), (MATMUL, "h100"), (HOTSPOT, "c1060"), (HOTSPOT, "h100")]
VERDICTS = {"memory-bound", "compute-bound", "not enough warps"}
UNITS = {"s": 1, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9}


@pytest.fixture(scope="module")
def direct():
    """search() called directly, once per (skeleton, hardware)."""
    cache = {}

    def get(path, hardware, defines=None):
        key = (path, hardware, tuple(sorted((defines or {}).items())))
        if key not in cache:
            skeleton = load_skeleton(path, defines)
            cache[key] = skeleton, search(skeleton, load_hardware(hardware))
        return cache[key]
    return get


def _run(capsys, *argv):
    code = main(["project", *argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert err == ""  # not a terminal: no progress lines, nothing else
    return out


def _table(out):
    """The rows of the table, as {column: cell}."""
    lines = out.splitlines()
    rule = next(i for i, line in enumerate(lines) if re.fullmatch(r"-[- ]*", line))
    header = re.split(r"\s{2,}", lines[rule - 1].strip())
    rows = []
    for line in lines[rule + 1:]:
        if not line.strip():
            break
        cells = re.split(r"\s{2,}", line.strip())
        assert len(cells) == len(header), line
        rows.append(dict(zip(header, cells)))
    return rows


def _seconds(cell):
    value, unit = cell.split()
    return float(value) * UNITS[unit]


def _factors(layout):
    return {"block": "×".join(map(str, layout.block)),
            "folding": "none" if set(layout.fold) == {1} else "×".join(map(str, layout.fold)),
            "staging": ", ".join(f"{k} by {s}" for k, s in layout.stages) or "none",
            "caching": ", ".join(layout.cached) or "none",
            "unrolling": "by 16" if layout.unroll else "none"}


def _one_error_line(capsys, code, *parts):
    out, err = capsys.readouterr()
    assert code == 2, err
    assert out == "" and "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kernelcast: error: "), err
    for part in parts:
        assert part in lines[0], (part, lines[0])


@pytest.mark.parametrize(("path", "hardware"), CASES)
def test_table_lists_the_fastest_layouts_in_order(capsys, direct, path, hardware):
    out = _run(capsys, path, "--hardware", hardware, "--top", "7")
    _, result = direct(path, hardware)
    rows = _table(out)
    assert [int(r["#"]) for r in rows] == list(range(1, 8))
    times = [_seconds(r["time"]) for r in rows]
    assert times == sorted(times)
    for row, projection in zip(rows, result.projections, strict=False):
        assert row["bottleneck"] == projection.estimate.verdict in VERDICTS
        assert {k: row[k] for k in _factors(projection.layout)} == _factors(projection.layout)
        assert _seconds(row["time"]) == pytest.approx(projection.seconds, rel=6e-3)
    hw = load_hardware(hardware)
    assert f"on {hw.name}: {result.searched} layouts searched" in out
    assert f"{len(result.projections)} feasible" in out
    for why, n in result.infeasible.items():
        assert f"{n} that {why}" in " ".join(out.split())
    best = [line for line in out.splitlines() if line.startswith("best: ")]
    assert len(best) == 1 and best[0].startswith(
        f"best: block: {'×'.join(map(str, result.best.layout.block))} over i, j")
    assert f"{result.best.estimate.verdict}: " in out
    assert max(map(len, out.splitlines())) <= 100


@pytest.mark.parametrize(("path", "hardware"), CASES)
def test_json_agrees_with_search(capsys, direct, path, hardware):
    doc = json.loads(_run(capsys, path, "--hardware", hardware, "--top", "3", "--json"))
    skeleton, result = direct(path, hardware)
    best = result.best
    assert doc["skeleton"] == path and doc["hardware"] == load_hardware(hardware).name
    assert doc["searched"] == result.searched
    assert doc["feasible"] == len(result.projections)
    assert doc["infeasible"] == result.infeasible
    assert len(doc["layouts"]) == 3
    first = doc["layouts"][0]
    assert first["rank"] == 1
    assert first["seconds"] == pytest.approx(best.seconds, rel=1e-12)
    layout = best.layout
    assert (list(first["block"].values()), list(first["fold"].values())) == (
        list(layout.block), list(layout.fold))
    assert list(first["block"]) == ["i", "j"]
    assert first["stages"] == dict(layout.stages)
    assert first["cached"] == list(layout.cached)
    assert first["unroll"] is layout.unroll
    assert first["verdict"] == best.estimate.verdict
    for key in ("mwp", "cwp", "n"):
        assert first[key] == pytest.approx(getattr(best.estimate, key), rel=1e-12)
    workload = best.characteristics.workload
    for key in ("threads_per_block", "blocks", "comp_insts", "coal_mem_insts",
                "uncoal_mem_insts", "uncoal_per_mw", "synch_insts", "shared_mem_per_block"):
        assert first["workload"][key] == pytest.approx(getattr(workload, key))
    try:
        flops = skeleton.macro("FLOPS")
    except KeyError:
        assert doc["flops"] is None and first["gflops"] is None
    else:
        assert doc["flops"] == flops
        assert first["gflops"] == pytest.approx(flops / best.seconds / 1e9)
    seconds = [entry["seconds"] for entry in doc["layouts"]]
    assert seconds == sorted(seconds)


def test_hints_narrow_the_search(capsys, tmp_path):
    hints = tmp_path / "hints.toml"
    hints.write_text("block = [[16, 16]]\n")
    out = _run(capsys, HOTSPOT, "--hardware", "c1060", "--hints", str(hints), "--top", "500")
    rows = _table(out)
    assert rows and {r["block"] for r in rows} == {"16×16"}
    assert f"narrowed by {hints}" in " ".join(out.split())
    assert f"\nall {len(rows)}, by projected time" in out  # fewer than --top: every one
    doc = json.loads(_run(capsys, MATMUL, "--hardware", "h100", "--hints", str(hints),
                          "--top", "50", "--json"))
    assert len(doc["layouts"]) == 50
    assert all(entry["block"] == {"i": 16, "j": 16} for entry in doc["layouts"])


def test_define_changes_the_sizes(capsys, direct):
    _, full = direct(MATMUL, "c1060")
    doc = json.loads(_run(capsys, MATMUL, "--hardware", "c1060", "--define", "N=400",
                          "--top", "1", "--json"))
    assert doc["kernel"]["dims"] == [400, 800] and doc["defines"] == {"N": 400}
    assert doc["layouts"][0]["seconds"] < full.best.seconds
    _, half = direct(MATMUL, "c1060", {"N": 400})
    assert doc["layouts"][0]["seconds"] == pytest.approx(half.best.seconds, rel=1e-12)


def test_gflops_from_the_flops_macro(capsys, tmp_path):
    text = re.sub(r"(?m)^#define FLOPS .*$", "", Path(HOTSPOT).read_text())
    plain = tmp_path / "plain.sk"
    plain.write_text(text)
    out = _run(capsys, str(plain), "--hardware", "h100", "--top", "3")
    assert "GFLOP/s" not in _table(out)[0]
    assert " ".join(out.split()).count("defines no FLOPS macro") == 1
    doc = json.loads(_run(capsys, str(plain), "--hardware", "h100", "--top", "1", "--json"))
    assert doc["flops"] is None and doc["layouts"][0]["gflops"] is None
    # FLOPS given on the command line, or as an expression of the sizes in the skeleton
    out = _run(capsys, str(plain), "--hardware", "h100", "--top", "3",
               "--define", "FLOPS=1000000")
    first = _table(out)[0]
    assert float(first["GFLOP/s"]) == pytest.approx(1e6 / _seconds(first["time"]) / 1e9,
                                                    rel=6e-3)
    (tmp_path / "flops.sk").write_text(text + "\n#define FLOPS 2*ROWS*COLS\n")
    doc = json.loads(_run(capsys, str(tmp_path / "flops.sk"), "--hardware", "h100", "--top",
                          "1", "--json", "--define", "ROWS=256"))
    entry = doc["layouts"][0]
    assert doc["flops"] == 2 * 256 * 512
    assert entry["gflops"] == pytest.approx(2 * 256 * 512 / entry["seconds"] / 1e9)


TWO = """#define N 256
float A[N]
float B[N]
parallel_for(N) : i { ld A[i] comp 2 st B[i] }
parallel_for(N) : i { ld B[i] comp 4 st A[i] }
"""


def test_kernel_chooses_a_parallel_for(capsys, tmp_path):
    path = tmp_path / "two.sk"
    path.write_text(TWO)
    _one_error_line(capsys, main(["project", str(path), "--hardware", "h100"]),
                    "has 2 parallel_for loops (lines 4, 5); choose one with --kernel 0..1")
    doc = json.loads(_run(capsys, str(path), "--hardware", "h100", "--kernel", "1", "--json"))
    assert doc["kernel"]["index"] == 1 and doc["kernel"]["line"] == 5
    _one_error_line(capsys, main(["project", str(path), "--hardware", "h100", "--kernel",
                                  "2"]), "--kernel 2:", "2 parallel_for loops")


def test_bad_input_is_one_line_with_exit_2(capsys, tmp_path):
    bad = tmp_path / "bad.sk"
    bad.write_text("#define N 8\nfloat A[N]\nparallel_for(N) : i {\n  ld A[i\n}\n")
    broken = tmp_path / "broken.toml"
    broken.write_text("block = [[16, 16]\n")
    stored = tmp_path / "stored.toml"
    stored.write_text('cache = [["C"]]\n')  # MatMul stores C and never loads it
    cases = [
        ([str(tmp_path / "missing.sk"), "--hardware", "c1060"],
         ["missing.sk", "cannot read the skeleton"]),
        ([str(bad), "--hardware", "c1060"], [f"{bad}:5:1: ", "expected ']'"]),
        ([MATMUL, "--hardware", "c1099"], ["no hardware description 'c1099'", "c1060"]),
        ([MATMUL, "--hardware", "c1060", "--hints", str(broken)],
         [f"{broken}: not a TOML hints file"]),
        ([MATMUL, "--hardware", "c1060", "--hints", str(stored)],
         [f"{stored}: hints cache C, which the kernel never loads"]),
        ([MATMUL, "--hardware", "c1060", "--hints", str(tmp_path / "none.toml")],
         ["none.toml: no such hints file"]),
        ([MATMUL, "--hardware", "c1060", "--top", "0"],
         ["--top: expected a positive integer, got '0'"]),
        ([MATMUL, "--hardware", "c1060", "--define", "N=4.5"],
         ["--define N: expected an integer, got '4.5'"]),
        ([MATMUL, "--hardware", "c1060", "--define", "N=abc"],
         ["--define N: expected an integer, got 'abc'"]),
        ([MATMUL, "--hardware", "c1060", "--define", "NN=4"],
         ["--define NN:", "has no macro NN"]),
        ([MATMUL, "--hardware", "c1060", "--kernel", "x"],
         ["--kernel: expected an integer of at least 0, got 'x'"]),
    ]
    for argv, parts in cases:
        _one_error_line(capsys, main(["project", *argv]), *parts)


def test_progress_only_on_a_terminal_after_a_second(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    for stream, shown in ((Terminal(), True), (io.StringIO(), False)):
        monkeypatch.setattr(sys, "stderr", stream)
        progress = _Progress("searching")
        progress(256)  # under a second: nothing yet
        assert stream.getvalue() == ""
        progress.start -= 2
        progress(512)
        progress.close()
        text = stream.getvalue()
        assert ("512 layouts searched" in text) is shown
        if shown:  # rewritten in place, then erased
            assert text.startswith("\r") and text.endswith("\r") and "\n" not in text


def test_every_flag_has_help():
    from kernelcast.cli import build_parser

    parser = build_parser()
    [verbs] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    flags = {a.dest: a.help for a in verbs.choices["project"]._actions}
    assert {"skeleton", "hardware", "hints", "top", "kernel", "define", "json"} <= set(flags)
    assert all((text or "").strip() for text in flags.values())
