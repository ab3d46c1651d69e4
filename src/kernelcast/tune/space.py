"""Search spaces over Loopy transformations, as data.

A *space* names, for a Loopy kernel whose parallel loops are not yet mapped to the
hardware, the values each transformation may take:

- ``axes``: the parallel loops, fastest first (the first becomes work-group axis 0,
  ``l.0``/``g.0``, which should be the loop whose neighbours are adjacent in memory); for
  each, the work-items per work-group along it (``group``) and the tasks per work-item
  (``per_item``, dealt cyclically: adjacent work-items take adjacent tasks, so accesses stay
  coalesced);
- ``unroll``: for sequential loops, the unrolling factors (1: not unrolled);
- ``tile``: for sequential (reduction) loops, the tile length T (1: not tiled): the loop is
  split into tiles of T, so that a prefetch can fetch one tile at a time;
- ``split``: for reduction loops, the work-items W that share each reduction (1: each
  work-item reduces alone): the loop is split by W, the W work-items form local axis 0
  (the axes then start at ``l.1``) and Loopy adds the tree reduction in local memory;
- ``prefetch``: arrays fetched into local memory, one tile per work-group, before use: for
  each, the loops the tile spans (``over``: an axis spans its group × per_item, a tiled
  loop its tile, any other loop all of it), whether to fetch (``fetch``) and by how many
  elements to pad the tile's fastest axis (``pad``, against local-memory bank conflicts);
- ``restrict``: conditions on the parameters that every variant meets, as Kernel Tuner's
  restrictions (``"tile.k == 1 or prefetch.a"``): comparisons, ``and``/``or``/``not``,
  ``+ - * // %`` and ``in`` over parameter names and integer or boolean constants.

A *variant* is one value per parameter, a mapping such as ``{"j.group": 32,
"j.per_item": 2, "i.group": 4, "i.per_item": 1, "unroll.k": 4}``; the parameters are
``AXIS.group``, ``AXIS.per_item``, ``unroll.LOOP``, ``tile.LOOP``, ``split.LOOP``,
``prefetch.ARRAY`` and (where the space pads) ``pad.ARRAY``, in that order. ``apply``
makes its kernel, ``code`` the Python that makes it (the same ``steps`` both ways);
``invalid`` says why a variant cannot run on a device or None, checking in this order: a
work-group of more work-items than the device allows (counting a split reduction's W),
more than 3 local axes, an unrolling that does not divide its tile, a loop both tiled and
split, a padding without its prefetch, a prefetch over a split loop, what Loopy refuses
whatever the kernel (two reductions split; a prefetched tile spanning fewer loops than
the work-group has local axes), more local memory than a group may have, or (given the
variant's kernel) a variant Loopy cannot schedule or generate. ``launchable`` runs the
checks that need no kernel over a whole space at once (without making the variants whose
work-group is already too large) and counts what it leaves out by kind of reason, in few
texts. A refusal of Loopy's is said in kernelcast's words, naming the parameters
responsible (a split reduction the kernel's other instructions do not run across; a
prefetched tile one element wide along an axis); Loopy's own first line is kept only for
a refusal of another kind.
``apply`` raises InvalidVariant where Loopy refuses a transformation or makes a prefetch
tile whose size is not fixed. ``variant_key`` leaves out ``tile``, ``split``,
``prefetch`` and ``pad`` at their "off" value (1, 1, false, 0), so a variant that uses
none of them keeps the name it had before these parameters existed.

Spaces are written as TOML::

    restrict = ["(tile.k > 1) == (prefetch.a or prefetch.b)"]   # optional, before tables
    [axes.j]            # listed fastest first
    group = [16, 32, 64]
    per_item = [1, 2]
    [axes.i]
    group = [1, 2, 4, 8]
    [unroll]
    k = [1, 4]
    [tile]              # tile lengths of sequential loops (1: not tiled)
    k = [1, 16]
    [split]             # work-items sharing a reduction (1: not split)
    k = [1]
    [prefetch.a]        # a's tile into local memory
    over = ["i", "k"]   # the loops the tile spans
    fetch = [false, true]   # default [false, true]
    pad = [0, 1]            # default [0]
    [prefetch.b]
    over = ["k", "j"]

How a variant is made (``steps``): each axis is split into groups (``g.k``) and work-items
(``l.k``), with a loop over its tasks per work-item (``AXIS_item``; ``ilp`` where the
variant tiles a loop, so the tile loop can run outside the tasks with one accumulator per
task); a split reduction into ``LOOP_seq`` and the work-items ``LOOP_w``
(``split_reduction_outward``); a tiled loop into ``LOOP_tile`` and ``LOOP_t``; a prefetch
is ``lp.add_prefetch(knl, ARRAY, sweep_inames=..., temporary_name="ARRAY_fetch",
default_tag="l.auto", fetch_outer_inames=..., fetch_bounding_box=True)`` (fetched by all
work-items of the group, nested in the group loops and the tile loops it spans); padding
is ``pad_local_array`` (below: Loopy has ``storage_shape`` for padded storage but no
transformation that sets it together with the strides); an unrolled loop (the tile's inner
loop where tiled, the sequential part where split) is split by its factor with the inner
part unrolled (in a tile, ``prioritize_loops`` keeps the unrolled copies inside one loop).

``default_space`` derives one from the kernel: its parallel loops (those every written
result depends on and no reduction runs over), the last one fastest; for each, powers of
two for its group (up to its trip count; the fastest one from a warp of work-items) and 1,
2 or 4 tasks per work-item, with a restriction keeping the work-group a multiple of the
warp (``warp_size``, 32; 1 or a CPU's SIMD width where no warp matters) and at most the
device's ``max_group_size``; unrolling by 1 or 4 for sequential loops with a fixed trip
count; a split by 1 or 32 work-items (up to the trip count) for a kernel of one
instruction holding one reduction over one loop and at most two axes (Loopy splits a
reduction only where every instruction holds it); and, where no split is offered, a
prefetch (off or on) for each array that is only read, is indexed by every axis and by
them alone (a tile spanning fewer would leave work-items out of its fetch; loops that
start at 0: Loopy sizes the tile of a loop that starts elsewhere by the whole array, as
for the ``stencil2d`` family), and is read with reuse within a work-group (at several
offsets, as a stencil reads), with a restriction against a tile one element wide along
an axis it is read at one offset along. Tiles are not derived: tile a reduction loop and
prefetch over it by hand (the ``matmul`` family does). A default space of more than
``max_variants`` (300) variants is thinned: the parameter with the most values (the later
one in the space's order on a tie) keeps every other value, its first (smallest, or off)
included, until the space holds few enough; ``Space.dropped`` lists the values left out.
``full_space`` is the wider space the random families of kernelcast.tune.random_families
are drawn from: every power of two up to the device's limit for each group, 1 to 8 tasks per work-item, unrolling by
1, 2 or 4, a split of every reduction loop and every reused read's prefetch.

Public names: Axis, Prefetch, Space, InvalidVariant, OFF, MAX_DEPTH, WARP_SIZE,
MAX_VARIANTS, load_space, check_space, check_work, default_space, full_space, launchable,
count_launchable, steps, apply, code, invalid, variant_key, pad_local_array.
"""

from __future__ import annotations

import ast
import dataclasses
import itertools
import math
import operator
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from kernelcast.errors import KernelcastError, UsageError
from kernelcast.frontends.files import read_toml_file

#: Tasks per work-item the default space explores.
DEFAULT_PER_ITEM = (1, 2, 4)
#: Unrolling factors the default space explores for a fixed-trip sequential loop.
DEFAULT_UNROLL = (1, 4)
#: Work-items sharing a reduction the default space explores (up to the trip count).
DEFAULT_SPLIT = (1, 32)
#: The work-items of a warp, of which the default space's work-groups are multiples
#: (NVIDIA's; AMD's wavefront is 64; a CPU device has no warp: 1 or its SIMD width).
WARP_SIZE = 32
#: The most variants the default space holds; a larger one is thinned.
MAX_VARIANTS = 300
#: Tasks per work-item and unrolling factors of ``full_space``.
FULL_PER_ITEM = (1, 2, 4, 8)
FULL_UNROLL = (1, 2, 4)
#: The value at which each newer kind of parameter changes nothing; ``variant_key``
#: leaves such a parameter out.
OFF = {"tile": 1, "split": 1, "prefetch": False, "pad": 0}
_KINDS = ("unroll", *OFF)


class InvalidVariant(KernelcastError):
    """A variant that cannot be made or run; the message says why in one line."""


@dataclass(frozen=True)
class Axis:
    """One parallel loop: work-items per group and tasks per work-item to explore."""

    iname: str
    group: tuple[int, ...]
    per_item: tuple[int, ...] = (1,)


@dataclass(frozen=True)
class Prefetch:
    """An array fetched into local memory, one tile per work-group: the loops the tile
    spans, whether to fetch, and the padding of the tile's fastest axis to explore."""

    array: str
    over: tuple[str, ...]
    fetch: tuple[bool, ...] = (False, True)
    pad: tuple[int, ...] = (0,)


@dataclass(frozen=True)
class Space:
    """The values of every transformation parameter; see the module docstring."""

    axes: tuple[Axis, ...]
    unroll: tuple[tuple[str, tuple[int, ...]], ...] = field(default=())
    tile: tuple[tuple[str, tuple[int, ...]], ...] = field(default=())
    split: tuple[tuple[str, tuple[int, ...]], ...] = field(default=())
    prefetch: tuple[Prefetch, ...] = field(default=())
    restrict: tuple[str, ...] = field(default=())
    #: (parameter, values) that ``default_space`` left out to keep within its
    #: max_variants; empty where nothing was left out. Not part of the space's identity.
    dropped: tuple[tuple[str, tuple], ...] = field(default=(), compare=False)

    def __post_init__(self):
        reserved = sorted({a.iname for a in self.axes} & set(_KINDS))
        if reserved:
            raise UsageError(f"an axis may not be named {', '.join(reserved)}: its "
                             "parameters would read as another kind's")
        names = [n for n, _ in self._parameter_list()]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise UsageError(f"the space names parameter {', '.join(twice)} twice")
        for p in self.prefetch:
            if not p.over:
                raise UsageError(f"prefetch of {p.array}: over names no loop")
        axes = {a.iname for a in self.axes}
        for kind in ("unroll", "tile", "split"):
            both = [n for n, _ in getattr(self, kind) if n in axes]
            if both:
                raise UsageError(f"[{kind}] names {', '.join(both)}, an axis of the space "
                                 "(a parallel loop mapped to work-groups); unroll, tile and "
                                 "split take the sequential loops")
        self._conditions  # noqa: B018 - compiled now, so a bad restriction fails here

    def _parameter_list(self) -> list[tuple[str, tuple]]:
        out = []
        for axis in self.axes:
            out.append((f"{axis.iname}.group", axis.group))
            out.append((f"{axis.iname}.per_item", axis.per_item))
        for kind in ("unroll", "tile", "split"):
            out += [(f"{kind}.{iname}", values) for iname, values in getattr(self, kind)]
        for p in self.prefetch:
            out.append((f"prefetch.{p.array}", p.fetch))
            if tuple(p.pad) != (0,):
                out.append((f"pad.{p.array}", p.pad))
        return out

    def parameters(self) -> dict[str, tuple]:
        """Parameter name → the values it takes, in a fixed order."""
        return dict(self._parameter_list())

    @cached_property
    def _conditions(self):
        names = set(self.parameters())
        return [(text, _restriction(text, names)) for text in self.restrict]

    @cached_property
    def _restricted(self) -> frozenset[str]:
        """The parameters some restriction names."""
        return frozenset(_name(node) for _, tree in self._conditions
                         for node in ast.walk(tree) if isinstance(node, ast.Attribute))

    def allows(self, variant: Mapping) -> bool:
        """Whether *variant* meets every restriction of the space; a UsageError where a
        restriction divides by zero (a variant it cannot judge is the restriction's
        fault, not a reason to drop the variant silently)."""
        for text, tree in self._conditions:
            try:
                if not _evaluate(tree, variant):
                    return False
            except ZeroDivisionError:
                at = ", ".join(f"{k}={_text(v)}" for k, v in variant.items())
                raise UsageError(f"restriction {_quoted(text)} divides by zero at {at}; "
                                 "guard the division, as in x != 0 and y // x > 1") from None
        return True

    def __len__(self) -> int:
        return _completions(self, list(self.parameters().items()), {}, 0)

    def variants(self) -> Iterator[dict]:
        """Every variant that meets the restrictions, as {parameter: value}, in a fixed
        order."""
        params = self.parameters()
        for values in itertools.product(*params.values()):
            variant = dict(zip(params, values, strict=True))
            if self.allows(variant):
                yield variant


def _completions(space: Space, params: list, prefix: Mapping, depth: int) -> int:
    """How many variants of *space* that meet its restrictions extend *prefix* (values of
    ``params[:depth]``): only the parameters the restrictions name are enumerated, the
    others multiply."""
    rest = params[depth:]
    named = [(n, v) for n, v in rest if n in space._restricted]
    free = math.prod(len(v) for n, v in rest if n not in space._restricted)
    if not space.restrict or free == 0:
        return free * math.prod(len(v) for _, v in named)
    names = [n for n, _ in named]
    first = {**prefix, **{n: v[0] for n, v in rest}}  # a restriction's error shows it all
    return free * sum(space.allows({**first, **dict(zip(names, values, strict=True))})
                      for values in itertools.product(*(v for _, v in named)))


# {{{ restrictions: a small, safe expression language over parameter names

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
            ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
            ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}


#: How deeply a restriction may nest: a condition over a space's parameters needs a
#: handful of levels, and evaluating each level takes Python frames (at most 1,000).
MAX_DEPTH = 50


def _quoted(text: str, width: int = 60) -> str:
    """*text* as an error line quotes it: repr, cut to *width* characters."""
    return repr(text if len(text) <= width else text[:width - 1] + "…")


def _restriction(text: str, names: set[str]):
    """*text* parsed and checked: only parameter names, integer and boolean constants,
    comparisons, and/or/not, integer arithmetic and ``in`` a list of values, nested at
    most MAX_DEPTH deep. Each problem is a UsageError that quotes *text*."""
    if not isinstance(text, str):
        raise UsageError(f"a restriction must be text, not {text!r}")
    shown = _quoted(text)
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as err:
        raise UsageError(f"restriction {shown} is not an expression: {err.msg}") from None
    except (RecursionError, MemoryError):  # Python's parser gives up on deep nesting
        raise UsageError(f"restriction {shown} nests more than {MAX_DEPTH} levels "
                         "deep") from None
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise UsageError(f"restriction {shown} nests more than {MAX_DEPTH} levels deep")
        stack += [(c, depth + isinstance(c, ast.expr)) for c in ast.iter_child_nodes(node)]
    parts, lists = set(), set()  # ids of the names in KIND.NAME, of the lists after in
    for node in ast.walk(tree):  # parents before their children
        if isinstance(node, ast.Attribute):
            if not isinstance(node.value, ast.Name):
                raise UsageError(f"restriction {shown}: {ast.unparse(node)} is not a "
                                 "parameter name")
            name = _name(node)
            if name not in names:
                raise UsageError(f"restriction {shown} names {name}, not a parameter of "
                                 f"the space ({', '.join(sorted(names))})")
            parts.add(id(node.value))
        elif isinstance(node, ast.Compare):
            for i, (op, right) in enumerate(zip(node.ops, node.comparators, strict=True)):
                if not isinstance(op, (ast.In, ast.NotIn)):
                    continue
                if not isinstance(right, (ast.Tuple, ast.List)) or i + 1 < len(node.ops):
                    raise UsageError(f"restriction {shown}: in takes a list of values "
                                     "written after it, such as in (16, 32)")
                lists.add(id(right))
        elif isinstance(node, ast.Name):
            if id(node) not in parts:
                raise UsageError(f"restriction {shown} names {node.id}; parameters are "
                                 "written KIND.NAME, such as tile.k")
        elif isinstance(node, (ast.Tuple, ast.List)):
            if id(node) not in lists:
                raise UsageError(f"restriction {shown}: a list of values only follows "
                                 "in or not in")
        elif isinstance(node, ast.Constant):
            if not isinstance(node.value, int):
                raise UsageError(f"restriction {shown}: only integer and boolean "
                                 f"constants, not {node.value!r}")
        elif not isinstance(node, (ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not,
                                   ast.USub, ast.BinOp, ast.Load, *_BINARY, *_COMPARE)):
            raise UsageError(f"restriction {shown}: {type(node).__name__} is not allowed "
                             "(comparisons, and/or/not, + - * // % and in)")
    return tree


def _name(node: ast.Attribute) -> str:
    return f"{node.value.id}.{node.attr}"


def _evaluate(node, variant: Mapping):
    """The value of a checked restriction for *variant*; ZeroDivisionError where it
    divides by zero."""
    if isinstance(node, ast.Attribute):
        name = _name(node)
        kind = name.partition(".")[0]
        return variant.get(name, OFF.get(kind))
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.BoolOp):
        values = (_evaluate(v, variant) for v in node.values)
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.UnaryOp):
        value = _evaluate(node.operand, variant)
        return (not value) if isinstance(node.op, ast.Not) else -value
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)](_evaluate(node.left, variant),
                                      _evaluate(node.right, variant))
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_evaluate(e, variant) for e in node.elts)
    left = _evaluate(node.left, variant)
    for op, right_node in zip(node.ops, node.comparators, strict=True):
        right = _evaluate(right_node, variant)
        if not _COMPARE[type(op)](left, right):
            return False
        left = right
    return True

# }}}


def variant_key(variant: Mapping) -> str:
    """A variant as text, parameters in the space's order: ``j.group=32,j.per_item=2``;
    ``tile``, ``split``, ``prefetch`` and ``pad`` parameters at their OFF value are left
    out."""
    return ",".join(f"{k}={_text(v)}" for k, v in variant.items() if not _is_off(k, v))


def parse_variant_key(key: str) -> dict:
    """The variant ``variant_key`` wrote as *key* (the parameters it left out at their OFF
    value are left out here too: ``apply`` takes them as OFF)."""
    out = {}
    for part in key.split(","):
        name, _, text = part.partition("=")
        out[name] = text == "true" if text in ("true", "false") else int(text)
    return out


def _is_off(name: str, value) -> bool:
    kind, dot, rest = name.partition(".")
    return bool(dot and rest) and kind in OFF and value == OFF[kind] and \
        type(value) is type(OFF[kind])


def _text(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _ints(value, where: str, what: str, least: int = 1) -> tuple[int, ...]:
    if not (isinstance(value, list) and value and all(
            isinstance(v, int) and not isinstance(v, bool) and v >= least for v in value)):
        kind = "positive" if least == 1 else "non-negative"
        raise UsageError(f"{where}: {what} must be a non-empty list of {kind} integers")
    return tuple(dict.fromkeys(value))


def _positive_ints(value, where: str, what: str) -> tuple[int, ...]:
    return _ints(value, where, what)


def _loop_table(data, section: str, where: str) -> tuple[tuple[str, tuple[int, ...]], ...]:
    table = data.get(section, {})
    if not isinstance(table, dict):
        raise UsageError(f"{where}: [{section}] maps loops to lists of factors")
    return tuple((k, _positive_ints(v, where, f"{section}.{k}")) for k, v in table.items())


def load_space(path) -> Space:
    """A space from a TOML file (see the module docstring); UsageError on a bad one."""
    where = str(path)
    data = read_toml_file(path, "space file")
    unknown = sorted(set(data) - {"axes", "unroll", "tile", "split", "prefetch", "restrict"})
    if unknown:
        raise UsageError(f"{where}: unknown section {', '.join(unknown)}; a space has "
                         "[axes.NAME], [unroll], [tile], [split], [prefetch.ARRAY] and "
                         "restrict = [...]")
    axes_data = data.get("axes")
    if not isinstance(axes_data, dict) or not axes_data:
        raise UsageError(f"{where}: a space needs at least one [axes.NAME] table")
    axes = []
    for iname, spec in axes_data.items():
        if not isinstance(spec, dict) or "group" not in spec or set(spec) - {
                "group", "per_item"}:
            raise UsageError(f"{where}: [axes.{iname}] takes group = [...] and optionally "
                             "per_item = [...]")
        axes.append(Axis(iname, _positive_ints(spec["group"], where, f"axes.{iname}.group"),
                         _positive_ints(spec.get("per_item", [1]), where,
                                        f"axes.{iname}.per_item")))
    prefetch = []
    pdata = data.get("prefetch", {})
    if not isinstance(pdata, dict):
        raise UsageError(f"{where}: prefetches are [prefetch.ARRAY] tables")
    for array, spec in pdata.items():
        if not isinstance(spec, dict) or "over" not in spec or set(spec) - {
                "over", "fetch", "pad"}:
            raise UsageError(f"{where}: [prefetch.{array}] takes over = [loops] and "
                             "optionally fetch = [false, true] and pad = [0, 1]")
        over = spec["over"]
        if not (isinstance(over, list) and over and all(isinstance(o, str) for o in over)):
            raise UsageError(f"{where}: prefetch.{array}.over must be a non-empty list of "
                             "loop names")
        fetch = spec.get("fetch", [False, True])
        if not (isinstance(fetch, list) and fetch and all(
                isinstance(f, bool) for f in fetch)):
            raise UsageError(f"{where}: prefetch.{array}.fetch must be a non-empty list of "
                             "true/false")
        prefetch.append(Prefetch(array, tuple(over), tuple(dict.fromkeys(fetch)),
                                 _ints(spec.get("pad", [0]), where, f"prefetch.{array}.pad",
                                       least=0)))
    restrict = data.get("restrict", [])
    if not (isinstance(restrict, list) and all(isinstance(r, str) for r in restrict)):
        raise UsageError(f"{where}: restrict must be a list of conditions (text)")
    try:
        return Space(tuple(axes), _loop_table(data, "unroll", where),
                     _loop_table(data, "tile", where), _loop_table(data, "split", where),
                     tuple(prefetch), tuple(restrict))
    except UsageError as err:
        raise UsageError(f"{where}: {err}") from None


def _entry(knl):
    return knl.default_entrypoint if hasattr(knl, "default_entrypoint") else knl


def check_space(space: Space, knl) -> None:
    """A UsageError naming the loops of *space* that *knl* does not have, or that are
    mapped to the hardware already, and the prefetched arrays it does not read."""
    kernel = _entry(knl)
    names = [a.iname for a in space.axes] + [n for kind in ("unroll", "tile", "split")
                                             for n, _ in getattr(space, kind)]
    names += [o for p in space.prefetch for o in p.over]
    names = list(dict.fromkeys(names))
    missing = [n for n in names if n not in kernel.all_inames()]
    if missing:
        raise UsageError(f"the space names {', '.join(missing)}, not a loop of kernel "
                         f"{kernel.name!r} (its loops: {', '.join(sorted(kernel.all_inames()))})")
    tagged = [n for n in names if kernel.iname_tags(n)]
    if tagged:
        raise UsageError(f"the space tunes {', '.join(tagged)}, already mapped to the "
                         f"hardware in kernel {kernel.name!r}")
    read = set()
    for insn in kernel.instructions:
        read |= insn.read_dependency_names()
    unread = [p.array for p in space.prefetch if p.array not in read
              or p.array not in kernel.arg_dict]
    if unread:
        raise UsageError(f"the space prefetches {', '.join(unread)}, not an array that "
                         f"kernel {kernel.name!r} reads")


def check_work(knl, params: Mapping[str, int]) -> None:
    """A UsageError where *knl* does no work at the sizes *params* (every instruction
    lies in a loop that runs no iteration, as at n=0): every variant would do nothing,
    so there is nothing to rank or to measure."""
    import loopy as lp

    kernel = _entry(knl)
    fixed = {k: int(v) for k, v in params.items() if k in kernel.all_params()}
    if fixed:
        kernel = lp.fix_parameters(kernel, **fixed)
    if any(not kernel.get_inames_domain(insn.within_inames).is_empty()
           for insn in kernel.instructions):
        return
    empty = sorted(n for n in kernel.all_inames() if kernel.get_inames_domain(n).is_empty())
    if not empty:  # no instructions: nothing of the sizes' doing
        return
    loops = f"loop {empty[0]} runs" if len(empty) == 1 else f"loops {', '.join(empty)} run"
    sizes = ", ".join(f"{k}={v}" for k, v in params.items())
    raise UsageError(f"kernel {kernel.name!r} does no work at {sizes or 'these sizes'} "
                     f"({loops} no iteration): no variant has anything to rank or measure; "
                     "give sizes at which it runs")


def _parallel_inames(kernel) -> list[str]:
    """Loops every written result depends on and no reduction runs over, in the order
    the kernel's domain lists them."""
    writers = [insn for insn in kernel.instructions if insn.assignee_var_names()]
    if not writers:
        return []
    shared = set.intersection(*(set(insn.within_inames) for insn in writers))
    reduced = _reduction_inames(kernel)
    ordered = [n for n in kernel.all_inames() if n in shared and n not in reduced]
    untagged = [n for n in ordered if not kernel.iname_tags(n)]
    return sorted(untagged, key=lambda n: _domain_position(kernel, n))


def _reduction_inames(kernel) -> set[str]:
    from loopy.symbolic import get_reduction_inames

    reduced = set()
    for insn in kernel.instructions:
        reduced |= set(get_reduction_inames(insn.expression)) if hasattr(
            insn, "expression") else set()
    return reduced


def _domain_position(kernel, iname: str) -> tuple[int, int]:
    for d, dom in enumerate(kernel.domains):
        names = dom.get_var_names_not_none(3) if hasattr(dom, "get_var_names_not_none") \
            else dom.get_var_names(3)
        if iname in names:
            return d, names.index(iname)
    return len(kernel.domains), 0


def _trip(kernel, iname: str, params: Mapping[str, int]) -> int | None:
    """The loop's trip count at *params*, or None when it is not fixed there."""
    import loopy as lp
    from loopy.isl_helpers import static_max_of_pw_aff

    fixed = {k: int(v) for k, v in params.items() if k in kernel.all_params()}
    try:
        if fixed:
            kernel = lp.fix_parameters(kernel, **fixed)
        bounds = kernel.get_iname_bounds(iname, constants_only=True)
        return int(static_max_of_pw_aff(bounds.size, constants_only=True)
                   .get_constant_val().to_python())
    except Exception:  # noqa: BLE001 - a bound Loopy cannot fix: not unrollable
        return None


def _powers_up_to(limit: int) -> tuple[int, ...]:
    return tuple(1 << e for e in range(max(limit, 1).bit_length()) if 1 << e <= limit)


def _reads(kernel) -> dict[str, set]:
    """The arrays among *kernel*'s arguments that it only reads: name → the index tuples
    it reads them at."""
    from loopy.symbolic import WalkMapper

    subscripts: dict[str, set] = {}

    class _Reads(WalkMapper):
        def map_subscript(self, expr, *args):
            if hasattr(expr.aggregate, "name"):
                subscripts.setdefault(expr.aggregate.name, set()).add(expr.index_tuple)
            super().map_subscript(expr, *args)

    written = set()
    for insn in kernel.instructions:
        written |= set(insn.assignee_var_names())
        if hasattr(insn, "expression"):
            _Reads()(insn.expression)
    return {a: i for a, i in subscripts.items() if a not in written and a in kernel.arg_dict}


def _reused_reads(kernel, axes: list[str]) -> list[Prefetch]:
    """Prefetches worth offering: arrays only read, indexed by the axes alone, and read
    with reuse within a work-group (an axis does not index them, or they are read at
    several subscripts)."""
    from loopy.symbolic import get_dependencies

    out = []
    for array, indices in _reads(kernel).items():
        used = set()
        for index in indices:
            used |= {d for d in get_dependencies(index) if d in kernel.all_inames()}
        if not used or not used <= set(axes) or not all(_starts_at_zero(kernel, a)
                                                        for a in used):
            continue
        if len(indices) > 1 or len(used) < len(axes):
            out.append(Prefetch(array, tuple(a for a in axes if a in used)))
    return sorted(out, key=lambda p: p.array)


def _one_offset(kernel, array: str, axis: str) -> bool:
    """Whether *kernel* reads *array* at one offset along *axis* (a stencil reads at
    several): a work-group one work-item wide there then has a tile one element wide."""
    from loopy.symbolic import get_dependencies

    along = {tuple(i for i in index if axis in get_dependencies(i))
             for index in _reads(kernel).get(array, ())}
    return len(along) <= 1


def _lone_reduction(kernel) -> str | None:
    """The loop of *kernel*'s reduction where the kernel is one instruction holding one
    reduction over one loop, else None: Loopy splits a reduction across work-items only
    where every instruction holds it (the others would not run across its work-items)."""
    from loopy.symbolic import WalkMapper

    found = []

    class _Reductions(WalkMapper):
        def map_reduction(self, expr, *args):
            found.append(expr)
            super().map_reduction(expr, *args)

    if len(kernel.instructions) != 1 or not hasattr(kernel.instructions[0], "expression"):
        return None
    _Reductions()(kernel.instructions[0].expression)
    if len(found) != 1 or len(found[0].inames) != 1:
        return None
    return str(found[0].inames[0])


def _starts_at_zero(kernel, iname: str) -> bool:
    """Whether the loop starts at 0: a prefetch over a loop that starts elsewhere gets
    its first tile clipped, and Loopy then sizes the tile by the whole array."""
    try:
        low = kernel.get_iname_bounds(iname, constants_only=False).lower_bound_pw_aff
        return low.is_cst() and low.get_pieces()[0][1].get_constant_val().to_python() == 0
    except Exception:  # noqa: BLE001 - a bound Loopy cannot state: not offered
        return False


def full_space(knl, params: Mapping[str, int], max_group_size: int = 1024) -> Space:
    """Every power of two up to *max_group_size* for each axis's group, 1 to 8 tasks per
    work-item, unrolling by 1, 2 or 4, a split by 1 or 32 for each reduction loop and the
    prefetches of reused reads (module docstring): the random families
    (kernelcast.tune.random_families) are drawn from it, so it does not change."""
    kernel = _entry(knl)
    parallel = _tunable_loops(kernel)
    axes = []
    for iname in reversed(parallel):  # the last loop fastest
        trip = _trip(kernel, iname, params)
        limit = min(max_group_size, trip) if trip else max_group_size
        per_item = tuple(f for f in FULL_PER_ITEM if not trip or f <= max(1, trip))
        axes.append(Axis(iname, _powers_up_to(limit), per_item))
    unroll, split = [], []
    reduced = _reduction_inames(kernel)
    for iname in sorted(kernel.all_inames() - set(parallel)):
        if kernel.iname_tags(iname):
            continue
        trip = _trip(kernel, iname, params)
        if trip and trip > 1:
            unroll.append((iname, tuple(u for u in FULL_UNROLL if u <= trip)))
        if iname in reduced:
            ways = tuple(w for w in DEFAULT_SPLIT if not trip or w <= trip)
            if len(ways) > 1:
                split.append((iname, ways))
    return Space(tuple(axes), tuple(unroll), split=tuple(split),
                 prefetch=tuple(_reused_reads(kernel, [a.iname for a in axes])))


def _tunable_loops(kernel) -> list[str]:
    """*kernel*'s parallel loops not yet mapped to the hardware; a UsageError if none."""
    parallel = _parallel_inames(kernel)
    if not parallel:
        raise UsageError(f"kernel {kernel.name!r} has no untagged parallel loop to tune "
                         "(its loops are mapped to the hardware already, or every loop "
                         "is a reduction)")
    return parallel


def _powers_between(low: int, high: int) -> tuple[int, ...]:
    return tuple(p for p in _powers_up_to(high) if p >= low)


def default_space(knl, params: Mapping[str, int], max_group_size: int = 1024, *,
                  warp_size: int = WARP_SIZE,
                  max_variants: int | None = MAX_VARIANTS) -> Space:
    """The space ``kernelcast tune`` explores when none is given (module docstring):
    work-groups of whole warps of *warp_size* work-items (1, or a CPU's SIMD width, where
    no warp matters) and at most *max_group_size*, thinned to at most *max_variants*
    variants (None: never), what it left out in its ``dropped``."""
    if not isinstance(warp_size, int) or warp_size < 1 or warp_size & (warp_size - 1):
        raise UsageError(f"a warp of {warp_size!r} work-items: expected a power of two")
    kernel = _entry(knl)
    names = list(reversed(_tunable_loops(kernel)))  # the last loop fastest
    trips = {n: _trip(kernel, n, params) for n in names}
    caps = {n: _powers_up_to(min(max_group_size, trips[n] or max_group_size))[-1]
            for n in names}
    warp = min(warp_size, math.prod(caps.values()))
    lows = {n: 1 for n in names}
    lows[names[0]] = min(warp, caps[names[0]])
    values: dict[str, tuple] = {}
    for n in names:
        others = math.prod(lows[m] for m in names if m != n)
        values[f"{n}.group"] = _powers_between(lows[n], min(caps[n],
                                                            max_group_size // others))
        values[f"{n}.per_item"] = tuple(f for f in DEFAULT_PER_ITEM
                                        if not trips[n] or f <= max(1, trips[n]))
    sequential = [n for n in sorted(kernel.all_inames() - set(names))
                  if not kernel.iname_tags(n)]
    for n in sequential:
        trip = _trip(kernel, n, params)
        factors = tuple(u for u in DEFAULT_UNROLL if trip and u <= trip)
        if len(factors) > 1:
            values[f"unroll.{n}"] = factors
    lone = _lone_reduction(kernel)
    if lone in sequential and len(names) < 3:
        trip = _trip(kernel, lone, params)
        ways = tuple(w for w in DEFAULT_SPLIT if not trip or w <= trip)
        if len(ways) > 1:
            values[f"split.{lone}"] = ways
    prefetch = [] if lone in sequential and f"split.{lone}" in values else [
        p for p in _reused_reads(kernel, names) if len(p.over) == len(names)]
    restrict = _group_restriction(values, max_group_size, warp)
    for p in prefetch:
        values[f"prefetch.{p.array}"] = p.fetch
        restrict += [f"not prefetch.{p.array} or {a}.group * {a}.per_item > 1"
                     for a in p.over if min(values[f"{a}.group"]) == 1
                     and _one_offset(kernel, p.array, a)]
    return _thinned(values, names, prefetch, tuple(restrict), max_variants)


def _group_restriction(values: dict[str, tuple], max_group_size: int,
                       warp: int) -> list[str]:
    """The restriction that keeps the work-group (its axes' groups times its split
    reduction's work-items) at most *max_group_size* and a multiple of *warp*; none for
    a work-group of one factor, whose values are chosen so (they are filtered here)."""
    factors = [n for n in values if n.endswith(".group") or n.startswith("split.")]
    if len(factors) == 1:
        values[factors[0]] = tuple(v for v in values[factors[0]]
                                   if v <= max_group_size and v % warp == 0)
        return []
    product = " * ".join(factors)
    return [f"{product} <= {max_group_size}"] + (
        [f"{product} % {warp} == 0"] if warp > 1 else [])


def _space_of(values: Mapping[str, tuple], names: list[str], prefetch: list[Prefetch],
              restrict: tuple[str, ...]) -> Space:
    """The space of these parameter *values*."""
    def loops(kind):
        return tuple((k.partition(".")[2], v) for k, v in values.items()
                     if k.startswith(f"{kind}."))

    return Space(tuple(Axis(n, values[f"{n}.group"], values[f"{n}.per_item"])
                       for n in names), loops("unroll"), split=loops("split"),
                 prefetch=tuple(Prefetch(p.array, p.over, values[f"prefetch.{p.array}"])
                                for p in prefetch), restrict=restrict)


def _thinned(values: dict[str, tuple], names: list[str], prefetch: list[Prefetch],
             restrict: tuple[str, ...], max_variants: int | None) -> Space:
    """The space of *values*, thinned while it holds more than *max_variants* variants:
    the parameter with the most values (the later one in the space's order on a tie)
    keeps every other one, its first (the smallest, or off) included; a parameter
    whose thinning would leave no variant is left as it is. The values left out are the
    space's ``dropped``."""
    space = _space_of(values, names, prefetch, restrict)
    full, fixed = dict(values), set()
    while max_variants is not None and len(space) > max_variants:
        open_ = [n for n in values if len(values[n]) > 1 and n not in fixed]
        if not open_:
            break
        name = max(reversed(open_), key=lambda n: len(values[n]))
        trial = {**values, name: values[name][::2]}
        thinner = _space_of(trial, names, prefetch, restrict)
        if len(thinner) == 0:
            fixed.add(name)
            continue
        values, space = trial, thinner
    dropped = tuple((n, tuple(v for v in full[n] if v not in values[n]))
                    for n in full if values[n] != full[n])
    return dataclasses.replace(space, dropped=dropped)


# {{{ making a variant

def _axis_inames(axis: str, per: int) -> tuple[str, list[str]]:
    """(the group loop, the loops within a work-group) of an axis split per *per*."""
    if per == 1:
        return f"{axis}_outer", [f"{axis}_inner"]
    return f"{axis}_g", [f"{axis}_item", f"{axis}_l"]


def _setting(variant: Mapping, kind: str, name: str):
    return variant.get(f"{kind}.{name}", OFF[kind])


def _conflict(variant: Mapping, space: Space) -> str | None:
    """Why the parameters of *variant* contradict each other, or None."""
    found = _conflict_kind(variant, space)
    return None if found is None else found[1]


def _conflict_kind(variant: Mapping, space: Space) -> tuple[str, str] | None:
    """(the kind of contradiction, why) for *variant*, or None."""
    for iname, _ in space.tile:
        tile = int(_setting(variant, "tile", iname))
        if tile > 1 and int(_setting(variant, "split", iname)) > 1:
            return "a loop both tiled and split", (
                f"{iname} is both tiled (tile.{iname}={tile}) and split across "
                f"work-items (split.{iname}={_setting(variant, 'split', iname)})")
        factor = int(variant.get(f"unroll.{iname}", 1))
        if tile > 1 and factor > 1 and tile % factor:
            return "an unrolling that does not divide its tile", (
                f"unroll.{iname}={factor} does not divide the tile of {iname} "
                f"(tile.{iname}={tile})")
    for p in space.prefetch:
        pad = int(_setting(variant, "pad", p.array))
        if pad and not _setting(variant, "prefetch", p.array):
            return "a padding without its prefetch", (
                f"pad.{p.array}={pad} without prefetch.{p.array}: nothing to pad")
        if not _setting(variant, "prefetch", p.array):
            continue
        for loop in p.over:
            ways = int(variant.get(f"split.{loop}", 1))
            if ways > 1:
                return "a prefetch over a split loop", (
                    f"prefetch.{p.array} spans {loop}, split across work-items "
                    f"(split.{loop}={ways}); a tile spans axes and sequential loops")
    return None


def _splits(variant: Mapping, space: Space) -> list[tuple[str, int]]:
    """(loop, work-items) of each reduction *variant* splits across work-items."""
    ways = [(n, int(_setting(variant, "split", n))) for n, _ in space.split]
    return [(n, w) for n, w in ways if w > 1]


def _work_items(variant: Mapping, space: Space) -> int:
    """The work-items of *variant*'s work-group, a split reduction's included."""
    items = math.prod(int(variant[f"{a.iname}.group"]) for a in space.axes)
    return items * math.prod(w for _, w in _splits(variant, space))


def _refused(variant: Mapping, space: Space) -> tuple[str, str] | None:
    """(kind, why) where Loopy refuses *variant* whatever the kernel: two reductions
    split (each one's first step runs outside the other's work-items), or a prefetched
    tile spanning fewer loops than the work-group has local axes (Loopy fetches a tile
    across as many local axes as it spans and will not leave the others idle)."""
    splits = _splits(variant, space)
    if len(splits) > 1:
        named = " and ".join(f"split.{n}={w}" for n, w in splits)
        return "more than one reduction split across work-items", (
            f"{named} split {len(splits)} reductions across work-items; Loopy splits one "
            "at most, as each one's first step runs outside the other's work-items")
    axes = len(space.axes) + len(splits)
    for p in space.prefetch:
        if _setting(variant, "prefetch", p.array) and len(p.over) < axes:
            spans = f"{len(p.over)} loop{'s' * (len(p.over) > 1)} ({', '.join(p.over)})"
            return "a prefetched tile spanning fewer loops than the local axes", (
                f"prefetch.{p.array} spans {spans}, fewer than the work-group's {axes} "
                "local axes: Loopy would leave work-items out of its fetch")
    return None


def _tile_bytes(variant: Mapping, space: Space) -> int:
    """A floor on the local memory *variant*'s prefetched tiles take: one byte an element
    (no type takes less), each tile as long as its loops' work (an axis: group ×
    per_item; a tiled loop: its tile; any other loop: at least one), padding included."""
    axes = {a.iname: int(variant[f"{a.iname}.group"]) * int(variant.get(
        f"{a.iname}.per_item", 1)) for a in space.axes}
    total = 0
    for p in space.prefetch:
        if not _setting(variant, "prefetch", p.array):
            continue
        sizes = [axes.get(o, int(_setting(variant, "tile", o))) for o in p.over]
        sizes[-1] += int(_setting(variant, "pad", p.array))
        total += math.prod(sizes)
    return total


def _unlaunchable(variant: Mapping, space: Space, max_group_size: int,
                  local_mem_bytes: int | None,
                  warp_size: int | None = None) -> tuple[str, str] | None:
    """(kind, why) *variant* cannot run, from its parameters alone, or None; the kinds
    are few texts (``launchable`` counts by them), the reasons name the parameters."""
    items = _work_items(variant, space)
    if items > max_group_size:
        return f"a work-group of more than {max_group_size} work-items", (
            f"a work-group of {items} work-items; the device runs at most {max_group_size}")
    if warp_size is not None and items % warp_size:
        return f"a work-group not a multiple of the warp ({warp_size} work-items)", (
            f"a work-group of {items} work-items, not a multiple of the warp "
            f"({warp_size})")
    axes = len(space.axes) + len(_splits(variant, space))
    if axes > 3:
        return "more than 3 local axes (each split reduction takes one)", (
            f"{axes} local axes (split reductions take one each); devices have 3")
    found = _conflict_kind(variant, space) or _refused(variant, space)
    if found is not None:
        return found
    if local_mem_bytes is not None:
        floor = _tile_bytes(variant, space)
        if floor > local_mem_bytes:
            return f"prefetched tiles of more than {local_mem_bytes} bytes of local memory", (
                f"prefetched tiles of at least {floor} bytes of local memory per "
                f"work-group; the device has {local_mem_bytes}")
    return None


def launchable(space: Space, *, max_group_size: int, local_mem_bytes: int | None = None,
               warp_size: int | None = None) -> tuple[list[dict], dict[str, int]]:
    """(the variants of *space* that pass every check needing no kernel, in
    ``space.variants()`` order; how many were left out, by kind of reason). The checks
    are ``invalid``'s without a kernel, in its order: the work-group's work-items (a
    split reduction's counted) against *max_group_size*; where *warp_size* is given,
    that they are a multiple of it; at most 3 local axes; parameters that contradict
    each other; what Loopy refuses whatever the kernel (two split reductions, a
    prefetched tile spanning fewer loops than the local axes); and, with
    *local_mem_bytes*, the prefetched tiles at one byte an element. Variants are
    enumerated loop by loop, so a work-group already too large is counted, not made."""
    params = list(space.parameters().items())
    shaping = [i for i, (n, _) in enumerate(params)
               if n.endswith(".group") or n.startswith("split.")]
    kept: list[dict] = []
    dropped: dict[str, int] = {}

    def leave_out(kind: str, prefix: dict, depth: int) -> None:
        count = _completions(space, params, prefix, depth)
        if count:
            dropped[kind] = dropped.get(kind, 0) + count

    def visit(prefix: dict, depth: int, items: int) -> None:
        if depth == len(params):
            if not space.allows(prefix):
                return
            found = _unlaunchable(prefix, space, max_group_size, local_mem_bytes, warp_size)
            if found is None:
                kept.append(dict(prefix))
            else:
                dropped[found[0]] = dropped.get(found[0], 0) + 1
            return
        name, values = params[depth]
        for value in values:
            prefix[name] = value
            grown = items * int(value) if depth in shaping else items
            if grown > max_group_size:  # the work-items only grow: none of these runs
                leave_out(f"a work-group of more than {max_group_size} work-items",
                          prefix, depth + 1)
            else:
                visit(prefix, depth + 1, grown)
            del prefix[name]

    visit({}, 0, 1)
    return kept, dropped


def count_launchable(space: Space, *, max_group_size: int,
                     local_mem_bytes: int | None = None, warp_size: int | None = None) -> int:
    """How many variants ``launchable`` keeps, without making them: only the parameters
    its checks or the restrictions read are enumerated, and the others (a loop's items
    per work-item where nothing is prefetched, the unrolling of a loop not tiled)
    multiply the count, so a space of a million variants is counted in well under a
    second rather than half a minute."""
    params = space.parameters()
    read = (_launch_parameters(space) | space._restricted) & set(params)
    names = [n for n in params if n in read]
    free = math.prod(len(v) for n, v in params.items() if n not in read)
    kept = 0
    for values in itertools.product(*(params[n] for n in names)):
        variant = dict(zip(names, values, strict=True))
        if space.allows(variant) and _unlaunchable(variant, space, max_group_size,
                                                   local_mem_bytes, warp_size) is None:
            kept += 1
    return free * kept


def _launch_parameters(space: Space) -> set[str]:
    """The parameters ``_unlaunchable`` reads: the work-group's, every tile, split,
    prefetch and padding, the unrolling of tiled loops, and, where something is
    prefetched, the items per work-item (a tile's length)."""
    names = {f"{a.iname}.group" for a in space.axes}
    names |= {f"{kind}.{iname}" for kind in ("tile", "split")
              for iname, _ in getattr(space, kind)}
    names |= {f"unroll.{iname}" for iname, _ in space.tile}
    for p in space.prefetch:
        names |= {f"prefetch.{p.array}", f"pad.{p.array}"}
        names |= {f"{a.iname}.per_item" for a in space.axes}
    return names


def steps(variant: Mapping, space: Space) -> list[tuple[str, tuple, dict]]:
    """The Loopy transformations that make *variant*, as (function name, arguments,
    keywords); see the module docstring. Every function is Loopy's (``lp.NAME``) except
    ``pad_local_array`` (this module's)."""
    why = _conflict(variant, space)
    if why is not None:
        raise InvalidVariant(why)
    out = []
    try:
        splits = [(n, int(_setting(variant, "split", n))) for n, _ in space.split]
        splits = [(n, w) for n, w in splits if w > 1]
        tiles = {n: int(_setting(variant, "tile", n)) for n, _ in space.tile}
        tiles = {n: t for n, t in tiles.items() if t > 1}
        pers, group_loops = {}, []
        for k, axis in enumerate(space.axes):
            group = int(variant[f"{axis.iname}.group"])
            per = pers[axis.iname] = int(variant.get(f"{axis.iname}.per_item", 1))
            local = f"l.{k + len(splits)}"
            group_loops.append(_axis_inames(axis.iname, per)[0])
            if per == 1:
                out.append(("split_iname", (axis.iname, group),
                            {"outer_tag": f"g.{k}", "inner_tag": local}))
            else:
                out.append(("split_iname", (axis.iname, group * per),
                            {"outer_tag": f"g.{k}", "outer_iname": f"{axis.iname}_g",
                             "inner_iname": f"{axis.iname}_in"}))
                out.append(("split_iname", (f"{axis.iname}_in", group),
                            {**({"outer_tag": "ilp"} if tiles else {}),
                             "inner_tag": local, "outer_iname": f"{axis.iname}_item",
                             "inner_iname": f"{axis.iname}_l"}))
        for s, (iname, ways) in enumerate(splits):
            out.append(("split_iname", (iname, ways),
                        {"inner_tag": f"l.{s}", "outer_iname": f"{iname}_seq",
                         "inner_iname": f"{iname}_w"}))
            out.append(("split_reduction_outward", (f"{iname}_w",), {}))
        for iname, tile in tiles.items():
            out.append(("split_iname", (iname, tile),
                        {"outer_iname": f"{iname}_tile", "inner_iname": f"{iname}_t"}))
        for p in space.prefetch:
            if not _setting(variant, "prefetch", p.array):
                continue
            sweep, outer = [], list(group_loops)
            for loop in p.over:
                if loop in pers:
                    sweep += _axis_inames(loop, pers[loop])[1]
                elif loop in tiles:
                    sweep.append(f"{loop}_t")
                    outer.append(f"{loop}_tile")
                else:
                    sweep.append(loop)
            out.append(("add_prefetch", (p.array,),
                        {"sweep_inames": sweep, "temporary_name": f"{p.array}_fetch",
                         "default_tag": "l.auto", "fetch_outer_inames": frozenset(outer),
                         "fetch_bounding_box": True}))
            pad = int(_setting(variant, "pad", p.array))
            if pad:
                out.append(("pad_local_array", (f"{p.array}_fetch", pad), {}))
        split_names = dict(splits)
        for iname, _ in space.unroll:
            factor = int(variant[f"unroll.{iname}"])
            if factor > 1:
                target = (f"{iname}_t" if iname in tiles else
                          f"{iname}_seq" if iname in split_names else iname)
                out.append(("split_iname", (target, factor),
                            {"inner_tag": "unr", "outer_iname": f"{iname}_o",
                             "inner_iname": f"{iname}_u"}))
                if iname in tiles:  # else Loopy may run the unrolled copies one by one
                    out.append(("prioritize_loops", (f"{iname}_o,{iname}_u",), {}))
    except KeyError as err:
        raise InvalidVariant(f"the variant gives no value for {err.args[0]}") from None
    return out


def pad_local_array(knl, name: str, pad: int):
    """*knl* with the temporary array *name* (of fixed shape) padded by *pad* elements
    along its fastest (last) axis: its storage grows and its strides follow, its indices
    do not change. Loopy keeps padded storage as ``storage_shape`` (its
    ``add_padding_to_avoid_bank_conflicts`` sets it, for a pyopencl device), but has no
    transformation that sets it together with the strides."""
    import loopy as lp
    from loopy.kernel.array import FixedStrideArrayDimTag

    kernel = _entry(knl)
    temp = kernel.temporary_variables.get(name)
    if temp is None:
        raise lp.LoopyError(f"kernel {kernel.name!r} has no temporary {name!r} to pad")
    shape = temp.shape
    if not shape or not all(isinstance(s, int) for s in shape):
        raise lp.LoopyError(f"cannot pad {name}: its shape {shape} is not fixed")
    storage = (*shape[:-1], shape[-1] + int(pad))
    strides = [math.prod(storage[d + 1:]) for d in range(len(storage))]
    tags = tuple(FixedStrideArrayDimTag(s, layout_nesting_level=len(storage) - 1 - d)
                 for d, s in enumerate(strides))
    kernel = kernel.copy(temporary_variables={
        **kernel.temporary_variables, name: temp.copy(storage_shape=storage, dim_tags=tags)})
    return knl.with_kernel(kernel) if hasattr(knl, "with_kernel") else kernel


_HELPERS = {"pad_local_array": pad_local_array}


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def apply(knl, variant: Mapping, space: Space):
    """The kernel of *variant* (``steps`` applied); InvalidVariant when Loopy refuses, or
    makes a prefetch tile whose size is not fixed."""
    import loopy as lp

    for name, args, kwargs in steps(variant, space):
        function = _HELPERS.get(name) or getattr(lp, name)
        try:
            knl = function(knl, *args, **kwargs)
        except (lp.LoopyError, RuntimeError, TypeError, ValueError) as err:
            # RuntimeError, TypeError and ValueError: Loopy's footprint errors
            raise InvalidVariant(_loopy_reason(err, variant, space, "make",
                                               (name, args))) from None
    kernel = _entry(knl)
    for p in space.prefetch:
        temp = kernel.temporary_variables.get(f"{p.array}_fetch")
        if temp is not None and not all(isinstance(s, int) for s in temp.shape):
            shape = ", ".join(str(s) for s in temp.shape)
            raise InvalidVariant(f"Loopy made the tile of {p.array} ({shape}), not of a "
                                 "size the work-group fixes")
    return knl


def _literal(value) -> str:
    if isinstance(value, frozenset):
        return "frozenset({" + ", ".join(sorted(map(repr, value))) + "})"
    if isinstance(value, list):
        return "[" + ", ".join(map(_literal, value)) + "]"
    return repr(value)


def code(variant: Mapping, space: Space, name: str = "knl") -> str:
    """Python a user can paste to make *variant* from the untuned kernel *name*."""
    made = steps(variant, space)
    helpers = sorted({f for f, _, _ in made if f in _HELPERS})
    lines = ["import loopy as lp"]
    if helpers:
        lines.append(f"from kernelcast.tune.space import {', '.join(helpers)}")
    lines.append("")
    for function, args, kwargs in made:
        parts = [name, *map(_literal, args), *(f"{k}={_literal(v)}" for k, v in kwargs.items())]
        prefix = "" if function in _HELPERS else "lp."
        lines.append(f"{name} = {prefix}{function}({', '.join(parts)})")
    return "\n".join(lines) + "\n"

# }}}


def _uses_new(variant: Mapping) -> bool:
    return any(name.partition(".")[0] in OFF and "." in name and not _is_off(name, value)
               for name, value in variant.items())


def invalid(variant: Mapping, space: Space, *, max_group_size: int,
            local_mem_bytes: int | None = None, knl=None) -> str | None:
    """Why *variant* cannot run on a device with these limits, or None: first what its
    parameters alone rule out (``launchable``'s checks but the warp; without *knl*, local
    memory by the floor of its prefetched tiles). With *knl* (the variant's kernel) its
    local memory is checked exactly, and a variant that tiles, splits or prefetches is
    linearized: where Loopy cannot schedule or generate it, the reason names the
    parameters Loopy refuses."""
    found = _unlaunchable(variant, space, max_group_size,
                          local_mem_bytes if knl is None else None)
    if found is not None:
        return found[1]
    if knl is None:
        return None
    import loopy as lp

    kernel = _entry(knl)
    if _uses_new(variant):
        import contextlib
        import io

        from loopy.check import pre_codegen_checks

        try:
            linear = lp.linearize(lp.preprocess_program(knl))
            with contextlib.redirect_stdout(io.StringIO()):  # Loopy prints the kernel
                pre_codegen_checks(linear)
        except lp.LoopyError as err:
            return _loopy_reason(err, variant, space, "generate")
        kernel = linear.default_entrypoint  # with the local memory of its reductions
    if local_mem_bytes is not None:
        local = [t for t in kernel.temporary_variables.values()
                 if t.address_space == lp.AddressSpace.LOCAL]
        sizes = [t.nbytes for t in local]
        unfixed = [t.name for t, s in zip(local, sizes, strict=True) if not isinstance(s, int)]
        if unfixed:
            return f"local memory of {', '.join(unfixed)} is not fixed by the work-group"
        if sum(sizes) > local_mem_bytes:
            return (f"{sum(sizes)} bytes of local memory per work-group; the device has "
                    f"{local_mem_bytes}")
    return None


#: How much of an error text of Loopy's that kernelcast cannot name a reason for it keeps.
_LOOPY_TEXT = 100


def _loopy_reason(err: BaseException, variant: Mapping, space: Space, stage: str,
                  step: tuple | None = None) -> str:
    """Why Loopy refused to make (*stage* "make", at *step*, a (function, args) of
    ``steps``) or generate *variant*, naming the parameters responsible; for a refusal
    of a kind not known here, Loopy's first line, cut to _LOOPY_TEXT characters."""
    text = _first_line(err)
    function, args = step if step is not None else (None, ())
    if "does not use all local hw axes" in text or re.search(r"local axis \d+ unused",
                                                              text):
        insn = re.search(r"instruction '([^']+)'", text)
        fetched = [p for p in space.prefetch if _setting(variant, "prefetch", p.array)
                   and (insn is None or insn.group(1).startswith(f"{p.array}_fetch"))]
        if fetched:
            return _idle_fetch(fetched[0], variant, space)
        splits = _splits(variant, space)
        if splits:
            named = ", ".join(f"split.{n}={w}" for n, w in splits)
            loops = " and ".join(n for n, _ in splits)
            return (f"{named}: the kernel's other instructions do not run across the "
                    f"work-items that share the reduction over {loops}; Loopy splits a "
                    "reduction only where every instruction holds it")
        return ("an instruction runs across fewer local axes than the work-group has, "
                "which Loopy refuses")
    if function == "add_prefetch" and "empty sequence" in text:
        return (f"prefetch.{args[0]}: its tile is a single element (each loop it spans "
                "has one work-item doing one task), which Loopy cannot fetch")
    import loopy as lp

    if len(text) > _LOOPY_TEXT:
        text = text[:_LOOPY_TEXT - 1] + "…"
    where = ("" if function is None or isinstance(err, lp.LoopyError)
             else f" ({function}, {type(err).__name__})")
    return f"Loopy cannot {stage} it{where}: {text}"


def _idle_fetch(p: Prefetch, variant: Mapping, space: Space) -> str:
    """Why Loopy leaves work-items out of the fetch of *p*'s tile."""
    thin = [a.iname for a in space.axes if a.iname in p.over
            and int(variant[f"{a.iname}.group"]) * int(variant.get(f"{a.iname}.per_item",
                                                                   1)) == 1]
    if thin:
        named = ", ".join(f"{a}.group=1, {a}.per_item=1" for a in thin)
        return (f"prefetch.{p.array} with {named}: the tile is one element along "
                f"{' and '.join(thin)}, so Loopy cannot spread its fetch over every local "
                "axis of the work-group")
    return (f"prefetch.{p.array}: Loopy cannot spread the fetch of its tile over every "
            "local axis of the work-group")
