"""Ranking and measuring on a local Dask cluster of two worker processes, for real on
PoCL: the same ranking as without workers (order and reasons), measurements in the
caller's store once each, a rerun (with or without workers) measuring nothing, a device
another campaign holds refused, and `kernelcast tune --workers 2` end to end. One cluster
serves the module (starting one takes seconds on two cores)."""

import functools
import json
import os

import pytest
from tune_kernels import FACTORY  # the small product, through the CLI

from kernelcast.cli import main
from kernelcast.errors import DeviceBusyError, KernelcastError, UsageError
from kernelcast.measure.campaign import Job, run_campaign
from kernelcast.measure.lock import DeviceLock
from kernelcast.measure.store import Store, read_measurements
from kernelcast.profile import load_profile
from kernelcast.tune import distributed
from kernelcast.tune.families import FAMILIES
from kernelcast.tune.space import Axis, Space, apply, variant_key
from kernelcast.tune.tuner import rank

PROFILE = (os.path.dirname(__file__)
           + "/../data/profiles/nvidia-h100-80gb-hbm3-cuda-extended.json")


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("properties-cache")


@pytest.fixture(scope="module")
def client(cache_dir, private_device_locks):
    """Two local worker processes, which inherit this environment: a properties cache of
    their own (so it starts cold) and the test session's device locks."""
    saved = os.environ.get("KERNELCAST_CACHE_DIR")
    os.environ["KERNELCAST_CACHE_DIR"] = str(cache_dir)
    try:
        with distributed.cluster(workers=2) as client:
            yield client
    finally:
        if saved is None:
            os.environ.pop("KERNELCAST_CACHE_DIR", None)
        else:
            os.environ["KERNELCAST_CACHE_DIR"] = saved


def refusing(knl, count):
    """*count(knl)*, except for a kernel with tasks per work-item along j: a reason to skip
    that has to travel back from the workers."""
    if "j_item" in knl.default_entrypoint.all_inames():
        raise KernelcastError("no counts for j_item (a test)")
    return count(knl)


# transpose's kernel, a small space of its own (36 variants; 6 too big for 128 work-items)
SPACE = Space((Axis("j", (16, 32, 64), (1, 2)), Axis("i", (1, 2, 4), (1, 2))))


def test_two_workers_rank_as_one_process_does(client, cache_dir):
    from kernelcast.properties import cached_properties, extract_properties

    fam, model = FAMILIES["transpose"], load_profile(PROFILE)
    args = (fam.build(), fam.check_params, SPACE, model)
    serial = rank(*args, max_group_size=128,
                  properties=functools.partial(refusing, count=extract_properties))
    seen = []
    counted = functools.partial(refusing, count=cached_properties)
    spread = rank(*args, max_group_size=128, client=client, chunk_size=8,
                  properties=counted, progress=lambda done, total: seen.append((done, total)))
    assert spread == serial  # same order, same predictions, same reasons
    ranked, skipped = serial
    reasons = {r.reason for r in skipped}
    assert len(ranked) == 16 and reasons == {
        "not predicted: no counts for j_item (a test)",
        "a work-group of 256 work-items; the device runs at most 128"}
    # reported per chunk of 8 as each completes: five reports, the last of all 36
    assert len(seen) == 5 and {t for _, t in seen} == {36} and seen[-1] == (36, 36)
    assert all(a < b for (a, _), (b, _) in zip(seen, seen[1:]))
    # the workers counted into one cache folder: one entry per kernel they counted
    assert len(list(cache_dir.glob("*.json"))) == len(ranked)
    # a running scheduler, given by its address: the same again
    with distributed.cluster(scheduler=client.scheduler.address, timeout=5) as remote:
        assert distributed.workers_of(remote) == 2
        assert rank(*args, max_group_size=128, client=remote, properties=counted) == serial


def _jobs(fam, variants):
    knl = fam.build()
    names = [f"{fam.name}/{variant_key(v)}" for v in variants]
    return [Job(n, n, functools.partial(apply, knl, v, fam.space), dict(fam.check_params))
            for n, v in zip(names, variants, strict=True)]


def test_workers_measure_into_the_callers_store_once_each(client, pocl, tmp_path, capsys):
    fam = FAMILIES["axpy"]
    variants = list(fam.space.variants())[:3]
    jobs = _jobs(fam, variants) + _jobs(fam, variants[:1])  # a job given twice
    db = tmp_path / "m.sqlite"
    with Store(db, pocl.identity) as store:
        result = distributed.measure(client, jobs, pocl, store, verify=False)
        rows = store.rows()
        assert result.measured == 3 and not result.skipped
        assert sorted(r["case_name"] for r in rows) == sorted(j.name for j in jobs[:3])
        assert {r["status"] for r in rows} <= {"ok", "unstable"}
        assert all(r["min_s"] > 0 and r["code_sha256"] and store.code(r["code_sha256"])
                   for r in rows)
        progress = capsys.readouterr().err
        assert progress.count("[") == 3 and "[3/3" in progress
        # resumed, with workers or without: nothing measured twice (the same keys)
        again = distributed.measure(client, jobs, pocl, store, verify=False, progress=None)
        assert (again.measured, again.skipped) == (0, 3)
        assert again.keys == result.keys
        alone = run_campaign(jobs, pocl, store, verify=False, progress=None)
        assert (alone.measured, alone.skipped) == (0, 3)
        assert len(store.rows()) == 3


def test_workers_that_overlap_compiling_with_timing_take_turns_to_time(client, pocl,
                                                                      tmp_path):
    # what a GPU gets by default; on PoCL the timings may be contended, never mixed up
    fam = FAMILIES["axpy"]
    jobs = _jobs(fam, list(fam.space.variants())[5:8])
    with Store(tmp_path / "o.sqlite", pocl.identity) as store:
        result = distributed.measure(client, jobs, pocl, store, verify=False,
                                     progress=None, overlap=True)
        assert result.measured == 3
        assert {r["status"] for r in store.rows()} <= {"ok", "unstable"}


@pytest.mark.parametrize("overlap", [False, True])
def test_a_device_another_campaign_holds_is_refused_on_the_workers(client, pocl, tmp_path,
                                                                   overlap):
    fam = FAMILIES["axpy"]
    jobs = _jobs(fam, list(fam.space.variants())[3:4])
    lock = DeviceLock(pocl.device)  # this process: another campaign to the workers
    try:
        with Store(tmp_path / "busy.sqlite", pocl.identity) as store, \
                pytest.raises(DeviceBusyError, match="is being measured by process"):
            distributed.measure(client, jobs, pocl, store, verify=False, progress=None,
                                overlap=overlap)
        assert read_measurements(tmp_path / "busy.sqlite").empty
    finally:
        lock.release()


def test_bad_workers_and_addresses_are_usage_errors():
    assert distributed.check_workers("3") == 3
    assert distributed.check_address("example.org:8786") == "tcp://example.org:8786"
    for bad in ("0", "-1", "two"):
        with pytest.raises(UsageError, match="positive integer"):
            distributed.check_workers(bad)
    for bad in ("tcp://", "http://h:1", "h:99999", "h"):
        with pytest.raises(UsageError, match="scheduler's address"):
            distributed.check_address(bad)
    with pytest.raises(KernelcastError, match="cannot reach the Dask scheduler at "
                                              "tcp://127.0.0.1:1 within 0.5 s"), \
            distributed.cluster(scheduler="tcp://127.0.0.1:1", timeout=0.5):
        pass


def test_a_scheduler_without_workers_is_refused():
    from distributed import LocalCluster

    with LocalCluster(n_workers=0, dashboard_address=None, host="127.0.0.1",
                      scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}) as empty, \
            pytest.raises(KernelcastError, match="has no worker \\(waited 0.5 s\\)"), \
            distributed.cluster(scheduler=empty.scheduler_address, timeout=0.5):
        pass



@pytest.fixture
def files(tmp_path, cache_dir, monkeypatch):
    # a factory the workers could not import (its folder is not on their path): the
    # kernel it made travels instead
    (tmp_path / "k.py").write_text(FACTORY)
    (tmp_path / "space.toml").write_text(
        "[axes.j]\ngroup = [4, 8]\nper_item = [1, 2]\n[axes.i]\ngroup = [1, 2]\n")
    monkeypatch.setenv("KERNELCAST_CACHE_DIR", str(cache_dir))
    return tmp_path


def _args(tmp_path, *extra):
    return ["tune", str(tmp_path / "k.py:build"), "--param", "n=24", "m=40", "--space",
            str(tmp_path / "space.toml"), "--model", "hong-kim", "--hardware", "h100",
            "--measure-top", "2", "--device", "portable", "--db",
            str(tmp_path / "tune.sqlite"), *extra]


@pytest.mark.usefixtures("pocl_device")
def test_tune_with_two_workers_end_to_end(files, capsys):
    assert main(_args(files, "--workers", "2", "--json")) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert "on 2 local worker processes" in captured.err
    assert doc["space"] == {"variants": 8, "valid": 8, "skipped": 0, "skipped_reasons": {},
                            "thinned": []}
    assert [r["status"] in ("ok", "unstable") for r in doc["top"]] == [True, True]
    rows = read_measurements(files / "tune.sqlite")
    assert len(rows) == 2
    # without workers: the same ranking, and nothing measured twice
    assert main(_args(files, "--json")) == 0
    alone = json.loads(capsys.readouterr().out)
    assert [(r["key"], r["predicted_s"], r["measured_s"]) for r in alone["top"]] == \
        [(r["key"], r["predicted_s"], r["measured_s"]) for r in doc["top"]]
    assert len(read_measurements(files / "tune.sqlite")) == 2


@pytest.mark.usefixtures("pocl_device")
def test_tune_on_a_running_scheduler(files, client, capsys):
    address = client.scheduler.address
    assert main(_args(files, "--scheduler", address, "--measure-top", "1")) == 0
    captured = capsys.readouterr()
    assert f"on the 2 workers of {address}" in captured.err
    assert "winner: rank 1" in captured.out
    assert len(read_measurements(files / "tune.sqlite")) == 1


@pytest.mark.usefixtures("pocl_device")
@pytest.mark.parametrize(("extra", "status", "message"), [
    (("--workers", "0"), 2, "--workers 0: expected a positive integer"),
    (("--scheduler", "nowhere"), 2, "--scheduler nowhere: expected a Dask scheduler's"),
    (("--workers", "2", "--scheduler", "tcp://h:1"), 2, "not both"),
    (("--scheduler-timeout", "0"), 2, "--scheduler-timeout 0: expected a positive"),
    (("--scheduler", "tcp://127.0.0.1:1", "--scheduler-timeout", "0.5"), 1,
     "cannot reach the Dask scheduler at tcp://127.0.0.1:1 within 0.5 s"),
])
def test_tune_cluster_errors_are_one_line(files, capsys, extra, status, message):
    assert main(_args(files, *extra)) == status
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("kernelcast: error:")
    assert message in err and "Traceback" not in err
    assert not (files / "tune.sqlite").exists()
