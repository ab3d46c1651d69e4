"""What the text front-ends (skeletons, OpenCL C) share: an error that names a place in
the source, and the description of a lark parser's expected terminals.

Public names: SourceError, describe_terminal, end_position, unexpected_token.
"""

from __future__ import annotations

from kernelcast.errors import UsageError


class SourceError(UsageError):
    """Source text that a front-end cannot read. ``str()`` is ``"path:line:column:
    message"`` (``"path: message"`` when the problem has no position, e.g. an unreadable
    file); line and column count from 1."""

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


def describe_terminal(parser, name: str, named: dict) -> str:
    """How an error message names the lark terminal *name* of *parser*: its entry in
    *named*, its literal text in quotes, or its name."""
    if name in named:
        return named[name]
    try:
        pattern = parser.get_terminal(name).pattern
    except KeyError:
        return name
    return f"'{pattern.value}'" if pattern.type == "str" else name


def end_position(text: str) -> tuple[int, int]:
    """The (line, column) just after the last character of *text*."""
    line = text.count("\n") + 1
    return line, len(text) - (text.rfind("\n") + 1) + 1


def unexpected_token(exc, text: str) -> tuple[int, int, str, int | None]:
    """Where lark's parse error *exc* on *text* happened: (line, column, what was found,
    the token's offset in the text or None at the end of input). A long token (a
    5,000-digit literal) is named by its start and length, not quoted whole."""
    token = getattr(exc, "token", None)
    if token is None or token.type == "$END" or getattr(token, "line", None) in (None, -1):
        return (*end_position(text), "end of input", None)
    got = f"'{token}'" if len(token) <= 38 else f"'{token[:27]}...' ({len(token)} characters)"
    return token.line, token.column, got, getattr(token, "start_pos", None)
