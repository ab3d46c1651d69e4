"""Checking and preparing the Loopy kernels that users hand to kernelcast.

A kernel without parallel launch tags (no iname tagged ``g.N`` or ``l.N``, as when
``split_iname`` was forgotten) runs as a single work-item: ``prepare_kernel`` says so with
a SequentialKernelWarning naming the loops that could be tagged.

Public names: prepare_kernel, PreparedKernel, statistic_names, check_statistics.
"""

from __future__ import annotations

import keyword
import warnings
from dataclasses import dataclass

import loopy as lp

from kernelcast.errors import (
    DtypeNotFixedError,
    NotALoopyKernelError,
    SequentialKernelWarning,
    UnsupportedKernelError,
    UsageError,
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
    _warn_if_sequential(tu.default_entrypoint)
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


def _warn_if_sequential(knl: lp.LoopKernel) -> None:
    """A SequentialKernelWarning where no iname is tagged for the hardware (g.N, l.N)
    and some loop could be; a kernel without loops is one work-item by design."""
    from loopy.kernel.data import HardwareConcurrentTag

    inames = knl.all_inames()
    if any(knl.iname_tags_of_type(i, HardwareConcurrentTag) for i in inames):
        return
    reductions = set()
    for insn in knl.instructions:
        reductions |= set(insn.reduction_inames())
    loops = sorted(i for i in inames if i not in reductions and not knl.iname_tags(i))
    if not loops:
        return
    warnings.warn(
        f"kernel {knl.name!r} has no parallel launch tags (no loop tagged g.N or l.N), so "
        f"it runs as a single work-item; loops that could be tagged: {', '.join(loops)} "
        f"(e.g. loopy.split_iname(knl, {loops[0]!r}, 256, outer_tag='g.0', "
        "inner_tag='l.0'))", SequentialKernelWarning, stacklevel=3)


def statistic_names(knl) -> list[str]:
    """The data statistics *knl* (a Loopy kernel or a PreparedKernel) needs: loop bounds
    read from data, and instructions guarded by a condition on data (their fraction)."""
    import islpy as isl
    from loopy.symbolic import condition_to_set

    prepared = knl if isinstance(knl, PreparedKernel) else prepare_kernel(knl)
    kernel = prepared.kernel
    value_args = prepared.value_args()
    names = {p for p in kernel.outer_params() if p not in value_args}
    for insn in kernel.instructions:
        if not insn.predicates:
            continue
        domain = kernel.get_inames_domain(insn.within_inames).project_out_except(
            insn.within_inames, [isl.dim_type.set])
        if any(condition_to_set(domain.space, pred) is None for pred in insn.predicates):
            names.add(insn.id)
    return sorted(names)


def check_statistics(knl, statistics: dict) -> None:
    """Refuse statistics that *knl* does not use (a misspelt name would be ignored):
    "unknown statistic 'foo' for kernel K; it needs: a, b"."""
    if not statistics:
        return
    prepared = knl if isinstance(knl, PreparedKernel) else prepare_kernel(knl)
    needed = statistic_names(prepared)
    unknown = sorted(set(statistics) - set(needed))
    if unknown:
        which = ", ".join(repr(u) for u in unknown)
        raise UsageError(f"unknown statistic{'s' if len(unknown) > 1 else ''} {which} for "
                         f"kernel {prepared.name}; "
                         + (f"it needs: {', '.join(needed)}" if needed
                            else "it needs none"))
