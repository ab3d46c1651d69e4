"""Expressions: types, constant folding, counting, and array accesses with their class.

A mixin of the kernel walker (walker.py): each ``e_*`` method evaluates one kind of
parse-tree node to an abstract value (values.py), counting what it executes; ``access``
counts one array access and classifies it (docs/opencl.md, "Access classes").

Public names: Expressions, static_class, INTERVAL_ELEMENTS, ID_MAX.
"""

from __future__ import annotations

from lark import Token, Tree

from .builtins import CONSTANTS, MATH, WORK_ITEM, conversion_type
from .results import TYPE_BYTES, Access
from .values import (
    CTYPES,
    INT_TYPES,
    FoldError,
    Val,
    binary,
    call_val,
    common_type,
    const_val,
    convert,
    float_literal,
    int_literal,
    load_val,
    select,
    unary,
)

INTERVAL_ELEMENTS = 1024  # an index whose values span fewer elements is "interval"
ID_MAX = 2**30 - 1        # assumed bound on a work-item id in one dimension
_OP_KIND = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "mod", "&": "and", "|": "or",
            "^": "xor", "<<": "shl", ">>": "shr", "<": "cmp", ">": "cmp", "<=": "cmp",
            ">=": "cmp", "==": "cmp", "!=": "cmp"}
_EMPTY = frozenset()


def static_class(idx: Val) -> str:
    """The class of an index that is not identical to an earlier one (in this order)."""
    if not idx.dep:
        return "constant"
    if idx.width is not None and idx.width < INTERVAL_ELEMENTS:
        return "interval"
    if idx.coef in (1, -1):
        return "coalesced"
    return "complex"


class Expressions:
    """Evaluating expressions and accessing arrays (a mixin of walker.Walker)."""

    def eval(self, node) -> Val:
        self.enter(node, "expression")
        try:
            handler = getattr(self, "e_" + node.data, None)
            if handler is None:
                self.error(node, "a brace initializer is not an expression")
            return handler(node)
        finally:
            self.depth -= 1

    def e_int(self, node):
        try:
            value, t = int_literal(str(node.children[0]))
        except ValueError as exc:
            self.error(node, str(exc))
        return const_val(self.keys, t, value)

    def e_float(self, node):
        value, t = float_literal(str(node.children[0]))
        return const_val(self.keys, t, value)

    def e_name(self, node):
        tok = node.children[0]
        var = self.lookup(str(tok))
        if var is not None:
            if var.kind != "scalar":
                self.error(tok, f"'{tok}' is an array: index it ({tok}[i])")
            if var.folded:
                return var.state
            self.private("read")
            st = var.state
            return st if st.const is None else st.with_(const=None)
        m = self.macro(tok)
        if m is not None:
            return self.expand(m, tok)
        if str(tok) in CONSTANTS:
            t, value = CONSTANTS[str(tok)]
            return const_val(self.keys, t, value)
        self.error(tok, f"undeclared name '{tok}'")

    def expand(self, m, tok) -> Val:
        if m.name in self.expanding:
            self.error(tok, f"macro {m.name} refers to itself")
        if m.error is not None:
            raise m.error
        if m.tree is None:
            self.error(tok, f"macro {m.name} has no value")
        site = self.site_line if self.site_line is not None else tok.line
        cached = self.macro_consts.get((m.name, site))
        if cached is not None:
            return cached
        outer, self.site_line = self.site_line, site
        self.expanding.append(m.name)
        try:
            v = self.eval(m.tree)
        finally:
            self.expanding.pop()
            self.site_line = outer
        if v.const is not None:
            self.macro_consts[(m.name, site)] = v
        return v

    def arith(self, op: str, a: Val, b: Val, tok) -> Val:
        """``a op b`` with C's conversions, counted unless it folds."""
        try:
            if op in ("&&", "||"):
                v = binary(self.keys, op, a, b, "int")
                if v.const is None:
                    self.count("logic:int")
                return v
            if op in ("%", "&", "|", "^", "<<", ">>") and (
                    a.type not in INT_TYPES or b.type not in INT_TYPES):
                self.error(tok, f"operator '{op}' needs integer operands")
            if op in ("<<", ">>"):
                t = a.type
                v = binary(self.keys, op, a, b, t)
            else:
                t = common_type(a.type, b.type)
                a, b = self.conv(a, t, tok), self.conv(b, t, tok)
                v = binary(self.keys, op, a, b, "int" if _OP_KIND[op] == "cmp" else t)
        except FoldError as exc:
            self.error(tok, str(exc))
        if v.const is None:
            self.count(f"{_OP_KIND[op]}:{t}")
        return v

    def e_binop(self, node):
        left, tok, right = node.children
        return self.arith(str(tok), self.eval(left), self.eval(right), tok)

    def e_unop(self, node):
        tok, operand = node.children
        a, op = self.eval(operand), str(tok)
        if op == "+":
            return a
        if op == "~" and a.type not in INT_TYPES:
            self.error(tok, "operator '~' needs an integer operand")
        t = "int" if op == "!" else a.type
        v = unary(self.keys, op, a, t)
        if v.const is None:
            self.count({"-": f"neg:{t}", "~": f"not:{t}", "!": "logic:int"}[op])
        return v

    def e_deref(self, node):
        self.error(node, "pointer dereference is not supported (write p[0])")

    def e_addrof(self, node):
        self.error(node, "the address operator '&' is not supported")

    def e_cast(self, node):
        _, type_name, operand = node.children
        ctype, quals, space = self.specs(type_name.children[0])
        if len(type_name.children) > 1:
            self.error(type_name.children[1], "pointer casts are not supported")
        if ctype == "void":
            self.error(type_name, "casts to void are not supported")
        return self.conv(self.eval(operand), CTYPES[ctype][0], node, ctype)

    def e_cond(self, node):
        cond, tok, a, b = node.children
        c = self.eval(cond)
        if c.const is not None:
            live, dead = (a, b) if c.const else (b, a)
            other = self.dead(self.eval, dead)
            v = self.eval(live)
            return self.conv(v, common_type(v.type, other.type), live)
        va, vb = self.eval(a), self.eval(b)
        t = common_type(va.type, vb.type)
        va, vb = self.conv(va, t, a), self.conv(vb, t, b)
        self.count(f"select:{t}")
        return select(self.keys, c, va, vb, t)

    def e_call(self, node):
        tok, args = node.children[0], node.children[1]
        args = args.children if args is not None else []
        name = str(tok)
        if name in WORK_ITEM:
            return self.work_item(tok, name, args)
        if name == "barrier":
            self.error(tok, "barrier() must be a statement of its own")
        target = conversion_type(name)
        if target is not None:
            if len(args) != 1:
                self.error(tok, f"{name} takes 1 argument, got {len(args)}")
            return self.conv(self.eval(args[0]), CTYPES[target][0], node, target)
        if name not in MATH:
            self.error(tok, f"unknown function '{name}'")
        arity, how = MATH[name]
        if len(args) != arity:
            self.error(tok, f"{name} takes {arity} argument{'s' * (arity > 1)}, "
                            f"got {len(args)}")
        vals = [self.eval(a) for a in args]
        t = vals[0].type
        for v in vals[1:] if how != "float_int" else ():
            t = common_type(t, v.type)
        if how in ("float", "float_int") and t in INT_TYPES:
            t = "float"
        if how == "int" and any(v.type not in INT_TYPES for v in vals):
            self.error(tok, f"{name} needs integer arguments")
        if how == "float_int":
            vals = [self.conv(vals[0], t, args[0]), self.conv(
                vals[1], "int" if vals[1].type not in INT_TYPES else vals[1].type, args[1])]
        else:
            vals = [self.conv(v, t, a) for v, a in zip(vals, args)]
        result = {"int": "uint", "long": "ulong"}.get(t, t) if how == "abs" else t
        self.count(f"call.{name}:{result}")
        return call_val(self.keys, name, vals, result)

    def work_item(self, tok, name, args) -> Val:
        if name == "get_work_dim":
            if args:
                self.error(tok, f"get_work_dim takes no argument, got {len(args)}")
            return Val("uint", None, False, 0, 1, 3, 0, self.keys(("wi", name)), _EMPTY)
        if len(args) != 1:
            self.error(tok, f"{name} takes 1 argument, got {len(args)}")
        d = self.eval(args[0])
        if d.const not in (0, 1, 2) or d.type not in INT_TYPES:
            self.error(args[0], f"the argument of {name} must be a constant 0, 1 or 2")
        self.max_dim = max(self.max_dim, d.const)
        key = self.keys(("wi", name, d.const))
        if name in ("get_global_id", "get_local_id") and d.const == 0:
            return Val("ulong", None, True, 1, 0, ID_MAX, ID_MAX, key, _EMPTY)
        lo = 1 if name in ("get_global_size", "get_local_size", "get_num_groups") else 0
        return Val("ulong", None, False, 0, lo, ID_MAX + 1, 0, key, _EMPTY)

    # -- variables and array elements ----------------------------------------------------

    def element(self, node):
        """An indexed array: its variable, the (linearized) index and the name token."""
        indices = []
        while isinstance(node, Tree) and node.data == "index":
            indices.append((node.children[1], node.children[2]))
            node = node.children[0]
        indices.reverse()
        if not (isinstance(node, Tree) and node.data == "name"):
            self.error(node, "only named arrays can be indexed")
        tok = node.children[0]
        var = self.lookup(str(tok))
        if var is None:
            if self.macro(tok) is not None:
                self.error(tok, f"macro {tok} is not an array")
            self.error(tok, f"undeclared name '{tok}'")
        if var.kind == "scalar":
            self.error(tok, f"'{tok}' is not an array")
        if len(indices) != len(var.dims):
            self.error(indices[0][0], f"'{tok}' has {len(var.dims)} dimension"
                                      f"{'s' * (len(var.dims) > 1)}, indexed with "
                                      f"{len(indices)}")
        lin = None
        for (lsq, expr), size in zip(indices, var.dims):
            v = self.eval(expr)
            if v.type not in INT_TYPES:
                self.error(expr, "an array index must be an integer")
            if lin is None:
                lin = v
                continue
            t = common_type(common_type(lin.type, v.type), "long")
            scaled = binary(self.keys, "*", convert(self.keys, lin, t),
                            const_val(self.keys, t, size), t)
            lin = binary(self.keys, "+", scaled, convert(self.keys, v, t), t)
        return var, lin, tok

    def place(self, node, what: str):
        if isinstance(node, Tree) and node.data == "name":
            tok = node.children[0]
            var = self.lookup(str(tok))
            if var is None:
                if self.macro(tok) is not None or str(tok) in CONSTANTS:
                    self.error(tok, f"cannot assign to constant {tok}")
                self.error(tok, f"undeclared name '{tok}'")
            if var.kind != "scalar":
                self.error(tok, f"cannot assign to array '{tok}'")
            if var.const:
                self.error(tok, f"cannot assign to const '{tok}'")
            return var, None, tok
        if isinstance(node, Tree) and node.data == "index":
            var, idx, tok = self.element(node)
            if var.space == "constant":
                self.error(tok, f"cannot assign to __constant '{tok}'")
            if var.const:
                self.error(tok, f"cannot assign to const '{tok}'")
            return var, idx, tok
        self.error(node, f"{what} must be a variable or an array element")

    def read(self, place) -> Val:
        var, idx, tok = place
        if idx is None:
            self.private("read")
            st = var.state
            return st if st.const is None else st.with_(const=None)
        return self.access(var, idx, "read", tok)

    def write(self, place, v: Val, node) -> Val:
        var, idx, tok = place
        v = self.conv(v, var.type, node, var.ctype)
        if idx is None:
            self.private("write")
            var.version = self.fresh()
            var.state = v
        else:
            self.access(var, idx, "write", tok)
        return v

    def e_index(self, node):
        var, idx, tok = self.element(node)
        return self.access(var, idx, "read", tok)

    def e_assign(self, node):
        target, op_tree, rhs = node.children
        op_tok = op_tree.children[0]
        op = str(op_tok)
        place = self.place(target, f"the left side of '{op}'")
        now = self.now_of(rhs, place[0], op) if place[1] is None else None
        if place[1] is None and self.loops and self.mult:
            self.recurrence(place[0], op, rhs)
        v = self.eval(rhs)
        if op != "=":
            v = self.arith(op[:-1], self.read(place), v, op_tok)
        v = self.write(place, v, rhs)
        if place[1] is None:
            place[0].now = now
        return v

    def recurrence(self, var, op: str, rhs):
        """Count the operations on the loop-carried path of ``var op= rhs`` inside a
        loop (kernelcast.properties.recurrence's kinds): those between the variable's
        old value and its new one, where the right side reads the variable (or the
        assignment is compound)."""
        on_path = {"flops": 0, "special": 0, "local_loads": 0, "global_loads": 0}
        floating = var.type in ("float", "double")

        def reads(node) -> bool:
            if not isinstance(node, Tree):
                return False
            if node.data == "name":
                return str(node.children[0]) == var.name
            return any(reads(c) for c in node.children)

        def walk(node):
            if not isinstance(node, Tree) or not reads(node):
                return
            if node.data in ("binop", "unop") and floating and str(
                    node.children[1 if node.data == "binop" else 0]) in ("+", "-", "*", "/"):
                on_path["flops"] += 1
            elif node.data == "call":
                name = str(node.children[0])
                kind = "flops" if name in ("fmin", "fmax", "min", "max", "fma", "mad",
                                           "fabs") else "special"
                on_path[kind] += floating or kind == "special"
            elif node.data == "index":
                base = node
                while isinstance(base, Tree) and base.data == "index":
                    base = base.children[0]
                array = self.lookup(str(base.children[0])) if isinstance(base, Tree) else None
                if array is not None and array.space in ("local", "global", "constant"):
                    on_path["local_loads" if array.space == "local" else "global_loads"] += 1
            for c in node.children:
                walk(c)

        if op != "=":
            on_path["flops"] += floating and op[:-1] in ("+", "-", "*", "/")
        elif not reads(rhs):
            return
        walk(rhs)
        for kind, n in on_path.items():
            if n:
                self.recurrences[kind] = self.recurrences.get(kind, 0.0) + n * self.mult

    def incdec(self, target, tok):
        place = self.place(target, f"the operand of '{tok}'")
        old = self.read(place)
        one = convert(self.keys, const_val(self.keys, "int", 1), old.type)
        new = binary(self.keys, "+" if tok == "++" else "-", old, one, old.type)
        self.count(f"{'add' if tok == '++' else 'sub'}:{old.type}")
        var, before = place[0], place[0].now
        self.write(place, new, target)
        if place[1] is None:
            var.now = None if before is None else self.now_of(
                Tree("int", [Token("INT", "1")]), var, "+=" if tok == "++" else "-=")
        return old, new

    def e_preinc(self, node):
        return self.incdec(node.children[1], node.children[0])[1]

    def e_postinc(self, node):
        return self.incdec(node.children[0], node.children[1])[0]

    # -- accesses ------------------------------------------------------------------------

    def record(self, var, direction, cls, tok, n, idx=None):
        if n <= 0:
            return
        key = f"{var.space}:{direction}:{cls}"
        self.accesses[key] = self.accesses.get(key, 0.0) + n
        stride = None
        if idx is not None and var.space != "private":
            stride = 0 if not idx.dep else None if idx.wraps else idx.coef
        self.records.append((tok.line, tok.column, len(self.records), Access(
            var.name, var.space, direction, cls, tok.line, n, stride,
            None if idx is None else idx.key, TYPE_BYTES.get(var.ctype),
            tuple(self.guards + self.exits), tuple(self.loop_counters))))

    def access(self, var, idx: Val, direction: str, tok) -> Val:
        """Count and classify one access; a read returns the element's value."""
        if self.mult:
            if var.space == "private":
                self.record(var, direction, "private", tok, self.mult, idx)
            else:
                entries = self.table.setdefault(var.vid, {})
                hit = entries.get(idx.key)
                if hit is not None and (direction == "read" or "write" in hit[0]):
                    self.record(var, direction, "identical", tok, self.mult, idx)
                else:
                    first = self.mult  # less the loops whose passes repeat it
                    for trip, changed, written in self.loops:
                        if trip and not (idx.deps & changed or var.vid in written):
                            first /= trip
                    self.record(var, direction, static_class(idx), tok, first, idx)
                    self.record(var, direction, "identical", tok, self.mult - first, idx)
                if direction == "read":
                    dirs = hit[0] | {"read"} if hit is not None else frozenset(("read",))
                    entries[idx.key] = (frozenset(dirs), idx.deps)
                else:
                    self.table[var.vid] = {idx.key: (frozenset(("write",)), idx.deps)}
        if direction == "write":
            var.version = self.fresh()
            return idx
        return load_val(self.keys, var.vid, var.version, idx, var.ctype)
