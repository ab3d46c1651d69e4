"""The extended model's inputs from the hardware facts (kernelcast.facts): what a launch
makes the GPU do, predicted as the Nsight Compute counters it stands for.

``launch_summary(knl, params, hardware)`` condenses a launch's LaunchFacts into the counts
a time model weighs (``SUMMARY_UNITS``): DRAM bytes, L2 sectors, global L1 sectors,
shared-memory wavefronts, warp-level SASS instructions by pipe, and the waves of work-groups
the SMs run one after another (from the compiler's registers and shared memory).
``facts_features(summary, properties, params, hardware)`` turns it into the features of
the model on the facts (kernelcast.models.extended.FactsModel):

- *totals*, the work of the whole launch: ``dram_bytes_read`` and ``dram_bytes_written``
  as a launch timed back to back sees them (the counters are a cold launch's, as ncu
  measures; where the arrays a launch touches stay in L2, ``L2_HIT_FADE`` of it, a
  repeated launch reads and writes almost nothing of DRAM, and the share in between is
  linear), ``l2_sectors_read`` and ``l2_sectors_written``, ``l1_sectors`` (global loads and
  stores), ``shared_wavefronts``, and the instructions of each pipe (``inst_fp32``,
  ``inst_fp64``, ``inst_xu`` for special functions and conversions, ``inst_other``);
- *per work-item* chains (``item_*``), the extended model's (kernelcast.models.extended
  .features), paid once per wave;
- context without a weight: ``waves``, and ``floor_seconds``, the time the launch's
  DRAM bytes and instructions take at the device's peaks (no prediction is below it).

``COUNTERS`` names, per feature, the Nsight Compute metrics it stands on.

Public names: SUMMARY_UNITS, MEMORY_UNITS, FACTS_UNITS, COUNTERS, PIPES, RESOURCES,
launch_summary, facts_features, floor_seconds, peaks, sizes_of, resource_of,
warm_dram_share, SummaryCache.
"""

from __future__ import annotations

import json
import lzma
import math
import os
from pathlib import Path

from kernelcast.errors import KernelcastError

#: SASS base opcodes by the pipe that executes them (NVIDIA's "Hopper Tuning Guide" and
#: Nsight Compute's pipe metrics: fma, fp64, xu); any other instruction is ``other``
PIPES = {
    "fp32": ("FFMA", "FADD", "FMUL", "FFMA32I", "FADD32I", "FMUL32I", "FMNMX", "FSETP",
             "FSEL", "FSET", "HFMA2", "HADD2", "HMUL2"),
    "fp64": ("DFMA", "DADD", "DMUL", "DSETP", "DMNMX"),
    "xu": ("MUFU", "F2F", "F2I", "I2F", "FRND", "I2FP", "F2IP"),
}
_PIPE_OF = {op: pipe for pipe, ops in PIPES.items() for op in ops}

SUMMARY_UNITS = {
    "dram_bytes_read": "bytes read from DRAM, caches cold",
    "dram_bytes_written": "bytes written to DRAM, caches cold",
    "l2_sectors_read": "32-byte sectors read at L2",
    "l2_sectors_written": "32-byte sectors written at L2",
    "l1_sectors": "32-byte sectors of global loads and stores at L1",
    "shared_wavefronts": "shared-memory wavefronts of loads and stores",
    "inst_fp32": "warp instructions of the fp32 pipe",
    "inst_fp64": "warp instructions of the fp64 pipe",
    "inst_xu": "warp instructions of the special-function pipe (MUFU, conversions)",
    "inst_other": "other warp instructions (integer, control, memory)",
    "inst_executed": "warp instructions executed",
    "waves": "waves of work-groups the SMs run one after another",
}

#: the counts the Hong–Kim model on the facts reads besides (kernelcast.models.hong_kim
#: .facts); a cached summary without them is computed again where they are needed
#: (SummaryCache.summary's *needs*)
MEMORY_UNITS = {
    "global_requests": "warp requests of global loads and stores (warp instructions)",
    "uncoalesced_requests": "of those, requests of more sectors than their lanes' bytes "
                            "need",
    "uncoalesced_sectors": "32-byte sectors of the uncoalesced requests",
    "load_sectors": "32-byte sectors of global loads at L1",
    "l1_hit_sectors": "of those, sectors that hit L1",
    "barriers": "warp-level barrier instructions executed (BAR)",
    "registers": "registers per thread (ptxas)",
    "shared_bytes": "static shared memory per work-group (ptxas)",
}

#: the Nsight Compute metrics each feature stands on
COUNTERS = {
    "dram_bytes_read": "dram__bytes_read.sum",
    "dram_bytes_written": "dram__bytes_write.sum",
    "l2_sectors_read": "lts__t_sectors_op_read.sum",
    "l2_sectors_written": "lts__t_sectors_op_write.sum",
    "l1_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum + "
                  "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "shared_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum + "
                         "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "inst_fp32": "smsp__inst_executed.sum of " + ", ".join(PIPES["fp32"][:3]) + ", ...",
    "inst_fp64": "smsp__inst_executed.sum of " + ", ".join(PIPES["fp64"][:3]) + ", ...",
    "inst_xu": "smsp__inst_executed.sum of MUFU and conversions",
    "inst_other": "smsp__inst_executed.sum of the other instructions",
    "waves": "launch__waves_per_multiprocessor, rounded up",
    "workgroups": "launch__grid_size",
    "floor_seconds": "dram__bytes.sum / peak bandwidth, smsp__inst_executed.sum / "
                     "peak issue rate",
}

_TOTALS = ("dram_bytes_read", "dram_bytes_written", "l2_sectors_read", "l2_sectors_written",
           "l1_sectors", "shared_wavefronts", "inst_fp32", "inst_fp64", "inst_xu",
           "inst_other")

FACTS_UNITS = {
    **{k: SUMMARY_UNITS[k] for k in _TOTALS},
    "dram_bytes_read": "bytes read from DRAM by a launch timed back to back",
    "dram_bytes_written": "bytes written to DRAM by a launch timed back to back",
    "launch": "launch",
    "workgroups": "work-groups launched",
    "floor": "seconds by which the floor at the measured peaks exceeds the model",
}


def launch_summary(knl, params: dict, hardware) -> dict[str, float]:
    """The counts of one launch of *knl* at *params* on *hardware* that the model on the
    facts weighs (``SUMMARY_UNITS``), from kernelcast.facts.predict_counters; a launch
    whose facts lack a part (no NVIDIA compiler) is a KernelcastError saying why."""
    from kernelcast.facts.counters import predict_counters

    facts = predict_counters(knl, params, hardware)
    if facts.compiler is None or facts.caches is None or facts.occupancy is None:
        why = next(iter(facts.missing.values()), "a part of the facts is missing")
        raise KernelcastError(f"no hardware facts for {facts.kernel}: {why}")
    c = facts.counters
    pipes = dict.fromkeys(("inst_fp32", "inst_fp64", "inst_xu", "inst_other"), 0.0)
    for kind, count in facts.instruction_kinds.items():
        pipes[f"inst_{_PIPE_OF.get(kind.split('.')[0], 'other')}"] += count
    per_wave = facts.occupancy.groups_per_sm * _sms(hardware)
    uncoalesced = [t for t in facts.sites if t.site.space == "global" and t.requests
                   and t.site.repeats is None and t.sectors_per_request > _fewest_sectors(
                       t, hardware)]
    return {
        "dram_bytes_read": float(c["dram__bytes_read.sum"]),
        "dram_bytes_written": float(c["dram__bytes_write.sum"]),
        "l2_sectors_read": float(c["lts__t_sectors_op_read.sum"]),
        "l2_sectors_written": float(c["lts__t_sectors_op_write.sum"]),
        "l1_sectors": float(c["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]
                            + c["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"]),
        "shared_wavefronts": float(
            c["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"]
            + c["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"]),
        **pipes,
        "inst_executed": float(c["smsp__inst_executed.sum"]),
        "waves": float(math.ceil(c["launch__grid_size"] / max(per_wave, 1))),
        "global_requests": float(c["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"]
                                 + c["l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"]),
        "uncoalesced_requests": float(sum(t.requests for t in uncoalesced)),
        "uncoalesced_sectors": float(sum(t.sectors for t in uncoalesced)),
        "load_sectors": float(c["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]),
        "l1_hit_sectors": float(
            c.get("l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum", 0.0)),
        "barriers": float(sum(v for k, v in facts.instruction_kinds.items()
                              if k.split(".")[0] == "BAR")),
        "registers": float(facts.compiler.registers),
        "shared_bytes": float(facts.compiler.shared_bytes),
    }


def _fewest_sectors(traffic, hardware) -> int:
    """The sectors a request of the site needs at least: its active lanes' bytes, one
    more where they straddle a sector boundary."""
    from kernelcast.facts.counters import hardware_named

    sector = hardware_named(hardware).sector_bytes
    lanes = traffic.accesses / traffic.requests
    return math.ceil(lanes * traffic.access_bytes / sector) + 1


def _sms(hardware) -> int:
    from kernelcast.facts.counters import hardware_named

    return hardware_named(hardware).active_sms


def warm_dram_share(footprint_bytes: float, l2_bytes: float) -> float:
    """The share of a cold launch's DRAM traffic that a launch repeated back to back still
    moves: none while its arrays stay in L2 (below the first of L2_HIT_FADE of L2),
    all beyond the second, linear in between."""
    from kernelcast.facts.caches import L2_HIT_FADE

    low, high = L2_HIT_FADE
    return min(1.0, max(0.0, (footprint_bytes / l2_bytes - low) / (high - low)))


def facts_features(summary: dict, props, params: dict, hardware) -> dict[str, float]:
    """The features of the model on the facts for one launch: its *summary*
    (``launch_summary``), its Properties *props* at *params* for the per-work-item chains
    and the bytes its arrays span, and *hardware* (a kernelcast.hardware.Hardware) for the
    L2 size and the peaks of the floor."""
    from kernelcast.models.extended.features import features as extended

    ext = extended(props, sizes_of(props, params))
    footprint = ext.get("bytes_read", 0.0) + ext.get("bytes_written", 0.0)
    share = warm_dram_share(footprint, hardware.l2_cache_bytes)
    out = {name: summary[name] for name in _TOTALS if summary[name]}
    for name in ("dram_bytes_read", "dram_bytes_written"):
        out[name] = summary[name] * share
        if not out[name]:
            del out[name]
    out.update({k: v for k, v in ext.items() if k.startswith("item_") and v})
    out["workgroups"] = ext.get("workgroup", 0.0)
    out["launch"] = 1.0
    out["waves"] = summary["waves"]
    out["floor_seconds"] = floor_seconds(summary, share, hardware)
    return out


def sizes_of(props, params: dict) -> dict:
    """The entries of a launch's *params* that *props* counts in: a run's scalar
    arguments that change no count (a realized layout's ``one`` and ``zero``) are the
    compiled code's business, not the properties'."""
    return {k: v for k, v in params.items() if k in props.params}


def peaks(hardware) -> dict[str, float]:
    """The device's peak DRAM bytes and warp instructions per second (kernelcast.hardware:
    ``dram_peak_bandwidth`` from the device's memory clock and bus width,
    ``issue_per_sm_cycle`` at its SM clock); a description without them is a
    KernelcastError."""
    lacking = [n for n in ("dram_peak_bandwidth", "issue_per_sm_cycle")
               if getattr(hardware, n) is None]
    if lacking:
        raise KernelcastError(f"the hardware description of {hardware.name} lacks "
                              f"{', '.join(lacking)}, the peaks of the facts model's floor")
    return {"dram": hardware.dram_peak_bandwidth,
            "issue": hardware.issue_per_sm_cycle * hardware.active_sms * hardware.freq_hz}


def floor_seconds(summary: dict, share: float, hardware) -> float:
    """The least time of the launch's own traffic and instructions at the device's peaks
    (``peaks``): its DRAM bytes and its warp instructions."""
    peak = peaks(hardware)
    dram = (summary["dram_bytes_read"] + summary["dram_bytes_written"]) * share
    return max(dram / peak["dram"], summary["inst_executed"] / peak["issue"])


#: the resource each weighted feature takes time on; the resources overlap
#: (kernelcast.fitting.overlap.fit_grouped_overlap)
RESOURCES = {
    "dram_bytes_read": "dram", "dram_bytes_written": "dram",
    "l2_sectors_read": "l2", "l2_sectors_written": "l2",
    "l1_sectors": "l1", "shared_wavefronts": "l1",
    "inst_fp32": "issue", "inst_fp64": "issue", "inst_xu": "issue", "inst_other": "issue",
    "workgroups": "groups",
}


def resource_of(name: str) -> str:
    """The resource a feature's time is spent on: ``constant`` (the launch), ``chain``
    (a work-item's dependent operations, once per wave) or one of ``RESOURCES``."""
    if name == "launch":
        return "constant"
    if name.startswith("item_"):
        return "chain"
    return RESOURCES[name]


class SummaryCache:
    """Launch summaries by (kernel name, sizes, hardware name), kept in memory and, with
    *path*, in an xz-compressed JSON file (written by ``save``): computing a summary
    compiles the kernel and models its caches, a fraction of a second each."""

    def __init__(self, path: str | os.PathLike | None = None):
        self.path = None if path is None else Path(path)
        self.entries: dict[str, dict] = {}
        if self.path is not None and self.path.is_file():
            with lzma.open(self.path, "rt") as f:
                self.entries = json.load(f)

    @staticmethod
    def key(kernel_name: str, params: dict, hardware_name: str) -> str:
        return json.dumps([kernel_name, sorted(params.items()), hardware_name])

    def summary(self, kernel_name: str, make_kernel, params: dict, hardware,
                needs=()) -> dict:
        """The summary of the launch, computed (from ``make_kernel()``) if not known or
        if it lacks a key of *needs*."""
        key = self.key(kernel_name, params, hardware.name)
        known = self.entries.get(key)
        if known is None or isinstance(known, dict) and not all(n in known for n in needs):
            self.entries[key] = launch_summary(make_kernel(), params, hardware)
        return self.entries[key]

    def save(self) -> None:
        if self.path is None:
            return
        temp = self.path.with_suffix(".tmp")
        with lzma.open(temp, "wt") as f:
            json.dump(self.entries, f, sort_keys=True)
        os.replace(temp, self.path)
