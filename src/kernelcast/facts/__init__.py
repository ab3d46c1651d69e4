"""What the hardware does with one launch of a kernel, predicted without running it and
named as the Nsight Compute counters it predicts: warp-level memory requests, sectors and
shared-memory wavefronts (lanes, warps), L1, L2 and DRAM traffic (caches), registers,
occupancy and the SASS instructions executed (compiler, occupancy), put together by
``predict_counters`` (counters).

Public names: predict_counters, LaunchFacts, compare, PRINCIPAL.
"""

from kernelcast.facts.counters import PRINCIPAL, LaunchFacts, compare, predict_counters

__all__ = ["PRINCIPAL", "LaunchFacts", "compare", "predict_counters"]
