"""Checking that a suite case computes the right answer on an OpenCL device.

A case runs once on random inputs with its outputs poisoned (kernelcast.measure.arrays)
and is compared with its NumPy reference: the NaN pattern must match exactly (every
element the reference expects is written, nothing else is) and the norm-wise relative
error of the rest must stay below TOLERANCE for the precision.

Public names: TOLERANCE, relative_error, check_case.
"""

from __future__ import annotations

import loopy as lp
import numpy as np

from kernelcast.measure.arrays import host_arguments

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


def check_case(case, queue, seed: int = 0) -> dict[str, float]:
    """Run *case* once on *queue* and return the relative error of each output."""
    knl = lp.set_options(case.kernel(), return_dict=True)
    args = host_arguments(knl, case.params, np.random.default_rng(seed))
    _evt, outputs = knl(queue, **args)
    expected = case.reference(args)
    return {name: relative_error(outputs[name].get() if hasattr(outputs[name], "get")
                                 else outputs[name], value)
            for name, value in expected.items()}
