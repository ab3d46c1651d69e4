"""The performance models behind one interface (kernelcast.models.base.Model) and their
registry: ``paper`` (Stevens & Klöckner's fitted linear model), ``extended`` (the paper's
properties plus data volume, bank conflicts and per-work-item terms that overlap the
totals), ``hong-kim`` (the analytical MWP/CWP model), ``grophecy`` (GROPHECY's
projection of code skeletons, whose workload is a skeleton, not a kernel) and ``learned``
(trees fitted to measured variants of a training corpus, for ranking a kernel's variants;
its workload is "variant": it predicts kernels, but is fitted from no suite) and
``poppl-herz`` (Pöppl & Herz's static model of OpenCL source; its workload is "opencl";
``poppl-herz-facts`` prices its global accesses by their predicted cache-level traffic)
and ``criteria`` (the fine-grained model: optimization criteria of a profiled application;
its workload is "profile", kernelcast.models.criteria.criteria.Application).
``facts`` (the extended model on the predicted hardware counters,
kernelcast.models.extended.facts; it predicts from the Loopy kernel, which it compiles)
``learned-facts`` (the learned model's trees on those counters,
kernelcast.models.learned.facts) and ``hong-kim-facts`` (the MWP/CWP model with its
workload from those counters, kernelcast.models.hong_kim.facts). ``get_model(name, **kwargs)`` makes one;
``model_names()`` lists the kernel models fitted from suites, ``model_names("skeleton")``
the skeleton ones, ``model_names("variant")`` the learned ones.

Public names: Model, WeightedModel, Parameter, model_names, workloads, get_model, model_class, register,
FactsModel, GrophecyModel, HongKimFactsModel, LearnedModel, LearnedFactsModel,
PopplHerzModel, CriteriaModel.
"""
# ruff: noqa: I001  (registration order, not alphabetical)

from kernelcast.models.base import (Model, Parameter, WeightedModel, get_model, model_class, model_names,
                                    register, workloads)
# registration order is the order of every side-by-side table
from kernelcast.models.paper import PaperModel
from kernelcast.models.extended import ExtendedModel, FactsModel
from kernelcast.models.hong_kim import HongKimModel
from kernelcast.models.hong_kim.facts import HongKimFactsModel
from kernelcast.models.grophecy.model import GrophecyModel
from kernelcast.models.learned import LearnedModel
from kernelcast.models.learned.facts import LearnedFactsModel
from kernelcast.models.poppl_herz import PopplHerzModel
from kernelcast.models.criteria.model import CriteriaModel

__all__ = ["CriteriaModel", "ExtendedModel", "FactsModel", "GrophecyModel", "HongKimFactsModel", "HongKimModel", "LearnedFactsModel", "LearnedModel", "Model", "PaperModel",
           "Parameter", "PopplHerzModel", "WeightedModel", "get_model", "model_class", "model_names", "register",
           "workloads"]
