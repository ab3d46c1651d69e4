"""The measurement store: SQLite, append-only, schema-versioned, one commit per measurement.

A store belongs to one device: its backend, device name and driver are written when it is
created, and opening it for another device or driver is refused; the device's compute
units are recorded with them. Rows are never updated or
deleted (triggers enforce it); each has a unique key — a hash of the case name, generated
code, build options, parameter values, device, driver and kernelcast version — so a
campaign that is killed and resumed skips what it finished and duplicates nothing. Every
row has a status; failed cases have no time, never a sentinel one.

Schema versions differ only in the statuses a row may have (a CHECK constraint lists them).
Version 1 had six: a size too large for its integer argument was recorded as
``out_of_memory`` and any other error while running as ``launch_error``. Version 2 adds
``size_out_of_range`` and ``failed`` for those, so that ``out_of_memory`` and
``launch_error`` mean only what they say. New stores are version 2; version-1 stores (such
as the committed ones under data/) open, read and resume as before, never rewritten, and
refuse a row with a status of version 2 with a StoreMismatchError saying to measure into a
new store: migrating one in place would leave its old rows meaning one thing and its new
rows another under the same status names.

Public names: SCHEMA_VERSION, STATUSES, SCHEMA_STATUSES, Store, StoreMismatchError,
measurement_key, read_measurements.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import sqlite3
from pathlib import Path

from kernelcast.errors import MissingDependencyError, UsageError

SCHEMA_VERSION = 2  # of the stores this kernelcast creates
STATUSES = ("ok", "unstable", "compile_error", "launch_error", "out_of_memory",
            "wrong_answer", "size_out_of_range", "failed")
SCHEMA_STATUSES = {1: STATUSES[:6], 2: STATUSES}  # the statuses each schema version allows
IDENTITY = ("backend", "device", "driver")


def _schema(statuses) -> str:
    return f"""
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE kernels (code_sha256 TEXT PRIMARY KEY, target TEXT NOT NULL, code TEXT NOT NULL);
CREATE TABLE measurements (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL UNIQUE,
    recorded_at TEXT NOT NULL,
    suite TEXT,
    case_name TEXT NOT NULL,
    kernel_class TEXT,
    variant TEXT,
    dtype TEXT,
    group_size TEXT,
    p INTEGER,
    t INTEGER,
    params TEXT NOT NULL,
    backend TEXT NOT NULL,
    device TEXT NOT NULL,
    driver TEXT NOT NULL,
    kernelcast_version TEXT NOT NULL,
    code_sha256 TEXT,
    build_options TEXT,
    status TEXT NOT NULL CHECK (status IN ({", ".join(repr(s) for s in statuses)})),
    min_s REAL,
    median_s REAL,
    times_s TEXT,
    dropped INTEGER,
    attempts INTEGER,
    spreads TEXT,
    max_rel_error REAL,
    message TEXT,
    CHECK ((status IN ('ok', 'unstable')) = (min_s IS NOT NULL))
);
CREATE TRIGGER measurements_append_only_update BEFORE UPDATE ON measurements
BEGIN SELECT RAISE(ABORT, 'the measurement store is append-only'); END;
CREATE TRIGGER measurements_append_only_delete BEFORE DELETE ON measurements
BEGIN SELECT RAISE(ABORT, 'the measurement store is append-only'); END;
"""


_JSON_COLUMNS = ("group_size", "params", "times_s", "spreads")


class StoreMismatchError(UsageError):
    """The store holds measurements of another device, driver, backend or schema, or
    cannot record what is asked of it (a usage error: another --db is the way out)."""


def measurement_key(case_name: str, code_sha256: str | None, build_options: str,
                    params: dict, identity: dict, version: str) -> str:
    material = json.dumps({
        "case": case_name, "code": code_sha256, "build_options": build_options,
        "params": {k: params[k] for k in sorted(params)},
        **{k: identity[k] for k in IDENTITY}, "kernelcast": version}, sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


class Store:
    """An open measurement store. *identity* (backend, device, driver) is required to
    create one and, when given, must match an existing one."""

    def __init__(self, path, identity: dict | None = None):
        self.path = Path(path)
        exists = self.path.exists() and self.path.stat().st_size > 0
        if not exists and identity is None:
            raise UsageError(f"no measurement store at {self.path}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, timeout=30)
        try:
            self._conn.row_factory = sqlite3.Row
            if exists:  # before any other statement: a file that is not SQLite fails here
                self.meta = self._read_meta()
            self._conn.execute("PRAGMA synchronous = FULL")
            if not exists:
                with self._conn:
                    self._conn.executescript(_schema(SCHEMA_STATUSES[SCHEMA_VERSION]))
                    self._conn.executemany(
                        "INSERT INTO meta VALUES (?, ?)",
                        [("schema_version", str(SCHEMA_VERSION)), ("created_at", _now()),
                         *((k, identity[k]) for k in IDENTITY)])
                self.meta = self._read_meta()
            self._check(identity)
            if identity and identity.get("compute_units") and "compute_units" not in self.meta:
                with self._conn:  # also for stores written before they were recorded
                    self._conn.execute("INSERT INTO meta VALUES ('compute_units', ?)",
                                       (str(int(identity["compute_units"])),))
                self.meta = self._read_meta()
        except BaseException:
            self._conn.close()
            raise

    def _read_meta(self) -> dict:
        try:
            return dict(self._conn.execute("SELECT name, value FROM meta").fetchall())
        except sqlite3.DatabaseError as err:
            raise StoreMismatchError(f"{self.path} is not a kernelcast store: {err}") from None

    def _check(self, identity):
        version = self.meta.get("schema_version")
        if version not in {str(v) for v in SCHEMA_STATUSES}:
            readable = " and ".join(str(v) for v in SCHEMA_STATUSES)
            raise StoreMismatchError(f"{self.path} has schema version {version}; this "
                                     f"kernelcast reads versions {readable}")
        if identity is None:
            return
        theirs = {k: self.meta.get(k) for k in IDENTITY}
        ours = {k: identity[k] for k in IDENTITY}
        if identity.get("compute_units") and self.meta.get("compute_units"):
            # the same device name and driver with fewer compute units (PoCL limited to
            # one thread, a MIG slice) is another device
            theirs["compute units"] = self.meta["compute_units"]
            ours["compute units"] = str(int(identity["compute_units"]))
        if theirs != ours:
            diff = ", ".join(f"{k} {theirs[k]!r} (this run: {ours[k]!r})"
                             for k in theirs if theirs[k] != ours[k])
            raise StoreMismatchError(
                f"{self.path} holds measurements of another device: {diff}; "
                "use another --db for this device")

    @property
    def identity(self) -> dict:
        return {k: self.meta[k] for k in IDENTITY}

    @property
    def schema_version(self) -> int:
        return int(self.meta["schema_version"])

    @property
    def statuses(self) -> tuple[str, ...]:
        """The statuses this store's schema version can record."""
        return SCHEMA_STATUSES[self.schema_version]

    @property
    def compute_units(self) -> int | None:
        """The compute units the device reported (SMs of an NVIDIA GPU), None for stores
        written before they were recorded."""
        value = self.meta.get("compute_units")
        return int(value) if value else None

    def close(self) -> None:
        self._conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def keys(self) -> set[str]:
        return {row[0] for row in self._conn.execute("SELECT key FROM measurements")}

    def get(self, key: str) -> dict | None:
        row = self._conn.execute("SELECT * FROM measurements WHERE key = ?", (key,)).fetchone()
        return _decode(row) if row else None

    def rows(self) -> list[dict]:
        return [_decode(r) for r in self._conn.execute("SELECT * FROM measurements ORDER BY id")]

    def add_code(self, code_sha256: str, target: str, code: str) -> None:
        with self._conn:
            self._conn.execute("INSERT OR IGNORE INTO kernels VALUES (?, ?, ?)",
                               (code_sha256, target, code))

    def code(self, code_sha256: str) -> str | None:
        row = self._conn.execute("SELECT code FROM kernels WHERE code_sha256 = ?",
                                 (code_sha256,)).fetchone()
        return row[0] if row else None

    def add(self, row: dict) -> int:
        """Append one measurement and commit it; returns its id. Identity columns and
        the time of recording are filled in."""
        status = row.get("status")
        if status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
        if status not in self.statuses:
            raise StoreMismatchError(
                f"{self.path} has schema version {self.schema_version}, which cannot record "
                f"the status {status!r} ({row.get('case_name')}); measure into a new store "
                f"(another --db), which is created with schema version {SCHEMA_VERSION}")
        values = {**row, **self.identity, "recorded_at": _now()}
        for column in _JSON_COLUMNS:
            if values.get(column) is not None:
                values[column] = json.dumps(values[column])
        columns = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        with self._conn:
            cursor = self._conn.execute(
                f"INSERT INTO measurements ({columns}) VALUES ({marks})",  # noqa: S608
                list(values.values()))
        return cursor.lastrowid


def _decode(row: sqlite3.Row) -> dict:
    result = dict(row)
    for column in _JSON_COLUMNS:
        if result.get(column) is not None:
            result[column] = json.loads(result[column])
    return result


def read_measurements(path):
    """The store at *path* as a pandas DataFrame, one row per measurement, with the
    parameters spread into columns ``param_<name>``."""
    try:
        import pandas as pd
    except ImportError:
        raise MissingDependencyError("reading a store into a DataFrame needs pandas") from None
    with Store(path) as store:
        rows = store.rows()
    frame = pd.DataFrame(rows)
    if rows:
        params = pd.DataFrame([r["params"] for r in rows]).add_prefix("param_")
        frame = pd.concat([frame, params], axis=1)
    return frame
