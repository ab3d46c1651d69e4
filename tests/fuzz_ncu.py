"""Nsight Compute inputs of the command-line fuzz (tests/fuzzing.py): raw-page CSVs that
ncu wrote on the H100 and the H200 (data/<gpu>/criteria/*ncu.tar.xz, read in memory),
damaged in their structure (a metric's value made extreme or emptied, a column, a row or
the units row removed, a row cut short, the device or kernel renamed) or their bytes;
criteria profiles (committed, damaged); and the invocations of ``kernelcast advise``.
``counters_csv`` writes the profile of a launch of the workspace's ``scale`` kernel for
``kernelcast counters --compare`` (a real H100 row from data/h100/counters/ncu.tar.xz,
renamed and resized to that launch), beside launches of other shapes, kernels or GPUs, or
damaged as above.

Public names: prepare, gen_advise, counters_csv.
"""

from __future__ import annotations

import csv
import io
import json
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
ARCHIVES = {"h100": DATA / "h100" / "criteria" / "ncu.tar.xz",
            "h200": DATA / "h200" / "criteria" / "ncu.tar.xz",
            "loopy": DATA / "h100" / "criteria" / "loopy-ncu.tar.xz"}
COUNTERS_ARCHIVE = DATA / "h100" / "counters" / "ncu.tar.xz"
PICKED = {"h100": ("transpose-1-naive.csv", "reduction-2-warp.csv", "bfs-1-multikernel.csv"),
          "h200": ("transpose-2-tiled.csv", "bfs-3-cooperative.csv"),
          "loopy": ("loopy-transpose_naive.csv",)}
# metrics the criteria read; other columns are damaged too, less often
METRICS = ("device__attribute_display_name", "device__attribute_multiprocessor_count",
           "device__attribute_warp_size", "gpu__time_duration.sum", "launch__block_size",
           "launch__grid_size", "launch__sm_count", "sm__cycles_active.avg",
           "sm__cycles_elapsed.avg", "sm__maximum_warps_per_active_cycle_pct",
           "sm__warps_active.avg.pct_of_peak_sustained_active",
           "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
           "sm__throughput.avg.pct_of_peak_sustained_elapsed", "smsp__inst_executed.sum",
           "smsp__thread_inst_executed_pred_on_per_inst_executed.ratio")
VALUES = ("nan", "inf", "-inf", "-1", "0", "1e308", "5e-324", "x", "", "-5,000.5",
          "99999999999999999999", "1,2,3", "n/a")


def prepare(ws) -> None:
    """The picked CSVs, parsed (the lines ncu printed before them kept apart), and valid
    copies in the workspace; the criteria profiles in the workspace and in its
    kernelcast-data/, where advise finds one by the CSV's device name."""
    ws.ncu = {}  # name -> (lines before the table, rows)
    folder = ws.root / "ncu"
    folder.mkdir(exist_ok=True)
    for gpu, archive in ARCHIVES.items():
        with tarfile.open(archive) as tar:
            for name in PICKED[gpu]:
                text = tar.extractfile(name).read().decode("utf-8")
                head, _, table = text.partition('"ID",')
                ws.ncu[name] = (head, list(csv.reader(io.StringIO('"ID",' + table))))
                (folder / name).write_text(text)
    with tarfile.open(COUNTERS_ARCHIVE) as tar:  # a row to rename: counters_csv
        member = next(m for m in tar.getmembers() if m.name.endswith(".csv"))
        text = tar.extractfile(member).read().decode("utf-8")
        head, _, table = text.partition('"ID",')
        ws.ncu_counters = (head, list(csv.reader(io.StringIO('"ID",' + table)))[:3])
    ws.criteria = {}  # gpu -> a committed criteria profile's document
    (ws.root / "kernelcast-data").mkdir(exist_ok=True)
    for path in sorted((DATA / "profiles").glob("*-criteria.json")):
        doc = json.loads(path.read_text())
        ws.criteria["h200" if "h200" in path.name else "h100"] = doc
        (ws.root / "kernelcast-data" / path.name).write_text(json.dumps(doc, indent=1))


def _written(ws, head: str, rows: list[list[str]], suffix: str = ".csv") -> str:
    path = ws.fresh(suffix)
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    path.write_text(head + out.getvalue())
    return str(path)


def _column(ws, header: list[str]) -> int:
    known = [i for i, name in enumerate(header) if name in METRICS]
    return ws.choice(known) if known and ws.chance(0.7) else ws.rng.randrange(len(header))


def _damaged_rows(ws, rows: list[list[str]]) -> list[list[str]]:
    """*rows* (header, units, launches) damaged in one to three places."""
    rows = [list(row) for row in rows]
    for _ in range(ws.rng.randrange(1, 4)):
        header, launches = rows[0], max(len(rows) - 2, 0)
        op = ws.rng.randrange(9)
        if op in (0, 1, 2) and launches:  # a value
            row, column = rows[2 + ws.rng.randrange(launches)], _column(ws, header)
            if column < len(row):
                row[column] = ws.choice(VALUES)
        elif op == 3:  # a column
            column = _column(ws, header)
            for row in rows:
                del row[column:column + 1]
        elif op == 4 and launches:  # a launch removed or repeated
            i = 2 + ws.rng.randrange(launches)
            rows[i:i + 1] = [list(rows[i]) for _ in range(ws.choice((0, 2, 50)))]
        elif op == 5:
            rows = rows[:ws.choice((1, 2))]  # no launch (no units row)
        elif op == 6:
            del rows[1:2]  # the units row
        elif op == 7 and launches:  # a row cut short
            row = rows[2 + ws.rng.randrange(launches)]
            del row[ws.rng.randrange(len(row) + 1):]
        elif launches:  # the device or a kernel renamed, an ID not a number
            row = rows[2 + ws.rng.randrange(launches)]
            column = ws.choice([i for i, name in enumerate(header)
                                if name in ("device__attribute_display_name", "Kernel Name",
                                            "ID", "Device")] or [0])
            if column < len(row):  # not "nan": the output is checked for non-finite
                # numbers, and a kernel's own name, echoed, would read as one
                row[column] = ws.choice(("NVIDIA H200", "NVIDIA H100 80GB HBM3", "Radeon zz",
                                         "", "x" * 5000, "\u00e9\u4e2d", "-1", "1e308"))
        if not rows:
            break
    return rows


def _csv(ws, damaged: bool) -> str:
    """A CSV's path: valid; or *damaged*: in its structure or its bytes, not named .csv,
    a Loopy kernel (advise would profile it under ncu), or a bad path."""
    name = ws.choice(sorted(ws.ncu))
    head, rows = ws.ncu[name]
    if not damaged:
        return str(ws.root / "ncu" / name)
    ws.damaged.add("ncu CSV")
    kind = ws.rng.random()
    if kind < 0.55:
        return _written(ws, head, _damaged_rows(ws, rows))
    if kind < 0.7:
        return ws.text_file((ws.root / "ncu" / name).read_text(), ".csv", '",.-0123456789e\n',
                            VALUES)
    if kind < 0.77:
        return _written(ws, head, rows, ws.choice((".txt", ".CSV", "")))
    if kind < 0.84:
        return ws.choice((f"{ws.root}/kernels.py:scale", f"{ws.root}/kernels.py:divides",
                          f"{ROOT}/examples/kernels.py:transpose_tiled"))
    return ws.bad_path(".csv")


def _launch_row(header, row, kernel: str, groups: int, block: int, device: str) -> list:
    values = dict(zip(header, row))
    values.update({"Kernel Name": kernel, "Grid Size": f"({groups}, 1, 1)",
                   "Block Size": f"({block}, 1, 1)", "launch__grid_size": f"{groups:,}",
                   "launch__block_size": str(block), "device__attribute_display_name": device})
    return [values.get(name, "") for name in header]


def counters_csv(ws, size: str, damaged: bool) -> str:
    """The path of ncu's raw CSV of the workspace's ``scale`` at *size* ("n=1000": one
    group of 128 lanes per 128 elements); now and then beside launches of another shape
    or kernel, or of another GPU; *damaged*: in its structure or bytes, or a bad path."""
    head, (header, units, row) = ws.ncu_counters
    name, _, value = size.partition("=")
    n = int(value) if name == "n" and value.isdecimal() else 1000
    launches = [_launch_row(header, row, "loopy_kernel", -(-n // 128), 128,
                            ws.choice(("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3",
                                       "NVIDIA H200")))]
    if ws.chance(0.3):  # another shape or kernel first, the same launch twice
        other = ws.choice(((-(-n // 128) + 1, 128, "loopy_kernel"), (1, 64, "loopy_kernel"),
                           (8, 128, "scale"), (8, 128, "void loopy_kernel(float *)")))
        launches = [_launch_row(header, row, other[2], other[0], other[1],
                                "NVIDIA H100 80GB HBM3"), *launches, *launches]
    for i, launch in enumerate(launches):
        launch[0] = str(i)
    rows = [header, units, *launches]
    if not damaged:
        return _written(ws, head, rows)
    ws.damaged.add("ncu CSV")
    kind = ws.rng.random()
    if kind < 0.6:
        return _written(ws, head, _damaged_rows(ws, rows))
    if kind < 0.75:
        return ws.text_file(Path(_written(ws, head, rows)).read_text(), ".csv",
                            '",.-0123456789e\n', VALUES)
    if kind < 0.85:
        return str(ws.root / "ncu" / ws.choice(sorted(ws.ncu)))  # other kernels' launches
    return ws.bad_path(".csv")


def _profile(ws, damaged: bool) -> list[str]:
    """--profile or --device, or neither (found by the CSV's device name); *damaged*: a
    damaged criteria profile, another model's, a bad path or an unknown device."""
    valid = sorted(p.name for p in (ws.root / "kernelcast-data").glob("*-criteria.json"))
    if not damaged:
        return ws.choice((["--profile", str(ws.root / "kernelcast-data" / ws.choice(valid))],
                          ["--device", ws.choice(("H100", "h200", "80GB HBM3"))], []))
    kind = ws.rng.random()
    if kind < 0.55:
        ws.damaged.add("criteria profile")
        return ["--profile", ws.json_file(ws.criteria[ws.choice(sorted(ws.criteria))])]
    if kind < 0.7:
        return ["--profile", ws.profile(valid=0.7, models=(
            "paper", "learned", "poppl-herz", "hong-kim"))]
    if kind < 0.85:
        return ["--profile", ws.bad_path()]
    return ["--device", ws.choice(("NVIDIA", "nope", ""))]


def gen_advise(ws, budget) -> list[str]:
    fault = ws.fault("csv", "profile", "flags")
    flags = fault == "flags"
    argv = ["advise", _csv(ws, fault == "csv"), *_profile(ws, fault == "profile")]
    if ws.chance(0.4 if flags else 0.2):
        argv += ["--kernel", ws.choice(("(", "[a-", "nope", "^$", "\\") if flags else
                                       ("transpose", "copy", "bfs|reduce", ".*", ""))]
    if ws.chance(0.4 if flags else 0.2):
        argv += ["--span", ws.choice(("0", "-1", "nan", "inf", "-inf", "x", "", "1e308",
                                      "5e-324") if flags else ("1e-3", "0.5", "1e-9"))]
    if flags and ws.chance(0.1):
        argv += ["--param", "n=4096"]
    if ws.chance(0.2):
        argv += ["--loopy"]
    if ws.chance(0.1):
        argv += ["--figure", str(ws.fresh(".png")) if budget.take("figures") else
                 ws.choice((str(ws.root / "folder"), str(ws.root / "a file" / "inside.png"),
                            ws.special(".png"), ws.bad_path(".png")))]
    if ws.chance(0.4):
        argv += ["--json"]
    return argv
