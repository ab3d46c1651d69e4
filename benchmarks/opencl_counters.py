"""The memory counters kernelcast predicts for the real OpenCL programs
(kernelcast.suites.opencl_programs), against Nsight Compute's profile of each launch.

Nsight Compute profiles CUDA launches, not OpenCL ones: each kernel runs as its CUDA
translation (kernelcast.frontends.opencl.cuda, compiled by NVRTC through CuPy) on the
same inputs, launch and build options, and its outputs are checked against the NumPy
reference of the program (a translation that computes something else is reported, not
compared).

  profile (on the device): runs `ncu --csv --page raw --metrics ...` over `run`, which
      launches every "gpu" launch once; writes DIR/opencl-counters-ncu.csv and
      DIR/opencl-counters-run.json (each launch's name, function, grid, block and
      whether its outputs were right), with the device, driver and date.
      With --hierarchy, the memory hierarchy's and the SMs' counters instead (HIERARCHY),
      into DIR/opencl-hierarchy-ncu.csv and DIR/opencl-hierarchy-run.json.
  causes (anywhere, no device): sorts the launches of the --hierarchy profile by what
      bounds them (CAUSES: under a quarter of a wave, DRAM, the SMs, reuse in L1, none
      saturated) and counts, per class, the launches each model of
      DIR/opencl-programs-eval.json predicts within 0.7-1.3; writes
      DIR/opencl-hierarchy.json.
  compare (anywhere, no device): predicts each profiled launch's counters from its
      OpenCL source (kernelcast.facts.opencl.opencl_launch_facts) and writes
      DIR/opencl-counters.json: per launch and counter the prediction, the measurement
      and their ratio; per counter the share of launches within 20%.

Run:  python benchmarks/opencl_counters.py profile --out data/h100 [--only KERNEL ...]
      python benchmarks/opencl_counters.py compare --dir data/h100
      python benchmarks/opencl_counters.py profile --hierarchy --out data/h100
      python benchmarks/opencl_counters.py causes --dir data/h100
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

#: the counters compared (the memory counters kernelcast predicts for OpenCL source)
COMPARED = (
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
)
#: also profiled, to read beside them
CONTEXT = ("smsp__sass_inst_executed_op_global_ld.sum",
           "smsp__sass_inst_executed_op_global_st.sum", "launch__registers_per_thread",
           "launch__grid_size", "launch__block_size")
#: `profile --hierarchy`: where each launch's traffic ends (L1, L2, DRAM), its
#: instructions and how busy it kept the SMs and DRAM, to find why a model misses it
HIERARCHY = ("gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
             "lts__t_sectors_srcunit_tex_op_read.sum",
             "lts__t_sectors_srcunit_tex_op_write.sum",
             "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
             "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
             "sm__inst_executed.sum", "smsp__inst_executed_pipe_xu.sum",
             "smsp__inst_executed_pipe_fp64.sum",
             "sm__throughput.avg.pct_of_peak_sustained_elapsed",
             "dram__throughput.avg.pct_of_peak_sustained_elapsed",
             "sm__warps_active.avg.pct_of_peak_sustained_active",
             "launch__registers_per_thread", "launch__grid_size", "launch__block_size",
             "launch__waves_per_multiprocessor")
AGREEMENT = 0.20
#: what bounds a launch, tried in this order: (name, test on its hierarchy counters)
CAUSES = (
    ("under a quarter of a wave", lambda c: c["waves"] < 0.25),
    ("DRAM-bound", lambda c: c["dram_pct"] >= 60),
    ("SM-bound", lambda c: c["sm_pct"] >= 60),
    ("reuse in L1", lambda c: c["l1_sectors"] >= 3 * c["l2_sectors"]),
    ("none saturated", lambda c: True),
)


def _launches(only):
    from kernelcast.suites.opencl_programs import PROGRAMS

    return [p for p in PROGRAMS if p.size == "gpu" and (not only or p.kernel in only)]


def run(args) -> int:
    """Launch each translation once, check its outputs; one JSON line per launch to the
    log (stdout is ncu's)."""
    import cupy as cp

    from kernelcast.frontends.opencl.cuda import to_cuda, work_dim_option
    from kernelcast.suites.opencl_programs import (
        TOLERANCE,
        _typed_scalars,
        host_arrays,
        kernel_arguments,
        output_errors,
        source,
    )

    for launch in _launches(args.only):
        text = source(launch)
        options = tuple(o for o in launch.options.replace("-D ", "-D").split()) + (
            work_dim_option(launch.global_size), "-std=c++17")
        record = {"launch": launch.name, "kernel": launch.kernel,
                  "grid": [g // b for g, b in zip(launch.global_size, launch.local_size)],
                  "block": list(launch.local_size)}
        try:
            module = cp.RawModule(code=to_cuda(text), options=options)
            function = module.get_function(launch.kernel)
            host = host_arrays(launch)
            device = {k: cp.asarray(v) for k, v in host.items()}
            scalars = _typed_scalars(launch)
            values = [device[n] if pointer else scalars[n]
                      for n, _, pointer in kernel_arguments(text, launch.kernel)]
            pad = (1,) * (3 - len(launch.global_size))
            function(tuple(record["grid"]) + pad, tuple(launch.local_size) + pad,
                     tuple(values))
            cp.cuda.Device().synchronize()
            outputs = {k: cp.asnumpy(device[k]) for k in launch.written}
            errors = output_errors(launch, host, outputs)
            record["right"] = all(e <= TOLERANCE[outputs[k].dtype.name]
                                  for k, e in errors.items())
            record["max_rel_error"] = float(max(errors.values(), default=0.0))
            del device
            cp.get_default_memory_pool().free_all_blocks()
        except Exception as err:  # reported per launch, the others still run
            record["error"] = f"{type(err).__name__}: {str(err)[:300]}"
        with open(args.log, "a", encoding="utf-8") as log:
            log.write(json.dumps(record) + "\n")
    return 0


def profile(args) -> int:
    """Run `run` under Nsight Compute; write the CSV and the run's record."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = "opencl-hierarchy" if args.hierarchy else "opencl-counters"
    log = out / f"{stem}-run.jsonl"
    log.write_text("")
    names = sorted({launch.kernel for launch in _launches(args.only)})
    command = ["ncu", "--csv", "--page", "raw", "--target-processes", "all",
               "--metrics", ",".join(HIERARCHY if args.hierarchy else COMPARED + CONTEXT),
               "--kernel-name", "regex:^(" + "|".join(names) + ")$",
               sys.executable, __file__, "run", "--log", str(log),
               *(["--only", *args.only] if args.only else [])]
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False,
                              timeout=args.timeout)
    except subprocess.TimeoutExpired as err:
        done = subprocess.CompletedProcess(command, -9, err.stdout or "", "ncu timed out")
    stdout = done.stdout if isinstance(done.stdout, str) else done.stdout.decode()
    (out / f"{stem}-ncu.csv").write_text(stdout)
    records = [json.loads(line) for line in log.read_text().splitlines() if line]
    log.unlink()
    import cupy as cp

    props = cp.cuda.runtime.getDeviceProperties(0)
    doc = {"device": props["name"].decode(), "driver": _driver(),
           "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
           "ncu": _ncu_version(), "returncode": done.returncode,
           "stderr_tail": done.stderr[-2000:], "launches": records}
    (out / f"{stem}-run.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{len(records)} launches, {sum(bool(r.get('right')) for r in records)} right; "
          f"ncu exit {done.returncode}")
    return 0 if done.returncode == 0 else 1


def _driver() -> str | None:
    done = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                          capture_output=True, text=True, check=False)
    return done.stdout.strip().splitlines()[0] if done.returncode == 0 and done.stdout else None


def _ncu_version() -> str | None:
    done = subprocess.run(["ncu", "--version"], capture_output=True, text=True, check=False)
    return done.stdout.strip().splitlines()[-1] if done.returncode == 0 else None


def _profiles_by_function(path: Path) -> dict[str, list]:
    """ncu's launches in the CSV at *path*, in order, by the function each ran."""
    from kernelcast.frontends.profiler import read_ncu_csv

    by_function: dict[str, list] = {}
    for p in read_ncu_csv(path.read_text(), str(path)):
        by_function.setdefault(p.kernel.split("(")[0].split()[-1], []).append(p)
    return by_function


def compare(args) -> int:
    """Predict each profiled launch's counters from source; write the comparison."""
    from kernelcast.facts.opencl import opencl_launch_facts
    from kernelcast.suites.opencl_programs import source

    folder = Path(args.dir)
    run_doc = json.loads((folder / "opencl-counters-run.json").read_text())
    by_function = _profiles_by_function(folder / "opencl-counters-ncu.csv")
    launches = {launch.name: launch for launch in _launches(None)}
    rows, shown = [], {}
    for record in run_doc["launches"]:
        queue = by_function.get(record["kernel"], [])
        if "error" in record or not queue:
            continue
        measured = queue.pop(0).metrics
        if not record.get("right"):
            continue
        launch = launches[record["launch"]]
        facts = opencl_launch_facts(source(launch), launch.global_size, launch.local_size,
                                    kernel=launch.kernel, scalars=launch.scalars,
                                    stats=launch.stats, options=launch.options,
                                    hardware="h100" if "H100" in run_doc["device"] else "h200")
        row = {"launch": launch.name, "counters": {}}
        for name in COMPARED:
            p, m = facts.counters.get(name), measured.get(name)
            if p is None or not isinstance(m, int | float):
                continue
            ratio = (1.0 if p == 0 else None) if m == 0 else p / m
            row["counters"][name] = {"predicted": p, "measured": m, "ratio": ratio}
        row["context"] = {n: measured.get(n) for n in CONTEXT}
        rows.append(row)
        ratios = " ".join(f"{_short(n)} {c['ratio']:.2f}" if c["ratio"] is not None
                          else f"{_short(n)} –" for n, c in row["counters"].items()
                          if c["measured"] or c["predicted"])
        print(f"{launch.name}: {ratios}", flush=True)
    for name in COMPARED:
        judged = [r["counters"][name]["ratio"] for r in rows if name in r["counters"]
                  and (r["counters"][name]["measured"] or r["counters"][name]["predicted"])]
        within = [x for x in judged if x is not None and abs(x - 1) <= AGREEMENT]
        shown[name] = {"launches": len(judged), "within_20pct": len(within),
                       "geomean_ratio": math.exp(sum(math.log(x) for x in judged
                                                     if x) / max(1, len(judged)))
                       if judged and all(judged) else None}
        print(f"{name}: {len(within)} of {len(judged)} launches within 20%")
    doc = {"device": run_doc["device"], "driver": run_doc["driver"],
           "profiled": run_doc["date"], "ncu": run_doc.get("ncu"),
           "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
           "launches": len(rows),
           "not_right": [r["launch"] for r in run_doc["launches"] if not r.get("right")],
           "summary": shown, "per_launch": rows}
    (folder / "opencl-counters.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {folder / 'opencl-counters.json'}")
    return 0


def _short(name: str) -> str:
    return (name.replace("l1tex__t_", "").replace("l1tex__data_pipe_lsu_", "")
            .replace("smsp__sass_inst_executed_op_", "inst_").replace(".sum", "")
            .replace("_pipe_lsu_mem_global_op", "").replace("wavefronts_mem_", ""))


def _hierarchy(measured: dict) -> dict:
    """The few numbers CAUSES reads, from one launch's --hierarchy metrics."""
    def get(name):
        value = measured.get(name)
        return float(value) if isinstance(value, int | float) else math.nan

    return {"seconds": get("gpu__time_duration.sum") * 1e-9,
            "dram_bytes": get("dram__bytes_read.sum") + get("dram__bytes_write.sum"),
            "l2_sectors": get("lts__t_sectors_srcunit_tex_op_read.sum")
            + get("lts__t_sectors_srcunit_tex_op_write.sum"),
            "l1_sectors": get("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum")
            + get("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"),
            "instructions": get("sm__inst_executed.sum"),
            "dram_pct": get("dram__throughput.avg.pct_of_peak_sustained_elapsed"),
            "sm_pct": get("sm__throughput.avg.pct_of_peak_sustained_elapsed"),
            "occupancy_pct": get("sm__warps_active.avg.pct_of_peak_sustained_active"),
            "waves": get("launch__waves_per_multiprocessor")}


def causes(args) -> int:
    """Sort the profiled launches by what bounds them; per class, each model's hits."""
    folder = Path(args.dir)
    run_doc = json.loads((folder / "opencl-hierarchy-run.json").read_text())
    by_function = _profiles_by_function(folder / "opencl-hierarchy-ncu.csv")
    evaluated = json.loads((folder / "opencl-programs-eval.json").read_text())
    timed = {row["launch"]: row for row in evaluated["per_launch"]}
    models = list(evaluated["models"])
    rows, classes = [], {name: {"launches": 0, **{m: 0 for m in models}}
                         for name, _ in CAUSES}
    for record in run_doc["launches"]:
        queue = by_function.get(record["kernel"], [])
        if "error" in record or not queue or record["launch"] not in timed:
            continue
        counters = _hierarchy(queue.pop(0).metrics)
        cause = next(name for name, test in CAUSES if test(counters))
        measured = timed[record["launch"]]["measured_s"]
        ratios = {m: (p / measured if isinstance(p, int | float) and p > 0 else None)
                  for m, p in timed[record["launch"]]["predicted_s"].items()}
        rows.append({"launch": record["launch"], "cause": cause, "counters": counters,
                     "ratios": ratios})
        classes[cause]["launches"] += 1
        for m, r in ratios.items():
            classes[cause][m] += r is not None and 0.7 <= r <= 1.3
        shown = " ".join(f"{m} {r:.2f}" for m, r in ratios.items() if r is not None)
        print(f"{record['launch'][:64]:64s} {cause:26s} {shown}")
    print(f"\nlaunches within 0.7-1.3 per model, by what bounds them "
          f"({evaluated['device']}):")
    for name, row in classes.items():
        print(f"  {name:26s} {row['launches']:3d} launches: "
              + ", ".join(f"{m} {row[m]}" for m in models))
    doc = {"device": run_doc["device"], "driver": run_doc["driver"],
           "profiled": run_doc["date"], "ncu": run_doc.get("ncu"),
           "causes": [name for name, _ in CAUSES], "classes": classes, "launches": rows}
    (folder / "opencl-hierarchy.json").write_text(json.dumps(doc, indent=1) + "\n")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    r = verbs.add_parser("run", help="launch each translation once (under ncu)")
    r.add_argument("--only", nargs="+", metavar="KERNEL", help="only these kernels")
    r.add_argument("--log", required=True, help="file to append each launch's record to")
    p = verbs.add_parser("profile", help="profile every launch with Nsight Compute")
    p.add_argument("--out", required=True, help="folder of the CSV and the run record")
    p.add_argument("--only", nargs="+", metavar="KERNEL", help="only these kernels")
    p.add_argument("--timeout", type=float, default=480, help="seconds ncu may take (480)")
    p.add_argument("--hierarchy", action="store_true",
                   help="profile the memory hierarchy's and SMs' counters (HIERARCHY) instead")
    c = verbs.add_parser("compare", help="predicted counters against the profile")
    c.add_argument("--dir", required=True, help="folder of the profile")
    k = verbs.add_parser("causes", help="what bounds each launch, and each model's hits")
    k.add_argument("--dir", required=True,
                   help="folder of the --hierarchy profile and opencl-programs-eval.json")
    args = parser.parse_args()
    return {"run": run, "profile": profile, "compare": compare,
            "causes": causes}[args.verb](args)


if __name__ == "__main__":
    sys.exit(main())
