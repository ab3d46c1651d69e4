"""The extracted properties of one kernel: symbolic counts and fast evaluation.

Public names: Properties, AccessInfo.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction

import islpy as isl
import numpy as np

from kernelcast.errors import ParameterError
from kernelcast.properties.compiled import (LazyEvaluator, evaluator_source,
                                            pwqpolynomial_source, set_source)
from kernelcast.properties.vocabulary import ORDER, PROPERTY_NAMES


@dataclass(frozen=True)
class AccessInfo:
    """How one global-memory access site was classified (at the reference size)."""

    instruction: str
    array: str
    direction: str
    bits: int
    stride: int | None
    utilization: Fraction | None
    stride_class: str

    @property
    def property_name(self) -> str:
        return f"{self.direction}_global_{self.bits}_{self.stride_class}"


class Properties:
    """Performance-relevant properties of one kernel launch, as functions of its sizes.

    ``names`` lists the properties with a nonzero count in vocabulary order;
    ``symbolic(name)`` is the exact count as an isl piecewise quasi-polynomial (a min-fold
    of two for ``minls_*``); ``evaluate(params)`` gives every count for given sizes
    without recounting. ``params`` are the size parameters ``evaluate`` needs;
    ``statistics`` holds user-supplied values for data-dependent quantities;
    ``reference`` is the size at which stride classes and utilization were decided;
    ``local_memory`` the (shape, bytes per element) of each local-memory temporary a
    work-group allocates (``local_memory_bytes(params)`` adds them up).
    """

    def __init__(self, kernel_name: str, params: tuple[str, ...], counts: dict,
                 minls: dict, assumptions: isl.BasicSet, statistics: dict,
                 reference: dict, accesses: tuple[AccessInfo, ...],
                 extent: dict | None = None, local_memory: tuple = ()):
        self.kernel_name = kernel_name
        self.local_memory = tuple(local_memory)
        self.params = params
        self.statistics = dict(statistics)
        self.reference = dict(reference)
        self.accesses = accesses
        self._counts = counts
        self._minls = minls  # name -> (load name, store name)
        self.names = tuple(sorted([*counts, *minls], key=ORDER.__getitem__))
        self._assumptions = assumptions
        self._arg_names = (*params, *sorted(k for k in statistics if k in _param_names(
            counts)))
        base_names = tuple(counts)
        # data statistics are the evaluators' only arguments that may be floats
        exact = not any(isinstance(self.statistics[k], float)
                        for k in self._arg_names[len(params):])
        divs: dict[str, str] = {}
        sources = [pwqpolynomial_source(counts[n], divs, exact_args=exact)
                   for n in base_names]
        self._base_names = base_names
        self._fn = LazyEvaluator(evaluator_source(self._arg_names, sources, divs=divs),
                                 "evaluate", forms=[counts[n] for n in base_names],
                                 arg_names=self._arg_names, owner=self, attr="_fn")
        self._minls_index = [(n, base_names.index(a), base_names.index(b))
                             for n, (a, b) in minls.items()]
        self._extent_names = tuple(extent or ())
        self._extent_fn = None
        if extent:
            divs = {}
            sources = [pwqpolynomial_source(extent[n], divs, exact_args=exact)
                       for n in self._extent_names]
            self._extent_fn = LazyEvaluator(
                evaluator_source(self._arg_names, sources, name="extent", divs=divs),
                "extent", forms=[extent[n] for n in self._extent_names],
                arg_names=self._arg_names, owner=self, attr="_extent_fn")
        guard = set_source(assumptions) if not assumptions.is_universe() else "True"
        self._guard = LazyEvaluator(
            evaluator_source(self._arg_names, [guard], name="assumptions_hold"),
            "assumptions_hold", owner=self, attr="_guard")

    def __repr__(self) -> str:
        return (f"<Properties of {self.kernel_name!r}: {len(self.names)} properties "
                f"in ({', '.join(self.params)})>")

    def symbolic(self, name: str):
        """The exact count of *name*: an isl.PwQPolynomial, or a min-fold for ``minls_*``."""
        if name in self._counts:
            return self._counts[name]
        if name in self._minls:
            # Outside its pieces a count is zero; make that explicit before folding, or
            # isl's fold would take the other count alone there.
            load, store = (self._counts[n] + self._universe_zero() for n in self._minls[name])
            fold = isl.PwQPolynomialFold.from_pw_qpolynomial
            return fold(isl.fold.min, load).fold(fold(isl.fold.min, store))
        if name in ORDER:
            return isl.PwQPolynomial.zero(
                next(iter(self._counts.values())).space) if self._counts else 0
        raise KeyError(f"unknown property {name!r}; the vocabulary is "
                       "kernelcast.PROPERTY_NAMES (docs/properties.md)")

    def _universe_zero(self) -> isl.PwQPolynomial:
        space = next(iter(self._counts.values())).space
        return isl.PwQPolynomial.from_qpolynomial(
            isl.QPolynomial.zero_on_domain(space.domain()))

    def check_params(self, params) -> tuple[int, ...]:
        """Validate *params* and return their values in ``self.params`` order."""
        if type(params) is dict and len(params) == len(self.params):  # the common case
            values = tuple(params.get(name) for name in self.params)
            if all(type(v) is int and v >= 0 for v in values):
                return values
        if not hasattr(params, "keys"):
            raise ParameterError(f"parameters must be a mapping of name to size, got "
                                 f"{type(params).__name__}")
        unknown = sorted(set(params) - set(self.params))
        missing = [p for p in self.params if p not in params]
        if unknown or missing:
            parts = []
            if missing:
                parts.append(f"missing {', '.join(missing)}")
            if unknown:
                parts.append(f"unknown {', '.join(map(str, unknown))}")
            raise ParameterError(f"kernel {self.kernel_name!r} takes parameters "
                                 f"({', '.join(self.params)}): {'; '.join(parts)}")
        values = []
        for name in self.params:
            value = params[name]
            if isinstance(value, numbers.Real) and not isinstance(value, (bool, numbers.Integral)) \
                    and float(value).is_integer():
                value = int(value)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise ParameterError(f"parameter {name} must be an integer, got {value!r}")
            if value < 0:
                raise ParameterError(f"parameter {name} must not be negative, got {value}")
            values.append(int(value))
        return tuple(values)

    def _arguments(self, params) -> tuple:
        values = self.check_params(params)
        args = (*values, *(self.statistics[k] for k in self._arg_names[len(values):]))
        if not self._guard(*args)[0]:
            raise ParameterError(
                f"parameters {dict(zip(self.params, values))} violate the assumptions of "
                f"kernel {self.kernel_name!r}: {self._assumptions}")
        return args

    def evaluate(self, params) -> dict[str, float]:
        """Every property in ``names`` at the given sizes, as floats."""
        return self._values(self._arguments(params))

    def _values(self, args) -> dict[str, float]:
        values = self._fn(*args)
        result = self._floats(self._base_names, values, args)
        for name, i, j in self._minls_index:
            result[name] = float(min(values[i], values[j]))
        return {name: result[name] for name in self.names}

    def _floats(self, names, values, args) -> dict[str, float]:
        """{name: value as a float}; a count too large for a float (sizes or statistics
        of astronomical magnitude) is a ParameterError naming it, never inf or NaN."""
        out = {}
        for name, value in zip(names, values, strict=True):
            try:
                out[name] = float(value)
            except OverflowError:
                out[name] = math.inf
            if not math.isfinite(out[name]):
                given = dict(zip(self._arg_names, args))
                raise ParameterError(f"{name} of kernel {self.kernel_name!r} is not a finite "
                                     f"count at {given}: the sizes or statistics are too "
                                     "large")
        return out

    def evaluate_with_extent(self, params) -> tuple[dict[str, float], dict[str, float]]:
        """``(evaluate(params), extent(params))``, checking *params* once."""
        args = self._arguments(params)
        return self._values(args), self._extents(args)

    def _extents(self, args) -> dict[str, float]:
        if self._extent_fn is None:
            return {}
        return self._floats(self._extent_names, self._extent_fn(*args), args)

    def extent(self, params) -> dict[str, float]:
        """What the extended model adds (kernelcast.models.extended.features): the
        work-items of the launch (``work_items``); the bytes of the global arrays it reads
        and writes (``bytes_read``, ``bytes_written``), and per array its size and the
        bytes its accesses cover (``read a``, ``read a accessed``, ``written …``); the
        local-memory passes beyond one per access (``local_conflicts``); and the
        operations on loop-carried paths (``recurrence_flops``, ``…_special``,
        ``…_local_loads``, ``…_global_loads``)."""
        if self._extent_fn is None:
            return {}
        return self._extents(self._arguments(params))

    def local_memory_bytes(self, params) -> int:
        """Bytes of local memory one work-group allocates at *params*."""
        from pymbolic import evaluate

        return sum(int(np.prod([evaluate(n, dict(params)) for n in shape])) * itemsize
                   for shape, itemsize in self.local_memory)

    def vector(self, params, names=PROPERTY_NAMES) -> list[float]:
        """The counts for *names* (zero where absent), in that order."""
        values = self.evaluate(params)
        return [values.get(n, 0.0) for n in names]


def _param_names(counts: dict) -> set[str]:
    names = set()
    for pwqp in counts.values():
        names |= set(pwqp.space.get_var_dict(isl.dim_type.param))
    return names
