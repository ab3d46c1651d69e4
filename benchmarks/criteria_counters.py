"""Kernelcast's symbolic counts against Nsight Compute's hardware counters (issue 25,
"Beyond the paper"): one launch of every kernel of the measurement, test and validation
suites through the CUDA backend, profiled with a short list of ncu metrics, compared per
property by kernelcast.models.criteria.counters.

  plan (no GPU): the cases: every kernel of the three suites once, at the largest
      parameters the H100 CUDA campaign measured for it (data/h100/cuda.sqlite, rows ok or
      unstable; largest by the product of the parameters, then by t), or else the
      largest size case of its class at the largest p the suite allows. Prints them;
      --json FILE writes them.
  run PLAN_JSON (what ncu profiles; needs cupy): each case of the plan in order, built with
      kernelcast.measure.codegen, compiled by the CUDA backend (NVRTC), its arrays allocated
      by the backend (random inputs, NaN outputs), launched once and synchronized. It
      prints nothing on stdout (ncu writes its CSV there); a case that fails is one line on
      stderr and the run goes on. --log FILE records each case just before its launch
      (index, CUDA function, grid and block).
  measure OUTDIR (on the GPU machine: cupy, ncu): the plan with each case's function name
      and counts (its properties and the extended model's data volume and bank conflicts at
      its parameters), then, in chunks of cases, ``ncu --csv --page raw --metrics METRICS
      --kernel-name regex:^(functions)$ python criteria_counters.py run ...`` (no warm-up:
      ncu flushes the caches before each replay pass). ncu's rows are matched to the
      logged launches in order, by function name and grid size; a metric an ==ERROR== line
      of ncu names is dropped and the chunk run again; chunks past --budget seconds are
      skipped. Writes OUTDIR/plan.json, OUTDIR/launches.jsonl, OUTDIR/ncu.tar.xz (the CSV
      of every chunk) and OUTDIR/counters.json (device, driver, ncu version, date, metrics
      and units, and per case its plan entry, status, counts and counters; xz-compressed
      as counters.json.xz when over 2 MB), rewritten after every chunk, then prints the
      comparison.
  compare COUNTERS_JSON (no GPU): the comparison table of a counters document (.json or
      .json.xz), and with --worst N the N cases furthest off per quantity.

Run on the device (the kernel stack from shared/device/prepare.sh):
    source .device/setup.sh && python3 benchmarks/criteria_counters.py measure OUTDIR
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import lzma
import math
import os
import re
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

SUITES = ("measurement", "test", "validation")
STORE = ROOT / "data" / "h100" / "cuda.sqlite"
MAX_JSON_BYTES = 2 * 2 ** 20


# {{{ the plan

def _largest(candidates):
    """The (params, t) of largest parameters: by their product, then by t."""
    return max(candidates, key=lambda pt: (math.prod(pt[0].values()), pt[1]))


def _store_sizes(store: Path) -> dict:
    """(suite, kernel name) -> [(params, t)] of the store's ok and unstable rows."""
    from kernelcast.measure.store import Store

    sizes: dict = {}
    if not store.exists():
        return sizes
    with Store(store) as db:
        for row in db.rows():
            if row["status"] in ("ok", "unstable") and not row["damage"] and row["suite"]:
                kernel = row["case_name"].rsplit("/", 1)[0]
                sizes.setdefault((row["suite"], kernel), []).append(
                    (dict(row["params"]), row["t"] or 0))
    return sizes


def plan_cases(store: Path = STORE) -> list[dict]:
    """One case per kernel of SUITES, in suite order (see the module docstring)."""
    from kernelcast.suites.paper import get_suite

    measured = _store_sizes(store)
    plan = []
    for suite_name in SUITES:
        suite = get_suite(suite_name)
        largest_p = {c.name: max(c.p_choices) for c in suite.classes}
        kernels: dict = {}
        for case in suite.cases(largest_p):
            kernels.setdefault(case.kernel_name, []).append(case)
        for kernel, cases in kernels.items():
            first = cases[0]
            rows = measured.get((suite_name, kernel))
            if rows:
                params, _ = _largest(rows)
                source = "store"
            else:
                params, _ = _largest([(c.params, c.t) for c in cases])
                source = "suite"
            plan.append({"index": len(plan), "suite": suite_name, "class": first.class_name,
                         "variant": first.variant, "dtype": first.dtype,
                         "group": list(first.group_size), "p": first.p, "kernel": kernel,
                         "params": dict(params), "source": source})
    return plan


def case_of(entry: dict):
    """The suite Case of a plan entry."""
    from kernelcast.suites.paper import get_suite
    from kernelcast.suites.suite import Case

    suite = get_suite(entry["suite"])
    return Case(suite.name, suite.kernel_class(entry["class"]), entry["variant"],
                entry["dtype"], tuple(entry["group"]), entry["p"], 0, dict(entry["params"]))


def _label(entry: dict) -> str:
    params = ",".join(f"{k}={v}" for k, v in sorted(entry["params"].items()))
    return f"{entry['suite']}:{entry['kernel']}/{params}"


def plan(json_path: Path | None) -> int:
    cases = plan_cases()
    print(f"{len(cases)} cases ("
          + ", ".join(f"{s} {sum(c['suite'] == s for c in cases)}" for s in SUITES)
          + "; parameters from "
          + ", ".join(f"{src} {sum(c['source'] == src for c in cases)}"
                      for src in ("store", "suite")) + ")")
    for entry in cases:
        print(f"{entry['index']:4d} {_label(entry)}")
    if json_path is not None:
        json_path.write_text(json.dumps(cases, indent=1) + "\n")
    return 0

# }}}


# {{{ run (under ncu)

def run(plan_path: Path, log_path: Path | None, first: int = 0, count: int | None = None
        ) -> int:
    import numpy as np

    from kernelcast.errors import KernelcastError
    from kernelcast.measure.arrays import array_specs, scalar_arguments, typed_kernel
    from kernelcast.measure.codegen import generate_case

    entries = json.loads(plan_path.read_text())
    entries = entries[first:None if count is None else first + count]
    cases = [case_of(e) for e in entries]
    try:
        from kernelcast.measure.backends.cuda import CudaBackend
        from kernelcast.measure.devices import find_device

        backend = CudaBackend(find_device(None, "cuda"))
    except KernelcastError as err:
        print(f"criteria_counters run: {err}", file=sys.stderr)
        return 1
    log = open(log_path, "a") if log_path else None  # noqa: SIM115 - one line per case
    try:
        for entry, case in zip(entries, cases, strict=True):
            args = {}
            try:
                knl = case.kernel()
                generated = generate_case(knl, "cuda", case)
                compiled = backend.compile(generated)
                specs, scalars = array_specs(typed_kernel(knl), case.params)
                values = scalar_arguments(scalars, case.params, np.random.default_rng(0))
                args = backend.allocate(specs, values, seed=0)
                grid, block = generated.launch_sizes(case.params)
                if log:
                    log.write(json.dumps({"index": entry["index"], "function": generated.name,
                                          "grid": list(grid), "block": list(block)}) + "\n")
                    log.flush()
                backend.time_launches(compiled, generated, args, case.params, 1)
            except Exception as err:  # noqa: BLE001 - one line, then the next case
                message = " ".join(str(err).split())[:300]
                print(f"criteria_counters run: case {entry['index']} ({_label(entry)}): "
                      f"{type(err).__name__}: {message}", file=sys.stderr, flush=True)
            finally:
                backend.release(args)
    finally:
        if log:
            log.close()
    return 0

# }}}


# {{{ measure

def _counts(case) -> dict:
    """The case's properties and extended features at its parameters (nonzero ones)."""
    from kernelcast.models.extended.features import extend
    from kernelcast.properties import extract_properties

    props = extract_properties(case.kernel())
    values, extent = props.evaluate_with_extent(case.params)
    return {k: _round(v) for k, v in extend(values, extent).items()
            if v and not k.startswith("item_")}


def _round(value):
    """Integers as integers, other numbers to 5 significant digits."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2 ** 62:
        return int(value)
    return float(f"{value:.5g}") if isinstance(value, float) else value


def _output(command) -> str:
    """What *command* prints, stripped; empty where it cannot run."""
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=120
                              ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def _device_info() -> dict:
    from kernelcast.measure.devices import cuda_devices

    devices = cuda_devices()
    smi = _output(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    ncu = _output(["ncu", "--version"])
    return {"device": devices[0].name if devices else None,
            "cuda": devices[0].driver if devices else None,
            "driver": smi.splitlines()[0] if smi else None,
            "ncu": ncu.splitlines()[-1] if ncu else None,
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}


def match(logged: list[dict], launches: list) -> dict:
    """Plan index -> ncu Launch: the rows in order, each to the next logged launch of the
    same function whose grid, where ncu gives one, has as many groups (a logged launch
    with no such row gets none; up to two unmatched rows are skipped)."""
    matched, row = {}, 0
    for entry in logged:
        for ahead in range(row, min(row + 3, len(launches))):
            launch = launches[ahead]
            grid = launch.metrics.get("launch__grid_size")
            if launch.kernel == entry["function"] and (
                    not isinstance(grid, float) or grid == math.prod(entry["grid"])):
                matched[entry["index"]] = launch
                row = ahead + 1
                break
    return matched


def _write(out: Path, document: dict) -> Path:
    text = json.dumps(document, indent=1) + "\n"
    plain, packed = out / "counters.json", out / "counters.json.xz"
    for stale in (plain, packed):
        stale.unlink(missing_ok=True)
    if len(text) > MAX_JSON_BYTES:
        packed.write_bytes(lzma.compress(text.encode()))
        return packed
    plain.write_text(text)
    return plain


def _ncu(metrics: list, names: list, command: list, timeout: float) -> tuple[str, str]:
    """(stdout, stderr) of ncu profiling *command* (a process's argv) with *metrics*, only
    the kernels named *names*; ncu and what it started are killed after *timeout* s."""
    process = subprocess.Popen(
        ["ncu", "--csv", "--page", "raw", "--target-processes", "all",
         "--metrics", ",".join(metrics), "--kernel-name", "regex:^(" + "|".join(names) + ")$",
         *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    try:
        return process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, _ = process.communicate()
        return stdout, f"ncu timed out after {timeout:.0f} s"


def write_csvs(path: Path, csvs: dict) -> None:
    """ncu's CSV of every chunk (name -> text) as one xz-compressed tar at *path*."""
    with tarfile.open(path, "w:xz") as tar:
        for name, text in csvs.items():
            data = text.encode()
            member = tarfile.TarInfo(name)
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))


def profile_chunk(part: int, todo: list, metrics: list, dropped: list, command: list,
                  log_path: Path, timeout: float, document: dict) -> tuple[str, str, list]:
    """Profile one chunk: *command* launches the records *todo* (each with "index" and
    "function") and logs them to *log_path*; a metric ncu does not know is dropped (into
    *dropped*) and the chunk run again. Sets each record's "status" and "counters" and
    the document's "units"; returns (ncu's CSV, its notes, the launches logged)."""
    from kernelcast.frontends.profiler import read_ncu_csv

    before = log_path.read_text()
    while True:
        text, note = _ncu(metrics, sorted({r["function"] for r in todo}), command, timeout)
        bad = unknown_metrics(f"{text}\n{note}", metrics)
        if not bad:
            break
        print(f"chunk {part}: ncu does not know {', '.join(bad)}; again without",
              flush=True)
        metrics[:] = [m for m in metrics if m not in bad]
        dropped += bad
        log_path.write_text(before)
    logged = [json.loads(line) for line in log_path.read_text()[len(before):].splitlines()]
    try:
        launches = read_ncu_csv(text, f"chunk {part}")
    except Exception as err:  # noqa: BLE001 - no rows: the chunk's cases get none
        launches, note = [], f"{note}\n{err}".strip()
    matched = match(logged, launches)
    for launch in launches[:1]:
        document["units"].update(launch.units)
    for r in todo:
        launch = matched.get(r["index"])
        r["status"] = "ok" if launch else (
            "no ncu row" if any(e["index"] == r["index"] for e in logged)
            else "not launched")
        if launch:
            r["counters"] = {m: _round(v) for m, v in launch.metrics.items()}
    return text, note, logged


def unknown_metrics(text: str, metrics: list) -> list:
    """The metrics of *metrics* that ncu's ==ERROR== lines in *text* name (none where
    they name every one: then the error is not about a name)."""
    errors = [line for line in text.splitlines() if line.startswith("==ERROR==")]
    named = [m for m in metrics
             if any(m in line or m.rsplit(".", 1)[0] in line for line in errors)]
    return named if len(named) < len(metrics) else []


def measure(out: Path, chunk: int, budget: float, only: str | None) -> int:
    from kernelcast.measure.codegen import generate_case
    from kernelcast.models.criteria.counters import METRICS

    start = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    info = _device_info()
    print(json.dumps(info), flush=True)
    entries = [e for e in plan_cases() if not only or re.search(only, _label(e))]
    records = []
    for entry in entries:
        record = dict(entry)
        case = case_of(entry)
        try:
            record["function"] = generate_case(case.kernel(), "cuda", case).name
            record["counts"] = _counts(case)
        except Exception as err:  # noqa: BLE001 - recorded, and the case is not run
            record["error"] = f"{type(err).__name__}: {err}"[:300]
        records.append(record)
    runnable = [r for r in records if "error" not in r]
    plan_path = out / "plan.json"
    plan_path.write_text(json.dumps(runnable, indent=1) + "\n")
    metrics, dropped = list(METRICS), []
    print(f"{len(records)} cases, {len(runnable)} to run; counts in "
          f"{time.monotonic() - start:.0f} s", flush=True)
    document = {**info, "metrics": metrics, "dropped_metrics": dropped, "units": {},
                "notes": [], "cases": records}
    csvs = {}
    log_path = out / "launches.jsonl"
    log_path.write_text("")
    for part, begin in enumerate(range(0, len(runnable), chunk)):
        todo = runnable[begin:begin + chunk]
        if budget - (time.monotonic() - start) < 30:
            print(f"chunk {part}: skipped, the budget of {budget:.0f} s is spent", flush=True)
            for r in todo:
                r["status"] = "skipped"
            continue
        began = time.monotonic()
        text, note, logged = profile_chunk(
            part, todo, metrics, dropped,
            [sys.executable, __file__, "run", str(plan_path), "--log", str(log_path),
             "--first", str(begin), "--count", str(len(todo))],
            log_path, max(budget - (time.monotonic() - start), 10), document)
        csvs[f"chunk-{part:02d}.csv"] = text
        profiled = sum("counters" in r for r in todo)
        print(f"chunk {part}: {len(todo)} cases, {len(logged)} launched, {profiled} "
              f"profiled in {time.monotonic() - began:.0f} s", flush=True)
        notes = [line for line in f"{text}\n{note}".splitlines()
                 if line.startswith(("==ERROR==", "==WARNING==", "criteria_counters run:",
                                     "ncu timed out", f"chunk {part}:"))]
        document["notes"] += notes
        for line in notes[:8]:
            print(f"  {line[:200]}", flush=True)
        _write(out, document)
    written = _write(out, document)
    write_csvs(out / "ncu.tar.xz", csvs)
    statuses = {}
    for r in records:
        status = r.get("status", "error" if "error" in r else "?")
        statuses[status] = statuses.get(status, 0) + 1
    print(f"wrote {written} ({', '.join(f'{k} {v}' for k, v in sorted(statuses.items()))}) "
          f"in {time.monotonic() - start:.0f} s", flush=True)
    print_comparison(document)
    return 0

# }}}


# {{{ compare

def load(path: Path) -> dict:
    data = path.read_bytes()
    return json.loads(lzma.decompress(data) if path.suffix == ".xz" else data)


def print_comparison(document: dict, worst: int = 0) -> None:
    from kernelcast.models.criteria.counters import QUANTITIES, agreement, pairs

    def share(x):
        return "-" if x is None else f"{x * 100:.0f}%"

    print(f"{'quantity':<26}{'cases':>6}{'±10%':>7}{'×2':>6}{'median':>9}{'only':>6}  reason")
    for row in agreement(document):
        median = "-" if row["median_ratio"] is None else f"{row['median_ratio']:.3g}"
        print(f"{row['quantity']:<26}{row['cases']:>6}{share(row['within_10pct']):>7}"
              f"{share(row['within_2x']):>6}{median:>9}{row['counter_only']:>6}  "
              f"{row['reason']}")
    if not worst:
        return
    for quantity in QUANTITIES:
        compared, _ = pairs(document, quantity)
        compared.sort(key=lambda c: -abs(math.log(max(c[2], 1e-30) / c[1])))
        if compared:
            print(f"\n{quantity.name} ({quantity.unit}): counter / count, furthest off")
        for label, predicted, measured in compared[:worst]:
            print(f"  {measured / predicted:9.3g}  {label}  ({measured:.4g} / {predicted:.4g})")


def compare(path: Path, worst: int) -> int:
    print_comparison(load(path), worst)
    return 0

# }}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    p = verbs.add_parser("plan", help="list the cases (one per kernel of the three suites)")
    p.add_argument("--json", type=Path, metavar="FILE", help="also write the plan there")
    r = verbs.add_parser("run", help="launch every case of a plan once (what ncu profiles)")
    r.add_argument("plan", type=Path, help="the plan (plan --json, or measure's plan.json)")
    r.add_argument("--log", type=Path, metavar="FILE",
                   help="append each case's index, function, grid and block before its launch")
    r.add_argument("--first", type=int, default=0, help="the first plan entry to run")
    r.add_argument("--count", type=int, help="how many entries to run (default: the rest)")
    m = verbs.add_parser("measure", help="plan, count, profile every case with ncu, compare")
    m.add_argument("out", type=Path, help="folder of the results")
    m.add_argument("--chunk", type=int, default=50, help="cases per ncu run (default 50)")
    m.add_argument("--budget", type=float, default=540,
                   help="seconds for the whole measurement; chunks past it are skipped "
                        "(default 540)")
    m.add_argument("--only", metavar="REGEX",
                   help="only the cases whose label (suite:kernel/params) matches")
    c = verbs.add_parser("compare", help="the comparison table of a counters.json")
    c.add_argument("counters", type=Path, help="counters.json or counters.json.xz")
    c.add_argument("--worst", type=int, default=0, metavar="N",
                   help="also list the N cases furthest off per quantity")
    args = parser.parse_args(argv)
    if args.verb == "plan":
        return plan(args.json)
    if args.verb == "run":
        return run(args.plan, args.log, args.first, args.count)
    if args.verb == "measure":
        return measure(args.out, args.chunk, args.budget, args.only)
    return compare(args.counters, args.worst)


if __name__ == "__main__":
    sys.exit(main())
