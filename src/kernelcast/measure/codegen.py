"""Device code, argument order and launch geometry of a Loopy kernel, for OpenCL or CUDA.

Both backends compile the code Loopy generates with the vendor's own compiler and launch it
themselves, so the two time exactly the same kernel and nothing of Loopy's host-side
invoker sits between the launches.

Loopy 2025.2's CUDA target cannot type ``rsqrt`` (its CudaCallable never overrides
``with_types``); the CUDA target here supplies a callable that does, mapping to CUDA's
``rsqrtf``/``rsqrt``.

Public names: generate, generate_case, cuda_translation_unit (and GeneratedKernel, KernelArgument from
kernelcast.measure.launch).
"""

from __future__ import annotations

import loopy as lp
import numpy as np
from loopy.kernel.function_interface import ScalarCallable
from loopy.symbolic import IdentityMapper
from loopy.target.cuda import CUDACASTBuilder, CudaTarget
from loopy.types import NumpyType

from kernelcast.errors import UnsupportedKernelError
from kernelcast.measure.launch import GeneratedKernel, KernelArgument


class _CudaRsqrt(ScalarCallable):
    """rsqrt for Loopy's CUDA target: rsqrtf for float32, rsqrt for float64."""

    def with_types(self, arg_id_to_dtype, clbl_inf_ctx):
        if arg_id_to_dtype.get(0) is None:
            return self.copy(arg_id_to_dtype=arg_id_to_dtype), clbl_inf_ctx
        dtype = arg_id_to_dtype[0].numpy_dtype
        if dtype != np.float32:
            dtype = np.dtype(np.float64)
        typed = NumpyType(dtype)
        return (self.copy(name_in_target="rsqrtf" if dtype == np.float32 else "rsqrt",
                          arg_id_to_dtype={-1: typed, 0: typed}), clbl_inf_ctx)


class _CudaBuilder(CUDACASTBuilder):
    @property
    def known_callables(self):
        callables = super().known_callables
        callables["rsqrt"] = _CudaRsqrt(name="rsqrt")
        return callables


class _CudaTarget(CudaTarget):
    def get_device_ast_builder(self):
        return _CudaBuilder(self)


class _Unresolve(IdentityMapper):
    """Turns resolved function calls back into names, so another target resolves them."""

    def map_resolved_function(self, expr):
        return expr.function


def cuda_translation_unit(tu: lp.TranslationUnit) -> lp.TranslationUnit:
    """The same kernel for Loopy's CUDA target."""
    knl = tu.default_entrypoint
    mapper = _Unresolve()
    knl = knl.copy(target=_CudaTarget(),
                   instructions=[i.with_transformed_expressions(mapper)
                                 for i in knl.instructions])
    return lp.make_program(knl).with_entrypoints(knl.name)


def generate(tu, target: str = "opencl") -> GeneratedKernel:
    """Generate device code for *tu* (a Loopy kernel) for "opencl" or "cuda"."""
    if isinstance(tu, lp.LoopKernel):
        tu = lp.make_program(tu).with_entrypoints(tu.name)
    if target == "cuda":
        tu = cuda_translation_unit(tu)
    elif target != "opencl":
        raise ValueError(f"unknown target {target!r}")
    code = lp.generate_code_v2(tu)
    if len(code.device_programs) != 1:
        raise UnsupportedKernelError(
            f"kernel {tu.default_entrypoint.name!r} needs {len(code.device_programs)} "
            "launches (global barriers); kernelcast times single-launch kernels")
    pre = lp.preprocess_program(tu)
    linearized = lp.get_one_linearized_kernel(pre.default_entrypoint, pre.callables_table)
    grid, block = linearized.get_grid_size_upper_bounds_as_exprs(pre.callables_table)
    arguments = tuple(
        KernelArgument(a.name, np.dtype(a.dtype.numpy_dtype), not isinstance(a, lp.ValueArg))
        for a in linearized.args)
    return GeneratedKernel(linearized.name, target, code.device_code(), arguments,
                           tuple(grid), tuple(block))


def generate_case(knl, target: str, case=None) -> GeneratedKernel:
    """Device code for *knl*, the kernel of *case* (a suite case, or None): Loopy's, or on
    OpenCL the OpenCL C source the case's class gives (``KernelClass.source``), launched
    with the geometry and arguments of its Loopy twin."""
    from dataclasses import replace

    generated = generate(knl, target)
    source = getattr(getattr(case, "kclass", None), "source", None)
    if source is not None and target == "opencl":
        generated = replace(generated, code=source(case))
    return generated
