"""Checking that a case computes the right answer on a device.

A case runs once through a measurement backend (the same compiled code that is timed), on
random inputs with its outputs poisoned with NaN, and is compared with its NumPy reference:
the NaN pattern must match exactly (every element the reference expects is written, nothing
else is) and the norm-wise relative error of the rest must stay below TOLERANCE for the
precision.

A case is any object with ``params`` (the sizes), ``kernel()`` (its Loopy kernel) and
``reference(args)`` (the expected outputs, by name, from the host arguments), such as a
suite case (kernelcast.suites.suite.Case); this module does not import the suites.

Public names: TOLERANCE, relative_error, check_compiled, check_case.
"""

from __future__ import annotations

import numpy as np

from kernelcast.measure.arrays import array_specs, scalar_arguments, typed_kernel
from kernelcast.measure.codegen import generate_case

TOLERANCE = {"float32": 1e-5, "float64": 1e-12, None: 0.0}


def relative_error(actual: np.ndarray, expected: np.ndarray) -> float:
    """‖actual − expected‖ / ‖expected‖ over the expected elements; inf if the shapes or
    the set of unwritten (NaN) elements differ."""
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    if actual.shape != expected.shape:
        return float("inf")
    unwritten = np.isnan(expected)
    if not np.array_equal(np.isnan(actual), unwritten):
        return float("inf")
    diff = np.linalg.norm(actual[~unwritten] - expected[~unwritten])
    scale = np.linalg.norm(expected[~unwritten])
    return float(diff / scale) if scale else float(diff)


def check_compiled(backend, compiled, generated, typed, case, seed: int = 0) -> dict:
    """Run the compiled kernel once at *case*'s sizes on *backend*; the relative error of
    each output against the reference."""
    specs, scalars = array_specs(typed, case.params)
    values = scalar_arguments(scalars, case.params, np.random.default_rng(seed))
    host = backend.run_once(compiled, generated, specs, values, case.params, seed)
    host.update(values)
    expected = case.reference(host)
    return {name: relative_error(host[name], value) for name, value in expected.items()}


def check_case(case, backend, seed: int = 0) -> dict:
    """Generate, compile and check *case* on *backend*."""
    knl = case.kernel()
    generated = generate_case(knl, backend.name, case)
    compiled = backend.compile(generated)
    return check_compiled(backend, compiled, generated, typed_kernel(knl), case, seed)
