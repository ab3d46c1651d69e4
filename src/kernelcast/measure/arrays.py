"""Arguments for running a Loopy kernel: shapes from its parameters, random inputs,
poisoned outputs.

Every array argument's shape and strides come from the kernel's own declarations evaluated
at the parameter values. Arrays the kernel only reads get uniform random values in
[0.5, 1.5); arrays it writes are filled with NaN (or -1 for integers) so that elements a
kernel fails to write, or writes out of place, show up in the comparison with the
reference. Float scalars that are not size parameters get random values.

Public names: ArraySpec, SizeRangeError, typed_kernel, array_specs, size_parameters, check_sizes,
scalar_arguments, host_arguments, argument_bytes, empty_host_array.
"""

from __future__ import annotations

import loopy as lp
import numpy as np
from pymbolic import evaluate
from pymbolic.mapper.dependency import DependencyMapper
from pymbolic.mapper.evaluator import UnknownVariableError

from kernelcast.errors import ParameterError
from kernelcast.measure.launch import ArraySpec


class SizeRangeError(ParameterError):
    """A size does not fit the integer type of the kernel argument that carries it."""


def typed_kernel(knl) -> lp.LoopKernel:
    """The entry kernel of *knl* with argument types inferred (done once per kernel)."""
    if isinstance(knl, lp.LoopKernel) and all(a.dtype not in (None, lp.auto)
                                             for a in knl.args):
        return knl
    tu = knl if isinstance(knl, lp.TranslationUnit) else lp.make_program(knl)
    return lp.infer_unknown_types(tu, expect_completion=False).default_entrypoint


def _evaluate(expr, params, what):
    try:
        value = evaluate(expr, params)
    except (KeyError, NameError, UnknownVariableError) as err:
        name = err.args[0] if err.args else err
        raise ParameterError(f"{what} needs a value for {name!r}; got {sorted(params)}") \
            from None
    if int(value) != value or value < 0:
        raise ParameterError(f"{what} evaluates to {value}, not a size")
    return int(value)


def array_specs(knl, params: dict) -> tuple[list[ArraySpec], dict[str, np.dtype]]:
    """The global arrays of *knl* at *params*, and its scalar arguments with their dtypes.
    *knl* is a Loopy kernel or the result of typed_kernel."""
    kernel = typed_kernel(knl)
    written = kernel.get_written_variables()
    arrays, scalars = [], {}
    for arg in kernel.args:
        if isinstance(arg, lp.ValueArg):
            scalars[arg.name] = np.dtype(arg.dtype.numpy_dtype)
            continue
        what = f"the shape of argument {arg.name!r}"
        shape = tuple(_evaluate(s, params, what) for s in arg.shape)
        strides = tuple(_evaluate(tag.stride, params, f"the strides of {arg.name!r}")
                        for tag in arg.dim_tags)
        arrays.append(ArraySpec(arg.name, np.dtype(arg.dtype.numpy_dtype), shape, strides,
                                arg.name in written))
    return arrays, scalars


def size_parameters(knl) -> list[str]:
    """The parameters *knl* needs values for to run: its integer scalar arguments and the
    variables of its array shapes and strides (float scalars get random values)."""
    kernel = typed_kernel(knl)
    names = {a.name for a in kernel.args
             if isinstance(a, lp.ValueArg) and np.dtype(a.dtype.numpy_dtype).kind in "iub"}
    deps = DependencyMapper(composite_leaves=False)
    for arg in kernel.args:
        if isinstance(arg, lp.ValueArg):
            continue
        exprs = [*(arg.shape or ()), *(tag.stride for tag in (arg.dim_tags or ()))]
        for expr in exprs:
            if expr is not None and expr is not lp.auto:
                names.update(v.name for v in deps(expr))
    return sorted(names)


def check_sizes(knl, params: dict) -> None:
    """Raise ParameterError unless *params* are integers that are not negative, satisfy
    the kernel's assumptions and fit the integer types of the arguments that carry them
    (SizeRangeError): what ``measure`` checks before anything is stored."""
    import islpy as isl

    for name, value in params.items():
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise ParameterError(f"size {name} must be an integer, got {value!r}")
        if value < 0:
            raise ParameterError(f"size {name} must not be negative, got {value}")
    kernel = typed_kernel(knl)
    scalars = {a.name: np.dtype(a.dtype.numpy_dtype) for a in kernel.args
               if isinstance(a, lp.ValueArg)}
    scalar_arguments({k: d for k, d in scalars.items() if k in params}, params,
                     np.random.default_rng(0))
    assumptions = kernel.assumptions
    for name, value in params.items():
        index = assumptions.get_space().find_dim_by_name(isl.dim_type.param, name)
        if index >= 0:
            assumptions = assumptions.fix_val(isl.dim_type.param, index,
                                              isl.Val(str(int(value))))
    if assumptions.is_empty():
        raise ParameterError(f"sizes {params} violate the assumptions of kernel "
                             f"{kernel.name!r}: {kernel.assumptions}")


def argument_bytes(knl, params: dict) -> int:
    """Bytes of global memory the kernel's arrays occupy at *params*."""
    return sum(spec.nbytes for spec in array_specs(knl, params)[0])


def empty_host_array(spec: ArraySpec) -> np.ndarray:
    buffer = np.empty(spec.size, spec.dtype)
    item = spec.dtype.itemsize
    return np.lib.stride_tricks.as_strided(
        buffer, spec.shape, tuple(s * item for s in spec.strides), writeable=True)


def scalar_arguments(scalars: dict, params: dict, rng: np.random.Generator) -> dict:
    """Values of the scalar arguments: sizes from *params*, other floats random."""
    values = {}
    for name, dtype in scalars.items():
        if name in params:
            value = params[name]
            if dtype.kind in "iu":
                limits = np.iinfo(dtype)
                if not limits.min <= value <= limits.max:
                    raise SizeRangeError(
                        f"{name}={value} does not fit the kernel's {dtype.name} argument "
                        f"{name!r} ({limits.min} to {limits.max})")
            values[name] = dtype.type(value)
        elif dtype.kind == "f":
            values[name] = dtype.type(rng.random() + 0.5)
        else:
            raise ParameterError(f"no value for the integer argument {name!r}; "
                                 f"got {sorted(params)}")
    return values


def host_arguments(knl, params: dict, rng: np.random.Generator) -> dict:
    """Every argument of *knl*: random inputs, poisoned outputs, sizes from *params*."""
    arrays, scalars = array_specs(knl, params)
    args = {}
    for spec in arrays:
        array = empty_host_array(spec)
        if spec.written:
            array[...] = np.nan if spec.dtype.kind in "fc" else -1
        else:
            array[...] = (rng.random(spec.shape) + 0.5).astype(spec.dtype)
        args[spec.name] = array
    args.update(scalar_arguments(scalars, params, rng))
    return args
