"""The bridge between the store and Kernel Tuner's cache files (kernelcast.tune.kerneltuner)."""

import json
import statistics
from pathlib import Path

import pytest

from kernelcast.errors import UsageError
from kernelcast.measure.store import Store
from kernelcast.tune.kerneltuner import export_cache, import_cache

DATA = Path(__file__).parent / "data" / "kerneltuner"
IDENTITY = {"backend": "opencl", "device": "Test GPU", "driver": "1.0"}
PARAMS = {"n": 4096}
# variant -> status, runs in seconds (the first dropped)
MEASURED = {
    (16, 1, True): ("ok", [9e-4, 4.1e-4, 4.0e-4, 4.3e-4]),
    (16, 2, True): ("unstable", [9e-4, 3.1e-4, 3.3e-4, 3.0e-4]),
    (32, 1, True): ("ok", [1e-4, 2.2e-4, 2.1e-4, 2.5e-4]),  # the dropped run is fastest
    (32, 2, True): ("compile_error", None),
    (16, 1, False): ("launch_error", None),
    (16, 2, False): ("out_of_memory", None),
    (32, 1, False): ("size_out_of_range", None),
    (32, 2, False): ("ok", [5e-4, 5.5e-4, 5.2e-4, 5.1e-4]),
}
# what each status comes back as (Kernel Tuner has fewer)
BACK = {"ok": "ok", "unstable": "ok", "compile_error": "compile_error",
        "launch_error": "launch_error", "out_of_memory": "launch_error",
        "size_out_of_range": "failed"}


def _name(group, per_item, flag):
    return f"mm/j.group={group},j.per_item={per_item},prefetch={str(flag).lower()}"


def _store(path):
    with Store(path, IDENTITY) as store:
        for i, (variant, (status, runs)) in enumerate(MEASURED.items()):
            row = {"key": f"k{i}", "case_name": _name(*variant), "params": PARAMS,
                   "kernelcast_version": "test", "status": status}
            if runs:
                row.update(times_s=runs, dropped=1, min_s=min(runs[1:]),
                           median_s=statistics.median(runs[1:]))
            store.add(row)
        store.add({"key": "other", "case_name": "stencil/j.group=8", "params": PARAMS,
                   "kernelcast_version": "test", "status": "ok", "times_s": [1e-3],
                   "dropped": 0, "min_s": 1e-3, "median_s": 1e-3})
    return path


def test_store_to_cache_to_store_keeps_names_statuses_and_times(tmp_path):
    cache = tmp_path / "mm.json"
    assert export_cache(_store(tmp_path / "a.sqlite"), "mm", cache) == len(MEASURED)
    data = json.loads(cache.read_text())
    assert data["device_name"] == "Test GPU" and data["kernel_name"] == "mm"
    assert data["problem_size"] == 4096 and data["objective"] == "time"
    assert data["tune_params_keys"] == ["j.group", "j.per_item", "prefetch"]
    assert data["tune_params"] == {"j.group": [16, 32], "j.per_item": [1, 2],
                                   "prefetch": [False, True]}
    assert data["cache"]["32,1,True"]["time"] == pytest.approx(0.21)  # min_s in ms
    assert data["cache"]["32,2,True"]["__error__"] == "CompilationFailedConfig"
    assert cache.read_text().endswith("}\n}\n")

    assert import_cache(cache, tmp_path / "b.sqlite") == len(MEASURED)
    with Store(tmp_path / "b.sqlite") as store:
        rows = {r["case_name"]: r for r in store.rows()}
        assert store.identity["device"] == "Test GPU"
    assert set(rows) == {_name(*v) for v in MEASURED}
    for variant, (status, runs) in MEASURED.items():
        row = rows[_name(*variant)]
        assert row["damage"] is None and row["params"] == PARAMS
        assert row["status"] == BACK[status]
        if runs:  # the runs that count, through milliseconds and back
            assert row["times_s"] == pytest.approx(runs[1:], rel=1e-15)
            assert row["min_s"] == pytest.approx(min(runs[1:]), rel=1e-15)
        else:
            assert row["min_s"] is None and row["times_s"] is None
    # importing again adds nothing
    assert import_cache(cache, tmp_path / "b.sqlite") == 0


def test_a_real_kernel_tuner_cache_imports(tmp_path):
    store_path = tmp_path / "kt.sqlite"
    assert import_cache(DATA / "test_cache_file.json", store_path) == 15
    with Store(store_path) as store:
        rows = {r["case_name"]: r for r in store.rows()}
        assert store.identity == {"backend": "kernel_tuner", "device": "NVIDIA RTX A4000",
                                  "driver": "unknown"}
    assert len(rows) == 15 and all(r["status"] == "ok" and not r["damage"]
                                   for r in rows.values())
    first = rows["vector_add/block_size_x=128"]  # "time": 0.0407..., the mean of 7 runs
    assert first["params"] == {"problem_size": 100}
    assert first["times_s"][0] == pytest.approx(0.1268800050020218e-3)
    assert first["min_s"] == pytest.approx(0.024064000695943832e-3)
    assert first["median_s"] == pytest.approx(0.025472000241279602e-3)
    assert rows["vector_add/block_size_x=768"]["min_s"] == pytest.approx(0.023679999634623528e-3)


def test_a_cache_still_being_written_imports_what_it_has(tmp_path):
    cache = tmp_path / "open.json"
    export_cache(_store(tmp_path / "a.sqlite"), "mm", cache)
    lines = cache.read_text().splitlines()
    # as Kernel Tuner leaves it between entries: the header and two entries, each with ","
    cache.write_text("\n".join(lines[:lines.index('"cache": {') + 3]))
    assert cache.read_text().endswith("},")
    assert import_cache(cache, tmp_path / "b.sqlite", family="mine") == 2
    with Store(tmp_path / "b.sqlite") as store:
        assert all(r["case_name"].startswith("mine/j.group=") for r in store.rows())
    cache.write_text("\n".join(lines[:lines.index('"cache": {') + 1]))  # no entries yet
    assert import_cache(cache, tmp_path / "c.sqlite") == 0


def test_old_style_failures_in_time_are_read(tmp_path):
    cache = tmp_path / "old.json"
    cache.write_text(json.dumps({
        "device_name": "GPU", "kernel_name": "k", "problem_size": [64, 32],
        "tune_params_keys": ["bx", "alg"], "tune_params": {"bx": [1, 2], "alg": ["a"]},
        "cache": {"1,a": {"bx": 1, "alg": "a", "time": "InvalidConfig"},
                  "2,a": {"bx": 2, "alg": "a", "time": 2.0}}}))
    assert import_cache(cache, tmp_path / "s.sqlite") == 2
    with Store(tmp_path / "s.sqlite") as store:
        rows = {r["case_name"]: r for r in store.rows()}
    assert rows["k/bx=1,alg=a"]["status"] == "failed"
    assert "InvalidConfig" in rows["k/bx=1,alg=a"]["message"]
    assert rows["k/bx=2,alg=a"]["min_s"] == 2e-3
    assert rows["k/bx=2,alg=a"]["params"] == {"problem_size_x": 64, "problem_size_y": 32}


@pytest.mark.parametrize("text, problem", [
    ("not json", "not JSON"),
    ("[1, 2]", "not a JSON object"),
    ('{"device_name": "G", "cache": {}}', "tune_params_keys"),
    ('{"device_name": "G", "tune_params_keys": ["x"]}', "no cache object"),
    ('{"tune_params_keys": ["x"], "cache": {}}', "no device_name"),
    (('{"device_name": "G", "kernel_name": "k", "tune_params_keys": ["x"],'
     ' "cache": {"1": {"time": 1.0}}}'), "does not give every parameter"),
    (('{"device_name": "G", "kernel_name": "k", "tune_params_keys": ["x"],'
     ' "cache": {"1": {"x": 1, "time": -1.0}}}'), "no positive times"),
])
def test_bad_cache_files_are_refused_naming_the_file(tmp_path, text, problem):
    cache = tmp_path / "bad.json"
    cache.write_text(text)
    with pytest.raises(UsageError, match=problem) as err:
        import_cache(cache, tmp_path / "s.sqlite")
    assert str(cache) in str(err.value) and "\n" not in str(err.value)


def test_refusals_of_missing_files_other_devices_and_families(tmp_path):
    with pytest.raises(UsageError, match="no such Kernel Tuner cache file"):
        import_cache(tmp_path / "none.json", tmp_path / "s.sqlite")
    store = _store(tmp_path / "a.sqlite")
    with pytest.raises(UsageError, match="measured on 'NVIDIA RTX A4000'"):
        import_cache(DATA / "test_cache_file.json", store)
    with pytest.raises(UsageError, match="no usable rows of family 'gemm'"):
        export_cache(store, "gemm", tmp_path / "x.json")
    with pytest.raises(UsageError, match="no measurement store"):
        export_cache(tmp_path / "none.sqlite", "mm", tmp_path / "x.json")
    with Store(store) as s:
        s.add({"key": "big", "case_name": _name(16, 1, True), "params": {"n": 8192},
               "kernelcast_version": "test", "status": "crashed"})
    with pytest.raises(UsageError, match="measured at 2 sizes"):
        export_cache(store, "mm", tmp_path / "x.json")
    assert export_cache(store, "mm", tmp_path / "x.json", params={"n": 8192}) == 1
    entry = json.loads((tmp_path / "x.json").read_text())["cache"]["16,1,True"]
    assert entry["__error__"] == "RuntimeFailedConfig"


@pytest.mark.filterwarnings("ignore::UserWarning")  # its checks of a kernel it never runs
def test_kernel_tuner_reads_and_simulates_our_file(tmp_path):
    kt = pytest.importorskip("kernel_tuner", reason="kernel_tuner is not installed")
    from kernel_tuner.util import read_cache

    cache = tmp_path / "mm.json"
    export_cache(_store(tmp_path / "a.sqlite"), "mm", cache)
    data = read_cache(str(cache), open_cache=False)
    assert data["cache"]["32,1,True"]["time"] == pytest.approx(0.21)
    assert str(data["cache"]["16,1,False"]["__error__"]) == "RuntimeFailedConfig"
    # its simulation mode tunes from the file, and finds our fastest variant
    tune_params = {k: data["tune_params"][k] for k in data["tune_params_keys"]}
    results, _ = kt.tune_kernel("mm", "__kernel void mm() {}", 4096, [], tune_params,
                                lang="OpenCL", cache=str(cache), simulation_mode=True,
                                strategy="brute_force", quiet=True)
    timed = [r for r in results if "__error__" not in r]
    best = min(timed, key=lambda r: r["time"])
    assert (best["j.group"], best["j.per_item"], best["prefetch"]) == (32, 1, True)
    assert len(results) == len(MEASURED)


def test_keys_that_leave_out_off_parameters_are_spelled_out_and_come_back(tmp_path):
    # space.variant_key leaves tile/prefetch/pad out at their off values: one family's
    # rows then name different parameters; Kernel Tuner needs them all in every entry
    names = ["mv/i.group=32,unroll.j=1", "mv/i.group=32,unroll.j=1,split.j=8",
             "mv/i.group=64,unroll.j=4,tile.j=16,prefetch.x=true,pad.x=1"]
    with Store(tmp_path / "a.sqlite", IDENTITY) as store:
        for i, name in enumerate(names):
            store.add({"key": f"k{i}", "case_name": name, "params": PARAMS,
                       "kernelcast_version": "test", "status": "ok", "times_s": [1e-3 * (i + 1)],
                       "dropped": 0, "min_s": 1e-3 * (i + 1), "median_s": 1e-3 * (i + 1)})
    cache = tmp_path / "mv.json"
    assert export_cache(tmp_path / "a.sqlite", "mv", cache) == 3
    data = json.loads(cache.read_text())
    assert data["tune_params_keys"] == ["i.group", "unroll.j", "tile.j", "split.j",
                                        "prefetch.x", "pad.x"]
    assert set(data["cache"]) == {"32,1,1,1,False,0", "32,1,1,8,False,0",
                                  "64,4,16,1,True,1"}
    assert import_cache(cache, tmp_path / "b.sqlite") == 3
    with Store(tmp_path / "b.sqlite") as store:
        assert {r["case_name"] for r in store.rows()} == set(names)


def test_a_row_without_an_axis_parameter_the_others_have_is_refused(tmp_path):
    with Store(tmp_path / "a.sqlite", IDENTITY) as store:
        for i, name in enumerate(["mv/i.group=32,unroll.j=1", "mv/i.group=64"]):
            store.add({"key": f"k{i}", "case_name": name, "params": PARAMS,
                       "kernelcast_version": "test", "status": "ok", "times_s": [1e-3],
                       "dropped": 0, "min_s": 1e-3, "median_s": 1e-3})
    with pytest.raises(UsageError, match="mv/i.group=64 gives no unroll.j"):
        export_cache(tmp_path / "a.sqlite", "mv", tmp_path / "mv.json")
