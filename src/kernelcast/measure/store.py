"""The measurement store: SQLite, append-only, schema-versioned, one commit per measurement,
and a store that says so when it is damaged rather than serving wrong data.

A store belongs to one device: its backend, device name and driver are written when it is
created, and opening it for another device or driver is refused; the device's compute
units are recorded with them. A store made for one physical device of several identical
ones (kernelcast.measure.devices: its ``instance``, given in the identity when it is
created) records that too and refuses the others: each GPU calibrated in its own right.
A store made without one takes any instance of its device, as before. The instance is
not part of a row's key. Rows are never updated or deleted (triggers enforce it);
each has a unique key — a hash of the case name, generated code, build options, parameter
values, device, driver and kernelcast version — so a campaign that is killed and resumed
skips what it finished and duplicates nothing. A row whose key another process stored at
the same moment is not an error: ``add`` returns None and the row counts as already
stored. Every row has a status; failed cases have no time, never a sentinel one.

Schema versions differ in the statuses a row may have (a CHECK constraint lists them) and
in checksums. Version 1 had six statuses: a size too large for its integer argument was
recorded as ``out_of_memory`` and any other error while running as ``launch_error``.
Version 2 adds ``size_out_of_range`` and ``failed`` for those. Version 3 adds ``crashed``
(the process measuring the case died; the message has the signal) and a ``checksum``
column: the sha256 of the row's other columns (all but ``id``) as stored, as JSON with
sorted keys. New stores are version 3; stores of versions 1 and 2 (such as the committed
ones under data/) open, read and resume as before, never rewritten, and refuse a row with
a status they do not know with a StoreMismatchError saying to measure into a new store:
migrating one in place would leave its old rows meaning one thing and its new rows
another under the same status names.

Every row read is checked: its checksum (version 3), that min_s and median_s are the
minimum and median of its runs after the dropped ones (as protocol.py computes them), that
its JSON columns parse, its text is UTF-8 and its status is one of its schema's. A row that
fails is returned with ``damage`` saying why (None on good rows); ``damaged()`` lists
them and fitting leaves them out.

A new store is built completely in a temporary file next to its path
(``.NAME.PID-TOKEN.HOST.creating``) and hard-linked into place, which never overwrites:
a killed creator leaves no half-made store, and of processes creating one store at once
one wins and the others open its store. Temporary files of dead processes of this host
are removed whenever a store in their directory is opened for writing. Where the file
system has no hard links, the temporary file is renamed into place under a lock on
``.NAME.lock``, which stays. Whatever is at the path by then is opened as it is, never
replaced. A 0-byte regular file given for writing (left by older kernelcast, or made by
``touch``) holds nothing to lose: the store is made in that very file, in one exclusive
SQLite transaction, so it keeps its owner, mode and links, and a killed creator leaves it
empty. kernelcast removes nothing at the path.

The path must be a regular file or nothing: a directory, FIFO, device node or socket is
refused with a UsageError naming what it is (frontends.files.check_regular_file), never
opened (a FIFO would block forever) and never replaced.

A failure of SQLite or the file system becomes one line, a StoreError (damaged, read-only,
full disk: exit status 1) or a UsageError (a path that cannot be a store: exit status 2),
naming the path and, for writes, how many rows this process stored there (``rows_added``).

Public names: SCHEMA_VERSION, STATUSES, SCHEMA_STATUSES, Store, StoreMismatchError,
measurement_key, read_measurements, rows_added, rows_added_by_path.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import fcntl
import hashlib
import json
import os
import re
import secrets
import socket
import sqlite3
import stat
import statistics
from pathlib import Path
from urllib.parse import quote

from kernelcast.errors import MissingDependencyError, StoreError, UsageError
from kernelcast.frontends.files import check_regular_file
from kernelcast.measure.lock import open_lock_file

SCHEMA_VERSION = 3  # of the stores this kernelcast creates
STATUSES = ("ok", "unstable", "compile_error", "launch_error", "out_of_memory",
            "wrong_answer", "size_out_of_range", "failed", "crashed")
SCHEMA_STATUSES = {1: STATUSES[:6], 2: STATUSES[:8], 3: STATUSES}  # what each version allows
IDENTITY = ("backend", "device", "driver")


def _columns(version: int) -> list[str]:
    """The columns of the measurements table of schema *version*, in order."""
    if version not in _COLUMNS:
        with contextlib.closing(sqlite3.connect(":memory:")) as conn:
            conn.executescript(_schema(version))
            _COLUMNS[version] = [r[1] for r in conn.execute("PRAGMA table_info(measurements)")]
    return _COLUMNS[version]


_COLUMNS: dict[int, list[str]] = {}


def _schema(version: int) -> str:
    statuses = ", ".join(repr(s) for s in SCHEMA_STATUSES[version])
    checksum = "\n    checksum TEXT NOT NULL," if version >= 3 else ""
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
    status TEXT NOT NULL CHECK (status IN ({statuses})),
    min_s REAL,
    median_s REAL,
    times_s TEXT,
    dropped INTEGER,
    attempts INTEGER,
    spreads TEXT,
    max_rel_error REAL,
    message TEXT,{checksum}
    CHECK ((status IN ('ok', 'unstable')) = (min_s IS NOT NULL))
);
CREATE TRIGGER measurements_append_only_update BEFORE UPDATE ON measurements
BEGIN SELECT RAISE(ABORT, 'the measurement store is append-only'); END;
CREATE TRIGGER measurements_append_only_delete BEFORE DELETE ON measurements
BEGIN SELECT RAISE(ABORT, 'the measurement store is append-only'); END;
"""


_JSON_COLUMNS = ("group_size", "params", "times_s", "spreads")
_REAL_COLUMNS = ("min_s", "median_s", "max_rel_error")
_INTEGER_COLUMNS = ("p", "t", "dropped", "attempts")
_NOT_CHECKSUMMED = ("id", "checksum")
_NO_HARD_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK}
_HOST = socket.gethostname()
_TEMPORARY = re.compile(r"^\..+?\.(?P<pid>\d+)-[0-9a-f]{8}\.(?P<host>.+)\.creating$")
_ADDED: dict[str, int] = {}  # rows this process added, by resolved store path


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


def rows_added(path) -> int:
    """How many rows this process has added to the store at *path* (by any Store)."""
    return _ADDED.get(os.path.realpath(path), 0)


def rows_added_by_path() -> dict[str, int]:
    """How many rows this process has added to each store, by resolved path."""
    return dict(_ADDED)


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


class _BadText(str):
    """Text read from the store that was not UTF-8 (decoded with replacement characters)."""


def _text(data: bytes) -> str:
    try:
        return data.decode()
    except UnicodeDecodeError:
        return _BadText(data.decode(errors="replace"))


def _stored(column: str, value):
    """*value* as SQLite gives it back from *column* (what the checksum is taken of)."""
    if value is None:
        return None
    if column in _JSON_COLUMNS:
        return json.dumps(value)
    if column in _REAL_COLUMNS:
        return float(value)
    if column in _INTEGER_COLUMNS:
        return int(value) if isinstance(value, (bool, float)) and value == int(value) else value
    return str(value) if isinstance(value, (int, float)) else value


def _checksum(row: dict) -> str:
    body = {k: v for k, v in row.items() if k not in _NOT_CHECKSUMMED}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _timing_damage(row: dict) -> str | None:
    """Why min_s and median_s are not the minimum and median of the row's runs after the
    dropped ones (how protocol.py computes them), or None."""
    if row["min_s"] is None and row["median_s"] is None:
        return None
    times, drop = row["times_s"], row["dropped"]
    try:
        if not isinstance(times, list) or not isinstance(drop, int):
            raise TypeError
        kept = times[drop:]
        low, mid = min(kept), statistics.median(kept)
    except (TypeError, ValueError):
        return "it has a time but not the runs it came from"
    if row["min_s"] != low:
        return f"min_s {row['min_s']!r} is not the minimum of its runs ({low!r})"
    if row["median_s"] != mid:
        return f"median_s {row['median_s']!r} is not the median of its runs ({mid!r})"
    return None


class Store:
    """An open measurement store. *identity* (backend, device, driver) is required to
    create one and, when given, must match an existing one. A missing directory is
    created only with *create_dirs*. ``added`` counts the rows this object added."""

    def __init__(self, path, identity: dict | None = None, *, create_dirs: bool = False):
        self.path = Path(path)
        self.added = 0
        if not self._exists(identity, create_dirs):
            _create(self.path, identity)
        if identity is not None:
            _remove_stale_temporaries(self.path.parent)
        try:  # mode=rw: never creates a file; read-only where the file is
            self._conn = sqlite3.connect(f"file:{quote(str(self.path))}?mode=rw", uri=True,
                                         timeout=30)
        except sqlite3.Error as err:
            raise StoreError(f"cannot open {self.path}: {err}") from None
        try:
            self._conn.text_factory = _text
            self._conn.row_factory = sqlite3.Row
            if identity is not None:
                self._fill_if_empty(identity)
            self.meta = self._read_meta()  # first: a file that is not SQLite fails here
            self._check(identity)
            with self._failures(writing=False):
                self._conn.execute("PRAGMA synchronous = FULL")
                tables = {r[0] for r in self._conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'")}
                self._columns = [r[1] for r in self._conn.execute(
                    "PRAGMA table_info(measurements)")]
            for table in ("measurements", "kernels"):
                if table not in tables:
                    raise StoreError(f"{self.path} is damaged: it has no {table} table")
            if self._columns != _columns(self.schema_version):
                raise StoreError(f"{self.path} is damaged: its measurements table does not "
                                 f"have the columns of schema version {self.schema_version}")
            if identity and identity.get("instance") and self.meta.get("instance") not in (
                    None, identity["instance"]):
                raise StoreMismatchError(
                    f"{self.path} holds measurements of {self.meta['instance']}, another "
                    f"{self.meta['device']} than this run's {identity['instance']}; "
                    "use another --db for this device")
            if identity and identity.get("compute_units") and "compute_units" not in self.meta:
                with self._failures(writing=True), self._conn:  # also for older stores
                    self._conn.execute("INSERT INTO meta VALUES ('compute_units', ?)",
                                       (str(int(identity["compute_units"])),))
                self.meta = self._read_meta()
        except BaseException:
            self._conn.close()
            raise

    def _exists(self, identity, create_dirs) -> bool:
        """Whether a store is to be opened at the path (else one is to be created);
        raises for paths that cannot be one."""
        info = check_regular_file(self.path, "measurement store")
        if info is not None:
            if not info.st_size and identity is None:
                raise UsageError(f"{self.path} is empty (0 bytes), not a measurement store")
            return True  # an empty one is filled in place (_fill_if_empty)
        if identity is None:
            raise UsageError(f"no measurement store at {self.path}")
        parent = self.path.parent
        if not parent.is_dir():
            if not create_dirs:
                raise UsageError(f"directory {parent} does not exist")
            try:
                parent.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise StoreError(f"cannot create the directory {parent}: {err.strerror}"
                                 ) from None
        return False

    def _fill_if_empty(self, identity: dict) -> None:
        """Make the store in the open file where its database has no tables (a 0-byte
        file, or one whose filling was killed and SQLite rolled back): in the file itself,
        which keeps its owner, mode and links, in one exclusive transaction, so that of
        processes doing it at once one does it and a killed one leaves the file empty."""
        try:
            if self._conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                return
        except (sqlite3.DatabaseError, UnicodeDecodeError):
            return  # not SQLite, or damaged: _read_meta says which
        with self._failures(writing=True):
            self._conn.execute("BEGIN EXCLUSIVE")
            try:
                if not self._conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                    _initialize(self._conn, identity)
                self._conn.commit()
            except BaseException:
                self._conn.rollback()
                raise

    def _read_meta(self) -> dict:
        try:
            return dict(self._conn.execute("SELECT name, value FROM meta").fetchall())
        except UnicodeDecodeError as err:  # SQLite's message quotes damaged schema bytes
            raise self._failure(err, writing=False) from None
        except sqlite3.DatabaseError as err:
            if "no such table" in str(err) or "not a database" in str(err):
                raise StoreMismatchError(f"{self.path} is not a kernelcast store: {err}"
                                         ) from None
            raise self._failure(err, writing=False) from None

    def _check(self, identity):
        version = self.meta.get("schema_version")
        if version not in {str(v) for v in SCHEMA_STATUSES}:
            *first, last = (str(v) for v in SCHEMA_STATUSES)
            raise StoreMismatchError(f"{self.path} has schema version {version}; this "
                                     f"kernelcast reads versions {', '.join(first)} and {last}")
        lost = [k for k in IDENTITY if not isinstance(self.meta.get(k), str)]
        if lost:
            raise StoreError(f"{self.path} is damaged: its meta table has no {lost[0]}")
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

    def _failure(self, err: Exception, writing: bool) -> StoreError:
        """*err* (from SQLite or the OS) as one line naming the path."""
        if isinstance(err, UnicodeDecodeError):
            return StoreError(f"{self.path} is damaged: SQLite reports a damaged schema "
                              "(its report is not even readable text)")
        text = str(err)
        number = getattr(err, "errno", None)
        stored = (f"{rows_added(self.path)} rows were stored by this run, nothing was lost; "
                  "{} and run the same command again to resume")
        if writing and ("readonly" in text or "unable to open" in text
                        or number in (errno.EACCES, errno.EPERM, errno.EROFS)):
            return StoreError(f"cannot write to {self.path} (read-only); "
                              + stored.format("make it writable"))
        if "disk is full" in text or number in (errno.ENOSPC, errno.EDQUOT):
            return StoreError(f"cannot write to {self.path} (the disk is full); "
                              + stored.format("free some space"))
        if "malformed" in text or "not a database" in text:
            return StoreError(f"{self.path} is damaged: {text}")
        if "locked" in text:
            return StoreError(f"{self.path} is locked by another process: {text}")
        return StoreError(f"{self.path}: {text}")

    @contextlib.contextmanager
    def _failures(self, writing: bool):
        """Turn SQLite's and the OS's errors into StoreErrors; constraint violations and
        programming errors stay what they are."""
        try:
            yield
        except (sqlite3.IntegrityError, sqlite3.ProgrammingError, sqlite3.InterfaceError):
            raise
        except (sqlite3.DatabaseError, OSError, UnicodeDecodeError) as err:
            if writing:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.rollback()
            raise self._failure(err, writing) from None

    @property
    def identity(self) -> dict:
        return {k: self.meta[k] for k in IDENTITY}

    @property
    def instance(self) -> str:
        """The physical device the store is bound to ("": any of its kind)."""
        return self.meta.get("instance", "")

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
        if not value:
            return None
        if not value.isdigit():
            raise StoreError(f"{self.path} is damaged: its compute units are {value!r}")
        return int(value)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _query(self, sql: str, *args) -> list[sqlite3.Row]:
        with self._failures(writing=False):
            return self._conn.execute(sql, args).fetchall()

    def keys(self) -> set[str]:
        return {row[0] for row in self._query("SELECT key FROM measurements")}

    def get(self, key: str) -> dict | None:
        rows = self._query("SELECT * FROM measurements WHERE key = ?", key)
        return self._decode(rows[0]) if rows else None

    def rows(self) -> list[dict]:
        """Every row, in the order they were added, each with ``damage``: None, or why
        the row cannot be trusted."""
        return [self._decode(r) for r in self._query("SELECT * FROM measurements ORDER BY id")]

    def damaged(self) -> list[tuple[int, str, str]]:
        """(id, case name, why) of every damaged row."""
        return [(r["id"], r["case_name"], r["damage"]) for r in self.rows() if r["damage"]]

    def _decode(self, row: sqlite3.Row) -> dict:
        result = dict(row)
        bad = [column for column, value in result.items() if isinstance(value, _BadText)]
        damage = f"{bad[0]} is not UTF-8 text" if bad else None
        if not damage and self.schema_version >= 3 and result["checksum"] != _checksum(result):
            damage = "its checksum does not match its contents"
        for column in _JSON_COLUMNS:
            if result.get(column) is not None:
                try:
                    result[column] = json.loads(result[column])
                except (ValueError, TypeError):  # TypeError: a number where JSON text was
                    damage = damage or f"{column} is not JSON"
        if not damage and result["status"] not in self.statuses:
            damage = f"its status {result['status']!r} is not one of schema {self.schema_version}"
        result["damage"] = damage or _timing_damage(result)
        return result

    def add_code(self, code_sha256: str, target: str, code: str) -> None:
        with self._failures(writing=True), self._conn:
            self._conn.execute("INSERT OR IGNORE INTO kernels VALUES (?, ?, ?)",
                               (code_sha256, target, code))

    def code(self, code_sha256: str) -> str | None:
        rows = self._query("SELECT code FROM kernels WHERE code_sha256 = ?", code_sha256)
        return rows[0][0] if rows else None

    def add(self, row: dict) -> int | None:
        """Append one measurement and commit it; returns its id, or None where a row
        with its key is stored already (by another process at the same moment, say).
        Identity columns, the time of recording and the checksum are filled in."""
        status = row.get("status")
        if status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
        if status not in self.statuses:
            raise StoreMismatchError(
                f"{self.path} has schema version {self.schema_version}, which cannot record "
                f"the status {status!r} ({row.get('case_name')}); measure into a new store "
                f"(another --db), which is created with schema version {SCHEMA_VERSION}")
        unknown = set(row) - set(self._columns) - set(_NOT_CHECKSUMMED)
        if unknown:
            raise ValueError(f"a measurement has no column {', '.join(sorted(unknown))}")
        given = {**row, **self.identity, "recorded_at": _now()}
        values = {c: _stored(c, given.get(c)) for c in self._columns
                  if c not in _NOT_CHECKSUMMED}
        if "checksum" in self._columns:
            values["checksum"] = _checksum(values)
        columns, marks = ", ".join(values), ", ".join("?" for _ in values)
        try:
            with self._failures(writing=True):
                cursor = self._insert(values, columns, marks, row.get("case_name"))
        except sqlite3.IntegrityError as err:
            if "UNIQUE" in str(err) and "measurements.key" in str(err):
                return None
            raise
        return cursor.lastrowid

    def _insert(self, values: dict, columns: str, marks: str, case_name):
        """Insert and commit one row, counted before the commit: Ctrl-C or SIGTERM right
        after it finds the row counted; one before it, or a failed commit, finds the row
        rolled back and uncounted (before a StoreError says how many rows are stored)."""
        counted = False
        try:
            with self._conn:
                cursor = self._conn.execute(
                    f"INSERT INTO measurements ({columns}) VALUES ({marks})",
                    list(values.values()))
                stored = self._conn.execute("SELECT * FROM measurements WHERE id = ?",
                                            (cursor.lastrowid,)).fetchone()
                damage = self._decode(stored)["damage"]
                if damage:  # rolled back: a row that would read back as damaged
                    raise ValueError(f"the measurement of {case_name} is not "
                                     f"consistent: {damage}")
                self._count(1)
                counted = True
        except BaseException:
            if counted and not self._holds(values["key"]):
                self._count(-1)
            raise
        return cursor

    def _holds(self, key: str) -> bool:
        """Whether a row of *key* is stored (False where the store cannot be read)."""
        try:
            return self.get(key) is not None
        except (StoreError, sqlite3.Error):
            return False

    def _count(self, rows: int) -> None:
        self.added += rows
        real = os.path.realpath(self.path)
        _ADDED[real] = _ADDED.get(real, 0) + rows


# {{{ creation: complete in a temporary file, then linked into place

def _create(path: Path, identity: dict) -> None:
    """A complete store of schema version SCHEMA_VERSION at *path*, unless another
    process put a store there first (then it is left as it is, to be opened)."""
    temp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.{_HOST}"
                          ".creating")
    try:
        try:
            os.close(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            conn = sqlite3.connect(temp)
            try:
                conn.execute("PRAGMA journal_mode = MEMORY")  # a private file, synced below
                with conn:
                    _initialize(conn, identity)
            finally:
                conn.close()
            _fsync(temp)
            _link(temp, path)
            _fsync(path.parent)
        except (sqlite3.Error, OSError) as err:
            number = getattr(err, "errno", None)
            if number in (errno.EACCES, errno.EPERM, errno.EROFS) or "readonly" in str(err):
                why = f"{path.parent} is read-only"
            elif number in (errno.ENOSPC, errno.EDQUOT) or "disk is full" in str(err):
                why = "the disk is full"
            else:
                why = getattr(err, "strerror", None) or str(err)
            raise StoreError(f"cannot create {path}: {why}") from None
    finally:
        with contextlib.suppress(OSError):
            temp.unlink(missing_ok=True)


def _initialize(conn: sqlite3.Connection, identity: dict) -> None:
    """Write the tables and meta of a new store of schema version SCHEMA_VERSION into the
    empty database of *conn*, in one transaction (executescript would commit each part)."""
    statement = ""
    for part in _schema(SCHEMA_VERSION).split(";"):
        statement += part + ";"
        if sqlite3.complete_statement(statement):  # a trigger's body has ";" in it
            if statement.strip(" \n;"):
                conn.execute(statement)
            statement = ""
    conn.executemany(
        "INSERT INTO meta VALUES (?, ?)",
        [("schema_version", str(SCHEMA_VERSION)), ("created_at", _now()),
         *((k, identity[k]) for k in IDENTITY),
         *([("instance", identity["instance"])] if identity.get("instance") else [])])


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _link(temp: Path, path: Path) -> None:
    """Put *temp* at *path* unless something is there by now (another process's store,
    or any other file: opened as it is, never replaced)."""
    try:
        os.link(temp, path)  # never overwrites
    except FileExistsError:
        pass
    except OSError as err:
        if err.errno not in _NO_HARD_LINKS:
            raise
        _replace_under_lock(temp, path)


def _replace_under_lock(temp: Path, path: Path) -> None:
    """Where hard links are not supported: rename *temp* to *path* unless something is
    there, under a lock of .NAME.lock (which stays)."""
    with open_lock_file(path.with_name(f".{path.name}.lock")) as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        if not os.path.lexists(path):
            os.replace(temp, path)


def _remove_stale_temporaries(folder: Path) -> None:
    """Remove the temporary files of store creation in *folder* left by dead processes of
    this host (.NAME.PID-TOKEN.HOST.creating)."""
    with contextlib.suppress(OSError):
        for name in os.listdir(folder):
            match = _TEMPORARY.match(name)
            if match and match["host"] == _HOST and not _alive(int(match["pid"])):
                with contextlib.suppress(OSError):
                    if stat.S_ISREG(os.lstat(folder / name).st_mode):  # a FIFO is not ours
                        os.unlink(folder / name)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

# }}}


def read_measurements(path):
    """The store at *path* as a pandas DataFrame, one row per measurement, with the
    parameters spread into columns ``param_<name>`` and ``damage`` (None on good rows)."""
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
