"""The ``counters`` verb, run in-process: the predicted Nsight Compute counters of one
launch as a table and as JSON, checked against sectors per request counted by hand, and
side by side with ncu's raw CSV (real H100 output from data/h100/counters/ncu.tar.xz, and
small CSVs written here in ncu's raw format); every refusal is one line."""

import csv
import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from kernelcast.cli import main
from kernelcast.errors import MissingDependencyError

ROOT = Path(__file__).resolve().parent.parent
NCU_ARCHIVE = ROOT / "data" / "h100" / "counters" / "ncu.tar.xz"
H100 = "NVIDIA H100 80GB HBM3"

KERNELS = '''
import loopy as lp
import numpy as np


def copy():
    """out[i] = a[i], 32 float32 lanes per group along l.0."""
    knl = lp.make_kernel("{[i]: 0<=i<n}", "out[i] = a[i]", name="copy",
                         lang_version=(2018, 2), assumptions="n >= 1")
    knl = lp.add_dtypes(knl, {"a": np.float32, "out": np.float32})
    return lp.split_iname(knl, "i", 32, outer_tag="g.0", inner_tag="l.0")


def column():
    """out[i, j] = a[j, i]: lanes along j read down a column of a."""
    knl = lp.make_kernel("{[i, j]: 0<=i,j<n}", "out[i, j] = a[j, i]", name="column",
                         lang_version=(2018, 2), assumptions="n >= 1")
    knl = lp.add_dtypes(knl, {"a": np.float32, "out": np.float32})
    knl = lp.split_iname(knl, "j", 32, outer_tag="g.0", inner_tag="l.0")
    return lp.tag_inames(knl, {"i": "g.1"})


def stencil_wide():
    """The tuning family stencil2d at j.group=32, i.group=4 (profiled on the H100)."""
    from kernelcast.tune.families import family
    from kernelcast.tune.space import apply

    fam = family("stencil2d")
    variant = {"j.group": 32, "j.per_item": 1, "i.group": 4, "i.per_item": 1}
    return apply(fam.build(), variant, fam.space)
'''

SECTORS = {"ld": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
           "st": "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"}
REQUESTS = {"ld": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
            "st": "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"}
DESCRIPTION = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context",
               "Stream", "Block Size", "Grid Size", "Device", "CC")


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    path = tmp_path_factory.mktemp("kernels") / "kernels.py"
    path.write_text(KERNELS)
    return path


@pytest.fixture(scope="module")
def compiler(tmp_path_factory):
    """NVIDIA's compiler from PyPI, with a compile cache of this module's own; skipped
    without it, failed under CI (which installs it)."""
    from kernelcast.facts.compiler import find_tools

    try:
        find_tools()
    except MissingDependencyError:
        if os.environ.get("CI"):
            pytest.fail("CI installs NVIDIA's compiler and disassembler (the test extra); "
                        "they are missing")
        pytest.skip("NVIDIA's compiler is not installed (pip install -e '.[test]')")
    saved = os.environ.get("KERNELCAST_CACHE_DIR")
    os.environ["KERNELCAST_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    yield
    if saved is None:
        os.environ.pop("KERNELCAST_CACHE_DIR", None)
    else:
        os.environ["KERNELCAST_CACHE_DIR"] = saved


def run(capsys, *argv):
    code = main(["counters", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def site_rows(out: str) -> list[list[str]]:
    """The rows of the access-site table: site, instruction, array, space, op, bytes,
    requests, per request, total, how."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("site "))
    rows = []
    for line in lines[start + 2:]:
        if not line.strip():
            break
        rows.append(line.split())
    return rows


def counter_rows(out: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split()[1:] for line in out.splitlines()
            if line.startswith(("l1tex__", "lts__", "dram__", "launch__", "sm__", "smsp__"))}


def ncu_csv(path: Path, launches, units=None) -> Path:
    """A CSV in the shape of ``ncu --csv --page raw``: a line of ncu's own, the header,
    the units row, a row per launch (kernel, grid, block, device name, metrics)."""
    names = sorted({m for x in launches for m in x["metrics"]})
    rows = [[*DESCRIPTION, "device__attribute_display_name", *names],
            [""] * len(DESCRIPTION) + [""] + [(units or {}).get(n, "sector") for n in names]]
    for i, x in enumerate(launches):
        rows.append([str(i), "1", "python3", "host", x["kernel"], "1", "7", x["block"],
                     x["grid"], "0", "9.0", x.get("device", H100),
                     *(f"{x['metrics'].get(n, ''):,}" if n in x["metrics"] else ""
                       for n in names)])
    text = io.StringIO()
    csv.writer(text, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    path.write_text("==PROF== Connected to process 1 (/usr/bin/python3)\n" + text.getvalue())
    return path


def copy_launch(grid="(128, 1, 1)", **changes):
    """ncu's row of copy at n=4096 as counted by hand: 128 warps, each load and store
    4 sectors (32 lanes x 4 bytes = 128 contiguous bytes)."""
    return {"kernel": "copy", "grid": grid, "block": "(32, 1, 1)",
            "metrics": {REQUESTS["ld"]: 128, SECTORS["ld"]: 512, REQUESTS["st"]: 128,
                        SECTORS["st"]: 512}} | changes


# {{{ the prediction, counted by hand

def test_table_of_a_copy_has_four_sectors_per_request(capsys, kernels):
    code, out, err = run(capsys, f"{kernels}:copy", "--param", "n=4096", "--hardware",
                         "h100", "--no-compiler")
    assert code == 0, err
    assert out.startswith(f"copy at n=4096 on the {H100}: grid 128 groups, block 32 threads")
    # 4096 lanes in warps of 32: 128 requests; 128 contiguous bytes: 4 sectors each
    rows = counter_rows(out)
    for name in (*REQUESTS.values(), *SECTORS.values()):
        assert rows[name] == (["128", "exact"] if "requests" in name else ["512", "exact"])
    assert rows["launch__grid_size"] == ["128", "exact"]
    assert rows["launch__registers_per_thread"] == ["–", "missing"]
    sites = site_rows(out)
    assert [r[2:] for r in sites] == [
        ["a", "global", "load", "4", "128", "4.00", "512", "exact"],
        ["out", "global", "store", "4", "128", "4.00", "512", "exact"]]
    assert "compiler: not run" in out and "occupancy: not predicted" in out
    assert "kernelcast: warning" not in err  # --no-compiler asked for it: no warning
    assert max(len(line) for line in out.splitlines()) <= 100


def test_json_of_a_column_read_has_32_sectors_per_request(capsys, kernels):
    code, out, _ = run(capsys, f"{kernels}:column", "--param", "n=256", "--hardware",
                       "h100", "--no-compiler", "--json")
    assert code == 0
    doc = json.loads(out)  # one object, nothing else on stdout
    assert doc["kernel"] == "column" and doc["grid"] == [8, 256] and doc["block"] == [32]
    # 256 x 256 lanes in warps of 32: 2048 requests per access; the 32 lanes of a load
    # read a[j, i] 1 KB apart (32 sectors), of a store out[i, j] 128 contiguous bytes (4)
    assert doc["counters"][REQUESTS["ld"]] == 2048 and doc["counters"][SECTORS["ld"]] == 65536
    assert doc["counters"][REQUESTS["st"]] == 2048 and doc["counters"][SECTORS["st"]] == 8192
    load, store = doc["sites"]
    assert (load["array"], load["direction"], load["per_request"], load["sectors"]) == (
        "a", "load", 32, 65536)
    assert (store["array"], store["direction"], store["per_request"], store["sectors"]) == (
        "out", "store", 4, 8192)
    assert "launch__registers_per_thread" in doc["missing"]


def test_with_the_compiler_registers_and_occupancy_print(capsys, kernels, compiler):
    code, out, err = run(capsys, f"{kernels}:copy", "--param", "n=4096", "--hardware",
                         "h100")
    assert code == 0 and "warning" not in err
    rows = counter_rows(out)
    # ptxas's registers, never below the 16 ncu reports on the H100
    assert int(rows["launch__registers_per_thread"][0]) >= 16
    assert rows["launch__registers_per_thread"][1] == "compiler"
    # one warp per group: the H100's 32 blocks per SM allow 32 of its 64 warps (50%)
    assert rows["launch__occupancy_limit_blocks"] == ["32", "compiler"]
    assert rows["sm__maximum_warps_per_active_cycle_pct"] == ["50", "compiler"]
    assert rows["smsp__sass_inst_executed_op_global_ld.sum"] == ["128", "compiler"]
    assert "occupancy: 32 groups per SM, limited by blocks" in out
    compiler_line = next(line for line in out.splitlines() if line.startswith("compiler:"))
    assert "registers per thread" in compiler_line and "ptxas" in out
    assert "caches: cold at the launch's start" in out
    code, out, _ = run(capsys, f"{kernels}:copy", "--param", "n=4096", "--hardware",
                       "h100", "--json")
    doc = json.loads(out)
    assert doc["counters"]["launch__block_size"] == 32 and doc["missing"] == {}
    assert doc["compiler"]["registers"] >= 1


def test_without_the_compiler_memory_counters_print_and_a_warning_says_why(
        capsys, kernels, monkeypatch):
    from kernelcast.facts import compiler
    from kernelcast.facts.counters import forget

    def absent():
        raise MissingDependencyError("NVIDIA's compiler is not installed (zz-absent)")

    monkeypatch.setattr(compiler, "find_tools", absent)
    forget()  # the launch was predicted with the compiler above
    code, out, err = run(capsys, f"{kernels}:copy", "--param", "n=4096", "--hardware",
                         "h100")
    assert code == 0
    assert [line for line in err.splitlines() if line] == [
        ("kernelcast: warning: the compiler's counters are not predicted: NVIDIA's "
         "compiler is not installed (zz-absent)")]
    rows = counter_rows(out)
    assert rows[SECTORS["ld"]] == ["512", "exact"]
    assert rows["smsp__inst_executed.sum"] == ["–", "missing"]
    assert "not predicted (NVIDIA's compiler is not installed (zz-absent)):" in out

# }}}


# {{{ against a profile

def _real_row(kernel: str, grid: str, block: str) -> tuple[str, list, list, list]:
    """(ncu's lines before the table, header, units, row) of a launch in the H100's
    counters archive."""
    with tarfile.open(NCU_ARCHIVE) as tar:
        for member in tar.getmembers():
            if not member.name.endswith(".csv"):
                continue
            text = tar.extractfile(member).read().decode()
            head, _, table = text.partition('"ID",')
            rows = list(csv.reader(io.StringIO('"ID",' + table)))
            k, g, b = (rows[0].index(c) for c in ("Kernel Name", "Grid Size", "Block Size"))
            for row in rows[2:]:
                if (row[k], row[g], row[b]) == (kernel, grid, block):
                    return head, rows[0], rows[1], row
    pytest.fail(f"{NCU_ARCHIVE} has no launch of {kernel} {grid} {block} (re-measured?)")


def test_compare_with_the_h100s_profile_of_the_same_launch(capsys, kernels, tmp_path):
    head, header, units, row = _real_row("stencil2d", "(256, 2048, 1)", "(32, 4, 1)")
    text = io.StringIO()
    csv.writer(text, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(
        [header, units, row])
    profile = tmp_path / "stencil.csv"
    profile.write_text(head + text.getvalue())
    measured = dict(zip(header, row))
    code, out, err = run(capsys, f"{kernels}:stencil_wide", "--param", "n=8192",
                         "--hardware", "h100", "--no-compiler", "--compare", profile)
    assert code == 0, err
    rows = counter_rows(out)
    for name in (*REQUESTS.values(), *SECTORS.values(), "launch__grid_size",
                 "launch__block_size"):  # exact counts: equal to ncu's
        predicted, value, ratio, how = rows[name]
        assert predicted == value == measured[name] and ratio == "1.00" and how == "exact"
    # the two loads of u[i, j -/+ 1] straddle a sector: 5 sectors per request, not 4
    per_request = sorted(r[7] for r in site_rows(out))
    assert per_request == ["4.00"] * 4 + ["5.00"] * 2
    assert f"measured: ncu's launch {measured['ID']} (stencil2d)" in out
    assert "within ±20% of the profile:" in out

    code, out, _ = run(capsys, f"{kernels}:stencil_wide", "--param", "n=8192", "--hardware",
                       "h100", "--no-compiler", "--compare", profile, "--json")
    doc = json.loads(out)
    assert doc["measured"][SECTORS["ld"]] == int(measured[SECTORS["ld"]].replace(",", ""))
    assert doc["ratio"][SECTORS["ld"]] == 1.0
    assert doc["profile"] == {"path": str(profile), "launch": int(measured["ID"]),
                              "kernel": "stencil2d", "device": H100}

    # the same profile judged as the H200's: a warning naming both, the comparison stands
    code, out, err = run(capsys, f"{kernels}:stencil_wide", "--param", "n=8192",
                         "--hardware", "h200", "--no-compiler", "--compare", profile)
    assert code == 0
    warning = [line for line in err.splitlines() if "warning" in line]
    assert len(warning) == 1 and H100 in warning[0] and "NVIDIA H200" in warning[0]


def test_compare_takes_the_first_launch_of_the_same_shape_and_says_so(capsys, kernels,
                                                                      tmp_path):
    profile = ncu_csv(tmp_path / "p.csv", [
        {"kernel": "other", "grid": "(1, 1, 1)", "block": "(1, 1, 1)", "metrics": {}},
        copy_launch(grid="(64, 1, 1)"), copy_launch(),
        copy_launch(metrics={SECTORS["ld"]: 1024})])
    code, out, err = run(capsys, f"{kernels}:copy", "--param", "n=4096", "--hardware",
                         "h100", "--no-compiler", "--compare", profile)
    assert code == 0, err
    assert ("measured: ncu's launch 2 (copy); " in out and "3 launches of copy, 2 of this "
            "grid and block; comparing the first" in out.replace("\n  ", " "))
    rows = counter_rows(out)
    assert rows[SECTORS["ld"]] == ["512", "512", "1.00", "exact"]
    # a counter the profile lacks: "–" measured, no ratio
    assert rows["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] == [
        "0", "–", "–", "exact"]
    code, out, err = run(capsys, f"{kernels}:copy", "--param", "n=4096", "--hardware",
                         "h100", "--no-compiler", "--compare", profile, "--json")
    assert json.loads(out)["profile"]["launch"] == 2
    assert "kernelcast: note:" in err and "comparing the first" in err


@pytest.mark.parametrize(("launches", "units", "message"), [
    ([copy_launch(grid="(256, 1, 1)")], None,
     "the profile is of another launch (grid 256 vs 128 predicted, block 32 vs 32)"),
    ([copy_launch(block="(64, 1, 1)")], None, "the profile is of another launch"),
    ([copy_launch(kernel="scale"), copy_launch(kernel="copy_f64")], None,
     "no launch of copy; the profile has launches of scale, copy_f64"),
    ([copy_launch()], {SECTORS["ld"]: "Ksector"},
     "is in Ksector, a scaled unit; profile with ncu --print-units base"),
    ([], None, "the profile holds no launch"),
])
def test_compare_refuses_a_profile_of_another_launch(capsys, kernels, tmp_path, launches,
                                                     units, message):
    profile = ncu_csv(tmp_path / "p.csv", launches, units)
    code, _, err = run(capsys, f"{kernels}:copy", "--param", "n=4096", "--hardware", "h100",
                       "--no-compiler", "--compare", profile)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("kernelcast: error: ")
    assert message in err

# }}}


# {{{ refusals and help

@pytest.mark.parametrize(("args", "message"), [
    (["--param", "n=4096"], "counters needs --hardware h100, h200 or a JSON file"),
    (["--param", "n=x", "--hardware", "h100"], "--param n: not a number"),
    (["--param", "n=4096", "m=3", "--hardware", "h100"], "has no parameter m"),
    (["--param", f"n={2**40}", "--hardware", "h100"], "does not fit the kernel's int32"),
    (["--param", "n=0", "--hardware", "h100"], "assumptions"),
    (["--hardware", "h100"], "no value for n"),
    (["--param", "n=4096", "--hardware", "gtx9999"], "no hardware description 'gtx9999'"),
    (["--param", "n=4096", "--hardware", "fx5600"], "lacks l2_cache_bytes"),
    (["--param", "n=4096", "--hardware", "h100", "--stat", "rowlen=2"],
     "unknown statistic 'rowlen'"),
    (["--param", "n=4096", "--hardware", "h100", "--compare", "zz-missing.csv"],
     "zz-missing.csv: no such file"),
])
def test_usage_errors_are_one_line_and_exit_2(capsys, kernels, args, message):
    code, out, err = run(capsys, f"{kernels}:copy", *args, "--no-compiler")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("kernelcast: error: ")
    assert message in err


def test_a_missing_kernel_file_exits_2(capsys, tmp_path):
    code, _, err = run(capsys, f"{tmp_path}/none.py:copy", "--hardware", "h100")
    assert code == 2 and "no such file" in err


def test_help_lists_every_flag_and_the_verb_is_listed(capsys):
    with pytest.raises(SystemExit) as done:
        main(["counters", "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    for flag in ("--param", "--hardware", "--stat", "--json", "--compare", "--no-compiler"):
        assert flag in text
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "counters" in capsys.readouterr().out

# }}}


def test_the_pages_python_example_runs_as_written():
    import doctest

    result = doctest.testfile(str(ROOT / "docs" / "counters.md"), module_relative=False)
    assert result.attempted >= 8 and result.failed == 0
