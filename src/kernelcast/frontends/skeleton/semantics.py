"""From lark's parse tree to the IR (:mod:`.ir`), checking every rule on the way.

Names resolve in this order: loop indices and variables of the enclosing blocks, then
macros; arrays must be declared before use and are referenced with one index per
dimension. Sizes, counts and hints must be constants (literals and macros); indices and
loop bounds are affine in loop indices, or read from data (Indirect). Integers, array
bytes and how often a statement runs over all tasks stay within INT_MAX; a parallel_for
has at most MAX_PARALLEL_DIMS dimensions and MAX_STATEMENTS statements. Every violation
raises SkeletonError at the offending token.

Public names: build.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from lark import Token, Tree

from .errors import SkeletonError
from .ir import (
    ELEMENT_BYTES,
    INT_MAX,
    MAX_PARALLEL_DIMS,
    MAX_STATEMENTS,
    Access,
    Affine,
    Array,
    Assign,
    Comp,
    Indirect,
    Loop,
    Macro,
    ParallelFor,
    Skeleton,
    iter_statements,
)

ARRAY_HINT_KEYS = ("sample",)


def _pos(node) -> tuple[int, int]:
    if isinstance(node, Token):
        return node.line, node.column
    meta = node.meta
    return getattr(meta, "line", 1), getattr(meta, "column", 1)


def _affine(terms: dict, const: int) -> Affine:
    return Affine(tuple(sorted((n, c) for n, c in terms.items() if c)), const)


def _add(a: Affine, b: Affine, sign: int = 1) -> Affine:
    terms = dict(a.terms)
    for n, c in b.terms:
        terms[n] = terms.get(n, 0) + sign * c
    return _affine(terms, a.const + sign * b.const)


def _scale(a, k: int):
    if isinstance(a, Indirect):
        if k == 0:
            return Affine()
        return Indirect(a.array, a.indices, a.scale * k, _scale(a.offset, k), a.via)
    return _affine({n: c * k for n, c in a.terms}, a.const * k)


def _fits(value) -> bool:
    """Whether every number of an Affine or Indirect is within ±INT_MAX."""
    if isinstance(value, Indirect):
        return abs(value.scale) <= INT_MAX and _fits(value.offset)
    return abs(value.const) <= INT_MAX and all(abs(c) <= INT_MAX for _, c in value.terms)


def _span(value: Affine, ranges: Mapping[str, tuple[int, int]]) -> tuple[int, int]:
    """The least and greatest value of *value* over the index *ranges* (inclusive)."""
    lo = hi = value.const
    for name, c in value.terms:
        a, b = ranges.get(name, (0, 0))
        lo, hi = lo + min(c * a, c * b), hi + max(c * a, c * b)
    return lo, hi


def _cdiv(a: int, b: int) -> int:
    """C's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


class _Builder:
    def __init__(self, path: str, defines: Mapping[str, int] | None, end: tuple[int, int]):
        self.path = path
        self.end = end
        self.overrides = dict(defines or {})
        self.macros: dict[str, Macro] = {}
        self.arrays: dict[str, Array] = {}
        self.used_macro = False
        # within a kernel: each enclosing index's (least, greatest) value, and how often
        # the current block runs over all tasks
        self.ranges: dict[str, tuple[int, int]] = {}
        self.runs = 1

    def error(self, node, message: str) -> SkeletonError:
        line, column = _pos(node) if node is not None else self.end
        return SkeletonError(self.path, line, column, message)

    # ----------------------------------------------------------------- top level
    def build(self, tree: Tree) -> Skeleton:
        kernels = []
        for item in tree.children:
            if item.data == "define":
                self.define(item)
            elif item.data == "decl":
                self.decl(item)
            else:
                kernels.append(self.parallel_for(item))
        for name, value in self.overrides.items():
            if name not in self.macros:
                self.macros[name] = Macro(name, value, None)
        if not kernels:
            raise self.error(None, "the skeleton has no parallel_for (nothing to project)")
        return Skeleton(self.path, tuple(self.macros.values()), tuple(self.arrays.values()),
                        tuple(kernels))

    def check_new_name(self, tok: Token, scope: dict | None = None, what: str = "name"):
        name = str(tok)
        if name in self.macros:
            raise self.error(tok, f"duplicate declaration: '{name}' is already a macro "
                                  f"(line {self.macros[name].line})")
        if name in self.arrays:
            raise self.error(tok, f"duplicate declaration: '{name}' is already an array "
                                  f"(line {self.arrays[name].line})")
        if scope is not None and name in scope:
            kind = "a loop index" if scope[name] is None else "a variable"
            raise self.error(tok, f"duplicate declaration: '{name}' is already {kind}")

    def define(self, item: Tree):
        _, name, expr = item.children
        self.check_new_name(name)
        value = self.constant(expr, "macro value")
        if str(name) in self.overrides:
            value = self.overrides[str(name)]
        self.macros[str(name)] = Macro(str(name), value, name.line)

    def decl(self, item: Tree):
        dtype, name, *rest = item.children
        if str(dtype) not in ELEMENT_BYTES:
            raise self.error(dtype, f"unknown type '{dtype}' (known: {', '.join(ELEMENT_BYTES)})")
        self.check_new_name(name)
        dims, sample = [], None
        for child in rest:
            if child.data == "dim":
                size = self.constant(child.children[0], f"dimension of '{name}'")
                if size < 1:
                    raise self.error(child.children[0],
                                     f"dimension of '{name}' must be at least 1, got {size}")
                dims.append(size)
                nbytes = math.prod(dims) * ELEMENT_BYTES[str(dtype)]
                if nbytes > INT_MAX:
                    raise self.error(child.children[0],
                                     f"array '{name}' would hold {nbytes:.3g} bytes, more "
                                     f"than {INT_MAX} (2^63 - 1), the most 64-bit address "
                                     f"arithmetic reaches")
            else:
                seen = set()
                for kv in child.children[1:]:
                    key, value = kv.children
                    if str(key) not in ARRAY_HINT_KEYS:
                        raise self.error(key, f"unknown array hint '{key}' (known: sample)")
                    if str(key) in seen:
                        raise self.error(key, f"duplicate array hint '{key}'")
                    seen.add(str(key))
                    sample = str(value)[1:-1]
                    if not sample.strip():
                        raise self.error(value, "empty sample file name")
        self.arrays[str(name)] = Array(str(name), str(dtype), tuple(dims), sample,
                                       name.line, name.column)

    def parallel_for(self, item: Tree) -> ParallelFor:
        kw, *rest = item.children
        block = rest[-1]
        dims_t = [c for c in rest[:-1] if isinstance(c, Tree)]
        names = [c for c in rest[:-1] if isinstance(c, Token)]
        dims = []
        for d in dims_t:
            size = self.constant(d, "parallel_for dimension")
            if size < 1:
                raise self.error(d, f"parallel_for dimension must be at least 1, got {size}")
            dims.append(size)
        if len(dims) != len(names):
            raise self.error(names[0] if names else kw,
                             f"parallel_for has {len(dims)} dimension(s) but "
                             f"{len(names)} index name(s)")
        if len(dims) > MAX_PARALLEL_DIMS:
            raise self.error(kw, f"parallel_for has {len(dims)} dimensions; at most "
                                 f"{MAX_PARALLEL_DIMS} map onto a GPU's thread blocks "
                                 f"(x, y, z)")
        scope: dict = {}
        for n in names:
            self.check_new_name(n, scope)
            scope[str(n)] = None
        self.ranges = {str(n): (0, d - 1) for n, d in zip(names, dims)}
        self.runs = self.check_runs(kw, math.prod(dims), "parallel_for", "tasks")
        body = self.block(block, scope)
        statements = [s for s, _ in iter_statements(body)]
        if len(statements) > MAX_STATEMENTS:
            extra = statements[MAX_STATEMENTS]
            raise SkeletonError(self.path, extra.line, extra.column,
                                f"the parallel_for of line {kw.line} has "
                                f"{len(statements)} statements, more than "
                                f"{MAX_STATEMENTS} (ld, st, comp, assignments and loops); "
                                f"put repeated work in a loop or a larger comp")
        return ParallelFor(tuple(dims), tuple(map(str, names)), body, kw.line, kw.column)

    # ---------------------------------------------------------------- statements
    def block(self, block: Tree, scope: dict) -> tuple:
        scope = dict(scope)
        return tuple(self.statement(s, scope) for s in block.children)

    def statement(self, stmt: Tree, scope: dict):
        kind = stmt.data
        if kind == "access":
            kw, ref = stmt.children
            array, indices = self.reference(ref, scope)
            return Access(str(kw), array, indices, kw.line, kw.column)
        if kind == "comp":
            kw, expr = stmt.children
            count = self.constant(expr, "comp count", scope)
            if count < 0:
                raise self.error(expr, f"comp count must not be negative, got {count}")
            self.check_runs(kw, self.runs * count, f"comp {count}", "instructions")
            return Comp(count, kw.line, kw.column)
        if kind == "assign":
            name, expr = stmt.children
            if scope.get(str(name), 0) is None:
                raise self.error(name, f"cannot assign to loop index '{name}'")
            if str(name) not in scope:
                self.check_new_name(name, scope)
            value = self.index(expr, scope)
            scope[str(name)] = (Indirect(value.array, value.indices, value.scale, value.offset,
                                         str(name)) if isinstance(value, Indirect) else value)
            return Assign(str(name), value, name.line, name.column)
        return self.loop(stmt, scope)

    def loop(self, stmt: Tree, scope: dict) -> Loop:
        kw, index, lo_t, hi_t, *rest = stmt.children
        block = rest[-1]
        hint_t = rest[0] if len(rest) == 2 else None
        self.check_new_name(index, scope)
        self.used_macro = False
        lower, upper = self.index(lo_t, scope), self.index(hi_t, scope)
        if isinstance(lower, Indirect) or isinstance(upper, Indirect):
            bound_kind = "data_dependent"
        elif lower.terms or upper.terms:
            bound_kind = "affine"
        else:
            bound_kind = "macro" if self.used_macro else "constant"
        hint = None
        if hint_t is not None:
            hint_expr = hint_t.children[1]
            hint = self.constant(hint_expr, "loop hint", scope)
            if hint < 1:
                raise self.error(hint_expr, f"loop hint must be at least 1, got {hint}")
            if bound_kind in ("constant", "macro"):
                raise self.error(hint_t.children[0],
                                 f"{kw} loop '{index}' has a known trip count "
                                 f"({lower}:{upper}); a hint is for data-dependent bounds")
        elif bound_kind == "data_dependent":
            raise self.error(kw, f"{kw} loop '{index}' has a data-dependent bound "
                                 f"({lower}:{upper}) and no hint; add (hint:N), the "
                                 f"average trip count")
        if bound_kind == "data_dependent":  # as the projection takes it: 0 .. hint - 1
            trip, values = hint, (0, hint - 1)
        else:  # the most iterations any task makes
            trip = max(0, _span(_add(upper, lower, -1), self.ranges)[1])
            values = (_span(lower, self.ranges)[0], _span(upper, self.ranges)[1] - 1)
        outer = self.ranges, self.runs
        self.runs = self.check_runs(kw, self.runs * trip, f"{kw} loop '{index}'",
                                    "iterations")
        self.ranges = {**self.ranges, str(index): values}
        inner = dict(scope)
        inner[str(index)] = None
        body = self.block(block, inner)
        self.ranges, self.runs = outer
        return Loop(str(kw), str(index), lower, upper, bound_kind, hint, body,
                    kw.line, kw.column)

    def check_runs(self, node, runs: int, what: str, unit: str) -> int:
        """*runs* (how often *what* runs over all tasks), refused beyond INT_MAX."""
        if runs > INT_MAX:
            over = "" if unit == "tasks" else " over all tasks"
            raise self.error(node, f"{what} amounts to {runs:.3g} {unit}{over}, more than "
                                   f"{INT_MAX} (2^63 - 1): a GPU's 64-bit counters would "
                                   f"overflow, and a whole GPU would need days")
        return runs

    # --------------------------------------------------------------- expressions
    def reference(self, ref: Tree, scope: dict | None):
        name, *exprs = ref.children
        array = self.arrays.get(str(name))
        if array is None:
            if str(name) in self.macros or (scope and str(name) in scope):
                raise self.error(name, f"'{name}' is not an array")
            raise self.error(name, f"undeclared array '{name}'")
        if len(exprs) != array.rank:
            raise self.error(name, f"index rank mismatch: array '{name}' has {array.rank} "
                                   f"dimension(s) but {len(exprs)} index(es) are given")
        indices = []
        for k, e in enumerate(exprs):
            value = self.index(e, scope)
            if isinstance(value, Affine) and value.is_constant and not (
                    0 <= value.const < array.dims[k]):
                raise self.error(e, f"index {value.const} is out of bounds for dimension "
                                    f"{k} of '{name}' (size {array.dims[k]})")
            indices.append(value)
        return str(name), tuple(indices)

    def constant(self, expr, what: str, scope: dict | None = None) -> int:
        """Evaluate a required constant (literals and macros); inside a kernel ``scope``
        lets the message say when a loop index or data value was used instead."""
        value = self.index(expr, scope, what)
        if not (isinstance(value, Affine) and value.is_constant):
            raise self.error(expr, f"{what} must be a constant (literals and macros), "
                                   f"got {value}")
        return value.const

    def index(self, expr, scope: dict | None, what: str | None = None):
        """Evaluate an expression to Affine or Indirect; scope None means a constant is
        required (``what`` names it in messages)."""
        if isinstance(expr, Token):  # never produced by the grammar; defensive
            raise self.error(expr, f"unexpected '{expr}'")
        kind = expr.data
        if kind == "int":
            return Affine((), self.literal(expr.children[0]))
        if kind == "name":
            tok = expr.children[0]
            name = str(tok)
            if scope is not None and name in scope:
                return Affine(((name, 1),), 0) if scope[name] is None else scope[name]
            if name in self.macros or name in self.overrides:
                self.used_macro = True
                value = (self.overrides[name] if name in self.overrides
                         else self.macros[name].value)
                return Affine((), value)
            if name in self.arrays:
                raise self.error(tok, f"array '{name}' is used without an index")
            if scope is None:
                raise self.error(tok, f"undefined macro '{name}' in {what}")
            raise self.error(tok, f"undefined name '{name}' (not a loop index, variable "
                                  f"or macro)")
        if kind == "ref":
            if scope is None:
                raise self.error(expr, f"{what} must be a constant, not an array element")
            array, indices = self.reference(expr, scope)
            return Indirect(array, indices)
        if kind == "neg":
            return _scale(self.index(expr.children[0], scope, what), -1)
        if kind == "binop":
            left_t, op, right_t = expr.children
            left = self.index(left_t, scope, what)
            right = self.index(right_t, scope, what)
            value = self.binop(left, op, right)
            if not _fits(value):
                raise self.error(op, f"{left} {op} {right} overflows 64-bit integers "
                                     f"(magnitude at most {INT_MAX})")
            return value
        raise self.error(expr, f"unexpected expression '{kind}'")

    def literal(self, tok: Token) -> int:
        """An integer literal, refused beyond INT_MAX before Python converts it."""
        digits = str(tok).lstrip("0") or "0"
        if len(digits) > len(str(INT_MAX)) or int(digits) > INT_MAX:
            shown = digits if len(digits) <= 24 else f"{digits[:12]}... ({len(digits)} digits)"
            raise self.error(tok, f"integer {shown} is too large: skeleton integers are "
                                  f"64-bit, at most {INT_MAX}")
        return int(digits)

    def binop(self, left, op: Token, right):
        """``left op right`` for Affine or Indirect operands."""
        if op in ("+", "-"):
            sign = 1 if op == "+" else -1
            if isinstance(left, Affine) and isinstance(right, Affine):
                return _add(left, right, sign)
            if isinstance(left, Indirect) and isinstance(right, Affine):
                return Indirect(left.array, left.indices, left.scale,
                                _add(left.offset, right, sign), left.via)
            if isinstance(left, Affine) and isinstance(right, Indirect):
                r = _scale(right, sign)
                return Indirect(r.array, r.indices, r.scale, _add(r.offset, left), r.via)
            raise self.error(op, "an index may read at most one data value "
                                 f"({left} {op} {right})")
        if op == "*":
            if isinstance(left, Affine) and left.is_constant:
                return _scale(right, left.const)
            if isinstance(right, Affine) and right.is_constant:
                return _scale(left, right.const)
            raise self.error(op, f"index is not affine: {left} * {right} (one factor "
                                 f"must be a constant)")
        # "/"
        if not (isinstance(left, Affine) and left.is_constant
                and isinstance(right, Affine) and right.is_constant):
            raise self.error(op, f"index is not affine: {left} / {right} (only "
                                 f"constants may be divided)")
        if right.const == 0:
            raise self.error(op, "division by zero")
        return Affine((), _cdiv(left.const, right.const))


def build(tree: Tree, path: str, defines: Mapping[str, int] | None,
          end: tuple[int, int]) -> Skeleton:
    """Check the parse tree and return the IR; ``end`` is the end-of-text position."""
    return _Builder(path, defines, end).build(tree)
