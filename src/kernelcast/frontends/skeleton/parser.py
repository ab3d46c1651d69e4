"""Parsing skeleton text with lark (LALR) and mapping lark's errors to SkeletonError.

Public names: parse_skeleton, load_skeleton.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path

from kernelcast.errors import UsageError
from kernelcast.frontends.files import check_regular_file
from kernelcast.frontends.positioned import describe_terminal, end_position, unexpected_token

from .errors import SkeletonError
from .ir import INT_MAX, Skeleton
from .semantics import build

_GRAMMAR = Path(__file__).with_name("grammar.lark")
_NAMED = {"NAME": "a name", "INT": "an integer", "STRING": "a string",
          "$END": "end of input", "ADDOP": "'+' or '-'", "MULOP": "'*' or '/'"}


@functools.lru_cache(maxsize=1)
def _parser():
    import lark

    return lark.Lark(_GRAMMAR.read_text(encoding="utf-8"), parser="lalr",
                     propagate_positions=True, maybe_placeholders=False)


def _describe(name: str) -> str:
    return describe_terminal(_parser(), name, _NAMED)


def _expected(names) -> str:
    described = sorted({_describe(n) for n in names})
    if not described:
        return ""
    if len(described) == 1:
        return f"expected {described[0]}"
    return "expected one of " + ", ".join(described)


def _syntax_error(exc, text: str, path: str) -> SkeletonError:
    import lark

    if isinstance(exc, lark.UnexpectedCharacters):
        pos = exc.pos_in_stream
        if text.startswith("/*", pos):
            message = "unterminated comment ('/*' without '*/')"
        elif text[pos] == '"':
            message = "unterminated string"
        else:
            # lark's "allowed" set here is the whole lexer's, not the parser state's:
            # listing it would mislead, so only the character is named.
            message = f"unexpected character {text[pos]!r}"
        return SkeletonError(path, exc.line, exc.column, message)
    expected = _expected(getattr(exc, "expected", None) or ())
    line, column, got, start = unexpected_token(exc, text)
    if start is not None and text.startswith("/*", start):
        return SkeletonError(path, line, column, "unterminated comment ('/*' without '*/')")
    message = f"{expected}, got {got}" if expected else f"unexpected {got}"
    return SkeletonError(path, line, column, message)


def _check_defines(defines):
    if defines is None:
        return None
    out = {}
    for name, value in dict(defines).items():
        if not (isinstance(name, str) and name.isidentifier()):
            raise UsageError(f"macro name {name!r} is not an identifier")
        if isinstance(value, bool) or not isinstance(value, int):
            raise UsageError(f"macro {name} must be an integer, got {value!r}")
        if abs(value) > INT_MAX:  # not str()ed: a huge int may exceed Python's digit limit
            raise UsageError(f"macro {name} is a {value.bit_length()}-bit integer; skeleton "
                             f"integers are 64-bit, at most {INT_MAX} in magnitude")
        out[name] = value
    return out


def parse_skeleton(text: str, path: str = "<string>",
                   defines: Mapping[str, int] | None = None) -> Skeleton:
    """Parse and check a skeleton; ``defines`` supplies or overrides macros (as ``-D``
    does), so one skeleton serves workloads at several scales (§5)."""
    import lark

    defines = _check_defines(defines)
    try:
        tree = _parser().parse(text)
    except lark.exceptions.UnexpectedInput as exc:
        raise _syntax_error(exc, text, path) from None
    try:
        return build(tree, path, defines, end_position(text))
    except RecursionError:
        raise SkeletonError(path, 1, 1, "the skeleton is nested too deeply") from None


def load_skeleton(path, defines: Mapping[str, int] | None = None) -> Skeleton:
    """Read a skeleton file (UTF-8) and parse it."""
    name = str(path)
    check_regular_file(path, "skeleton")  # a FIFO would block the read
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise SkeletonError(name, None, None, f"cannot read the skeleton: "
                                              f"{exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = end_position(data[:exc.start].decode("utf-8", "replace"))
        raise SkeletonError(name, line, column, "the file is not UTF-8 text") from None
    return parse_skeleton(text, name, defines)
