"""The end-to-end jobs: calibrate a device, fit a model to a store, evaluate models.

``calibrate`` measures the suites a model is fitted from on a device into its store
(resuming any earlier campaign), fits the model and writes the profile.
``calibrate_devices`` calibrates several identical devices of this host at once, each in
its own right (identical GPUs differ): one worker per device (kernelcast.tune.distributed),
each device its own store and profile, bound to it (named after its instance). ``fit_store`` fits
a model to what a store already holds. ``evaluate`` measures the test suite that belongs
to a profile's suite on the profile's device when it is present (else uses what the
store holds) and returns Table 1 of each model asked for on the same cases.

``fit_committed_profile`` fits a model to a committed xz-packed store (data/<gpu>/
NAME.sqlite.xz) and writes its profile, leaving one that holds the same fit as it is
(scripts/fit_profiles.sh).

``calibrate_criteria`` measures the criteria model's microbenchmarks on this host's CUDA
device, fits it and writes its profile; ``fit_store`` fits it to a microbenchmark document
(its store).

Public names: default_paths, default_model, calibrate, calibrate_criteria,
calibrate_devices, fit_store, fit_committed_profile, evaluate, device_available,
test_suite_of.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

from kernelcast.errors import KernelcastError
from kernelcast.evaluation.tables import table1
from kernelcast.fitting.dataset import PropertyCache, load_dataset
from kernelcast.measure.store import Store
from kernelcast.models import get_model, model_class, model_names
from kernelcast.profile import check_profile_path, same_profile, save_profile
from kernelcast.tune import limits


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def default_paths(device: str, backend: str, model: str, root="kernelcast-data",
                  instance: str | None = None) -> tuple[Path, Path]:
    """(store, profile) paths for a device: kernelcast-data/<device>-<backend>.sqlite and
    kernelcast-data/<device>-<backend>-<model>.json; with *instance* (one device of
    several identical ones), <device>-<backend>-<instance> instead of <device>-<backend>."""
    where = f"-{_slug(instance.replace('#', 'device-'))}" if instance else ""
    stem = Path(root) / f"{_slug(device)}-{backend}{where}"
    return stem.with_suffix(".sqlite"), stem.parent / f"{stem.name}-{model}.json"


def default_model(suite: str) -> str:
    """The extended model where it can be fitted (the GPU measurement suite, with the
    extension suite); the paper's elsewhere (CPU sizes)."""
    return "extended" if suite == "measurement" else "paper"


def test_suite_of(suite: str) -> str:
    """The test suite that belongs to measurement suite *suite*."""
    from kernelcast.suites.paper import TEST_SUITE_OF

    return TEST_SUITE_OF.get(suite, "test")


def fit_store(store_path, model: str = "paper", suite: str = "measurement",
              cache: PropertyCache | None = None, *, profile_path=None, progress=None,
              **params):
    """*model* (a name; *params* are its keyword arguments) fitted to the rows of the
    store at *store_path* that it is fitted from when calibrated with *suite*. With
    *profile_path*, where the profile will be written is checked first (a directory, a
    measurement store or a folder that cannot be written is refused before the fit).
    *progress*: a stream for a long fit's progress lines (Model.progress).

    The criteria model's store is a microbenchmark document (a measure_microbenchmarks
    JSON, read by kernelcast.fitting.microbenchmarks.load_microbenchmarks); *suite* is
    then its own suite or left at "measurement"."""
    if profile_path is not None:
        check_profile_path(profile_path)
    if model_class(model).fitted_from == "microbenchmarks":
        return _fit_microbenchmarks(store_path, model, suite, progress, **params)
    from kernelcast.suites.paper import get_suite

    get_suite(suite)  # an unknown suite name is refused before the store is read
    fitted = get_model(model, **params)
    fitted.progress = progress
    with Store(store_path) as store:
        dataset = load_dataset(store, fitted.fit_suites(suite), suite=suite, cache=cache)
    return fitted.fit(dataset)


def _fit_microbenchmarks(document, model: str, suite: str, progress, **params):
    """*model* (*params*: its keyword arguments) fitted to the microbenchmark document at
    *document*; a suite other than the microbenchmarks' is refused."""
    from kernelcast.errors import UsageError
    from kernelcast.fitting.microbenchmarks import load_microbenchmarks
    from kernelcast.suites.criteria_microbenchmarks import SUITE

    if suite not in ("measurement", SUITE):
        raise UsageError(f"the {model} model is fitted from its microbenchmarks ({SUITE}), "
                         f"not from the {suite} suite")
    fitted = get_model(model, **params)
    fitted.progress = progress
    return fitted.fit(load_microbenchmarks(document))


def calibrate_criteria(folder, profile_path=None, *, params: dict | None = None,
                       tools=None, progress=None, wait: float = 0.0):
    """Measure the criteria model's microbenchmarks on this host's CUDA device (cupy,
    nvcc and nvdisasm; *tools*: their folder, default PATH) into *folder*
    (microbenchmarks.json and listings.tar.xz), fit the model (*params*: its keyword
    arguments) and save its profile at *profile_path* (default: <device>-cuda-criteria.json
    in *folder*'s parent, where ``advise --device`` finds it), checked before anything is
    measured. *progress*: a stream for a line
    per microbenchmark (default stdout); *wait*: seconds to wait for the device's lock
    where another campaign holds it. Returns (model, profile path)."""
    from kernelcast.suites.criteria_microbenchmarks import measure_microbenchmarks

    if profile_path is not None:
        check_profile_path(profile_path)
    document = measure_microbenchmarks(folder, tools=tools, progress=progress, wait=wait)
    fitted = fit_store(document, "criteria", **(params or {}))
    if profile_path is None:
        profile_path = default_paths(fitted.provenance_["device"], "cuda", fitted.name,
                                     root=Path(folder).parent)[1]
    return fitted, save_profile(fitted, profile_path)


def fit_committed_profile(packed, folder, model: str, name: str | None = None,
                          **params) -> tuple[Path, bool]:
    """Fit *model* (*params*: its keyword arguments) to the xz-packed store *packed*
    (data/<gpu>/NAME.sqlite.xz, unpacked to a temporary file for the fit) from the suites
    it is fitted from with the measurement suite the store was measured for (its CPU sizes,
    measurement-cpu, where every row is of a "-cpu" suite), and write its profile into
    *folder* as ``<device>-<backend>-<name or model>.json`` (default_paths' naming); the
    profile names *packed* as its store. A profile already there that holds the same fit
    (every field but created_at) is left as it is, so a refit of the same measurements gives
    the identical file. Returns (profile path, whether it was written)."""
    import lzma
    import tempfile

    packed = Path(packed)
    with tempfile.TemporaryDirectory(prefix="kernelcast-") as temp:
        store = Path(temp) / packed.name.removesuffix(".xz")
        try:
            with lzma.open(packed) as unpacked:
                store.write_bytes(unpacked.read())
        except (OSError, lzma.LZMAError) as err:
            raise KernelcastError(f"cannot unpack the store {packed}: {err}") from None
        with Store(store) as opened:
            suites = {row["suite"] for row in opened.rows()}
        cpu = bool(suites) and all(s.endswith("-cpu") for s in suites)
        fitted = fit_store(store, model, "measurement-cpu" if cpu else "measurement",
                           **params)
    fitted.provenance_["store"] = str(packed)
    prov = fitted.provenance_
    path = default_paths(prov["device"], prov["backend"], name or model, root=folder)[1]
    if path.is_file() and same_profile(fitted, path):
        return path, False
    return save_profile(fitted, path), True


def calibrate(device=None, backend: str = "opencl", db=None,
              profile_path=None, suite: str | None = None, model: str | None = None,
              progress=None, cache: PropertyCache | None = None, params: dict | None = None,
              wait: float = 0.0, bind: bool = False, root="kernelcast-data", **options):
    """Measure *suite* (default: the paper's on a GPU, its CPU sizes otherwise) and what
    else *model* (default: extended on a GPU, paper otherwise) is fitted from, fit, save;
    on *device* (a substring of its name or instance, a DeviceInfo, or None: the best).
    With *bind*, the store and profile belong to this one device (its instance: named
    after it, and a store of another refused). Returns (model, profile path)."""
    from kernelcast.measure.backends import make_backend
    from kernelcast.measure.campaign import STDERR
    from kernelcast.suites.campaign import measure_suite
    from kernelcast.suites.paper import get_suite

    progress = STDERR if progress is None else progress
    if profile_path is not None:  # refused before anything is measured
        check_profile_path(profile_path)
    with make_backend(backend, device, wait=wait) as runner:
        if suite is None:
            suite = "measurement" if runner.device.kind.endswith("GPU") else "measurement-cpu"
        model = model or default_model(suite)
        suites = model_class(model).fit_suites(suite)
        get_model(model, **(params or {})).check_before_measuring(runner.device.name)
        instance = runner.device.instance if bind else None
        store_path, default_profile = default_paths(runner.device.name, runner.name, model,
                                                    root, instance)
        default_db = db is None
        db = Path(db or store_path)
        profile_path = check_profile_path(profile_path or default_profile)
        stream = sys.stderr if progress is STDERR else progress
        if stream is not None:
            print(f"calibrating {runner.device.name} ({runner.name}, driver "
                  f"{runner.device.driver}) for the {model} model with the "
                  f"{' and '.join(suites)} suites into {db}", file=stream)
        identity = {**runner.identity, **({"instance": instance} if instance else {})}
        with Store(db, identity, create_dirs=default_db) as store:
            for name in suites:
                measure_suite(get_suite(name), runner, store, progress=progress, **options)
    fitted = fit_store(db, model, suite, cache, progress=stream, **(params or {}))
    fitted.progress = None
    fitted.provenance_["limits"] = limits.of_device(runner.device).as_dict()
    save_profile(fitted, profile_path)
    return fitted, profile_path


def _calibrate_here(settings: dict, device) -> tuple[str, str, dict]:
    """On the worker pinned to *device*: calibrate it in its own right, its progress lines
    appended to a log beside its store; (store, profile, fit report)."""
    store, _ = default_paths(device.name, settings["backend"], settings["model"],
                             settings["root"], device.instance)
    from kernelcast.frontends.files import check_regular_file

    check_regular_file(store.with_suffix(".log"), "log file")
    with open(store.with_suffix(".log"), "a", encoding="utf-8") as log:
        fitted, path = calibrate(device, bind=True, progress=log, **settings)
    return fitted.provenance_["store"], str(path), fitted.fit_report_


def calibrate_devices(devices, backend: str = "opencl", *, suite: str | None = None,
                      model: str | None = None, params: dict | None = None,
                      wait: float = 0.0, root="kernelcast-data", progress=None,
                      **options) -> list:
    """Calibrate every device of *devices* (identical DeviceInfo of this host) at once, each
    in its own right, on a local cluster of one worker per device; *progress* (default:
    stderr; False: none) gets a line of rows stored per device every 10 s. Returns (store,
    profile, fit report) per device, or the KernelcastError that stopped that device (the
    others are calibrated all the same); each device's progress lines are in a log beside
    its store. A rerun resumes each device's store."""
    from kernelcast.measure.campaign import STDERR, progress_stream
    from kernelcast.tune.distributed import cluster, on_devices

    stream = None if progress is False else progress_stream(progress or STDERR)
    model = model or default_model(suite or ("measurement" if devices[0].kind.endswith("GPU")
                                             else "measurement-cpu"))
    stores = [default_paths(d.name, backend, model, root, d.instance)[0] for d in devices]
    settings = {"backend": backend, "suite": suite, "model": model, "params": params,
                "wait": wait, "root": str(Path(root).resolve()), **options}
    Path(root).mkdir(parents=True, exist_ok=True)
    start = time.monotonic()

    def show():
        if stream is None:
            return
        counts = []
        for device, path in zip(devices, stores, strict=True):
            try:
                with Store(path) as store:
                    counts.append(f"{device.instance} {len(store.keys())}")
            except KernelcastError:
                counts.append(f"{device.instance} 0")
        elapsed = time.monotonic() - start
        print(f"[{elapsed:.0f}s] rows stored: {', '.join(counts)}", file=stream, flush=True)

    if stream is not None:
        print(f"calibrating {len(devices)} × {devices[0].name} ({backend}, driver "
              f"{devices[0].driver}) for the {model} model, one worker per device, into "
              f"{', '.join(str(p) for p in stores)}", file=stream, flush=True)
    with cluster(devices=devices) as client:
        return on_devices(client, devices, _calibrate_here, settings, poll=show)


def device_available(model) -> bool:
    from kernelcast.measure.devices import find_device

    prov = model.provenance_
    if not prov.get("backend"):
        return False
    try:
        info = find_device(prov["device"], prov["backend"])
    except KernelcastError:
        return False
    return info.name == prov["device"] and info.driver == prov["driver"]


def _store_path(given, profiles) -> Path:
    """The measurement store to evaluate on: *given* (--db), else the profile's; refused
    (naming it) where it is missing, a directory or a profile."""
    from kernelcast.errors import StoreError, UsageError
    from kernelcast.frontends.files import SQLITE_MAGIC, check_regular_file

    error, whose = (UsageError, "") if given else (KernelcastError, "the profile's ")
    raw = given or profiles
    if not raw:
        raise UsageError("no measurement store: the profile names none; give --db")
    path = Path(raw)
    if not path.exists():
        raise error(f"no measurement store at {whose}{path}; give --db")
    if path.is_dir():
        raise error(f"{whose}{path} is a directory, not a measurement store")
    check_regular_file(path, "measurement store", error)  # a FIFO would block the read
    try:
        with open(path, "rb") as f:
            head = f.read(len(SQLITE_MAGIC))
    except OSError as err:
        raise StoreError(f"cannot read the measurement store {path}: {err.strerror}"
                         ) from None
    if head[:1] in (b"{", b"[") and not head.startswith(SQLITE_MAGIC):
        raise error(f"{whose}{path} is a JSON file (a profile?), not a measurement store; "
                    "did you mean --profile?")
    return path


def evaluate(model, db=None, measure: bool | None = None, others=(), suite: str | None = None,
             progress=None, cache: PropertyCache | None = None, **options) -> dict:
    """Table 1 of *model* (fitted) and of each model named in *others* (fitted to the
    same store from the suites they are fitted from; "all" names every registered model
    but the facts model, which is compared when named)
    on the test suite of the model's suite (or *suite*), keyed by model name.

    With *measure* None, the test suite is measured (resuming) when the model's device is
    present; True requires that, False only reads the store."""
    from kernelcast.measure.campaign import STDERR
    from kernelcast.suites.paper import get_suite

    model.check_fitted()
    prov = model.provenance_
    db = _store_path(db, prov.get("store"))
    suite = suite or test_suite_of(prov.get("suite") or "measurement")
    get_suite(suite)  # an unknown suite name is refused before anything is read
    if measure is None:
        measure = device_available(model)
    if measure:
        from kernelcast.measure.backends import make_backend
        from kernelcast.suites.campaign import measure_suite
        from kernelcast.suites.paper import get_suite

        runner = make_backend(prov["backend"], prov["device"])
        with runner, Store(db, runner.identity) as store:
            measure_suite(get_suite(suite), runner, store,
                          progress=STDERR if progress is None else progress, **options)
    cache = cache or PropertyCache()
    with Store(db) as store:
        if prov.get("backend"):
            differ = [f"{key} {prov[key]!r} (store: {store.identity[key]!r})"
                      for key in ("device", "driver", "backend")
                      if store.identity[key] != prov[key]]
            if differ:
                raise KernelcastError(f"the profile does not describe the store {db}: "
                                      f"{', '.join(differ)}")
        dataset = load_dataset(store, suite, cache=cache)
    # "all": the models on the paper's properties; the facts model compiles and models
    # the caches of every case (minutes for a store), so it joins only when named
    names = ([n for n in model_names() if not getattr(model_class(n), "needs_kernel", False)]
             if "all" in others else [n for n in others if n != model.name])
    tables = {model.name: table1(model, dataset, details=True)}
    for name in names:
        if name in tables:
            continue
        try:
            other = fit_store(db, name, prov.get("suite") or "measurement", cache)
        except KernelcastError as err:
            print(f"note: {name} model left out: {err}", file=sys.stderr)
            continue
        tables[name] = table1(other, dataset)
    return {name: tables[name] for name in model_names() if name in tables}
