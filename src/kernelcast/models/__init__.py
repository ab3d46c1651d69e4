"""The performance models behind one interface (kernelcast.models.base.Model) and their
registry: ``paper`` (Stevens & Klöckner's fitted linear model), ``extended`` (the paper's
properties plus data volume, bank conflicts and per-work-item terms that overlap the
totals) and ``hong-kim`` (the analytical MWP/CWP model). ``get_model(name, **kwargs)``
makes one; ``MODEL_NAMES`` lists them.

Public names: Model, WeightedModel, MODEL_NAMES, get_model, model_class, register.
"""

from kernelcast.models.base import MODEL_NAMES, Model, WeightedModel, get_model, model_class, register
from kernelcast.models.extended import ExtendedModel
from kernelcast.models.hong_kim import HongKimModel
from kernelcast.models.paper import PaperModel

__all__ = ["MODEL_NAMES", "ExtendedModel", "HongKimModel", "Model", "PaperModel",
           "WeightedModel", "get_model", "model_class", "register"]
