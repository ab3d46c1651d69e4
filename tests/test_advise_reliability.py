"""``kernelcast advise`` and the criteria model on damaged input: Nsight Compute CSVs of
the case studies (data/h100/criteria/ncu.tar.xz) with a value, an ID or a unit changed,
criteria profiles with a field out of its range, and figure paths that cannot be written.
Every refusal is one line naming the file or flag (exit 2); whatever is accepted prints
no NaN, no infinity and no negative time or speedup."""

import csv
import io
import json
import math
import os
import subprocess
import sys
import tarfile
import warnings
from pathlib import Path

import pytest

from kernelcast.cli import main
from kernelcast.errors import DeviceMismatchWarning, ProfileError, UsageError
from kernelcast.frontends.profiler import read_ncu_csv
from kernelcast.models.criteria.advice import as_json
from kernelcast.models.criteria.criteria import Application
from kernelcast.profile import load_profile

ROOT = Path(__file__).resolve().parent.parent
H100 = ROOT / "data/profiles/nvidia-h100-80gb-hbm3-cuda-criteria.json"
H200 = ROOT / "data/profiles/nvidia-h200-cuda-criteria.json"
with tarfile.open(ROOT / "data/h100/criteria/ncu.tar.xz") as _tar:
    NAIVE = _tar.extractfile("transpose-1-naive.csv").read().decode()  # 3 launches
    TILED = _tar.extractfile("transpose-2-tiled.csv").read().decode()  # shared memory

# what the criteria read of every launch (and the stall and arithmetic-pipe families)
METRICS = (
    "gpu__time_duration.sum", "device__attribute_warp_size", "launch__sm_count",
    "device__attribute_multiprocessor_count", "launch__grid_size", "launch__block_size",
    "launch__occupancy_limit_blocks", "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem", "launch__occupancy_limit_warps",
    "smsp__thread_inst_executed_pred_on_per_inst_executed.ratio",
    "sm__warps_active.avg.per_cycle_active", "sm__cycles_active.max",
    "sm__cycles_active.avg", "sm__cycles_elapsed.avg",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.max_rate",
    "lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sectors_srcunit_tex_op_write.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__maximum_warps_per_active_cycle_pct",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_elapsed",
    "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "lts__t_requests_srcunit_tex_op_read.sum", "dram__sectors_read.sum",
    "smsp__inst_executed.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
)


def _rows(text):
    body = [x for x in text.splitlines() if x.strip() and not x.startswith("==")]
    return list(csv.reader(io.StringIO("\n".join(body))))


def _damaged(tmp_path, text=NAIVE, units=None, **values) -> Path:
    """A copy of *text* with each column of *values* (a metric or a launch column) set in
    every launch, and each column of *units* given that unit."""
    rows = _rows(text)
    for column, value in values.items():
        i = rows[0].index(column)
        for row in rows[2:]:
            row[i] = value
    for column, unit in (units or {}).items():
        rows[1][rows[0].index(column)] = unit
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    path = tmp_path / f"damaged-{len(list(tmp_path.iterdir()))}.csv"
    path.write_text(out.getvalue())
    return path


def _profile(tmp_path, source=H100, edit=None, **params) -> Path:
    doc = json.loads(source.read_text())
    doc["params"].update(params)
    if edit:
        edit(doc["state"]["characterization"])
    path = tmp_path / f"profile-{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps(doc))
    return path


def _advise(capsys, *args):
    code = main(["advise", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def _refused(capsys, *args, says=()):
    """advise refuses in one line (exit 2) that says each of *says*; nothing on stdout."""
    code, out, err = _advise(capsys, *args)
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kernelcast: error: "), err
    for words in says:
        assert words in lines[0], lines[0]
    assert out == "" and "Traceback" not in err and "internal error" not in err
    return lines[0]


def _numbers(doc, where="$"):
    """Every number in a JSON document, with where it is."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _numbers(v, f"{where}.{k}")
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _numbers(v, f"{where}[{i}]")
    elif isinstance(doc, int | float) and not isinstance(doc, bool):
        yield where, doc


def _sound(doc):
    for where, value in _numbers(doc):
        assert math.isfinite(value) and value >= 0, (where, value)


# ------------------------------------------------------------------ times (finding 1)

@pytest.mark.parametrize("value", ["-5", "-0.5", "inf", "-inf", "nan", "0", "0.5", "1e308"])
def test_a_duration_that_is_negative_infinite_or_zero_is_refused(tmp_path, capsys, value):
    csv_path = _damaged(tmp_path, **{"gpu__time_duration.sum": value})
    _refused(capsys, csv_path, "--profile", H100, "--json",
             says=(str(csv_path), "gpu__time_duration.sum"))


def test_a_launch_gives_no_infinite_or_nan_metric_as_a_number(tmp_path):
    for value in ("inf", "nan"):
        path = _damaged(tmp_path, **{"gpu__time_duration.sum": value})
        launch = read_ncu_csv(path.read_text())[0]
        with pytest.raises(UsageError, match=f"'gpu__time_duration.sum' is {value}"):
            launch.value("gpu__time_duration.sum")


def test_a_duration_in_microseconds_is_read_as_microseconds(tmp_path, capsys):
    code, out, _ = _advise(capsys, _damaged(tmp_path), "--profile", H100, "--json")
    in_ns = json.loads(out)["launches"]
    seconds = [x["seconds"] for x in in_ns]
    rows = _rows(NAIVE)
    column = rows[0].index("gpu__time_duration.sum")
    assert rows[1][column] == "ns"
    micro = [f"{float(r[column].replace(',', '')) / 1000:g}" for r in rows[2:]]
    path = _damaged(tmp_path, units={"gpu__time_duration.sum": "usecond"})
    rows = _rows(path.read_text())
    for row, value in zip(rows[2:], micro, strict=True):
        row[column] = value
    out_csv = io.StringIO()
    csv.writer(out_csv, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    path.write_text(out_csv.getvalue())
    code, out, _ = _advise(capsys, path, "--profile", H100, "--json")
    assert code == 0
    assert [x["seconds"] for x in json.loads(out)["launches"]] == pytest.approx(seconds)
    _refused(capsys, _damaged(tmp_path, units={"gpu__time_duration.sum": "byte"}),
             "--profile", H100, says=("'byte', not a unit of time",))


@pytest.mark.parametrize("span", ["inf", "1e308", "0", "-1", "nan"])
def test_a_span_that_is_not_a_positive_finite_time_is_refused(capsys, tmp_path, span):
    _refused(capsys, _damaged(tmp_path), "--profile", H100, "--span", span,
             says=(f"--span {float(span)}", "positive time"))


# ------------------------------------------------------------------ CSVs (finding 2)

@pytest.mark.parametrize("value", ["1.5", "x", "-1", ""])
def test_a_launch_id_that_is_not_a_whole_number_is_refused(tmp_path, capsys, value):
    csv_path = _damaged(tmp_path, ID=value)
    _refused(capsys, csv_path, "--profile", H100, says=(str(csv_path), "row 3",
                                                         "launch ID"))


@pytest.mark.parametrize("metric, value", [
    ("device__attribute_warp_size", "0"), ("device__attribute_warp_size", "-1"),
    ("launch__block_size", "0"), ("launch__block_size", "-1"), ("launch__grid_size", "0"),
    ("launch__sm_count", "0"), ("launch__occupancy_limit_warps", "0"),
    ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "-3"),
    ("sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_elapsed", "-1"),
    ("smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", "-2"),
    ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "1e30"),
])
def test_a_size_below_one_or_a_count_out_of_range_is_refused(tmp_path, capsys, metric,
                                                             value):
    csv_path = _damaged(tmp_path, **{metric: value})
    _refused(capsys, csv_path, "--profile", H100, says=(str(csv_path), f"{metric} = "))


def test_a_field_longer_than_the_csv_modules_limit_is_refused(tmp_path, capsys):
    path = tmp_path / "long.csv"
    path.write_text(NAIVE.replace('"transpose_naive"', '"' + "k" * 140_000 + '"'))
    _refused(capsys, path, "--profile", H100, says=(str(path), "row 5", "field limit"))
    with pytest.raises(UsageError, match="cannot be read"):
        read_ncu_csv(path.read_text(), "long.csv")


def test_a_figure_in_a_format_matplotlib_cannot_write_is_refused(tmp_path, capsys):
    figure = tmp_path / "x.txt"
    _refused(capsys, _damaged(tmp_path), "--profile", H100, "--figure", figure,
             says=(f"--figure {figure}", "'.txt'", ".png"))
    assert not figure.exists()


# ------------------------------------------------------------------ profiles (finding 3)

def _zero_dram(c):
    c["functions"]["F_DRAMThr"]["y"] = [0.0] * len(c["functions"]["F_DRAMThr"]["y"])


@pytest.mark.parametrize("edit, params, says", [
    (_zero_dram, {}, "F_DRAMThr: the values y must be positive"),
    (None, {"saturation": "x"}, "params.saturation is a string ('x'), not a number above 0"),
    (None, {"saturation": -1}, "params.saturation is a number (-1), not a number above 0"),
    (None, {"saturation": 0}, "params.saturation is a number (0), not a number above 0"),
    (None, {"saturation": 2}, "params.saturation is a number (2), not a number above 0 and at most 1"),
    (None, {"saturation": float("nan")}, "params.saturation is a number (nan), not a number above 0"),
    (lambda c: c["latency_cycles"].update(l1=1e308), {}, "latency_cycles.l1"),
    (lambda c: c["latency_cycles"].update(dram=10 ** 400), {}, "is beyond 64 bits"),
    (lambda c: c["latency_cycles"].update(l2=0.5), {}, "latency_cycles.l2"),
    (lambda c: c.update(arith_per_sm_cycle=1e-300), {}, "arith_per_sm_cycle"),
    (lambda c: c["functions"]["F_SHMEM"]["x"].__setitem__(0, -1), {}, "F_SHMEM: the ratios"),
    (lambda c: c["functions"]["F_SHMEM"]["x"].__setitem__(-1, 2), {}, "F_SHMEM: the ratios"),
    (lambda c: c["functions"]["F_ARITHThr"]["y"].__setitem__(0, "1"), {},
     "functions.F_ARITHThr.y"),
    (lambda c: c["functions"]["F_SHMEM"].update(name="F"), {}, "functions.F_SHMEM.name"),
    (lambda c: c["functions"].update(F_SHMEM=3), {}, "functions.F_SHMEM is int"),
    (lambda c: c.update(device=5), {}, "device is int"),
])
def test_a_criteria_profile_field_out_of_range_is_refused(tmp_path, capsys, edit, params,
                                                          says):
    profile = _profile(tmp_path, edit=edit, **params)
    _refused(capsys, _damaged(tmp_path), "--profile", profile, says=(str(profile), says))
    with pytest.raises(ProfileError, match=str(profile)):
        load_profile(profile)


def test_a_saturation_of_one_is_accepted(tmp_path, capsys):
    code, out, _ = _advise(capsys, _damaged(tmp_path), "--profile",
                           _profile(tmp_path, saturation=1), "--json")
    assert code == 0 and json.loads(out)["potential_speedup"] > 1


# ------------------------------------------------------------------ devices (finding 4)

def test_another_gpus_profile_warns_and_says_so_in_the_output(tmp_path, capsys):
    csv_path = _damaged(tmp_path)
    code, out, err = _advise(capsys, csv_path, "--profile", H200)
    assert code == 0
    (warning,) = err.strip().splitlines()
    assert warning.startswith("kernelcast: warning: ")
    assert "NVIDIA H100 80GB HBM3" in warning and "NVIDIA H200" in warning
    assert ("note: device mismatch: profiled on the NVIDIA H100 80GB HBM3, judged with the "
            "characterization of the NVIDIA H200") in out
    code, out, err = _advise(capsys, csv_path, "--profile", H200, "--json")
    doc = json.loads(out)
    assert doc["device"] == "NVIDIA H200"
    assert "NVIDIA H100 80GB HBM3" in doc["device_mismatch"]
    # the GPU's own profile: no warning, no note
    code, out, err = _advise(capsys, csv_path, "--profile", H100, "--json")
    assert code == 0 and err == "" and json.loads(out)["device_mismatch"] is None
    launches = tuple(read_ncu_csv(NAIVE))
    with pytest.warns(DeviceMismatchWarning, match="NVIDIA H200"):
        load_profile(H200).assess(Application("x", launches))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_profile(H100).assess(Application("x", launches))


# ------------------------------------------------------------------ figures (finding 5)

def test_a_figure_without_a_suffix_prints_the_png_it_writes(tmp_path, capsys):
    figure = tmp_path / "fig"
    code, out, _ = _advise(capsys, _damaged(tmp_path), "--profile", H100, "--figure",
                           figure)
    assert code == 0
    assert out.rstrip().endswith(f"figure: {figure}.png")
    assert Path(f"{figure}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_figure_path_that_is_a_directory_is_refused(tmp_path, capsys):
    folder = tmp_path / "folder"
    folder.mkdir()
    _refused(capsys, _damaged(tmp_path), "--profile", H100, "--figure", folder,
             says=(str(folder), "is a directory"))
    assert not Path(f"{folder}.png").exists() and not any(folder.iterdir())


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_as_figure_or_csv_is_refused_without_waiting(tmp_path):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    csv_path = _damaged(tmp_path)
    for args in ([csv_path, "--figure", fifo], [fifo]):
        run = subprocess.run([sys.executable, "-m", "kernelcast", "advise", *map(str, args),
                              "--profile", str(H100)], capture_output=True, text=True,
                             timeout=60)
        assert run.returncode == 2
        assert run.stderr.strip() == (f"kernelcast: error: {fifo} is a FIFO (named pipe), "
                                      + ("not a figure file (--figure)" if len(args) > 1
                                         else "not a CSV of Nsight Compute"))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_profiles_that_cannot_be_read_are_passed_over_when_finding_one(tmp_path):
    folder = tmp_path / "kernelcast-data"
    folder.mkdir()
    os.mkfifo(folder / "a-criteria.json")
    (folder / "b-criteria.json").write_text("[" * 100_000 + "]" * 100_000)
    (folder / H100.name).write_text(H100.read_text())
    run = subprocess.run([sys.executable, "-m", "kernelcast", "advise",
                          str(_damaged(tmp_path)), "--json"], capture_output=True,
                         text=True, timeout=60, cwd=tmp_path)
    assert run.returncode == 0 and run.stderr == ""
    assert json.loads(run.stdout)["device"] == "NVIDIA H100 80GB HBM3"


# ------------------------------------------------------------------ outputs (finding 6)

@pytest.mark.parametrize("metric", METRICS)
def test_no_accepted_metric_value_makes_a_nan_infinite_or_negative_output(metric):
    """Each metric the criteria read, at the edges of what is accepted (and beyond): the
    launches are refused in one line, or every number of the assessment is finite and
    non-negative."""
    model = load_profile(H100)
    rows = _rows(TILED)
    column = rows[0].index(metric)
    for value in ("0", "1", "5e-324", "1.8e19", "1e30", "-1", "n/a", "nan", "inf"):
        for row in rows[2:]:
            row[column] = value
        out = io.StringIO()
        csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
        try:
            assessment = model.assess(Application("x", tuple(read_ncu_csv(out.getvalue()))))
        except UsageError as err:
            assert "\n" not in str(err) and metric in str(err)
            continue
        doc = as_json(assessment)
        json.dumps(doc, allow_nan=False)
        _sound(doc)


# ------------------------------------------------------------------ values taken, said

def test_a_missing_warp_size_is_taken_as_32_and_said(tmp_path, capsys):
    """Without device__attribute_warp_size the launches are judged with a warp of 32 (the
    transposes' own), and a warning per launch names the metric and the value taken."""
    code, want, err = _advise(capsys, _damaged(tmp_path), "--profile", H100, "--json")
    assert code == 0 and err == ""
    code, out, err = _advise(capsys, _damaged(tmp_path, device__attribute_warp_size=""),
                             "--profile", H100, "--json")
    assert code == 0 and json.loads(out)["criteria"] == json.loads(want)["criteria"]
    lines = err.strip().splitlines()
    assert len(lines) == 3, err  # the three launches of the naive transpose
    assert all(x.startswith("kernelcast: warning: ") and "device__attribute_warp_size" in x
               and "taken as 32" in x for x in lines)


def test_no_active_warps_or_no_throughput_are_taken_at_the_least_share_and_said(tmp_path):
    """A launch with no active warps, or no DRAM throughput where it is memory-bound, is
    judged at LEAST_SHARE (a potential speedup of at most 1000x), with a warning."""
    from kernelcast.errors import AssumedValueWarning
    from kernelcast.models.criteria.criteria import LEAST_SHARE

    model = load_profile(H100)
    idle = tuple(read_ncu_csv(_damaged(tmp_path, **{
        "sm__warps_active.avg.pct_of_peak_sustained_active": "0"}).read_text()))
    with pytest.warns(AssumedValueWarning, match="sm__warps_active is 0% .* taken as 0.001"):
        model.assess(Application("idle", idle))
    starved = tuple(read_ncu_csv(_damaged(tmp_path, **{
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": "0",
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": "90",
        "sm__throughput.avg.pct_of_peak_sustained_elapsed": "10"}).read_text()))
    with pytest.warns(AssumedValueWarning, match="MEMTHR is 0; taken as 0.001"):
        assessment = model.assess(Application("starved", starved))
    assert max(k.potential for k in assessment.kernels) == pytest.approx(1 / LEAST_SHARE)
    with warnings.catch_warnings():  # the profile as measured: nothing taken
        warnings.simplefilter("error")
        model.assess(Application("x", tuple(read_ncu_csv(NAIVE))))
