"""Nsight Compute counters of several hundred launches, the ground truth that the predicted
counters of kernelcast.facts are checked against.

The launches: every kernel of the measurement, test and validation suites (at the
parameters benchmarks/criteria_counters.py chooses), the Loopy twins of the first random
kernels of both sets at their drawn GPU sizes, and variants of every tuning family and
corpus family at the family's GPU parameters, spread over each space so that every
work-group shape in it is profiled at least once.

  plan OUT.json (no GPU): the launch list, each entry enough to rebuild its kernel
      without a GPU (kernelcast.tune.launches.launch_kernel), and, made in parallel, its
      CUDA code, launch geometry and arrays, so that the GPU machine only compiles and
      launches.
      --held-out PLAN.json: launches none of PLAN's are: the next random kernels of each
      set and other variants of every tuning and corpus family (what kernelcast.facts
      was not developed on).
  run PLAN.json (under ncu; needs cupy): each planned launch in order, compiled with NVRTC
      by the CUDA backend, its inputs random in [0.5, 1.5), launched once. A failure is
      one line on stderr and the run goes on; --log records each launch just before it.
  measure PLAN.json OUTDIR (the GPU machine: cupy, ncu): chunks of the plan profiled with
      ``ncu --csv --page raw --metrics METRICS`` (default cache control: caches flushed
      before each replay pass), rows matched to the logged launches, written to
      OUTDIR/counters.json.xz after every chunk with device, driver, CUDA, ncu and date;
      OUTDIR/ncu.tar.xz keeps ncu's CSV of every chunk.

Run on the device (the kernel stack from shared/device/prepare.sh):
    python3 benchmarks/counters_gpu.py plan data/counters-plan.json      # here, once
    source .device/setup.sh && python3 benchmarks/counters_gpu.py measure \
        data/counters-plan.json OUTDIR
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

RANDOM_PER_SET = 40
VARIANTS_PER_FAMILY = 20
VARIANTS_PER_CORPUS_FAMILY = 12
# a held-out plan (plan --held-out): random kernels after those of the plan, and other
# variants of each family
HELD_OUT_RANDOM_PER_SET = 20
HELD_OUT_VARIANTS_PER_FAMILY = 12

# The counters the facts predict, and what explains them (each name checked against the
# raw page of ncu 2025.3; a name ncu refuses is dropped and recorded).
METRICS = (
    "gpu__time_duration.sum", "launch__grid_size", "launch__block_size",
    "launch__registers_per_thread", "launch__shared_mem_per_block_static",
    "launch__shared_mem_config_size", "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem", "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks", "launch__waves_per_multiprocessor",
    "sm__maximum_warps_per_active_cycle_pct", "sm__warps_active.avg.pct_of_peak_sustained_active",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "lts__t_sectors_op_read.sum", "lts__t_sectors_op_write.sum",
    "lts__t_sectors_op_read_lookup_hit.sum", "lts__t_sectors_srcunit_tex_op_read.sum",
    "dram__bytes_read.sum", "dram__bytes_write.sum",
    "smsp__inst_executed.sum", "smsp__thread_inst_executed.sum",
    "smsp__sass_inst_executed_op_global_ld.sum", "smsp__sass_inst_executed_op_global_st.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum", "smsp__sass_inst_executed_op_shared_st.sum",
    "smsp__sass_inst_executed_op_local_ld.sum", "smsp__sass_inst_executed_op_local_st.sum",
    "sm__inst_executed_pipe_fma.sum", "sm__inst_executed_pipe_alu.sum",
    "sm__inst_executed_pipe_lsu.sum", "sm__inst_executed_pipe_fp64.sum",
    "sm__inst_executed_pipe_xu.sum", "sm__inst_executed_pipe_cbu.sum",
    "sm__inst_executed_pipe_adu.sum", "sm__inst_executed_pipe_uniform.sum",
    *(f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum"
      for op in ("fadd", "fmul", "ffma", "dadd", "dmul", "dfma")),
)


# {{{ the plan

def _random_entries(numbers=range(RANDOM_PER_SET)) -> list[dict]:
    from kernelcast.suites.random_kernels import SETS, drawn_size

    return [{"kind": "random", "set": s, "number": i, "n": drawn_size(s, i)}
            for s in SETS for i in numbers]


def _spread(items: list, count: int, key) -> list:
    """*count* items spread evenly over *items*, with at least one of every *key*."""
    chosen, seen = [], set()
    for item in items:
        if key(item) not in seen:
            seen.add(key(item))
            chosen.append(item)
    rest = [x for x in items if x not in chosen]
    room = max(count - len(chosen), 0)
    if rest and room:
        step = len(rest) / room
        chosen += [rest[int(k * step)] for k in range(min(room, len(rest)))]
    return chosen


def _family_entries(taken: list | None = None) -> list[dict]:
    """Variants of every tuning and corpus family spread over its space; with *taken*
    (plan entries), HELD_OUT_VARIANTS_PER_FAMILY others of each, none of *taken*."""
    from kernelcast.tune.corpus import CORPUS
    from kernelcast.tune.families import FAMILIES
    from kernelcast.tune.space import invalid, variant_key

    used = {(e["family"], variant_key(e["variant"])) for e in taken or ()
            if e["kind"] in ("family", "corpus")}
    entries = []
    for corpus, families, count in ((False, FAMILIES, VARIANTS_PER_FAMILY),
                                    (True, CORPUS, VARIANTS_PER_CORPUS_FAMILY)):
        for fam in families.values():
            valid = [v for v in fam.space.variants()
                     if not invalid(v, fam.space, max_group_size=1024)
                     and (fam.name, variant_key(v)) not in used]
            shape = (lambda v, fam=fam: tuple(v[f"{a.iname}.group"] for a in fam.space.axes))
            if taken is None:
                chosen = _spread(valid, count, shape)
            else:  # evenly spread, half a step in
                count = min(HELD_OUT_VARIANTS_PER_FAMILY, len(valid))
                chosen = [valid[int((k + 0.5) * len(valid) / count)] for k in range(count)]
            for variant in chosen:
                entries.append({"kind": "corpus" if corpus else "family",
                                "family": fam.name, "variant": variant,
                                "params": dict(fam.params)})
    return entries


def _suite_entries() -> list[dict]:
    from kernelcast.evaluation.criteria_counters import plan_cases

    return [{"kind": "suite", **{k: e[k] for k in ("suite", "class", "variant", "dtype",
                                                    "group", "p", "kernel", "params")}}
            for e in plan_cases(ROOT / "data" / "h100" / "cuda.sqlite")]


def label(entry: dict) -> str:
    kind = entry["kind"]
    if kind == "suite":
        params = ",".join(f"{k}={v}" for k, v in sorted(entry["params"].items()))
        return f"{entry['suite']}:{entry['kernel']}/{params}"
    if kind == "random":
        return f"random:{entry['set']}_{entry['number']}/n={entry['n']}"
    from kernelcast.tune.space import variant_key

    return f"{kind}:{entry['family']}/{variant_key(entry['variant'])}"


def _built(entry: dict) -> dict:
    """The entry with its CUDA code, launch geometry and arrays, or the error."""
    import numpy as np

    from kernelcast.measure.arrays import array_specs, scalar_arguments, typed_kernel
    from kernelcast.measure.codegen import generate
    from kernelcast.tune.launches import launch_kernel

    try:
        knl, params = launch_kernel(entry)
        if entry["kind"] == "random":
            params = {}
        generated = generate(knl, "cuda")
        specs, scalars = array_specs(typed_kernel(knl), params)
        values = scalar_arguments(scalars, params, np.random.default_rng(0))
        grid, block = generated.launch_sizes(params)
        return {**entry, "label": label(entry), "function": generated.name,
                "code": generated.code, "grid": list(grid), "block": list(block),
                "arguments": [[a.name, a.dtype.str, a.is_array] for a in generated.arguments],
                "arrays": [[s.name, s.dtype.str, list(s.shape), list(s.strides), s.written]
                           for s in specs],
                "scalars": {k: (float(v) if isinstance(v, float | np.floating) else int(v))
                            for k, v in values.items()}}
    except Exception as err:  # noqa: BLE001 - recorded; the launch is left out
        return {**entry, "label": label(entry), "error": f"{type(err).__name__}: {err}"[:300]}


def plan(out: Path, jobs: int, held_out: Path | None = None) -> int:
    if held_out is None:
        entries = _suite_entries() + _random_entries() + _family_entries()
    else:
        entries = (_random_entries(range(RANDOM_PER_SET,
                                         RANDOM_PER_SET + HELD_OUT_RANDOM_PER_SET))
                   + _family_entries(load(held_out)))
    began = time.monotonic()
    with ProcessPoolExecutor(jobs) as pool:
        built = list(pool.map(_built, entries, chunksize=4))
    for index, entry in enumerate(built):
        entry["index"] = index
    failed = [e for e in built if "error" in e]
    for e in failed:
        print(f"not built: {e['label']}: {e['error']}")
    kinds = {}
    for e in built:
        kinds[e["kind"]] = kinds.get(e["kind"], 0) + ("error" not in e)
    out.write_bytes(lzma.compress(json.dumps(built).encode()))
    print(f"{len(built) - len(failed)} launches planned ({kinds}), {len(failed)} not built, "
          f"in {time.monotonic() - began:.0f} s -> {out}")
    return 0

# }}}


def load(path: Path):
    data = path.read_bytes()
    return json.loads(lzma.decompress(data) if data[:6] == b"\xfd7zXZ\x00" else data)


# {{{ run (under ncu)

def run(plan_path: Path, log_path: Path | None, first: int, count: int | None) -> int:
    import numpy as np

    from kernelcast.evaluation.criteria_counters import launch_each
    from kernelcast.measure.launch import ArraySpec, GeneratedKernel, KernelArgument

    def prepare(entry):
        arguments = [(n, np.dtype(d), a) for n, d, a in entry["arguments"]]
        generated = GeneratedKernel(
            entry["function"], "cuda", entry["code"],
            tuple(KernelArgument(*a) for a in arguments),
            tuple(entry["grid"]), tuple(entry["block"]))
        specs = [ArraySpec(n, np.dtype(d), tuple(s), tuple(st), w)
                 for n, d, s, st, w in entry["arrays"]]
        scalars = {n: d.type(entry["scalars"][n]) for n, d, a in arguments if not a}
        return generated, specs, scalars, {}

    entries = [e for e in load(plan_path) if "error" not in e]
    return launch_each(entries[first:None if count is None else first + count], prepare,
                       lambda entry: f"launch {entry['index']} ({entry['label']})",
                       "counters_gpu run:", log_path)

# }}}


# {{{ measure

def measure(plan_path: Path, out: Path, chunk: int, budget: float, first: int = 0,
            count: int | None = None) -> int:
    from kernelcast.evaluation.criteria_counters import device_info, profile_chunk, write_csvs

    start = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    info = device_info()
    print(json.dumps(info), flush=True)
    runnable = [e for e in load(plan_path) if "error" not in e]
    last = len(runnable) if count is None else min(first + count, len(runnable))
    metrics, dropped = list(METRICS), []
    records = [{k: v for k, v in e.items() if k not in ("code", "arguments", "arrays",
                                                        "scalars")} for e in runnable]
    document = {**info, "plan": plan_path.name, "metrics": metrics,
                "dropped_metrics": dropped, "units": {}, "notes": [], "launches": records}
    csvs = {}
    log_path = out / "launches.jsonl"
    log_path.write_text("")
    me = [sys.executable, __file__, "run", str(plan_path)]
    for part, begin in enumerate(range(first, last, chunk)):
        todo = records[begin:min(begin + chunk, last)]
        if budget - (time.monotonic() - start) < 20:
            print(f"chunk {part}: skipped, the budget of {budget:.0f} s is spent", flush=True)
            for r in todo:
                r["status"] = "skipped"
            continue
        began = time.monotonic()
        text, note, logged = profile_chunk(
            part, todo, metrics, dropped,
            me + ["--log", str(log_path), "--first", str(begin), "--count", str(len(todo))],
            log_path, max(budget - (time.monotonic() - start), 10), document)
        csvs[f"chunk-{part:02d}.csv"] = text
        profiled = sum("counters" in r for r in todo)
        print(f"chunk {part}: {len(todo)} launches, {len(logged)} launched, {profiled} "
              f"profiled in {time.monotonic() - began:.0f} s "
              f"({time.monotonic() - start:.0f} s in all)", flush=True)
        notes = [line for line in f"{text}\n{note}".splitlines()
                 if line.startswith(("==ERROR==", "==WARNING==", "counters_gpu run:",
                                     "ncu timed out"))]
        document["notes"] += notes
        for line in notes[:6]:
            print(f"  {line[:200]}", flush=True)
        (out / "counters.json.xz").write_bytes(
            lzma.compress(json.dumps(tidy(document), indent=0).encode()))
    write_csvs(out / "ncu.tar.xz", csvs)
    statuses = {}
    for r in records[first:last]:
        statuses[r.get("status", "?")] = statuses.get(r.get("status", "?"), 0) + 1
    print(f"done: {statuses} in {time.monotonic() - start:.0f} s", flush=True)
    return 0


_DEVICE_PREFIXES = ("device__attribute_", "numa__", "nvlink__", "c2clink__")


def tidy(document: dict) -> dict:
    """*document* with the device's attributes once (from its first profiled launch)
    rather than in every launch, and only the ``.sum`` of every rolled-up metric."""
    attributes = document.setdefault("device_attributes", {})
    for record in document["launches"]:
        counters = record.get("counters")
        if not counters:
            continue
        kept = {}
        for name, value in counters.items():
            if name.startswith(_DEVICE_PREFIXES):
                attributes.setdefault(name, value)
            elif not name.endswith((".avg", ".min", ".max")):
                kept[name] = value
        record["counters"] = kept
    return document


# }}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    p = sub.add_parser("plan", help="the launch list with code (no GPU)")
    p.add_argument("out", type=Path, help="the plan file to write (.json, xz-compressed)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="processes that generate code (default: every core)")
    p.add_argument("--held-out", type=Path, metavar="PLAN",
                   help="plan launches that PLAN does not have (random kernels after "
                   "its own, other variants of every family)")
    p = sub.add_parser("run", help="launch planned kernels once each (what ncu profiles)")
    p.add_argument("plan", type=Path, help="the plan file")
    p.add_argument("--log", type=Path, help="append one line per launch to this file")
    p.add_argument("--first", type=int, default=0, help="the first launch to run")
    p.add_argument("--count", type=int, help="how many launches to run (default: all)")
    p = sub.add_parser("measure", help="profile the plan with ncu (the GPU machine)")
    p.add_argument("plan", type=Path, help="the plan file")
    p.add_argument("out", type=Path, help="the folder to write counters and ncu's CSV to")
    p.add_argument("--chunk", type=int, default=40, help="launches per ncu run (default 40)")
    p.add_argument("--first", type=int, default=0, help="the first launch to profile")
    p.add_argument("--count", type=int, help="how many launches to profile (default: all)")
    p.add_argument("--budget", type=float, default=540,
                   help="seconds after which no further chunk starts (default 540)")
    args = parser.parse_args()
    if args.verb == "plan":
        return plan(args.out, args.jobs, args.held_out)
    if args.verb == "run":
        return run(args.plan, args.log, args.first, args.count)
    return measure(args.plan, args.out, args.chunk, args.budget, args.first, args.count)


if __name__ == "__main__":
    sys.exit(main())
