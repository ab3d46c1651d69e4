"""Several identical devices of one host (issue 26), for real on PoCL: every device has an
instance (a PCI address, else its position in its platform) and a lock of its own; a store
or profile made for one instance is bound to it; `measure`, `calibrate` and `tune` with
``--devices`` run one worker per device, each holding its own device; a worker killed
mid-campaign is restarted and nothing is lost or stored twice.

A process started with POCL_DEVICES="pthread pthread" sees two identical PoCL CPU devices,
#0 and #1 (PoCL reads it when it loads, so those tests run kernelcast in such a
subprocess). One calibration of both devices serves the module."""

import dataclasses
import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from tune_kernels import FACTORY, SPACE_TOML  # the small product kernel and its space

from kernelcast.cli import main
from kernelcast.errors import DeviceBusyError, KernelcastError, UsageError
from kernelcast.measure.devices import DeviceInfo, find_device, pci_instance
from kernelcast.measure.lock import DeviceLock
from kernelcast.measure.store import Store, StoreMismatchError, measurement_key
from kernelcast.profile import load_profile, save_profile
from kernelcast.suites.paper import MEASUREMENT_CPU, TEST_CPU
from kernelcast.workflow import default_paths, fit_store

SRC = Path(__file__).resolve().parent.parent / "src"
PROFILES = Path(__file__).resolve().parent.parent / "data" / "profiles"
TWO_DEVICES = {"POCL_DEVICES": "pthread pthread", "POCL_MAX_PTHREAD_COUNT": "1"}
FAST = ("--runs", "5", "--tolerance", "1")  # the fewest launches the protocol takes
# calibrations here fit the paper's model to its test suite at CPU sizes (4 classes, 16
# cases): what is checked is how the devices share the work, not the fit. Its weights are
# non-negative, so that the tune tests' variants, which the suite does not span, are
# predicted a positive time and ranked
CALIBRATE = ("calibrate", "--devices", "all", "--device", "pthread", "--suite", "test-cpu",
             "--model", "paper", "--nonnegative", *FAST)
TIMED = ("ok", "unstable")  # a timing ("unstable" is one, only noisier on a shared CPU)


def _env() -> dict:
    """This session's environment (its device locks among it), with two PoCL devices."""
    path = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, **TWO_DEVICES, "PYTHONPATH": path}


def _python(*argv, cwd, timeout=300):
    """(completed process, seconds) of ``python *argv`` seeing two PoCL devices."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, *map(str, argv)], cwd=cwd, env=_env(),
                          capture_output=True, text=True, timeout=timeout, check=False)
    return done, time.monotonic() - started


def _kernelcast(*argv, cwd, timeout=300):
    return _python("-m", "kernelcast", *argv, cwd=cwd, timeout=timeout)


def _usage_error(done, message):
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("kernelcast: error:")
    assert message in done.stderr and "Traceback" not in done.stderr


def _rows(path):
    with Store(path) as store:
        return store.rows()


@pytest.fixture(scope="module")
def two_devices(pocl_device, tmp_path_factory):
    """The DeviceInfo of PoCL's two devices as a subprocess with TWO_DEVICES sees them."""
    script = ("import json; from kernelcast.measure.devices import opencl_devices; "
              "print(json.dumps([d.as_dict() for d in opencl_devices() "
              "if d.name.startswith('pthread')]))")
    done, _ = _python("-c", script, cwd=tmp_path_factory.mktemp("devices"), timeout=60)
    assert done.returncode == 0, done.stderr
    devices = [DeviceInfo(**d) for d in json.loads(done.stdout)]
    if len(devices) != 2:
        pytest.skip(f"needs PoCL's pthread driver twice (POCL_DEVICES); got {devices}")
    return devices


# {{{ instances and locks

def test_a_pocl_device_is_its_position_in_its_platform(pocl_device, two_devices):
    assert pocl_device.instance == f"#{pocl_device.index}"
    assert pocl_device.lock_name == f"{pocl_device.name} {pocl_device.instance}"
    first, second = two_devices
    assert (first.instance, second.instance) == ("#0", "#1")
    assert first.name == second.name and first.lock_name != second.lock_name


def test_an_nvidia_instance_is_its_pci_address():
    assert pci_instance(0, 0x1b, 0) == "pci:0000:1b:00"
    assert pci_instance(0x10, 0xaf, 0x1f) == "pci:0010:af:1f"


def test_a_device_is_found_by_its_instance(pocl_device):
    found = find_device("#0")
    assert found == pocl_device and found.instance == "#0"
    with pytest.raises(UsageError, match=r"no opencl device matches '#7'; devices: .*\(#0\)"):
        find_device("#7")


def test_an_index_instance_is_looked_up_within_its_device_name(pocl_device, monkeypatch):
    # #INDEX is a position in one platform: another platform's #1 is not this device's
    from kernelcast.measure import devices

    other = [dataclasses.replace(pocl_device, platform="Other", name="other CPU", index=i,
                                 instance=f"#{i}") for i in range(2)]
    mine = [dataclasses.replace(pocl_device, index=i, instance=f"#{i}") for i in range(2)]
    monkeypatch.setattr(devices, "opencl_devices", lambda: other + mine)
    assert devices.find_instance("#1", "opencl", pocl_device.name) == mine[1]
    assert devices.find_instance("#1", "opencl") == other[1]  # no name: the first
    assert devices.siblings(mine[1]) == mine
    with pytest.raises(KernelcastError, match="no opencl device .* is #5"):
        devices.find_instance("#5", "opencl", pocl_device.name)


def test_long_device_names_keep_their_instance_in_the_lock(pocl_device):
    long = dataclasses.replace(pocl_device, name="x" * 120)
    first, second = (DeviceLock(dataclasses.replace(long, instance=i)) for i in ("#0", "#1"))
    try:
        assert first.path != second.path and len(first.path.name) < 110
    finally:
        first.release()
        second.release()


def test_identical_devices_are_locked_apart(holder, pocl_device):
    other = dataclasses.replace(pocl_device, instance="#1")  # the same device, another one
    lock = DeviceLock(other)  # not contended by the holder of #0
    try:
        with pytest.raises(DeviceBusyError, match=re.escape(
                f"{pocl_device.name} #0 is being measured by process {holder.pid}")):
            DeviceLock(pocl_device)
    finally:
        lock.release()

# }}}


# {{{ a store bound to an instance

IDENTITY = {"backend": "opencl", "device": "Some GPU", "driver": "1.0", "compute_units": 8}


def test_a_store_made_for_an_instance_refuses_another(tmp_path):
    path = tmp_path / "bound.sqlite"
    with Store(path, {**IDENTITY, "instance": "pci:0000:1b:00"}) as store:
        assert store.instance == "pci:0000:1b:00"
    with pytest.raises(StoreMismatchError) as refused:
        Store(path, {**IDENTITY, "instance": "pci:0000:1c:00"})
    assert "pci:0000:1b:00" in str(refused.value) and "pci:0000:1c:00" in str(refused.value)
    for identity in ({**IDENTITY, "instance": "pci:0000:1b:00"}, IDENTITY, None):
        with Store(path, identity) as store:  # its own instance, any of its kind, reading
            assert store.instance == "pci:0000:1b:00"


def test_a_store_made_without_an_instance_takes_any(tmp_path):
    path = tmp_path / "any.sqlite"
    Store(path, IDENTITY).close()
    for instance in ("#0", "#1"):
        with Store(path, {**IDENTITY, "instance": instance}) as store:
            assert store.instance == ""  # not bound by being opened
    with Store(path) as store:
        assert store.instance == "" and "instance" not in store.meta


def test_the_instance_is_not_part_of_a_measurements_key():
    key = measurement_key("c/n=1", "ab" * 32, "", {"n": 1}, IDENTITY, "0.1")
    for instance in ("#0", "pci:0000:1b:00"):
        assert measurement_key("c/n=1", "ab" * 32, "", {"n": 1},
                               {**IDENTITY, "instance": instance}, "0.1") == key
    other = {**IDENTITY, "device": "Another GPU"}
    assert measurement_key("c/n=1", "ab" * 32, "", {"n": 1}, other, "0.1") != key

# }}}


# {{{ measure --devices

def test_measure_spreads_a_suite_over_both_devices_into_one_store(two_devices, tmp_path):
    argv = ("measure", "--suite", "measurement-cpu", "--classes", "scale_add", "--p",
            "scale_add=12", "--devices", "all", "--device", "pthread", "--db", "m.sqlite",
            *FAST)
    done, _ = _kernelcast(*argv, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    expected = sorted(c.name for c in
                      MEASUREMENT_CPU.kernel_class("scale_add").cases("measurement-cpu", 12))
    assert len(expected) == 24  # 3 variants × 2 dtypes × 4 sizes: 6 kernels to share out
    rows = _rows(tmp_path / "m.sqlite")
    assert sorted(r["case_name"] for r in rows) == expected  # each once, none missing
    assert {r["status"] for r in rows} <= set(TIMED)
    assert "on 2 × pthread-" in done.stderr and "(#0, #1)" in done.stderr
    [line] = [x for x in done.stderr.splitlines() if x.startswith("measured per device:")]
    counts = re.fullmatch(r"measured per device: #0 (\d+), #1 (\d+)", line)
    assert counts, line
    first, second = map(int, counts.groups())
    # the jobs go one kernel at a time to whichever worker is free: both have work from
    # the start (two workers of one thread each, six kernels)
    assert first > 0 and second > 0 and first + second == 24
    assert done.stdout.startswith("done: 24 measured")
    with Store(tmp_path / "m.sqlite") as store:
        assert store.instance == ""  # rows of both devices: bound to neither

    again, _ = _kernelcast(*argv, cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    assert again.stdout.startswith("done: 0 measured (none), 24 already in m.sqlite")
    assert "measured per device" not in again.stderr
    assert len(_rows(tmp_path / "m.sqlite")) == 24


ON_A_SCHEDULER = textwrap.dedent('''
    import sys

    from kernelcast.cli import main
    from kernelcast.tune import distributed

    if __name__ == "__main__":
        with distributed.cluster(workers=2) as client:  # a running cluster's two workers
            sys.exit(main(["measure", *sys.argv[1:], "--scheduler",
                           client.scheduler.address]))
''')


def test_measure_on_a_running_cluster_gives_each_worker_a_device(two_devices, tmp_path):
    (tmp_path / "remote.py").write_text(ON_A_SCHEDULER)
    argv = ("--suite", "measurement-cpu", "--classes", "scale_add", "--p", "scale_add=12",
            "--devices", "all", "--device", "pthread", "--db", "m.sqlite", *FAST)
    done, _ = _python("remote.py", *argv, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "on the workers of tcp://127.0.0.1:" in done.stderr
    [line] = [x for x in done.stderr.splitlines() if x.startswith("measured per device:")]
    counts = dict(re.findall(r"(#\d) (\d+)", line))
    assert set(counts) <= {"#0", "#1"} and sum(map(int, counts.values())) == 24
    assert len({r["case_name"] for r in _rows(tmp_path / "m.sqlite")}) == 24
    # a number of devices is this host's to give, not a running cluster's
    done, _ = _python("remote.py", *argv[:-len(FAST) - 4], "--devices", "2", "--db", "n.db",
                      cwd=tmp_path)
    assert done.returncode == 2 and "with --scheduler, --devices all" in done.stderr


def test_measure_devices_with_one_kernel_is_a_usage_error(tmp_path, capsys):
    db = tmp_path / "m.sqlite"
    status = main(["measure", "--kernel", "k.py:build", "--devices", "all", "--db", str(db)])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and err.startswith("kernelcast: error:")
    assert "--devices spreads a suite's cases; one --kernel runs on one device" in err
    assert not db.exists()

# }}}


# {{{ a worker killed mid-campaign

AXPY_JOBS = textwrap.dedent('''
    import functools

    from kernelcast.measure.campaign import Job
    from kernelcast.tune.families import FAMILIES
    from kernelcast.tune.space import apply, variant_key


    def axpy_jobs(count):
        """Jobs for the first *count* variants of axpy's space, at its small sizes."""
        fam = FAMILIES["axpy"]
        knl = fam.build()
        jobs = []
        for v in list(fam.space.variants())[:count]:
            name = f"axpy/{variant_key(v)}"
            jobs.append(Job(name, name, functools.partial(apply, knl, v, fam.space),
                            dict(fam.check_params)))
        return jobs
''')

KILL = AXPY_JOBS + textwrap.dedent('''
    import json, os, signal, sys

    from kernelcast.measure.backends import make_backend
    from kernelcast.measure.devices import siblings
    from kernelcast.measure.store import Store
    from kernelcast.tune import distributed


    class Killer:
        """A progress stream that SIGKILLs *pid* as its second line is written."""

        def __init__(self, pid):
            self.pid, self.lines, self.killed = pid, 0, False

        def write(self, text):
            self.lines += text.count("\\n")
            if self.lines >= 2 and not self.killed:
                os.kill(self.pid, signal.SIGKILL)
                self.killed = True

        def flush(self):
            pass


    def pinned():
        return os.environ.get(distributed.DEVICE_ENV)


    def main(db):
        jobs = axpy_jobs(12)
        backend = make_backend("opencl", "pthread", locked=False)
        devices = siblings(backend.device)
        with distributed.cluster(devices=devices) as client, \\
                Store(db, backend.identity) as store:
            before = distributed.worker_pids(client)
            victim = max(before.values())
            progress = Killer(victim)
            result = distributed.measure(client, jobs, backend, store, verify=False,
                                         per_device=True, progress=progress, runs=6,
                                         tolerance=1.0)
            client.wait_for_workers(len(devices), timeout=60)
            after = distributed.worker_pids(client)
            rows = store.rows()
            print(json.dumps({
                "jobs": [j.name for j in jobs], "cases": [r["case_name"] for r in rows],
                "statuses": sorted({r["status"] for r in rows}),
                "measured": result.measured, "skipped": result.skipped,
                "devices": result.devices, "victim": victim, "killed": progress.killed,
                "before": sorted(before.values()), "after": sorted(after.values()),
                "pinned": sorted(client.run(pinned).values())}))


    if __name__ == "__main__":
        main(sys.argv[1])
''')


def test_a_worker_killed_mid_campaign_is_restarted_and_nothing_is_lost_or_doubled(
        two_devices, tmp_path):
    (tmp_path / "kill.py").write_text(KILL)
    done, _ = _python("kill.py", "k.sqlite", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["killed"] and out["victim"] in out["before"] and len(out["before"]) == 2
    assert len(set(out["jobs"])) == 12
    assert sorted(out["cases"]) == sorted(out["jobs"])  # every case stored exactly once
    assert (out["measured"], out["skipped"]) == (12, 0)
    assert sum(out["devices"].values()) == 12 and set(out["devices"]) <= {"#0", "#1"}
    assert set(out["statuses"]) <= set(TIMED)
    # the victim's nanny started a new worker, pinned to the same device again
    assert len(out["after"]) == 2 and out["victim"] not in out["after"]
    survivor = next(p for p in out["before"] if p != out["victim"])
    assert survivor in out["after"]
    assert out["pinned"] == ["#0", "#1"]
    assert len(_rows(tmp_path / "k.sqlite")) == 12

CLAIM = AXPY_JOBS + textwrap.dedent('''
    import json, sys

    from kernelcast.measure.backends import make_backend
    from kernelcast.measure.devices import siblings
    from kernelcast.measure.lock import DeviceLock
    from kernelcast.measure.store import Store
    from kernelcast.tune import distributed


    def main(db):
        jobs = axpy_jobs(6)
        backend = make_backend("opencl", "pthread", locked=False)
        first, second = siblings(backend.device)
        held = DeviceLock(first)  # another campaign on #0: the worker must take #1
        with distributed.cluster(workers=1) as client, Store(db, backend.identity) as store:
            result = distributed.measure(client, jobs, backend, store, verify=False,
                                         per_device=True, progress=None, runs=6,
                                         tolerance=1.0)
        held.release()
        print(json.dumps({"devices": result.devices, "measured": result.measured,
                          "free": second.instance}))


    if __name__ == "__main__":
        main(sys.argv[1])
''')


def test_workers_not_pinned_to_a_device_take_a_free_one(two_devices, tmp_path):
    # what workers of a running cluster (--scheduler) do with --devices all
    (tmp_path / "claim.py").write_text(CLAIM)
    done, _ = _python("claim.py", "c.sqlite", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["free"] == "#1" and out["devices"] == {"#1": 6} and out["measured"] == 6

# }}}


# {{{ calibrate --devices

@dataclasses.dataclass
class Calibration:
    folder: Path
    done: subprocess.CompletedProcess
    seconds: float
    name: str

    def paths(self, instance):
        """(store, profile) of *instance*, where calibrate --devices writes them."""
        store, profile = default_paths(self.name, "opencl", "paper",
                                       self.folder / "kernelcast-data", instance)
        return store, profile


@pytest.fixture(scope="module")
def calibration(two_devices, tmp_path_factory):
    """`kernelcast calibrate --devices all` on both PoCL devices, once for the module."""
    folder = tmp_path_factory.mktemp("calibrate")
    done, seconds = _kernelcast(*CALIBRATE, cwd=folder, timeout=600)
    return Calibration(folder, done, seconds, two_devices[0].name)


def test_calibrate_devices_makes_a_store_and_a_profile_bound_to_each_device(
        calibration, two_devices, tmp_path):
    done = calibration.done
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert "calibrating 2 × pthread-" in done.stderr and "one worker per device" in done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2
    sizes = {}
    for instance, line, device in zip(("#0", "#1"), lines, two_devices, strict=True):
        store, profile = calibration.paths(instance)
        assert store.name.endswith(f"-opencl-device-{instance[1]}.sqlite")
        assert profile.name.endswith(f"-opencl-device-{instance[1]}-paper.json")
        assert line.startswith(f"{instance}: profile written to {profile} (store {store})")
        with Store(store) as opened:
            assert opened.instance == instance
            assert opened.identity["device"] == device.name
            sizes[instance] = len(opened.keys())
        measured = {r["kernel_class"] for r in _rows(store) if r["status"] in TIMED}
        assert measured >= {k.name for k in TEST_CPU.classes}  # the suite, on this device
        assert sizes[instance] >= len(TEST_CPU.cases())
        assert store.with_suffix(".log").read_text().count("\n") >= sizes[instance]
        doc = json.loads(profile.read_text())
        assert doc["instance"] == instance and doc["device"] == device.name
        assert doc["model"] == "paper" and doc["store"]
        assert load_profile(profile).provenance_["instance"] == instance
    # a store of one device refuses the other
    with pytest.raises(StoreMismatchError, match="#0.*#1"):
        Store(calibration.paths("#0")[0], {"backend": "opencl", "device": two_devices[0].name,
                                          "driver": two_devices[0].driver,
                                          "instance": "#1"})

    # a rerun resumes: every case is found in its device's store, none is run again.
    # PoCL caches every program it builds under XDG_CACHE_HOME (pyopencl leaves caching
    # to it): the rerun's, fresh, must stay without a program
    before, logs = {}, {}
    for instance in ("#0", "#1"):
        store = calibration.paths(instance)[0]
        before[instance] = _rows(store)
        logs[instance] = store.with_suffix(".log").read_text()
    cache = tmp_path / "cache"
    again = subprocess.run([sys.executable, "-m", "kernelcast", *CALIBRATE],
                           cwd=calibration.folder,
                           env={**_env(), "XDG_CACHE_HOME": str(cache)},
                           capture_output=True, text=True, timeout=600, check=False)
    assert again.returncode == 0, again.stderr[-3000:]
    assert len(again.stdout.splitlines()) == 2
    assert (cache / "pocl" / "kcache").is_dir()  # PoCL was loaded, with this cache
    assert not list((cache / "pocl" / "kcache").glob("*/*"))  # and built nothing
    for instance in ("#0", "#1"):
        store = calibration.paths(instance)[0]
        assert _rows(store) == before[instance]  # the same rows: none added or replaced
        log = store.with_suffix(".log").read_text()
        assert log.startswith(logs[instance])
        # the rerun's progress: stored cases skipped, and no job run (a job's line, if
        # any, says it was only looked up while choosing sizes)
        added = log[len(logs[instance]):].splitlines()
        skipped = [line for line in added if re.fullmatch(r"\d+ stored cases? skipped", line)]
        assert skipped, added
        jobs = [line for line in added if re.match(r"\[\d+/\d+ ", line)]
        looked_up = ": measured above, while choosing sizes"
        assert all(line.endswith(looked_up) for line in jobs), jobs


HOLD_FIRST = textwrap.dedent('''
    import time
    from kernelcast.measure.devices import find_device
    from kernelcast.measure.lock import DeviceLock

    lock = DeviceLock(find_device("#0"))
    print("holding", flush=True)
    time.sleep(600)
''')


def test_one_busy_device_does_not_stop_the_others_calibration(calibration):
    # #0 held by another campaign: #1 is calibrated (here: resumed), #0 named in one line
    holder = subprocess.Popen([sys.executable, "-c", HOLD_FIRST], env=_env(),
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        done, _ = _kernelcast(*CALIBRATE, cwd=calibration.folder, timeout=600)
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stdout.startswith("#1: profile written to") and "#0" not in done.stdout
    errors = [line for line in done.stderr.splitlines() if line.startswith("kernelcast:")]
    assert errors == [next(e for e in errors if e.startswith("kernelcast: error: #0: "))]
    assert f"is being measured by process {holder.pid}" in errors[0]


def test_a_profile_fitted_from_a_bound_store_keeps_its_instance(calibration, tmp_path):
    store, _ = calibration.paths("#1")
    model = fit_store(store, "paper", "test-cpu")
    assert model.provenance_["instance"] == "#1"
    path = save_profile(model, tmp_path / "p.json")
    assert json.loads(Path(path).read_text())["instance"] == "#1"
    assert load_profile(path).provenance_["instance"] == "#1"
    # a profile made before instances existed: bound to none
    older = PROFILES / "nvidia-h100-80gb-hbm3-cuda-extended.json"
    assert "instance" not in json.loads(older.read_text())
    assert load_profile(older).provenance_["instance"] == ""


@pytest.mark.parametrize(("extra", "message"), [
    (("--devices", "all", "--db", "x.sqlite"), "not with --db or --profile"),
    (("--devices", "all", "--profile", "x.json"), "not with --db or --profile"),
    (("--devices", "3"), "--devices 3: this host has 2 × pthread-"),
    (("--devices", "zero"), "--devices zero: expected all or a positive number"),
    (("--devices", "0"), "--devices 0: expected all or a positive number"),
])
def test_calibrate_devices_usage_errors_are_one_line(two_devices, tmp_path, extra, message):
    done, _ = _kernelcast("calibrate", "--device", "pthread", *extra, cwd=tmp_path,
                          timeout=120)
    _usage_error(done, message)
    if extra[1] == "3":
        assert "(#0, #1)" in done.stderr
    assert not list(tmp_path.iterdir())  # refused before anything was written

# }}}


# {{{ tune --devices, and tune with a bound profile

@pytest.fixture
def kernel(tmp_path):
    (tmp_path / "k.py").write_text(FACTORY)
    (tmp_path / "space.toml").write_text(SPACE_TOML)
    return tmp_path


def _tune(folder, profile, *extra):
    return _kernelcast("tune", "k.py:build", "--param", "n=24", "m=40", "--space",
                       "space.toml", "--profile", profile, *extra, cwd=folder)[0]


def _warnings(err):
    """The warnings about where the profile was calibrated (a profile of the test suite
    also has no weight for some of the variants' properties, which is warned of too)."""
    return [line for line in err.splitlines() if line.startswith("kernelcast: warning:")
            and "no weight for" not in line]


def test_tune_on_both_devices_end_to_end(calibration, kernel):
    _, profile = calibration.paths("#1")
    done = _tune(kernel, profile, "--measure-top", "4", "--devices", "all", "--db",
                 "t.sqlite")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "on 2 devices (#0, #1), a worker each" in done.stderr
    assert _warnings(done.stderr) == [
        "kernelcast: warning: the profile was calibrated on #1 alone; it ranks for every "
        "device measured here"]
    [winner] = [x for x in done.stdout.splitlines() if x.startswith("winner: rank ")]
    assert "measured" in winner
    rows = _rows(kernel / "t.sqlite")
    assert len(rows) == 4 and len({r["case_name"] for r in rows}) == 4
    assert {r["status"] for r in rows} <= set(TIMED)
    assert all(r["min_s"] > 0 for r in rows)


def test_tune_runs_on_the_device_its_profile_was_calibrated_on(calibration, kernel,
                                                                two_devices):
    _, profile = calibration.paths("#1")
    first, second = two_devices
    # with #1 held by this process, tune without --device is refused: it wants #1
    lock = DeviceLock(second)
    try:
        busy = _tune(kernel, profile, "--measure-top", "1", "--db", "busy.sqlite")
    finally:
        lock.release()
    assert busy.returncode == 1, busy.stderr[-2000:]
    assert busy.stderr.count("\n") == 1 and "Traceback" not in busy.stderr
    assert f"{second.name} #1 is being measured by process {os.getpid()}" in busy.stderr
    assert not (kernel / "busy.sqlite").exists()
    # with #0 taken instead, it measures on #1, where it belongs: no warning
    lock = DeviceLock(first)
    try:
        done = _tune(kernel, profile, "--measure-top", "2", "--db", "t.sqlite")
    finally:
        lock.release()
    assert done.returncode == 0, done.stderr[-2000:]
    assert not _warnings(done.stderr)
    assert "winner: rank " in done.stdout
    assert {r["status"] for r in _rows(kernel / "t.sqlite")} <= set(TIMED)


def test_tune_on_another_device_than_its_profiles_warns_in_one_line(calibration, kernel):
    _, profile = calibration.paths("#1")
    done = _tune(kernel, profile, "--measure-top", "1", "--device", "#0", "--db", "t.sqlite")
    assert done.returncode == 0, done.stderr[-2000:]
    assert _warnings(done.stderr) == [
        "kernelcast: warning: the profile was calibrated on #1, not on #0, where the "
        "variants are measured"]
    same = _tune(kernel, profile, "--measure-top", "1", "--device", "#1", "--db", "t.sqlite")
    assert same.returncode == 0, same.stderr[-2000:]
    assert not _warnings(same.stderr)

# }}}


# {{{ what two H100s of one host gave (data/h100x2, benchmarks/multi_device.py)

GPU_DATA = Path(__file__).resolve().parent.parent / "data" / "h100x2"
H100S = ("pci:0000:00:06", "pci:0000:00:07")


def _unpacked(path: Path, folder: Path) -> Path:
    import lzma

    out = folder / path.name.removesuffix(".xz")
    out.write_bytes(lzma.open(path).read())
    return out


def test_each_h100s_profile_and_store_are_bound_to_it(tmp_path):
    calibration = GPU_DATA / "calibration"
    for instance, other in (H100S, H100S[::-1]):
        stem = f"nvidia-h100-80gb-hbm3-cuda-{instance.replace(':', '-')}"
        model = load_profile(calibration / f"{stem}-extended.json")
        assert model.provenance_["instance"] == instance
        db = _unpacked(calibration / f"{stem}.sqlite.xz", tmp_path)
        with Store(db) as store:
            assert store.instance == instance
            identity = {**store.identity, "compute_units": store.compute_units}
            suites = {r["suite"] for r in store.rows()}
        assert suites == {"measurement", "extension", "test"}
        with pytest.raises(StoreMismatchError, match=f"holds measurements of {instance}"):
            Store(db, {**identity, "instance": other})


def test_the_killed_worker_run_stored_every_variant_once(tmp_path):
    # measured on two H100s while one worker was killed (SIGKILL) after 60 rows
    from kernelcast.tune.families import FAMILIES
    from kernelcast.tune.space import invalid, variant_key

    fam = FAMILIES["stencil2d"]
    valid = {f"stencil2d/{variant_key(v)}" for v in fam.space.variants()
             if not invalid(v, fam.space, max_group_size=1024)}
    db = _unpacked(GPU_DATA / "stencil2d-killed-worker-cuda.sqlite.xz", tmp_path)
    with Store(db) as store:
        names = [r["case_name"] for r in store.rows()]
        statuses = {r["status"] for r in store.rows()}
    assert len(names) == len(set(names)) == len(valid) and set(names) == valid
    assert statuses == {"ok"}
    record = next(r for r in json.loads((GPU_DATA / "multi-device.json").read_text())["records"]
                  if r.get("killed"))
    assert record["killed"]["restarted"] and record["measured"] == len(valid)

# }}}
