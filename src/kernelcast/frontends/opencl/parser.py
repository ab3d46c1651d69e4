"""Reading OpenCL C source: the preprocessor (preprocessor.py), lark (LALR) parsing, and
the unit's kernels.

preprocessor.py runs first, with the build options: it records macros (``-D`` options
and ``#define``, ``#undef``), keeps the groups that ``#if``/``#ifdef``/... select and
blanks directives and the groups not compiled with spaces, so lark's line and column
numbers stay those of the original text. Every failure is an :class:`OpenCLSourceError`
at a position.

Public names: parse_opencl, load_opencl, OpenCLUnit, Macro, MAX_SOURCE_CHARS.
"""

from __future__ import annotations

import contextvars
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

from kernelcast.frontends.files import check_regular_file
from kernelcast.frontends.positioned import (
    describe_terminal,
    end_position,
    unexpected_token,
)

from .errors import OpenCLSourceError
from .preprocessor import PREDEFINED_NAMES, Macro, preprocess

_GRAMMAR = Path(__file__).with_name("grammar.lark")
MAX_SOURCE_CHARS = 250_000
_NAMED = {"NAME": "a name", "INT": "an integer", "FLOAT": "a number", "TYPE_KW": "a type",
          "QUAL": "a qualifier", "VECTOR_TYPE": "a type", "$END": "end of input"}


@dataclass(frozen=True)
class OpenCLUnit:
    """A parsed source file: its kernels (in source order) and macros. Counting happens
    in :func:`kernelcast.frontends.opencl.count_kernel`. ``defines`` and ``macros`` are
    the macros in force at the end of the source (build options' included);
    ``macro_history`` maps each macro name to its changes in source order, (line, Macro)
    for a definition and (line, None) for an ``#undef``; ``options`` are the build
    options it was read with; ``typedefs`` maps each top-level typedef's name to the
    type-word tokens it stands for."""

    path: str
    text: str
    kernels: tuple[str, ...]
    defines: dict[str, str]
    macros: dict[str, Macro] = field(repr=False, compare=False)
    kernel_trees: dict = field(repr=False, compare=False)
    globals: tuple = field(repr=False, compare=False)
    options: str = ""
    macro_history: dict = field(default_factory=dict, repr=False, compare=False)
    typedefs: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        if not self.macro_history and self.macros:  # a unit made without one
            object.__setattr__(self, "macro_history",
                               {n: ((m.line, m),) for n, m in self.macros.items()})


#: the names a source's top-level typedefs declare, while it is parsed: the lexer
#: reads them as type words
_TYPE_NAMES: contextvars.ContextVar = contextvars.ContextVar("type_names", default=frozenset())
_TYPEDEF = re.compile(r"\btypedef\b[^;{}()]*?\b([A-Za-z_]\w*)\s*;")


def _type_name(tok):
    """A lexer callback: a typedef's name is a type word."""
    if tok.value in _TYPE_NAMES.get():
        return tok.update(type="TYPE_KW")
    return tok


@functools.lru_cache(maxsize=1)
def _parser():
    import lark

    return lark.Lark(_GRAMMAR.read_text(encoding="utf-8"), parser="lalr", lexer="basic",
                     start=["start", "define_value"], maybe_placeholders=True,
                     propagate_positions=False, lexer_callbacks={"NAME": _type_name})


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


def _syntax_error(exc, text: str, path: str) -> OpenCLSourceError:
    """Map a lark error to a positioned error."""
    import lark

    def at(l, c, message):
        return OpenCLSourceError(path, l, c, message)

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


def _parse_value(value: str):
    """A macro's value parsed as an expression; an error is positioned in ``value``."""
    import lark

    try:
        return _parser().parse(value, start="define_value").children[0]
    except lark.exceptions.UnexpectedInput as exc:
        raise _syntax_error(exc, value, "<value>") from None


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


def parse_opencl(text: str, path: str = "<source>", options: str = "") -> OpenCLUnit:
    """Parse OpenCL C source text (the subset of docs/opencl.md) into a unit; ``options``
    is an OpenCL build-options string whose ``-D NAME[=VALUE]`` define macros."""
    import lark

    if not isinstance(text, str):
        raise OpenCLSourceError(path, None, None, "OpenCL source must be text")
    if len(text) > MAX_SOURCE_CHARS:
        raise OpenCLSourceError(path, 1, 1, f"the source is too large ({len(text)} "
                                            f"characters; at most {MAX_SOURCE_CHARS})")
    if isinstance(options, str) and len(options) > MAX_SOURCE_CHARS:
        raise OpenCLSourceError(path, None, None, f"the build options are too long "
                                                  f"({len(options)} characters)")
    clean, macros, history = preprocess(text, path, options, _parse_value)
    names = _TYPE_NAMES.set(frozenset(_TYPEDEF.findall(clean)))
    try:
        tree = _parser().parse(clean, start="start")
    except lark.exceptions.UnexpectedInput as exc:
        raise _syntax_error(exc, clean, path) from None
    finally:
        _TYPE_NAMES.reset(names)
    kernels, globals_, typedefs = {}, [], {}
    for item in tree.children:
        if item.data == "typedef_decl":
            _typedef(item, typedefs, path)
        elif item.data == "function":
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
    return OpenCLUnit(path, text, tuple(kernels),
                      {n: m.value for n, m in macros.items()
                       if not (n in PREDEFINED_NAMES and m.line == 0)},
                      macros, kernels, tuple(globals_), options, history, typedefs)


def _typedef(item, typedefs: dict, path: str) -> None:
    """Record ``typedef TYPE NAME;``: NAME -> the type words and qualifiers it stands
    for (another typedef's name expanded)."""
    from lark import Tree

    specs = item.children[1].children
    words = [t for t in specs if not isinstance(t, Tree)]
    if not words or words[-1].type != "TYPE_KW" or len(words) < 2:
        tok = words[-1] if words else item.children[0]
        raise OpenCLSourceError(path, tok.line, tok.column,
                                "a typedef names a type: typedef TYPE NAME;")
    name, meaning = words[-1], []
    for t in words[:-1]:
        if t.type == "QUAL" and t.value not in ("const", "volatile"):
            raise OpenCLSourceError(path, t.line, t.column,
                                    f"a typedef of '{t.value}' is not supported")
        meaning += typedefs.get(t.value, [t])
    if any(t.type == "VECTOR_TYPE" for t in meaning):
        raise OpenCLSourceError(path, name.line, name.column, "vector types are not supported")
    known = typedefs.get(name.value)
    if known is not None and [t.value for t in known] != [t.value for t in meaning]:
        raise OpenCLSourceError(path, name.line, name.column,
                                f"typedef '{name.value}' is defined twice, differently")
    typedefs[name.value] = meaning


def load_opencl(path, options: str = "") -> OpenCLUnit:
    """Read an OpenCL C file (UTF-8) and parse it with the build ``options``."""
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
    return parse_opencl(text, name, options)
