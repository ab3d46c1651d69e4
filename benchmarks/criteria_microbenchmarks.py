"""The fine-grained model's microbenchmarks (issue 25; seed 003, §III) on an NVIDIA GPU.

  measure OUTDIR (on the GPU machine: cupy, nvcc, nvdisasm): each microbenchmark of
      kernelcast.models.criteria.microbenchmarks is compiled for the device with nvcc, to
      PTX and to a cubin, the cubin disassembled with nvdisasm, both checked
      (kernelcast.models.criteria.checks: the paper's Figure 2 b and c), and the cubin
      timed with cupy: 4 warm-up launches, then 30 timed ones (CUDA events), every time
      kept, and the clock64 cycles each block spent in its timed region (their median and
      maximum in the fastest run, and the median of every run); the bank-conflict ones
      also as one warp alone (``one_warp``). Writes
      OUTDIR/microbenchmarks.json (device, driver, clocks, per microbenchmark its times,
      cycles and checks) and OUTDIR/listings.tar.xz (each .cu, .ptx and .sass).
  profile MICROBENCHMARKS_JSON PROFILE (no GPU): fit the fine-grained model (the
      criteria model, kernelcast.models.criteria.model) to a measure's JSON and write
      its device profile: the characterization functions, latencies and f32 throughput
      that ``kernelcast advise`` needs. data/profiles/<device>-cuda-criteria.json were
      written so from data/<gpu>/criteria/microbenchmarks.json.

Run on the device:  python benchmarks/criteria_microbenchmarks.py measure OUTDIR
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import io
import json
import subprocess
import sys
import tarfile
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

WARMUP, RUNS = 4, 30


def _device() -> dict:
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(0)
    smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm,"
                          "clocks.sm", "--format=csv,noheader"], capture_output=True,
                         text=True).stdout.strip()
    return {"device": props["name"].decode(), "compute_capability":
            f"{props['major']}{props['minor']}", "sms": props["multiProcessorCount"],
            "clock_khz": props["clockRate"], "nvidia_smi": smi,
            "cuda_driver": cupy.cuda.runtime.driverGetVersion(),
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}


def _compile(bench, folder: Path, arch: str) -> dict:
    """.cu → .ptx and .cubin (nvcc) → .sass (nvdisasm); seconds each step took."""
    stem = folder / bench.name.replace("/", "_")
    cu = _with(stem, ".cu")
    cu.write_text(bench.source)
    out = {"stem": stem.name}
    for flag, suffix in (("-ptx", ".ptx"), ("-cubin", ".cubin")):
        start = time.monotonic()
        run = subprocess.run(["nvcc", f"-arch=sm_{arch}", flag, "-o",
                              str(_with(stem, suffix)), str(cu)],
                             capture_output=True, text=True)
        out[f"{suffix[1:]}_seconds"] = round(time.monotonic() - start, 2)
        if run.returncode:
            out["error"] = f"nvcc {flag}: {run.stderr.strip()[:500]}"
            return out
    run = subprocess.run(["nvdisasm", str(_with(stem, ".cubin"))], capture_output=True,
                         text=True)
    if run.returncode:
        out["error"] = f"nvdisasm: {run.stderr.strip()[:500]}"
        return out
    _with(stem, ".sass").write_text(run.stdout)
    return out


def _with(stem: Path, suffix: str) -> Path:
    """*stem* + *suffix* (names hold dots: ``dram-intensity_0.25``)."""
    return Path(str(stem) + suffix)


def _time(bench, cubin: Path, grid: int, block: int) -> dict:
    import cupy
    import numpy as np

    function = cupy.RawModule(path=str(cubin)).get_function(bench.kernel_name)
    clocks = cupy.zeros(grid, dtype=cupy.int64)
    sink = cupy.zeros(grid * block, dtype=cupy.uint32)
    buffer = cupy.zeros(bench.buffer_words, dtype=cupy.uint32)
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    times, cycles = [], []
    for i in range(WARMUP + RUNS):
        start.record()
        function((grid,), (block,), (clocks, sink, buffer))
        stop.record()
        stop.synchronize()
        if i >= WARMUP:
            times.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
            cycles.append(cupy.asnumpy(clocks).astype(float))
    fastest = cycles[int(np.argmin(times))]
    return {"seconds": times, "min_s": min(times), "median_s": float(np.median(times)),
            "block_cycles_median": float(np.median(fastest)),  # of the fastest run
            "block_cycles_max": float(fastest.max()),
            "block_cycles_median_per_run": [float(np.median(c)) for c in cycles]}


def measure(out: Path) -> int:
    from kernelcast.models.criteria.checks import check_ptx, check_sass
    from kernelcast.models.criteria.microbenchmarks import microbenchmarks

    out.mkdir(parents=True, exist_ok=True)
    info = _device()
    print(json.dumps(info), flush=True)
    benches = microbenchmarks(grid=info["sms"] * 8)  # eight blocks per SM
    folder = Path(tempfile.mkdtemp(prefix="kernelcast-mb-"))
    start = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        built = list(pool.map(lambda b: _compile(b, folder, info["compute_capability"]),
                              benches))
    print(f"compiled {len(benches)} in {time.monotonic() - start:.0f} s", flush=True)
    records = []
    for bench, build in zip(benches, built):
        record = {"name": bench.name, "component": bench.component, "kind": bench.kind,
                  "params": bench.params, "grid": bench.grid, "block": bench.block,
                  "ops_per_thread": bench.ops_per_thread,
                  "source_sha256": hashlib.sha256(bench.source.encode()).hexdigest(),
                  **build}
        if "error" not in build:
            stem = folder / build["stem"]
            record["ptx_problems"] = check_ptx(bench, _with(stem, ".ptx").read_text())
            record["sass_problems"] = check_sass(bench, _with(stem, ".sass").read_text())
            try:
                record.update(_time(bench, _with(stem, ".cubin"), bench.grid, bench.block))
                if bench.kind == "bank-conflicts":  # and one warp alone: the latency
                    record["one_warp"] = _time(bench, _with(stem, ".cubin"), 1, 32)
            except Exception as err:  # noqa: BLE001 - recorded with its status
                record["error"] = f"run: {type(err).__name__}: {err}"[:500]
        records.append(record)
        brief = (record.get("error") or f"{record['min_s'] * 1e6:.1f} µs, "
                 f"{record['block_cycles_median']:.0f} cycles/block, checks "
                 f"{len(record['ptx_problems'])}+{len(record['sass_problems'])} problems")
        print(f"{bench.name}: {brief}", flush=True)
    (out / "microbenchmarks.json").write_text(
        json.dumps({**info, "warmup": WARMUP, "runs": RUNS, "records": records},
                   indent=1) + "\n")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tar:
        for path in sorted(folder.iterdir()):
            if path.name.endswith((".cu", ".ptx", ".sass")):
                tar.add(path, arcname=path.name)
    (out / "listings.tar.xz").write_bytes(buf.getvalue())
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    m = verbs.add_parser("measure", help="compile, check and time on the GPU")
    m.add_argument("out", type=Path, help="folder of the results")
    p = verbs.add_parser("profile", help="fit the criteria model and write its profile")
    p.add_argument("measurements", type=Path, help="a measure's microbenchmarks.json")
    p.add_argument("profile", type=Path, help="the profile to write (JSON)")
    args = parser.parse_args()
    if args.verb == "profile":
        return profile(args.measurements, args.profile)
    return measure(args.out)


def profile(measurements: Path, path: Path) -> int:
    from kernelcast.models import get_model
    from kernelcast.profile import save_profile

    model = get_model("criteria").fit(measurements)
    print(f"{model.provenance_['device']}: {save_profile(model, path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
