"""kernelcast: predict how long a GPU compute kernel runs before running it.

Public names: extract_properties, Properties, AccessInfo, PROPERTY_NAMES, UNITS;
the models (Model, get_model, model_names, PaperModel, ExtendedModel, HongKimModel),
load_dataset, load_profile, save_profile, predict, explain; and the errors and warnings
of kernelcast.errors. GPU libraries are imported only when a backend is made.
"""

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
    UncountedWarning,
    UnsupportedKernelError,
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


def predict(workload, params: dict, model: Model) -> float:
    """Predicted seconds of *workload* (a Loopy kernel or its Properties) at *params* by
    *model* (fitted, or loaded with ``load_profile``)."""
    return model.predict(workload, params)


def explain(workload, params: dict, model: Model) -> dict[str, float]:
    """Seconds by part of ``predict``, largest first; they sum to the prediction."""
    return model.explain(workload, params)


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
    "UncountedWarning",
    "UnsupportedKernelError",
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
