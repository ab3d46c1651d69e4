"""Random kernel families with loops, reuse and reductions, for the learned model's corpus.

The straight-line random kernels (kernelcast.suites.random_kernels) compute one expression
per work-item; tuning ranks kernels that loop. Family *i* here is a Loopy kernel drawn from
``random.Random(f"loops:{SEED}:{i}")``, with the space of every power-of-two work-group
(``full_space``, what ``kernelcast tune`` explored by default when the corpus was drawn) and
GPU sizes, so that its variants are random points of a real tuning space. Its kernel
writes one output element per point of a 1-, 2- or 3-D grid (loops ``k``, ``j``, ``i``;
``i`` fastest and contiguous in the output):

- *reads*: 1 to 3 input arrays, each indexed by a random choice of loops in a random
  order (so reads are coalesced, strided across work-items or broadcast), some scaled (a
  stride of 2 to 4 elements), some at several offsets (neighbour reuse, as a stencil);
- *a reduction* (more than half of the families): ``sum`` over a loop ``r`` of runtime
  length and/or a constant window ``t`` of 3 to 9 taps (``x[i + t]``, a convolution);
  its reads involve ``r`` or ``t``, the others only the grid;
- *arithmetic*: the reads combined by ``+`` and ``*``, then a Horner chain of 0 to 32
  multiply-adds (compute-bound families), sometimes a square root or ``1/(1+v)``;
- float32, or float64 for one family in seven; the output is sometimes written
  transposed (strided stores).

Values stay finite and positive for inputs in [0.5, 1.5): every operation is a sum or
product of positive values, and the Horner coefficients are below one. Sizes keep each
array under 2^25 elements and a launch under 2^28 loop iterations. ``check_params`` are
small odd sizes for checking variants on PoCL against ``reference`` (NumPy, float64).

Variants (``random_variants``) draw every parameter of the space uniformly, keeping
those with at least a warp of work-items and at most 1024 per work-group, and at most 16
tasks per work-item; Loopy may still refuse one (a prefetch it cannot make), which a
campaign records as a failed row.

Public names: SEED, PREFIX, random_family, random_variants, variant_kernel, is_random_family,
DeferredFamily.
"""

from __future__ import annotations

import functools
import math
import random
from dataclasses import dataclass

import numpy as np

from kernelcast.errors import UsageError
from kernelcast.tune.families import Family

SEED = 2026
PREFIX = "loops-"
GRID = ("i", "j", "k")  # fastest first
_SIZE = {"i": "ni", "j": "nj", "k": "nk", "r": "nr"}
_CHECK = {"ni": 37, "nj": 11, "nk": 5, "nr": 13}
MAX_ELEMENTS = 1 << 25
MAX_ITERATIONS = 1 << 28
MIN_GROUP = 32
MAX_PER_ITEM = 16


@dataclass(frozen=True)
class Read:
    """``array[index, ...]``: each index a sum of (loop, coefficient) terms plus an
    offset."""

    array: str
    index: tuple[tuple[tuple[tuple[str, int], ...], int], ...]

    def loops(self) -> set[str]:
        return {n for terms, _ in self.index for n, _ in terms}


@dataclass(frozen=True)
class Draw:
    """Everything family *i* is made of (``draw``)."""

    grid: tuple[str, ...]  # the grid's loops, fastest first
    reduce: tuple[str, ...]  # "r", "t" or both
    taps: int
    reads: tuple[Read, ...]
    ops: tuple[str, ...]  # how the reads combine, in order
    horner: int
    finish: str  # "", "sqrt" or "recip"
    transposed: bool
    dtype: str
    params: dict

    @property
    def loops(self) -> tuple[str, ...]:
        return tuple(reversed(self.grid)) + self.reduce  # slowest first


def _extent(terms, offset: int, sizes: dict, taps: int) -> tuple[str, int]:
    """The array extent an index needs, as Loopy text and at *sizes*."""
    const, text, value = offset + 1, [], offset + 1
    for name, coef in terms:
        const -= coef
        value -= coef
        if name == "t":
            const += coef * taps
            value += coef * taps
        else:
            text.append(f"{coef}*{_SIZE[name]}" if coef != 1 else _SIZE[name])
            value += coef * sizes[_SIZE[name]]
    shape = " + ".join(text)
    if const:
        shape = f"{shape} {'+' if const > 0 else '-'} {abs(const)}"
    return shape, value


def _index_text(terms, offset) -> str:
    parts = [f"{c}*{n}" if c != 1 else n for n, c in terms]
    if offset:
        parts.append(str(offset))
    return " + ".join(parts)


def _sizes(rng: random.Random, grid, reduce) -> dict:
    items = rng.randint(17, 24)
    logs = {"i": 4}
    for name in grid[1:]:
        logs[name] = 2
    for _ in range(items - sum(logs.values())):
        logs[rng.choice(grid)] += 1
    sizes = {}
    for name, e in logs.items():
        n = 1 << e
        if rng.random() < 0.25:
            n = 3 * n // 4
        sizes[_SIZE[name]] = n
    if "r" in reduce:
        e = rng.randint(2, 11)
        sizes["nr"] = 1 << max(1, min(e, 28 - items))
    return sizes


def draw(i: int) -> Draw:
    """The random choices of family *i*; see the module docstring."""
    rng = random.Random(f"loops:{SEED}:{i}")
    grid = GRID[:rng.choices((1, 2, 3), (0.35, 0.45, 0.2))[0]]
    u = rng.random()
    reduce = ("r",) if u < 0.35 else ("t",) if u < 0.5 else ("r", "t") if u < 0.6 else ()
    taps = rng.choice((3, 5, 7, 9))
    for _ in range(100):
        sizes = _sizes(rng, grid, reduce)
        reads = []
        for a in range(rng.choice((1, 2, 2, 3))):
            reads += _reads(rng, f"a{a}", grid, reduce, first=a == 0)
        extents = [math.prod(_extent(t, o, sizes, taps)[1] for t, o in r.index)
                   for r in reads]
        iterations = math.prod(sizes[_SIZE[n]] for n in grid + tuple(
            x for x in reduce if x == "r")) * (taps if "t" in reduce else 1)
        if max(extents) <= MAX_ELEMENTS and iterations <= MAX_ITERATIONS:
            break
    ops = tuple(rng.choice("+**") for _ in range(len(reads)))
    return Draw(grid, reduce, taps, tuple(reads), ops,
                rng.choice((0, 0, 0, 1, 2, 4, 8, 16, 32)),
                rng.choices(("", "sqrt", "recip"), (0.8, 0.1, 0.1))[0],
                len(grid) > 1 and rng.random() < 0.15,
                "float64" if rng.random() < 1 / 7 else "float32", sizes)


def _reads(rng, array, grid, reduce, first) -> list[Read]:
    """The reads of one array: its loops in a random order, each index a loop (sometimes
    strided), ``t`` added to a grid loop's index; several offsets for neighbour reuse."""
    loops = [n for n in grid if rng.random() < 0.7]
    if "r" in reduce and (first or rng.random() < 0.6):
        loops.append("r")
    if not loops and not ("t" in reduce and first):
        loops = [rng.choice(grid)]
    if rng.random() < 0.6:
        loops.sort(key=lambda n: -(GRID.index(n) if n in GRID else -1))  # i last
    else:
        rng.shuffle(loops)
    index = [[[(n, rng.choice((2, 3, 4)) if rng.random() < 0.1 else 1)], 0] for n in loops]
    if "t" in reduce and (first or rng.random() < 0.3):
        grid_dims = [d for d in index if d[0][0][0] in GRID]
        if grid_dims:
            rng.choice(grid_dims)[0].append(("t", 1))
        else:
            index.append([[("t", 1)], 0])
    offsets = [0]
    if rng.random() < 0.2 and index:
        offsets = sorted(rng.sample(range(5), rng.choice((2, 3))))
    dim = rng.randrange(len(index))
    out = []
    for off in offsets:
        idx = [list(d) for d in index]
        idx[dim][1] = off
        out.append(Read(array, tuple((tuple(t), o) for t, o in idx)))
    return out


def _literal(value: float, dtype: str) -> str:
    return f"{np.float32(value)}f" if dtype == "float32" else repr(float(value))


def _combine(parts: list[str], ops) -> str:
    text = parts[0]
    for op, part in zip(ops, parts[1:], strict=False):
        text = f"({text} {op} {part})"
    return text


def _reading(r: Read) -> str:
    return f"{r.array}[{', '.join(_index_text(t, o) for t, o in r.index)}]"


def _instructions(d: Draw) -> str:
    reduced = [r for r in d.reads if r.loops() & set(d.reduce)]
    plain = [r for r in d.reads if not r.loops() & set(d.reduce)]
    parts = []
    if reduced:
        inner = _combine([_reading(r) for r in reduced], d.ops)
        loops = d.reduce[0] if len(d.reduce) == 1 else f"({', '.join(d.reduce)})"
        parts.append(f"sum({loops}, {inner})")
    parts += [_reading(r) for r in plain]
    value = _combine(parts, d.ops[::-1])
    for k in range(d.horner):  # one instruction: a split reduction leaves no other
        value = f"({value}) * {_literal(1 / (k + 2), d.dtype)} + {_literal(0.5, d.dtype)}"
    if d.finish == "sqrt":
        value = f"sqrt({value})"
    elif d.finish == "recip":
        value = f"{_literal(1, d.dtype)} / ({_literal(1, d.dtype)} + {value})"
    return f"y[{', '.join(_output_axes(d))}] = {value}"


def _output_axes(d: Draw) -> list[str]:
    axes = list(reversed(d.grid))  # i last: contiguous
    if d.transposed:
        axes[-1], axes[-2] = axes[-2], axes[-1]
    return axes


def _shapes(d: Draw, sizes: dict) -> dict[str, list[tuple[str, int]]]:
    """Each input array's extents (Loopy text, value at *sizes*): per axis, the largest
    any of its reads needs."""
    shapes = {}
    for r in d.reads:
        dims = shapes.setdefault(r.array, [])
        for k, (terms, off) in enumerate(r.index):
            shape = _extent(terms, off, sizes, d.taps)
            if k == len(dims):
                dims.append(shape)
            elif shape[1] > dims[k][1]:
                dims[k] = shape
    return shapes


def _build(i: int):
    import loopy as lp

    d = draw(i)
    dtype = np.dtype(d.dtype)
    bounds = [f"0 <= {n} < {_SIZE[n]}" for n in reversed(d.grid)]
    if "r" in d.reduce:
        bounds.append("0 <= r < nr")
    if "t" in d.reduce:
        bounds.append(f"0 <= t < {d.taps}")
    domain = f"{{[{', '.join(d.loops)}]: {' and '.join(bounds)}}}"
    args = [lp.GlobalArg(a, dtype, shape=tuple(s for s, _ in dims))
            for a, dims in _shapes(d, d.params).items()]
    args.append(lp.GlobalArg("y", dtype, shape=tuple(_SIZE[n] for n in _output_axes(d)),
                             is_output=True))
    args += [lp.ValueArg(_SIZE[n], np.int32) for n in (*reversed(d.grid), *d.reduce)
             if n in _SIZE]
    return lp.make_kernel(domain, _instructions(d), args, name=f"loops{i:05d}",
                          lang_version=(2018, 2))


def _reference(i: int, arrays: dict) -> dict:
    """Family *i*'s output from its inputs, in float64."""
    d = draw(i)
    loops = list(d.loops)
    sizes = {n: arrays["y"].shape[_output_axes(d).index(n)] for n in d.grid}
    if "r" in d.reduce:  # the extents are linear in nr: solve one that depends on it
        at = {_SIZE[n]: v for n, v in sizes.items()}
        low, high = _shapes(d, {**at, "nr": 0}), _shapes(d, {**at, "nr": 1})
        sizes["r"] = next((arrays[a].shape[k] - lo[1]) // (hi[1] - lo[1])
                          for a in low for k, (lo, hi) in enumerate(zip(low[a], high[a]))
                          if hi[1] != lo[1])
    sizes["t"] = d.taps
    grids = {n: np.arange(sizes[n]).reshape([-1 if m == n else 1 for m in loops])
             for n in loops}

    def value(r: Read):
        index = tuple(sum(c * grids[n] for n, c in t) + o for t, o in r.index)
        return arrays[r.array].astype(np.float64)[index]

    def combine(parts, ops):
        out = parts[0]
        for op, part in zip(ops, parts[1:], strict=False):
            out = out * part if op == "*" else out + part
        return out

    reduced = [r for r in d.reads if r.loops() & set(d.reduce)]
    plain = [r for r in d.reads if not r.loops() & set(d.reduce)]
    parts = []
    if reduced:
        axes = tuple(loops.index(n) for n in d.reduce)
        parts.append(np.sum(np.broadcast_to(combine([value(r) for r in reduced], d.ops),
                                            [sizes[n] for n in loops]), axis=axes,
                            keepdims=True))
    parts += [value(r) for r in plain]
    v = combine(parts, d.ops[::-1])
    for k in range(d.horner):
        v = v * (1 / (k + 2)) + 0.5
    if d.finish == "sqrt":
        v = np.sqrt(v)
    elif d.finish == "recip":
        v = 1 / (1 + v)
    v = np.broadcast_to(v, [sizes[n] if n in d.grid else 1 for n in loops])
    v = v.reshape([sizes[n] for n in reversed(d.grid)])
    if d.transposed:
        v = np.swapaxes(v, -1, -2)
    return {"y": np.array(v)}


def is_random_family(name: str) -> bool:
    return name.startswith(PREFIX) and name[len(PREFIX):].isdigit()


@functools.lru_cache(maxsize=256)
def random_family(i: int) -> Family:
    """Family *i*: ``loops-0000i``, its kernel, the full space at its GPU sizes."""
    from kernelcast.tune.space import full_space

    if not isinstance(i, int) or i < 0:
        raise UsageError(f"a random family's number is a non-negative integer, not {i!r}")
    d = draw(i)
    build = functools.partial(_build, i)
    check = {k: _CHECK[k] for k in d.params}
    return Family(f"{PREFIX}{i:05d}", build, full_space(build(), d.params), dict(d.params),
                  check, functools.partial(_reference, i))


class DeferredFamily:
    """Random family *number*, made only when its kernel or space is asked for: a
    dataset of thousands of measured variants needs their names, not their kernels."""

    def __init__(self, number: int):
        self.number = number
        self.name = f"{PREFIX}{number:05d}"

    def __getattr__(self, attribute):
        return getattr(random_family(self.number), attribute)


def random_variants(fam: Family, count: int) -> list[dict]:
    """*count* distinct variants of *fam*'s space, drawn uniformly per parameter (fewer
    where the space has fewer that qualify; module docstring)."""
    from kernelcast.tune.space import invalid, variant_key

    rng = random.Random(f"variants:{SEED}:{fam.name}")
    params = fam.space.parameters()
    out, seen = [], set()
    for _ in range(50 * count):
        if len(out) == count:
            break
        v = {name: rng.choice(values) for name, values in params.items()}
        axes = fam.space.axes
        items = math.prod(int(v[f"{a.iname}.group"]) for a in axes)
        per = math.prod(int(v[f"{a.iname}.per_item"]) for a in axes)
        key = variant_key(v)
        partial = [p.array for p in fam.space.prefetch if v[f"prefetch.{p.array}"]
                   and len(p.over) < len(axes)]  # a tile Loopy cannot fetch
        if (items < MIN_GROUP or per > MAX_PER_ITEM or partial or key in seen
                or not fam.space.allows(v) or invalid(v, fam.space, max_group_size=1024)):
            continue
        seen.add(key)
        out.append(v)
    return out


def variant_kernel(i: int, variant: tuple) -> object:
    """The kernel of family *i*'s *variant* (its (parameter, value) pairs): a
    module-level function, so that a campaign's workers can make it (``functools.partial``
    pickles)."""
    from kernelcast.tune.space import apply

    fam = random_family(i)
    return apply(fam.build(), dict(variant), fam.space)
