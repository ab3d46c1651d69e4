"""Statements: blocks, declarations' use, if, for, while and do loops, returns, barriers;
and what is known about variables across branches and loops.

A mixin of the kernel walker (walker.py). A branch whose condition is known at the walked
work-item (concrete.py) counts alone; one on data counts both sides, or each weighted by
the probability given for its line. A loop's trips come from its counter's values at
the walked work-item (or the mean given for a loop on data); its body counts once per
trip, or is walked at each value of the counter (at most CHUNKS runs of them) where a
branch or trip count inside follows the counter. At a loop's entry the variables it
assigns become data (their value differs per iteration) and remembered accesses to
arrays it writes are forgotten.

Public names: Statements.
"""

from __future__ import annotations

from lark import Token, Tree

from .concrete import convert_now
from .values import CTYPES, INT_TYPES, FoldError, Val, _fold, const_val

#: How often code may run per work-item (the product of the trips of the loops around
#: it): GPU counters are 64-bit, and 2^63 iterations would keep a work-item busy for
#: years; it also keeps every count finite.
MAX_RUNS = 2.0**63

_UNSUPPORTED = {"switch": "switch statements are not supported",
                "case": "switch statements are not supported",
                "default": "switch statements are not supported",
                "goto": "goto is not supported", "break": "break is not supported",
                "continue": "continue is not supported"}


#: At most this many iterations of a loop whose counter multiplies, divides or shifts
MAX_SIMULATED = 4096
#: A loop whose body's branches or trips follow its counter is walked at every value of
#: a counter of up to this many, else at this many runs of them
CHUNKS = 128
_STEP_OPS = ("+", "-", "*", "/", "<<", ">>")


def _holds(op: str, v: int, bound: int) -> bool:
    return {"<": v < bound, "<=": v <= bound, ">": v > bound, ">=": v >= bound,
            "!=": v != bound}[op]


def _step(op: str, v: int, amount: int, t: str):
    try:
        return _fold(op, v, amount, t)
    except FoldError:
        return None


def _chunks(values) -> list[tuple[int, float]]:
    """(value, iterations it stands for): every value of a loop of up to CHUNKS
    iterations; else the middle of each of CHUNKS runs of consecutive values (the two
    middle ones, each for half, where a run's length is even: the mean of what is
    linear in the counter)."""
    n = len(values)
    if n <= CHUNKS:
        return [(v, 1) for v in values]
    edges = [n * k // CHUNKS for k in range(CHUNKS + 1)]
    out = []
    for a, b in zip(edges, edges[1:]):
        if (b - a) % 2:
            out.append((values[(a + b - 1) // 2], b - a))
        elif b > a:
            out += [(values[(a + b) // 2 - 1], (b - a) / 2), (values[(a + b) // 2], (b - a) / 2)]
    return out


def _returns(node) -> bool:
    """Whether *node* holds a return statement outside any loop."""
    if not isinstance(node, Tree) or node.data in ("for_stmt", "while_stmt", "do_stmt"):
        return False
    return node.data == "return_stmt" or any(_returns(c) for c in node.children)


class Statements:
    """Walking statements (a mixin of walker.Walker)."""

    def stmt(self, node):
        self.enter(node, "statements")
        try:
            data = node.data
            if data == "block":
                self.scopes.append({})
                for s in node.children[1:]:
                    if self.returned:
                        self.dead(self.stmt, s)
                    else:
                        self.stmt(s)
                self.scopes.pop()
            elif data == "decl":
                self.decl(node)
            elif data == "expr_stmt":
                self.expr_stmt(node.children[0])
            elif data == "if_stmt":
                self.if_stmt(*node.children[1:3], node.children[4], node.children[0])
            elif data == "for_stmt":
                self.for_stmt(node)
            elif data == "return_stmt":
                if node.children[1] is not None:
                    self.error(node.children[1], "a kernel returns void (write 'return;')")
                if self.mult and not self.loops and not self.undecided:
                    self.returned = True  # the sampled work-item leaves here
            elif data in ("while_stmt", "do_stmt"):
                self.while_stmt(node)
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

    def if_stmt(self, cond, then, other, if_tok=None):
        c = self.eval(cond)
        decided = c.const
        if decided is None:  # the branch the sampled work-item takes, where known
            now = self.decide(cond)
            decided = None if now is None else now[0]
        line = if_tok.line if if_tok is not None else None
        if decided is None and line in self.stats:
            self.weighted_branches(cond, then, other, float(self.stats[line]), if_tok)
            return
        if decided is not None:
            live, dead = (then, other) if decided else (other, then)
            if dead is not None:
                self.dead(self.stmt, dead)
            guard = [] if c.const is not None else [(c.key, bool(decided))]
            self.guards += guard
            try:
                if live is not None:
                    self.stmt(live)
            finally:
                del self.guards[len(self.guards) - len(guard):]
            if guard and dead is not None and not self.loops and _returns(dead):
                self.exits += guard  # the rest of the kernel runs where it holds
            return
        before = self.snapshot()
        self.undecided += 1
        try:
            self.stmt(then)
            after_then = self.snapshot()
            self.restore(before)
            if other is not None:
                self.stmt(other)
        finally:
            self.undecided -= 1
        for v, state, version, now in after_then[0]:
            if v.kind == "scalar" and not v.folded:
                if v.state.key != state.key:
                    self.make_data(v)
                elif v.now != now:
                    v.now = None
            elif v.version != version:
                v.version = self.fresh()
        merged = {}
        for a, entries in self.table.items():
            other_entries = after_then[1].get(a)
            if other_entries:
                merged[a] = {k: (d & other_entries[k][0], deps) for k, (d, deps)
                             in entries.items() if k in other_entries}
        self.table = merged

    def weighted_branches(self, cond, then, other, p: float, if_tok):
        """Both branches of a data-dependent if, weighted by the probability *p* given
        for its line that it is taken."""
        if not 0 <= p <= 1:
            self.error(if_tok, f"the probability given for the if on line {if_tok.line} "
                               f"must be between 0 and 1, not {p!r}")
        mult = self.mult
        try:
            self.mult = mult * p
            self.if_stmt(cond, then, None)
        finally:
            self.mult = mult
        if other is not None:
            try:
                self.mult = mult * (1 - p)
                self.if_stmt(cond, Tree("block", [None]), other)
            finally:
                self.mult = mult

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
        """The counter variable and its first value (A; None where it is not a constant
        of the kernel: the sampled work-item's value is then the counter's ``now``)."""
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
            var = self.init_decl(d, ctype, quals, "private")
            return var, var.state.exact, d.children[1]
        if init.data == "assign" and str(init.children[1].children[0]) == "=" \
                and isinstance(init.children[0], Tree) and init.children[0].data == "name":
            tok = init.children[0].children[0]
            var = self.lookup(str(tok))
            if var is None or var.kind != "scalar" or var.type not in INT_TYPES:
                self.error(tok, "the loop counter must be an integer variable")
            self.eval(init)
            return var, var.state.exact, init.children[2]
        self.error(init, "a for loop must start by setting its counter (int i = A)")

    def is_counter(self, node, var) -> bool:
        return isinstance(node, Tree) and node.data == "name" and node.children[0] == var.name

    def for_bound(self, cond, var) -> tuple[str, int | None, object]:
        """The comparison that keeps the loop going, the bound when it is a constant of
        the kernel, and the bound's tree."""
        ops = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "!=": "!="}
        if not (isinstance(cond, Tree) and cond.data == "binop" and cond.children[1] in ops):
            self.error(cond, "the loop condition must compare the counter with a bound "
                             "(i < B)")
        left, op, right = cond.children
        if self.is_counter(left, var):
            op, bound = str(op), right
        elif self.is_counter(right, var):
            op, bound = ops[str(op)], left
        else:
            self.error(cond, f"the loop condition must test the counter '{var.name}'")
        b = self.eval(bound)
        if b.type not in INT_TYPES:
            self.error(bound, "the loop bound must be an integer")
        if var.vid in b.deps:
            self.error(bound, f"the loop bound depends on the counter '{var.name}'")
        self.bound_key = b.key
        return op, b.exact, bound

    def for_step(self, step, var) -> tuple[str, int | None, object]:
        """The step as (operator, amount when a constant of the kernel, amount's tree):
        ``i++`` is ("+", 1, None); ``i >>= 1`` and ``i = i * 2`` are accepted too."""
        if isinstance(step, Tree):
            if step.data in ("postinc", "preinc"):
                target, op = (step.children if step.data == "postinc"
                              else step.children[::-1])
                if self.is_counter(target, var):
                    return ("+" if op == "++" else "-"), 1, None
            elif step.data == "assign" and self.is_counter(step.children[0], var):
                op, rhs = str(step.children[1].children[0]), step.children[2]
                if op == "=" and isinstance(rhs, Tree) and rhs.data == "binop" \
                        and str(rhs.children[1]) in _STEP_OPS:
                    left, sign, right = rhs.children
                    if self.is_counter(left, var):
                        op, rhs = str(sign) + "=", right
                    elif self.is_counter(right, var) and str(sign) in ("+", "*"):
                        op, rhs = str(sign) + "=", left
                if op[:-1] in _STEP_OPS and op.endswith("="):
                    c = self.eval(rhs)
                    if c.type not in INT_TYPES:
                        self.error(rhs, "the loop step must be an integer")
                    if var.vid in c.deps:
                        self.error(rhs, f"the loop step depends on the counter '{var.name}'")
                    return op[:-1], c.exact, rhs
        self.error(step, f"the loop step must be {var.name}++, {var.name}--, "
                         f"{var.name} OP= C or {var.name} = {var.name} OP C (OP one of "
                         f"{' '.join(_STEP_OPS)})")

    def while_stmt(self, node):
        """A while (or do-while) loop: at the sampled work-item its condition is
        evaluated before each pass, the body walked pass by pass (each pass updates what
        the condition reads); a condition on data takes its mean trip count from
        *stats*."""
        if node.data == "while_stmt":
            tok, cond, body, first = node.children[0], node.children[1], node.children[2], False
        else:
            tok, body, cond, first = node.children[0], node.children[1], node.children[3], True
        assigned, written, _ = self.loop_writes([cond, body])
        assigned_vars = [v for v in map(self.lookup, assigned) if v is not None]
        written_vars = [v for v in map(self.lookup, written) if v is not None]
        changed = {v.vid for v in assigned_vars + written_vars}
        written_ids = {v.vid for v in written_vars}
        saved = {v.vid: v.now for v in assigned_vars}
        for v in assigned_vars + written_vars:
            self.make_data(v)
        self.table = {a: {k: e for k, e in entries.items() if not (e[1] & changed)}
                      for a, entries in self.table.items() if a not in written_ids}
        for v in assigned_vars:  # what the condition reads, kept for the first pass
            v.now = saved[v.vid]
        self.loop_count += 1
        if not self.mult:  # code that never runs: checked once
            self.eval(cond)
            self.stmt(body)
            return
        passes = 0
        while True:
            if passes or not first:
                self.eval(cond)
                now = self.decide(cond)
                if now is None:
                    break
                if not now[0]:
                    return
            if passes >= MAX_SIMULATED:
                self.error(tok, f"the while loop runs more than {MAX_SIMULATED} passes at "
                                "one work-item (or never ends)")
            self.loops.append((1, changed, written_ids))
            try:
                self.stmt(body)
            finally:
                self.loops.pop()
            passes += 1
        if passes:
            self.error(tok, "the while loop's condition turned unknown after "
                            f"{passes} passes: it depends on data the loop reads")
        if tok.line not in self.stats:
            self.error(tok, f"the trip count of the while loop depends on "
                            f"{self.unknown(cond)}")
        trip = float(self.stats[tok.line])
        mult = self.mult
        self.mult = mult * trip
        self.loops.append((trip, changed, written_ids))
        try:
            self.stmt(body)
            self.eval(cond)
        finally:
            self.loops.pop()
            self.mult = mult
        for v in assigned_vars + written_vars:
            self.make_data(v)

    def counter_values(self, node, var, first: int, op: str, bound: int, sop: str,
                       amount: int) -> range | list:
        """The counter's values, one per iteration."""
        if sop in ("+", "-"):
            inc = amount if sop == "+" else -amount
            trip = self.trip_count(node, first, op, bound, inc)
            self.check_counter(node, var, first + trip * inc, op, bound)
            return range(first, first + trip * inc, inc) if trip else []
        values, v = [], first
        while _holds(op, v, bound):
            if len(values) >= MAX_SIMULATED:
                self.error(node, f"the loop over '{var.name}' runs more than "
                                 f"{MAX_SIMULATED} iterations of '{var.name} {sop}= "
                                 f"{amount}' (or never ends)")
            values.append(v)
            after = _step(sop, v, amount, var.type)
            if after is None or after == v:
                self.error(node, "the loop does not terminate")
            v = after
        return values

    def follows(self, body, counter: str) -> bool:
        """Whether a branch or a loop's trips in *body* may follow *counter*: a
        condition or loop bound there names it, or a variable the body assigns (an inner
        loop's own counter aside)."""
        assigned, _, _ = self.loop_writes([body])
        watched = {counter} | set(assigned)
        for sub in body.iter_subtrees():
            if sub.data == "if_stmt":
                parts, own = [sub.children[1]], set()
            elif sub.data == "for_stmt":
                _, init, cond, step, _ = sub.children
                parts, own = [init, cond, step], set()
                if isinstance(init, Tree) and init.data == "for_decl":
                    own = {str(tok) for d in init.children[1:] for tok in d.children
                           if isinstance(tok, Token) and tok.type == "NAME"}
                elif isinstance(init, Tree) and init.data == "assign" \
                        and isinstance(init.children[0], Tree):
                    own = {str(init.children[0].children[0])}
            else:
                continue
            names = {str(t.children[0]) for part in parts if isinstance(part, Tree)
                     for t in part.iter_subtrees() if t.data == "name"}
            if names & (watched - own):
                return True
        return False

    def unknown(self, *trees) -> str:
        """What makes a value unknown to a walk: an argument not given, the launch, or
        data."""
        names = {str(t.children[0]) for tree in trees if isinstance(tree, Tree)
                 for t in tree.iter_subtrees() if t.data == "name"}
        missing = sorted(n for n in names if n in self.arguments and n not in self.scalars
                         and self.lookup(n) is not None and self.lookup(n).kind == "scalar"
                         and self.lookup(n).now is None)
        if missing:
            return (f"the argument '{missing[0]}', which was not given (give its value: "
                    f"--arg {missing[0]}=VALUE)")
        if self.needed:
            return ("the work-item's position, and no launch was given (give the global "
                    "and local sizes)")
        return ("data the kernel reads (give its mean trip count for this line: "
                "--stat LINE=TRIPS)")

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
        var, first, first_tree = self.for_counter(init, for_tok)
        first_key = var.state.key
        if cond is None or step is None:
            self.error(for_tok, "a for loop needs a counter, a condition and a step "
                                "(for (int i = A; i < B; i++))")
        op, bound, bound_tree = self.for_bound(cond, var)
        bound_key = self.bound_key
        sop, amount, amount_tree = self.for_step(step, var)
        uniform = None not in (first, bound, amount)  # the same trips in every work-item
        if not uniform:
            follows = set(var.now_from)
            self.consulted |= follows
            first = var.now if first is None else first
            if bound is None:
                b = self.decide(bound_tree)
                bound = None if b is None else convert_now(b[0], var.type)
                follows |= self.reading
            if amount is None:
                a = self.decide(amount_tree)
                amount = None if a is None else convert_now(a[0], var.type)
                follows |= self.reading
            var.now_from = frozenset(follows)
        line = for_tok.line
        if None in (first, bound, amount):
            if line not in self.stats:
                self.error(for_tok, f"the trip count of the loop over '{var.name}' depends "
                                    f"on {self.unknown(first_tree, bound_tree, amount_tree)}")
            values, trip = None, float(self.stats[line])
            if not trip >= 0:
                self.error(for_tok, f"the mean trip count given for line {line} must be a "
                                    f"number of at least 0, not {trip!r}")
        else:
            values = self.counter_values(cond, var, first, op, bound, sop, amount)
            trip = len(values)
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
        lo = min(values[0], values[-1]) if values else CTYPES[var.ctype][2]
        hi = max(values[0], values[-1]) if values else CTYPES[var.ctype][3]
        if values is not None and not values:
            lo = hi = first
        control = values is not None and trip > 1 and self.follows(body, var.name)
        # code whose branches or trips may follow the counter is walked at up to
        # CHUNKS of its values, each standing for its share of the iterations
        chunks = (_chunks(values) if control else
                  [(values[0] if trip == 1 and values else None, trip)])
        mult = self.mult
        self.loop_count += 1
        for now, weight in chunks:
            for v in assigned_vars + written_vars:
                if v is not var:
                    self.make_data(v)
            self.table = {a: {k: e for k, e in entries.items() if not (e[1] & changed)}
                          for a, entries in self.table.items() if a not in written_ids}
            var.version = self.fresh()
            key = self.keys(("var", var.vid, var.version))
            var.state = Val(var.type, None, False, 0, lo, hi, 0, key, frozenset((var.vid,)))
            if uniform and values:
                self.counters[key] = (lo, hi)
            elif values and sop in ("+", "-"):  # from its first value and bound per item
                self.counters[key] = (first_key, bound_key, op)
            if values and sop in ("+", "-") and abs(amount) > 1:
                self.counter_steps[key] = abs(amount)
            var.now = now
            self.mult = mult * weight
            self.loops.append((weight, changed, written_ids))
            self.loop_counters.append(key)
            try:
                self.eval(cond)
                self.stmt(body)
                self.eval(step)
            finally:
                self.loops.pop()
                self.loop_counters.pop()
                self.mult = mult
        for v in assigned_vars + written_vars:
            if v is not var and len(chunks) > 1:
                self.make_data(v)
        if snap is not None:
            self.restore(snap)
        end = _step(sop, values[-1], amount, var.type) if values else first
        if uniform:
            var.state = const_val(self.keys, var.type, end)
        else:
            self.make_data(var)
        var.now = end
        self.scopes.pop()
