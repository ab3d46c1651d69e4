"""Hong–Kim hardware descriptions of the H100 and H200 from kernelcast's own measurements.

Two steps:

``query OUTDIR`` (on the GPU machine, needs cupy): the device's limits as CUDA reports
them (SMs, clock, warps, blocks, shared memory and registers per SM) into
OUTDIR/cuda-device.json, and the registers and local memory each suite kernel compiles
to into OUTDIR/registers.json (for the occupancy calculation).

``derive GPU`` (anywhere, from data/GPU): writes src/kernelcast/hardware/GPU.json from
- Mem_LD: the ``chain global`` microbenchmark (pointer chasing through a 2^26-element
  array, kernelcast.suites.extension) with one or two work-groups: the time per step,
  from the slope between its 512- and 4096-step runs, times the clock;
- Mem_Bandwidth and Departure_del_coal: the bandwidth-saturating ``global_access copy``
  loads of the measurement suite at their largest size: bytes per second, and the cycles
  between one SM's coalesced 128-byte warp requests, #SMs × 128 B × Freq / bandwidth;
- Departure_del_uncoal: the ``transpose read_strided`` kernel at its largest size, whose
  every load is its own 32-byte transaction (its stores are coalesced, and their time is
  charged to the loads): #SMs × Freq / transactions per second;
- Issue_cycles: the ``arithmetic add`` kernel at its largest size: SM cycles per warp
  instruction, #SMs × Freq × time / (adds / warp size);
- the rest from cuda-device.json.

Run: .venv/bin/python benchmarks/hong_kim_hardware.py derive h100
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from kernelcast.measure.store import Store

HARDWARE = Path(__file__).resolve().parent.parent / "src" / "kernelcast" / "hardware"


def query(out: Path) -> None:
    import cupy

    from kernelcast.measure.codegen import generate
    from kernelcast.suites.paper import get_suite

    props = cupy.cuda.runtime.getDeviceProperties(0)
    keep = ("name", "multiProcessorCount", "clockRate", "warpSize",
            "maxThreadsPerMultiProcessor", "maxBlocksPerMultiProcessor",
            "sharedMemPerMultiprocessor", "sharedMemPerBlockOptin", "regsPerMultiprocessor",
            "maxThreadsPerBlock",
            "memoryClockRate", "memoryBusWidth", "l2CacheSize", "major", "minor")
    device = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in props.items()
              if k in keep}
    out.mkdir(parents=True, exist_ok=True)
    (out / "cuda-device.json").write_text(json.dumps(device, indent=2) + "\n")
    registers = {}
    for suite in ("measurement", "test", "validation", "extension"):
        for case in get_suite(suite).cases():
            if case.kernel_name in registers:
                continue
            kernel = generate(case.kernel(), "cuda")
            function = cupy.RawModule(code=kernel.code).get_function(kernel.name)
            registers[case.kernel_name] = {
                "registers": function.num_regs, "local_bytes": function.local_size_bytes,
                "shared_bytes": function.shared_size_bytes}
    (out / "registers.json").write_text(json.dumps(registers, indent=1, sort_keys=True) + "\n")
    print(f"{device['name']}: {len(registers)} kernels")


def _rows(store, kernel_class, variant):
    return [r for r in store.rows() if r["kernel_class"] == kernel_class
            and r["variant"] == variant and r["dtype"] == "float32"
            and r["status"] in ("ok", "unstable")]


def derive(gpu: str, data: Path) -> dict:
    device = json.loads((data / gpu / "cuda-device.json").read_text())
    sms = device["multiProcessorCount"]
    freq = device["clockRate"] * 1e3  # kHz
    with Store(data / gpu / "opencl.sqlite") as store:
        chain = _rows(store, "chain", "global")
        few = min(r["params"]["ng"] for r in chain)
        steps = {r["params"]["m"]: r["min_s"] for r in chain if r["params"]["ng"] == few}
        per_step = (steps[4096] - steps[512]) / (4096 - 512)
        copy = max(_rows(store, "global_access", "copy"), key=lambda r: r["params"]["n"])
        bandwidth = 2 * 4 * copy["params"]["n"] / copy["min_s"]  # read and write, float32
        strided = max(_rows(store, "transpose", "read_strided"),
                      key=lambda r: r["params"]["n"])
        transactions = strided["params"]["n"] ** 2 / strided["min_s"]  # the strided loads
        add = max(_rows(store, "arithmetic", "add"),
                  key=lambda r: r["params"]["n"] * r["params"]["k"])
    from kernelcast.fitting.dataset import case_from_row
    from kernelcast.properties import extract_properties

    adds = extract_properties(case_from_row(add).kernel()).evaluate(add["params"])["add_f32"]
    issue = sms * freq * add["min_s"] / (adds / device["warpSize"])
    measured = f"kernelcast microbenchmarks, data/{gpu}/opencl.sqlite"
    from kernelcast.models.criteria.characterization import characterize

    chase = characterize(json.loads((data / gpu / "criteria" / "microbenchmarks.json")
                                    .read_text())).latency_cycles
    hw = {
        "name": device["name"], "warp_size": device["warpSize"], "active_sms": sms,
        "freq_hz": freq, "issue_cycles": round(issue, 3),
        "mem_bandwidth": round(bandwidth, -6), "mem_ld": round(per_step * freq, 1),
        "departure_del_coal": round(sms * 128 * freq / bandwidth, 2),
        "departure_del_uncoal": round(sms * freq / transactions, 2),
        "max_active_warps_per_sm": device["maxThreadsPerMultiProcessor"] // device["warpSize"],
        "max_active_blocks_per_sm": device["maxBlocksPerMultiProcessor"],
        "shared_mem_per_sm": device["sharedMemPerMultiprocessor"],
        "registers_per_sm": device["regsPerMultiprocessor"],
        "max_threads_per_block": device["maxThreadsPerBlock"],
        "shared_mem_per_block": device["sharedMemPerBlockOptin"],
        "static_shared_mem_per_block": device["sharedMemPerBlock"],
        "sector_bytes": SECTOR_BYTES,
        "l2_cache_bytes": device["l2CacheSize"],
        "l1_cache_bytes_per_sm": L1_BYTES,
        "compute_capability": f"{device['major']}.{device['minor']}",
        "dram_peak_bandwidth": device["memoryClockRate"] * 1e3 * 2
        * device["memoryBusWidth"] / 8,
        "issue_per_sm_cycle": ISSUE_PER_SM_CYCLE,
        **{f"{level}_latency_cycles": round(chase[level], 1) for level in ("l1", "l2", "dram")},
        "sources": {
            "sector_bytes": SECTOR_SOURCE,
            "l1_cache_bytes_per_sm": L1_SOURCE,
            "dram_peak_bandwidth": f"data/{gpu}/cuda-device.json (CUDA device properties): "
                                   "memoryClockRate × 2 (double data rate) × "
                                   "memoryBusWidth / 8",
            "issue_per_sm_cycle": ISSUE_SOURCE,
            "mem_ld": f"{measured}: chain global, {few} work-groups, "
                      f"{per_step * 1e9:.1f} ns per dependent load",
            "mem_bandwidth": f"{measured}: global_access copy, n={copy['params']['n']}",
            "departure_del_coal": "#SMs × 128 B × Freq / Mem_Bandwidth",
            "departure_del_uncoal": f"{measured}: transpose read_strided, "
                                    f"n={strided['params']['n']}, one 32-byte transaction "
                                    "per load",
            "issue_cycles": f"{measured}: arithmetic add, {add['params']}",
            **{f"{level}_latency_cycles": f"kernelcast criteria microbenchmarks, data/{gpu}/"
               f"criteria/microbenchmarks.json: memory/load-latency/{level}, the median "
               "run's median block per dependent load" for level in ("l1", "l2", "dram")},
            **{k: f"data/{gpu}/cuda-device.json (CUDA device properties)" for k in (
                "warp_size", "active_sms", "freq_hz", "max_active_warps_per_sm",
                "max_active_blocks_per_sm", "shared_mem_per_sm", "registers_per_sm",
                "compute_capability", "max_threads_per_block", "shared_mem_per_block",
                "static_shared_mem_per_block", "l2_cache_bytes")}},
    }
    return hw


# not reported by the device: the unified L1 data cache and shared memory of an SM
L1_BYTES = 256 * 1024
L1_SOURCE = ("NVIDIA Hopper Tuning Guide, 1.4.3.2: the combined L1 cache, texture cache and "
             "shared memory of an H100 SM is 256 KB; L1 is what shared memory leaves")

# not measurable by timing: the architecture's documented global-memory sector
SECTOR_BYTES = 32
SECTOR_SOURCE = ("CUDA C++ Programming Guide, compute capability 9.0 global memory: "
                 "requests are served in 32-byte sectors")


# not reported by the device: warp instructions an SM issues per cycle at most
ISSUE_PER_SM_CYCLE = 4
ISSUE_SOURCE = ("CUDA C++ Programming Guide, throughput of native arithmetic instructions, "
                "compute capability 9.0: 128 32-bit floating-point results per clock per "
                "SM, 4 warp instructions (one per SM sub-partition's scheduler)")


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="step", required=True)
    q = sub.add_parser("query")
    q.add_argument("out", type=Path)
    d = sub.add_parser("derive")
    d.add_argument("gpu")
    d.add_argument("--data", type=Path, default=Path("data"))
    args = parser.parse_args()
    if args.step == "query":
        query(args.out)
        return
    hw = derive(args.gpu, args.data)
    path = HARDWARE / f"{args.gpu}.json"
    path.write_text(json.dumps(hw, indent=2) + "\n")
    json.dump({k: v for k, v in hw.items() if k != "sources"}, sys.stdout, indent=1)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    np.seterr(all="raise")
    main()
