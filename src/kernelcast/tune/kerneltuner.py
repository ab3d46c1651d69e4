"""A bridge both ways between the measurement store and Kernel Tuner's cache files.

Kernel Tuner (1.5) records every configuration it benchmarks in a JSON cache file, and
its simulation mode tunes from one without a GPU. ``export_cache`` writes the tuning rows
of one family (case names ``FAMILY/KEY``, KEY as ``space.variant_key`` makes it) as such
a file; ``import_cache`` reads one, finished or still being appended to, into store rows.

The format, as kernel_tuner 1.5 writes and reads it (``util.process_cache``,
``store_cache``, ``read_cache``, ``correct_open_cache``): a JSON object with
``device_name``, ``kernel_name``, ``problem_size``, ``tune_params_keys`` (the parameter
order), ``tune_params`` (each parameter's values), ``objective`` and ``cache``, which maps
the parameter values joined by "," (``str`` of each, so booleans are ``True``/``False``) to
an entry: the parameter values, ``time`` (milliseconds), ``times`` (each run, ms) and
more. A configuration that failed has ``__error__`` (older files: ``time``) set to
``InvalidConfig``, ``CompilationFailedConfig`` or ``RuntimeFailedConfig``. Kernel Tuner
appends one entry a line, each ending with ","; a finished file ends with ``}\\n}``, and one
still being written is read as if closed there (the trailing comma dropped).

Mapping. A timed row (ok, unstable) becomes ``time`` = min_s and ``times`` = the runs
that count (times_s after the dropped ones), both in ms. compile_error becomes
CompilationFailedConfig; size_out_of_range InvalidConfig; launch_error, out_of_memory,
wrong_answer, failed and crashed RuntimeFailedConfig. Back, CompilationFailedConfig is
compile_error, RuntimeFailedConfig launch_error, any other failure ``failed`` with the
Kernel Tuner name in the message. An imported entry's runs are its ``times`` (or its one
``time`` where it has none), none dropped; min_s and median_s are their minimum and median
(the store requires that), so for a file kernelcast wrote min_s is the entry's ``time``.
The size parameters travel as an extra top-level ``kernelcast_params`` (Kernel Tuner
ignores it); a foreign file's ``problem_size`` becomes ``{"problem_size": N}`` or
``problem_size_x``/``_y``/``_z``.

What does not round-trip: ``unstable`` comes back ``ok``; out_of_memory, wrong_answer,
failed and crashed come back launch_error, size_out_of_range comes back ``failed``; messages,
dropped runs, spreads, attempts, code and build options are not in the file; times pass
through milliseconds (equal to within a rounding, 1e-15 relative). Kernel Tuner's own
``time`` is the mean of its runs, which kernelcast does not store, and its other entry
keys (compile_time, observers' metrics) are dropped on import. ``tune_params`` lists only
the values measured, so Kernel Tuner's simulation mode needs every combination of them in
the file (or restrictions that exclude the rest).

A file or store that cannot be used is refused with a UsageError of one line naming it;
a path that is not a regular file (a FIFO, a device) is neither read nor replaced.

Public names: FAILURES, export_cache, import_cache.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import statistics
import tempfile
from pathlib import Path

from kernelcast.errors import UsageError
from kernelcast.frontends.files import check_regular_file, describe_os_error, read_regular_file
from kernelcast.measure.store import Store, measurement_key
from kernelcast.tune.space import OFF, variant_key
from kernelcast.version import __version__

# kernelcast status -> Kernel Tuner's failure name (timed statuses have none)
FAILURES = {"compile_error": "CompilationFailedConfig", "size_out_of_range": "InvalidConfig",
            "launch_error": "RuntimeFailedConfig", "out_of_memory": "RuntimeFailedConfig",
            "wrong_answer": "RuntimeFailedConfig", "failed": "RuntimeFailedConfig",
            "crashed": "RuntimeFailedConfig"}
_BACK = {"CompilationFailedConfig": "compile_error", "RuntimeFailedConfig": "launch_error"}
_ERRORS = ("ErrorConfig", "InvalidConfig", "CompilationFailedConfig", "RuntimeFailedConfig")
_TIMED = ("ok", "unstable")


def _value(text: str):
    """A variant value from its key text: an int, a boolean (true/false) or the text."""
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        return text


def _parse_key(key: str) -> list[tuple[str, object]]:
    pairs = []
    for part in key.split(","):
        name, sep, text = part.partition("=")
        if not sep or not name:
            raise ValueError(part)
        pairs.append((name, _value(text)))
    return pairs


def _parameter_order(variants) -> list[str]:
    """Every parameter the variants name, in the space's order: the axes' and unrolling
    parameters as first seen, then tile, split, prefetch and pad (kernelcast.tune.space)."""
    seen: dict[str, int] = {}
    for values in variants:
        for name in values:
            seen.setdefault(name, len(seen))
    rank = {kind: i + 1 for i, kind in enumerate(("unroll", *OFF))}
    return sorted(seen, key=lambda n: (rank.get(n.partition(".")[0], 0), seen[n]))


def export_cache(store_path, family: str, out_path, *, params=None, problem_size=None) -> int:
    """Write the rows of *family* in the store at *store_path* as a Kernel Tuner cache
    file at *out_path*; returns the number of entries. *params* (the size parameters)
    picks the rows where the family was measured at several sizes; *problem_size* is what
    the file says for Kernel Tuner's problem_size (default: the parameter values, one
    number or a list). Damaged rows are left out; of rows of one variant, the last. Keys
leave out tile, split, prefetch and pad at their off values; the file spells them out,
as Kernel Tuner needs every parameter in every entry."""
    out = Path(out_path)
    check_regular_file(out, "Kernel Tuner cache file")  # never replaces a FIFO or device
    store = Store(store_path)
    try:
        rows = [r for r in store.rows() if r["case_name"].startswith(f"{family}/")
                and not r["damage"]]
        device = store.identity["device"]
    finally:
        store.close()
    if params is not None:
        rows = [r for r in rows if r["params"] == dict(params)]
    if not rows:
        raise UsageError(f"{store_path}: no usable rows of family {family!r}"
                         + (f" at {dict(params)}" if params is not None else ""))
    sizes = {json.dumps(r["params"], sort_keys=True) for r in rows}
    if len(sizes) > 1:
        raise UsageError(f"{store_path}: family {family!r} was measured at {len(sizes)} "
                         f"sizes ({', '.join(sorted(sizes))}); pick one with params")
    size = rows[0]["params"]
    latest = {r["case_name"]: r for r in rows}  # rows come in the order they were added
    parsed = {}
    for name in latest:
        try:
            parsed[name] = dict(_parse_key(name[len(family) + 1:]))
        except ValueError:
            raise UsageError(f"{store_path}: {name} is not FAMILY/name=value,...") from None
    keys = _parameter_order(parsed.values())
    for name, values in parsed.items():
        missing = [k for k in keys if k not in values and k.partition(".")[0] not in OFF]
        if missing:
            raise UsageError(f"{store_path}: {name} gives no {', '.join(missing)}, which "
                             f"other rows of {family!r} give")
    tune_params, cache = {n: [] for n in keys}, {}
    for name, row in latest.items():
        # a key leaves out tile/split/prefetch/pad at their off value: spelled out here
        pairs = [(k, parsed[name].get(k, OFF.get(k.partition(".")[0]))) for k in keys]
        entry = dict(pairs)
        for n, v in pairs:
            if v not in tune_params[n]:
                tune_params[n].append(v)
        if row["status"] in _TIMED:
            entry["time"] = row["min_s"] * 1e3
            entry["times"] = [t * 1e3 for t in row["times_s"][row["dropped"] or 0:]]
        else:
            entry["__error__"] = FAILURES[row["status"]]
        entry["timestamp"] = str(_dt.datetime.fromisoformat(row["recorded_at"]))
        cache[",".join(str(v) for _, v in pairs)] = entry
    for values in tune_params.values():
        values.sort(key=lambda v: (isinstance(v, str), v))
    if problem_size is None:
        problem_size = list(size.values())
        problem_size = problem_size[0] if len(problem_size) == 1 else problem_size
    header = {"device_name": device, "kernel_name": family, "problem_size": problem_size,
              "tune_params_keys": keys, "tune_params": tune_params, "objective": "time",
              "kernelcast_params": size, "cache": {}}
    # laid out as Kernel Tuner writes it: the header, then one entry a line
    text = json.dumps(header, indent="")[:-3]
    text += ",".join("\n" + json.dumps({k: e})[1:-1] for k, e in cache.items()) + "}\n}\n"
    temp = None
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{out.name[:200]}.", suffix=".tmp",
                                    dir=out.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(temp, 0o644)
        os.replace(temp, out)
    except OSError as err:
        if temp is not None:
            Path(temp).unlink(missing_ok=True)
        raise UsageError(f"{out_path}: cannot write the cache file: "
                         f"{describe_os_error(err)}") from None
    return len(cache)


def _read(path) -> dict:
    """The cache file at *path* as JSON, closed first if it is still being written."""
    where = str(path)
    data = read_regular_file(path, "Kernel Tuner cache file")
    if data is None:
        raise UsageError(f"{where}: no such Kernel Tuner cache file")
    try:
        text = data.decode("utf-8").strip()
    except UnicodeDecodeError as exc:
        raise UsageError(f"{where}: cannot read the cache file: {exc}") from None
    try:
        data = json.loads(text)
    except RecursionError:
        raise UsageError(f"{where}: not a Kernel Tuner cache file (not JSON: nested too "
                         "deeply)") from None
    except ValueError as first:
        # still being appended to: close it as Kernel Tuner's correct_open_cache does
        try:
            data = json.loads(text.removesuffix(",") + "}\n}")
        except (ValueError, RecursionError):
            raise UsageError(f"{where}: not a Kernel Tuner cache file (not JSON: "
                             f"{first})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{where}: not a Kernel Tuner cache file (not a JSON object)")
    keys = data.get("tune_params_keys")
    if not (isinstance(keys, list) and keys and all(isinstance(k, str) for k in keys)):
        raise UsageError(f"{where}: tune_params_keys must be a non-empty list of names")
    if not isinstance(data.get("cache"), dict):
        raise UsageError(f"{where}: it has no cache object of entries")
    if not isinstance(data.get("device_name"), str) or not data["device_name"]:
        raise UsageError(f"{where}: it has no device_name")
    return data


def _size(data: dict) -> dict:
    if isinstance(data.get("kernelcast_params"), dict):
        return data["kernelcast_params"]
    size = data.get("problem_size")
    if isinstance(size, int):
        return {"problem_size": size}
    if isinstance(size, list) and all(isinstance(s, int) for s in size) and len(size) <= 3:
        return {f"problem_size_{axis}": s for axis, s in zip("xyz", size)}
    return {}


def _runs(where: str, key: str, entry: dict) -> list[float]:
    """The entry's runs in seconds."""
    times = entry.get("times", [entry.get("time")])
    if not (isinstance(times, list) and times and all(
            isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t)
            and t > 0 for t in times)):
        raise UsageError(f"{where}: entry {key!r} has no positive times in ms "
                         f"(time {entry.get('time')!r})")
    return [t / 1e3 for t in times]


def import_cache(cache_path, store_path, *, family: str | None = None) -> int:
    """Read the Kernel Tuner cache file at *cache_path* into the store at *store_path*
    (created for the file's device where there is none; an existing one must be of that
    device), one row per entry named ``FAMILY/KEY`` (*family*: default the file's
    kernel_name); returns the number of rows added. Entries stored before (an earlier
    import of the same file) are skipped, so a file still being written can be read again."""
    where = str(cache_path)
    data = _read(cache_path)
    family = family or data.get("kernel_name")
    if not isinstance(family, str) or not family:
        raise UsageError(f"{where}: it has no kernel_name; give the family")
    device = data["device_name"]
    try:
        store = Store(store_path)
    except UsageError:
        if Path(store_path).exists():
            raise
        store = Store(store_path, {"backend": "kernel_tuner", "device": device,
                                   "driver": "unknown"})
    with store:
        if store.identity["device"] != device:
            raise UsageError(f"{where}: measured on {device!r}, but {store_path} holds "
                             f"measurements of {store.identity['device']!r}")
        identity, params, names = store.identity, _size(data), data["tune_params_keys"]
        added = 0
        for key, entry in data["cache"].items():
            if not isinstance(entry, dict) or any(n not in entry for n in names):
                raise UsageError(f"{where}: entry {key!r} does not give every parameter "
                                 f"of {names}")
            case = f"{family}/{variant_key({n: entry[n] for n in names})}"
            error = next((v for v in [entry.get("__error__"), *entry.values()]
                          if isinstance(v, str) and v in _ERRORS), None)
            row = {"case_name": case, "params": params, "kernelcast_version": __version__,
                   "key": measurement_key(case, None, "", params, identity, __version__),
                   "message": f"imported from the Kernel Tuner cache {Path(where).name}"}
            if error is not None:
                row["status"] = _BACK.get(error, "failed")
                row["message"] = f"Kernel Tuner: {error} ({row['message']})"
            else:
                runs = _runs(where, key, entry)
                row.update(status="ok", times_s=runs, dropped=0, min_s=min(runs),
                           median_s=statistics.median(runs))
            if store.add(row) is not None:
                added += 1
    return added
