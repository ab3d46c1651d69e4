"""Measuring and calibrating across every GPU of a host (issue 26): how much faster with
1, 2, ... GPUs, whether a killed worker loses or repeats anything, and how far the profiles
of identical GPUs differ.

  family (on the GPU machine): every valid variant of one tuning family
      (kernelcast.tune.families) measured on a local cluster of one worker per GPU
      (kernelcast.tune.distributed, ``--devices N``) into a new store; with --kill-after K,
      one worker is killed (SIGKILL) once K rows are stored, and the run goes on. Adds a
      record (wall seconds, rows per GPU, cases stored more than once or missing) to
      --record.
  calibrate (on the GPU machine): ``calibrate_devices`` on the first N GPUs, each in its
      own right, into --root; adds a record (wall seconds, rows and fit per GPU); with
      --tests, then the test suite on each GPU into its store (not timed).
  compare (anywhere): the profiles of identical GPUs side by side: their weights, their
      predictions on the test cases of the first GPU, and their errors on their own.

The GPU machine has no package registry and its image lacks Dask and Lark: prepare the
wheels that travel there with ``../shared/device/prepare.sh $(cat
benchmarks/device-requirements.txt)``. It sends back only a few files of $OUT: pack them
into one archive. Warm the caches of compiled code (run a family once) before timing, or
the first run pays for compiling and the comparison is with the caches, not the GPUs.

Run:  python benchmarks/multi_device.py family --family stencil2d --devices 2 --db S
          --record R.json [--kill-after 60] [--backend cuda]
      python benchmarks/multi_device.py calibrate --devices 2 --root DIR --record R.json
          [--model paper] [--backend cuda] [--tests]
      python benchmarks/multi_device.py compare P0.json P1.json [--json OUT]
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def _gpus() -> list[dict]:
    """nvidia-smi's view of the GPUs (index, name, PCI address, driver, serial); [] without."""
    fields = "index,name,pci.bus_id,driver_version,serial,clocks.max.sm,clocks.max.mem"
    try:
        text = subprocess.run(["nvidia-smi", f"--query-gpu={fields}",
                               "--format=csv,noheader"], capture_output=True, text=True,
                              check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return []
    names = fields.split(",")
    return [dict(zip(names, (v.strip() for v in line.split(",")), strict=True))
            for line in text.strip().splitlines()]


def _record(path, record: dict) -> None:
    """Append *record* (with the machine, driver and date) to the JSON list at *path*."""
    path = Path(path)
    records = json.loads(path.read_text()) if path.exists() else []
    record = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
              "gpus": _gpus(), "cpus": os.cpu_count(), **record}
    records.append(record)
    path.write_text(json.dumps(records, indent=1) + "\n")


def _family_jobs(fam, device):
    from kernelcast.measure.campaign import Job
    from kernelcast.tune.space import apply, invalid, variant_key

    knl = fam.build()  # made once here: the workers get the kernel, not the factory
    jobs = []
    for variant in fam.space.variants():
        if invalid(variant, fam.space, max_group_size=device.max_group_size):
            continue
        name = f"{fam.name}/{variant_key(variant)}"
        jobs.append(Job(name, name, functools.partial(apply, knl, variant, fam.space),
                        dict(fam.params)))
    return jobs


class _Rows:
    """A progress stream that notes when each row arrives and, with *pid*, kills that
    worker (SIGKILL) at the *after*-th row."""

    def __init__(self, pid: int | None = None, after: int = 0):
        self.pid, self.after, self.lines, self.killed_at = pid, after, 0, None
        self.times: list[float] = []

    def write(self, text: str) -> None:
        now = time.perf_counter()
        for _ in range(text.count("\n")):
            self.times.append(now)
        self.lines += text.count("\n")
        if self.pid and self.killed_at is None and self.lines >= self.after:
            os.kill(self.pid, signal.SIGKILL)
            self.killed_at = self.lines
            print(f"killed worker process {self.pid} after {self.lines} rows", flush=True)

    def flush(self) -> None:
        pass


def family(args) -> int:
    from kernelcast.measure.backends import make_backend
    from kernelcast.measure.devices import siblings
    from kernelcast.measure.store import Store
    from kernelcast.tune import distributed
    from kernelcast.tune.families import family as get_family

    fam = get_family(args.family)
    backend = make_backend(args.backend, args.device, locked=False)
    devices = siblings(backend.device)[:args.devices]
    if len(devices) < args.devices:
        raise SystemExit(f"only {len(devices)} × {backend.device.name} here")
    jobs = _family_jobs(fam, backend.device)
    started = time.perf_counter()
    with backend, distributed.cluster(devices=devices) as client, \
            Store(args.db, backend.identity) as store:
        ready = time.perf_counter()
        pids = distributed.worker_pids(client)
        progress = _Rows(sorted(pids.values())[-1] if args.kill_after else None,
                         args.kill_after)
        result = distributed.measure(client, jobs, backend, store, verify=False,
                                     per_device=True, progress=progress)
        measured = time.perf_counter() - ready
        first = progress.times[0] - ready if progress.times else None
        # rows a second once every device has started: the rate where measuring dominates
        steady = ((len(progress.times) - 1) / (progress.times[-1] - progress.times[0])
                  if len(progress.times) > 1 else None)
        after = distributed.worker_pids(client)
        names = [r["case_name"] for r in store.rows()]
    wanted = {j.name for j in jobs}
    record = {
        "what": "family", "family": fam.name, "backend": args.backend,
        "device": backend.device.name, "driver": backend.device.driver,
        "devices": [d.instance for d in devices], "cases": len(jobs),
        "measured": result.measured, "statuses": result.statuses,
        "rows_per_device": result.devices, "cluster_start_s": ready - started,
        "measure_s": measured, "first_row_s": first, "rows_per_s_after_first": steady,
        "stored_twice": len(names) - len(set(names)),
        "missing": len(wanted - set(names)), "extra": len(set(names) - wanted),
        "killed": None if not args.kill_after else {
            "pid": progress.pid, "after_rows": progress.killed_at,
            "restarted": progress.pid not in after.values(),
            "workers_after": len(after)}}
    _record(args.record, record)
    print(json.dumps(record, indent=1))
    return 0 if not (record["stored_twice"] or record["missing"]) else 1


def calibrate(args) -> int:
    from kernelcast.measure.devices import find_device, siblings
    from kernelcast.workflow import calibrate_devices

    device = find_device(args.device, args.backend)
    devices = siblings(device)[:args.devices]
    if len(devices) < args.devices:
        raise SystemExit(f"only {len(devices)} × {device.name} here")
    started = time.perf_counter()
    done = calibrate_devices(devices, args.backend, model=args.model, root=args.root)
    seconds = time.perf_counter() - started
    per_device = []
    for outcome in done:
        if isinstance(outcome, BaseException):
            raise outcome
    for d, (store_path, profile, fit) in zip(devices, done, strict=True):
        from kernelcast.measure.store import Store

        with Store(store_path) as store:
            rows = len(store.keys())
        per_device.append({"instance": d.instance, "store": Path(store_path).name,
                           "profile": Path(profile).name, "rows": rows,
                           "training_geomean_rel_error":
                               fit.get("training_geomean_rel_error")})
    if args.tests:  # each GPU's test suite, into its store: for compare
        from kernelcast.tune.distributed import cluster, on_devices

        settings = {"backend": args.backend, "model": args.model,
                    "root": str(Path(args.root).resolve())}
        with cluster(devices=devices) as client:
            on_devices(client, devices, _measure_tests, settings)
    record = {"what": "calibrate", "model": args.model, "backend": args.backend,
              "device": device.name, "driver": device.driver,
              "devices": [d.instance for d in devices], "seconds": seconds,
              "per_device": per_device}
    _record(args.record, record)
    print(json.dumps(record, indent=1))
    return 0


def _measure_tests(settings: dict, device):
    """On the worker pinned to *device*: the test suite measured into its bound store."""
    from kernelcast.measure.backends import make_backend
    from kernelcast.measure.store import Store
    from kernelcast.suites.campaign import measure_suite
    from kernelcast.suites.paper import get_suite
    from kernelcast.workflow import default_paths, test_suite_of

    store_path, _ = default_paths(device.name, settings["backend"], settings["model"],
                                  settings["root"], device.instance)
    suite = test_suite_of("measurement" if device.kind.endswith("GPU") else "measurement-cpu")
    with make_backend(settings["backend"], device) as backend, \
            Store(store_path, {**backend.identity, "instance": device.instance}) as store:
        result = measure_suite(get_suite(suite), backend, store, progress=None)
    return result.measured


def compare_profiles(paths) -> dict:
    """The profiles at *paths* (one model, identical GPUs) side by side: their weights and
    how far each differs from the first's; their predictions on the test cases measured
    on the first one's GPU, and how far they differ; each one's error on the test cases
    measured on its own GPU."""
    import numpy as np

    from kernelcast.fitting.dataset import PropertyCache, load_dataset
    from kernelcast.measure.store import Store
    from kernelcast.metrics import geometric_mean, relative_errors
    from kernelcast.profile import load_profile
    from kernelcast.workflow import test_suite_of

    models = [load_profile(p) for p in paths]
    if len({m.name for m in models}) != 1:
        raise SystemExit("the profiles are of different models")
    suite = test_suite_of(models[0].provenance_.get("suite") or "measurement")
    cache = PropertyCache()
    datasets = []
    for model in models:
        with Store(model.provenance_["store"]) as store:
            datasets.append(load_dataset(store, suite, cache=cache))
    common = datasets[0]
    base = models[0].predict_dataset(common)
    out = {"model": models[0].name, "suite": suite, "cases": len(common), "profiles": []}
    for path, model, own in zip(paths, models, datasets, strict=True):
        entry = {"profile": Path(path).name, "instance": model.provenance_.get("instance"),
                 "fit_cases": model.provenance_.get("cases"),
                 "test_geomean_rel_error": geometric_mean(relative_errors(
                     model.predict_dataset(own), own.seconds))}
        if hasattr(model, "weights_"):
            entry["weights"] = {k: float(v) for k, v in model.weights_.items()}
        if model is not models[0]:
            diff = np.abs(model.predict_dataset(common) / base - 1)
            entry["prediction_rel_diff"] = {"median": float(np.median(diff)),
                                            "max": float(diff.max())}
            first = out["profiles"][0].get("weights", {})
            entry["weight_rel_diff"] = {k: abs(v / first[k] - 1) if first.get(k) else None
                                        for k, v in entry.get("weights", {}).items()}
            measured = np.asarray(own.seconds) / np.asarray(common.seconds) \
                if list(own.info.case_name) == list(common.info.case_name) else None
            if measured is not None:
                gap = np.abs(measured - 1)
                entry["measured_rel_diff"] = {"median": float(np.median(gap)),
                                              "max": float(gap.max())}
        out["profiles"].append(entry)
    return out


def compare(args) -> int:
    out = compare_profiles(args.profiles)
    text = json.dumps(out, indent=1)
    if args.json:
        Path(args.json).write_text(text + "\n")
    print(text)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    p = sub.add_parser("family", help="measure one tuning family on N GPUs")
    p.add_argument("--family", default="stencil2d", help="a tuning family")
    p.add_argument("--devices", type=int, required=True, help="how many GPUs")
    p.add_argument("--db", required=True, help="a new measurement store")
    p.add_argument("--kill-after", type=int, default=0, metavar="K",
                   help="kill one worker once K rows are stored")
    p.add_argument("--record", required=True, help="JSON file the record is added to")
    p.add_argument("--backend", default="cuda", help="measurement backend")
    p.add_argument("--device", help="a substring of the device's name")
    p.set_defaults(run=family)
    p = sub.add_parser("calibrate", help="calibrate N GPUs, each in its own right")
    p.add_argument("--devices", type=int, required=True, help="how many GPUs")
    p.add_argument("--root", required=True, help="folder for the stores and profiles")
    p.add_argument("--model", default="paper", help="the model calibrated")
    p.add_argument("--tests", action="store_true",
                   help="then measure the test suite on each GPU (for compare)")
    p.add_argument("--record", required=True, help="JSON file the record is added to")
    p.add_argument("--backend", default="cuda", help="measurement backend")
    p.add_argument("--device", help="a substring of the device's name")
    p.set_defaults(run=calibrate)
    p = sub.add_parser("compare", help="profiles of identical GPUs side by side")
    p.add_argument("profiles", nargs="+", help="profiles of one model")
    p.add_argument("--json", help="also write the comparison here")
    p.set_defaults(run=compare)
    args = parser.parse_args()
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
