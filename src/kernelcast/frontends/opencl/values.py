"""C types, literals and the abstract values that counting and access classes rest on.

Every expression evaluates to a :class:`Val`: its C type, its value when it folds to a
compile-time constant, and what is known about it across the work-items of one warp —
whether it depends on the dimension-0 ids (``dep``), its coefficient when it is affine
in them (``coef``), absolute bounds (``lo``, ``hi``; integers only) and a bound on how
far its values spread over all dimension-0 ids with everything else fixed (``width``).
``key`` is a hash-consed structural form (equal keys: syntactically identical after
substitution and normalization) and ``deps`` the variables and arrays it reads.
``wraps`` marks a coefficient that holds only between wrap-arounds (``x % 64``): it
never cancels to a value independent of the ids.

The functions here are pure: they compute values and never count operations.

Public names: Val, Keys, FoldError, CTYPES, INT_TYPES, TYPE_WORDS, RANGES, common_type,
kind, int_literal, float_literal, const_val, data_val, load_val, binary, unary, convert,
select, call_val, UNIT_STRIDE_MOD.
"""

from __future__ import annotations

import math
import struct

INT_TYPES = ("int", "uint", "long", "ulong")
# declared C type -> (normalized type, bytes, lowest value, highest value)
CTYPES = {
    "char": ("int", 1, -2**7, 2**7 - 1), "uchar": ("int", 1, 0, 2**8 - 1),
    "short": ("int", 2, -2**15, 2**15 - 1), "ushort": ("int", 2, 0, 2**16 - 1),
    "int": ("int", 4, -2**31, 2**31 - 1), "uint": ("uint", 4, 0, 2**32 - 1),
    "long": ("long", 8, -2**63, 2**63 - 1), "ulong": ("ulong", 8, 0, 2**64 - 1),
    "bool": ("int", 1, 0, 1), "float": ("float", 4, None, None),
    "double": ("double", 8, None, None),
}
RANGES = {t: (CTYPES[t][2], CTYPES[t][3]) for t in INT_TYPES}
_BITS = {"int": 32, "uint": 32, "long": 64, "ulong": 64}
# sorted type words -> declared C type
TYPE_WORDS = {
    ("char",): "char", ("char", "signed"): "char", ("uchar",): "uchar",
    ("char", "unsigned"): "uchar", ("short",): "short", ("int", "short"): "short",
    ("short", "signed"): "short", ("int", "short", "signed"): "short",
    ("ushort",): "ushort", ("short", "unsigned"): "ushort",
    ("int", "short", "unsigned"): "ushort", ("int",): "int", ("signed",): "int",
    ("int", "signed"): "int", ("uint",): "uint", ("unsigned",): "uint",
    ("int", "unsigned"): "uint", ("long",): "long", ("int", "long"): "long",
    ("long", "signed"): "long", ("int", "long", "signed"): "long", ("ulong",): "ulong",
    ("long", "unsigned"): "ulong", ("int", "long", "unsigned"): "ulong",
    ("size_t",): "ulong", ("float",): "float", ("double",): "double", ("bool",): "bool",
    ("void",): "void",
}
# `(e % C) with e affine with coefficient ±1` keeps the coefficient when C >= this
UNIT_STRIDE_MOD = 32
_COMMUTATIVE = {"+", "*", "&", "|", "^", "==", "!=", "&&", "||"}
_EMPTY = frozenset()


class FoldError(ValueError):
    """Constant folding found an error (division by zero, a value out of range)."""


class Val:
    """An abstract value (see the module docstring)."""

    __slots__ = ("type", "const", "dep", "coef", "lo", "hi", "width", "key", "deps", "wraps")

    def __init__(self, type, const, dep, coef, lo, hi, width, key, deps, wraps=False):
        self.type, self.const, self.dep, self.coef = type, const, dep, coef
        self.lo, self.hi, self.width, self.key, self.deps = lo, hi, width, key, deps
        self.wraps = wraps

    @property
    def exact(self):
        """The value when it is known exactly (a constant, or a variable holding one)."""
        if self.const is not None:
            return self.const
        return self.lo if self.lo is not None and self.lo == self.hi else None

    def with_(self, **changes) -> Val:
        v = Val(*(getattr(self, s) for s in Val.__slots__))
        for name, value in changes.items():
            setattr(v, name, value)
        return v


class Keys:
    """Hash-consing of structural keys: equal structures get the same small integer, and
    ``vals`` remembers a value for each key (for the (e/d)*d + e%d == e rewrite)."""

    def __init__(self):
        self.ids: dict = {}
        self.nodes: list = []
        self.vals: dict = {}

    def __call__(self, node: tuple) -> int:
        k = self.ids.get(node)
        if k is None:
            k = self.ids[node] = len(self.nodes)
            self.nodes.append(node)
        return k


def kind(t: str) -> str:
    return "int" if t in _BITS else t


def common_type(a: str, b: str) -> str:
    """C's usual arithmetic conversions on normalized types."""
    if a == b:
        return a
    if "double" in (a, b):
        return "double"
    if "float" in (a, b):
        return "float"
    sa, sb = a in ("int", "long"), b in ("int", "long")
    if sa == sb:
        return a if _BITS[a] >= _BITS[b] else b
    u, s = (b, a) if sa else (a, b)
    return u if _BITS[u] >= _BITS[s] else s


def wrap(v: int, t: str) -> int:
    bits = _BITS[t]
    v &= (1 << bits) - 1
    if t in ("int", "long") and v >> (bits - 1):
        v -= 1 << bits
    return v


def f32(v: float) -> float:
    try:
        return struct.unpack("f", struct.pack("f", v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)


def _round(v, t: str):
    return wrap(v, t) if t in _BITS else (f32(v) if t == "float" else float(v))


def int_literal(text: str) -> tuple[int, str]:
    """An integer literal's value and normalized type (C99 rules); ValueError if bad."""
    body = text.rstrip("uUlL")
    suffix = text[len(body):].lower()
    if suffix not in ("", "u", "l", "ul", "lu"):
        raise ValueError(f"invalid integer suffix '{text[len(body):]}'")
    shown = text if len(text) <= 24 else f"{text[:12]}... ({len(text)} characters)"
    if body[:2] in ("0x", "0X"):
        digits, base = body[2:], 16
    elif len(body) > 1 and body[0] == "0":
        if not set(body) <= set("01234567"):
            raise ValueError(f"invalid octal literal '{shown}'")
        digits, base = body, 8
    else:
        digits, base = body, 10
    # more digits than 2^64 - 1 has: too large, known before Python's int() is asked (it
    # refuses decimal strings of more than 4300 digits)
    if len(digits.lstrip("0")) > {16: 16, 8: 22, 10: 20}[base]:
        raise ValueError(f"integer literal '{shown}' is too large (more than 64 bits)")
    value, decimal = int(digits, base), base == 10
    if "u" in suffix:
        order = ("uint", "ulong") if "l" not in suffix else ("ulong",)
    elif "l" in suffix:
        order = ("long",) if decimal else ("long", "ulong")
    else:
        order = ("int", "long") if decimal else ("int", "uint", "long", "ulong")
    for t in order:
        if value <= RANGES[t][1]:
            return value, t
    raise ValueError(f"integer literal '{shown}' is too large (more than 64 bits)")


def float_literal(text: str) -> tuple[float, str]:
    if text[-1] in "fF":
        return f32(float(text[:-1])), "float"
    return float(text), "double"


def _full(t: str):
    return RANGES[t] if t in RANGES else (None, None)


def _clamp(lo, hi, t):
    tlo, thi = _full(t)
    if tlo is None or lo is None or lo < tlo or hi > thi:
        return tlo, thi
    return lo, hi


def _width(w, lo, hi, dep):
    if not dep:
        return 0
    if lo is None:
        return w
    return hi - lo if w is None else min(w, hi - lo)


def _union(a, b):
    if not a:
        return b
    if not b or a is b:
        return a
    return a | b


def const_val(keys: Keys, t: str, v) -> Val:
    lo = v if t in _BITS else None
    return Val(t, v, False, 0, lo, lo, 0, keys(("c", t, v)), _EMPTY)


def data_val(keys: Keys, vid: int, version: int, ctype: str) -> Val:
    """A variable whose value is not tracked (assigned in a loop or differently in two
    branches, or uninitialized): any value of its declared type, per work-item."""
    t, _, lo, hi = CTYPES[ctype]
    return Val(t, None, True, None, lo, hi, None if lo is None else hi - lo,
               keys(("var", vid, version)), frozenset((vid,)))


def load_val(keys: Keys, array: int, version: int, index: Val, ctype: str) -> Val:
    """An element read from an array: uniform when the index is, else any value."""
    t, _, lo, hi = CTYPES[ctype]
    dep = index.dep
    return Val(t, None, dep, None if dep else 0, lo, hi, _width(None, lo, hi, dep),
               keys(("ld", array, version, index.key)), _union(index.deps, frozenset((array,))))


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _fold(op: str, a, b, t: str):
    if op in ("==", "!=", "<", ">", "<=", ">="):
        return int({"==": a == b, "!=": a != b, "<": a < b, ">": a > b, "<=": a <= b,
                    ">=": a >= b}[op])
    if op == "&&":
        return int(bool(a) and bool(b))
    if op == "||":
        return int(bool(a) or bool(b))
    if t in _BITS:
        if op in ("/", "%"):
            if b == 0:
                raise FoldError("division by zero in a constant expression")
            q = _trunc_div(a, b)
            return wrap(q if op == "/" else a - b * q, t)
        if op in ("<<", ">>"):
            s = b & (_BITS[t] - 1)  # OpenCL masks the shift count
            return wrap(a << s if op == "<<" else a >> s, t)
        return wrap({"+": a + b, "-": a - b, "*": a * b, "&": a & b, "|": a | b,
                     "^": a ^ b}[op], t)
    if op == "/":
        if b == 0:
            v = math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a) * \
                math.copysign(1.0, b)
        else:
            v = a / b
    else:
        v = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b}[op]()
    return _round(v, t)


def _int_range(op, a, b, t):
    alo, ahi, blo, bhi = a.lo, a.hi, b.lo, b.hi
    bits = _BITS[t]
    if op == "+":
        return _clamp(alo + blo, ahi + bhi, t)
    if op == "-":
        return _clamp(alo - bhi, ahi - blo, t)
    if op == "*":
        c = (alo * blo, alo * bhi, ahi * blo, ahi * bhi)
        return _clamp(min(c), max(c), t)
    if op == "/":
        if blo <= 0 <= bhi:  # division by zero is undefined: the divisor is not 0
            if blo == 0 and bhi >= 1:
                blo = 1
            else:
                m = max(abs(alo), abs(ahi))
                return _clamp(-m, m, t)
        c = [_trunc_div(x, y) for x in (alo, ahi) for y in (blo, bhi)]
        return _clamp(min(c), max(c), t)
    if op == "%":
        if blo > 0:
            m = bhi - 1
        elif bhi < 0:
            m = -blo - 1
        elif blo == 0 and bhi >= 1:
            m = bhi - 1
        else:
            m = max(-blo, bhi) - 1
        if alo >= 0:
            return (alo, ahi) if ahi <= m else (0, m)
        if ahi <= 0:
            return (alo, ahi) if -alo <= m else (-m, 0)
        return _clamp(-m, m, t)
    if op == "&":
        if alo >= 0 and blo >= 0:
            return 0, min(ahi, bhi)
        if blo >= 0 or alo >= 0:
            return 0, bhi if blo >= 0 else ahi
        return _full(t)
    if op in ("|", "^"):
        if alo >= 0 and blo >= 0:
            hi = (1 << max(ahi, bhi).bit_length()) - 1
            return (max(alo, blo) if op == "|" else 0), hi
        return _full(t)
    if op in ("<<", ">>"):
        if blo != bhi:
            return _full(t) if op == "<<" or alo < 0 else (0, ahi)
        s = blo & (bits - 1)
        if op == "<<":
            return _clamp(alo << s, ahi << s, t)
        return alo >> s, ahi >> s
    return 0, 1


def _coef(op, a, b):
    ca, cb, ea, eb = a.coef, b.coef, a.exact, b.exact
    if op == "+":
        return None if ca is None or cb is None else ca + cb
    if op == "-":
        return None if ca is None or cb is None else ca - cb
    if op == "*":
        if eb is not None and ca is not None:
            return ca * eb
        if ea is not None and cb is not None:
            return cb * ea
        return 0 if not (a.dep or b.dep) else None
    if op == "<<" and eb is not None and ca is not None and isinstance(eb, int) and eb >= 0:
        return ca << (eb & 63)
    if op in ("/", ">>") and eb and ca is not None and not b.dep:
        d = eb if op == "/" else 1 << (eb & 63)
        return ca // d if ca % d == 0 else None
    if op == "%" and eb is not None and abs(eb) >= UNIT_STRIDE_MOD and ca in (1, -1):
        return ca
    return None if (a.dep or b.dep) else 0


def _width_of(op, a, b):
    wa, wb, eb = a.width, b.width, b.exact
    if op in ("+", "-"):
        return None if wa is None or wb is None else wa + wb
    if op == "*":
        ea = a.exact
        if eb is not None and wa is not None:
            return abs(eb) * wa
        if ea is not None and wb is not None:
            return abs(ea) * wb
        return None
    if op == "/" and eb and wa is not None:
        return wa // abs(eb) + 1
    if op == "<<" and eb is not None and wa is not None:
        return wa << (eb & 63)
    if op == ">>" and eb is not None and wa is not None:
        return (wa >> (eb & 63)) + 1
    return None


def _div_mod_identity(keys: Keys, ka: int, kb: int):
    """(e/d)*d + e%d is e in C (truncating division): return e's key, or None."""
    for km, kr in ((ka, kb), (kb, ka)):
        m, r = keys.nodes[km], keys.nodes[kr]
        if m[0] != "b" or m[1] != "*" or r[0] != "b" or r[1] != "%":
            continue
        e, d = r[3], r[4]
        for kq, kd in ((m[3], m[4]), (m[4], m[3])):
            q = keys.nodes[kq]
            if kd == d and q[0] == "b" and q[1] == "/" and q[3] == e and q[4] == d:
                return e
    return None


def binary(keys: Keys, op: str, a: Val, b: Val, t: str) -> Val:
    """``a op b`` with operands already converted; ``t`` is the result type. Raises
    FoldError for an integer division or remainder by a constant zero."""
    if a.const is not None and b.const is not None:
        return const_val(keys, t, _fold(op, a.const, b.const, a.type if op in (
            "==", "!=", "<", ">", "<=", ">=") else t))
    if op in ("/", "%") and t in _BITS and b.const == 0:  # undefined in C for integers
        raise FoldError(f"{'division' if op == '/' else 'remainder (%)'} by zero: the "
                        f"divisor is a constant 0")
    if op == "+" and t in _BITS:
        e = _div_mod_identity(keys, a.key, b.key)
        if e is not None and e in keys.vals:
            return convert(keys, keys.vals[e], t)
    keys.vals.setdefault(a.key, a)
    keys.vals.setdefault(b.key, b)
    dep = a.dep or b.dep
    if op in ("==", "!=", "<", ">", "<=", ">=", "&&", "||"):
        ka, kb = sorted((a.key, b.key)) if op in _COMMUTATIVE else (a.key, b.key)
        return Val(t, None, dep, None if dep else 0, 0, 1, 1 if dep else 0,
                   keys(("b", op, t, ka, kb)), _union(a.deps, b.deps))
    coef = _coef(op, a, b) if t in _BITS else (None if dep else 0)
    wraps = a.wraps or b.wraps or (op == "%" and dep and coef not in (None, 0))
    if coef == 0 and not wraps:
        dep = False
    if t in _BITS:
        lo, hi = _int_range(op, a, b, t) if a.lo is not None and b.lo is not None \
            else _full(t)
    else:
        lo = hi = None
    width = _width(_width_of(op, a, b) if dep else 0, lo, hi, dep)
    ka, kb = a.key, b.key
    if op in _COMMUTATIVE and kb < ka:
        ka, kb = kb, ka
    v = Val(t, None, dep, coef, lo, hi, width, keys(("b", op, t, ka, kb)),
            _union(a.deps, b.deps), wraps)
    keys.vals.setdefault(v.key, v)
    return v


def unary(keys: Keys, op: str, a: Val, t: str) -> Val:
    """``op a`` for op in - ~ ! with ``a`` already promoted to ``t`` (int for !)."""
    if a.const is not None:
        c = a.const
        v = int(not c) if op == "!" else (-c if op == "-" else ~c)
        return const_val(keys, t, _round(v, t) if op != "!" else v)
    if op == "!":
        return Val(t, None, a.dep, None if a.dep else 0, 0, 1, 1 if a.dep else 0,
                   keys(("u", op, t, a.key)), a.deps)
    lo = hi = None
    if t in _BITS:
        if op == "-":
            lo, hi = _clamp(-a.hi, -a.lo, t)
        elif t in ("uint", "ulong"):
            lo, hi = RANGES[t][1] - a.hi, RANGES[t][1] - a.lo
        else:
            lo, hi = -a.hi - 1, -a.lo - 1
    coef = None if a.coef is None else -a.coef
    return Val(t, None, a.dep, coef, lo, hi, _width(a.width, lo, hi, a.dep),
               keys(("u", op, t, a.key)), a.deps, a.wraps)


def convert(keys: Keys, a: Val, t: str, ctype: str | None = None) -> Val:
    """``a`` converted to type ``t`` (stored as ``ctype`` when it is narrower, e.g.
    uchar); raises FoldError for a constant out of the target's range."""
    ctype = ctype or t
    tlo, thi = CTYPES[ctype][2], CTYPES[ctype][3]
    if a.type == t and (tlo is None or a.lo is None or (tlo <= a.lo and a.hi <= thi)):
        return a
    if a.const is not None:
        c = a.const
        if ctype == "bool":
            return const_val(keys, t, int(bool(c)))
        if t in _BITS and a.type not in _BITS:
            if math.isnan(c) or math.isinf(c) or not (-2**64 < c < 2**64):
                raise FoldError(f"the constant {c} cannot be converted to {ctype}")
            c = int(c)
        if t in _BITS and ctype != t:  # stored narrower: wrap to the declared width
            bits = 8 * CTYPES[ctype][1]
            c &= (1 << bits) - 1
            c -= (1 << bits) if tlo < 0 and c >> (bits - 1) else 0
        return const_val(keys, t, _round(c, t))
    if t in _BITS and a.type in _BITS:
        if a.lo is not None and tlo <= a.lo and a.hi <= thi:
            return a.with_(type=t)
        lo, hi = tlo, thi
        return Val(t, None, a.dep, a.coef, lo, hi, _width(None, lo, hi, a.dep),
                   keys(("cv", ctype, a.key)), a.deps, a.wraps)
    if t in _BITS:
        lo, hi = tlo, thi
        return Val(t, None, a.dep, None if a.dep else 0, lo, hi, _width(None, lo, hi, a.dep),
                   keys(("cv", ctype, a.key)), a.deps)
    return Val(t, None, a.dep, None if a.dep else 0, None, None, None if a.dep else 0,
               keys(("cv", t, a.key)), a.deps)


def select(keys: Keys, c: Val, a: Val, b: Val, t: str) -> Val:
    """``c ? a : b`` for a non-constant ``c`` (branches converted to ``t``)."""
    dep = c.dep or a.dep or b.dep
    coef = a.coef if not c.dep and a.coef is not None and a.coef == b.coef else \
        (None if dep else 0)
    lo = hi = None
    if t in _BITS:
        lo, hi = min(a.lo, b.lo), max(a.hi, b.hi)
    w = None if c.dep or a.width is None or b.width is None else max(a.width, b.width)
    return Val(t, None, dep, coef, lo, hi, _width(w, lo, hi, dep),
               keys(("?", t, c.key, a.key, b.key)), _union(c.deps, _union(a.deps, b.deps)),
               a.wraps or b.wraps)


def call_val(keys: Keys, name: str, args: list[Val], t: str) -> Val:
    """The value of a built-in function call (not folded; ranges for integer min, max,
    clamp and abs)."""
    dep = any(a.dep for a in args)
    lo = hi = None
    if t in _BITS:
        lo, hi = _full(t)
        if all(a.lo is not None for a in args):
            if name == "min":
                lo, hi = min(a.lo for a in args), min(a.hi for a in args)
            elif name == "max":
                lo, hi = max(a.lo for a in args), max(a.hi for a in args)
            elif name == "clamp":
                lo, hi = max(args[0].lo, args[1].lo), min(args[0].hi, args[2].hi)
                lo, hi = (lo, hi) if lo <= hi else (min(lo, hi), max(lo, hi))
            elif name == "abs":
                m = max(abs(args[0].lo), abs(args[0].hi))
                lo, hi = (0 if args[0].lo <= 0 <= args[0].hi else
                          min(abs(args[0].lo), abs(args[0].hi))), m
            lo, hi = _clamp(lo, hi, t)
    ks = [a.key for a in args]
    if name in ("min", "max", "fmin", "fmax"):
        ks.sort()
    deps = _EMPTY
    for a in args:
        deps = _union(deps, a.deps)
    return Val(t, None, dep, None if dep else 0, lo, hi, _width(None, lo, hi, dep),
               keys(("f", name, t, *ks)), deps)
