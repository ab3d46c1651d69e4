"""The values of an array index at every work-item of an NDRange, with C's integer and
IEEE single and double semantics, from the structural expression nodes that counting leaves
(``KernelCounts.nodes``; their forms are made in values.py and expressions.py).

The paper's stride classes need the footprint of an access (the addresses it touches)
and arrays need a size; OpenCL C declares neither, so kernelcast evaluates the indices
themselves. Work-item ids broadcast along their own axis of a (dim 2, dim 1, dim 0)
grid, so an index that reads only ``x`` costs one row. Floating-point values take part
through ``+ - * /``, conversions (toward zero, as C converts) and the built-ins that
round exactly (``floor``, ``fmax``, ``sqrt`` …): an image resize's source pixel is known.
An index that reads data (a variable assigned from memory, a loaded value), another
float built-in, or a scalar argument without a given value has no value here:
``index_values`` returns None.

Public names: index_values, MAX_POINTS.
"""

from __future__ import annotations

import math

import numpy as np

from kernelcast.frontends.opencl.values import CTYPES

MAX_POINTS = 1 << 26  # larger grids are not evaluated (memory)
# each normalized integer type in the NumPy type that wraps as C does
_DTYPES = {"int": np.int32, "uint": np.uint32, "long": np.int64, "ulong": np.uint64}
_FLOATS = {"float": np.float32, "double": np.float64}
_NARROW = {1: (np.int8, np.uint8), 2: (np.int16, np.uint16)}


class _NoValue(Exception):
    """The index has no value known before run time."""


def _as(v, t: str):
    """*v* in C type *t* (a normalized integer type, float or double)."""
    if t in _FLOATS:
        return np.asarray(v).astype(_FLOATS[t], copy=False)
    if t not in _DTYPES:
        raise _NoValue
    v = np.asarray(v)
    if v.dtype.kind == "f":  # C converts toward zero; a value out of range has none
        if not np.isfinite(v).all() or np.abs(v).max(initial=0) >= 2.0 ** 63:
            raise _NoValue
        v = np.trunc(v)
    return v.astype(_DTYPES[t], copy=False)


def _convert(v, ctype: str):
    """*v* as C stores it in *ctype*, in its normalized type."""
    if ctype in _FLOATS:
        return _as(v, ctype)
    if ctype not in CTYPES or CTYPES[ctype][2] is None:
        raise _NoValue
    if ctype == "bool":
        return (np.asarray(v) != 0).astype(np.int32)
    normal, size, low = CTYPES[ctype][0], CTYPES[ctype][1], CTYPES[ctype][2]
    if np.asarray(v).dtype.kind == "f":  # toward zero first, as C converts
        v = _as(v, "long")
    if size in _NARROW:
        v = np.asarray(v).astype(_NARROW[size][low == 0])
    return _as(v, normal)


def _divide(a, b, op: str):
    if np.any(b == 0):
        raise _NoValue
    r = np.fmod(a, b)  # C's remainder: the sign of the dividend
    return r if op == "%" else (a - r) // b  # exact, so truncating as C does


def _binary(op: str, t: str, a, b):
    if op in ("==", "!=", "<", ">", "<=", ">="):
        return {"==": np.equal, "!=": np.not_equal, "<": np.less, ">": np.greater,
                "<=": np.less_equal, ">=": np.greater_equal}[op](a, b).astype(np.int32)
    if op in ("&&", "||"):
        f = np.logical_and if op == "&&" else np.logical_or
        return f(a != 0, b != 0).astype(np.int32)
    a, b = _as(a, t), _as(b, t)
    if t in _FLOATS:
        f = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}.get(op)
        if f is None:
            raise _NoValue
        with np.errstate(divide="ignore", invalid="ignore"):
            return _as(f(a, b), t)
    if op in ("/", "%"):
        return _as(_divide(a, b, op), t)
    if op in ("<<", ">>"):
        b = b & _as(8 * a.dtype.itemsize - 1, t)  # OpenCL masks the shift count
        return _as(a << b if op == "<<" else a >> b, t)
    f = {"+": np.add, "-": np.subtract, "*": np.multiply, "&": np.bitwise_and,
         "|": np.bitwise_or, "^": np.bitwise_xor}.get(op)
    if f is None:
        raise _NoValue
    return _as(f(a, b), t)


# float built-ins evaluated as OpenCL C computes them: exact, or correctly rounded (sqrt
# only in double: OpenCL allows a float sqrt 3 ulp)
_FLOAT_CALLS = {"floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "fabs": np.abs,
                "sqrt": np.sqrt, "fmin": np.fmin, "fmax": np.fmax, "min": np.minimum,
                "max": np.maximum}


def _call(name: str, t: str, args):
    if t in _FLOATS:
        f = _FLOAT_CALLS.get(name)
        if f is None or (name == "sqrt" and t == "float"):
            raise _NoValue
        with np.errstate(invalid="ignore"):
            return _as(f(*(_as(a, t) for a in args)), t)
    if t not in _DTYPES:
        raise _NoValue
    if name == "abs":  # of a signed value, in the unsigned result type
        return _as(np.abs(np.asarray(args[0]).astype(np.int64)), t)
    args = [_as(a, t) for a in args]
    if name == "min":
        return np.minimum(*args)
    if name == "max":
        return np.maximum(*args)
    if name == "clamp":
        return np.minimum(np.maximum(args[0], args[1]), args[2])
    raise _NoValue


class _Grid:
    def __init__(self, global_size, local_size, scalars, points=None):
        self.dims = len(global_size)
        self.g = tuple(global_size) + (1,) * (3 - self.dims)
        self.l = tuple(local_size) + (1,) * (3 - self.dims)
        self.scalars = scalars
        self.points = points

    def ids(self, d: int):
        if self.points is not None:  # chosen work-items, along the last axis
            return np.asarray(self.points[d], dtype=np.int64).reshape(1, 1, -1)
        shape = [1, 1, 1]
        shape[2 - d] = self.g[d]
        return np.arange(self.g[d], dtype=np.int64).reshape(shape)

    def work_item(self, name: str, d: int | None):
        if d is None:
            return np.int64(self.dims)
        if name == "get_global_id":
            return self.ids(d)
        if name == "get_local_id":
            return self.ids(d) % self.l[d]
        if name == "get_group_id":
            return self.ids(d) // self.l[d]
        return np.int64({"get_global_size": self.g[d], "get_local_size": self.l[d],
                         "get_num_groups": self.g[d] // self.l[d],
                         "get_global_offset": 0}[name])


def index_values(nodes: tuple, key: int, global_size, local_size,
                 scalars: dict | None = None, memo: dict | None = None,
                 counters: dict | None = None, points=None):
    """The values of node *key* at every work-item (an integer array broadcastable to the
    grid (dim 2, dim 1, dim 0)), or None when they are not known before run time or the
    grid has more than MAX_POINTS work-items. *scalars* gives integer scalar arguments
    by name; *counters* loop counters' nodes at a value each, or at an array of values
    on axes of its own ahead of the grid's ({node: value or array}); *memo*
    (a dict) shares evaluated nodes between calls of one launch and counter values.
    *points* (global ids per dimension, one array each) asks for those work-items only:
    the values lie along the last axis, in their order (any grid size)."""
    if points is None and math.prod(int(g) for g in global_size) > MAX_POINTS:
        return None  # exact: np.prod wraps
    grid = _Grid(global_size, local_size, scalars or {}, points)
    memo = {} if memo is None else memo

    def ev(k):
        if counters and k in counters:
            return np.asarray(counters[k], dtype=np.int64)
        if k in memo:
            if memo[k] is None:
                raise _NoValue
            return memo[k]
        try:
            memo[k] = value(nodes[k])
        except _NoValue:
            memo[k] = None
            raise
        return memo[k]

    def value(node):
        tag = node[0]
        if tag == "c":
            if isinstance(node[2], bool) or not isinstance(node[2], int | float):
                raise _NoValue  # a vector's components
            return _as(node[2], node[1])
        if tag == "wi":
            return grid.work_item(node[1], node[2] if len(node) > 2 else None)
        if tag == "param":
            v = grid.scalars.get(node[2])
            if v is None:
                raise _NoValue
            return np.int64(int(v))
        if tag == "b":
            return _binary(node[1], node[2], ev(node[3]), ev(node[4]))
        if tag == "u":
            a = ev(node[3])
            if node[1] == "!":
                return (a == 0).astype(np.int32)
            a = _as(a, node[2])
            return -a if node[1] == "-" else ~a if node[1] == "~" else a
        if tag == "cv":
            return _convert(ev(node[2]), node[1])
        if tag == "?":
            return np.where(ev(node[2]) != 0, ev(node[3]), ev(node[4]))
        if tag == "f":
            return _call(node[1], node[2], [ev(k) for k in node[3:]])
        raise _NoValue  # "var" (data), "ld" (a loaded value)

    try:
        with np.errstate(over="ignore"):
            return np.asarray(ev(key))
    except _NoValue:
        return None
