"""What counting a kernel returns: the counts, its arguments and its accesses.

Public names: KernelCounts, Argument, Access, ACCESS_CLASSES, OP_KINDS, TYPE_BYTES.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

ACCESS_CLASSES = ("coalesced", "constant", "interval", "identical", "complex")
# bytes of each declared type an Argument can name
TYPE_BYTES = {"char": 1, "uchar": 1, "bool": 1, "short": 2, "ushort": 2, "int": 4, "uint": 4,
              "float": 4, "long": 8, "ulong": 8, "double": 8}
OP_KINDS = ("add", "sub", "mul", "div", "mod", "and", "or", "xor", "shl", "shr", "not", "neg",
            "cmp", "logic", "convert", "select", "call.NAME")


class Argument(NamedTuple):
    """A kernel argument: ``type`` is the declared scalar (or element) type in OpenCL
    spelling (char, uchar, ..., ulong for size_t, float, double, bool); ``space`` is
    global, local or constant for pointers and private for scalars; ``const`` is whether
    the pointee (or the scalar) is const."""

    name: str
    type: str
    is_pointer: bool
    space: str
    const: bool


class Access(NamedTuple):
    """One array access in the source (``count`` of them per work-item): private
    arrays have class "private"; a loop-invariant access in a loop appears twice, its
    first executions with their class and the rest as "identical". ``stride`` is the
    index's step, in elements, from one work-item to the next along dimension 0 when the
    index is affine in the dimension-0 ids (0 when it does not depend on them), None
    otherwise; ``index`` is the index's node in ``KernelCounts.nodes``;
    ``element_bytes`` the bytes of one element of the array; ``guards`` the conditions
    (node, whether it holds) of the branches around it and returns before it, where the
    walk decided them: the access runs at the work-items where they all hold;
    ``loops`` the counters' nodes of the ``for`` loops around it, outermost first."""

    array: str
    space: str
    direction: str
    access_class: str
    line: int
    count: float
    stride: int | None = None
    index: int | None = None
    element_bytes: int | None = None
    guards: tuple = ()
    loops: tuple = ()


@dataclass(frozen=True)
class KernelCounts:
    """What one work-item of a kernel executes (docs/opencl.md): ``ops`` keyed
    ``"KIND:TYPE"``, ``accesses`` keyed ``"SPACE:DIRECTION:CLASS"``, both per work-item;
    ``defines`` maps each macro to its folded value (or its text when not constant);
    ``loops`` counts the loops the kernel runs; ``nodes`` is the table of the
    structural expression nodes that ``Access.index`` points into (see values.Keys);
    ``recurrences`` the operations per work-item on loop-carried paths, by
    kernelcast.properties.recurrence's kinds (``acc += a[k]``: one flop per pass);
    ``counters`` the lowest and highest value of each loop counter node whose loop runs
    alike in every work-item, else its first value's and bound's nodes and the
    comparison (for the indices' reach); ``counter_steps`` the step of each counter of
    an additive loop that steps by more than 1."""

    name: str
    work_dims: int
    ops: dict
    accesses: dict
    barriers: float
    arguments: tuple
    defines: dict
    access_list: tuple = ()
    loops: int = 0
    nodes: tuple = field(default=(), compare=False, repr=False)
    recurrences: dict = field(default_factory=dict)
    counters: dict = field(default_factory=dict, compare=False, repr=False)
    counter_steps: dict = field(default_factory=dict, compare=False, repr=False)
