"""Device profiles: a fitted model as versioned JSON, for any registered model.

A profile holds the model's name and parameters, what its fit produced
(``Model.fitted_state``: weights for the fitted models, the hardware description for
Hong–Kim), the device, driver and backend it describes, the suite and store it was fitted
from (the store's path relative to the profile), fit diagnostics with every solver's
outcome, kernelcast's version and the time it was written. ``save_profile`` writes one;
``load_profile`` validates it, every field's type included, and returns the fitted model;
whatever is wrong with the file (missing, a directory, unreadable, binary, not JSON, a
measurement store, a field of the wrong type) is a ProfileError that names the file and
the problem. ``check_profile_path`` refuses, before a calibration measures anything, a
path where no profile could be written (a directory, a FIFO or device node or anything
else that is not a regular file, a measurement store, a file that is not a profile, a
folder that cannot be written).

Format 1 (kernelcast 0.1 before the model interface: the paper's model, or the extended
model under the name "kernelcast") still loads.

``find_profiles`` finds the profiles of a model by the name of their device, where
calibrate writes them (kernelcast-data/, calibrate's default) and among the committed ones
(data/profiles/ of the current folder, and of the source checkout kernelcast runs from):
files named ``<device>-<backend>[-<instance>]-<model>.json`` whose model is that model and
whose device is named like the name asked for.

``same_profile`` tells whether a file holds a model's profile but for the time it was
written (a refit that changed nothing need not replace it).

Public names: PROFILE_FORMAT, PROFILE_FOLDERS, save_profile, load_profile,
profile_document, same_profile, check_profile_path, profile_folders, find_profiles,
named_like.
"""

from __future__ import annotations

import datetime as _dt
import errno
import json
import math
import os
import re
import tempfile
from pathlib import Path

from kernelcast.errors import KernelcastError, ProfileError, UsageError
from kernelcast.frontends.files import (SQLITE_MAGIC, check_regular_file, describe_os_error,
                                       json_kind, read_json_file, read_regular_file)
from kernelcast.models import model_class
from kernelcast.version import __version__

PROFILE_FORMAT = 2
_HEADER = ("device", "driver", "backend")
#: where find_profiles looks, in this order (relative to the current folder): the folder
#: calibrate writes to and the committed profiles
PROFILE_FOLDERS = ("kernelcast-data", "data/profiles")
#: the committed profiles of the source checkout kernelcast runs from (an editable
#: install); not there in an installed wheel
_CHECKOUT_PROFILES = Path(__file__).resolve().parents[2] / "data" / "profiles"


def _jsonable(value):
    return list(value) if isinstance(value, tuple) else value


def profile_document(model, store: str | None = None) -> dict:
    """The JSON document of fitted *model*; *store* overrides the store's path."""
    model.check_fitted()
    prov = model.provenance_
    return {
        "format": PROFILE_FORMAT, "model": model.name,
        "params": {k: _jsonable(v) for k, v in model.get_params().items()},
        "device": prov["device"], "driver": prov["driver"], "backend": prov["backend"],
        "compute_units": prov.get("compute_units"),
        **({"instance": prov["instance"]} if prov.get("instance") else {}),
        **({"limits": prov["limits"]} if prov.get("limits") else {}),
        "suite": prov.get("suite", ""),
        "store": prov.get("store", "") if store is None else store,
        "kernelcast_version": __version__,
        "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "fit": {"suites": prov.get("suites", []), "cases": prov.get("cases", 0),
                **model.fit_report_},
        "state": model.fitted_state(),
    }


def _write_error(path: Path, err: OSError) -> KernelcastError:
    """A failed write: the path's fault (exit 2) or the machine's (a full disk, exit 1)."""
    message = f"cannot write the profile {path}: {describe_os_error(err)}"
    if err.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS):
        return KernelcastError(message)
    return ProfileError(message)


def _existing_profile_problem(path: Path) -> str | None:
    """Why the existing file at *path* must not be overwritten with a profile, if so
    (a ProfileError where it cannot be read)."""
    head = read_regular_file(path, "profile", ProfileError, limit=1 << 20) or b""
    if head.startswith(SQLITE_MAGIC):
        return "a measurement store, not a profile; did you mean --db?"
    if not head.strip():
        return None
    try:
        doc = json.loads(head.decode("utf-8"))
    except (ValueError, RecursionError):  # also UnicodeDecodeError
        doc = None
    if not (isinstance(doc, dict) and "model" in doc and "format" in doc):
        return "not a kernelcast profile; refusing to overwrite it"
    return None


def check_profile_path(path) -> Path:
    """*path* as a Path, where a profile can be written; else a ProfileError saying why
    (a directory, a measurement store or another file that is not a profile, a name too
    long, a folder that is a file or cannot be written). Nothing is created."""
    if not isinstance(path, (str, os.PathLike)):
        raise UsageError(f"a profile is written to a path, got {type(path).__name__}")
    path = Path(path)
    if not str(path) or path.name in ("", ".", ".."):
        raise ProfileError(f"{str(path) or '(empty)'!r} is not a file name for a profile")
    if os.path.isdir(path):
        raise ProfileError(f"{path} is a directory; give the profile's file name, such "
                           f"as {path / 'profile.json'}")
    info = check_regular_file(path, "profile", ProfileError)  # a FIFO, a device: refused
    if info is not None:
        problem = _existing_profile_problem(path)
        if problem:
            raise ProfileError(f"{path} is {problem}" if problem.startswith("a ")
                               else f"{path}: {problem}")
        if not os.access(path, os.W_OK):
            raise ProfileError(f"cannot write the profile {path}: permission denied")
        return path
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise ProfileError(f"cannot write the profile {path}: {folder} is not a directory")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ProfileError(f"cannot write the profile {path}: permission denied in {folder}")
    for part in path.parts:
        if len(os.fsencode(part)) > 255:
            raise ProfileError(f"cannot write the profile {path}: file name too long")
    return path


def save_profile(model, path) -> Path:
    """Write fitted *model* as JSON to *path*; the store's path is written relative to
    the profile's folder. The file is replaced whole (written beside it, then renamed),
    so a failed write (a full disk) leaves any earlier profile as it was."""
    model.check_fitted()
    path = check_profile_path(path)
    text = json.dumps(_document_at(model, path), indent=1) + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:200]}.", suffix=".tmp",
                                   dir=path.parent)
    except OSError as err:
        raise _write_error(path, err) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as err:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise _write_error(path, err) from None
    return path


def _document_at(model, path: Path) -> dict:
    """The document save_profile writes for *model* at *path*: the store's path and those
    of the files the model read relative to the profile's folder."""
    store = model.provenance_.get("store", "")
    if store:
        store = os.path.relpath(Path(store).resolve(), path.parent.resolve())
    doc = profile_document(model, store)
    for key in _file_params(model):  # relative to the profile, like the store
        value = doc["params"].get(key)
        if isinstance(value, str) and _is_file_path(value):
            doc["params"][key] = os.path.relpath(Path(value).resolve(),
                                                 path.parent.resolve())
    return doc


def same_profile(model, path) -> bool:
    """Whether the file at *path* holds what save_profile would write there for fitted
    *model* but for the time it was written (created_at): the same fit, so a refit need
    not replace it. False where there is no such file, it is not a regular file (never
    opened: a FIFO would block) or it is not JSON."""
    model.check_fitted()
    path = Path(path)
    try:
        before = json.loads(read_regular_file(path, "profile", ProfileError) or b"")
    except (KernelcastError, ValueError, RecursionError):  # also UnicodeDecodeError
        return False
    after = json.loads(json.dumps(_document_at(model, path)))  # tuples as lists
    return isinstance(before, dict) and {**before, "created_at": None} == {
        **after, "created_at": None}


def load_profile(path):
    """The fitted model a profile written by ``save_profile`` (or format 1) holds; the
    store's path comes back relative to the current folder. Whatever is wrong with the
    file is a ProfileError naming it."""
    doc = read_json_file(path, "profile")
    path = Path(path)
    if not isinstance(doc, dict):
        kind = json_kind(doc).removeprefix("a ").removeprefix("an ")
        raise ProfileError(f"{path}: not a kernelcast profile (a JSON {kind}, not an "
                           "object)")
    version = doc.get("format")
    if not _is_int(version) or version not in (1, PROFILE_FORMAT):
        raise ProfileError(f"{path}: profile format {version!r} is not one this kernelcast "
                           f"reads (1 or {PROFILE_FORMAT}); refit it with `kernelcast "
                           "calibrate` or `kernelcast fit`")
    try:
        return _model(_from_format_1(doc) if version == 1 else doc, path)
    except KernelcastError as err:
        raise ProfileError(f"{path}: {err}") from None


# {{{ finding a device's profile

def profile_folders() -> list[Path]:
    """The folders find_profiles looks in, in order: PROFILE_FOLDERS of the current
    folder, then data/profiles/ of the source checkout kernelcast runs from where that is
    another folder (so a checkout's committed profiles are found from anywhere)."""
    folders = [Path(f) for f in PROFILE_FOLDERS]
    seen = {f.resolve() for f in folders}
    if _CHECKOUT_PROFILES.is_dir() and _CHECKOUT_PROFILES not in seen:
        folders.append(_CHECKOUT_PROFILES)
    return folders


def _slugged(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def named_like(device: str, name: str) -> bool:
    """Whether *device* (what a user typed: "h100", "NVIDIA H200", "xeon") names the
    device *name*: a part of it, ignoring case, or of its slug (as the profiles' file names
    spell it: "h100-80gb")."""
    device = device.strip()
    if not device:
        return False
    return device.lower() in name.lower() or (
        bool(_slugged(device)) and _slugged(device) in _slugged(name))


def find_profiles(model: str, device: str | None = None,
                  backend: str | None = None) -> list[tuple[Path, dict]]:
    """(path, document) of every profile of *model* in profile_folders(), in their order
    and by file name within each: files ``*-<model>.json`` whose "model" is *model*,
    whose device is named like *device* (a part of its name, ignoring case, or of its
    slug; None: any) and, given *backend*, whose backend is that. Files that cannot be read
    as a JSON object (a FIFO among them) are passed over; a profile found is not
    validated (load_profile does that)."""
    from kernelcast.frontends.files import read_json_file

    found, seen = [], set()
    for folder in profile_folders():
        try:
            paths = sorted(folder.glob(f"*-{model}.json"))
        except OSError:
            continue
        for path in paths:
            real = path.resolve()
            if real in seen:
                continue
            seen.add(real)
            try:
                doc = read_json_file(path, "profile")
            except KernelcastError:
                continue
            if not (isinstance(doc, dict) and doc.get("model") == model
                    and isinstance(doc.get("device"), str)):
                continue
            if device is not None and not named_like(device, doc["device"]):
                continue
            if backend is not None and doc.get("backend") != backend:
                continue
            found.append((path, doc))
    return found

# }}}


# {{{ validation

def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _strings(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _limits(value) -> bool:
    """The device limits a profile records (kernelcast.tune.limits)."""
    def positive(v, optional=True):
        return (optional and v is None) or (_is_int(v) and v >= 1)

    return (isinstance(value, dict)
            and set(value) <= {"max_group_size", "local_mem_bytes", "warp_size", "source"}
            and positive(value.get("max_group_size"), optional=False)
            and positive(value.get("local_mem_bytes")) and positive(value.get("warp_size"))
            and isinstance(value.get("source", ""), str))


_CHECKS = {  # name: (test, what it should be)
    "string": (lambda v: isinstance(v, str), "a string"),
    "object": (lambda v: isinstance(v, dict), "an object"),
    "count": (lambda v: _is_int(v) and v >= 0, "a non-negative integer"),
    "units": (lambda v: v is None or (_is_int(v) and v >= 1), "a positive integer or null"),
    "number": (lambda v: _is_number(v) and math.isfinite(v), "a finite number"),
    "nonnegative": (lambda v: _is_number(v) and math.isfinite(v) and v >= 0,
                    "a non-negative number"),
    "boolean": (lambda v: isinstance(v, bool), "true or false"),
    "strings": (_strings, "a list of strings"),
    "limits": (_limits, "one with a positive integer max_group_size, local_mem_bytes and "
               "warp_size positive integers or null, and a string source"),
    "string or null": (lambda v: v is None or isinstance(v, str), "a string or null"),
    "sizes": (lambda v: isinstance(v, list) and bool(v)
              and all(_is_int(i) and i >= 1 for i in v),
              "a non-empty list of positive integers"),
    "positive or null": (lambda v: v is None or (_is_int(v) and v >= 1),
                         "a positive integer or null"),
    "solver": (lambda v: isinstance(v, list) and all(isinstance(s, dict) for s in v),
               "a list of objects"),
}

# fields of a format-2 profile: name -> (kind, required)
_FIELDS = {"model": ("string", True), "device": ("string", True),
           "driver": ("string", True), "backend": ("string", True),
           "state": ("object", True), "params": ("object", False),
           "compute_units": ("units", False), "instance": ("string", False),
           "limits": ("limits", False), "suite": ("string", False),
           "store": ("string", False), "kernelcast_version": ("string", False),
           "created_at": ("string", False), "fit": ("object", False)}
_FIT_FIELDS = {"suites": "strings", "cases": "count", "criterion": "string",
               "negative_weights": "strings", "solver": "solver",
               "training_geomean_rel_error": "nonnegative",
               "training_max_rel_error": "nonnegative", "nonnegative": "boolean"}


def _check(where: str, value, kind: str) -> None:
    test, should = _CHECKS[kind]
    if not test(value):
        raise ProfileError(f"{where} is {json_kind(value)}, not {should}")


def _check_fields(doc: dict) -> None:
    for key, (kind, required) in _FIELDS.items():
        if key in doc:
            _check(key, doc[key], kind)
        elif required:
            raise ProfileError(f"missing {key!r}")
    fit = doc.get("fit", {})
    for key, kind in _FIT_FIELDS.items():
        if key in fit:
            _check(f"fit.{key}", fit[key], kind)
    for i, entry in enumerate(fit.get("solver", [])):
        for key, kind in (("method", "string"), ("success", "boolean"),
                          ("message", "string")):
            if key in entry:
                _check(f"fit.solver[{i}].{key}", entry[key], kind)
    cls = model_class(doc["model"])
    for key, value in doc.get("params", {}).items():  # as the model declares them
        parameter = cls.parameter(key)
        if parameter is not None and parameter.problem(value):
            raise ProfileError(f"params.{key} is {json_kind(value)}, not "
                               f"{parameter.describe()}")


# }}}


def _file_params(model) -> tuple[str, ...]:
    """The parameters of *model* (a model or its class) that may name a file."""
    return tuple(p.name for p in model.parameters if p.names_file)


def _is_file_path(value: str) -> bool:
    return bool(value) and (Path(value).suffix != "" or "/" in value or os.sep in value) \
        and Path(value).is_file()


def _resolved_params(cls, params: dict, path: Path) -> dict:
    """*params* with file paths relative to the profile's folder made relative to the
    current folder (a path that names no file there is kept as written: older profiles
    wrote them relative to the folder they were fitted in)."""
    params = {key: tuple(value) if isinstance(value, list) and cls.parameter(key)
              and cls.parameter(key).kind == "sizes" else value
              for key, value in params.items()}  # JSON has no tuples
    for key in _file_params(cls):
        value = params.get(key)
        if isinstance(value, str) and value and not os.path.isabs(value):
            beside = path.parent / value
            if _is_file_path(str(beside)):
                params[key] = os.path.normpath(beside)
    return params


def _model(doc: dict, path: Path):
    _check_fields(doc)
    cls = model_class(doc["model"])
    params = _resolved_params(cls, doc.get("params", {}), path)
    try:
        model = cls(**params)
    except TypeError as err:
        raise ProfileError(f"parameters {params} do not fit the {cls.name} model: "
                           f"{err}") from None
    model.check_params()
    state = doc["state"]
    try:
        model.restore(state)
    except KernelcastError:
        raise
    except (TypeError, ValueError, AttributeError, KeyError) as err:
        raise ProfileError(f"the state does not fit the {cls.name} model: "
                           f"{type(err).__name__}: {err}") from None
    store = doc.get("store", "")
    if store:
        store = os.path.normpath(path.parent / store)
    fit = dict(doc.get("fit", {}))
    model.provenance_ = {key: doc[key] for key in _HEADER} | {
        "compute_units": doc.get("compute_units"), "instance": doc.get("instance", ""),
        **({"limits": doc["limits"]} if doc.get("limits") else {}),
        "suite": doc.get("suite", ""), "store": store, "suites": fit.pop("suites", []), "cases": fit.pop("cases", 0),
        "created_at": doc.get("created_at", ""),
        "kernelcast_version": doc.get("kernelcast_version", "")}
    model.fit_report_ = fit
    return model


def _from_format_1(doc: dict) -> dict:
    """A format-1 profile in format 2's shape, converted by the model that reads it
    (Model.format_1_names, Model.from_format_1)."""
    from kernelcast.models import model_names, workloads

    old = doc.get("model")
    if old is not None and not isinstance(old, str):
        raise ProfileError(f"model is {json_kind(old)}, not a string")
    fit = doc.get("fit", {})
    _check("fit", fit, "object")
    fit = dict(fit)
    cls = next((model_class(n) for w in workloads() for n in model_names(w)
                if old in model_class(n).format_1_names), None)
    if cls is None:
        raise ProfileError(f"unknown model {old!r} in a format-1 profile")
    params, state = cls.from_format_1(doc)
    name = cls.name
    return {**doc, "format": PROFILE_FORMAT, "model": name, "params": params,
            "state": state, "fit": fit}
