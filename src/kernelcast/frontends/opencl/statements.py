"""Statements: blocks, declarations' use, if (both branches), for loops with a constant
trip count, barriers; and what is known about variables across branches and loops.

A mixin of the kernel walker (walker.py). Loops multiply what their body counts by their
trip count; at a loop's entry the variables it assigns become data (their value differs
per iteration) and remembered accesses to arrays it writes are forgotten.

Public names: Statements.
"""

from __future__ import annotations

from lark import Token, Tree

from .values import CTYPES, INT_TYPES, Val, const_val

#: How often code may run per work-item (the product of the trips of the loops around
#: it): GPU counters are 64-bit, and 2^63 iterations would keep a work-item busy for
#: years; it also keeps every count finite.
MAX_RUNS = 2.0**63

_UNSUPPORTED = {"while": "while loops are not supported", "do": "do loops are not supported",
                "switch": "switch statements are not supported",
                "case": "switch statements are not supported",
                "default": "switch statements are not supported",
                "goto": "goto is not supported", "break": "break is not supported",
                "continue": "continue is not supported"}


class Statements:
    """Walking statements (a mixin of walker.Walker)."""

    def stmt(self, node):
        self.enter(node, "statements")
        try:
            data = node.data
            if data == "block":
                self.scopes.append({})
                for s in node.children[1:]:
                    self.stmt(s)
                self.scopes.pop()
            elif data == "decl":
                self.decl(node)
            elif data == "expr_stmt":
                self.expr_stmt(node.children[0])
            elif data == "if_stmt":
                self.if_stmt(*node.children[1:3], node.children[4])
            elif data == "for_stmt":
                self.for_stmt(node)
            elif data == "return_stmt":
                if node.children[1] is not None:
                    self.error(node.children[1], "a kernel returns void (write 'return;')")
            elif data == "unsupported":
                self.error(node, _UNSUPPORTED[str(node.children[0])])
        finally:
            self.depth -= 1

    def expr_stmt(self, expr):
        if isinstance(expr, Tree) and expr.data == "call" and expr.children[0] == "barrier":
            args = expr.children[1].children if expr.children[1] is not None else []
            if len(args) != 1:
                self.error(expr, f"barrier takes 1 argument, got {len(args)}")
            self.const_int(args[0], "the argument of barrier")
            self.barriers += self.mult
            return
        self.eval(expr)

    def if_stmt(self, cond, then, other):
        c = self.eval(cond)
        if c.const is not None:
            live, dead = (then, other) if c.const else (other, then)
            if dead is not None:
                self.dead(self.stmt, dead)
            if live is not None:
                self.stmt(live)
            return
        before = self.snapshot()
        self.stmt(then)
        after_then = self.snapshot()
        self.restore(before)
        if other is not None:
            self.stmt(other)
        for v, state, version in after_then[0]:
            if v.kind == "scalar" and not v.folded:
                if v.state.key != state.key:
                    self.make_data(v)
            elif v.version != version:
                v.version = self.fresh()
        merged = {}
        for a, entries in self.table.items():
            other_entries = after_then[1].get(a)
            if other_entries:
                merged[a] = {k: (d & other_entries[k][0], deps) for k, (d, deps)
                             in entries.items() if k in other_entries}
        self.table = merged

    def loop_writes(self, roots) -> tuple[dict, dict, set]:
        """Names assigned and arrays written anywhere in ``roots`` (and the macros they
        use), name -> first token; and the names declared there."""
        assigned, written, declared, seen = {}, {}, set(), set()
        roots = [r for r in roots if isinstance(r, Tree)]
        while roots:
            for sub in roots.pop().iter_subtrees_topdown():
                if sub.data == "init_decl":
                    declared.update(str(c) for c in sub.children if isinstance(c, Token))
                    continue
                if sub.data == "name":
                    m = self.macros.get(str(sub.children[0]))
                    if m is not None and m.tree is not None and m.name not in seen:
                        seen.add(m.name)
                        roots.append(m.tree)
                    continue
                if sub.data in ("assign", "postinc"):
                    target = sub.children[0]
                elif sub.data == "preinc":
                    target = sub.children[1]
                else:
                    continue
                element = False
                while isinstance(target, Tree) and target.data == "index":
                    target, element = target.children[0], True
                if isinstance(target, Tree) and target.data == "name":
                    tok = target.children[0]
                    (written if element else assigned).setdefault(str(tok), tok)
        return assigned, written, declared

    def for_counter(self, init, for_tok):
        """The counter variable and its first value (A)."""
        if init is None:
            self.error(for_tok, "a for loop needs a counter, a condition and a step "
                                "(for (int i = A; i < B; i++))")
        if init.data == "for_decl":
            if len(init.children) != 2:
                self.error(init, "a for loop declares one counter")
            ctype, quals, space = self.specs(init.children[0])
            d = init.children[1]
            if d.children[-1] is None or len(d.children) != 2:
                self.error(d, "the loop counter needs a first value (int i = A)")
            if ctype not in CTYPES or CTYPES[ctype][0] not in INT_TYPES:
                self.error(init, "the loop counter must be an integer")
            first = self.eval(d.children[1])
            if first.const is None:
                self.error(d.children[1], "loop trip count is not a constant")
            var = self.init_decl(d, ctype, quals, "private")
            return var, var.state.const
        if init.data == "assign" and str(init.children[1].children[0]) == "=" \
                and isinstance(init.children[0], Tree) and init.children[0].data == "name":
            tok = init.children[0].children[0]
            var = self.lookup(str(tok))
            if var is None or var.kind != "scalar" or var.type not in INT_TYPES:
                self.error(tok, "the loop counter must be an integer variable")
            first = self.eval(init.children[2])
            if first.const is None:
                self.error(init.children[2], "loop trip count is not a constant")
            self.eval(init)
            return var, var.state.const
        self.error(init, "a for loop must start by setting its counter (int i = A)")

    def is_counter(self, node, var) -> bool:
        return isinstance(node, Tree) and node.data == "name" and node.children[0] == var.name

    def for_bound(self, cond, var) -> tuple[str, int]:
        ops = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "!=": "!="}
        if not (isinstance(cond, Tree) and cond.data == "binop" and cond.children[1] in ops):
            self.error(cond, "the loop condition must compare the counter with a constant "
                             "(i < B)")
        left, op, right = cond.children
        if self.is_counter(left, var):
            op, bound = str(op), right
        elif self.is_counter(right, var):
            op, bound = ops[str(op)], left
        else:
            self.error(cond, f"the loop condition must test the counter '{var.name}'")
        b = self.eval(bound)
        if b.const is None or b.type not in INT_TYPES:
            self.error(bound, "loop trip count is not a constant")
        return op, b.const

    def for_step(self, step, var) -> int:
        if isinstance(step, Tree):
            if step.data in ("postinc", "preinc"):
                target, op = (step.children if step.data == "postinc"
                              else step.children[::-1])
                if self.is_counter(target, var):
                    return 1 if op == "++" else -1
            elif step.data == "assign" and self.is_counter(step.children[0], var):
                op, rhs = str(step.children[1].children[0]), step.children[2]
                if op == "=" and isinstance(rhs, Tree) and rhs.data == "binop" \
                        and rhs.children[1] in ("+", "-"):
                    left, sign, right = rhs.children
                    if self.is_counter(left, var):
                        op, rhs = sign + "=", right
                    elif self.is_counter(right, var) and sign == "+":
                        op, rhs = "+=", left
                if op in ("+=", "-="):
                    c = self.eval(rhs)
                    if c.const is None or c.type not in INT_TYPES:
                        self.error(rhs, "loop trip count is not a constant")
                    return c.const if op == "+=" else -c.const
        self.error(step, f"the loop step must be {var.name}++, {var.name}--, "
                         f"{var.name} += C or {var.name} -= C")

    def trip_count(self, node, first: int, op: str, bound: int, step: int) -> int:
        if op == "<=":
            op, bound = "<", bound + 1
        elif op == ">=":
            op, bound = ">", bound - 1
        if op == "!=":
            if first == bound:
                return 0
            if step == 0 or (bound - first) % step or (bound - first) // step < 0:
                self.error(node, "the loop does not terminate")
            return (bound - first) // step
        if (op == "<" and first >= bound) or (op == ">" and first <= bound):
            return 0
        if (op == "<" and step <= 0) or (op == ">" and step >= 0):
            self.error(node, "the loop does not terminate")
        return -(-abs(bound - first) // abs(step))

    def check_counter(self, node, var, end: int, op: str, bound: int):
        """Refuse a loop whose counter cannot hold the value *end* that ends it: the
        counter wraps around first (a uchar after 255), so the loop never ends in C."""
        lo, hi = CTYPES[var.ctype][2], CTYPES[var.ctype][3]
        if not lo <= end <= hi:
            article = "an" if var.ctype == "int" else "a"
            self.error(node, f"the for loop over '{var.name}' never ends: its counter is "
                             f"{article} {var.ctype} ({lo}..{hi}) and wraps around before "
                             f"'{var.name} {op} {bound}' turns false")

    def for_stmt(self, node):
        for_tok, init, cond, step, body = node.children
        self.scopes.append({})
        var, first = self.for_counter(init, for_tok)
        if cond is None or step is None:
            self.error(for_tok, "a for loop needs a counter, a condition and a step "
                                "(for (int i = A; i < B; i++))")
        op, bound = self.for_bound(cond, var)
        inc = self.for_step(step, var)
        trip = self.trip_count(cond, first, op, bound, inc)
        self.check_counter(cond, var, first + trip * inc, op, bound)
        if self.mult * trip > MAX_RUNS:
            self.error(for_tok, f"the for loop over '{var.name}' makes the code in it run "
                                f"{self.mult * trip:.3g} times per work-item, more than "
                                f"2^63: a GPU's 64-bit counters would overflow, and one "
                                f"work-item would run for years")
        body_assigned, _, declared = self.loop_writes([body])
        if var.name in body_assigned and var.name not in declared:
            self.error(body_assigned[var.name],
                       f"the loop counter '{var.name}' is assigned in the loop body")
        assigned, written, _ = self.loop_writes([cond, step, body])
        assigned_vars = [v for v in map(self.lookup, assigned) if v is not None]
        written_vars = [v for v in map(self.lookup, written) if v is not None]
        changed = {v.vid for v in assigned_vars + written_vars} | {var.vid}
        written_ids = {v.vid for v in written_vars}
        snap = self.snapshot() if trip == 0 else None
        for v in assigned_vars + written_vars:
            if v is not var:
                self.make_data(v)
        self.table = {a: {k: e for k, e in entries.items() if not (e[1] & changed)}
                      for a, entries in self.table.items() if a not in written_ids}
        last = first + (trip - 1) * inc if trip else first
        var.version = self.fresh()
        var.state = Val(var.type, None, False, 0, min(first, last), max(first, last), 0,
                        self.keys(("var", var.vid, var.version)), frozenset((var.vid,)))
        mult = self.mult
        self.mult *= trip
        self.loops.append((trip, changed, written_ids))
        self.loop_count += 1
        try:
            self.eval(cond)
            self.stmt(body)
            self.eval(step)
        finally:
            self.loops.pop()
            self.mult = mult
        if snap is not None:
            self.restore(snap)
        var.state = const_val(self.keys, var.type, first + trip * inc)
        self.scopes.pop()
