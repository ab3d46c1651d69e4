"""Random kernels in the manner of Pöppl & Herz's quantitative evaluation, as suites.

Each kernel computes one expression per work-item (x, y) of a square N x N NDRange and
stores it to ``res[y * WIDTH + x]``. The expression is a random tree over the work-item
coordinates x and y, int and float literals, a 2-D global ``matrix`` (HEIGHT x WIDTH = N x N
floats, row-major) and a 128-entry lookup table ``xxx``. Two sets, as in the slides:

- ``realistic``: at most 15 nodes in the value tree, matrix indices only [x][y], [y][x] or
  [literal % HEIGHT][literal % WIDTH], lookup indices small expressions of x, y and a literal;
- ``unrestricted``: deep trees (up to 10 operator levels) and random int index trees (up to
  3 operator levels) in the indices of both arrays.

Every kernel exists twice: as OpenCL C source (``RandomKernel.opencl_source``, the code that
is compiled and timed on OpenCL devices) and as its Loopy twin (``RandomKernel.loopy_kernel``,
which gives the argument list and launch geometry, the code for CUDA and the input of the
symbolic models). Kernel *i* of a set depends only on (set, SEED, i): its work-group size, its
N and its tree come from ``random.Random(f"{set}:{SEED}:{i}")`` in that order, so kernel *i*
of a GPU-sized suite and of its CPU-sized suite share group size and expression. No kernel
can reach C undefined behaviour, nor a non-finite value for inputs in [0.5, 1.5];
docs/random-kernels.md gives the vocabulary, probabilities, safety rules and twin
conventions.

Public names: SEED, COUNT, SETS, GPU_SIZES, CPU_SIZES, CHECK_N, N_MAX, GROUP_SIZES,
COND_TOLERANCE, Node, Var, IntLit, FloatLit, Matrix, Lookup, BinOp, RandomKernel,
random_kernel, drawn_size, drawn_group, loopy_twin, evaluate, walk, value_nodes, value_depth,
RANDOM_REALISTIC, RANDOM_UNRESTRICTED, RANDOM_REALISTIC_CPU,
RANDOM_UNRESTRICTED_CPU, RANDOM_SUITES.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property, lru_cache

import numpy as np

from kernelcast.errors import KernelcastError
from kernelcast.suites.suite import KernelClass, Suite

SEED = 2015
COUNT = 600
SETS = ("realistic", "unrestricted")
GPU_SIZES = (1024, 2048, 4096)
CPU_SIZES = (256, 512)
CHECK_N = 256  # the size a case is checked at against its reference (check_params)
N_MAX = 4096  # trees are safe for every N up to this (x, y in [0, N_MAX - 1])
LOOKUP = 128  # entries of xxx; indices are masked with & 0x7F

GROUP_SIZES = {
    "realistic": ((32, 8), (16, 16), (64, 4), (32, 4), (128, 2), (256, 1), (32, 32)),
    "unrestricted": ((32, 8), (16, 16), (64, 4), (32, 4), (128, 2), (256, 1), (32, 32),
                     (8, 8), (4, 4), (16, 2), (8, 4)),
}

INT32_MIN, INT32_MAX = -2 ** 31, 2 ** 31 - 1
# An int computed in a value position (then converted to float) stays within +-2^24, where
# every int is a float32: Loopy computes such ints in float arithmetic (it prints them in
# the float context of the expression), which is then exact and equal to C's int result.
EXACT_INT = 2 ** 24
FLOAT_LIMIT = 1e30  # float intervals stay well inside float32's range
INPUT_RANGE = (0.5, 1.5)  # measurement inputs are uniform in [0.5, 1.5)
COND_TOLERANCE = 1e-6  # float32 vs float64 evaluation at the check inputs
_WIDEN = 1e-6  # relative widening of float intervals per operation (float32 rounding)
_SUBTREE_TRIES = 25
_KERNEL_TRIES = 2000


# {{{ expression trees

@dataclass(frozen=True, eq=False)
class Node:
    """A node of an expression tree. *dtype* is "int" or "float"; (*lo*, *hi*) bound its
    value over x, y in [0, N_MAX - 1] and inputs in [0.5, 1.5] (for ints, exactly as C
    computes them; for floats, widened for float32 rounding)."""

    dtype: str
    lo: float
    hi: float

    children = ()

    def c(self, top: bool = False) -> str:
        raise NotImplementedError


@dataclass(frozen=True, eq=False)
class Var(Node):
    name: str = "x"

    def c(self, top=False):
        return self.name


@dataclass(frozen=True, eq=False)
class IntLit(Node):
    value: int = 0

    def c(self, top=False):
        return str(self.value)


@dataclass(frozen=True, eq=False)
class FloatLit(Node):
    value: float = 0.0  # a float32 value
    text: str = "0.0"  # its shortest decimal form, without the f suffix

    def c(self, top=False):
        return self.text + "f"


@dataclass(frozen=True, eq=False)
class Matrix(Node):
    """``matrix[row][col]`` of the slides: ``matrix[row * WIDTH + col]`` for the plain
    forms [x][y] and [y][x], else ``matrix[(row % HEIGHT) * WIDTH + (col % WIDTH)]``."""

    row: Node = None
    col: Node = None

    @property
    def children(self):
        return (self.row, self.col)

    @property
    def plain(self) -> bool:
        return (isinstance(self.row, Var) and isinstance(self.col, Var)
                and self.row.name != self.col.name)

    def c(self, top=False):
        if self.plain:
            return f"matrix[{self.row.name} * WIDTH + {self.col.name}]"
        return f"matrix[({self.row.c()} % HEIGHT) * WIDTH + ({self.col.c()} % WIDTH)]"


@dataclass(frozen=True, eq=False)
class Lookup(Node):
    """``xxx[index & 0x7F]``."""

    index: Node = None

    @property
    def children(self):
        return (self.index,)

    def c(self, top=False):
        return f"xxx[{self.index.c()} & 0x7F]"


@dataclass(frozen=True, eq=False)
class BinOp(Node):
    """A binary operation with C's semantics: int op int is int (/ truncates, % is the
    C remainder; both only ever see non-negative operands), anything with a float is float
    (the int operand converted to float)."""

    op: str = "+"
    left: Node = None
    right: Node = None

    @property
    def children(self):
        return (self.left, self.right)

    def c(self, top=False):
        text = f"{self.left.c()} {self.op} {self.right.c()}"
        return text if top else f"({text})"


def walk(node: Node):
    """Every node of the tree under *node*, *node* first (index trees included)."""
    yield node
    for child in node.children:
        yield from walk(child)


def value_nodes(node: Node):
    """The nodes of the value tree: operators and leaves, not the index expressions
    inside array accesses."""
    yield node
    if isinstance(node, BinOp):
        yield from value_nodes(node.left)
        yield from value_nodes(node.right)


def value_depth(node: Node) -> int:
    """Operators on the longest root-to-leaf path of the value tree (a leaf: 0)."""
    if isinstance(node, BinOp):
        return 1 + max(value_depth(node.left), value_depth(node.right))
    return 0

# }}}


# {{{ interval arithmetic

def _int_interval(op, a, b):
    """The interval of int *a op b* (C semantics), or None where C could misbehave:
    / and % need a non-negative dividend and a divisor >= 1."""
    if op == "+":
        return a[0] + b[0], a[1] + b[1]
    if op == "-":
        return a[0] - b[1], a[1] - b[0]
    if op == "*":
        products = [a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]]
        return min(products), max(products)
    if a[0] < 0 or b[0] < 1:
        return None
    if op == "/":
        return a[0] // b[1], a[1] // b[0]
    if op == "%":
        if a[1] < b[0]:
            return a
        return 0, min(a[1], b[1] - 1)
    raise ValueError(op)


def _float_interval(op, a, b):
    """The interval of float *a op b*, widened for rounding, or None where the divisor
    could be zero or the result could leave FLOAT_LIMIT."""
    if op == "+":
        lo, hi = a[0] + b[0], a[1] + b[1]
    elif op == "-":
        lo, hi = a[0] - b[1], a[1] - b[0]
    elif op == "*":
        products = [a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]]
        lo, hi = min(products), max(products)
    elif op == "/":
        if b[0] <= 0 <= b[1]:
            return None
        quotients = [a[0] / b[0], a[0] / b[1], a[1] / b[0], a[1] / b[1]]
        lo, hi = min(quotients), max(quotients)
    else:
        raise ValueError(op)
    lo -= abs(lo) * _WIDEN
    hi += abs(hi) * _WIDEN
    if not (math.isfinite(lo) and math.isfinite(hi)) or max(-lo, hi) > FLOAT_LIMIT:
        return None
    return lo, hi

# }}}


# {{{ generation

@dataclass(frozen=True)
class _Profile:
    """How a set draws its trees."""

    p_op: tuple[float, ...]  # probability of an operator node at value depth d
    max_nodes: int | None  # value-tree node limit (kernel redrawn above it)
    leaves: dict  # value leaf kind -> weight
    float_ops: dict  # operator -> weight where an operand is float
    int_ops: dict  # operator -> weight where both operands are int
    matrix: dict  # "xy", "yx", "literal" or "tree" -> weight
    lookup: dict  # "x", "y", "literal", "small" or "tree" -> weight
    index_p_op: tuple[float, ...] = ()  # index trees: probability of an operator at depth d


_FLOAT_OPS = {"+": 0.30, "-": 0.27, "*": 0.23, "/": 0.20}
_INT_OPS = {"+": 0.27, "-": 0.25, "*": 0.20, "/": 0.16, "%": 0.12}
_INDEX_OPS = {"+": 0.30, "-": 0.15, "*": 0.35, "/": 0.10, "%": 0.10}

PROFILES = {
    "realistic": _Profile(
        p_op=(1.0, 0.55, 0.45, 0.35, 0.25),
        max_nodes=15,
        leaves={"matrix": 0.34, "xxx": 0.24, "float": 0.22, "x": 0.08, "y": 0.08, "int": 0.04},
        float_ops=_FLOAT_OPS, int_ops=_INT_OPS,
        matrix={"xy": 0.45, "yx": 0.25, "literal": 0.30},
        lookup={"x": 0.30, "y": 0.30, "literal": 0.15, "small": 0.25}),
    "unrestricted": _Profile(
        p_op=(1.0, 0.8, 0.65, 0.55, 0.5, 0.45, 0.4, 0.35, 0.3, 0.25),
        max_nodes=None,
        leaves={"matrix": 0.36, "xxx": 0.22, "float": 0.22, "x": 0.07, "y": 0.07, "int": 0.06},
        float_ops=_FLOAT_OPS, int_ops=_INT_OPS,
        matrix={"xy": 0.55, "yx": 0.15, "tree": 0.30},
        lookup={"x": 0.20, "y": 0.20, "literal": 0.15, "tree": 0.45},
        index_p_op=(0.75, 0.45, 0.3)),
}


def _pick(rng: random.Random, weights: dict):
    """A key of *weights*, drawn with one rng.random() call."""
    u = rng.random() * sum(weights.values())
    for key, weight in weights.items():
        u -= weight
        if u < 0:
            return key
    return key


def _var(name):
    return Var("int", 0, N_MAX - 1, name)


def _int_literal(rng, digits):
    value = int(10 ** rng.uniform(0, digits))
    return IntLit("int", value, value, value)


def _float_text(value: np.float32) -> str:
    return np.format_float_positional(value, unique=True, trim="0")


def _nearest_float32(text: str) -> bool:
    """Whether the decimal *text* rounds straight to float32 (as a C compiler parses
    ``textf``) to the value np.float32(text) gives."""
    exact = Fraction(text)
    value = np.float32(text)
    here = abs(exact - Fraction(float(value)))
    for other in (np.nextafter(value, np.float32(np.inf)),
                  np.nextafter(value, np.float32(-np.inf))):
        if abs(exact - Fraction(float(other))) <= here:
            return False
    return True


def _float_literal(rng):
    while True:
        value = np.float32(rng.uniform(0.0, 1000.0))
        if float(value).is_integer():  # would compare equal to an int (see _pymbolic_value)
            continue
        text = _float_text(value)
        if _nearest_float32(text):
            return FloatLit("float", float(value), float(value), float(value), text)


class _Generator:
    def __init__(self, rng: random.Random, profile: _Profile):
        self.rng, self.profile = rng, profile

    # int trees in indices: C int32 semantics

    def index_tree(self, depth: int, max_depth: int, non_negative: bool) -> Node:
        for _ in range(_SUBTREE_TRIES):
            node = self._index_node(depth, max_depth)
            if node is not None and (not non_negative or node.lo >= 0):
                return node
        return _var("x")

    def _index_node(self, depth, max_depth):
        rng, p_op = self.rng, self.profile.index_p_op
        if depth < max_depth and rng.random() < p_op[depth]:
            left = self.index_tree(depth + 1, max_depth, False)
            right = self.index_tree(depth + 1, max_depth, False)
            op = _pick(rng, _INDEX_OPS)
            bounds = _int_interval(op, (left.lo, left.hi), (right.lo, right.hi))
            if bounds is None or bounds[0] < INT32_MIN or bounds[1] > INT32_MAX:
                return None
            return BinOp("int", *bounds, op, left, right)
        kind = _pick(rng, {"x": 0.38, "y": 0.38, "literal": 0.24})
        return _int_literal(rng, 5) if kind == "literal" else _var(kind)

    def small_index(self) -> Node:
        """At most 3 nodes: a leaf, or leaf op leaf."""
        rng = self.rng

        def leaf():
            kind = _pick(rng, {"x": 0.4, "y": 0.4, "literal": 0.2})
            return _int_literal(rng, 3) if kind == "literal" else _var(kind)

        for _ in range(_SUBTREE_TRIES):
            left, right = leaf(), leaf()
            op = _pick(rng, _INDEX_OPS)
            bounds = _int_interval(op, (left.lo, left.hi), (right.lo, right.hi))
            if bounds is not None:
                return BinOp("int", *bounds, op, left, right)
        return _var("x")

    def matrix(self) -> Node:
        kind = _pick(self.rng, self.profile.matrix)
        if kind == "xy":
            row, col = _var("x"), _var("y")
        elif kind == "yx":
            row, col = _var("y"), _var("x")
        elif kind == "literal":
            row, col = _int_literal(self.rng, 5), _int_literal(self.rng, 5)
        else:
            row = self.index_tree(0, len(self.profile.index_p_op), True)
            col = self.index_tree(0, len(self.profile.index_p_op), True)
        return Matrix("float", *INPUT_RANGE, row, col)

    def lookup(self) -> Node:
        kind = _pick(self.rng, self.profile.lookup)
        if kind in ("x", "y"):
            index = _var(kind)
        elif kind == "literal":
            index = _int_literal(self.rng, 5)
        elif kind == "small":
            index = self.small_index()
        else:
            index = self.index_tree(0, len(self.profile.index_p_op), False)
        return Lookup("float", *INPUT_RANGE, index)

    # the value tree

    def value(self, depth: int) -> Node:
        for _ in range(_SUBTREE_TRIES):
            node = self._value_node(depth)
            if node is not None:
                return node
        return self.matrix()

    def _value_node(self, depth):
        rng, profile = self.rng, self.profile
        if depth < len(profile.p_op) and rng.random() < profile.p_op[depth]:
            left, right = self.value(depth + 1), self.value(depth + 1)
            if left.dtype == right.dtype == "int":
                op = _pick(rng, profile.int_ops)
                bounds = _int_interval(op, (left.lo, left.hi), (right.lo, right.hi))
                if bounds is None or bounds[0] < -EXACT_INT or bounds[1] > EXACT_INT:
                    return None
                return BinOp("int", *bounds, op, left, right)
            op = _pick(rng, profile.float_ops)
            bounds = _float_interval(op, (left.lo, left.hi), (right.lo, right.hi))
            if bounds is None:
                return None
            return BinOp("float", *bounds, op, left, right)
        kind = _pick(rng, profile.leaves)
        if kind == "matrix":
            return self.matrix()
        if kind == "xxx":
            return self.lookup()
        if kind == "float":
            return _float_literal(rng)
        if kind == "int":
            return _int_literal(rng, 3)
        return _var(kind)


def _acceptable(tree: Node, profile: _Profile) -> bool:
    """The kernel-level rules: both arrays read (the twins' argument lists stay equal:
    Loopy drops unused arguments from its code), the node limit, and finite, well-conditioned
    results at the check inputs."""
    nodes = list(value_nodes(tree))
    if profile.max_nodes is not None and len(nodes) > profile.max_nodes:
        return False
    if not (any(isinstance(n, Matrix) for n in nodes)
            and any(isinstance(n, Lookup) for n in nodes)):
        return False
    return _numerically_sound(tree)


def _check_inputs(n: int):
    rng = np.random.default_rng(n)
    matrix = (rng.random((n, n)) + 0.5).astype(np.float32)
    xxx = (rng.random(LOOKUP) + 0.5).astype(np.float32)
    return matrix, xxx


def _numerically_sound(tree: Node) -> bool:
    """Finite at every work-item at the check size and at sampled work-items of every
    size up to N_MAX, and float32 evaluation within COND_TOLERANCE (norm-wise) of float64
    at the check size: what any float32 evaluation order then also meets."""
    matrix, xxx = _check_inputs(CHECK_N)
    with np.errstate(all="ignore"):
        single = _grid(tree, CHECK_N, matrix, xxx, exact=False)
        if not np.all(np.isfinite(single)):
            return False
        double = _grid(tree, CHECK_N, matrix, xxx, exact=True)
        scale = np.linalg.norm(double)
        error = np.linalg.norm(single.astype(np.float64) - double)
        if not np.isfinite(scale) or error > COND_TOLERANCE * scale:
            return False
        rng = np.random.default_rng(1)
        for n in sorted({*CPU_SIZES, *GPU_SIZES}):
            points = np.concatenate([[0, n - 1, 0, n - 1],
                                     rng.integers(0, n, 2048)]).astype(np.int32)
            other = np.concatenate([[0, 0, n - 1, n - 1],
                                    rng.integers(0, n, 2048)]).astype(np.int32)
            big, lut = _check_inputs(64)

            def at(i, j, big=big, n=n):
                k = (i.astype(np.int64) * n + j) % big.size
                return big.reshape(-1)[k]

            result = evaluate(tree, points, other, n, at, lut, exact=False)
            if not np.all(np.isfinite(result)):
                return False
    return True


@lru_cache(maxsize=None)
def _header(set_name: str, index: int):
    """(group size, u) of kernel *index*: u in [0, 1) picks N from a size family, so the
    families share the draws that follow."""
    rng = random.Random(f"{set_name}:{SEED}:{index}")
    group = rng.choice(GROUP_SIZES[set_name])
    return group, rng.random(), rng


@lru_cache(maxsize=None)
def _tree(set_name: str, index: int) -> Node:
    _, _, seeded = _header(set_name, index)
    rng = random.Random()
    rng.setstate(seeded.getstate())
    profile = PROFILES[set_name]
    for _ in range(_KERNEL_TRIES):
        tree = _Generator(rng, profile).value(0)
        if _acceptable(tree, profile):
            return tree
    raise KernelcastError(f"no acceptable random kernel {set_name} {index} in "
                          f"{_KERNEL_TRIES} draws")

# }}}


# {{{ evaluation with NumPy, as C computes

def evaluate(node: Node, x, y, n: int, matrix, xxx, *, exact: bool = False):
    """The value of *node* at work-items (x, y) (int arrays that broadcast) for size *n*,
    with C's types: ints in int32 and floats in float32, ints converted to float32 where C
    converts them. *matrix* is an (n, n) array or a function (row, col) -> values; *xxx*
    the 128 lookup values. With *exact*, ints in int64 and floats in float64 (the same
    values where C's ints do not overflow, which the generator guarantees)."""
    itype, ftype = (np.int64, np.float64) if exact else (np.int32, np.float32)
    x, y = np.asarray(x, itype), np.asarray(y, itype)
    xxx = np.asarray(xxx).astype(ftype)
    if callable(matrix):
        at = matrix
    else:
        grid = np.asarray(matrix)

        def at(i, j):
            return grid[i, j]

    def rec(node):
        if isinstance(node, Var):
            return x if node.name == "x" else y
        if isinstance(node, IntLit):
            return itype(node.value)
        if isinstance(node, FloatLit):
            return ftype(node.value)
        if isinstance(node, Matrix):
            row, col = rec(node.row), rec(node.col)
            if not node.plain:
                row, col = np.remainder(row, itype(n)), np.remainder(col, itype(n))
            row, col = np.broadcast_arrays(row, col)
            return np.asarray(at(row, col)).astype(ftype)
        if isinstance(node, Lookup):
            return xxx[np.bitwise_and(rec(node.index), itype(LOOKUP - 1))]
        left, right = rec(node.left), rec(node.right)
        if node.dtype == "int":
            if node.op == "/":
                return np.floor_divide(left, right)
            if node.op == "%":
                return np.remainder(left, right)
        else:
            left = left.astype(ftype) if isinstance(left, np.ndarray) else ftype(left)
            right = right.astype(ftype) if isinstance(right, np.ndarray) else ftype(right)
            if node.op == "/":
                return np.divide(left, right)
        if node.op == "+":
            return np.add(left, right)
        if node.op == "-":
            return np.subtract(left, right)
        return np.multiply(left, right)

    return rec(node)


def _grid(tree: Node, n: int, matrix, xxx, exact: bool = False) -> np.ndarray:
    """The (n, n) result, row y and column x (``res[y * WIDTH + x]``)."""
    x = np.arange(n)[None, :]
    y = np.arange(n)[:, None]
    ftype = np.float64 if exact else np.float32
    result = evaluate(tree, x, y, n, matrix, xxx, exact=exact)
    return np.broadcast_to(np.asarray(result, ftype), (n, n))

# }}}


# {{{ the twins

def _pymbolic_index(node: Node, n: int):
    """An int tree in an index position (Loopy computes it in int)."""
    import pymbolic.primitives as p

    if isinstance(node, Var):
        return p.Variable(node.name)
    if isinstance(node, IntLit):
        return node.value
    left, right = _pymbolic_index(node.left, n), _pymbolic_index(node.right, n)
    if node.op == "+":
        return p.Sum((left, right))
    if node.op == "-":
        return p.Sum((left, p.Product((-1, right))))
    if node.op == "*":
        return p.Product((left, right))
    if node.op == "/":
        return p.FloorDiv(left, right)
    return p.Remainder(left, right)


def _pymbolic_value(node: Node, n: int):
    """The value tree as pymbolic, printed by Loopy in C's evaluation order:

    - an int operand of a float operation is cast explicitly (Loopy then prints it in
      parentheses, ``(float) (...)``; within +-2^24 Loopy's float arithmetic on it is
      exact); an int literal there stays a Python int, which Loopy prints as a float
      literal. Never a float constant equal to an int: Loopy's mappers cache by
      expression equality and would put ``(-1)*1.0`` from a value into an equal ``(-1)*1``
      of an index (float literals are never integral for the same reason);
    - int / and % are FloorDiv and Remainder (C's / and % on non-negative operands);
    - a sum as the right operand of a sum is wrapped in a one-factor Product, a product as
      the right operand of a product in a one-term Sum: Loopy prints same-precedence
      children without parentheses, and these wrappers make it print them (they count no
      operation and compile to nothing).
    """
    import pymbolic.primitives as p
    from loopy.symbolic import TypeCast

    if isinstance(node, Var):
        return p.Variable(node.name)
    if isinstance(node, IntLit):
        return node.value
    if isinstance(node, FloatLit):
        return np.float32(node.value)
    if isinstance(node, Matrix):
        row, col = _pymbolic_index(node.row, n), _pymbolic_index(node.col, n)
        if node.plain:
            return p.Variable("matrix")[p.Sum((p.Product((row, n)), col))]
        return p.Variable("matrix")[p.Sum((p.Product((p.Remainder(row, n), n)),
                                          p.Remainder(col, n)))]
    if isinstance(node, Lookup):
        return p.Variable("xxx")[p.BitwiseAnd((_pymbolic_index(node.index, n), LOOKUP - 1))]
    if node.dtype == "int":
        left, right = _pymbolic_value(node.left, n), _pymbolic_value(node.right, n)
    else:
        def operand(child):
            if child.dtype == "float":
                return _pymbolic_value(child, n)
            if isinstance(child, IntLit):
                return child.value  # printed as a float literal in the float context
            return TypeCast(np.float32, _pymbolic_value(child, n))

        left, right = operand(node.left), operand(node.right)
    if node.op == "+":
        if isinstance(right, p.Sum):
            right = p.Product((right,))
        return p.Sum((left, right))
    if node.op == "-":
        return p.Sum((left, p.Product((-1, right))))
    if node.op == "*":
        if isinstance(right, p.Product):
            right = p.Sum((right,))
        return p.Product((left, right))
    if node.op == "/":
        if node.dtype == "int":
            return p.FloorDiv(left, right)
        return p.Quotient(left, right)
    return p.Remainder(left, right)


# {{{ GROPHECY code skeletons

def _affine_index(node: Node) -> dict | None:
    """An int index tree as {"x": a, "y": b, "": c} (a*x + b*y + c), or None when it is not
    affine: a product of two non-constant terms, or / or % with a non-constant operand.
    Constant / and % fold as C computes them (the generator keeps their operands
    non-negative)."""
    if isinstance(node, Var):
        return {node.name: 1}
    if isinstance(node, IntLit):
        return {"": node.value}
    left, right = _affine_index(node.left), _affine_index(node.right)
    if left is None or right is None:
        return None
    if node.op in ("+", "-"):
        sign = 1 if node.op == "+" else -1
        out = dict(left)
        for k, v in right.items():
            out[k] = out.get(k, 0) + sign * v
        return {k: v for k, v in out.items() if v or not k}
    if node.op == "*":
        for a, b in ((left, right), (right, left)):
            if set(a) <= {""}:
                c = a.get("", 0)
                return {k: c * v for k, v in b.items() if c * v or not k}
        return None
    if not set(left) | set(right) <= {""}:
        return None
    a, b = left.get("", 0), right.get("", 0)
    return {"": a // b if node.op == "/" else a % b}


def _affine_text(terms: dict) -> str:
    """a*y + b*x + c in the skeleton language (y, x, then the constant)."""
    parts = [{1: v, -1: f"-{v}"}.get(c, f"{c}*{v}") for v in ("y", "x")
             if (c := terms.get(v, 0))]
    if terms.get("", 0) or not parts:
        parts.append(str(terms.get("", 0)))
    return " + ".join(parts).replace("+ -", "- ")


def _index_vars(node: Node) -> list[str]:
    """The work-item coordinates an index tree reads, in parallel_for order (y, x)."""
    names = {n.name for n in walk(node) if isinstance(n, Var)}
    return [v for v in ("y", "x") if v in names]

# }}}


@dataclass(frozen=True)
class RandomKernel:
    """Kernel *index* of set *set* at size *n*: its OpenCL source, Loopy twin and NumPy
    reference."""

    set: str
    index: int
    group: tuple[int, int]
    n: int
    tree: Node = field(repr=False)

    @property
    def name(self) -> str:
        return f"random_{self.set}_{self.index}"

    @cached_property
    def expression(self) -> str:
        """The expression as the OpenCL source writes it."""
        return self.tree.c(top=True)

    @cached_property
    def node_count(self) -> int:
        """Nodes of the value tree (operators and leaves; an array access is one leaf)."""
        return sum(1 for _ in value_nodes(self.tree))

    @cached_property
    def depth(self) -> int:
        """Operators on the longest root-to-leaf path of the value tree."""
        return value_depth(self.tree)

    def opencl_source(self) -> str:
        head = f"__kernel void {self.name}("
        pad = " " * len(head)
        return (f"#define HEIGHT {self.n}\n"
                f"#define WIDTH {self.n}\n"
                f"{head}__global const float *restrict matrix,\n"
                f"{pad}__global const float *restrict xxx,\n"
                f"{pad}__global float *restrict res)\n"
                "{\n"
                "    int x = get_global_id(0);\n"
                "    int y = get_global_id(1);\n"
                f"    res[y * WIDTH + x] = {self.expression};\n"
                "}\n")

    def loopy_kernel(self):
        """The Loopy twin: the same expression, arrays flattened, x split by the group's
        width into g.0/l.0 and y by its height into g.1/l.1 (no guards: N is a multiple)."""
        return loopy_twin(self.tree, self.name, self.n, self.group)

    def reference(self, args: dict) -> dict:
        """{"res": the values C computes} for the inputs in *args*."""
        n = self.n
        matrix = np.asarray(args["matrix"]).reshape(n, n)
        with np.errstate(all="ignore"):
            result = _grid(self.tree, n, matrix, np.asarray(args["xxx"]))
        return {"res": np.array(result, np.float32).reshape(-1)}

    def skeleton_source(self) -> str:
        """The kernel as a GROPHECY code skeleton (docs/grophecy-skeletons.md): matrix,
        xxx and res declared, ``parallel_for(HEIGHT, WIDTH) : y, x``, one ``ld`` per array
        read of the tree, ``comp`` = the tree's float operations, ``st res[y][x]``.

        x is the last parallel index because GROPHECY (characterize._warp_points, realize)
        makes the last index the fastest thread index (CUDA's x, Loopy's l.0), which is
        OpenCL dimension 0 here. An index that is affine and stays in range (so ``% N`` or
        ``& 0x7F`` changes nothing) is written as such, constants folded; any other is the
        language's indirect form ``ld xxx[ixK[y][x]]``, reading an int array ixK indexed
        by the coordinates the index depends on (declared, never loaded: the index is
        computed in registers). GROPHECY then treats it as random where it varies across a
        warp and as one value for the warp where it does not, which is what such an index
        can be known to do without running it (docs/random-kernels.md)."""
        n = self.n
        indirect: dict[tuple[str, str], tuple[str, list[str]]] = {}

        def index(node: Node, limit: int, kind: str) -> str:
            """*node* masked (& 0x7F, limit 128) or wrapped (% N, limit N) as one index."""
            terms = _affine_index(node)
            if terms is not None and set(terms) <= {""}:
                value = terms.get("", 0)
                return str(value & (LOOKUP - 1) if kind == "&" else value % limit)
            if terms is not None:  # its extremes over x, y in 0 .. n - 1
                ends = [terms.get("", 0)] * 2
                for k, c in terms.items():
                    if k:
                        ends = [ends[0] + min(0, c * (n - 1)),
                                ends[1] + max(0, c * (n - 1))]
                if 0 <= ends[0] and ends[1] < limit:
                    return _affine_text(terms)
            key = (kind, node.c(top=True))
            if key not in indirect:
                indirect[key] = (f"ix{len(indirect)}", _index_vars(node))
            name, names = indirect[key]
            return name + "".join(f"[{v}]" for v in names)

        loads = []
        for node in value_nodes(self.tree):
            if isinstance(node, Matrix):
                if node.plain:
                    loads.append(f"ld matrix[{node.row.name}][{node.col.name}]")
                else:
                    loads.append(f"ld matrix[{index(node.row, n, '%')}]"
                                 f"[{index(node.col, n, '%')}]")
            elif isinstance(node, Lookup):
                loads.append(f"ld xxx[{index(node.index, LOOKUP, '&')}]")
        flops = sum(1 for node in value_nodes(self.tree)
                    if isinstance(node, BinOp) and node.dtype == "float")
        dims = {"y": "[HEIGHT]", "x": "[WIDTH]"}
        lines = [f"/* {self.name}: work-groups {self.group[0]} x {self.group[1]} along "
                 f"OpenCL dimensions 0 (x) and 1 (y), N = {n}.",
                 " * x = get_global_id(0) is the last parallel index: GROPHECY's fastest "
                 "thread index. */",
                 f"#define HEIGHT {n}", f"#define WIDTH {n}",
                 f"#define FLOPS {flops}*HEIGHT*WIDTH",
                 "float matrix[HEIGHT][WIDTH]", f"float xxx[{LOOKUP}]",
                 "float res[HEIGHT][WIDTH]"]
        for (kind, text), (name, names) in indirect.items():
            text = text if " " not in text else f"({text})"
            wrap = "& 0x7F" if kind == "&" else "% N"
            lines.append(f"// {name} = {text} {wrap}: not affine on the NDRange; computed, "
                         "not loaded")
            lines.append(f"int {name}" + "".join(dims[v] for v in names))
        lines.append("parallel_for(HEIGHT, WIDTH) : y, x")
        lines.append("{")
        lines += [f"    {ld}" for ld in loads]
        lines += [f"    comp {flops}", "    st res[y][x]", "}"]
        return "\n".join(lines) + "\n"

    def grophecy_layout(self):
        """The GROPHECY Layout of the kernel as launched: block = the work-group along
        (y, x), the skeleton's parallel_for order, one task per thread (no folding), no
        staging, no shared memory, nothing unrolled (the kernel has no loops)."""
        from kernelcast.frontends.skeleton import Layout

        return Layout(block=(self.group[1], self.group[0]), fold=(1, 1), stages=(),
                      cached=(), unroll=False)

    def grophecy_workload(self):
        """(parsed skeleton, layout): GrophecyModel's workload for this launch, e.g.
        ``GrophecyModel(hardware="h100").fit().predict(k.grophecy_workload(), {})``."""
        from kernelcast.frontends.skeleton import parse_skeleton

        # a path that names the kernel, for messages
        return (parse_skeleton(self.skeleton_source(), path=f"<{self.name} N={self.n}>"),
                self.grophecy_layout())


@lru_cache(maxsize=64)
def loopy_twin(tree: Node, name: str, n: int, group: tuple[int, int]):
    """The Loopy kernel *name* computing *tree* over an n x n NDRange in work-groups of
    *group* (n a multiple of both): ``res[y*n + x] = <tree>`` (cached: Loopy kernels are
    immutable)."""
    import loopy as lp
    import pymbolic.primitives as p

    x, y = p.Variable("x"), p.Variable("y")
    store = lp.Assignment(p.Variable("res")[p.Sum((p.Product((y, n)), x))],
                          _pymbolic_value(tree, n), id="store")
    knl = lp.make_kernel(
        f"{{[x, y]: 0 <= x, y < {n}}}", [store],
        [lp.GlobalArg("matrix", np.float32, shape=(n * n,)),
         lp.GlobalArg("xxx", np.float32, shape=(LOOKUP,)),
         lp.GlobalArg("res", np.float32, shape=(n * n,))],
        name=name, lang_version=(2018, 2))
    knl = lp.split_iname(knl, "x", group[0], inner_tag="l.0", outer_tag="g.0")
    return lp.split_iname(knl, "y", group[1], inner_tag="l.1", outer_tag="g.1")


def _check_set(set_name):
    if set_name not in SETS:
        raise KernelcastError(f"unknown random-kernel set {set_name!r}; known: "
                              f"{', '.join(SETS)}")


@lru_cache(maxsize=4096)
def random_kernel(set_name: str, index: int, n: int | None = None, *,
                  cpu: bool = False) -> RandomKernel:
    """Kernel *index* of *set_name* ("realistic" or "unrestricted") at size *n*, by default
    the N it draws from GPU_SIZES (from CPU_SIZES with *cpu*)."""
    _check_set(set_name)
    if not 0 <= index:
        raise KernelcastError(f"random kernel index must not be negative, got {index}")
    group = _header(set_name, index)[0]
    if n is None:
        n = drawn_size(set_name, index, cpu=cpu)
    if not 1 <= n <= N_MAX or n % group[0] or n % group[1]:
        raise KernelcastError(
            f"random kernel {set_name} {index} (work-group {group[0]}x{group[1]}) runs at "
            f"sizes N up to {N_MAX} that are multiples of its work-group size, not {n}")
    return RandomKernel(set_name, index, group, n, _tree(set_name, index))

def drawn_size(set_name: str, index: int, *, cpu: bool = False) -> int:
    """The N kernel *index* draws from GPU_SIZES (from CPU_SIZES with *cpu*)."""
    _check_set(set_name)
    sizes = CPU_SIZES if cpu else GPU_SIZES
    return sizes[int(_header(set_name, index)[1] * len(sizes))]


def drawn_group(set_name: str, index: int) -> tuple[int, int]:
    """The work-group size (g0, g1) kernel *index* draws."""
    _check_set(set_name)
    return _header(set_name, index)[0]

# }}}


# {{{ suites

def _suite(set_name: str, cpu: bool) -> Suite:
    name = f"random-{set_name}" + ("-cpu" if cpu else "")

    def kernel(case):
        return random_kernel(set_name, int(case.variant), case.params["n"])

    def sizes(variant, p, group):
        index = int(variant)
        if tuple(group) != drawn_group(set_name, index):
            return []
        return [{"n": drawn_size(set_name, index, cpu=cpu)}]

    kclass = KernelClass(
        "random", f"Pöppl & Herz random kernels ({set_name})",
        tuple(str(i) for i in range(COUNT)),
        lambda case: kernel(case).loopy_kernel(), sizes, (0,),
        group_sizes=GROUP_SIZES[set_name], dtypes=("float32",),
        reference=lambda case, args: kernel(case).reference(args),
        check_params={"n": CHECK_N},
        source=lambda case: kernel(case).opencl_source(), sized_code=True)
    return Suite(name, (kclass,))


RANDOM_REALISTIC = _suite("realistic", cpu=False)
RANDOM_UNRESTRICTED = _suite("unrestricted", cpu=False)
RANDOM_REALISTIC_CPU = _suite("realistic", cpu=True)
RANDOM_UNRESTRICTED_CPU = _suite("unrestricted", cpu=True)
RANDOM_SUITES = (RANDOM_REALISTIC, RANDOM_UNRESTRICTED, RANDOM_REALISTIC_CPU,
                 RANDOM_UNRESTRICTED_CPU)

# }}}
