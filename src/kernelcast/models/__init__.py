"""The performance models behind one interface (kernelcast.models.base.Model) and their
registry: ``paper`` (Stevens & Klöckner's fitted linear model), ``extended`` (the paper's
properties plus data volume, bank conflicts and per-work-item terms that overlap the
totals) and ``hong-kim`` (the analytical MWP/CWP model). ``get_model(name, **kwargs)``
makes one; ``model_names()`` lists them.

Public names: Model, WeightedModel, model_names, get_model, model_class, register.
"""

from kernelcast.models.base import Model, WeightedModel, get_model, model_class, model_names, register
# registration order is the order of every side-by-side table
from kernelcast.models.paper import PaperModel  # noqa: I001
from kernelcast.models.extended import ExtendedModel
from kernelcast.models.hong_kim import HongKimModel

__all__ = ["ExtendedModel", "HongKimModel", "Model", "PaperModel",
           "WeightedModel", "get_model", "model_class", "model_names", "register"]
