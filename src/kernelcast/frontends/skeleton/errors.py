"""The one error of the skeleton front-end.

Public names: SkeletonError.
"""

from __future__ import annotations

from kernelcast.frontends.positioned import SourceError


class SkeletonError(SourceError):
    """A code skeleton (or its sample file) is malformed: a syntax error or a semantic
    one (undeclared array, index rank mismatch, undefined macro, unknown type, ...)."""
