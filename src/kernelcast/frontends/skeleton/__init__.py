"""GROPHECY code skeletons (Meng et al., SC'11, §5): a parser to a typed IR, and the code
layout (§6.1) that maps a skeleton onto threads.

A skeleton declares arrays and macros and describes one or more ``parallel_for`` loop
spaces whose tasks load, store and compute; docs/grophecy-skeletons.md describes the
language. Every problem raises :class:`SkeletonError` (``path:line:column: message``).

Public names: parse_skeleton, load_skeleton, SkeletonError, read_sample, sample_path,
iter_statements, Skeleton, Macro, Array, ParallelFor, Loop, Access, Comp, Assign, Affine,
Indirect, Index, Statement, Layout, ELEMENT_BYTES, BOUND_KINDS, INT_MAX, MAX_PARALLEL_DIMS,
MAX_STATEMENTS.
"""

from .errors import SkeletonError
from .ir import (
    BOUND_KINDS,
    ELEMENT_BYTES,
    INT_MAX,
    MAX_PARALLEL_DIMS,
    MAX_STATEMENTS,
    Access,
    Affine,
    Array,
    Assign,
    Comp,
    Index,
    Indirect,
    Loop,
    Macro,
    ParallelFor,
    Skeleton,
    Statement,
    iter_statements,
)
from .layout import Layout
from .parser import load_skeleton, parse_skeleton
from .sample import read_sample, sample_path

__all__ = [
    "BOUND_KINDS",
    "ELEMENT_BYTES",
    "INT_MAX",
    "MAX_PARALLEL_DIMS",
    "MAX_STATEMENTS",
    "Access",
    "Affine",
    "Array",
    "Assign",
    "Comp",
    "Index",
    "Indirect",
    "Layout",
    "Loop",
    "Macro",
    "ParallelFor",
    "Skeleton",
    "SkeletonError",
    "Statement",
    "iter_statements",
    "load_skeleton",
    "parse_skeleton",
    "read_sample",
    "sample_path",
]
