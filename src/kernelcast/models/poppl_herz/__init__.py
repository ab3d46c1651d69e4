"""Pöppl & Herz's static performance model of OpenCL source (shared/seeds 002): the
microbenchmarks it is fitted from (benchmarks), its curves (curves) and the model
(model).

Public names: PopplHerzModel, OpenCLWorkload, workload_of.
"""

from kernelcast.models.poppl_herz.model import OpenCLWorkload, PopplHerzModel, workload_of

__all__ = ["OpenCLWorkload", "PopplHerzModel", "workload_of"]
