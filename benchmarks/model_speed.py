"""Cost of predictions, of fits and of a calibration; writes data/speed.json.

1. predict: wall time of ``kernelcast.predict`` for a kernel whose properties are already
   extracted (the model's features from the Properties, then its combination of them),
   for the paper's four test kernels at new sizes each call, with every registered model
   fitted to --store (default data/h100/opencl.sqlite; Hong–Kim: the packaged H100
   hardware and data/h100/registers.json). Each figure is the median over --runs blocks
   of --calls calls (the machine is shared: single runs vary by up to 2x); the fastest
   and slowest block are kept too. Target (issue 2): <= 50 µs.
2. fit: wall time of each model's fit to its fitting suites in --store, first with the
   property extraction of the kernels not yet seen in this process (models in
   registration order share one PropertyCache), then the median of --fit-runs fits with
   everything extracted.
3. calibration: wall time of ``kernelcast calibrate`` on this machine's best OpenCL device
   in a fresh folder (PoCL without a GPU: the measurement-cpu suite and the paper's
   model), unless --no-calibrate; then the previous run's figure in data/speed.json, with
   its own date, is kept. The device time of the GPU campaigns is in scripts/results.py
   (from the stores and the campaign logs), not here.

BLAS runs one thread unless OPENBLAS_NUM_THREADS (or OMP_NUM_THREADS) is set: on a
shared 2-core machine OpenBLAS's default two threads made the extended model's fit 5 to
30 times slower (8.7-52 s against 1.6-1.9 s for the same fit, 2026-11-25), which would
measure the machine's load, not the fit. The setting is recorded.

data/speed.json gets every number with the machine (platform, cores, Python, BLAS
threads, load average), the date and the git commit; scripts/results.py reads it. Run:
    .venv/bin/python benchmarks/model_speed.py [--no-calibrate]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before numpy is imported; see the docstring

import argparse  # noqa: E402
import datetime as dt  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import kernelcast as kc  # noqa: E402
from kernelcast.fitting.dataset import PropertyCache, load_dataset  # noqa: E402
from kernelcast.measure.store import Store  # noqa: E402
from kernelcast.models import get_model, model_names  # noqa: E402
from kernelcast.suites import kernels  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
# the paper's test kernels (§5) at the group sizes the test suite measures, and sizes
# that change with every call (so nothing can be reused between calls)
KERNELS = {
    "finite differences": (lambda: kernels.finite_difference((16, 16)),
                           lambda i: {"n": 1024 + i}),
    "skinny matmul": (lambda: kernels.matmul_tiled((16, 16)),
                      lambda i: {"n": 512 + i, "l": 512 + i, "m": 4096 + 8 * i}),
    "N-body": (lambda: kernels.nbody(256), lambda i: {"n": 1024 + i}),
    "convolution": (lambda: kernels.convolution((16, 16)), lambda i: {"n": 64 + i}),
}


def git_commit() -> str:
    """Short hash of HEAD, with "+changes" when tracked files differ from it."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                              capture_output=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=ROOT, text=True, capture_output=True,
                               check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


def machine() -> dict:
    return {"platform": platform.platform(), "machine": platform.machine(),
            "processor": platform.processor() or "", "cores": os.cpu_count(),
            "python": platform.python_version(),
            "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()]}


def model_for(name: str, store: Path):
    if name == "hong-kim":
        registers = store.parent / "registers.json"
        return get_model(name, registers=str(registers) if registers.exists() else None)
    return get_model(name)


def time_fits(store_path: Path, runs: int) -> dict:
    results, fitted = {}, {}
    cache = PropertyCache()
    with Store(store_path) as store:
        for name in model_names():
            model = model_for(name, store_path)
            dataset = load_dataset(store, model.fit_suites("measurement"),
                                   suite="measurement", cache=cache)
            start = time.perf_counter()
            model.fit(dataset)
            first = time.perf_counter() - start
            again = []
            for _ in range(runs):
                start = time.perf_counter()
                model.clone().fit(dataset)
                again.append(time.perf_counter() - start)
            fitted[name] = model
            results[name] = {"cases": len(dataset), "suites": list(model.fit_suites(
                "measurement")), "first_s": first, "again_median_s": statistics.median(again),
                "again_min_s": min(again), "again_max_s": max(again), "again_runs": runs}
            print(f"fit {name:<9} {len(dataset):5d} cases: {first:7.2f} s with property "
                  f"extraction of what it had not seen, {statistics.median(again):7.2f} s "
                  f"without (median of {runs}: {min(again):.2f}-{max(again):.2f})",
                  flush=True)
    return results, fitted


def time_predictions(fitted: dict, calls: int, runs: int) -> dict:
    results = {}
    props = {name: kc.extract_properties(build()) for name, (build, _) in KERNELS.items()}
    for model_name, model in fitted.items():
        results[model_name] = {}
        for kernel, (_, sizes) in KERNELS.items():
            model.predict(props[kernel], sizes(0))  # warm-up
            blocks = []
            for run in range(runs):
                start = time.perf_counter()
                for i in range(calls):
                    kc.predict(props[kernel], sizes((run * calls + i) % 1000), model)
                blocks.append((time.perf_counter() - start) / calls)
            results[model_name][kernel] = {
                "median_s": statistics.median(blocks), "min_s": min(blocks),
                "max_s": max(blocks), "calls_per_run": calls, "runs": runs}
            print(f"predict {model_name:<9} {kernel:<20} "
                  f"{statistics.median(blocks) * 1e6:7.1f} µs per call "
                  f"({min(blocks) * 1e6:.1f}-{max(blocks) * 1e6:.1f})", flush=True)
    return results


def time_calibration() -> dict:
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        run = subprocess.run([sys.executable, "-m", "kernelcast", "calibrate"], cwd=folder,
                             text=True, capture_output=True)
        elapsed = time.perf_counter() - start
        header = next((line for line in run.stderr.splitlines()
                       if line.startswith("calibrating ")), "")
        rows = None
        stores = list(Path(folder).glob("kernelcast-data/*.sqlite"))
        if stores:
            with Store(stores[0]) as store:
                rows = len(store.rows())
    result = {"seconds": elapsed, "returncode": run.returncode, "what": header,
              "rows": rows, "date": dt.datetime.now(dt.timezone.utc).isoformat(
                  timespec="seconds"), "commit": git_commit(), "machine": machine()}
    if run.returncode:
        result["error"] = [line.strip()[:300] for line in
                           run.stderr.strip().splitlines()[-3:]] or ["(no output)"]
    print(f"calibration: {header or 'kernelcast calibrate'}: {elapsed:.0f} s wall time, "
          f"{rows} rows, exit status {run.returncode}", flush=True)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default="data/h100/opencl.sqlite",
                        help="the store the models are fitted to")
    parser.add_argument("--calls", type=int, default=2000, help="predictions per run")
    parser.add_argument("--runs", type=int, default=5, help="runs per model and kernel")
    parser.add_argument("--fit-runs", type=int, default=3,
                        help="fits with properties already extracted, per model")
    parser.add_argument("--no-calibrate", action="store_true",
                        help="skip `kernelcast calibrate` on PoCL (keep the last figure)")
    parser.add_argument("--out", default="data/speed.json")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    out = ROOT / args.out
    store = ROOT / args.store
    info = machine()
    print(f"{info['platform']}, {info['cores']} cores, Python {info['python']}, "
          f"{info['blas_threads']} BLAS thread(s), load average "
          f"{info['load_average_at_start']}", flush=True)
    started = time.perf_counter()
    fits, fitted = time_fits(store, args.fit_runs)
    predictions = time_predictions(fitted, args.calls, args.runs)
    previous = {}
    if out.exists():
        try:
            previous = json.loads(out.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            previous = {}
    calibration = previous.get("calibration") if args.no_calibrate else time_calibration()
    document = {
        "script": "benchmarks/model_speed.py",
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "commit": git_commit(), "kernelcast_version": kc.__version__, "machine": info,
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "store": args.store, "models": list(model_names()),
        "predict": predictions, "fit": fits, "calibration": calibration,
        "seconds": time.perf_counter() - started}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n",
                   encoding="utf-8")
    print(f"written: {out}", flush=True)


if __name__ == "__main__":
    main()
