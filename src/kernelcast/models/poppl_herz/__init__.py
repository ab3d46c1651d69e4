"""Pöppl & Herz's static performance model of OpenCL source (shared/seeds 002): its
curves (curves), the model (model) and its variant with global accesses priced by the
hardware facts' cache traffic (facts). It is fitted from the microbenchmarks of the suite
kernelcast.suites.poppl_herz.

Public names: PopplHerzModel, PopplHerzFactsModel, OpenCLWorkload, workload_of.
"""

from kernelcast.models.poppl_herz.facts import PopplHerzFactsModel
from kernelcast.models.poppl_herz.model import (
    OpenCLWorkload,
    PopplHerzModel,
    workload_of,
)

__all__ = ["OpenCLWorkload", "PopplHerzFactsModel", "PopplHerzModel", "workload_of"]
