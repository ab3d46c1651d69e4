"""Profiler output as kernelcast reads it: Nsight Compute's raw CSV (ncu)."""

from kernelcast.frontends.profiler.ncu import Launch, read_ncu_csv

__all__ = ["Launch", "read_ncu_csv"]
