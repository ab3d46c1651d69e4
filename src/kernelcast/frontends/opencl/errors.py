"""The one error of the OpenCL C front-end.

Public names: OpenCLSourceError.
"""

from __future__ import annotations

from kernelcast.frontends.positioned import SourceError


class OpenCLSourceError(SourceError):
    """OpenCL C source that kernelcast cannot read or count: a syntax error, a feature
    outside the supported subset (vector types, while loops, ...) or a semantic error
    (undeclared name, non-constant loop bound, unknown kernel, ...)."""
