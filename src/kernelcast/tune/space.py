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
``invalid`` says why a variant cannot run on a device or None: a work-group of more
work-items than the device allows (counting a split reduction's W), more local memory than
a group may have, an unrolling that does not divide its tile, a loop both tiled and
split, a padding without its prefetch, a prefetch over a split loop, or (given the
variant's kernel) a variant Loopy cannot schedule or generate.
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
result depends on and no reduction runs over), the last one fastest; powers of two for
groups and tasks per item; unrolling by 1, 2 or 4 for sequential loops with a fixed trip
count; a split by 1 or 32 work-items (up to the trip count) for each reduction loop;
and a prefetch (off or on, over the axes it uses) for each array that is only read, is
indexed by the axes alone (loops that start at 0: Loopy sizes the tile of a loop that
starts elsewhere by the whole array, as for the ``stencil2d`` family), and is read with
reuse within a work-group (some axis does not index it, or it is read at several
offsets, as a stencil reads). Tiles are not derived:
tile a reduction loop and prefetch over it by hand (the ``matmul`` family does).

Public names: Axis, Prefetch, Space, InvalidVariant, OFF, MAX_DEPTH, load_space,
check_space, check_work, default_space, steps, apply, code, invalid, variant_key,
pad_local_array.
"""

from __future__ import annotations

import ast
import itertools
import math
import operator
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from kernelcast.errors import KernelcastError, UsageError
from kernelcast.frontends.files import read_toml_file

#: Tasks per work-item the default space explores (1, 2, 4, 8).
DEFAULT_PER_ITEM = (1, 2, 4, 8)
#: Unrolling factors the default space explores for a fixed-trip sequential loop.
DEFAULT_UNROLL = (1, 2, 4)
#: Work-items sharing a reduction the default space explores (up to the trip count).
DEFAULT_SPLIT = (1, 32)
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
        if not self.restrict:
            return math.prod(len(v) for v in self.parameters().values())
        return sum(1 for _ in self.variants())

    def variants(self) -> Iterator[dict]:
        """Every variant that meets the restrictions, as {parameter: value}, in a fixed
        order."""
        params = self.parameters()
        for values in itertools.product(*params.values()):
            variant = dict(zip(params, values, strict=True))
            if self.allows(variant):
                yield variant


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


def _reused_reads(kernel, axes: list[str]) -> list[Prefetch]:
    """Prefetches worth offering: arrays only read, indexed by the axes alone, and read
    with reuse within a work-group (an axis does not index them, or they are read at
    several subscripts)."""
    from loopy.symbolic import WalkMapper, get_dependencies

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
    out = []
    for array, indices in subscripts.items():
        if array in written or array not in kernel.arg_dict:
            continue
        used = set()
        for index in indices:
            used |= {d for d in get_dependencies(index) if d in kernel.all_inames()}
        if not used or not used <= set(axes) or not all(_starts_at_zero(kernel, a)
                                                        for a in used):
            continue
        if len(indices) > 1 or len(used) < len(axes):
            out.append(Prefetch(array, tuple(a for a in axes if a in used)))
    return sorted(out, key=lambda p: p.array)


def _starts_at_zero(kernel, iname: str) -> bool:
    """Whether the loop starts at 0: a prefetch over a loop that starts elsewhere gets
    its first tile clipped, and Loopy then sizes the tile by the whole array."""
    try:
        low = kernel.get_iname_bounds(iname, constants_only=False).lower_bound_pw_aff
        return low.is_cst() and low.get_pieces()[0][1].get_constant_val().to_python() == 0
    except Exception:  # noqa: BLE001 - a bound Loopy cannot state: not offered
        return False


def default_space(knl, params: Mapping[str, int], max_group_size: int = 1024) -> Space:
    """The space ``kernelcast tune`` explores when none is given (module docstring)."""
    kernel = _entry(knl)
    parallel = _parallel_inames(kernel)
    if not parallel:
        raise UsageError(f"kernel {kernel.name!r} has no untagged parallel loop to tune "
                         "(its loops are mapped to the hardware already, or every loop "
                         "is a reduction)")
    axes = []
    for iname in reversed(parallel):  # the last loop fastest
        trip = _trip(kernel, iname, params)
        limit = min(max_group_size, trip) if trip else max_group_size
        per_item = tuple(f for f in DEFAULT_PER_ITEM if not trip or f <= max(1, trip))
        axes.append(Axis(iname, _powers_up_to(limit), per_item))
    unroll, split = [], []
    reduced = _reduction_inames(kernel)
    for iname in sorted(kernel.all_inames() - set(parallel)):
        if kernel.iname_tags(iname):
            continue
        trip = _trip(kernel, iname, params)
        if trip and trip > 1:
            unroll.append((iname, tuple(u for u in DEFAULT_UNROLL if u <= trip)))
        if iname in reduced:
            ways = tuple(w for w in DEFAULT_SPLIT if not trip or w <= trip)
            if len(ways) > 1:
                split.append((iname, ways))
    return Space(tuple(axes), tuple(unroll), split=tuple(split),
                 prefetch=tuple(_reused_reads(kernel, [a.iname for a in axes])))


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
    for iname, _ in space.tile:
        tile = int(_setting(variant, "tile", iname))
        if tile > 1 and int(_setting(variant, "split", iname)) > 1:
            return (f"{iname} is both tiled (tile.{iname}={tile}) and split across "
                    f"work-items (split.{iname}={_setting(variant, 'split', iname)})")
        factor = int(variant.get(f"unroll.{iname}", 1))
        if tile > 1 and factor > 1 and tile % factor:
            return (f"unroll.{iname}={factor} does not divide the tile of {iname} "
                    f"(tile.{iname}={tile})")
    for p in space.prefetch:
        pad = int(_setting(variant, "pad", p.array))
        if pad and not _setting(variant, "prefetch", p.array):
            return f"pad.{p.array}={pad} without prefetch.{p.array}: nothing to pad"
        if not _setting(variant, "prefetch", p.array):
            continue
        for loop in p.over:
            ways = int(variant.get(f"split.{loop}", 1))
            if ways > 1:
                return (f"prefetch.{p.array} spans {loop}, split across work-items "
                        f"(split.{loop}={ways}); a tile spans axes and sequential loops")
    return None


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
        except lp.LoopyError as err:
            raise InvalidVariant(f"Loopy cannot make it: {_first_line(err)}") from None
        except (RuntimeError, TypeError, ValueError) as err:  # Loopy's footprint errors
            raise InvalidVariant(f"Loopy cannot make it ({name}, {type(err).__name__}): "
                                 f"{_first_line(err)}") from None
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
    """Why *variant* cannot run on a device with these limits, or None. With *knl* (the
    variant's kernel) its local memory is checked too, and a variant that tiles, splits
    or prefetches is linearized: where Loopy cannot schedule or generate it, the reason
    is Loopy's."""
    why = _conflict(variant, space)
    if why is not None:
        return why
    items = math.prod(int(variant[f"{a.iname}.group"]) for a in space.axes)
    items *= math.prod(int(_setting(variant, "split", n)) for n, _ in space.split)
    if items > max_group_size:
        return (f"a work-group of {items} work-items; the device runs at most "
                f"{max_group_size}")
    axes = len(space.axes) + sum(int(_setting(variant, "split", n)) > 1
                                 for n, _ in space.split)
    if axes > 3:
        return f"{axes} local axes (split reductions take one each); devices have 3"
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
            return f"Loopy cannot generate it: {_first_line(err)}"
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
