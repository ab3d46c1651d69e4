"""Search spaces over Loopy transformations, as data.

A *space* names, for a Loopy kernel whose parallel loops are not yet mapped to the
hardware, the values each transformation may take:

- ``axes``: the parallel loops, fastest first (the first becomes work-group axis 0,
  ``l.0``/``g.0``, which should be the loop whose neighbours are adjacent in memory); for
  each, the work-items per work-group along it (``group``) and the tasks per work-item
  (``per_item``, dealt cyclically: adjacent work-items take adjacent tasks, so accesses stay
  coalesced);
- ``unroll``: for sequential loops, the unrolling factors (1: not unrolled).

A *variant* is one value per parameter, a mapping such as ``{"j.group": 32,
"j.per_item": 2, "i.group": 4, "i.per_item": 1, "unroll.k": 4}``. ``apply`` makes its
kernel, ``code`` the Python that makes it; ``invalid`` says why a variant cannot run on a device (too many work-items per
group, more local memory than a group may have) or None.

Spaces are written as TOML::

    [axes.j]            # listed fastest first
    group = [16, 32, 64]
    per_item = [1, 2]
    [axes.i]
    group = [1, 2, 4, 8]
    [unroll]
    k = [1, 4]

``default_space`` derives one from the kernel: its parallel loops (those every written
result depends on and no reduction runs over), the last one fastest; powers of two for
groups and tasks per item; unrolling by 1, 2 or 4 for sequential loops with a fixed trip
count.

Public names: Axis, Space, InvalidVariant, load_space, check_space, default_space, steps,
apply, code, invalid, variant_key.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from kernelcast.errors import KernelcastError, UsageError
from kernelcast.frontends.files import read_toml_file

#: Tasks per work-item the default space explores (1, 2, 4, 8).
DEFAULT_PER_ITEM = (1, 2, 4, 8)
#: Unrolling factors the default space explores for a fixed-trip sequential loop.
DEFAULT_UNROLL = (1, 2, 4)


class InvalidVariant(KernelcastError):
    """A variant that cannot be made or run; the message says why in one line."""


@dataclass(frozen=True)
class Axis:
    """One parallel loop: work-items per group and tasks per work-item to explore."""

    iname: str
    group: tuple[int, ...]
    per_item: tuple[int, ...] = (1,)


@dataclass(frozen=True)
class Space:
    """The values of every transformation parameter; see the module docstring."""

    axes: tuple[Axis, ...]
    unroll: tuple[tuple[str, tuple[int, ...]], ...] = field(default=())

    def parameters(self) -> dict[str, tuple]:
        """Parameter name → the values it takes, in a fixed order."""
        out: dict[str, tuple] = {}
        for axis in self.axes:
            out[f"{axis.iname}.group"] = axis.group
            out[f"{axis.iname}.per_item"] = axis.per_item
        for iname, factors in self.unroll:
            out[f"unroll.{iname}"] = factors
        return out

    def __len__(self) -> int:
        return math.prod(len(v) for v in self.parameters().values())

    def variants(self) -> Iterator[dict]:
        """Every variant, as {parameter: value}, in a fixed order."""
        params = self.parameters()
        for values in itertools.product(*params.values()):
            yield dict(zip(params, values, strict=True))


def variant_key(variant: Mapping) -> str:
    """A variant as text, parameters in the space's order: ``j.group=32,j.per_item=2``."""
    return ",".join(f"{k}={_text(v)}" for k, v in variant.items())


def _text(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _positive_ints(value, where: str, what: str) -> tuple[int, ...]:
    if not (isinstance(value, list) and value and all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value)):
        raise UsageError(f"{where}: {what} must be a non-empty list of positive integers")
    return tuple(dict.fromkeys(value))


def load_space(path) -> Space:
    """A space from a TOML file (see the module docstring); UsageError on a bad one."""
    where = str(path)
    data = read_toml_file(path, "space file")
    unknown = sorted(set(data) - {"axes", "unroll"})
    if unknown:
        raise UsageError(f"{where}: unknown section {', '.join(unknown)}; a space has "
                         "[axes.NAME] and [unroll]")
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
    unroll = data.get("unroll", {})
    if not isinstance(unroll, dict):
        raise UsageError(f"{where}: [unroll] maps loops to lists of factors")
    return Space(tuple(axes), tuple((k, _positive_ints(v, where, f"unroll.{k}"))
                                    for k, v in unroll.items()))


def check_space(space: Space, knl) -> None:
    """A UsageError naming the loops of *space* that *knl* does not have, or that are
    mapped to the hardware already."""
    kernel = knl.default_entrypoint if hasattr(knl, "default_entrypoint") else knl
    names = [a.iname for a in space.axes] + [n for n, _ in space.unroll]
    missing = [n for n in names if n not in kernel.all_inames()]
    if missing:
        raise UsageError(f"the space names {', '.join(missing)}, not a loop of kernel "
                         f"{kernel.name!r} (its loops: {', '.join(sorted(kernel.all_inames()))})")
    tagged = [n for n in names if kernel.iname_tags(n)]
    if tagged:
        raise UsageError(f"the space tunes {', '.join(tagged)}, already mapped to the "
                         f"hardware in kernel {kernel.name!r}")


def _parallel_inames(kernel) -> list[str]:
    """Loops every written result depends on and no reduction runs over, in the order
    the kernel's domain lists them."""
    from loopy.symbolic import get_reduction_inames

    writers = [insn for insn in kernel.instructions if insn.assignee_var_names()]
    if not writers:
        return []
    shared = set.intersection(*(set(insn.within_inames) for insn in writers))
    reduced = set()
    for insn in kernel.instructions:
        reduced |= set(get_reduction_inames(insn.expression)) if hasattr(
            insn, "expression") else set()
    ordered = [n for n in kernel.all_inames() if n in shared and n not in reduced]
    untagged = [n for n in ordered if not kernel.iname_tags(n)]
    return sorted(untagged, key=lambda n: _domain_position(kernel, n))


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


def default_space(knl, params: Mapping[str, int], max_group_size: int = 1024) -> Space:
    """The space ``kernelcast tune`` explores when none is given (module docstring)."""
    kernel = knl.default_entrypoint if hasattr(knl, "default_entrypoint") else knl
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
    unroll = []
    for iname in sorted(kernel.all_inames() - set(parallel)):
        if kernel.iname_tags(iname):
            continue
        trip = _trip(kernel, iname, params)
        if trip and trip > 1:
            unroll.append((iname, tuple(u for u in DEFAULT_UNROLL if u <= trip)))
    return Space(tuple(axes), tuple(unroll))


def steps(variant: Mapping, space: Space) -> list[tuple[str, tuple, dict]]:
    """The Loopy transformations that make *variant*, as (function name, arguments,
    keywords): each axis split into groups (``g.k``), a loop over its tasks per
    work-item, and work-items (``l.k``); unrolled loops split by their factor with the
    inner part unrolled."""
    out = []
    try:
        for k, axis in enumerate(space.axes):
            group = int(variant[f"{axis.iname}.group"])
            per = int(variant.get(f"{axis.iname}.per_item", 1))
            if per == 1:
                out.append(("split_iname", (axis.iname, group),
                            {"outer_tag": f"g.{k}", "inner_tag": f"l.{k}"}))
            else:
                out.append(("split_iname", (axis.iname, group * per),
                            {"outer_tag": f"g.{k}", "outer_iname": f"{axis.iname}_g",
                             "inner_iname": f"{axis.iname}_in"}))
                out.append(("split_iname", (f"{axis.iname}_in", group),
                            {"inner_tag": f"l.{k}", "outer_iname": f"{axis.iname}_item",
                             "inner_iname": f"{axis.iname}_l"}))
        for iname, _ in space.unroll:
            factor = int(variant[f"unroll.{iname}"])
            if factor > 1:
                out.append(("split_iname", (iname, factor),
                            {"inner_tag": "unr", "outer_iname": f"{iname}_o",
                             "inner_iname": f"{iname}_u"}))
    except KeyError as err:
        raise InvalidVariant(f"the variant gives no value for {err.args[0]}") from None
    return out


def apply(knl, variant: Mapping, space: Space):
    """The kernel of *variant* (``steps`` applied); InvalidVariant when Loopy refuses."""
    import loopy as lp

    try:
        for name, args, kwargs in steps(variant, space):
            knl = getattr(lp, name)(knl, *args, **kwargs)
    except lp.LoopyError as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise InvalidVariant(f"Loopy cannot make it: {first}") from None
    return knl


def code(variant: Mapping, space: Space, name: str = "knl") -> str:
    """Python a user can paste to make *variant* from the untuned kernel *name*."""
    lines = ["import loopy as lp", ""]
    for function, args, kwargs in steps(variant, space):
        parts = [name, *map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())]
        lines.append(f"{name} = lp.{function}({', '.join(parts)})")
    return "\n".join(lines) + "\n"


def invalid(variant: Mapping, space: Space, *, max_group_size: int,
            local_mem_bytes: int | None = None, knl=None) -> str | None:
    """Why *variant* cannot run on a device with these limits, or None. With *knl* (the
    variant's kernel) its local memory is checked too."""
    items = math.prod(int(variant[f"{a.iname}.group"]) for a in space.axes)
    if items > max_group_size:
        return (f"a work-group of {items} work-items; the device runs at most "
                f"{max_group_size}")
    if knl is not None and local_mem_bytes is not None:
        import loopy as lp

        kernel = knl.default_entrypoint if hasattr(knl, "default_entrypoint") else knl
        local = sum(t.nbytes for t in kernel.temporary_variables.values()
                    if t.address_space == lp.AddressSpace.LOCAL)
        if local > local_mem_bytes:
            return (f"{local} bytes of local memory per work-group; the device has "
                    f"{local_mem_bytes}")
    return None
