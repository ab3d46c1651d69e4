"""The training corpus of kernel families: distinct from the test families, big enough,
its variants measured on the H100 still named and made as they were, its local-memory
variants runnable on a device with 1024 work-items and 48 KiB per work-group, and every
family computes its reference on PoCL, untuned and over a sample of its variants (the
new ones sampled apart)."""

import itertools
import math
from pathlib import Path
from types import SimpleNamespace

import loopy as lp
import pytest

from kernelcast.errors import UsageError
from kernelcast.measure.codegen import generate
from kernelcast.measure.store import Store
from kernelcast.measure.verify import check_case
from kernelcast.tune.corpus import CORPUS, corpus_family
from kernelcast.tune.families import FAMILIES
from kernelcast.tune.space import OFF, apply, invalid, variant_key

STORE = Path(__file__).resolve().parents[1] / "data" / "h100" / "tuning-corpus-cuda.sqlite"
#: Every SAMPLE-th valid variant of a family that uses no local memory, and its last
#: (largest groups, most work per item), run on PoCL: about 40 kernels in all, PoCL's
#: compiler being the cost.
SAMPLE = 43
#: Every NEW_SAMPLE-th variant that tiles, splits, prefetches or pads, and its last: about
#: 7 per family that has them.
NEW_SAMPLE = 29
#: The families whose spaces reach local memory, and how many such variants each has.
LOCAL_FAMILIES = {"colsum": 171, "conv1d": 192, "pairsum": 194}
LOCAL_MEM = 48 * 1024


def _uses_new(variant) -> bool:
    """Whether *variant* tiles, splits, prefetches or pads (parameters that did not exist
    when the corpus was first measured)."""
    return any(k.partition(".")[0] in OFF and v != OFF[k.partition(".")[0]]
               for k, v in variant.items())


def _valid(fam):
    return [v for v in fam.space.variants()
            if invalid(v, fam.space, max_group_size=1024) is None]


def _old_and_new(fam):
    valid = _valid(fam)
    return [v for v in valid if not _uses_new(v)], [v for v in valid if _uses_new(v)]


def _device_code(knl):
    return lp.generate_code_v2(knl).device_code()


def test_the_corpus_shares_no_name_and_no_kernel_with_the_test_families():
    assert not set(CORPUS) & set(FAMILIES)
    corpus = {name: fam.build() for name, fam in CORPUS.items()}
    tests = {name: fam.build() for name, fam in FAMILIES.items()}
    assert not ({k.default_entrypoint.name for k in corpus.values()}
                & {k.default_entrypoint.name for k in tests.values()})
    test_code = {_device_code(k) for k in tests.values()}
    corpus_code = {_device_code(k) for k in corpus.values()}
    assert len(corpus_code) == len(CORPUS) and not corpus_code & test_code
    # the computations differ too, not only the names: rename and compare again
    for name, knl in corpus.items():
        statements = str(knl.default_entrypoint.instructions).replace(name, "")
        for other, test in tests.items():
            assert statements != str(test.default_entrypoint.instructions).replace(
                other, ""), (name, other)


def test_a_corpus_family_is_found_by_name():
    assert corpus_family("conv1d") is CORPUS["conv1d"]
    with pytest.raises(UsageError, match="no corpus family 'matmul'; known: outer"):
        corpus_family("matmul")


def _brute_force(fam, max_group_size=1024):
    """(old, new) counts of *fam*'s valid variants, from the space's values alone: every
    combination of them, the restrictions evaluated as Python (parameter ``tile.i`` as
    attribute i of a namespace tile), then the device's rules written out: at most
    *max_group_size* work-items (groups × a split reduction's work-items), at most 3
    local axes, one split reduction, no loop both tiled and split, an unrolling that
    divides its tile, no padding without its prefetch, no prefetch over a split loop,
    and no prefetched tile spanning fewer loops than the local axes."""
    space = fam.space
    choices = [[(f"{a.iname}.group", g) for g in a.group] for a in space.axes]
    choices += [[(f"{a.iname}.per_item", p) for p in a.per_item] for a in space.axes]
    for kind in ("unroll", "tile", "split"):
        choices += [[(f"{kind}.{n}", v) for v in values]
                    for n, values in getattr(space, kind)]
    for p in space.prefetch:
        choices.append([(f"prefetch.{p.array}", f) for f in p.fetch])
        choices.append([(f"pad.{p.array}", x) for x in p.pad])
    old = new = 0
    for combo in itertools.product(*choices):
        v = dict(combo)
        spaces = {}
        for key, value in v.items():
            head, _, tail = key.partition(".")
            setattr(spaces.setdefault(head, SimpleNamespace()), tail, value)
        if not all(eval(text, {"__builtins__": {}}, spaces) for text in space.restrict):
            continue
        split = {n: v[f"split.{n}"] for n, _ in space.split if v[f"split.{n}"] > 1}
        tile = {n: v[f"tile.{n}"] for n, _ in space.tile}
        fetched = [p for p in space.prefetch if v[f"prefetch.{p.array}"]]
        if (math.prod(v[f"{a.iname}.group"] for a in space.axes)
                * math.prod(split.values()) > max_group_size
                or len(space.axes) + len(split) > 3 or len(split) > 1
                or any(t > 1 and n in split for n, t in tile.items())
                or any(t > 1 and t % v.get(f"unroll.{n}", 1) for n, t in tile.items())
                or any(v[f"pad.{p.array}"] and not v[f"prefetch.{p.array}"]
                       for p in space.prefetch)
                or any(set(p.over) & set(split) for p in fetched)
                or any(len(p.over) < len(space.axes) + len(split) for p in fetched)):
            continue
        uses_new = (split or any(t > 1 for t in tile.values()) or fetched
                    or any(v[f"pad.{p.array}"] for p in space.prefetch))
        new += bool(uses_new)
        old += not uses_new
    return old, new


def test_the_corpus_has_its_measured_variants_and_its_local_memory_ones():
    """The variants the checks keep, per family, are those a brute-force enumeration of
    the space keeps: 1,288 without local memory (the count measured first) and the
    local-memory ones in three families."""
    counts = {name: tuple(map(len, _old_and_new(fam))) for name, fam in CORPUS.items()}
    assert counts == {name: _brute_force(fam) for name, fam in CORPUS.items()}
    assert sum(old for old, _ in counts.values()) == 1288
    # colsum by hand: without tile or split, 5 groups x 3 per-item x 3 unrollings = 45
    # old ones; split by W (tile 1, no prefetch) while 32..512 x W <= 1024: 5 + 4 + 3 +
    # 2 + 1 = 15 (group, W) pairs x 3 x 3 = 135; tiled by 16 with a prefetched, group x
    # per_item <= 512: 3 + 3 + 3 + 2 + 1 = 12 x 3 unrollings = 36; 135 + 36 = 171
    assert counts["colsum"] == (45, 171)
    assert {k: new for k, (_, new) in counts.items() if new} == LOCAL_FAMILIES


def test_the_measured_variants_keep_their_names_and_their_code():
    """Every valid variant of the corpus's spaces was measured on the H100
    (data/h100/tuning-corpus-cuda.sqlite, named FAMILY/KEY) and nothing else was; a sample
    of the variants without local memory (measured first) and of those with it makes the
    same CUDA code (the stored code_sha256)."""
    with Store(STORE) as store:
        stored = {r["case_name"]: r["code_sha256"] for r in store.rows()}
    everything = set()
    for name, fam in CORPUS.items():
        old, new = _old_and_new(fam)
        keys = {f"{name}/{variant_key(v)}": v for v in old + new}
        everything |= set(keys)
        for part in (old, new):
            names = sorted(f"{name}/{variant_key(v)}" for v in part)
            for key in names and (names[0], names[len(names) // 2], names[-1]):
                made = apply(fam.build(), keys[key], fam.space)
                assert generate(made, "cuda").code_sha256 == stored[key], key
    assert set(stored) == everything


def _largest(new, fam):
    """For each set of local-memory parameters the new variants turn on, the last of the
    variants with the most elements per work-group (work-items × tasks per work-item ×
    the tile × the work-items per reduction): the largest tiles."""
    def size(v):
        out = math.prod(v[f"{a.iname}.group"] * v[f"{a.iname}.per_item"]
                        for a in fam.space.axes)
        return out * math.prod(v.get(f"{kind}.{n}", 1) for kind in ("tile", "split")
                               for n, _ in getattr(fam.space, kind))
    kinds = {}
    for v in new:
        on = frozenset(k for k, x in v.items() if _uses_new({k: x}))
        kinds.setdefault(on, []).append(v)
    out = []
    for group in kinds.values():
        top = max(map(size, group))
        out.append([v for v in group if size(v) == top][-1])
    return out


def _fits(variant, fam, knl):
    return invalid(variant, fam.space, max_group_size=1024, local_mem_bytes=LOCAL_MEM,
                   knl=knl) is None


@pytest.mark.parametrize("name", sorted(LOCAL_FAMILIES))
def test_the_largest_local_memory_variants_fit_the_device(name):
    """Where a family's tiles are largest, the space's restrictions keep them within 48
    KiB of local memory and schedulable by Loopy (the sampled ones are checked as they
    run, below), so that a measurement, which checks only the work-group size, never
    meets a refusal."""
    fam = CORPUS[name]
    for variant in _largest(_old_and_new(fam)[1], fam):
        assert _fits(variant, fam, apply(fam.build(), variant, fam.space)), variant


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_a_corpus_family_computes_its_reference_untuned_and_tuned(name, pocl):
    fam = CORPUS[name]
    old, new = _old_and_new(fam)
    sample = [*old[::SAMPLE], old[-1]]
    if new:
        sample += [*new[::NEW_SAMPLE], new[-1]]
    for variant in [None, *sample]:
        knl = fam.build() if variant is None else apply(fam.build(), variant, fam.space)
        assert variant is None or not _uses_new(variant) or _fits(variant, fam, knl)
        case = SimpleNamespace(params=fam.check_params, kernel=lambda knl=knl: knl,
                               reference=fam.reference)
        errors = check_case(case, pocl)  # outputs poisoned with NaN first
        assert max(errors.values()) < 1e-5, (variant, errors)


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_the_properties_of_a_corpus_family_are_extracted(name):
    from kernelcast.properties import extract_properties

    fam = CORPUS[name]
    old, new = _old_and_new(fam)
    for variant in (old[0], old[-1], *new[-1:]):
        values = extract_properties(apply(fam.build(), variant, fam.space)).evaluate(
            fam.params)
        assert values["launch"] == 1 and values["workgroup"] >= 1, variant
        assert sum(v for k, v in values.items() if k.startswith("store_global")) > 0
