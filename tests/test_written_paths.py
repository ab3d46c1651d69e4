"""Paths kernelcast reads or writes as files: anything but a regular file (a FIFO, a device
node) is refused in one line naming what it is, never opened (a FIFO would hang), replaced
or removed; an empty regular file given as a store is filled in place; a damaged
properties-cache entry that is not UTF-8 is replaced; files nested too deeply are refused
in one line."""

import json
import os
import socket
import stat
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import pytest

from kernelcast.cli import main
from kernelcast.errors import KernelcastError, KernelcastWarning, ProfileError, UsageError
from kernelcast.measure.store import SCHEMA_VERSION, Store

REPO = Path(__file__).resolve().parent.parent
SCALE = f"{REPO / 'examples' / 'kernels.py'}:scale"
IDENTITY = {"backend": "opencl", "device": "Test Device", "driver": "1.0"}
NULL = os.makedev(1, 3)  # the numbers of /dev/null: a clone of it, made in tmp_path


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _device(path: Path) -> Path:
    try:
        os.mknod(path, stat.S_IFCHR | 0o644, NULL)
    except PermissionError:
        pytest.skip("making a device node needs root")
    return path


NODES = {"fifo": (_fifo, "a FIFO (named pipe)"), "device": (_device, "a character device")}


@pytest.fixture(params=sorted(NODES))
def node(request):
    """(make, words): makes a FIFO or a /dev/null clone at a path; what the error calls it."""
    return NODES[request.param]


def _still_there(path: Path, words: str) -> None:
    info = os.lstat(path)
    if words.startswith("a FIFO"):
        assert stat.S_ISFIFO(info.st_mode)
    else:
        assert stat.S_ISCHR(info.st_mode) and info.st_rdev == NULL


def _finishes(call, path: Path, seconds: float = 30):
    """call(), in a thread that is given *seconds*; where it hangs (opening the FIFO at
    *path*), the FIFO's other end is opened to let it go and the test fails."""
    outcome = {}

    def run():
        try:
            outcome["value"] = call()
        except BaseException as err:  # noqa: BLE001 - handed to the test
            outcome["error"] = err

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        for _ in range(100):
            for flags in (os.O_WRONLY, os.O_RDONLY):  # whichever end it waits for
                try:
                    os.close(os.open(path, flags | os.O_NONBLOCK))
                except OSError:
                    pass
            thread.join(0.1)
            if not thread.is_alive():
                break
        pytest.fail(f"hung on {path}")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _refused(call, path, words, what, error=UsageError):
    with pytest.raises(error) as info:
        _finishes(call, path)
    message = str(info.value)
    assert "\n" not in message
    assert message == f"{path} is {words}, not a {what}"
    _still_there(path, words)


# {{{ 1. the measurement store (--db of every verb), measure and fit

def test_a_store_path_that_is_a_fifo_or_device_is_refused_and_left_as_it_is(tmp_path, node):
    make, words = node
    path = make(tmp_path / "db.sqlite")
    for identity in (IDENTITY, None):
        _refused(lambda identity=identity: Store(path, identity), path, words,
                 "measurement store")
    assert sorted(os.listdir(tmp_path)) == ["db.sqlite"]  # no store made beside it


def test_measure_into_a_fifo_exits_2_at_once(tmp_path, pocl_device):
    """In a process of its own: the old code opened the FIFO and waited forever, holding
    the device's lock."""
    fifo = _fifo(tmp_path / "db.sqlite")
    result = subprocess.run(
        [sys.executable, "-m", "kernelcast", "measure", "--kernel", SCALE, "--param",
         "n=1000", "--runs", "6", "--device", "portable", "--db", str(fifo)],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if "error" in line]
    assert errors == [f"kernelcast: error: {fifo} is a FIFO (named pipe), not a "
                      "measurement store"]
    assert "Traceback" not in result.stderr
    _still_there(fifo, "a FIFO")


def test_measure_into_a_device_node_exits_2_and_leaves_it(tmp_path, pocl_device, capsys):
    """Run as root with --db /dev/null, measure replaced the machine's /dev/null."""
    device = _device(tmp_path / "null")
    assert main(["measure", "--kernel", SCALE, "--param", "n=1000", "--runs", "6",
                 "--device", "portable", "--db", str(device)]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"kernelcast: error: {device} is a character device, not a measurement store")
    _still_there(device, "a character device")
    assert os.listdir(tmp_path) == ["null"]


def test_fit_from_a_fifo_or_device_exits_2(tmp_path, node, capsys):
    make, words = node
    path = make(tmp_path / "db.sqlite")
    assert main(["fit", "--db", str(path), "--profile", str(tmp_path / "p.json")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"kernelcast: error: {path} is {words}, not a measurement store")
    _still_there(path, words)


def test_fit_to_a_profile_path_that_is_a_fifo_or_device_is_refused(tmp_path, node):
    from kernelcast.profile import check_profile_path

    make, words = node
    path = make(tmp_path / "p.json")
    _refused(lambda: check_profile_path(path), path, words, "profile", ProfileError)


def test_an_empty_regular_file_becomes_the_store_in_place(tmp_path):
    """Not unlinked and linked again: the file keeps its inode, mode and hard links, and a
    symbolic link to it stays a link to the store."""
    target = tmp_path / "empty.sqlite"
    target.touch()
    target.chmod(0o600)
    link = tmp_path / "link.sqlite"
    link.symlink_to(target)
    hard = tmp_path / "hard.sqlite"
    os.link(target, hard)
    inode = target.stat().st_ino
    with Store(link, IDENTITY) as store:
        assert store.schema_version == SCHEMA_VERSION and store.identity == IDENTITY
    assert link.is_symlink() and target.stat().st_ino == inode == hard.stat().st_ino
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    with Store(hard) as store:
        assert store.identity == IDENTITY
    assert sorted(os.listdir(tmp_path)) == ["empty.sqlite", "hard.sqlite", "link.sqlite"]


KILLED_WHILE_FILLING = """
import os, sqlite3, sys
from kernelcast.measure import store
conn = sqlite3.connect(sys.argv[1])
conn.execute("PRAGMA cache_size = 1")  # pages reach the file before the commit
conn.execute("BEGIN EXCLUSIVE")
store._initialize(conn, {"backend": "b", "device": "d", "driver": "1"})
conn.executemany("INSERT INTO kernels VALUES (?, 't', ?)", [(str(i), "x" * 3000)
                                                            for i in range(200)])
os._exit(9)
"""


def test_a_fill_killed_before_its_commit_is_rolled_back_and_done_again(tmp_path):
    path = tmp_path / "s.sqlite"
    path.touch()
    subprocess.run([sys.executable, "-c", KILLED_WHILE_FILLING, str(path)], check=False,
                   timeout=60)
    assert path.stat().st_size > 0 and (tmp_path / "s.sqlite-journal").exists()
    with Store(path, IDENTITY) as store:
        assert store.identity == IDENTITY and store.rows() == []
        assert store.code("0") is None  # the killed transaction's rows are gone
    assert os.listdir(tmp_path) == ["s.sqlite"]


def test_creation_leaves_alone_a_fifo_named_like_a_dead_creators_temporary(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    fifo = _fifo(tmp_path / f".s.sqlite.{dead}-0a1b2c3d.{socket.gethostname()}.creating")
    Store(tmp_path / "s.sqlite", IDENTITY).close()
    _still_there(fifo, "a FIFO")

# }}}


# {{{ 1. every reader of a named file

def _readers(tmp_path):
    """(call on a path, what the file should have been) for every file kernelcast reads."""
    from kernelcast.frontends.files import load_factory
    from kernelcast.models.grophecy.search import load_hints
    from kernelcast.hardware import load_hardware, load_registers
    from kernelcast.profile import load_profile
    from kernelcast.tune.kerneltuner import import_cache
    from kernelcast.tune.space import load_space

    return {
        "profile": (load_profile, "profile"),
        "hardware": (load_hardware, "hardware description"),
        "registers": (load_registers, "registers file"),
        "space": (load_space, "space file"),
        "hints": (load_hints, "hints file"),
        "kernel": (lambda p: load_factory(f"{p}:build"), "Python file"),
        "kerneltuner": (lambda p: import_cache(p, tmp_path / "kt.sqlite"),
                        "Kernel Tuner cache file"),
    }


@pytest.mark.parametrize("reader", ["profile", "hardware", "registers", "space", "hints",
                                    "kernel", "kerneltuner"])
def test_a_file_to_read_that_is_a_fifo_or_device_is_refused(tmp_path, node, reader):
    make, words = node
    call, what = _readers(tmp_path)[reader]
    path = make(tmp_path / ("k.py" if reader == "kernel" else "input.json"))
    error = ProfileError if reader in ("profile", "hardware", "registers") else UsageError
    _refused(lambda: call(path), path, words, what, error)
    assert sorted(os.listdir(tmp_path)) == [path.name]


@pytest.mark.parametrize("verb", ["project", "tune"])
def test_a_fifo_for_hints_or_space_exits_2(tmp_path, verb, capsys):
    """The CLI path of the TOML readers, on the main thread (the FIFO has a writer waiting
    in a thread, so that the old code, which opened it, ends rather than hangs)."""
    fifo = _fifo(tmp_path / "file.toml")
    args = (["project", str(REPO / "examples" / "skeletons" / "matmul.sk"), "--hardware",
             "h100", "--hints", str(fifo)] if verb == "project" else
            ["tune", SCALE, "--param", "n=1000", "--model", "hong-kim", "--hardware", "h100",
             "--space", str(fifo)])
    stop = threading.Event()

    def writer():  # lets a blocked reader go: what it reads is not TOML
        while not stop.is_set():
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                stop.wait(0.05)
                continue
            os.write(fd, b"= not toml")
            os.close(fd)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        status = main(args)
    finally:
        stop.set()
        thread.join()
    what = "hints file" if verb == "project" else "space file"
    assert (status, capsys.readouterr().err.strip()) == (
        2, f"kernelcast: error: {fifo} is a FIFO (named pipe), not a {what}")

# }}}


# {{{ 1. every writer of a named file

def test_report_files_that_are_fifos_or_devices_are_refused_before_any_is_written(
        tmp_path, node):
    from kernelcast.report import write_report

    make, words = node
    out = tmp_path / "report"
    out.mkdir()
    path = make(out / "table1.csv")
    _refused(lambda: write_report(out, None, None), path, words, "file of the report")
    assert os.listdir(out) == ["table1.csv"]  # report.md, written first, was not


def test_a_kernel_tuner_cache_to_write_that_is_a_fifo_or_device_is_refused(tmp_path, node):
    from kernelcast.tune.kerneltuner import export_cache

    make, words = node
    store = tmp_path / "tuned.sqlite"
    with Store(store, IDENTITY) as s:
        s.add({"key": "k", "case_name": "mm/j.group=16", "params": {"n": 4096},
               "kernelcast_version": "t", "status": "ok", "times_s": [1e-3], "dropped": 0,
               "min_s": 1e-3, "median_s": 1e-3})
    path = make(tmp_path / "cache.json")
    _refused(lambda: export_cache(store, "mm", path), path, words, "Kernel Tuner cache file")
    assert sorted(os.listdir(tmp_path)) == ["cache.json", "tuned.sqlite"]


def test_a_lock_file_that_is_a_fifo_device_or_link_is_refused(tmp_path, node, monkeypatch):
    from kernelcast.measure.lock import DeviceLock

    make, words = node
    monkeypatch.setenv("KERNELCAST_LOCK_DIR", str(tmp_path))
    path = make(tmp_path / "Test_Device.lock")
    _refused(lambda: DeviceLock("Test Device"), path, words, "lock file")
    victim = tmp_path / "notes.txt"
    victim.write_text("mine")
    (tmp_path / "Other.lock").symlink_to(victim)
    with pytest.raises(UsageError) as info:
        DeviceLock("Other")
    assert str(info.value) == f"{tmp_path / 'Other.lock'} is a symbolic link, not a lock file"
    assert victim.read_text() == "mine"


def test_an_existing_lock_folder_keeps_its_mode(tmp_path, monkeypatch):
    from kernelcast.measure.lock import DeviceLock

    folder = tmp_path / "locks"
    folder.mkdir(mode=0o755)
    monkeypatch.setenv("KERNELCAST_LOCK_DIR", str(folder))
    DeviceLock("Test Device").release()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755
    monkeypatch.setenv("KERNELCAST_LOCK_DIR", str(folder / "made"))
    DeviceLock("Test Device").release()
    assert stat.S_IMODE((folder / "made").stat().st_mode) == 0o1777

# }}}


# {{{ 1 and 2. the properties cache

def _entry_path(folder, knl):
    from kernelcast.properties import cache

    return folder / f"{cache._file_name(cache._key(knl, None))}.json"


def test_a_cache_entry_that_is_a_fifo_or_device_only_costs_the_caching(tmp_path, node):
    from kernelcast.properties import cached_properties
    from kernelcast.suites import kernels

    make, words = node
    path = make(_entry_path(tmp_path, kernels.scale()))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        props = _finishes(lambda: cached_properties(kernels.scale(), cache_dir=tmp_path),
                          path)
    assert props.evaluate({"n": 5000})
    [warning] = [str(w.message) for w in caught if issubclass(w.category, KernelcastWarning)]
    assert warning == (f"cannot read the properties cache: {path} is {words}, not a "
                       "properties cache entry")
    _still_there(path, words)
    assert os.listdir(tmp_path) == [path.name]


def test_a_cache_entry_that_is_not_utf8_is_replaced(tmp_path):
    """Every later tune failed with UnicodeDecodeError until the file was deleted by hand."""
    from kernelcast.properties import cached_properties
    from kernelcast.suites import kernels

    fresh = cached_properties(kernels.scale(), cache_dir=tmp_path)
    path = _entry_path(tmp_path, kernels.scale())
    path.write_bytes(b"\xff\xfe" + path.read_bytes()[2:])
    with pytest.warns(KernelcastWarning, match="damaged properties cache entry .*UnicodeDecode"):
        again = cached_properties(kernels.scale(), cache_dir=tmp_path)
    assert again.evaluate({"n": 5000}) == fresh.evaluate({"n": 5000})
    json.loads(path.read_text(encoding="utf-8"))  # written whole again
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cached_properties(kernels.scale(), cache_dir=tmp_path)

# }}}


# {{{ 3. files nested too deeply

DEEP_TOML = {"arrays": "a = " + "[" * 3000 + "]" * 3000 + "\n",
             "tables": "a = " + "{b = " * 3000 + "}" * 3000 + "\n"}


@pytest.mark.parametrize("nesting", sorted(DEEP_TOML))
def test_toml_nested_3000_deep_is_one_line(tmp_path, nesting, capsys):
    path = tmp_path / "deep.toml"
    path.write_text(DEEP_TOML[nesting])
    assert main(["project", str(REPO / "examples" / "skeletons" / "matmul.sk"),
                 "--hardware", "h100", "--hints", str(path)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"kernelcast: error: {path}: not a TOML hints file: nested too deeply")
    from kernelcast.tune.space import load_space

    with pytest.raises(UsageError) as info:
        load_space(path)
    assert str(info.value) == f"{path}: not a TOML space file: nested too deeply"


def test_json_nested_100000_deep_is_one_line(tmp_path):
    from kernelcast.frontends.files import read_json_file
    from kernelcast.tune.kerneltuner import import_cache

    path = tmp_path / "deep.json"
    path.write_text("[" * 100000)
    with pytest.raises(ProfileError) as info:
        read_json_file(path, "profile")
    assert str(info.value) == f"{path} is not a JSON profile: nested too deeply"
    with pytest.raises(KernelcastError) as info:
        import_cache(path, tmp_path / "kt.sqlite")
    assert str(info.value) == (f"{path}: not a Kernel Tuner cache file (not JSON: nested too "
                               "deeply)")
    assert not (tmp_path / "kt.sqlite").exists()

# }}}
