"""The value an expression has for one work-item of one launch, where the walk knows it:
what decides its branches and loop trips.

The walk's abstract values (values.py) describe an expression across the work-items of
a warp, which classifies accesses; control flow needs the value at one work-item. A
scalar variable keeps that value (``Var.now``) beside its abstract one: set by
declarations and assignments whose right side is known here, forgotten (None) where the
abstract value is (a loop's changes, a load). Work-item functions answer from the
sampled work-item (``Walker.at``) and the launch's sizes; a scalar argument from the
values given for it. A variable remembers which work-item functions its value follows
from (``Var.now_from``), and those a decision follows from are recorded
(``Walker.consulted``), so the launch is sampled only along the axes that matter.

A value is a ``(number, normalized type)`` pair with C's conversions, wrap-around and
truncating division (values.py's folding); None where it depends on data.

Public names: Concrete, KNOWN_CALLS.
"""

from __future__ import annotations

import math

from lark import Tree

from .builtins import CONSTANTS, conversion_type
from .errors import OpenCLSourceError
from .values import CTYPES, INT_TYPES, FoldError, _fold, common_type, float_literal
from .values import int_literal, wrap

#: Calls evaluated here (others are data to a decision: their operands may be, and a
#: branch on sqrt(x) is rare enough to take from statistics).
KNOWN_CALLS = ("min", "max", "abs", "clamp", "mul24", "mad24", "get_global_id",
               "get_local_id", "get_group_id", "get_global_size", "get_local_size",
               "get_num_groups", "get_global_offset", "get_work_dim")


def convert_now(value, t: str):
    """*value* converted to the normalized type *t* as C converts it."""
    if t in INT_TYPES:
        if isinstance(value, float):
            if not math.isfinite(value):
                return None
            value = int(value)  # C truncates toward zero
        return wrap(int(value), t)
    return float(value)


class Concrete:
    """Evaluating an expression at the sampled work-item (a mixin of walker.Walker)."""

    def decide(self, node):
        """The value of a condition or loop bound at the sampled work-item (or None);
        the work-item functions it follows from count as consulted."""
        self.reading = set()
        v = self.value(node)
        self.consulted |= self.reading
        dims = {dim for _, dim in self.reading}
        if len(dims) > 1:  # a decision on positions along two axes: j <= i
            self.consulted |= {("related", dim) for dim in dims}
        return v

    def value(self, node):
        """(number, type) of *node* at the sampled work-item, or None; the work-item
        functions it reads (directly or through variables) are added to ``reading``."""
        if not isinstance(node, Tree):
            return None
        handler = getattr(self, "v_" + node.data, None)
        if handler is None:
            return None
        try:
            return handler(node)
        except (FoldError, OverflowError, ValueError, ZeroDivisionError):
            return None

    def v_int(self, node):
        v, t = int_literal(str(node.children[0]))
        return v, t

    def v_float(self, node):
        v, t = float_literal(str(node.children[0]))
        return v, t

    def v_name(self, node):
        tok = node.children[0]
        var = self.lookup(str(tok))
        if var is not None:
            if var.kind != "scalar":
                return None
            if var.folded and var.state.const is not None:
                return var.state.const, var.type
            self.reading |= var.now_from
            return None if var.now is None else (var.now, var.type)
        m = self.macro(tok)
        if m is not None:
            if m.tree is None or m.error is not None or m.name in self.expanding:
                return None
            self.expanding.append(m.name)
            try:
                return self.value(m.tree)
            finally:
                self.expanding.pop()
        if str(tok) in CONSTANTS:
            t, v = CONSTANTS[str(tok)]
            return v, t
        return None

    def v_binop(self, node):
        left, tok, right = node.children
        op = str(tok)
        a = self.value(left)
        if op in ("&&", "||") and a is not None:  # C's short circuit
            if bool(a[0]) == (op == "||"):
                return int(op == "||"), "int"
        b = self.value(right)
        if a is None or b is None:
            return None
        if op in ("&&", "||"):
            return _fold(op, a[0], b[0], "int"), "int"
        if op in ("<<", ">>"):
            if a[1] not in INT_TYPES or b[1] not in INT_TYPES:
                return None
            return _fold(op, a[0], b[0], a[1]), a[1]
        t = common_type(a[1], b[1])
        x, y = convert_now(a[0], t), convert_now(b[0], t)
        if x is None or y is None:
            return None
        if op in ("==", "!=", "<", ">", "<=", ">="):
            return _fold(op, x, y, t), "int"
        if op in ("%", "&", "|", "^") and t not in INT_TYPES:
            return None
        return _fold(op, x, y, t), t

    def v_unop(self, node):
        tok, operand = node.children
        a = self.value(operand)
        if a is None:
            return None
        op = str(tok)
        if op == "+":
            return a
        if op == "!":
            return int(not a[0]), "int"
        if op == "-":
            return (wrap(-a[0], a[1]) if a[1] in INT_TYPES else -a[0]), a[1]
        if op == "~" and a[1] in INT_TYPES:
            return wrap(~a[0], a[1]), a[1]
        return None

    def v_cast(self, node):
        _, type_name, operand = node.children
        a = self.value(operand)
        try:  # the walk's own reading of the type: `unsigned int`, a typedef's name
            ctype = self.specs(type_name.children[0])[0]
        except OpenCLSourceError:  # the walk reports it where it evaluates the cast
            return None
        if a is None or ctype not in CTYPES or len(type_name.children) > 1:
            return None
        t = CTYPES[ctype][0]
        v = convert_now(a[0], t)
        if v is None:
            return None
        if t in INT_TYPES:
            lo, hi = CTYPES[ctype][2], CTYPES[ctype][3]
            v = lo + (v - lo) % (hi - lo + 1)  # a uchar holds 0..255
        return v, t

    def v_cond(self, node):
        cond, _, a, b = node.children
        c = self.value(cond)
        if c is None:
            return None
        return self.value(a if c[0] else b)

    def v_call(self, node):
        name = str(node.children[0])
        args = node.children[1].children if node.children[1] is not None else []
        target = conversion_type(name)
        if target is not None and len(args) == 1:
            a = self.value(args[0])
            v = None if a is None else convert_now(a[0], CTYPES[target][0])
            return None if v is None else (v, CTYPES[target][0])
        if name not in KNOWN_CALLS:
            return None
        if name.startswith("get_"):
            return self.work_item_now(name, args)
        vals = [self.value(a) for a in args]
        if any(v is None for v in vals):
            return None
        t = vals[0][1]
        for v in vals[1:]:
            t = common_type(t, v[1])
        xs = [convert_now(v[0], t) for v in vals]
        if name == "min":
            return min(xs), t
        if name == "max":
            return max(xs), t
        if name == "clamp":
            return min(max(xs[0], xs[1]), xs[2]), t
        if name == "abs":
            return abs(xs[0]), {"int": "uint", "long": "ulong"}.get(t, t)
        if name == "mul24":
            return _fold("*", xs[0], xs[1], t), t
        return _fold("+", _fold("*", xs[0], xs[1], t), xs[2], t), t  # mad24

    def work_item_now(self, name: str, args):
        if name == "get_work_dim":
            return (len(self.launch[0]), "uint") if self.launch is not None else None
        if len(args) != 1:
            return None
        d = self.value(args[0])
        if d is None or d[0] not in (0, 1, 2):
            return None
        dim = d[0]
        if self.launch is None:
            self.needed.add(name)
            return None
        grid, group = self.launch
        size = grid[dim] if dim < len(grid) else 1
        local = group[dim] if dim < len(group) else 1
        if name == "get_global_size":
            return size, "ulong"
        if name == "get_local_size":
            return local, "ulong"
        if name == "get_num_groups":
            return -(-size // local), "ulong"
        if name == "get_global_offset":
            return 0, "ulong"
        self.reading.add((name, dim))
        gid = self.at[dim] if dim < len(self.at) else 0
        if name == "get_global_id":
            return gid, "ulong"
        if name == "get_local_id":
            return gid % local, "ulong"
        return gid // local, "ulong"  # get_group_id
