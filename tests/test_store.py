"""The measurement store: schema version, append-only rows, unique keys, status rules,
one device per store, and reading it back as a DataFrame."""

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from store_rows import IDENTITY, make_row

from kernelcast.errors import UsageError
from kernelcast.measure.store import (
    SCHEMA_STATUSES,
    SCHEMA_VERSION,
    STATUSES,
    Store,
    StoreMismatchError,
    measurement_key,
    read_measurements,
    rows_added,
)

_DATA = Path(__file__).resolve().parent.parent / "data"
# the calibration stores, measured before schema 2; stores measured later are schema 3
COMMITTED_STORES = sorted(p for p in _DATA.glob("*/*.sqlite")
                          if p.name in ("opencl.sqlite", "cuda.sqlite"))
LATER_STORES = sorted(p for p in _DATA.glob("*/*.sqlite") if p not in COMMITTED_STORES)
FAILED = [s for s in STATUSES if s not in ("ok", "unstable")]
NEW_IN_2 = ["size_out_of_range", "failed"]
NEW_IN_3 = ["crashed"]

@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "s.sqlite", IDENTITY) as s:
        yield s


def _raw(store):
    """A second, autocommitting connection to the same file, as any other program has."""
    return sqlite3.connect(store.path, isolation_level=None, timeout=1)


def test_a_new_store_records_schema_version_and_identity(store):
    assert SCHEMA_VERSION == 3
    assert store.meta["schema_version"] == "3" and store.schema_version == 3
    assert store.statuses == STATUSES
    assert store.identity == IDENTITY
    meta = dict(_raw(store).execute("SELECT name, value FROM meta").fetchall())
    assert meta["schema_version"] == str(SCHEMA_VERSION)
    assert {k: meta[k] for k in IDENTITY} == IDENTITY
    assert meta["created_at"]


def test_add_fills_identity_and_time_and_round_trips_json(store):
    row_id = store.add(make_row())
    [got] = store.rows()
    assert got["id"] == row_id
    assert {k: got[k] for k in IDENTITY} == IDENTITY
    assert got["recorded_at"]
    assert got["params"] == {"n": 1024, "m": 8}
    assert got["times_s"] == [3e-5, 1e-5, 1.1e-5, 1.2e-5]
    assert got["spreads"] == [0.1]
    assert got["damage"] is None and len(got["checksum"]) == 64
    assert store.get("k1") == got
    assert store.get("nothere") is None
    assert store.keys() == {"k1"}


@pytest.mark.parametrize("statement", ["UPDATE measurements SET min_s = 2.0",
                                       "UPDATE measurements SET status = 'launch_error', "
                                       "min_s = NULL",
                                       "DELETE FROM measurements",
                                       "DELETE FROM measurements WHERE key = 'k1'"])
def test_rows_are_append_only(store, statement):
    store.add(make_row())
    before = store.rows()
    raw = _raw(store)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        raw.execute(statement)
    raw.close()
    assert store.rows() == before


def test_a_duplicate_key_is_not_stored_twice_and_counts_as_stored(store):
    assert store.add(make_row("k1")) == 1
    assert store.add(make_row("k1", min_s=5.0)) is None  # as when another process stored it
    assert len(store.rows()) == 1 and store.added == 1
    assert store.get("k1")["min_s"] == 1e-5


class _StoppedAtCommit:
    """The store's connection, with Ctrl-C arriving as a row is committed: just before
    the commit (*after* False: it is rolled back) or just after it."""

    def __init__(self, conn, after: bool):
        self._conn, self._after = conn, after

    def __getattr__(self, name):
        return getattr(self._conn, name)

    def __enter__(self):
        return self._conn.__enter__()

    def __exit__(self, *exc):
        if exc[0] is not None:
            return self._conn.__exit__(*exc)
        if not self._after:
            self._conn.__exit__(KeyboardInterrupt, KeyboardInterrupt(), None)
            raise KeyboardInterrupt
        self._conn.__exit__(None, None, None)
        raise KeyboardInterrupt


@pytest.mark.parametrize("after", [False, True])
def test_a_row_is_counted_as_stored_exactly_when_it_is(store, after):
    store.add(make_row("k0"))
    conn = store._conn
    store._conn = _StoppedAtCommit(conn, after)
    with pytest.raises(KeyboardInterrupt):
        store.add(make_row("k1"))
    store._conn = conn
    assert (store.get("k1") is not None) is after
    assert store.added == rows_added(store.path) == 1 + after == len(store.rows())


def test_every_status_is_accepted(store):
    for i, status in enumerate(STATUSES):
        store.add(make_row(f"k{i}", status, message=None if status in ("ok", "unstable")
                       else "why"))
    assert [r["status"] for r in store.rows()] == list(STATUSES)
    failed = [r for r in store.rows() if r["status"] not in ("ok", "unstable")]
    assert all(r["min_s"] is None and r["median_s"] is None for r in failed)


def test_an_invalid_status_is_refused_by_python_and_by_sqlite(store):
    with pytest.raises(ValueError, match="status must be one of"):
        store.add(make_row(status="hung"))
    with pytest.raises(ValueError, match="status must be one of"):
        store.add({k: v for k, v in make_row().items() if k != "status"})
    raw = _raw(store)
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        raw.execute("INSERT INTO measurements (key, recorded_at, case_name, params, backend, "
                    "device, driver, kernelcast_version, status, checksum) VALUES "
                    "('x', 't', 'c', '{}', 'b', 'd', 'r', 'v', 'hung', 'sum')")
    raw.close()
    assert store.rows() == []


@pytest.mark.parametrize("status", ["ok", "unstable"])
def test_a_timed_row_needs_a_time(store, status):
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        store.add(make_row(status=status, min_s=None))
    assert store.rows() == []


@pytest.mark.parametrize("status", FAILED)
@pytest.mark.parametrize("sentinel", [0.0, -1.0, float("inf")])
def test_a_failed_row_has_no_sentinel_time(store, status, sentinel):
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        store.add(make_row(status=status, min_s=sentinel))
    assert store.rows() == []


def test_the_code_table_keeps_the_first_text(store):
    store.add_code("abc", "opencl", "__kernel void f() {}")
    store.add_code("abc", "opencl", "something else")
    assert store.code("abc") == "__kernel void f() {}"
    assert store.code("nothere") is None


def test_rows_survive_reopening_and_reading_needs_no_identity(tmp_path):
    path = tmp_path / "s.sqlite"
    with Store(path, IDENTITY) as s:
        s.add(make_row("k1"))
        rows = s.rows()
    with Store(path) as s:
        assert s.identity == IDENTITY
        assert s.rows() == rows
    with Store(path, dict(IDENTITY)) as s:
        s.add(make_row("k2"))
        assert len(s.rows()) == 2


def test_compute_units_are_recorded_also_in_a_store_written_without_them(tmp_path):
    path = tmp_path / "s.sqlite"
    with Store(path, IDENTITY) as s:
        assert s.compute_units is None
    with Store(path, dict(IDENTITY, compute_units=132)) as s:
        assert s.compute_units == 132 and s.identity == IDENTITY
    with Store(path) as s:
        assert s.compute_units == 132
    with Store(tmp_path / "new.sqlite", dict(IDENTITY, compute_units=16)) as s:
        assert s.compute_units == 16


@pytest.mark.parametrize("field", ["device", "driver", "backend"])
def test_another_device_or_driver_is_refused_naming_both(tmp_path, field):
    path = tmp_path / "s.sqlite"
    Store(path, IDENTITY).close()
    other = {**IDENTITY, field: "Other " + IDENTITY[field]}
    with pytest.raises(StoreMismatchError) as info:
        Store(path, other)
    message = str(info.value)
    assert str(path) in message
    assert repr(IDENTITY[field]) in message and repr(other[field]) in message
    assert f"{field} {IDENTITY[field]!r} (this run: {other[field]!r})" in message
    assert "another --db" in message
    assert isinstance(info.value, UsageError)  # the command line exits with status 2


def test_the_same_device_with_other_compute_units_is_refused(tmp_path):
    """PoCL limited to one thread (POCL_MAX_PTHREAD_COUNT=1) keeps its name and driver."""
    path = tmp_path / "s.sqlite"
    Store(path, dict(IDENTITY, compute_units=2)).close()
    with pytest.raises(StoreMismatchError, match=r"compute units '2' \(this run: '1'\)"):
        Store(path, dict(IDENTITY, compute_units=1))
    Store(path, dict(IDENTITY, compute_units=2)).close()  # the same device resumes
    Store(path).close()  # reading needs no identity


def test_device_and_driver_mismatch_names_both_fields(tmp_path):
    path = tmp_path / "s.sqlite"
    Store(path, IDENTITY).close()
    with pytest.raises(StoreMismatchError, match=r"device 'Test Device' \(this run: 'GPU'\), "
                       r"driver '1.0' \(this run: '2.0'\)"):
        Store(path, {**IDENTITY, "device": "GPU", "driver": "2.0"})


def test_other_schema_versions_and_files_are_refused(tmp_path):
    path = tmp_path / "s.sqlite"
    Store(path, IDENTITY).close()
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("UPDATE meta SET value = '4' WHERE name = 'schema_version'")
    raw.close()
    with pytest.raises(StoreMismatchError, match="schema version 4; this kernelcast reads "
                       "versions 1, 2 and 3"):
        Store(path)
    foreign = tmp_path / "foreign.sqlite"
    raw = sqlite3.connect(foreign, isolation_level=None)
    raw.execute("CREATE TABLE t (x)")
    raw.close()
    with pytest.raises(StoreMismatchError, match="is not a kernelcast store"):
        Store(foreign, IDENTITY)
    with pytest.raises(UsageError, match="no measurement store"):
        Store(tmp_path / "missing.sqlite")
    assert not (tmp_path / "missing.sqlite").exists()


def test_a_file_that_is_not_sqlite_is_refused_clearly(tmp_path):
    junk = tmp_path / "junk.sqlite"
    junk.write_text("not a database at all, just text " * 100)
    with pytest.raises(StoreMismatchError, match="is not a kernelcast store"):
        Store(junk, IDENTITY)
    with pytest.raises(StoreMismatchError, match="is not a kernelcast store"):
        Store(junk)
    assert junk.read_text() == "not a database at all, just text " * 100  # left as it was


def test_the_key_covers_what_makes_a_measurement_different():
    base = ("scale/n=4", "sha", "", {"n": 4, "m": 2}, IDENTITY, "1.0")
    key = measurement_key(*base)
    assert len(key) == 64
    assert measurement_key("scale/n=4", "sha", "", {"m": 2, "n": 4}, IDENTITY, "1.0") == key
    variants = [("other", *base[1:]), (base[0], "sha2", *base[2:]),
                (*base[:2], "-cl-fast-relaxed-math", *base[3:]),
                (*base[:3], {"n": 8, "m": 2}, *base[4:]),
                (*base[:4], {**IDENTITY, "driver": "1.1"}, base[5]),
                (*base[:4], {**IDENTITY, "device": "X"}, base[5]),
                (*base[:5], "1.1")]
    keys = {measurement_key(*v) for v in variants}
    assert len(keys) == len(variants) and key not in keys


def test_read_measurements_gives_a_dataframe_with_param_columns(tmp_path):
    path = tmp_path / "s.sqlite"
    with Store(path, IDENTITY) as s:
        s.add(make_row("k1", params={"n": 1024, "m": 8}))
        s.add(make_row("k2", "out_of_memory", params={"n": 2**40}, message="too big"))
    frame = read_measurements(path)
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.key) == ["k1", "k2"]
    assert list(frame.param_n) == [1024, 2**40]
    assert frame.param_m.iloc[0] == 8 and pd.isna(frame.param_m.iloc[1])
    assert list(frame.status) == ["ok", "out_of_memory"]
    assert frame.min_s.iloc[0] == 1e-5 and pd.isna(frame.min_s.iloc[1])
    assert frame.times_s.iloc[0] == [3e-5, 1e-5, 1.1e-5, 1.2e-5]
    assert (frame.device == "Test Device").all()


def test_read_measurements_of_an_empty_store(tmp_path):
    Store(tmp_path / "s.sqlite", IDENTITY).close()
    frame = read_measurements(tmp_path / "s.sqlite")
    assert isinstance(frame, pd.DataFrame) and len(frame) == 0


# {{{ schema versions: the statuses of versions 2 and 3, stores of versions 1 and 2

def test_the_statuses_of_each_schema_version():
    assert SCHEMA_STATUSES[1] == ("ok", "unstable", "compile_error", "launch_error",
                                  "out_of_memory", "wrong_answer")
    assert SCHEMA_STATUSES[2] == (*SCHEMA_STATUSES[1], *NEW_IN_2)
    assert SCHEMA_STATUSES[3] == STATUSES == (*SCHEMA_STATUSES[2], *NEW_IN_3)
    assert set(SCHEMA_STATUSES) == {1, 2, SCHEMA_VERSION}


@pytest.mark.parametrize("status", NEW_IN_2 + NEW_IN_3)
def test_a_new_store_records_the_new_statuses_without_a_time(store, status):
    store.add(make_row("k1", status, message="why"))
    assert store.get("k1")["status"] == status and store.get("k1")["min_s"] is None
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        store.add(make_row("k2", status, min_s=1.0))


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _raw_rows(path):
    """Every measurement of the store at *path*, decoded without kernelcast."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        rows = [dict(r) for r in conn.execute("SELECT * FROM measurements ORDER BY id")]
    finally:
        conn.close()
    for row in rows:
        for column in ("group_size", "params", "times_s", "spreads"):
            if row[column] is not None:
                row[column] = json.loads(row[column])
    return rows


@pytest.mark.parametrize("committed", COMMITTED_STORES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_committed_schema_1_store_opens_and_reads_as_it_is(committed, tmp_path):
    """The stores under data/ are schema 1: they read row for row as SQLite holds them,
    and opening and reading them changes no byte."""
    before = _sha(committed)
    copy = tmp_path / committed.name
    shutil.copy(committed, copy)
    with Store(copy) as s:
        assert s.schema_version == 1 and s.statuses == SCHEMA_STATUSES[1]
        rows = s.rows()
        assert s.get(rows[0]["key"]) == rows[0] and len(s.keys()) == len(rows)
        assert s.damaged() == []
    assert [r.pop("damage") for r in rows] == [None] * len(rows)
    assert rows == _raw_rows(copy) and len(rows) > 100
    assert {r["status"] for r in rows} <= set(SCHEMA_STATUSES[1])
    assert len(read_measurements(copy)) == len(rows)
    assert _sha(copy) == before == _sha(committed)


@pytest.mark.parametrize("committed", LATER_STORES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_later_committed_store_is_schema_3_whole_and_unchanged_by_reading(committed,
                                                                           tmp_path):
    before = _sha(committed)
    copy = tmp_path / committed.name
    shutil.copy(committed, copy)
    with Store(copy) as s:
        assert s.schema_version == 3 and s.damaged() == []
        rows = s.rows()
    assert rows and all(r["damage"] is None for r in rows)
    assert _sha(copy) == before == _sha(committed)


def test_a_schema_1_store_takes_the_statuses_it_knows(schema1_store, tmp_path):
    path = schema1_store(tmp_path / "old.sqlite", IDENTITY)
    with Store(path, IDENTITY) as s:
        assert s.schema_version == 1
        for i, status in enumerate(SCHEMA_STATUSES[1]):
            s.add(make_row(f"k{i}", status))
        assert [r["status"] for r in s.rows()] == list(SCHEMA_STATUSES[1])
        assert s.damaged() == []
    with Store(path) as s:  # still schema 1: nothing was migrated
        assert s.meta["schema_version"] == "1"


@pytest.mark.parametrize("status", NEW_IN_2 + NEW_IN_3)
def test_a_schema_1_store_refuses_a_new_status_in_one_line_saying_what_to_do(
        schema1_store, tmp_path, status):
    path = schema1_store(tmp_path / "old.sqlite", IDENTITY)
    with Store(path, IDENTITY) as s:
        s.add(make_row("k0"))
        before = _sha(path)
        with pytest.raises(StoreMismatchError) as info:
            s.add(make_row("k1", status, case_name="scale/n=4294967296", message="why"))
        assert [{**r, "damage": None} for r in _raw_rows(path)] == s.rows()
        assert len(s.rows()) == 1
    assert _sha(path) == before  # nothing written, nothing migrated
    assert str(info.value) == (
        f"{path} has schema version 1, which cannot record the status {status!r} "
        "(scale/n=4294967296); measure into a new store (another --db), which is created "
        "with schema version 3")
    assert isinstance(info.value, UsageError)

# }}}
