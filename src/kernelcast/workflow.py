"""The end-to-end jobs: calibrate a device, evaluate a profile on the test suite.

``calibrate`` measures the measurement suite on a device into its store (resuming any
earlier campaign), fits the linear model and writes the profile. ``evaluate_profile``
measures the test suite on the profile's device when it is present (else uses what the
store holds) and returns the paper's Table 1 with its summary.

Public names: default_paths, calibrate, evaluate_profile, device_available.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from kernelcast.errors import KernelcastError
from kernelcast.evaluate import PropertyCache, fit_profile, summarize, table1
from kernelcast.measure.backends import make_backend
from kernelcast.measure.campaign import STDERR, measure_suite
from kernelcast.measure.devices import find_device
from kernelcast.measure.store import Store
from kernelcast.models.features import default_model, fit_suites
from kernelcast.models.profile import Profile
from kernelcast.suites.paper import TEST_SUITE_OF, get_suite


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def default_paths(device: str, backend: str, root="kernelcast-data") -> tuple[Path, Path]:
    """(store, profile) paths for a device: kernelcast-data/<device>-<backend>.{sqlite,json}."""
    stem = Path(root) / f"{_slug(device)}-{backend}"
    return stem.with_suffix(".sqlite"), stem.with_suffix(".json")


def calibrate(device: str | None = None, backend: str = "opencl", db=None, profile_path=None,
              suite: str | None = None, nonnegative: bool = False, progress=STDERR,
              cache: PropertyCache | None = None, model: str | None = None,
              **options) -> tuple[Profile, Path]:
    """Measure *suite* (default: the paper's on a GPU, its CPU sizes otherwise) and what
    else *model* (default: kernelcast's on a GPU, the paper's otherwise) is fitted from,
    fit, save."""
    runner = make_backend(backend, device)
    if suite is None:
        suite = "measurement" if runner.device.kind.endswith("GPU") else "measurement-cpu"
    model = model or default_model(suite)
    suites = fit_suites(model, suite)
    store_path, default_profile = default_paths(runner.device.name, runner.name)
    db = Path(db or store_path)
    if profile_path is None and model != "paper":
        default_profile = default_profile.with_name(f"{default_profile.stem}-{model}.json")
    profile_path = Path(profile_path or default_profile)
    if progress is not None:
        print(f"calibrating {runner.device.name} ({runner.name}, driver "
              f"{runner.device.driver}) for the {model} model with the "
              f"{' and '.join(suites)} suites into {db}",
              file=sys.stderr if progress is STDERR else progress)
    with Store(db, runner.identity) as store:
        for name in suites:
            measure_suite(get_suite(name), runner, store, progress=progress, **options)
        profile = fit_profile(store, suite, nonnegative=nonnegative, cache=cache, model=model)
    profile.save(profile_path)
    return profile, profile_path


def device_available(profile: Profile) -> bool:
    try:
        info = find_device(profile.device, profile.backend)
    except KernelcastError:
        return False
    return info.name == profile.device and info.driver == profile.driver


def evaluate_profile(profile: Profile, db=None, measure: bool | None = None,
                     progress=STDERR, cache: PropertyCache | None = None, **options):
    """(Table 1, its summary) for the test suite that belongs to the profile's suite.

    With *measure* None, the test suite is measured (resuming) when the profile's device
    is present; True requires that, False only reads the store."""
    db = Path(db or profile.store)
    if not db.exists():
        raise KernelcastError(f"no measurement store at {db}; give --db")
    suite = TEST_SUITE_OF.get(profile.suite, "test")
    if measure is None:
        measure = device_available(profile)
    if measure:
        runner = make_backend(profile.backend, profile.device)
        with Store(db, runner.identity) as store:
            measure_suite(get_suite(suite), runner, store, progress=progress, **options)
    with Store(db) as store:
        table = table1(profile, store, suite, cache)
    return table, summarize(table)
