"""Checking and preparing the Loopy kernels that users hand to kernelcast.

Public names: prepare_kernel, PreparedKernel.
"""

from __future__ import annotations

import keyword
from dataclasses import dataclass

import loopy as lp

from kernelcast.errors import (
    DtypeNotFixedError,
    NotALoopyKernelError,
    UnsupportedKernelError,
)


@dataclass(frozen=True)
class PreparedKernel:
    """A kernel preprocessed and type-inferred by Loopy, ready for counting."""

    translation_unit: lp.TranslationUnit
    kernel: lp.LoopKernel
    callables_table: object

    @property
    def name(self) -> str:
        return self.kernel.name

    def value_args(self) -> set[str]:
        return {a.name for a in self.kernel.args if isinstance(a, lp.ValueArg)}


def _as_translation_unit(obj) -> lp.TranslationUnit:
    if isinstance(obj, lp.TranslationUnit):
        return obj
    if isinstance(obj, lp.LoopKernel):
        return lp.make_program(obj).with_entrypoints(obj.name)
    raise NotALoopyKernelError(
        f"expected a Loopy kernel (loopy.TranslationUnit from loopy.make_kernel), "
        f"got {type(obj).__module__}.{type(obj).__qualname__}")


def _untyped_args(tu: lp.TranslationUnit) -> list[str]:
    knl = tu.default_entrypoint
    return sorted(a.name for a in knl.args if a.dtype is None or a.dtype is lp.auto)


def prepare_kernel(obj) -> PreparedKernel:
    """Validate *obj* and return it preprocessed with all types inferred.

    Raises NotALoopyKernelError, UnsupportedKernelError (several entry points, CUDA-style
    vector iname tags, Python keywords as parameter names) or DtypeNotFixedError.
    """
    tu = _as_translation_unit(obj)
    if len(tu.entrypoints) != 1:
        raise UnsupportedKernelError(
            f"the translation unit has {len(tu.entrypoints)} entry points "
            f"({', '.join(sorted(tu.entrypoints))}); kernelcast needs exactly one")
    try:
        inferred = lp.infer_unknown_types(tu, expect_completion=False)
    except lp.LoopyError as err:
        raise DtypeNotFixedError(f"Loopy could not infer the kernel's types: {err}") from err
    untyped = _untyped_args(inferred)
    if untyped:
        raise DtypeNotFixedError(
            f"kernel {inferred.default_entrypoint.name!r}: arguments without a dtype: "
            f"{', '.join(untyped)}; fix them, e.g. loopy.add_dtypes(knl, "
            f"{{{untyped[0]!r}: numpy.float32}})")
    try:
        from loopy.preprocess import infer_unknown_types, preprocess_program

        pre = infer_unknown_types(preprocess_program(tu), expect_completion=True)
    except lp.LoopyError as err:
        raise UnsupportedKernelError(f"Loopy could not preprocess the kernel: {err}") from err
    knl = pre[next(iter(pre.entrypoints))]
    _check_supported(knl)
    return PreparedKernel(pre, knl, pre.callables_table)


def _check_supported(knl: lp.LoopKernel) -> None:
    from loopy.kernel.data import VectorizeTag

    vec = sorted(i for i in knl.all_inames() if knl.iname_tags_of_type(i, VectorizeTag))
    if vec:
        raise UnsupportedKernelError(
            f"inames tagged 'vec' ({', '.join(vec)}) are not supported; use a vector "
            "dtype such as pyopencl.cltypes.float4 for wide accesses")
    bad = sorted(p for p in knl.all_params() if keyword.iskeyword(p))
    if bad:
        raise UnsupportedKernelError(f"parameter names that are Python keywords: {bad}")
