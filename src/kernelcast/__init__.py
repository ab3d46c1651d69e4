"""kernelcast: predict how long a GPU compute kernel runs before running it.

Public names: extract_properties, Properties, AccessInfo, PROPERTY_NAMES, UNITS;
the models (Model, get_model, model_names, PaperModel, ExtendedModel, HongKimModel),
load_dataset, load_profile, save_profile, predict, explain; and the errors and warnings
of kernelcast.errors. GPU libraries are imported only when a backend is made.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

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
from kernelcast.version import __version__

if TYPE_CHECKING:
    from kernelcast.models import Model

# The rest loads on first use (PEP 562): importing any kernelcast module imports this
# package first, and a measuring worker process must not pay for Loopy.
_LAZY = {
    "load_dataset": "kernelcast.fitting.dataset",
    "ExtendedModel": "kernelcast.models", "HongKimModel": "kernelcast.models",
    "Model": "kernelcast.models", "PaperModel": "kernelcast.models",
    "get_model": "kernelcast.models", "model_names": "kernelcast.models",
    "load_profile": "kernelcast.profile", "save_profile": "kernelcast.profile",
    "PROPERTY_NAMES": "kernelcast.properties", "UNITS": "kernelcast.properties",
    "AccessInfo": "kernelcast.properties", "Properties": "kernelcast.properties",
    "extract_properties": "kernelcast.properties",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'kernelcast' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_LAZY])


def _as_model(model) -> Model:
    """*model* itself, or the model of the profile at the path *model* names."""
    from kernelcast.models import Model
    from kernelcast.profile import load_profile

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
