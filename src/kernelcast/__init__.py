"""kernelcast: predict how long a GPU compute kernel runs before running it.

Public names: extract_properties, Properties, AccessInfo, PROPERTY_NAMES, UNITS;
the models (Model, get_model, model_names, PaperModel, ExtendedModel, HongKimModel),
load_dataset, load_profile, save_profile, predict, explain; and the errors and warnings
of kernelcast.errors. GPU libraries are imported only when a backend is made.
"""

import os

from kernelcast.errors import (
    AssumedValueWarning,
    DataDependentError,
    DtypeNotFixedError,
    KernelcastError,
    KernelcastWarning,
    MissingDependencyError,
    NotALoopyKernelError,
    NotFittedError,
    ParameterError,
    SequentialKernelWarning,
    UncountedWarning,
    UnsupportedKernelError,
    UsageError,
)
from kernelcast.fitting.dataset import load_dataset
from kernelcast.models import (
    ExtendedModel,
    HongKimModel,
    Model,
    PaperModel,
    get_model,
    model_names,
)
from kernelcast.profile import load_profile, save_profile
from kernelcast.properties import PROPERTY_NAMES, UNITS, AccessInfo, Properties, extract_properties
from kernelcast.version import __version__


def _as_model(model) -> Model:
    """*model* itself, or the model of the profile at the path *model* names."""
    if isinstance(model, Model):
        return model
    if isinstance(model, str | os.PathLike):
        return load_profile(model)
    raise UsageError(f"model must be a kernelcast Model (fitted, or from load_profile) or "
                     f"the path of a profile, got {type(model).__module__}."
                     f"{type(model).__qualname__}")


def predict(workload, params: dict, model: Model | str | os.PathLike) -> float:
    """Predicted seconds of *workload* (a Loopy kernel or its Properties) at *params* by
    *model*: fitted, loaded with ``load_profile``, or the path of a profile."""
    return _as_model(model).predict(workload, params)


def explain(workload, params: dict, model: Model | str | os.PathLike) -> dict[str, float]:
    """Seconds by part of ``predict``, largest first; they sum to the prediction."""
    return _as_model(model).explain(workload, params)


__all__ = [
    "PROPERTY_NAMES",
    "UNITS",
    "AccessInfo",
    "AssumedValueWarning",
    "DataDependentError",
    "DtypeNotFixedError",
    "ExtendedModel",
    "HongKimModel",
    "KernelcastError",
    "KernelcastWarning",
    "MissingDependencyError",
    "Model",
    "NotALoopyKernelError",
    "NotFittedError",
    "PaperModel",
    "ParameterError",
    "Properties",
    "SequentialKernelWarning",
    "UncountedWarning",
    "UnsupportedKernelError",
    "UsageError",
    "__version__",
    "explain",
    "extract_properties",
    "get_model",
    "load_dataset",
    "load_profile",
    "model_names",
    "predict",
    "save_profile",
]
