"""The one error of the OpenCL C front-end.

Public names: OpenCLSourceError.
"""

from __future__ import annotations

from kernelcast.errors import UsageError


class OpenCLSourceError(UsageError):
    """OpenCL C source that kernelcast cannot read or count: a syntax error, a feature
    outside the supported subset (vector types, while loops, ...) or a semantic error
    (undeclared name, non-constant loop bound, unknown kernel, ...).

    ``str()`` is ``"path:line:column: message"`` (``"path: message"`` when the problem has
    no position, e.g. an unreadable file); line and column count from 1."""

    def __init__(self, path: str, line: int | None, column: int | None, message: str):
        self.path = path
        self.line = line
        self.column = column
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.line is None:
            return f"{self.path}: {self.message}"
        return f"{self.path}:{self.line}:{self.column}: {self.message}"

    def __reduce__(self):
        return (type(self), (self.path, self.line, self.column, self.message))
