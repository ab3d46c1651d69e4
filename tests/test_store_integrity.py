"""A store that never lies: damaged rows are reported and left out of fitting (checksums
of schema 3; times that are not the minimum and median of their runs in every schema),
creation is atomic and safe against concurrent creators and SIGKILL, and every failure
of SQLite or the file system is one line naming the path. All on real SQLite files."""

import ctypes
import errno
import multiprocessing
import os
import random
import re
import shutil
import signal
import socket
import sqlite3
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from store_rows import IDENTITY, make_row

from kernelcast.errors import DamagedRowsWarning, StoreError, UsageError
from kernelcast.fitting.dataset import load_dataset
from kernelcast.measure.store import (
    SCHEMA_VERSION,
    Store,
    StoreMismatchError,
    _schema,
    rows_added,
)

COMMITTED = Path(__file__).resolve().parent.parent / "data" / "h100" / "opencl.sqlite"
RESUME = ("rows were stored by this run, nothing was lost; {} and run the same command "
          "again to resume")


def _flip(x: float, bit: int = 0) -> float:
    """*x* with one bit of its IEEE double flipped."""
    (n,) = struct.unpack("<Q", struct.pack("<d", x))
    return struct.unpack("<d", struct.pack("<Q", n ^ (1 << bit)))[0]


def _committed_copy(tmp_path) -> Path:
    copy = tmp_path / "v1.sqlite"
    shutil.copy(COMMITTED, copy)
    return copy


def _v3_store(tmp_path, count=40) -> Path:
    """A new store (schema 3) with the first *count* ok rows of the measurement suite of a
    committed store."""
    with Store(_committed_copy(tmp_path)) as old:
        rows = [r for r in old.rows() if r["suite"] == "measurement" and r["status"] == "ok"]
        identity = old.identity
    path = tmp_path / "v3.sqlite"
    with Store(path, identity) as new:
        for row in rows[:count]:
            assert new.add({k: v for k, v in row.items() if k not in ("id", "damage")})
    return path


def _tamper(path, sql, *args):
    """Change a row behind the store's back: without its triggers and CHECKs."""
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("DROP TRIGGER IF EXISTS measurements_append_only_update")
    raw.execute("PRAGMA ignore_check_constraints = ON")
    raw.execute(sql, args)
    raw.close()


def _replace_bytes(path, old: bytes, new: bytes):
    data = path.read_bytes()
    assert data.count(old) == 1
    path.write_bytes(data.replace(old, new))


def _unique_in_file(path, rows, encode):
    """The first of *rows* whose encoded value occurs once in the file at *path*."""
    data = path.read_bytes()
    return next(r for r in rows if data.count(encode(r)) == 1)


# {{{ 1. damaged rows: reported, never served as data, left out of fitting

@pytest.mark.parametrize("change", [
    ("min_s", lambda r: _flip(r["min_s"])),
    ("median_s", lambda r: _flip(r["median_s"], 3)),
    ("params", lambda r: r["params"].replace("1", "2", 1)),
    ("recorded_at", lambda r: "2020" + r["recorded_at"][4:]),
    ("status", lambda r: "unstable"),
])
def test_a_changed_value_in_a_schema_3_store_is_reported_and_left_out(tmp_path, change):
    column, new_value = change
    path = _v3_store(tmp_path)
    with Store(path) as s:
        rows = s.rows()
        before = len(load_dataset(s, "measurement"))
    assert before == len(rows) and all(r["damage"] is None for r in rows)
    victim = rows[5]
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    stored = dict(conn.execute("SELECT * FROM measurements WHERE id = ?",
                               (victim["id"],)).fetchone())  # JSON columns as text
    conn.close()
    _tamper(path, f"UPDATE measurements SET {column} = ? WHERE id = ?",
            new_value(stored), victim["id"])
    with Store(path) as s:
        assert s.damaged() == [(victim["id"], victim["case_name"],
                                "its checksum does not match its contents")]
        assert s.get(victim["key"])["damage"] == "its checksum does not match its contents"
        assert [r["damage"] is None for r in s.rows()] == [r is not victim for r in rows]
        with pytest.warns(DamagedRowsWarning, match=re.escape(
                f"1 damaged row of {path} left out ({victim['case_name']})")):
            dataset = load_dataset(s, "measurement")
    assert len(dataset) == before - 1
    assert victim["case_name"] not in set(dataset.info.case_name)


def test_a_flipped_bit_in_the_file_of_a_committed_schema_1_store_is_reported(tmp_path):
    """No checksum in schema 1, but a min_s that is not the minimum of its runs is caught;
    the bit is flipped in the file's bytes (SQLite stores a REAL as 8 big-endian bytes)."""
    path = _committed_copy(tmp_path)
    with Store(path) as s:
        rows = s.rows()
        before = len(load_dataset(s, "measurement"))
    timed = [r for r in rows if r["suite"] == "measurement" and r["min_s"] is not None]
    victim = _unique_in_file(path, timed[10:], lambda r: struct.pack(">d", r["min_s"]))
    flipped = _flip(victim["min_s"])
    _replace_bytes(path, struct.pack(">d", victim["min_s"]), struct.pack(">d", flipped))
    with Store(path) as s:
        why = f"min_s {flipped!r} is not the minimum of its runs ({victim['min_s']!r})"
        assert s.damaged() == [(victim["id"], victim["case_name"], why)]
        assert s.get(victim["key"])["damage"] == why
        with pytest.warns(DamagedRowsWarning, match=re.escape(f"1 damaged row of {path}")):
            dataset = load_dataset(s, "measurement")
    assert len(dataset) == before - 1
    assert victim["case_name"] not in set(dataset.info.case_name)


def test_a_schema_1_row_with_broken_json_a_wrong_median_or_a_bad_status_is_damaged(tmp_path):
    path = _committed_copy(tmp_path)
    with Store(path) as s:
        a, b, c = [r for r in s.rows() if r["min_s"] is not None][:3]
    _tamper(path, "UPDATE measurements SET times_s = '[1e-05, ' WHERE id = ?", a["id"])
    _tamper(path, "UPDATE measurements SET median_s = ? WHERE id = ?",
            _flip(b["median_s"]), b["id"])
    _tamper(path, "UPDATE measurements SET status = 'bogus' WHERE id = ?", c["id"])
    with Store(path) as s:
        assert s.damaged() == [
            (a["id"], a["case_name"], "times_s is not JSON"),
            (b["id"], b["case_name"], (f"median_s {_flip(b['median_s'])!r} is not the "
                                       f"median of its runs ({b['median_s']!r})")),
            (c["id"], c["case_name"], "its status 'bogus' is not one of schema 1")]
        with pytest.warns(DamagedRowsWarning, match=r"^3 damaged rows of .* left out "
                          rf"\({re.escape(a['case_name'])}, "):
            load_dataset(s, "measurement")


def test_text_that_is_not_utf8_marks_the_row_damaged_instead_of_failing(tmp_path):
    path = _v3_store(tmp_path, count=10)
    with Store(path) as s:
        rows = s.rows()
    victim = _unique_in_file(path, rows, lambda r: r["case_name"].encode())
    name = victim["case_name"].encode()
    _replace_bytes(path, name, name[:-1] + b"\xff")
    with Store(path) as s:
        assert s.damaged() == [(victim["id"], victim["case_name"][:-1] + "\ufffd",
                                "case_name is not UTF-8 text")]
        assert len(s.rows()) == len(rows)


def test_a_row_that_would_read_back_as_damaged_is_not_written(tmp_path):
    with Store(tmp_path / "s.sqlite", IDENTITY) as s:
        with pytest.raises(ValueError, match=r"case-k1 is not consistent: min_s 2e-05 is "
                           r"not the minimum of its runs \(1e-05\)"):
            s.add(make_row(min_s=2e-5))
        with pytest.raises(ValueError, match="has a time but not the runs it came from"):
            s.add(make_row(times_s=None))
        assert s.rows() == [] and s.added == 0
        assert s.add(make_row(p=4.0, min_s=1e-5)) == 1  # stored as SQLite gives it back
        assert s.damaged() == [] and s.get("k1")["p"] == 4


def _schema_2_store(path) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(_schema(2))
    with conn:
        conn.executemany("INSERT INTO meta VALUES (?, ?)", [
            ("schema_version", "2"), ("created_at", "2026-01-01T00:00:00+00:00"),
            *IDENTITY.items()])
    conn.close()
    return path


def test_a_schema_2_store_reads_and_resumes_as_before_and_refuses_crashed(tmp_path):
    path = _schema_2_store(tmp_path / "v2.sqlite")
    with Store(path, IDENTITY) as s:
        assert s.schema_version == 2 and "crashed" not in s.statuses
        s.add(make_row("k1"))
        s.add(make_row("k2", "failed", message="why"))
        with pytest.raises(StoreMismatchError) as info:
            s.add(make_row("k3", "crashed", message="killed by signal 9 (SIGKILL)"))
        assert [(r["key"], r["damage"]) for r in s.rows()] == [("k1", None), ("k2", None)]
        assert "checksum" not in s.rows()[0]
    assert str(info.value) == (
        f"{path} has schema version 2, which cannot record the status 'crashed' (case-k3); "
        f"measure into a new store (another --db), which is created with schema version "
        f"{SCHEMA_VERSION}")
    with Store(path) as s:
        assert s.meta["schema_version"] == "2"
    with Store(tmp_path / "v3.sqlite", IDENTITY) as s:
        s.add(make_row("k3", "crashed", message="killed by signal 9 (SIGKILL)"))
        assert s.get("k3")["status"] == "crashed" and s.get("k3")["damage"] is None

# }}}


# {{{ 2. atomic creation: concurrent creators, SIGKILL, leftovers

def _create_at_once(barrier, paths, number, queue, hard_links):
    if not hard_links:
        def no_link(*args, **kwargs):
            raise OSError(errno.EPERM, "Operation not permitted")
        os.link = no_link  # this process only: as on a file system without hard links
    results = []
    for path in paths:
        barrier.wait(timeout=60)
        try:
            with Store(path, IDENTITY) as s:
                results.append((s.schema_version, s.add(make_row(f"p{number}")),
                                s.add(make_row("same"))))
        except Exception as err:  # noqa: BLE001 - reported to the test
            results.append(repr(err))
    queue.put((number, results))


@pytest.mark.parametrize("hard_links", [True, False], ids=["link", "no-hard-links"])
@pytest.mark.parametrize("leftover", [False, True], ids=["new", "empty-file-there"])
def test_processes_creating_one_store_at_once_all_succeed(tmp_path, hard_links, leftover):
    processes, repeats = 8, 4
    paths = [tmp_path / f"s{i}.sqlite" for i in range(repeats)]
    if leftover:
        for path in paths:
            path.touch()
    context = multiprocessing.get_context("fork")
    barrier, queue = context.Barrier(processes), context.Queue()
    workers = [context.Process(target=_create_at_once,
                               args=(barrier, paths, n, queue, hard_links))
               for n in range(processes)]
    for worker in workers:
        worker.start()
    results = dict(queue.get(timeout=120) for _ in workers)
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    for i, path in enumerate(paths):
        per_path = [results[n][i] for n in range(processes)]
        assert all(isinstance(r, tuple) and r[0] == SCHEMA_VERSION for r in per_path), per_path
        assert all(isinstance(r[1], int) for r in per_path)
        assert sorted(r[2] is None for r in per_path) == [False] + [True] * (processes - 1)
        with Store(path) as s:
            assert len(s.rows()) == processes + 1 and s.damaged() == []
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")) == \
        sorted(p.name for p in paths)


def _create_forever(folder, ready):
    ready.set()
    for i in range(10**9):
        Store(folder / f"s{i}.sqlite", IDENTITY).close()


def test_a_creator_killed_at_any_moment_leaves_no_or_a_complete_store(tmp_path):
    """Eight processes create stores one after another and are killed with SIGKILL at
    random moments; every store there is complete, and creating again works."""
    randomly = random.Random(21)
    context = multiprocessing.get_context("fork")
    folders = [tmp_path / f"run{attempt}" for attempt in range(8)]
    children = []
    for folder in folders:
        folder.mkdir()
        ready = context.Event()
        children.append(context.Process(target=_create_forever, args=(folder, ready)))
        children[-1].start()
        assert ready.wait(timeout=60)
        time.sleep(randomly.uniform(0, 0.05))
        children[-1].kill()  # SIGKILL
    for child, folder in zip(children, folders, strict=True):
        child.join()
        assert child.exitcode == -signal.SIGKILL
        stores = sorted(folder.glob("s*.sqlite"))
        for path in stores:
            assert path.stat().st_size > 0
            with Store(path) as s:
                assert s.schema_version == SCHEMA_VERSION and s.identity == IDENTITY
                assert s.rows() == []
        for i in range(len(stores) + 2):  # creating again works and sweeps up
            with Store(folder / f"s{i}.sqlite", IDENTITY) as s:
                assert s.identity == IDENTITY
        assert sorted(os.listdir(folder)) == sorted(f"s{i}.sqlite"
                                                    for i in range(len(stores) + 2))


def test_an_empty_file_is_no_store_and_is_replaced_on_creation(tmp_path):
    path = tmp_path / "s.sqlite"
    path.touch()
    with pytest.raises(UsageError) as info:
        Store(path)
    assert str(info.value) == f"{path} is empty (0 bytes), not a measurement store"
    with Store(path, IDENTITY) as s:
        assert s.schema_version == SCHEMA_VERSION and s.identity == IDENTITY


def test_temporary_files_of_dead_processes_are_removed_and_others_kept(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    host = socket.gethostname()
    stale = [tmp_path / f".s.sqlite.{dead}-0a1b2c3d.{host}.creating",
             tmp_path / f".other.sqlite.{dead}-0a1b2c3d.{host}.creating"]
    kept = [tmp_path / f".s.sqlite.{os.getpid()}-0a1b2c3d.{host}.creating",  # alive
            tmp_path / f".s.sqlite.{dead}-0a1b2c3d.other-host.creating",  # unknown
            tmp_path / "s.sqlite.creating"]  # not named as kernelcast names them
    for leftover in stale + kept:
        leftover.write_bytes(b"half a store")
    Store(tmp_path / "s.sqlite", IDENTITY).close()
    assert [p.exists() for p in stale + kept] == [False, False, True, True, True]
    kept[0].unlink()
    Store(tmp_path / "s.sqlite").close()  # reading removes nothing
    Store(tmp_path / "s.sqlite", IDENTITY).close()  # writing sweeps
    assert [p.exists() for p in kept] == [False, True, True]

# }}}


# {{{ 3. every failure of SQLite or the OS: one line with the path

def _one_line(err) -> str:
    message = str(err)
    assert "\n" not in message
    return message


def test_a_directory_is_no_store(tmp_path):
    for identity in (None, IDENTITY):
        with pytest.raises(UsageError) as info:
            Store(tmp_path, identity)
        assert _one_line(info.value) == f"{tmp_path} is a directory, not a measurement store"


def test_a_path_through_a_file(tmp_path):
    (tmp_path / "file.txt").write_text("text")
    path = tmp_path / "file.txt" / "x.sqlite"
    for identity in (None, IDENTITY):
        with pytest.raises(UsageError) as info:
            Store(path, identity, create_dirs=True)
        assert _one_line(info.value) == f"{path}: {tmp_path / 'file.txt'} is not a directory"
    assert (tmp_path / "file.txt").read_text() == "text"


def test_a_missing_directory_is_created_only_when_asked(tmp_path):
    path = tmp_path / "a" / "b" / "s.sqlite"
    with pytest.raises(UsageError) as info:
        Store(path, IDENTITY)
    assert _one_line(info.value) == f"directory {tmp_path / 'a' / 'b'} does not exist"
    assert not (tmp_path / "a").exists()
    with pytest.raises(UsageError, match="^no measurement store at "):
        Store(path)
    with Store(path, IDENTITY, create_dirs=True) as s:
        assert s.schema_version == SCHEMA_VERSION


def test_a_dropped_table_is_damage(tmp_path):
    path = _committed_copy(tmp_path)
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("DROP TABLE measurements")
    raw.close()
    with pytest.raises(StoreError) as info:
        Store(path)
    assert _one_line(info.value) == f"{path} is damaged: it has no measurements table"


def test_damaged_pages_are_one_line_not_a_traceback(tmp_path):
    path = _committed_copy(tmp_path)
    pages = path.stat().st_size // 4096
    with open(path, "r+b") as f:  # eight pages in the middle of the measurements
        for page in range(pages // 2, pages // 2 + 8):
            f.seek(page * 4096)
            f.write(b"\x07" * 100)
    with pytest.raises(StoreError) as info, Store(path) as s:
        s.rows()
    assert _one_line(info.value) == f"{path} is damaged: database disk image is malformed"


def test_rows_added_counts_this_process_rows_per_store(tmp_path, monkeypatch):
    path = tmp_path / "s.sqlite"
    monkeypatch.chdir(tmp_path)
    with Store(path, IDENTITY) as a, Store("s.sqlite", IDENTITY) as b:
        a.add(make_row("k1"))
        a.add(make_row("k2"))
        b.add(make_row("k3"))
        assert b.add(make_row("k1")) is None
        assert (a.added, b.added) == (2, 1)
    assert rows_added(path) == rows_added("s.sqlite") == 3
    assert rows_added(tmp_path / "other.sqlite") == 0


def test_a_full_disk_stops_with_one_line_saying_what_was_stored(tmp_path):
    """SQLite's SQLITE_FULL, provoked with max_page_count on the store's connection."""
    path = tmp_path / "s.sqlite"
    with Store(path, IDENTITY) as s:
        pages = s._conn.execute("PRAGMA page_count").fetchone()[0]
        s._conn.execute(f"PRAGMA max_page_count = {pages + 3}")
        with pytest.raises(StoreError) as info:
            for i in range(1000):
                s.add(make_row(f"k{i}", "failed", message="x" * 1000))
        stored = s.added
    assert stored > 0
    assert _one_line(info.value) == (f"cannot write to {path} (the disk is full); {stored} "
                                     + RESUME.format("free some space"))
    with Store(path) as s:
        assert len(s.rows()) == stored and s.damaged() == []


FILL_A_TMPFS = """
import subprocess, sys
folder = sys.argv[1]
if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", folder]).returncode:
    sys.exit(77)
from kernelcast.errors import KernelcastError
from kernelcast.measure.store import Store
identity = {"backend": "opencl", "device": "Test Device", "driver": "1.0"}
try:
    with Store(folder + "/s.sqlite", identity) as s:
        for i in range(1000):
            s.add({"key": f"k{i}", "case_name": f"c{i}", "params": {}, "status": "failed",
                   "kernelcast_version": "t", "message": "x" * 2000})
except KernelcastError as err:
    print(s.added, err)
try:
    Store(folder + "/t.sqlite", identity)
except KernelcastError as err:
    print(err)
"""


def test_a_full_tmpfs_stops_with_one_line(tmp_path):
    """A real full file system: a 64 KiB tmpfs in a mount namespace of its own."""
    if not shutil.which("unshare"):
        pytest.skip("needs unshare(1) to mount a small tmpfs")
    folder = tmp_path / "small"
    folder.mkdir()
    result = subprocess.run(["unshare", "-m", sys.executable, "-c", FILL_A_TMPFS, str(folder)],
                            capture_output=True, text=True, timeout=120, check=False)
    if result.returncode in (1, 77) and "Traceback" not in result.stderr:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.strip()}")
    assert result.returncode == 0, result.stderr
    stored, message = result.stdout.splitlines()[0].split(" ", 1)
    assert int(stored) > 0
    assert message == (f"cannot write to {folder}/s.sqlite (the disk is full); {stored} "
                       + RESUME.format("free some space"))
    assert result.stdout.splitlines()[1] == f"cannot create {folder}/t.sqlite: the disk is full"


# Read-only files and directories. Root may write anything; as root, the child process that
# tries drops the capabilities that allow it (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH,
# CAP_FOWNER) from its bounding set before it starts, so file modes bind it as anyone else.

def _drop_root_overrides():
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2, 3):
        if libc.prctl(24, capability, 0, 0, 0):  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def _as_a_plain_user(code, *args):
    """Run Python *code* in a process that file modes apply to."""
    try:
        return subprocess.run([sys.executable, "-c", code, *map(str, args)],
                              preexec_fn=_drop_root_overrides if os.geteuid() == 0 else None,
                              capture_output=True, text=True, timeout=120, check=False)
    except subprocess.SubprocessError as err:
        pytest.skip(f"cannot drop root's capabilities to test read-only files: {err}")


@pytest.fixture
def plain_user(tmp_path):
    probe = tmp_path / "probe"
    probe.write_text("")
    probe.chmod(0o444)
    result = _as_a_plain_user("import sys; open(sys.argv[1], 'a')", probe)
    if result.returncode == 0:
        pytest.skip("this process cannot give up the right to write read-only files")
    probe.unlink()
    return _as_a_plain_user


TRY_TO_WRITE = """
import sys
from kernelcast.errors import KernelcastError
from kernelcast.measure.store import Store
identity = {"backend": "opencl", "device": "Test Device", "driver": "1.0"}
try:
    with Store(sys.argv[1], identity) as s:
        print(len(s.rows()))
        s.add({"key": "new", "case_name": "new", "params": {}, "status": "failed",
               "kernelcast_version": "t", "message": "why"})
except KernelcastError as err:
    print(type(err).__name__, err)
"""


def _store_with_two_rows(path):
    with Store(path, IDENTITY) as s:
        s.add(make_row("k1"))
        s.add(make_row("k2"))
    return path


def test_a_read_only_store_reads_and_refuses_a_row_in_one_line(tmp_path, plain_user):
    path = _store_with_two_rows(tmp_path / "s.sqlite")
    path.chmod(0o444)
    result = plain_user(TRY_TO_WRITE, path)
    assert result.stderr == ""
    assert result.stdout.splitlines() == [
        "2", f"StoreError cannot write to {path} (read-only); 0 "
             + RESUME.format("make it writable")]
    path.chmod(0o644)
    with Store(path) as s:
        assert len(s.rows()) == 2


def test_a_store_in_a_read_only_directory(tmp_path, plain_user):
    folder = tmp_path / "ro"
    folder.mkdir()
    path = _store_with_two_rows(folder / "s.sqlite")
    folder.chmod(0o555)
    try:
        existing = plain_user(TRY_TO_WRITE, path)  # the file is writable, its journal not
        new = plain_user(TRY_TO_WRITE, folder / "new.sqlite")
    finally:
        folder.chmod(0o755)
    assert existing.stderr == new.stderr == ""
    assert existing.stdout.splitlines() == [
        "2", f"StoreError cannot write to {path} (read-only); 0 "
             + RESUME.format("make it writable")]
    assert new.stdout.splitlines() == [
        f"StoreError cannot create {folder}/new.sqlite: {folder} is read-only"]
    assert sorted(os.listdir(folder)) == ["s.sqlite"]

# }}}
