"""Hardware parameters: the Hong–Kim model's inputs and the caches the hardware facts
use, for the H100 and H200, as packaged (kernelcast.hardware's <gpu>.json, with each
value's source and what was guessed), and the registers per thread
(data/<gpu>/registers.json) and device properties (data/<gpu>/cuda-device.json) beside
them.

Public names: HW_ROWS, section_hardware.
"""

from __future__ import annotations

import json

from kernelcast.evaluation.results.common import GPU_LABEL, GPUS, Data, table

HW_ROWS = (  # parameter, label, formatter
    ("mem_ld", "Mem_LD (cycles)", lambda v: f"{v:g}"),
    ("mem_bandwidth", "Mem_Bandwidth", lambda v: f"{v / 1e12:.2f} TB/s"),
    ("departure_del_coal", "Departure_del_coal (cycles)", lambda v: f"{v:g}"),
    ("departure_del_uncoal", "Departure_del_uncoal (cycles)", lambda v: f"{v:g}"),
    ("issue_cycles", "Issue_cycles", lambda v: f"{v:g}"),
    ("active_sms", "Active SMs", lambda v: f"{v}"),
    ("freq_hz", "Freq", lambda v: f"{v / 1e9:.2f} GHz"),
    ("warp_size", "warp size", lambda v: f"{v}"),
    ("max_active_warps_per_sm", "warps per SM", lambda v: f"{v}"),
    ("max_active_blocks_per_sm", "blocks per SM", lambda v: f"{v}"),
    ("shared_mem_per_sm", "shared memory per SM", lambda v: f"{v // 1024} KiB"),
    ("registers_per_sm", "registers per SM", lambda v: f"{v}"),
    ("sector_bytes", "sector", lambda v: f"{v} B"),
    ("l2_cache_bytes", "L2 cache", lambda v: f"{v / 2**20:g} MiB"),
    ("l1_cache_bytes_per_sm", "L1 and shared memory per SM", lambda v: f"{v // 1024} KiB"),
)


def section_hardware(data: Data) -> list[str]:
    out = ["## Hardware parameters", "",
           "The Hong–Kim model's inputs and the caches the hardware facts use, for the H100 "
           "and H200, as packaged "
           "(`src/kernelcast/hardware/<gpu>.json`, written by "
           "`benchmarks/hong_kim_hardware.py` from kernelcast's own measurements and the "
           "device's reported limits); the source column is the files' own `sources` "
           "entry (`<gpu>` where the two files name their own GPU's data).", ""]
    try:
        from kernelcast.hardware import HARDWARE_DIR
    except ImportError as err:
        return out + [f"*Not generated: {err}.*"]
    docs = {}
    for gpu in GPUS:
        path = HARDWARE_DIR / f"{gpu}.json"
        if path.exists():
            docs[gpu] = json.loads(path.read_text())
    if not docs:
        return out + [f"*Not generated: no {HARDWARE_DIR}/h100.json or h200.json.*"]
    rows = []
    for key, label, fmt in HW_ROWS:
        values = [fmt(docs[g][key]) if g in docs and docs[g].get(key) is not None else "–"
                  for g in GPUS]
        sources = []
        for gpu in GPUS:
            source = (docs.get(gpu, {}).get("sources") or {}).get(key)
            if source:
                generic = source.replace(f"data/{gpu}/", "data/<gpu>/")
                if generic not in [s for _, s in sources]:
                    sources.append((gpu, generic))
        source = ("; ".join(f"{GPU_LABEL[g]}: {s}" for g, s in sources) if len(sources) > 1
                  else (sources[0][1] if sources else "–"))
        rows.append([label, *values, source])
    out += [table(["parameter", *(GPU_LABEL[g] for g in GPUS), "source"], rows,
                  ["l", "r", "r", "l"]), ""]
    guessed = {g: d.get("guessed") for g, d in docs.items() if d.get("guessed")}
    out.append("Guessed (neither measured nor reported): " + (
        "; ".join(f"{GPU_LABEL[g]}: {', '.join(v)}" for g, v in guessed.items())
        if guessed else "none") + ".")
    regs = []
    for gpu in GPUS:
        path = data / gpu / "registers.json"
        if path.exists():
            regs.append(f"`{data.rel(path)}` ({len(json.loads(path.read_text()))} kernels, "
                        f"{data.file_commit(path)})")
    out += ["", "Registers per thread of the suite kernels, as the CUDA compiler reports "
            "them, enter the occupancy: " + (", ".join(regs) if regs else
                                             "no registers file present") + ". Device "
            "properties: " + ", ".join(f"`data/{g}/cuda-device.json` ({data.file_commit(data / g / 'cuda-device.json')})"
                                       for g in GPUS if (data / g / "cuda-device.json").exists())
            + "."]
    return out
