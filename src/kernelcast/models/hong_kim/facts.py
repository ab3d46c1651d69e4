"""The Hong–Kim workload from the hardware facts (kernelcast.facts) instead of the
kernel's properties: what the compiled code does, counted as Nsight Compute counts it.

- memory instructions: warp requests of global loads and stores (the SASS's, with the
  loads the compiler issues once counted once). *Uncoalesced* those of the access sites
  whose requests take more sectors than their active lanes' bytes need (one more for a
  sector boundary), with ``uncoal_per_mw`` their mean sectors per request; the others
  coalesced.
- computation instructions: every other warp instruction the SASS executes (address,
  loop and branch instructions included, which the paper's counts leave out).
- synchronization instructions: the barriers executed.
- registers per thread and shared memory per block: ptxas's.
- ``load_bytes_per_warp``: the DRAM bytes per memory instruction of a launch timed back
  to back (kernelcast.models.extended.facts.warm_dram_share), so that bandwidth limits
  MWP only for traffic that reaches DRAM.

Beyond both papers, which know no caches: the memory latency ``Mem_LD`` of a launch is
the DRAM latency of the hardware description, scaled by the mix of where its load sectors
are served: L1 hits at the measured L1 latency over the DRAM latency, L2 hits at L2's,
the rest at DRAM's (``l1/l2/dram_latency_cycles``, pointer chasing by the criteria
microbenchmarks).

Public names: HongKimFactsModel, workload_from_summary, memory_latency, NEEDS.
"""

from __future__ import annotations

import math
from dataclasses import replace

from kernelcast.errors import KernelcastError
from kernelcast.hardware import Hardware
from kernelcast.models.base import Parameter, register
from kernelcast.models.extended.facts import MEMORY_UNITS
from kernelcast.models.hong_kim import HongKimModel
from kernelcast.models.hong_kim.equations import Workload, estimate

#: the summary keys read here besides kernelcast.models.extended.facts.SUMMARY_UNITS
NEEDS = tuple(MEMORY_UNITS)


def memory_latency(summary: dict, dram_share: float, hw: Hardware) -> float:
    """Mem_LD of the launch in cycles: ``hw.mem_ld`` (the DRAM latency) scaled by where
    its load sectors are served: the share that hits L1, of the rest the share of its L2
    read traffic that DRAM serves in a launch timed back to back (*dram_share* of the
    cold DRAM reads), the remainder from L2."""
    levels = (hw.l1_latency_cycles, hw.l2_latency_cycles, hw.dram_latency_cycles)
    if None in levels:
        raise KernelcastError(f"the hardware description of {hw.name} lacks the L1, L2 "
                              "and DRAM load latencies (l1/l2/dram_latency_cycles) the "
                              "Hong–Kim model on the facts needs")
    l1, l2, dram = levels
    loads = summary["load_sectors"]
    if not loads:
        return hw.mem_ld
    l1_share = min(max(summary["l1_hit_sectors"] / loads, 0.0), 1.0)
    misses = loads * (1.0 - l1_share)
    from_dram = summary["dram_bytes_read"] * dram_share / 32.0
    dram_of_misses = min(from_dram / misses, 1.0) if misses else 0.0
    scale = (l1_share * l1 + (1 - l1_share) * ((1 - dram_of_misses) * l2
                                              + dram_of_misses * dram)) / dram
    return hw.mem_ld * scale


def workload_from_summary(summary: dict, threads: int, blocks: int, dram_share: float,
                          hw: Hardware) -> tuple[Workload, Hardware]:
    """The Workload of a launch summary (kernelcast.models.extended.facts.launch_summary)
    of *blocks* work-groups of *threads*, and *hw* with the launch's own memory latency
    (``memory_latency``)."""
    missing = [n for n in NEEDS if n not in summary]
    if missing:
        raise KernelcastError(f"the launch summary lacks {', '.join(missing)}; compute "
                              "it again (benchmarks/facts_model.py summaries)")
    warps = blocks * math.ceil(threads / hw.warp_size)
    requests = summary["global_requests"]
    uncoal = min(summary["uncoalesced_requests"], requests)
    barriers = summary["barriers"]
    comp = max(summary["inst_executed"] - requests - barriers, 0.0)
    dram_bytes = (summary["dram_bytes_read"] + summary["dram_bytes_written"]) * dram_share
    wl = Workload(
        threads_per_block=threads, blocks=blocks,
        comp_insts=comp / warps, coal_mem_insts=(requests - uncoal) / warps,
        uncoal_mem_insts=uncoal / warps,
        uncoal_per_mw=max(summary["uncoalesced_sectors"] / uncoal, 1.0) if uncoal else 1.0,
        synch_insts=barriers / warps,
        load_bytes_per_warp=max(dram_bytes / requests, 1.0) if requests else 1.0,
        shared_mem_per_block=int(summary["shared_bytes"]),
        registers_per_thread=int(summary["registers"]) or None)
    return wl, replace(hw, mem_ld=memory_latency(summary, dram_share, hw))


@register
class HongKimFactsModel(HongKimModel):
    """The Hong–Kim model with its workload from the hardware facts (this module's
    docstring): the paper's equations and hardware parameters, the compiled code's
    counts. It predicts from a Loopy kernel (it compiles it) on an NVIDIA GPU with a
    packaged hardware description; ``hong-kim`` is the paper's version."""

    name = "hong-kim-facts"
    needs_kernel = True
    summary = ("Hong & Kim's MWP/CWP model on the hardware facts: warp requests and "
               "sectors, SASS instructions, registers, and latency by cache level")

    parameters = (Parameter("hardware", "hardware", "the GPU: h100, h200 or a hardware "
                            "JSON file (default: the measured device's)"),)

    def __init__(self, *, hardware: str | None = None):
        super().__init__(hardware=hardware)

    def get_params(self) -> dict:
        return {"hardware": self.hardware}

    def _launch(self, name: str, make_kernel, props, params: dict) -> tuple:
        from kernelcast.models import extended
        from kernelcast.models.extended.facts import sizes_of, warm_dram_share
        from kernelcast.models.extended.features import features

        hw = self.hardware_
        summary = extended.SUMMARIES.summary(name, make_kernel, params, hw, needs=NEEDS)
        if isinstance(summary, str):
            raise KernelcastError(f"no hardware facts for {name}: {summary}")
        sizes = sizes_of(props, params)
        ext = features(props, sizes)
        share = warm_dram_share(ext.get("bytes_read", 0.0) + ext.get("bytes_written", 0.0),
                                hw.l2_cache_bytes)
        items = props.extent(sizes)["work_items"]
        blocks = max(round(ext.get("workgroup", 1.0)), 1)
        return workload_from_summary(summary, max(round(items / blocks), 1), blocks, share,
                                     hw)

    def _estimate_of(self, knl, params: dict, registers: int | None = None):
        from kernelcast.models.extended import launch_name, loopy_kernel
        from kernelcast.properties import cached_properties

        self.check_fitted()
        knl = loopy_kernel(knl, self.name)
        wl, hw = self._launch(launch_name(knl), lambda: knl, cached_properties(knl),
                              params)
        return estimate(hw, wl)

    @staticmethod
    def _details(est) -> dict:
        return {**HongKimModel._details(est), "mem_l": est.mem_l}

    def predict_dataset(self, dataset):
        import numpy as np

        self.check_fitted()
        out = []
        for i, case in enumerate(dataset.cases):
            wl, hw = self._launch(f"{case.suite}:{case.name}", case.kernel,
                                  dataset.properties(i), dataset.params(i))
            out.append(estimate(hw, wl).seconds)
        return np.array(out)
