"""The walk over one kernel: scopes, declarations, and what it returns.

:class:`Walker` checks names and types, folds constants, and counts operations,
accesses and barriers per work-item as it goes (expressions.py, statements.py hold the
two halves). Macros are expanded where used; code that never runs (a folded branch, a
loop of 0 trips) is checked but not counted.

Public names: Walker, MAX_DEPTH, MAX_NODES.
"""

from __future__ import annotations

from lark import Token, Tree

from .builtins import CONSTANTS, MATH, WORK_ITEM
from .errors import OpenCLSourceError
from .expressions import Expressions
from .parser import OpenCLUnit
from .preprocessor import PREDEFINED_NAMES
from .results import Argument, KernelCounts
from .concrete import Concrete, convert_now
from .statements import Statements
from .values import (
    CTYPES,
    INT_TYPES,
    TYPE_WORDS,
    FoldError,
    Keys,
    Val,
    _fold,
    common_type,
    convert,
    data_val,
    kind,
)

MAX_DEPTH = 150           # nesting of expressions and statements
MAX_NODES = 300_000       # expression and statement nodes walked, after macro expansion
_SPACES = {"__global": "global", "global": "global", "__local": "local", "local": "local",
           "__constant": "constant", "constant": "constant", "__private": "private",
           "private": "private"}
_EMPTY = frozenset()


class Var:
    """A declared name: kind "scalar", "array" (declared sizes ``dims``) or "pointer";
    ``state`` is a scalar's current abstract value, ``version`` changes on each write
    (and names an array's current contents); ``folded`` marks a __constant scalar."""

    __slots__ = ("name", "vid", "ctype", "type", "kind", "space", "const", "dims", "state",
                 "version", "folded", "now", "now_from")

    def __init__(self, name, vid, ctype, kind_, space, const, dims=()):
        self.name, self.vid, self.ctype, self.type = name, vid, ctype, CTYPES[ctype][0]
        self.kind, self.space, self.const, self.dims = kind_, space, const, dims
        self.state, self.version, self.folded = None, 0, False
        self.now = None  # its value at the sampled work-item, where known (concrete.py)
        self.now_from = frozenset()  # the work-item functions that value follows from


def article(ctype: str) -> str:
    return "an" if ctype[0] in "aeiou" else "a"


def _pos(node) -> tuple[int, int]:
    while isinstance(node, Tree):
        node = next((c for c in node.children if c is not None), None)
    if isinstance(node, Token) and node.line is not None:
        return node.line, node.column
    return 1, 1


class Walker(Statements, Expressions, Concrete):
    """One kernel's walk for one work-item. ``mult`` is how many times the current code
    runs per work-item (the product of the enclosing loops' trips; 0 in code that never
    runs); ``table`` maps each array to the indices accessed so far (for "identical") and
    ``loops`` holds, per enclosing loop, its trip and what it changes. *scalars* gives
    scalar arguments' values, *launch* the (global, local) sizes, *at* the sampled
    work-item's global ids and *stats* ({line: value}) the probability of a branch or
    the mean trip of a loop that depends on data."""

    def __init__(self, unit: OpenCLUnit, scalars=None, launch=None, at=(), stats=None):
        self.scalars, self.launch, self.at = dict(scalars or {}), launch, tuple(at)
        self.stats = dict(stats or {})
        self.consulted: set = set()  # (work-item function, dimension) decisions read
        self.reading: set = set()    # those the value being evaluated reads
        self.needed: set = set()     # work-item functions a decision needed, no launch given
        self.returned = False  # the sampled work-item has left the kernel
        self.undecided = 0     # inside both branches of an if no walk can decide
        self.unit, self.path, self.macros = unit, unit.path, unit.macros
        self.keys = Keys()
        self.ops: dict[str, float] = {}
        self.accesses: dict[str, float] = {}
        self.records: list = []
        self.barriers = 0.0
        self.recurrences: dict[str, float] = {}
        self.counters: dict[int, tuple] = {}  # node of a loop counter -> its (lo, hi)
        self.counter_steps: dict[int, int] = {}  # node of a loop counter -> its step, if > 1
        self.loop_counters: list[int] = []  # counters' nodes of the for loops walked into
        self.guards: list = []  # (condition node, holds) of the decided ifs around the walk
        self.exits: list = []   # those of the returns passed: the rest runs where they hold
        self.mult = 1.0
        self.max_dim = -1
        self.scopes: list[dict[str, Var]] = [{}]
        self.table: dict[int, dict] = {}
        self.loops: list = []
        self.loop_count = 0
        self.depth = self.nodes = self.serial = 0
        self.expanding: list[str] = []
        self.site_line = None
        self.macro_consts: dict = {}

    # -- helpers -------------------------------------------------------------------------

    def error(self, node, message: str):
        line, column = _pos(node)
        raise OpenCLSourceError(self.path, line, column, message)

    def fresh(self) -> int:
        self.serial += 1
        return self.serial

    def enter(self, node, what: str):
        self.depth += 1
        self.nodes += 1
        if self.depth > MAX_DEPTH:
            self.error(node, f"{what} nested too deeply")
        if self.nodes > MAX_NODES:
            self.error(node, f"the kernel is too large to count (more than {MAX_NODES} "
                             f"nodes after macro expansion)")

    def count(self, key: str):
        if self.mult:
            self.ops[key] = self.ops.get(key, 0.0) + self.mult

    def private(self, direction: str):
        if self.mult:
            key = f"private:{direction}:private"
            self.accesses[key] = self.accesses.get(key, 0.0) + self.mult

    def lookup(self, name: str) -> Var | None:
        for scope in reversed(self.scopes):
            var = scope.get(name)
            if var is not None:
                return var
        return None

    def macro(self, tok):
        """The definition of macro ``tok`` in force on the use's line (after its
        #define, before an #undef; build options' macros are on line 0), or None."""
        line = self.site_line if self.site_line is not None else tok.line
        for at, m in reversed(self.unit.macro_history.get(str(tok), ())):
            if at < line:
                return m
        return None

    def conv(self, v: Val, t: str, node, ctype: str | None = None) -> Val:
        if kind(v.type) != kind(t) and v.const is None:
            self.count(f"convert:{t}")
        try:
            return convert(self.keys, v, t, ctype)
        except FoldError as exc:
            self.error(node, str(exc))

    def snapshot(self):
        vars_ = [(v, v.state, v.version, v.now) for s in self.scopes for v in s.values()]
        return vars_, {a: dict(e) for a, e in self.table.items()}

    def restore(self, snap):
        for v, state, version, now in snap[0]:
            v.state, v.version, v.now = state, version, now
        self.table = {a: dict(e) for a, e in snap[1].items()}

    def dead(self, fn, *args):
        """Walk code that never runs (a folded branch, a loop of 0 trips): checked but
        not counted, and without effect on what is known afterwards."""
        snap, mult = self.snapshot(), self.mult
        self.mult = 0
        try:
            return fn(*args)
        finally:
            self.mult = mult
            self.restore(snap)

    def make_data(self, var: Var):
        var.version = self.fresh()
        var.now = None
        if var.kind == "scalar" and not var.folded:
            var.state = data_val(self.keys, var.vid, var.version, var.ctype)

    def now_of(self, node, var: Var, op: str = "="):
        """The value *var* holds at the sampled work-item after ``var op node``; sets
        what it follows from."""
        self.reading = set(var.now_from) if op != "=" else set()
        v = self.value(node)
        var.now_from = frozenset(self.reading)
        if v is None:
            return None
        if op != "=":
            if var.now is None:
                return None
            t = common_type(var.type, v[1]) if op[:-1] not in ("<<", ">>") else var.type
            try:
                v = _fold(op[:-1], convert_now(var.now, t), convert_now(v[0], t), t), t
            except (FoldError, TypeError):
                return None
        now = convert_now(v[0], var.type)
        if now is not None and var.type in INT_TYPES:
            lo, hi = CTYPES[var.ctype][2], CTYPES[var.ctype][3]
            now = lo + (now - lo) % (hi - lo + 1)
        return now

    # -- types and declarations ----------------------------------------------------------

    def specs(self, specs) -> tuple[str | None, list[str], str | None]:
        words, quals, space = [], [], None
        tokens = []
        for t in specs.children:  # a typedef's name stands for its type's words
            tokens += self.unit.typedefs.get(t, [t]) if isinstance(t, Token) else [t]
        for t in tokens:
            if isinstance(t, Tree):
                continue  # __attribute__((...)) is ignored
            if t.type == "VECTOR_TYPE":
                self.error(t, "vector types are not supported")
            if t.type == "TYPE_KW":
                if t == "half":
                    self.error(t, "the half type is not supported")
                words.append(t)
                continue
            quals.append(str(t))
            s = _SPACES.get(str(t))
            if s is not None:
                if space is not None and space != s:
                    self.error(t, "conflicting address spaces")
                space = s
        if not words:
            self.error(specs, "a type is required")
        ctype = TYPE_WORDS.get(tuple(sorted(str(w) for w in words)))
        if ctype is None:
            self.error(words[0], f"invalid type '{' '.join(words)}'")
        return ctype, quals, space

    def declare(self, tok, var: Var):
        name = str(tok)
        if name in self.scopes[-1]:
            self.error(tok, f"'{name}' is already declared")
        m = self.macro(tok)
        if m is not None:
            where = f"line {m.line}" if m.line else "a build option or predefined"
            self.error(tok, f"'{name}' is a macro ({where}) and cannot be declared")
        if name in CONSTANTS or name in WORK_ITEM or name in MATH or name == "barrier":
            self.error(tok, f"'{name}' is a built-in name and cannot be declared")
        self.scopes[-1][name] = var

    def new_var(self, name, ctype, kind_, space, const, dims=()) -> Var:
        return Var(name, self.fresh(), ctype, kind_, space, const, dims)

    def const_int(self, node, what: str) -> int:
        v = self.eval(node)
        if v.const is None or v.type not in INT_TYPES:
            self.error(node, f"{what} must be an integer constant")
        return v.const

    def dims(self, dim_trees) -> tuple:
        sizes = []
        for d in dim_trees:
            if d.children[1] is None:
                self.error(d, "an array needs a size")
            n = self.const_int(d.children[1], "an array size")
            if n <= 0:
                self.error(d.children[1], "an array size must be positive")
            sizes.append(n)
        return tuple(sizes)

    def param(self, p, seen: set) -> Argument | None:
        specs, rest = p.children[0], p.children[1:]
        ctype, quals, space = self.specs(specs)
        pointers = [c for c in rest if isinstance(c, Tree) and c.data == "pointer"]
        dims = [c for c in rest if isinstance(c, Tree) and c.data == "dim"]
        tok = next((c for c in rest if isinstance(c, Token)), None)
        if ctype == "void" and not pointers and tok is None and not dims and not seen:
            return None
        if ctype == "void":
            self.error(specs, "void parameters are not supported")
        if tok is None:
            self.error(specs, "a parameter needs a name")
        if dims:
            self.error(dims[0], "array parameters are not supported (use a pointer)")
        if len(pointers) > 1:
            self.error(pointers[1], "pointers to pointers are not supported")
        name = str(tok)
        seen.add(name)
        const = "const" in quals
        if pointers:
            if space not in ("global", "local", "constant"):
                self.error(specs, "a pointer argument needs an address space "
                                  "(__global, __local or __constant)")
            var = self.new_var(name, ctype, "pointer", space, const or space == "constant",
                               (None,))
            self.declare(tok, var)
            return Argument(name, ctype, True, space, const)
        if space not in (None, "private"):
            self.error(specs, f"a scalar argument cannot be __{space}")
        var = self.new_var(name, ctype, "scalar", "private", const)
        t, _, lo, hi = CTYPES[ctype]
        if name in self.scalars:  # a size argument given: its value, read as a variable's
            given = self.scalars[name]
            now = convert_now(given, t)
            if now is None or (lo is not None and not lo <= now <= hi) or (
                    t in INT_TYPES and isinstance(given, float) and given != int(given)):
                self.error(tok, f"the argument '{name}' is {article(ctype)} {ctype}: "
                                f"{given!r} is not a value of it")
            var.now = now
            if lo is not None:
                lo = hi = now
        var.state = Val(t, None, False, 0, lo, hi, 0, self.keys(("param", var.vid, var.name)), _EMPTY)
        self.declare(tok, var)
        return Argument(name, ctype, False, "private", const)

    def init_decl(self, d, ctype, quals, space, program_scope=False):
        children = d.children
        if children and isinstance(children[0], Tree) and children[0].data == "pointer":
            self.error(children[0], "pointer variables are not supported")
        tok = next(c for c in children if isinstance(c, Token))
        dims = self.dims([c for c in children if isinstance(c, Tree) and c.data == "dim"])
        init = children[-1] if not (isinstance(children[-1], Tree)
                                    and children[-1].data == "dim") else None
        init = None if isinstance(init, Token) else init
        const = "const" in quals or space == "constant"
        if space == "local":
            if init is not None:
                self.error(init, "__local variables cannot be initialized")
            if not dims:
                self.error(tok, "__local scalar variables are not supported (declare an array)")
        if program_scope and init is None:
            self.error(tok, "a __constant variable needs an initializer")
        var = self.new_var(str(tok), ctype, "array" if dims else "scalar", space, const, dims)
        if dims:
            if init is not None:
                self.array_init(init, var, dims)
        elif init is not None:
            if init.data == "init_list":
                self.error(init, "a scalar cannot have a brace initializer")
            v = self.conv(self.eval(init), var.type, init, ctype)
            var.now = self.now_of(init, var)
            if program_scope:
                if v.const is None:
                    self.error(init, "a __constant variable needs a constant initializer")
                var.folded = True
            else:
                self.private("write")
            var.state = v
        else:
            var.state = data_val(self.keys, var.vid, var.version, ctype)
        self.declare(tok, var)
        return var

    def array_init(self, init, var: Var, dims):
        if init.data != "init_list":
            self.error(init, "an array needs a brace initializer")
        leaves, stack = [], [init]
        while stack:
            node = stack.pop()
            if isinstance(node, Tree) and node.data == "init_list":
                stack.extend(reversed([c for c in node.children[1:] if c is not None]))
            else:
                leaves.append(node)
        size = 1
        for n in dims:
            size *= n
        if len(leaves) > size:
            self.error(init, f"too many initializers for '{var.name}' ({size} elements)")
        for leaf in leaves:
            v = self.conv(self.eval(leaf), var.type, leaf, var.ctype)
            if var.space == "constant" and v.const is None:
                self.error(leaf, "a __constant variable needs a constant initializer")
            if var.space == "private":
                self.private("write")

    def decl(self, node, program_scope=False) -> list[Var]:
        ctype, quals, space = self.specs(node.children[0])
        if ctype == "void":
            self.error(node.children[0], "variables cannot be void")
        for q in quals:
            if q in ("__kernel", "kernel"):
                self.error(node.children[0], f"'{q}' applies to functions only")
        if program_scope and space != "constant":
            self.error(node.children[0], "program-scope variables must be __constant")
        if not program_scope and space in ("global", "constant"):
            self.error(node.children[0], f"variables inside a kernel cannot be __{space}")
        return [self.init_decl(d, ctype, quals, space or "private", program_scope)
                for d in node.children[1:]]

    # -- the kernel ----------------------------------------------------------------------

    def defines(self) -> dict:
        out = {}
        for name, m in self.macros.items():
            if name in PREDEFINED_NAMES and m.line == 0:
                continue
            value = m.value
            if m.tree is not None and m.error is None:
                try:
                    self.site_line = 1 << 60
                    v = self.dead(self.eval, m.tree)
                    if v.const is not None:
                        value = v.const
                except OpenCLSourceError:
                    pass
                finally:
                    self.site_line = None
            out[name] = value
        return out

    def run(self, name: str) -> KernelCounts:
        mult, self.mult = self.mult, 0
        for g in self.unit.globals:
            self.decl(g, program_scope=True)
        self.mult = mult
        specs, _, params, body = self.unit.kernel_trees[name].children
        self.scopes.append({})
        seen: set = set()
        self.arguments = {str(c) for p in (params.children if params is not None else ())
                          for c in p.children[1:] if isinstance(c, Token)}
        arguments = []
        for p in params.children if params is not None else ():
            arg = self.param(p, seen)
            if arg is not None:
                arguments.append(arg)
        self.stmt(body)
        self.scopes.pop()
        merged: dict = {}  # a site walked at several of a loop's values counts once
        for line, column, serial, a in sorted(self.records, key=lambda r: r[:3]):
            site = (line, column, a.array, a.direction, a.access_class, a.stride)
            known = merged.get(site)
            merged[site] = a if known is None else known._replace(count=known.count + a.count)
        records = tuple(merged.values())
        return KernelCounts(name, max(1, self.max_dim + 1), dict(sorted(self.ops.items())),
                            dict(sorted(self.accesses.items())), self.barriers,
                            tuple(arguments), self.defines(), records, self.loop_count,
                            tuple(self.keys.nodes), dict(sorted(self.recurrences.items())),
                            dict(self.counters), dict(self.counter_steps))
