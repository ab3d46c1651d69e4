"""The fine-grained model's case studies (seed 003, §VI) on an NVIDIA GPU: each
version of reduction, transpose and BFS (kernelcast.suites.criteria_cases) run, checked
against its reference, timed, and profiled with Nsight Compute.

  measure OUTDIR (on the GPU machine: cupy, nvcc, ncu): for each case, compile its source
      to a cubin, run the application once and compare its output with the reference, then
      time it: 4 warm-up runs and 30 timed ones, each with CUDA events around every
      launch (kernel times) and around the whole application (its span: HOSTSYNC's
      denominator). Then run it once more under ``ncu --set full --page raw --csv`` (every
      metric of every section, for every launch) and keep the CSV. Writes OUTDIR/cases.json
      and OUTDIR/ncu.tar.xz (one <application>-<version>.csv per case).
  run CASE_INDEX CUBIN (what ncu profiles): one run of one case from a compiled cubin.

Run on the device:  python benchmarks/criteria_cases.py measure OUTDIR
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import tarfile
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

WARMUP, RUNS = 4, 30


def _compile(case, folder: Path, arch: str) -> Path:
    stem = folder / f"{case.application}-{case.version}"
    stem.with_suffix(".cu").write_text(case.source)
    subprocess.run(["nvcc", f"-arch=sm_{arch}", "-cubin", "-o", str(stem.with_suffix(".cubin")),
                    str(stem.with_suffix(".cu"))], check=True, capture_output=True, text=True)
    return stem.with_suffix(".cubin")


class _Application:
    """One case on the GPU: its module, buffers and launches."""

    def __init__(self, case, cubin: Path):
        import cupy

        self.case = case
        # a cooperative launch (grid.sync) is a property of the module's kernels in cupy
        self.module = cupy.RawModule(path=str(cubin),
                                     enable_cooperative_groups=case.cooperative)
        self.initial = {}
        for name, (dtype, init) in case.buffers.items():
            self.initial[name] = cupy.asarray(init, dtype=dtype) if hasattr(init, "shape") \
                else cupy.zeros(int(init), dtype=dtype)
        self.buffers = {n: b.copy() for n, b in self.initial.items()}

    def reset(self):
        for name, buf in self.buffers.items():
            buf[...] = self.initial[name]

    def _argument(self, name):
        import numpy as np

        if name in self.buffers:
            return self.buffers[name]
        ctype, value = self.case.scalars[name]
        return {"int": np.int32, "unsigned": np.uint32, "float": np.float32,
                "long long": np.int64}.get(ctype, np.int32)(value)

    def read(self, name):
        import cupy

        return cupy.asnumpy(self.buffers[name])

    def steps(self):
        steps = self.case.steps
        return steps(self.read) if callable(steps) else iter(steps)

    def run(self, events: bool = False):
        """One run of the application; with *events*, (kernel seconds, span seconds)."""
        import cupy

        self.reset()
        cupy.cuda.Device().synchronize()
        marks = []
        first = cupy.cuda.Event()
        first.record()
        for step in self.steps():
            function = self.module.get_function(step.kernel_name)
            start, stop = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
            args = tuple(self._argument(a) for a in step.args)
            function(step.grid, step.block, args, shared_mem=step.shared_bytes)
            stop.record()
            marks.append((start, stop))
        last = cupy.cuda.Event()
        last.record()
        last.synchronize()
        if not events:
            return None
        kernels = [cupy.cuda.get_elapsed_time(a, b) / 1e3 for a, b in marks]
        return kernels, cupy.cuda.get_elapsed_time(first, last) / 1e3


def _time(case, cubin: Path) -> dict:
    import numpy as np

    app = _Application(case, cubin)
    app.run()
    got, want = app.read(case.output), case.reference()
    correct = bool(np.array_equal(np.asarray(got).reshape(-1)[:want.size], want.reshape(-1)))
    runs = [app.run(events=True) for _ in range(WARMUP + RUNS)][WARMUP:]
    spans = [span for _, span in runs]
    best = int(np.argmin(spans))
    return {"correct": correct, "launches": len(runs[best][0]), "span_s": spans,
            "min_span_s": min(spans), "kernel_s_of_fastest": runs[best][0],
            "hostsync_of_fastest": sum(runs[best][0]) / spans[best]}


def measure(out: Path) -> int:
    import cupy

    from kernelcast.suites.criteria_cases import cases

    out.mkdir(parents=True, exist_ok=True)
    props = cupy.cuda.runtime.getDeviceProperties(0)
    arch = f"{props['major']}{props['minor']}"
    smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    ncu = subprocess.run(["ncu", "--version"], capture_output=True, text=True).stdout.strip()
    info = {"device": props["name"].decode(), "compute_capability": arch,
            "sms": props["multiProcessorCount"], "driver": smi,
            "ncu": ncu.splitlines()[-1] if ncu else None,
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    print(json.dumps(info), flush=True)
    folder = Path(tempfile.mkdtemp(prefix="kernelcast-cases-"))
    records = []
    for index, case in enumerate(cases()):
        label = f"{case.application}-{case.version}"
        record = {"application": case.application, "version": case.version,
                  "description": case.description}
        try:
            cubin = _compile(case, folder, arch)
            record.update(_time(case, cubin))
            start = time.monotonic()
            csv = folder / f"{label}.csv"
            run = subprocess.run(
                ["ncu", "--set", "full", "--page", "raw", "--csv", "--target-processes",
                 "all", sys.executable, __file__, "run", str(index), str(cubin)],
                capture_output=True, text=True, timeout=400)
            record["ncu_seconds"] = round(time.monotonic() - start, 1)
            csv.write_text(run.stdout)
            if run.returncode:
                record["ncu_error"] = run.stderr.strip()[-500:]
        except Exception as err:  # noqa: BLE001 - recorded with its status
            record["error"] = f"{type(err).__name__}: {err}"[:500]
        records.append(record)
        print(f"{label}: " + (record.get("error") or
              f"correct {record['correct']}, {record['launches']} launches, "
              f"{record['min_span_s'] * 1e6:.1f} µs, HOSTSYNC "
              f"{record['hostsync_of_fastest']:.2f}, ncu {record.get('ncu_seconds')} s"
              + (f" ({record['ncu_error'][-120:]})" if "ncu_error" in record else "")),
              flush=True)
    (out / "cases.json").write_text(json.dumps({**info, "warmup": WARMUP, "runs": RUNS,
                                                "records": records}, indent=1) + "\n")
    with tarfile.open(out / "ncu.tar.xz", "w:xz") as tar:
        for path in sorted(folder.glob("*.csv")):
            tar.add(path, arcname=path.name)
    return 0


def run_one(index: int, cubin: Path) -> int:
    from kernelcast.suites.criteria_cases import cases

    _Application(cases()[index], cubin).run()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    m = verbs.add_parser("measure", help="run, check, time and profile every case")
    m.add_argument("out", type=Path, help="folder of the results")
    r = verbs.add_parser("run", help="one run of one case (what ncu profiles)")
    r.add_argument("index", type=int, help="the case's index in cases()")
    r.add_argument("cubin", type=Path, help="its compiled cubin")
    args = parser.parse_args()
    return measure(args.out) if args.verb == "measure" else run_one(args.index, args.cubin)


if __name__ == "__main__":
    sys.exit(main())
