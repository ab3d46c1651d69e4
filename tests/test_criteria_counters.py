"""Kernelcast's counts against Nsight Compute's counters, without a GPU
(kernelcast.evaluation.criteria_counters and its command line, benchmarks/
criteria_counters.py): the plan covers
every kernel of the measurement, test and validation suites once, at the largest size the
H100 CUDA campaign measured; the sector rule on hand-worked warps; the comparison's
arithmetic on a handmade counters document; matching ncu rows to launches; and ``run``
refusing in one line where cupy is missing."""

import importlib.util
import json
import math
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from kernelcast.evaluation import criteria_counters
from kernelcast.evaluation.criteria_counters import (
    METRICS,
    QUANTITIES,
    agreement,
    case_of,
    load_document,
    match,
    pairs,
    plan_cases,
    sectors_per_warp,
    unknown_metrics,
    write_document,
)
from kernelcast.frontends.profiler import read_ncu_csv
from kernelcast.suites.paper import MEASUREMENT, TEST
from kernelcast.suites.suite import GROUP_SETS
from kernelcast.suites.validation import VALIDATION

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "criteria_counters.py"
STORE = ROOT / "data" / "h100" / "cuda.sqlite"


@pytest.fixture(scope="module")
def plan():
    return plan_cases(STORE)


def _script(*args):
    """The command line's run with *args*: (exit status, stdout)."""
    done = subprocess.run([sys.executable, str(SCRIPT), *map(str, args)],
                          capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout


# {{{ the plan

def _kernels_by_hand(suite) -> list[str]:
    """Every kernel of *suite*, named as Case.kernel_name does, from the class fields."""
    names = []
    for kclass in suite.classes:
        groups = kclass.group_sizes or GROUP_SETS[kclass.group_set]
        for dtype in kclass.dtypes or (None,):
            for variant in kclass.variants:
                for gx, gy in groups:
                    names.append(kclass.name + (f"[{variant}]" if variant else "")
                                 + (f"/{dtype}" if dtype else "") + f"/g{gx}x{gy}")
    return names


def _store_rows():
    with sqlite3.connect(f"file:{STORE}?mode=ro", uri=True) as db:
        return db.execute("SELECT suite, case_name, params, t FROM measurements WHERE "
                          "status IN ('ok', 'unstable') AND suite IN "
                          "('measurement', 'test', 'validation')").fetchall()


def test_plan_has_every_kernel_of_the_three_suites_once(plan):
    expected = [(s.name, k) for s in (MEASUREMENT, TEST, VALIDATION)
                for k in _kernels_by_hand(s)]
    got = [(e["suite"], e["kernel"]) for e in plan]
    assert len(got) == len(set(got)) == len(expected) == 142
    assert sorted(got) == sorted(expected)
    assert [e["index"] for e in plan] == list(range(len(plan)))
    # the store measured exactly these kernels
    assert {(s, n.rsplit("/", 1)[0]) for s, n, _, _ in _store_rows()} == set(expected)


def test_plan_takes_the_largest_sizes_the_campaign_measured(plan):
    largest = {}
    for suite, name, params, t in _store_rows():
        params = json.loads(params)
        key = (math.prod(params.values()), t)
        kernel = (suite, name.rsplit("/", 1)[0])
        if kernel not in largest or key > largest[kernel][0]:
            largest[kernel] = (key, params)
    for entry in plan:
        assert entry["source"] == "store"
        assert entry["params"] == largest[(entry["suite"], entry["kernel"])][1]
    by_kernel = {e["kernel"]: e["params"] for e in plan}
    assert by_kernel["skinny_matmul/float32/g16x16"] == {"n": 8192, "l": 8192, "m": 65536}
    assert by_kernel["rotation_f64/float64/g256x1"] == {"n": 2 ** 25}
    assert by_kernel["arithmetic[add]/float32/g16x16"] == {"n": 1024, "k": 728}


def test_plan_entries_rebuild_their_cases(plan):
    for entry in plan:
        case = case_of(entry)
        assert case.kernel_name == entry["kernel"] and case.params == entry["params"]


def test_plan_verb_prints_the_count_and_writes_json(tmp_path):
    code, out = _script("plan", "--json", tmp_path / "plan.json")
    assert code == 0
    out = out.splitlines()
    assert out[0].startswith("142 cases (measurement 129, test 4, validation 9")
    assert len(out) == 143
    assert len(json.loads((tmp_path / "plan.json").read_text())) == 142


def test_run_says_in_one_line_that_it_needs_cupy(tmp_path, plan):
    pytest.importorskip("numpy")
    if importlib.util.find_spec("cupy") is not None:
        pytest.skip("cupy is installed here")
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan[:2]))
    done = subprocess.run([sys.executable, str(SCRIPT), "run", str(path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "cupy" in lines[0]

# }}}


# {{{ the sector rule, worked by hand

@pytest.mark.parametrize("bits, cls, group, sectors", [
    (32, "s1", (256, 1), 4),     # 32 × 4 bytes = 128 bytes
    (64, "s1", (256, 1), 8),
    (128, "s1", (256, 1), 16),
    (32, "s0", (256, 1), 1),     # one address
    (32, "1of2", (256, 1), 8),   # 32 × 2 × 4 = 256 bytes, whatever the utilization
    (32, "2of2", (256, 1), 8),
    (32, "3of3", (256, 1), 12),
    (32, "1of4", (256, 1), 16),
    (64, "4of4", (256, 1), 32),  # 32 × 4 × 8 = 1024 bytes: one sector per work-item
    (128, "2of2", (256, 1), 32),
    (32, "4ofmore", (256, 1), 32),
    (32, "irregular", (256, 1), 32),
    (32, "s1", (16, 16), 4),     # two runs of 16: 64 bytes, 2 sectors each
    (64, "s1", (16, 16), 8),
    (32, "s0", (16, 16), 2),     # one address per run
    (32, "s1", (32, 8), 4),
    (32, "s1", (24, 16), 4),     # warps split 24+8, 16+16, 8+24: 3+1, 2+2, 1+3
    (32, "s0", (24, 16), 2),
    (32, "s1", (8, 4), 4),       # four runs of 8: one sector each
    (32, "s1", (8, 1), 4),       # a partial warp of 8: 1 sector per 8 work-items
    (32, "4ofmore", (16, 16), 32),
])
def test_sectors_per_warp(bits, cls, group, sectors):
    assert sectors_per_warp(bits, cls, group) == sectors


def test_sectors_per_warp_refuses_unknown_classes():
    with pytest.raises(ValueError):
        sectors_per_warp(16, "s1")
    with pytest.raises(ValueError):
        sectors_per_warp(32, "5of5")

# }}}


# {{{ the comparison, on a handmade document

def _thread(op):
    return f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum"


_ZERO = dict.fromkeys(METRICS, 0)

DOCUMENT = {"cases": [
    {  # everything agrees: 320 stride-1 32-bit loads, FMAs only, 10 bank-conflict passes
        "suite": "s", "kernel": "a", "group": [256, 1],
        "counts": {"add_f32": 100, "mul_f32": 100, "load_global_32_s1": 320,
                   "load_local_32": 64, "local_conflicts": 31 * 32 * 10,
                   "bytes_read": 1280, "bytes_written": 10 ** 8},
        "counters": {**_ZERO, _thread("ffma"): 100,
                     "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio": 32.0,
                     "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 40,
                     "smsp__sass_inst_executed_op_global_ld.sum": 10,
                     "smsp__sass_inst_executed_op_shared_ld.sum": 2,
                     "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": 2 + 310,
                     "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": 300,
                     "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": 10,
                     "dram__bytes_read.sum": 1280, "dram__bytes_write.sum": 5 * 10 ** 7},
    },
    {  # twice the float operations of the counts; a DRAM read below the floor
        "suite": "s", "kernel": "b", "group": [16, 16],
        "counts": {"add_f32": 100, "mul_f32": 50, "bytes_written": 10 ** 8},
        "counters": {**_ZERO, _thread("fadd"): 150, _thread("fmul"): 50, _thread("ffma"): 50,
                     "dram__bytes_read.sum": 1000, "dram__bytes_write.sum": 5 * 10 ** 7},
    },
    {  # no f32 operations counted, some executed; float64 lacks a metric
        "suite": "s", "kernel": "c", "group": [256, 1],
        "counts": {"add_f64": 10, "load_global_64_s0": 64},
        "counters": {**{k: v for k, v in _ZERO.items() if k != _thread("dfma")},
                     _thread("fadd"): 10,
                     "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 2,
                     "smsp__sass_inst_executed_op_global_ld.sum": 2,
                     "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio": "n/a"},
    },
    {"suite": "s", "kernel": "not profiled", "group": [256, 1], "counts": {"add_f32": 1}},
]}


def _rows():
    return {row["quantity"]: row for row in agreement(DOCUMENT)}


def test_agreement_of_float_operations():
    flops = _rows()["flops_f32"]
    assert flops["cases"] == 2  # a: 200/200, b: (150 + 50 + 2·50)/150 = 2
    assert flops["within_10pct"] == 0.5 and flops["within_2x"] == 1.0
    assert flops["median_ratio"] == pytest.approx(1.5)
    assert flops["counter_only"] == 1  # c
    assert flops["reason"].startswith("counters above: division")
    add = _rows()["add_f32"]  # a: 100/100; b: (150 + 50)/100
    assert add["cases"] == 2 and add["median_ratio"] == pytest.approx(1.5)
    assert _rows()["flops_f64"]["cases"] == 0  # c lacks dfma
    assert _rows()["flops_f64"]["median_ratio"] is None


def test_agreement_of_global_and_local_accesses():
    rows = _rows()
    for name in ("global_load_bytes", "global_load_sectors", "global_load_instructions",
                 "local_conflicts", "local_extra_wavefronts"):
        assert rows[name]["median_ratio"] == pytest.approx(1.0), name
        assert rows[name]["reason"] == ""
    assert rows["global_load_bytes"]["cases"] == 1  # c's ratio is no number
    assert rows["global_load_sectors"]["cases"] == 2  # c: 64 uniform loads, 2 sectors
    compared, _ = pairs(DOCUMENT, _quantity("global_load_sectors"))
    assert {label: (p, m) for label, p, m in compared}["s:c"] == (2.0, 2)
    assert rows["local_loads"]["median_ratio"] == 1.0  # 64 accesses, 2 warp instructions
    assert rows["global_store_bytes"]["cases"] == 0


def test_agreement_of_dram_bytes():
    rows = _rows()
    write = rows["dram_write"]
    assert write["cases"] == 2 and write["median_ratio"] == 0.5
    assert write["within_2x"] == 1.0 and write["within_10pct"] == 0.0
    assert write["reason"].startswith("counters below: written data still in")
    assert rows["dram_read"]["cases"] == 1 and rows["dram_read"]["counter_only"] == 0


def _quantity(name):
    return next(q for q in QUANTITIES if q.name == name)


def test_quantities_use_only_the_listed_metrics():
    """Every metric a quantity reads is one that measure asks ncu for."""
    seen = {}

    class Recorder(dict):
        def get(self, key, default=None):
            seen[key] = True
            return 1.0

    for q in QUANTITIES:
        q.measure(Recorder())
    assert set(seen) <= set(METRICS)
    assert len(set(METRICS)) == len(METRICS)

# }}}


# {{{ ncu rows to launches; the document written

_HEADER = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context",
           "Stream", "Block Size", "Grid Size", "Device", "CC", "launch__grid_size",
           "dram__bytes_read.sum")
CSV = "\n".join([
    "==PROF== Connected to process 1 (/usr/bin/python3)",
    '==PROF== Profiling "matmul_tiled": 0%....50%....100% - 9 passes',
    ",".join(f'"{name}"' for name in _HEADER),
    ",".join(['""'] * 12 + ['"byte"']),
    '"0","1","python3","h","matmul_tiled","1","7","(16, 16, 1)","(4, 4, 1)","0","9.0","16","1,024"',
    '"1","1","python3","h","matmul_tiled","1","7","(16, 16, 1)","(8, 8, 1)","0","9.0","64","4,096"',
    '"2","1","python3","h","scale_add_s1","1","7","(256, 1, 1)","(8, 1, 1)","0","9.0","8","2,048"',
    "==PROF== Disconnected from process 1", ""])


def test_match_rows_to_logged_launches():
    launches = read_ncu_csv(CSV)
    logged = [{"index": 3, "function": "matmul_tiled", "grid": [4, 4]},
              {"index": 4, "function": "matmul_tiled", "grid": [2, 2]},  # no such row
              {"index": 5, "function": "matmul_tiled", "grid": [8, 8]},
              {"index": 6, "function": "scale_add_s1", "grid": [8]}]
    matched = match(logged, launches)
    assert sorted(matched) == [3, 5, 6]
    assert matched[5].metrics["dram__bytes_read.sum"] == 4096.0
    assert matched[6].kernel == "scale_add_s1"


def test_large_documents_are_xz_compressed(tmp_path, monkeypatch):
    monkeypatch.setattr(criteria_counters, "MAX_JSON_BYTES", 100)
    path = write_document(tmp_path, DOCUMENT)
    assert path.name == "counters.json.xz" and not (tmp_path / "counters.json").exists()
    assert load_document(path) == json.loads(json.dumps(DOCUMENT))
    monkeypatch.setattr(criteria_counters, "MAX_JSON_BYTES", 10 ** 7)
    path = write_document(tmp_path, DOCUMENT)
    assert path.name == "counters.json" and not (tmp_path / "counters.json.xz").exists()


def test_compare_prints_a_row_per_quantity(tmp_path):
    path = tmp_path / "counters.json"
    path.write_text(json.dumps(DOCUMENT))
    code, out = _script("compare", path, "--worst", "1")
    assert code == 0
    for q in QUANTITIES:
        assert q.name in out
    assert "s:b" in out  # the furthest-off flops case

# }}}


def test_unknown_metrics_come_from_ncu_error_lines():
    metrics = ["dram__bytes_read.sum", "sm__inst_executed_pipe_xu.sum", "launch__grid_size"]
    text = ("==PROF== Connected\n==WARNING== dram__bytes_read.sum is slow\n"
            "==ERROR== Failed to find metric sm__inst_executed_pipe_xu\n")
    assert unknown_metrics(text, metrics) == ["sm__inst_executed_pipe_xu.sum"]
    assert unknown_metrics("==ERROR== " + ",".join(metrics), metrics) == []
    assert unknown_metrics("no errors", metrics) == []


# ------------------------------------------------------------------ the H100's counters

@pytest.fixture(scope="module")
def measured():
    """data/h100/criteria/counters.json.xz: the counters of every case on the H100."""
    import lzma

    path = ROOT / "data" / "h100" / "criteria" / "counters.json.xz"
    return json.loads(lzma.decompress(path.read_bytes()))


def _by_kernel(doc):
    return {c["kernel"]: c for c in doc["cases"]}


def test_every_case_was_profiled_with_every_metric(measured, plan):
    assert measured["device"] == "NVIDIA H100 80GB HBM3" and not measured["dropped_metrics"]
    assert len(measured["cases"]) == len(plan)
    for case in measured["cases"]:
        assert case["status"] == "ok", case["kernel"]
        assert set(METRICS) <= set(case["counters"]), case["kernel"]


def test_global_stores_are_counted_as_the_hardware_counts_them(measured):
    rows = {r["quantity"]: r for r in agreement(measured)}
    for quantity in ("global_store_bytes", "global_store_instructions"):
        assert rows[quantity]["cases"] >= 130
        assert rows[quantity]["within_10pct"] == 1.0, quantity


def test_the_tiled_matmul_flops_equal_the_fma_counters(measured):
    # a += b * c becomes one FFMA (DFMA): one add and one multiplication per work-item
    for kernel, case in _by_kernel(measured).items():
        if not kernel.startswith("matmul_tiled"):
            continue
        x = "f" if case["dtype"] == "float32" else "d"
        p = "f32" if x == "f" else "f64"
        fma = case["counters"][f"smsp__sass_thread_inst_executed_op_{x}fma_pred_on.sum"]
        assert fma == pytest.approx(case["counts"][f"add_{p}"], rel=1e-3), kernel
        assert fma == pytest.approx(case["counts"][f"mul_{p}"], rel=1e-3), kernel


def test_a_warp_of_two_rows_shares_the_strided_stores_sectors(measured):
    # transpose[write_strided] in 16x16 groups: lanes along local axis 0 store a column
    # (stride n), so each lane's float is in a sector of its own; a warp holds two rows,
    # whose lanes store neighbouring elements: 16 sectors per warp store, where the
    # stride class (local axis 0 only) predicts 32.
    case = _by_kernel(measured)["transpose[write_strided]/float32/g16x16"]
    c = case["counters"]
    per_store = (c["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"]
                 / c["smsp__sass_inst_executed_op_global_st.sum"])
    assert per_store == pytest.approx(16, rel=0.01)
    assert sectors_per_warp(32, "1ofmore", (16, 16)) == 32


def _conflicts_per_shared_instruction(case) -> float:
    c = case["counters"]
    conflicts = (c["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"]
                 + c["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"])
    instructions = (c["smsp__sass_inst_executed_op_shared_ld.sum"]
                    + c["smsp__sass_inst_executed_op_shared_st.sum"])
    return conflicts / instructions


def test_the_float64_tiled_matmul_has_conflicts_the_counts_miss(measured):
    """A 24-wide group's float64 tiles conflict on the H100 (a warp's lanes span two rows
    of the tile), tenfold more than the same kernel's 16- and 32-wide groups and its
    float32 twin at every shape; kernelcast's counts, computed here for the case, see
    the shared accesses but no conflict."""
    import numpy as np

    from kernelcast.models.extended.features import extend
    from kernelcast.properties import extract_properties
    from kernelcast.suites.kernels import matmul_tiled

    cases = _by_kernel(measured)
    for shape in ("square", "l_half", "m_half", "n_half"):
        wide = _conflicts_per_shared_instruction(
            cases[f"matmul_tiled[{shape}]/float64/g24x16"])
        for other in ("float64/g16x16", "float64/g32x16", "float32/g24x16"):
            other_rate = _conflicts_per_shared_instruction(
                cases[f"matmul_tiled[{shape}]/{other}"])
            assert wide > 10 * other_rate, (shape, other, wide, other_rate)
    entry = cases["matmul_tiled[square]/float64/g24x16"]
    assert entry["group"] == [24, 16]
    assert entry["params"] == {"n": 4096, "m": 4096, "l": 4096}
    knl = matmul_tiled((24, 16), np.float64)
    values, extent = extract_properties(knl).evaluate_with_extent(entry["params"])
    counts = extend(values, extent)
    # by hand, n = m = l = 4096 in groups of 16 rows x 24 columns: every work-item reads
    # a's and b's tiles once per k: 2 n l m loads. The fetches store, per group, a's 16
    # rows x every k (16 m) and b's every k x the group's columns; 256 row groups, 171
    # column groups (170 of 24 columns, one of 16): 256 x 171 x 16 m + 256 x m l
    assert counts["load_local_64"] == 2 * 4096 ** 3
    assert counts["store_local_64"] == 256 * 171 * 16 * 4096 + 256 * 4096 ** 2
    assert counts.get("local_conflicts", 0) == 0
