"""Device profiles: a fitted model as versioned JSON, for any registered model.

A profile holds the model's name and parameters, what its fit produced
(``Model.fitted_state``: weights for the fitted models, the hardware description for
Hong–Kim), the device, driver and backend it describes, the suite and store it was fitted
from (the store's path relative to the profile), fit diagnostics with every solver's
outcome, kernelcast's version and the time it was written. ``save_profile`` writes one;
``load_profile`` validates it and returns the fitted model, naming what is wrong.

Format 1 (kernelcast 0.1 before the model interface: the paper's model, or the extended
model under the name "kernelcast") still loads.

Public names: PROFILE_FORMAT, save_profile, load_profile, profile_document.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
from pathlib import Path

from kernelcast.errors import KernelcastError
from kernelcast.models import model_class
from kernelcast.version import __version__

PROFILE_FORMAT = 2
_HEADER = ("device", "driver", "backend")


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
        "compute_units": prov.get("compute_units"), "suite": prov.get("suite", ""),
        "store": prov.get("store", "") if store is None else store,
        "kernelcast_version": __version__,
        "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "fit": {"suites": prov.get("suites", []), "cases": prov.get("cases", 0),
                **model.fit_report_},
        "state": model.fitted_state(),
    }


def save_profile(model, path) -> Path:
    """Write fitted *model* as JSON to *path*; the store's path is written relative to
    the profile's folder."""
    model.check_fitted()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    store = model.provenance_.get("store", "")
    if store:
        store = os.path.relpath(Path(store).resolve(), path.parent.resolve())
    doc = profile_document(model, store)
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return path


def load_profile(path):
    """The fitted model a profile written by ``save_profile`` (or format 1) holds; the
    store's path comes back relative to the current folder."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise KernelcastError(f"no profile at {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise KernelcastError(f"{path} is not a JSON profile: {err}") from None
    if not isinstance(doc, dict):
        raise KernelcastError(f"{path}: not a kernelcast profile")
    if doc.get("format") not in (1, PROFILE_FORMAT):
        raise KernelcastError(f"{path}: profile format {doc.get('format')!r} is not one this "
                              f"kernelcast reads (1 or {PROFILE_FORMAT}); refit it with "
                              "`kernelcast calibrate` or `kernelcast fit`")
    try:
        return _model(_from_format_1(doc) if doc["format"] == 1 else doc, path)
    except KernelcastError as err:
        raise KernelcastError(f"{path}: {err}") from None


def _model(doc: dict, path: Path):
    for key in (*_HEADER, "model", "state"):
        if key not in doc:
            raise KernelcastError(f"missing {key!r}")
    for key in _HEADER:
        if not isinstance(doc[key], str):
            raise KernelcastError(f"{key} is not a string")
    params = doc.get("params", {})
    if not isinstance(params, dict):
        raise KernelcastError("params is not an object")
    cls = model_class(doc["model"])
    try:
        model = cls(**params)
    except TypeError as err:
        raise KernelcastError(f"parameters {params} do not fit the {cls.name} model: "
                              f"{err}") from None
    model.restore(doc["state"])
    store = doc.get("store", "")
    if store:
        store = os.path.normpath(path.parent / store)
    fit = dict(doc.get("fit", {}))
    model.provenance_ = {key: doc[key] for key in _HEADER} | {
        "compute_units": doc.get("compute_units"), "suite": doc.get("suite", ""),
        "store": store, "suites": fit.pop("suites", []), "cases": fit.pop("cases", 0),
        "created_at": doc.get("created_at", ""),
        "kernelcast_version": doc.get("kernelcast_version", "")}
    model.fit_report_ = fit
    return model


def _from_format_1(doc: dict) -> dict:
    """A format-1 profile in format 2's shape: "paper" (or "linear") and "kernelcast",
    now "extended", with its overlap exponent as the model's q."""
    name = {"linear": "paper", "kernelcast": "extended"}.get(doc.get("model", "paper"),
                                                           doc.get("model"))
    fit = dict(doc.get("fit", {}))
    if name == "paper":
        params = {"nonnegative": bool(fit.get("nonnegative", False))}
        state = {"weights": doc.get("weights")}
    elif name == "extended":
        q = doc.get("overlap", 1.0)
        if isinstance(q, bool) or not isinstance(q, int | float) or not math.isfinite(q) \
                or q < 1:
            raise KernelcastError(f"overlap {q!r} is not an exponent of at least 1")
        params = {"q": float(q)}
        state = {"weights": doc.get("weights"), "resident_items": doc.get("resident_items")}
    else:
        raise KernelcastError(f"unknown model {name!r} in a format-1 profile")
    return {**doc, "format": PROFILE_FORMAT, "model": name, "params": params,
            "state": state, "fit": fit}
