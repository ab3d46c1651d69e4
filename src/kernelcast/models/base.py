"""The interface every performance model implements, and the registry of models.

In the manner of a scikit-learn estimator: a model is constructed from keyword arguments
only (``get_params`` returns them); ``fit(dataset)`` (a kernelcast.fitting.dataset.Dataset)
returns the model and sets the attributes that end in ``_``, among them ``provenance_``
(the device, driver, backend, suite and store it was fitted on) and ``fit_report_``
(diagnostics and every solver's outcome); an unfitted model refuses to predict;
``predict(workload, params)`` returns seconds for a workload (a Loopy kernel or its
extracted Properties) at the given sizes; ``explain`` returns named parts, in seconds,
that sum to the prediction; ``fitted_state()`` and ``restore(state)`` are what a profile
keeps (kernelcast.profile writes and reads them as versioned JSON).

A model declares its keyword arguments once, in ``parameters`` (Parameter: name, kind,
help), as kernel_tuner's strategies declare their options: the command line's flags
(kernelcast.cli.model_flags), a profile's validation (kernelcast.profile) and the table
of ``kernelcast models`` come from them, and ``fit`` checks the values before it fits.

``WeightedModel`` is the common ground of the fitted models whose prediction is built
from weights times counts (paper, extended).

Public names: Model, WeightedModel, Parameter, register, model_class, model_names,
get_model, workloads, as_properties.
"""

from __future__ import annotations

import functools
import inspect
import math
import os
import warnings
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from kernelcast.errors import KernelcastError, NotFittedError, UncountedWarning
from kernelcast.frontends.files import json_kind

if TYPE_CHECKING:
    import pandas

_REGISTRY: dict[str, type[Model]] = {}


def register(cls: type[Model]) -> type[Model]:
    """Class decorator: make *cls* available under ``cls.name``."""
    _REGISTRY[cls.name] = cls
    return cls


def model_names(workload: str = "kernel") -> tuple[str, ...]:
    """The registered names, in registration order, of the models that predict
    *workload* (``workloads()``): "kernel" (Loopy kernels and their properties, the models
    fitted and evaluated on measurements), "skeleton" (GROPHECY's code skeletons),
    "variant" (a kernel's variants, for tuning), "opencl" (OpenCL source) or "profile"
    (an Nsight Compute profile of an application)."""
    return tuple(n for n, cls in _REGISTRY.items() if cls.workload == workload)


def workloads() -> tuple[str, ...]:
    """What the registered models predict, in registration order."""
    return tuple(dict.fromkeys(cls.workload for cls in _REGISTRY.values()))


def model_class(name: str) -> type[Model]:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KernelcastError(f"unknown model {name!r}; known: "
                              f"{', '.join(_REGISTRY)}") from None


def get_model(name: str, **params) -> Model:
    """A new, unfitted model *name* made with *params*."""
    return model_class(name)(**params)


def as_properties(workload):
    """The Properties of *workload* (a Loopy kernel, or Properties already)."""
    from kernelcast.properties import Properties, extract_properties

    return workload if isinstance(workload, Properties) else extract_properties(workload)


# {{{ declared parameters

def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) \
        and math.isfinite(value)


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


#: what a parameter's values may be: kind -> (test, what it should be)
KINDS = {
    "boolean": (lambda v: isinstance(v, bool), "true or false"),
    "number": (_is_number, "a finite number"),
    "count": (_is_count, "a positive integer"),
    "optional count": (lambda v: v is None or _is_count(v), "a positive integer or null"),
    "sizes": (lambda v: isinstance(v, list | tuple) and bool(v) and all(map(_is_count, v)),
              "a non-empty list of positive integers"),
    "file": (lambda v: v is None or isinstance(v, str | os.PathLike), "a file name or null"),
    "hardware": (lambda v: v is None or isinstance(v, str | os.PathLike),
                 "a packaged GPU name, a JSON file or null"),
}


#: how the command line's help names a value of a kind (a parameter may name its own)
VALUE_NAMES = {"count": "N", "optional count": "N", "sizes": "N", "file": "FILE",
               "hardware": "NAME|FILE"}


@dataclass(frozen=True)
class Parameter:
    """A keyword argument of a model. *kind* is a key of KINDS; a "number" lies in
    [*low*, *high*] (above *low* where *open_low*). *file* kinds ("file", "hardware")
    name files that a profile keeps relative to its own folder. *at_predict*: also given
    when predicting with a fitted profile, overriding the profile's value."""

    name: str
    kind: str
    help: str
    metavar: str = ""  # the command line's name for its value (default: by its kind)
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    at_predict: bool = False

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown parameter kind {self.kind!r}")

    @property
    def value_name(self) -> str:
        """How the command line's help names its value: *metavar*, else its kind's."""
        return self.metavar or VALUE_NAMES.get(self.kind, "VALUE")

    @property
    def flag(self) -> str:
        """The command line's flag for it."""
        return "--" + self.name.replace("_", "-")

    @property
    def names_file(self) -> bool:
        return self.kind in ("file", "hardware")

    def describe(self) -> str:
        """What values it takes, in words."""
        if self.kind != "number" or (self.low is None and self.high is None):
            return KINDS[self.kind][1]
        bounds = []
        if self.low is not None:
            bounds.append(f"{'above' if self.open_low else 'at least'} {self.low:g}")
        if self.high is not None:
            bounds.append(f"at most {self.high:g}")
        return "a number " + " and ".join(bounds)

    def problem(self, value) -> str | None:
        """Why *value* is not one of its values; None when it is."""
        test, _ = KINDS[self.kind]
        if not test(value):
            return f"{value!r} is not {self.describe()}"
        if self.kind == "number":
            if self.low is not None and (value <= self.low if self.open_low
                                         else value < self.low):
                return f"{value!r} is not {self.describe()}"
            if self.high is not None and value > self.high:
                return f"{value!r} is not {self.describe()}"
        return None


def _checking_params(fit):
    """*fit* preceded by the check of the model's parameters."""
    @functools.wraps(fit)
    def checked(self, *args, **kwargs):
        self.check_params()
        return fit(self, *args, **kwargs)
    checked.checks_params = True
    return checked

# }}}


class Model(ABC):
    """A performance model; see the module docstring."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""  # one line, for help texts
    #: what predict takes (``model_names``): "kernel", "skeleton", "variant", "opencl"
    #: or "profile"
    workload: ClassVar[str] = "kernel"
    #: the keyword arguments of its constructor, declared
    parameters: ClassVar[tuple[Parameter, ...]] = ()
    #: made from its hardware parameter alone (``fit()`` without a dataset), so it
    #: predicts without a profile
    from_hardware: ClassVar[bool] = False
    #: what its fit takes: "suites" (a Dataset of a measurement store's suites) or
    #: "microbenchmarks" (kernelcast.fitting.microbenchmarks: a microbenchmark document)
    fitted_from: ClassVar[str] = "suites"
    #: the model names of format-1 profiles it reads (None: one that names no model)
    format_1_names: ClassVar[tuple] = ()
    #: where a fit that computes for minutes says how far it got (a stream; None: silent)
    progress = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        fit = cls.__dict__.get("fit")
        if fit is not None and not getattr(fit, "checks_params", False) \
                and not getattr(fit, "__isabstractmethod__", False):
            cls.fit = _checking_params(fit)

    @classmethod
    def from_format_1(cls, doc: dict) -> tuple[dict, dict]:
        """The parameters and state of *doc*, a format-1 profile of this model."""
        raise KernelcastError(f"the {cls.name} model has no format-1 profiles")

    @classmethod
    def parameter(cls, name: str) -> Parameter | None:
        """The declared parameter *name*; None when it has none of that name."""
        return next((p for p in cls.parameters if p.name == name), None)

    def check_params(self) -> None:
        """Refuse, with a KernelcastError naming it, a parameter whose value is not one of
        its declared values."""
        for parameter in self.parameters:
            problem = parameter.problem(getattr(self, parameter.name))
            if problem:
                raise KernelcastError(f"the {self.name} model's {parameter.name}: "
                                      f"{problem}")

    def get_params(self) -> dict:
        """The keyword arguments the model was made with."""
        names = [p for p in inspect.signature(type(self).__init__).parameters
                 if p != "self"]
        return {p: getattr(self, p) for p in names}

    def clone(self) -> Model:
        """An unfitted model with the same parameters."""
        return type(self)(**self.get_params())

    @classmethod
    def fit_suites(cls, suite: str) -> tuple[str, ...]:
        """The suites the model is fitted from when calibrated with measurement suite
        *suite*."""
        return (suite,)

    @abstractmethod
    def fit(self, dataset) -> Model:
        """Fit to *dataset*; return self."""

    def check_before_measuring(self, device: str) -> None:
        """Raise a KernelcastError now if this model could not be fitted to measurements
        of *device* (a device name), so that a calibration fails before it measures."""
        self.check_params()

    @property
    def is_fitted(self) -> bool:
        return hasattr(self, "provenance_")

    def check_fitted(self) -> None:
        if not self.is_fitted:
            raise NotFittedError(f"this {self.name} model is not fitted: call "
                                 "fit(dataset) or load a profile first")

    @abstractmethod
    def explain(self, workload, params: dict) -> dict[str, float]:
        """Seconds by part, largest first; they sum to ``predict``."""

    def predict(self, workload, params: dict) -> float:
        """Predicted seconds of *workload* at *params*; a prediction that is not a
        positive, finite time is refused with a KernelcastError."""
        return self._checked(self.seconds(workload, params), workload, params)

    def seconds(self, workload, params: dict) -> float:
        """The model's value for *workload* at *params*, unchecked (the paper's
        unconstrained weights can make it negative); evaluation tables use it."""
        return float(sum(self.explain(workload, params).values()))

    def _checked(self, seconds: float, workload, params) -> float:
        name = getattr(workload, "kernel_name", None) or "the kernel"
        if seconds == 0:
            raise KernelcastError(f"the {self.name} model predicts no time for {name} at "
                                  f"{params}: it finds no work there that it prices (a "
                                  "kernel that executes nothing?)")
        if not (np.isfinite(seconds) and seconds > 0):
            raise KernelcastError(
                f"the {self.name} model predicts {seconds:.4g} s for {name} at {params}, "
                "not a positive time: its weights do not describe this kernel (a profile "
                "with negative or broken weights?); refit it or use another model")
        return seconds

    def predict_dataset(self, dataset) -> np.ndarray:
        """The model's values for every case of *dataset*, unchecked (``seconds``)."""
        self.check_fitted()
        return np.array([self.seconds(dataset.properties(i), dataset.params(i))
                         for i in range(len(dataset))])

    def details(self, workload, params: dict) -> dict:
        """Model-specific quantities behind a prediction (regimes, bottlenecks), for
        tables; none by default."""
        self.check_fitted()
        return {}

    @abstractmethod
    def fitted_state(self) -> dict:
        """What a profile keeps of the fitted model, JSON-serializable."""

    @abstractmethod
    def restore(self, state: dict) -> None:
        """Set the fitted attributes from ``fitted_state()``'s output."""

    def _set_fitted(self, dataset, report: dict) -> None:
        self.provenance_ = dataset.provenance()
        self.fit_report_ = report


class WeightedModel(Model):
    """A model whose prediction is built from fitted weights (seconds per unit) times the
    values ``features(properties, params)`` gives. ``weights_`` maps feature names to
    weights; terms whose group is "context" (kernelcast.fitting.overlap.term_group) carry
    information without a weight."""

    @abstractmethod
    def features(self, props, params: dict) -> dict[str, float]:
        """The values the weights multiply, for a kernel's Properties at *params*."""

    def feature_units(self) -> dict[str, str]:
        """What one unit of each feature is, for tables."""
        from kernelcast.properties.vocabulary import UNITS

        return dict(UNITS)

    def case_values(self, dataset, i: int) -> dict[str, float]:
        """The feature values of case *i* of *dataset* (``values`` of its workload),
        computed once per model class and parameters in the dataset's cache."""
        from kernelcast.fitting.dataset import case_identity

        params = dataset.params(i)
        key = (type(self).__qualname__, repr(sorted(self.get_params().items())),
               case_identity(dataset.cases[i]), repr(sorted(params.items())))
        values = dataset.cache.remember(
            key, lambda: self.features(dataset.properties(i), params))
        return dict(values)

    def design_matrix(self, dataset) -> pandas.DataFrame:
        """One row of features per case of *dataset*; columns that are zero throughout
        are dropped."""
        import pandas as pd  # imported when needed: every command line builds on models

        X = pd.DataFrame([self.case_values(dataset, i)
                          for i in range(len(dataset))]).fillna(0.0)
        return X.loc[:, (X != 0).any(axis=0)]

    @abstractmethod
    def combine(self, parts: dict[str, float], values: dict[str, float]) -> dict[str, float]:
        """The seconds of each term from its weight × value (*parts*), given all
        *values*; the paper's model adds them unchanged."""

    def contributions(self, values: dict[str, float]) -> dict[str, float]:
        """Seconds per nonzero feature of *values*, summing to the prediction. Nonzero
        features the model has no weight for are left out with an UncountedWarning."""
        from kernelcast.fitting.overlap import term_group

        self.check_fitted()
        weights, parts, missing = self.weights_, {}, []
        for name, value in values.items():
            if not value or term_group(name) == "context":
                continue
            if name not in weights:
                missing.append(name)
                continue
            parts[name] = weights[name] * value
        if missing:
            warnings.warn(f"the {self.name} model for {self.provenance_['device']} has no "
                          f"weight for {sorted(missing)} (no measurement kernel exercised "
                          "them); they count as zero", UncountedWarning, stacklevel=3)
        return self.combine(parts, values)

    def values(self, workload, params: dict) -> dict[str, float]:
        """The feature values of *workload* at *params* that the weights multiply."""
        return self.features(as_properties(workload), params)

    def explain(self, workload, params: dict) -> dict[str, float]:
        self.check_fitted()
        parts = self.contributions(self.values(workload, params))
        return dict(sorted(parts.items(), key=lambda kv: -abs(kv[1])))

    def seconds(self, workload, params: dict) -> float:
        self.check_fitted()
        return float(sum(self.contributions(self.values(workload, params)).values()))

    def counter_of(self, name: str) -> str | None:
        """The Nsight Compute metric a feature stands on; None for the paper's
        properties, which count the source, not the hardware."""
        return None

    def terms(self, workload, params: dict) -> list[dict]:
        """``explain``'s parts, largest first, each with the value its weight multiplies
        (``value``, in ``unit``) and the counter it stands on (``counter``)."""
        self.check_fitted()
        values = self.values(workload, params)
        parts = self.contributions(dict(values))
        units = self.feature_units()
        return [{"term": name, "seconds": seconds,
                 "value": values.get(name, values.get(f"{name}_seconds")),
                 "unit": units.get(name, ""), "counter": self.counter_of(name)}
                for name, seconds in sorted(parts.items(), key=lambda kv: -abs(kv[1]))]

    def predict_dataset(self, dataset) -> np.ndarray:
        self.check_fitted()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UncountedWarning)
            return np.array([float(sum(self.contributions(self.case_values(dataset, i))
                                       .values())) for i in range(len(dataset))])

    def unseen(self, dataset) -> list[str]:
        """Weighted features that cases of *dataset* have and the model has no weight
        for (they count as zero)."""
        from kernelcast.fitting.overlap import term_group

        self.check_fitted()
        names = set()
        for i in range(len(dataset)):
            names |= {k for k, v in self.case_values(dataset, i).items()
                      if v and term_group(k) != "context" and k not in self.weights_}
        return sorted(names)

    def fitted_state(self) -> dict:
        self.check_fitted()
        units = self.feature_units()
        return {"weights": {name: {"value": w, "unit": "s", "per": units.get(name, "count")}
                            for name, w in self.weights_.items()}}

    def restore(self, state: dict) -> None:
        weights = state.get("weights")
        if not isinstance(weights, dict) or not weights:
            raise KernelcastError("the profile has no weights")
        known = set(self.feature_units())
        result = {}
        for name, entry in weights.items():
            if name not in known:
                raise KernelcastError(f"unknown property {name!r} for the {self.name} "
                                      "model")
            if not isinstance(entry, dict):
                raise KernelcastError(f"weight of {name!r} is {json_kind(entry)}, not an "
                                      "object; it is not a finite number")
            for key in ("unit", "per"):
                if key in entry and not isinstance(entry[key], str):
                    raise KernelcastError(f"state.weights.{name}.{key} is "
                                          f"{json_kind(entry[key])}, not a string")
            value = entry.get("value")
            if isinstance(value, bool) or not isinstance(value, int | float) \
                    or not np.isfinite(value):
                raise KernelcastError(f"weight of {name!r} is not a finite number")
            if entry.get("unit", "s") != "s":
                raise KernelcastError(f"weight of {name!r} is in {entry['unit']!r}; "
                                      "profiles give seconds ('s')")
            if abs(value) >= 1.0:  # no unit of any property costs a second
                raise KernelcastError(f"weight of {name!r} is {value:g} s per unit, not a "
                                      "plausible time")
            result[name] = float(value)
        self.weights_ = result
