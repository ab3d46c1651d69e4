"""Device profiles: fitted weights with their units and where they came from, as JSON.

A profile is what a user keeps per device: the weights of the model (seconds per unit of
each property; for kernelcast's model also the exponent q with which its per-work-item
terms and totals overlap and the work-items the device runs at once,
kernelcast.models.overlap), the device, driver and backend they
were measured on, the suite and store they were fitted from, fit diagnostics, and the
kernelcast version. ``save`` writes versioned JSON; ``load_profile`` validates it and
names what is wrong.

Public names: PROFILE_FORMAT, Profile, load_profile.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from kernelcast.errors import KernelcastError, UncountedWarning
from kernelcast.models.features import EXTENDED_FEATURES, FEATURE_UNITS, MODELS
from kernelcast.models.overlap import overlap, term_group, waves
from kernelcast.properties.vocabulary import PROPERTY_NAMES

PROFILE_FORMAT = 1


@dataclass
class Profile:
    """Weights (seconds per unit) by property name, and their provenance."""

    weights: dict[str, float]
    device: str
    driver: str
    backend: str
    suite: str = ""
    store: str = ""
    model: str = "paper"
    fit: dict = field(default_factory=dict)
    kernelcast_version: str = ""
    created_at: str = ""
    overlap: float | None = None
    resident_items: int | None = None

    def contributions(self, values: dict[str, float]) -> dict[str, float]:
        """Seconds per nonzero property of *values*; sums to the prediction. Per-work-item
        terms count once per wave of resident work-items. Where the per-work-item terms
        and totals overlap, each of their weight × count is scaled by the same factor, so
        the parts keep their proportions. Nonzero properties the profile has no weight for
        are left out with an UncountedWarning."""
        weights, parts, missing = self.weights, {}, []
        repeat = waves(float(values.get("work_items", 1.0)), self.resident_items)
        sums = {"constant": 0.0, "item": 0.0, "total": 0.0}  # one pass: a hot path
        for name, value in values.items():
            group = term_group(name)
            if not value or group == "context":
                continue
            if name not in weights:
                missing.append(name)
                continue
            part = weights[name] * value * (repeat if group == "item" else 1.0)
            parts[name] = part
            sums[group] += part
        if missing:
            warnings.warn(f"the profile for {self.device} has no weight for {sorted(missing)} "
                          "(no measurement kernel exercised them); they count as zero",
                          UncountedWarning, stacklevel=3)
        items, totals = sums["item"], sums["total"]
        if self.overlap is not None and self.overlap != 1 and items > 0 and totals > 0:
            factor = overlap(0.0, totals, items, self.overlap) / (totals + items)
            parts = {k: v if term_group(k) == "constant" else v * factor
                     for k, v in parts.items()}
        return parts

    def predict_values(self, values: dict[str, float]) -> float:
        return float(sum(self.contributions(values).values()))

    def to_json(self, store: str | None = None) -> dict:
        return {
            "format": PROFILE_FORMAT, "model": self.model, "device": self.device,
            "driver": self.driver, "backend": self.backend, "suite": self.suite,
            "store": self.store if store is None else store, "kernelcast_version": self.kernelcast_version,
            "created_at": self.created_at or _dt.datetime.now(_dt.timezone.utc).isoformat(
                timespec="seconds"),
            "weights": {name: {"value": w, "unit": "s", "per": FEATURE_UNITS.get(name, "count")}
                        for name, w in self.weights.items()},
            "fit": self.fit,
            **({} if self.overlap is None else {"overlap": self.overlap}),
            **({} if self.resident_items is None else {"resident_items": self.resident_items}),
        }

    def save(self, path) -> Path:
        """Write JSON; the store's path is written relative to the profile's folder."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        store = self.store and os.path.relpath(Path(self.store).resolve(),
                                               path.parent.resolve())
        path.write_text(json.dumps(self.to_json(store), indent=1) + "\n", encoding="utf-8")
        return path


def load_profile(path) -> Profile:
    """Read and validate a profile written by Profile.save; the store's path comes back
    relative to the current folder."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise KernelcastError(f"no profile at {path}") from None
    except json.JSONDecodeError as err:
        raise KernelcastError(f"{path} is not JSON: {err}") from None
    if not isinstance(doc, dict) or doc.get("format") != PROFILE_FORMAT:
        raise KernelcastError(f"{path}: not a kernelcast profile of format {PROFILE_FORMAT} "
                              f"(format {doc.get('format') if isinstance(doc, dict) else None})")
    for key in ("device", "driver", "backend", "weights"):
        if key not in doc:
            raise KernelcastError(f"{path}: missing {key!r}")
    model = {"linear": "paper"}.get(doc.get("model", "paper"), doc.get("model"))
    if model not in MODELS:
        raise KernelcastError(f"{path}: unknown model {model!r}; known: {', '.join(MODELS)}")
    known = PROPERTY_NAMES if model == "paper" else (*PROPERTY_NAMES, *EXTENDED_FEATURES)
    weights = {}
    for name, entry in doc["weights"].items():
        if name not in known:
            raise KernelcastError(f"{path}: unknown property {name!r}")
        value = entry.get("value") if isinstance(entry, dict) else None
        if not isinstance(value, int | float) or not math.isfinite(value):
            raise KernelcastError(f"{path}: weight of {name!r} is not a finite number")
        weights[name] = float(value)
    exponent = doc.get("overlap")
    if exponent is not None and (model != "kernelcast" or not isinstance(exponent, int | float)
                                 or not exponent >= 1 or not math.isfinite(exponent)):
        raise KernelcastError(f"{path}: overlap {exponent!r} is not an exponent of at least "
                              "1 of a kernelcast profile")
    resident = doc.get("resident_items")
    if resident is not None and (model != "kernelcast" or isinstance(resident, bool)
                                 or not isinstance(resident, int) or resident < 1):
        raise KernelcastError(f"{path}: resident_items {resident!r} is not a positive "
                              "integer of a kernelcast profile")
    store = doc.get("store", "")
    if store:
        store = os.path.normpath(path.parent / store)
    return Profile(weights, doc["device"], doc["driver"], doc["backend"],
                   doc.get("suite", ""), store, model,
                   doc.get("fit", {}), doc.get("kernelcast_version", ""),
                   doc.get("created_at", ""), None if exponent is None else float(exponent),
                   resident)
