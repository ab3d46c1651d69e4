"""The OpenCL C front-end's preprocessor, run on the source before lark parses it.

Build options (``-D NAME``, ``-D NAME=VALUE``, ``-DNAME=VALUE``) define macros before
line 1; the other options are accepted and ignored. In the source: ``#define`` of
object-like macros (their values parsed as expressions, substituted where the name is
used), ``#undef``, conditional compilation (``#if``, ``#ifdef``, ``#ifndef``, ``#elif``,
``#else``, ``#endif``, nested; ``defined NAME`` and ``defined(NAME)``; integer constant
expressions where undefined names are 0, as in C), ``#error`` (an error carrying its
text), line continuations (backslash-newline) inside directives; ``#pragma``, ``#line``
and ``#warning`` are ignored; ``#include``, function-like macros and other directives are
errors. Directives and the lines of groups that are not compiled are blanked with
spaces (newlines kept), so lark's line and column numbers stay those of the original
text. Every failure is an :class:`OpenCLSourceError`: at a position in the source, or
without one for a malformed build option.

A macro is visible on the lines after its ``#define`` and up to its ``#undef``;
``history`` keeps, per name, the (line, Macro or None after an #undef) changes in
source order. Macros of build options have line 0 (visible everywhere), and their
values' tokens are placed on line 0 at their column in the options string.

Public names: preprocess, Macro.
"""

from __future__ import annotations

import bisect
import re
from typing import NamedTuple

from .errors import OpenCLSourceError
from .values import int_literal

_SCAN = re.compile(r"//[^\n]*|/\*.*?\*/|(?P<u>/\*)"
                   r"|(?P<d>^[ \t]*#(?:[^\n/\\]|\\\r?\n|\\|/(?![/*])|/\*[^\n]*?\*/)*)",
                   re.MULTILINE | re.DOTALL)
_CONTINUATION = re.compile(r"\\\r?\n")
_COMMENT = re.compile(r"/\*.*?\*/")
_NOT_NEWLINE = re.compile(r"[^\n]+")
_WORD = re.compile(r"#[ \t]*([A-Za-z_]\w*)?")
_NAME = re.compile(r"[ \t]*([A-Za-z_]\w*)")
_DEFINE_NAME = re.compile(r"[ \t]+([A-Za-z_]\w*)")
_KEYWORDS = re.compile(
    r"(?:unsigned|signed|char|uchar|short|ushort|int|uint|long|ulong|size_t|float|double|bool"
    r"|half|void|__kernel|kernel|__global|global|__local|local|__constant|constant|__private"
    r"|private|const|volatile|restrict|__restrict|if|else|for|return|while|do|switch|case"
    r"|default|goto|break|continue|__attribute__)")
_PP_TOKEN = re.compile(r"[ \t\r\f\v]*(?:(?P<num>\.?[0-9](?:[eEpP][+-]|[\w.])*)"
                       r"|(?P<name>[A-Za-z_]\w*)"
                       r"|(?P<op>&&|\|\||<<|>>|<=|>=|==|!=|[-+*/%<>&|^!~?:()])"
                       r"|(?P<bad>\S))")
_CONDITIONALS = ("if", "ifdef", "ifndef", "elif", "else", "endif")
_IGNORED = ("pragma", "line", "warning")
_BINARY = {"*": 10, "/": 10, "%": 10, "+": 9, "-": 9, "<<": 8, ">>": 8, "<": 7, ">": 7,
           "<=": 7, ">=": 7, "==": 6, "!=": 6, "&": 5, "^": 4, "|": 3, "&&": 2, "||": 1}
MAX_IF_TOKENS = 100_000   # tokens of one #if expression, after macro expansion
MAX_IF_DEPTH = 100        # nesting of parentheses and unary operators in one #if
_SHOWN = 200              # characters of an #error text or build option shown


class Macro(NamedTuple):
    """One ``#define`` (or ``-D`` build option, on line 0): ``value`` is its text;
    ``tree`` its parsed value (None when empty or unparsable; ``error`` then says why,
    raised where the macro is used)."""

    name: str
    value: str
    line: int
    column: int
    tree: object
    error: OpenCLSourceError | None


class _Text:
    """A directive's text with its line continuations removed, and where each of its
    characters is: ``segments`` holds (offset in ``text``, line, column) per physical
    line."""

    __slots__ = ("segments", "starts", "text")

    def __init__(self, text: str, segments: list):
        self.text, self.segments = text, segments
        self.starts = [s[0] for s in segments]

    @classmethod
    def of(cls, source: str, start: int, end: int, line: int, column: int) -> _Text:
        parts, segments, n, pos = [], [], 0, start
        for m in _CONTINUATION.finditer(source, start, end):
            parts.append(source[pos:m.start()])
            segments.append((n, line, column))
            n += m.start() - pos
            pos, line, column = m.end(), line + 1, 1
        parts.append(source[pos:end])
        segments.append((n, line, column))
        return cls("".join(parts), segments)

    def at(self, i: int) -> tuple[int, int]:
        offset, line, column = self.segments[bisect.bisect_right(self.starts, i) - 1]
        return line, column + i - offset


class _Group:
    """One #if ... #endif being read: ``outer`` whether the code around it is compiled,
    ``taken`` whether one of its branches was chosen, ``else_line`` where its #else is."""

    __slots__ = ("column", "else_line", "line", "outer", "taken", "word")

    def __init__(self, word, line, column, outer):
        self.word, self.line, self.column, self.outer = word, line, column, outer
        self.taken, self.else_line = False, None


class _Int(NamedTuple):
    value: int
    unsigned: bool


def _wrap(v: int, unsigned: bool) -> _Int:
    return _Int(v % (1 << 64) if unsigned else (v + (1 << 63)) % (1 << 64) - (1 << 63),
                unsigned)


def _blank_comments(text: str) -> str:
    return _COMMENT.sub(lambda c: " " * len(c.group()), text)


def _tokens(text: str) -> list[tuple[str, str, int]]:
    """The preprocessing tokens of an #if expression: (kind, text, offset)."""
    out, pos = [], 0
    while True:
        m = _PP_TOKEN.match(text, pos)
        if m is None:
            return out
        out.append((m.lastgroup, m.group(m.lastgroup), m.start(m.lastgroup)))
        pos = m.end()


def _shown(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SHOWN else text[:_SHOWN - 3] + "..."


class _Tok(NamedTuple):
    kind: str      # num, name, op, bad or end
    text: str
    line: int
    column: int
    hide: frozenset  # the macros whose expansion made it (not expanded again)
    origin: str | None


class _Condition:
    """Parse and evaluate one #if/#elif expression as C's preprocessor does: in
    intmax_t/uintmax_t (64 bits), macros expanded, ``defined`` read, other names 0."""

    def __init__(self, state: _State, word: str, d: _Text, i: int):
        self.state, self.word = state, word
        body = _blank_comments(d.text[i:])
        toks = [_Tok(k, t, *d.at(i + off), frozenset(), None) for k, t, off in _tokens(body)]
        self.stack = toks[::-1]
        self.end = _Tok("end", "", *d.at(len(d.text)), frozenset(), None)
        self.budget = MAX_IF_TOKENS - len(toks)
        self.depth = 0

    def error(self, tok: _Tok, message: str):
        if tok.origin is not None:
            message += f" (in the expansion of macro {tok.origin})"
        raise OpenCLSourceError(self.state.path, tok.line, tok.column, message)

    def next(self, expand: bool = True) -> _Tok:
        while self.stack:
            t = self.stack.pop()
            if expand and t.kind == "name" and t.text != "defined" and t.text not in t.hide:
                m = self.state.table.get(t.text)
                if m is not None:
                    body = self.state.tokens_of(m)
                    self.budget -= len(body)
                    if self.budget < 0:
                        self.error(t, f"the #{self.word} expression is too large after macro "
                                      f"expansion (more than {MAX_IF_TOKENS} tokens)")
                    hide = t.hide | {t.text}
                    self.stack.extend(_Tok(k, s, t.line, t.column, hide, t.text)
                                      for k, s in reversed(body))
                    continue
            return t
        return self.end

    def peek(self) -> _Tok:
        t = self.next()
        if t is not self.end:
            self.stack.append(t)
        return t

    def describe(self, t: _Tok) -> str:
        if t.kind == "end":
            return "the end of the line"
        return f'"{t.text}"' if "'" in t.text else f"'{_shown(t.text)}'"

    def evaluate(self) -> bool:
        first = self.peek()
        if first.kind == "end":
            self.error(first, f"#{self.word} with no expression")
        v = self.cond(True)
        t = self.next()
        if t.kind != "end":
            self.error(t, f"unexpected {self.describe(t)} in #{self.word} (expected an "
                          f"operator or the end of the line)")
        return v.value != 0

    def enter(self, t: _Tok):
        self.depth += 1
        if self.depth > MAX_IF_DEPTH:
            self.error(t, f"#{self.word} expression nested too deeply")

    def cond(self, live: bool) -> _Int:
        c = self.binary(1, live)
        t = self.peek()
        if t.kind != "op" or t.text != "?":
            return c
        self.next()
        self.enter(t)
        truth = c.value != 0
        a = self.cond(live and truth)
        colon = self.next()
        if colon.kind != "op" or colon.text != ":":
            self.error(colon, f"expected ':' in #{self.word}, got {self.describe(colon)}")
        b = self.cond(live and not truth)
        self.depth -= 1
        return _wrap((a if truth else b).value, a.unsigned or b.unsigned)

    def binary(self, lowest: int, live: bool) -> _Int:
        left = self.unary(live)
        while True:
            t = self.peek()
            prec = _BINARY.get(t.text) if t.kind == "op" else None
            if prec is None or prec < lowest:
                return left
            self.next()
            if t.text in ("&&", "||"):
                short = (left.value == 0) if t.text == "&&" else (left.value != 0)
                right = self.binary(prec + 1, live and not short)
                if t.text == "&&":
                    left = _Int(int(left.value != 0 and right.value != 0), False)
                else:
                    left = _Int(int(left.value != 0 or right.value != 0), False)
            else:
                left = self.apply(t, left, self.binary(prec + 1, live), live)

    def apply(self, t: _Tok, a: _Int, b: _Int, live: bool) -> _Int:
        op = t.text
        if op in ("<<", ">>"):
            if not 0 <= b.value < 64:
                if live:
                    self.error(t, f"shift count {b.value} out of range in #{self.word}")
                return _Int(0, a.unsigned)
            return _wrap(a.value << b.value if op == "<<" else a.value >> b.value, a.unsigned)
        unsigned = a.unsigned or b.unsigned
        x, y = _wrap(a.value, unsigned).value, _wrap(b.value, unsigned).value
        if op in ("<", ">", "<=", ">=", "==", "!="):
            return _Int(int({"<": x < y, ">": x > y, "<=": x <= y, ">=": x >= y,
                             "==": x == y, "!=": x != y}[op]), False)
        if op in ("/", "%"):
            if y == 0:
                if live:
                    self.error(t, f"division by zero in #{self.word}")
                return _Int(0, unsigned)
            q = abs(x) // abs(y) * (-1 if (x < 0) != (y < 0) else 1)  # C truncates
            return _wrap(q if op == "/" else x - y * q, unsigned)
        return _wrap({"*": x * y, "+": x + y, "-": x - y, "&": x & y, "^": x ^ y,
                      "|": x | y}[op], unsigned)

    def unary(self, live: bool) -> _Int:
        t = self.peek()
        if t.kind != "op" or t.text not in ("+", "-", "~", "!"):
            return self.primary(live)
        self.next()
        self.enter(t)
        v = self.unary(live)
        self.depth -= 1
        if t.text == "!":
            return _Int(int(v.value == 0), False)
        if t.text == "~":
            return _wrap(~v.value, v.unsigned)
        return _wrap(-v.value if t.text == "-" else v.value, v.unsigned)

    def primary(self, live: bool) -> _Int:
        t = self.next()
        if t.kind == "num":
            body = t.text.rstrip("uUlL")
            hexa = body[:2] in ("0x", "0X")
            if "." in body or re.search("[pP]" if hexa else "[eE]", body) or (
                    not hexa and body[-1:] in "fF" and body):
                self.error(t, f"floating-point constant '{_shown(t.text)}' in #{self.word}: "
                              f"only integer constant expressions are allowed")
            try:
                value, ctype = int_literal(t.text)
            except ValueError as exc:
                self.error(t, f"{exc} in #{self.word}")
            return _Int(value, ctype in ("uint", "ulong"))
        if t.kind == "name" and t.text == "defined":
            name = self.next(expand=False)
            paren = name.kind == "op" and name.text == "("
            if paren:
                name = self.next(expand=False)
            if name.kind != "name":
                self.error(name, f"'defined' needs a macro name in #{self.word}, got "
                                 f"{self.describe(name)}")
            if paren:
                close = self.next(expand=False)
                if close.kind != "op" or close.text != ")":
                    self.error(close, f"expected ')' after 'defined({name.text}' in "
                                      f"#{self.word}, got {self.describe(close)}")
            return _Int(int(name.text in self.state.table), False)
        if t.kind == "name":
            return _Int(0, False)  # a name that is not a macro is 0, as in C
        if t.kind == "op" and t.text == "(":
            self.enter(t)
            v = self.cond(live)
            close = self.next()
            if close.kind != "op" or close.text != ")":
                self.error(close, f"expected ')' in #{self.word}, got {self.describe(close)}")
            self.depth -= 1
            return v
        self.error(t, f"expected an expression in #{self.word}, got {self.describe(t)}")


class _State:
    """The macros in force while the source is read, and how each name changed."""

    def __init__(self, path: str, parse_value):
        self.path, self.parse_value = path, parse_value
        self.table: dict[str, Macro] = {}
        self.history: dict[str, list] = {}
        self.options: dict[str, str] = {}   # name -> the build option that defined it
        self.token_cache: dict[int, list] = {}

    def error(self, where: tuple[int, int], message: str):
        raise OpenCLSourceError(self.path, where[0], where[1], message)

    def tokens_of(self, m: Macro) -> list:
        toks = self.token_cache.get(id(m))
        if toks is None:
            toks = self.token_cache[id(m)] = [(k, t) for k, t, _ in _tokens(m.value)]
        return toks

    def macro(self, name: str, d: _Text, value_at: int, line: int, column: int,
              what: str) -> Macro:
        """A macro whose value is ``d.text[value_at:]``; its tokens placed where they
        are in the source (``what`` names the definition in an error)."""
        value = _blank_comments(d.text[value_at:])
        tree = error = None
        if value.strip():
            try:
                tree = self.parse_value(value)
            except OpenCLSourceError as exc:
                at = d.at(value_at + exc.column - 1)
                error = OpenCLSourceError(self.path, *(at if line else (None, None)),
                                          f"the value of macro {name}{what} is not an "
                                          f"expression ({exc.message})")
            else:
                _place(tree, d, value_at)
        return Macro(name, " ".join(value.split()), line, column, tree, error)

    def add(self, m: Macro, where: tuple[int, int] | None, option: str | None = None):
        old = self.table.get(m.name)
        if old is not None:
            if old.value == m.value:
                return  # an identical redefinition, allowed as in C
            first = (f"first defined on line {old.line}" if old.line
                     else f"defined by the build option '{self.options[m.name]}'")
            if where is None:
                raise OpenCLSourceError(self.path, None, None,
                                        f"the build option '{option}' redefines macro "
                                        f"{m.name} ({first})")
            self.error(where, f"macro {m.name} redefined ({first})")
        if option is not None:
            self.options[m.name] = option
        self.table[m.name] = m
        self.history.setdefault(m.name, []).append((m.line, m))

    def build_options(self, options: str):
        """Define the macros of ``-D`` build options (line 0)."""
        if not isinstance(options, str):
            raise OpenCLSourceError(self.path, None, None, "build options must be text")
        words = [(m.group(), m.start()) for m in re.finditer(r"\S+", options)]
        k = 0
        while k < len(words):
            word, at = words[k]
            k += 1
            if word in ("-I", "-x"):  # options whose argument is the next word
                k += 1
                continue
            if word.startswith("-U"):
                self.bad_option(word, "undefining macros is not supported")
            if not word.startswith("-"):
                self.bad_option(word, "not an option (options start with '-')")
            if not word.startswith("-D"):
                continue  # -cl-fast-relaxed-math, -cl-mad-enable, -Werror, -w, ...
            body, body_at = word[2:], at + 2
            if not body:
                if k == len(words) or words[k][0].startswith("-"):
                    self.bad_option(word, "-D needs a macro name (-D NAME or -D NAME=VALUE)")
                body, body_at = words[k]
                k += 1
            shown = options[at:body_at + len(body)]
            m = re.match(r"[A-Za-z_]\w*", body)
            if m is None:
                self.bad_option(shown, "a macro name starts with a letter or '_'")
            name, rest = m.group(), body[m.end():]
            if rest.startswith("("):
                self.bad_option(shown, f"function-like macros are not supported "
                                       f"({name}(...))")
            if rest and rest[0] != "=":
                self.bad_option(shown, "expected -D NAME or -D NAME=VALUE")
            if _KEYWORDS.fullmatch(name) or name == "defined":
                self.bad_option(shown, f"cannot define the keyword '{name}'")
            if rest:
                value_at = body_at + m.end() + 1
                d = _Text(rest[1:], [(0, 0, value_at + 1)])
            else:
                d = _Text("1", [(0, 0, body_at + 1)])
            macro = self.macro(name, d, 0, 0, body_at + 1, f" (build option '{_shown(shown)}')")
            self.add(macro, None, _shown(shown))

    def bad_option(self, shown: str, why: str):
        raise OpenCLSourceError(self.path, None, None,
                                f"malformed build option '{_shown(shown)}': {why}")

    def name_after(self, d: _Text, i: int, word: str) -> tuple[str, int]:
        m = _NAME.match(d.text, i)
        if m is None:
            rest = _blank_comments(d.text[i:])
            at = i + len(rest) - len(rest.lstrip())
            self.error(d.at(at), f"#{word} needs a macro name")
        if m.group(1) == "defined":
            self.error(d.at(m.start(1)), f"cannot #{word} 'defined'")
        return m.group(1), m.start(1)

    def define(self, d: _Text, i: int, line: int):
        m = _DEFINE_NAME.match(d.text, i)
        if m is None:
            self.error(d.at(i), "#define needs a macro name")
        name, name_at, value_at = m.group(1), m.start(1), m.end()
        rest = d.text[value_at:]
        if rest.startswith("("):
            self.error(d.at(name_at), f"function-like macros are not supported ({name}(...))")
        if rest and rest[0] not in " \t\r":
            self.error(d.at(value_at), f"expected a space after the macro name {name}")
        if _KEYWORDS.fullmatch(name) or name == "defined":
            self.error(d.at(name_at), f"cannot #define the keyword '{name}'")
        where = d.at(name_at)
        self.add(self.macro(name, d, value_at, line, where[1], ""), where)

    def undef(self, d: _Text, i: int, line: int):
        name, _ = self.name_after(d, i, "undef")
        if self.table.pop(name, None) is not None:
            self.history[name].append((line, None))

    def condition(self, word: str, d: _Text, i: int) -> bool:
        if word == "if" or word == "elif":
            return _Condition(self, word, d, i).evaluate()
        name, _ = self.name_after(d, i, word)
        return (name in self.table) == (word == "ifdef")


def _place(tree, d: _Text, base: int) -> None:
    """Put the tokens of a macro's parsed value where they are in the source."""
    from lark import Token, Tree

    if not isinstance(tree, Tree):
        return
    for sub in tree.iter_subtrees():
        for tok in sub.children:
            if isinstance(tok, Token) and tok.start_pos is not None:
                tok.line, tok.column = d.at(base + tok.start_pos)
                tok.end_line, tok.end_column = d.at(base + tok.start_pos + len(tok))


#: The macros an OpenCL 1.2 compiler predefines, as build options (the devices
#: kernelcast measures, NVIDIA's and PoCL's, support double precision)
PREDEFINED = ("-D __OPENCL_VERSION__=120 -D __OPENCL_C_VERSION__=120 -D CL_VERSION_1_0=100 "
              "-D CL_VERSION_1_1=110 -D CL_VERSION_1_2=120 -D __ENDIAN_LITTLE__=1 "
              "-D cl_khr_fp64=1")
PREDEFINED_NAMES = frozenset(re.findall(r"-D (\w+)=", PREDEFINED))


def preprocess(text: str, path: str, options: str, parse_value):
    """Run the preprocessor over ``text``: (the text to parse, the macros in force at
    its end, the history of each macro name). ``parse_value(value)`` parses a macro's
    value; it raises an OpenCLSourceError positioned in ``value`` (line 1)."""
    state = _State(path, parse_value)
    state.build_options(PREDEFINED)
    state.build_options(options)
    groups: list[_Group] = []
    blanks = []
    active, previous, line, counted = True, 0, 1, 0
    for m in _SCAN.finditer(text):
        if m.group("u") is not None:
            line += text.count("\n", counted, m.start())
            counted = m.start()
            raise OpenCLSourceError(path, line, m.start() - text.rfind("\n", 0, m.start()),
                                    "unterminated comment ('/*' without '*/')")
        if m.group("d") is None:
            continue
        start, end = m.span()
        hash_at = text.index("#", start)
        line += text.count("\n", counted, hash_at)
        counted = hash_at
        column = hash_at - text.rfind("\n", 0, hash_at)
        d = _Text.of(text, hash_at, end, line, column)
        if not active:
            blanks.append((previous, start))
        w = _WORD.match(d.text)
        word, i = w.group(1), w.end()
        if word in _CONDITIONALS:
            active = _conditional(state, groups, word, d, i, line, column, active)
        elif not active:
            pass  # a group that is not compiled: only its conditionals are read
        elif word is None:
            if _blank_comments(d.text[i:]).strip():
                state.error((line, column), "invalid preprocessor directive")
        elif word == "define":
            state.define(d, i, line)
        elif word == "undef":
            state.undef(d, i, line)
        elif word == "error":
            message = _shown(_blank_comments(d.text[i:]))
            state.error((line, column), f"#error {message}" if message else "#error")
        elif word not in _IGNORED:
            state.error((line, column), f"preprocessor directive '#{word}' is not supported")
        blanks.append((start, end))
        previous = end
    if groups:
        g = groups[-1]
        state.error((g.line, g.column), f"#{g.word} without #endif")
    history = {name: tuple(changes) for name, changes in state.history.items()}
    return _blank(text, blanks), state.table, history


def _conditional(state: _State, groups: list, word: str, d: _Text, i: int, line: int,
                 column: int, active: bool) -> bool:
    """Read one #if/#ifdef/#ifndef/#elif/#else/#endif; whether the lines after it are
    compiled."""
    if word in ("if", "ifdef", "ifndef"):
        group = _Group(word, line, column, active)
        groups.append(group)
        if active:
            group.taken = state.condition(word, d, i)
        return group.taken
    if not groups:
        state.error((line, column), f"#{word} without #if")
    group = groups[-1]
    if word == "endif":
        groups.pop()
        return group.outer
    if group.else_line is not None:
        state.error((line, column), f"#{word} after #else (line {group.else_line})")
    if word == "else":
        group.else_line = line
        chosen = group.outer and not group.taken
        group.taken = True
        return chosen
    if not group.outer or group.taken:
        return False  # an #elif after a chosen branch is not evaluated
    group.taken = state.condition(word, d, i)
    return group.taken


def _blank(text: str, spans) -> str:
    """``text`` with each span's characters other than newlines replaced by spaces."""
    if not spans:
        return text
    parts, last = [], 0
    for start, end in spans:
        if start < end:
            parts += [text[last:start],
                      _NOT_NEWLINE.sub(lambda m: " " * len(m.group()), text[start:end])]
            last = end
    parts.append(text[last:])
    return "".join(parts)
