"""The search families (kernelcast.tune.families.SEARCH_FAMILIES): apart from the judged
families and the training corpus, found by ``family``, 500 or more variants each that a
device with 1024 work-items and 48 KiB of local memory per work-group runs (the largest
tiles checked in full, with Loopy), and a sample of variants, the extremes of work per
item and unrolling among them, computing the NumPy reference on PoCL."""

import math
from types import SimpleNamespace

import pytest

from kernelcast.measure.verify import check_case
from kernelcast.tune.corpus import CORPUS
from kernelcast.tune.families import FAMILIES, SEARCH_FAMILIES, family
from kernelcast.tune.space import apply, invalid

#: Valid variants of each search family (every variant of its space): what a measurement
#: on the GPU times.
VARIANTS = {"conv2d": 1080, "nbody": 768}
LOCAL_MEM = 48 * 1024
#: Variants run on PoCL besides the first and the last: spread evenly over the space.
SPREAD = 3


def _valid(fam):
    return [v for v in fam.space.variants()
            if invalid(v, fam.space, max_group_size=1024) is None]


def _elements(variant, fam) -> int:
    """Work-items × tasks per work-item of *variant*'s work-group."""
    return math.prod(variant[f"{a.iname}.group"] * variant[f"{a.iname}.per_item"]
                     for a in fam.space.axes)


def _sample(valid: list) -> list:
    """The first variant (smallest groups, one task, nothing unrolled, tiled or
    fetched), SPREAD spread between, and the last (largest groups, most tasks per
    work-item, everything unrolled, tiled and fetched)."""
    step = len(valid) // SPREAD
    return [valid[0], *valid[step // 2::step][:SPREAD], valid[-1]]


def test_the_search_families_are_neither_judged_nor_in_the_corpus():
    assert len(FAMILIES) == 6 and not set(SEARCH_FAMILIES) & (set(FAMILIES) | set(CORPUS))
    others = [f.build().default_entrypoint for f in (*FAMILIES.values(), *CORPUS.values())]
    for name, fam in SEARCH_FAMILIES.items():
        kernel = fam.build().default_entrypoint
        assert kernel.name == name and name not in {k.name for k in others}
        statements = str(kernel.instructions).replace(name, "")
        assert all(statements != str(k.instructions).replace(k.name, "") for k in others)


def test_family_finds_a_search_family_and_names_them_all_when_it_does_not():
    from kernelcast.errors import UsageError

    assert family("conv2d") is SEARCH_FAMILIES["conv2d"]
    assert family("matmul") is FAMILIES["matmul"]
    with pytest.raises(UsageError, match="no tuning family 'outer'; known: matmul.*, nbody"):
        family("outer")


def test_every_variant_of_a_search_family_fits_the_device():
    """Each has 500 or more variants, and its restrictions leave none that a device
    with 1024 work-items per group refuses."""
    for name, fam in SEARCH_FAMILIES.items():
        valid = _valid(fam)
        assert len(valid) == len(fam.space) == VARIANTS[name] >= 500, name


@pytest.mark.parametrize("name", sorted(SEARCH_FAMILIES))
def test_the_largest_tiles_fit_in_local_memory_and_loopy_makes_them(name):
    fam = SEARCH_FAMILIES[name]
    fetched = [v for v in _valid(fam) if any(v.get(f"prefetch.{p.array}")
                                              for p in fam.space.prefetch)]
    top = max(_elements(v, fam) for v in fetched)
    largest = [v for v in fetched if _elements(v, fam) == top]
    for variant in (largest[0], largest[-1]):
        knl = apply(fam.build(), variant, fam.space)
        assert invalid(variant, fam.space, max_group_size=1024, local_mem_bytes=LOCAL_MEM,
                       knl=knl) is None, variant


@pytest.mark.parametrize("name", sorted(SEARCH_FAMILIES))
def test_a_sample_of_variants_computes_the_reference(name, pocl):
    fam = SEARCH_FAMILIES[name]
    for variant in _sample(_valid(fam)):
        knl = apply(fam.build(), variant, fam.space)
        case = SimpleNamespace(params=fam.check_params, kernel=lambda knl=knl: knl,
                               reference=fam.reference)
        errors = check_case(case, pocl)  # outputs poisoned with NaN first
        assert max(errors.values()) < 1e-5, (variant, errors)
