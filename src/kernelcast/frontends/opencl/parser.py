"""Reading OpenCL C source: preprocessor lines, lark (LALR) parsing, and the unit's kernels.

Preprocessor lines are handled here, before lark sees the text: ``#pragma`` lines are
ignored, object-like ``#define NAME value`` lines are recorded (their values parsed as
expressions, substituted where the name is used) and every other directive is refused.
Each directive is blanked with spaces, so lark's line and column numbers stay those of
the original text. Every failure is an :class:`OpenCLSourceError` at a position.

Public names: parse_opencl, load_opencl, OpenCLUnit, Macro, MAX_SOURCE_CHARS.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from kernelcast.frontends.files import check_regular_file
from kernelcast.frontends.positioned import describe_terminal, end_position, unexpected_token

from .errors import OpenCLSourceError

_GRAMMAR = Path(__file__).with_name("grammar.lark")
MAX_SOURCE_CHARS = 250_000
_SCAN = re.compile(r"//[^\n]*|/\*.*?\*/|(?P<u>/\*)"
                   r"|(?P<d>^[ \t]*#(?:[^\n/]|/(?![/*])|/\*[^\n]*?\*/)*)", re.M | re.S)
_KEYWORDS = re.compile(
    r"(?:unsigned|signed|char|uchar|short|ushort|int|uint|long|ulong|size_t|float|double|bool"
    r"|half|void|__kernel|kernel|__global|global|__local|local|__constant|constant|__private"
    r"|private|const|volatile|restrict|__restrict|if|else|for|return|while|do|switch|case"
    r"|default|goto|break|continue|__attribute__)")
_NAMED = {"NAME": "a name", "INT": "an integer", "FLOAT": "a number", "TYPE_KW": "a type",
          "QUAL": "a qualifier", "VECTOR_TYPE": "a type", "$END": "end of input"}


class Macro(NamedTuple):
    """One ``#define``: ``value`` is its text; ``tree`` its parsed value (None when
    empty or unparsable; ``error`` then says why, raised where the macro is used)."""

    name: str
    value: str
    line: int
    column: int
    tree: object
    error: OpenCLSourceError | None


@dataclass(frozen=True)
class OpenCLUnit:
    """A parsed source file: its kernels (in source order) and macros. Counting happens
    in :func:`kernelcast.frontends.opencl.count_kernel`."""

    path: str
    text: str
    kernels: tuple[str, ...]
    defines: dict[str, str]
    macros: dict[str, Macro] = field(repr=False, compare=False)
    kernel_trees: dict = field(repr=False, compare=False)
    globals: tuple = field(repr=False, compare=False)


@functools.lru_cache(maxsize=1)
def _parser():
    import lark

    return lark.Lark(_GRAMMAR.read_text(encoding="utf-8"), parser="lalr", lexer="basic",
                     start=["start", "define_value"], maybe_placeholders=True,
                     propagate_positions=False)


def _describe(name: str) -> str:
    return describe_terminal(_parser(), name, _NAMED)


def _expected(names) -> str:
    s = set(names)
    if {"NAME", "RBRACE", "IF"} <= s:
        return "expected a statement or '}'"
    for term, text in (("SEMI", "';'"), ("RPAR", "')'"), ("RSQB", "']'")):
        if term in s and "NAME" not in s:
            return f"expected {text}"
    if {"NAME", "INT"} <= s:
        return "expected an expression"
    if {"TYPE_KW", "$END"} <= s:
        return "expected a declaration or a __kernel function"
    if "NAME" in s:
        return "expected a name"
    described = sorted({_describe(n) for n in s})
    if not described or len(described) > 5:
        return ""
    if len(described) == 1:
        return f"expected {described[0]}"
    return "expected one of " + ", ".join(described)


def _syntax_error(exc, text: str, path: str, line: int | None = None) -> OpenCLSourceError:
    """Map a lark error to a positioned error; ``line`` replaces lark's line when the
    text is one #define value (padded to its column)."""
    import lark

    def at(l, c, message):
        return OpenCLSourceError(path, line if line is not None else l, c, message)

    if isinstance(exc, lark.UnexpectedCharacters):
        pos = exc.pos_in_stream
        if text.startswith("/*", pos):
            return at(exc.line, exc.column, "unterminated comment ('/*' without '*/')")
        return at(exc.line, exc.column, f"unexpected character {text[pos]!r}")
    expected = _expected(getattr(exc, "expected", None) or ())
    l, c, got, start = unexpected_token(exc, text)
    if got != "end of input" and text.startswith("/*", start or 0):
        return at(l, c, "unterminated comment ('/*' without '*/')")
    return at(l, c, f"{expected}, got {got}" if expected else f"unexpected {got}")


def _position(text: str, offset: int) -> tuple[int, int]:
    return text.count("\n", 0, offset) + 1, offset - text.rfind("\n", 0, offset)


def _set_line(tree, line: int) -> None:
    from lark import Token

    for sub in tree.iter_subtrees_topdown():
        for child in sub.children:
            if isinstance(child, Token):
                child.line = child.end_line = line


def _define(body: str, line: int, col: int, path: str, macros: dict) -> None:
    """Record ``#define NAME value``; ``body`` follows 'define', ``col`` is its column."""
    import lark

    m = re.match(r"[ \t]+([A-Za-z_]\w*)", body)
    if not m:
        raise OpenCLSourceError(path, line, col, "#define needs a macro name")
    name, name_col, rest = m.group(1), col + m.start(1), body[m.end():]
    if rest.startswith("("):
        raise OpenCLSourceError(path, line, name_col,
                                f"function-like macros are not supported ({name}(...))")
    if rest and rest[0] not in " \t\r":
        raise OpenCLSourceError(path, line, name_col + len(name),
                                f"expected a space after the macro name {name}")
    if _KEYWORDS.fullmatch(name):
        raise OpenCLSourceError(path, line, name_col, f"cannot #define the keyword '{name}'")
    value_col = name_col + len(name)
    value = re.sub(r"/\*.*?\*/", lambda c: " " * len(c.group()), rest)
    tree = error = None
    if value.strip():
        padded = " " * (value_col - 1) + value
        try:
            tree = _parser().parse(padded, start="define_value").children[0]
            _set_line(tree, line)
        except lark.exceptions.UnexpectedInput as exc:
            error = _syntax_error(exc, padded, path, line)
            error = OpenCLSourceError(path, error.line, error.column,
                                      f"the value of macro {name} is not an expression "
                                      f"({error.message})")
    old = macros.get(name)
    if old is not None and old.value.strip() != value.strip():
        raise OpenCLSourceError(path, line, name_col,
                                f"macro {name} redefined (first defined on line {old.line})")
    macros[name] = Macro(name, value.strip(), line, name_col, tree, error)


def _preprocess(text: str, path: str) -> tuple[str, dict[str, Macro]]:
    macros: dict[str, Macro] = {}
    spans = []
    for m in _SCAN.finditer(text):
        if m.group("u") is not None:
            line, col = _position(text, m.start())
            raise OpenCLSourceError(path, line, col, "unterminated comment ('/*' without '*/')")
        if m.group("d") is None:
            continue
        start, end = m.span()
        hash_at = text.index("#", start)
        line, col = _position(text, hash_at)
        directive = text[hash_at + 1:end]
        if directive.rstrip().endswith("\\"):
            raise OpenCLSourceError(path, line, col,
                                    "line continuations ('\\' at the end of a line) "
                                    "are not supported")
        word = re.match(r"[ \t]*([A-Za-z_]\w*)?", directive)
        if word.group(1) is None:
            if directive.strip():
                raise OpenCLSourceError(path, line, col, "invalid preprocessor directive")
        elif word.group(1) == "define":
            _define(directive[word.end():], line, col + 1 + word.end(), path, macros)
        elif word.group(1) != "pragma":
            raise OpenCLSourceError(path, line, col, f"preprocessor directive "
                                                     f"'#{word.group(1)}' is not supported")
        spans.append((start, end))
    if not spans:
        return text, macros
    parts, last = [], 0
    for start, end in spans:
        parts += [text[last:start], " " * (end - start)]
        last = end
    parts.append(text[last:])
    return "".join(parts), macros


def _kernel_of(function, path: str):
    """Check a function definition is a ``__kernel void`` with a body; return its name."""
    from lark import Token

    specs, name, body = function.children[0], function.children[1], function.children[-1]
    words = [t for t in specs.children if isinstance(t, Token)]
    if not any(t.type == "QUAL" and t in ("__kernel", "kernel") for t in words):
        raise OpenCLSourceError(path, name.line, name.column,
                                f"only __kernel functions are supported ({name} is not one)")
    types = [t for t in words if t.type in ("TYPE_KW", "VECTOR_TYPE")]
    if [str(t) for t in types] != ["void"]:
        raise OpenCLSourceError(path, name.line, name.column,
                                f"a kernel must return void ({name})")
    if isinstance(body, Token):
        raise OpenCLSourceError(path, body.line, body.column,
                                f"kernel {name} has no body (declarations are not supported)")
    return str(name)


def parse_opencl(text: str, path: str = "<source>") -> OpenCLUnit:
    """Parse OpenCL C source text (the subset of docs/opencl.md) into a unit."""
    import lark

    if not isinstance(text, str):
        raise OpenCLSourceError(path, None, None, "OpenCL source must be text")
    if len(text) > MAX_SOURCE_CHARS:
        raise OpenCLSourceError(path, 1, 1, f"the source is too large ({len(text)} "
                                            f"characters; at most {MAX_SOURCE_CHARS})")
    clean, macros = _preprocess(text, path)
    try:
        tree = _parser().parse(clean, start="start")
    except lark.exceptions.UnexpectedInput as exc:
        raise _syntax_error(exc, clean, path) from None
    kernels, globals_ = {}, []
    for item in tree.children:
        if item.data == "function":
            name = _kernel_of(item, path)
            if name in kernels:
                tok = item.children[1]
                raise OpenCLSourceError(path, tok.line, tok.column,
                                        f"kernel {name} is defined twice")
            kernels[name] = item
        else:
            globals_.append(item)
    if not kernels:
        line, column = end_position(text)
        raise OpenCLSourceError(path, line, column, "no __kernel function in the source")
    return OpenCLUnit(path, text, tuple(kernels), {n: m.value for n, m in macros.items()},
                      macros, kernels, tuple(globals_))


def load_opencl(path) -> OpenCLUnit:
    """Read an OpenCL C file (UTF-8) and parse it."""
    name = str(path)
    check_regular_file(path, "OpenCL source")  # a FIFO would block the read
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise OpenCLSourceError(name, None, None,
                                f"cannot read the source: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = end_position(data[:exc.start].decode("utf-8", "replace"))
        raise OpenCLSourceError(name, line, column, "the file is not UTF-8 text") from None
    return parse_opencl(text, name)
