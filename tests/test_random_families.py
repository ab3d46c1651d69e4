"""Random loop families (kernelcast.tune.random_families): drawn deterministically, their
variants inside the limits, computing their NumPy reference on PoCL untuned and tuned,
and the committed H100 corpus (data/h100/corpus-loops-cuda.sqlite.xz) still what the
generator makes."""

import lzma
import math
import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from kernelcast.measure.codegen import generate
from kernelcast.measure.store import Store
from kernelcast.measure.verify import check_case
from kernelcast.tune.random_families import (
    MAX_PER_ITEM,
    MIN_GROUP,
    draw,
    is_random_family,
    random_family,
    random_variants,
)
from kernelcast.tune.space import (
    Axis,
    Space,
    apply,
    invalid,
    parse_variant_key,
    variant_key,
)
from kernelcast.tune.variants import load_random_dataset

STORE = Path(__file__).resolve().parents[1] / "data" / "h100" / "corpus-loops-cuda.sqlite.xz"
#: families checked on PoCL: a 1-, 2- and 3-D one, with a reduction over r, taps, both,
#: float64, a transposed output
CHECKED = (0, 2, 3, 4, 5, 8, 11, 12)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "corpus-loops-cuda.sqlite"
    path.write_bytes(lzma.open(STORE).read())
    with Store(path) as s:
        yield s


def test_a_family_is_drawn_the_same_every_time():
    assert draw(17) == draw(17)
    assert draw(17) != draw(18)
    assert random_family(3).name == "loops-00003" and is_random_family("loops-00003")
    assert not is_random_family("loops-x") and not is_random_family("matmul")


def test_the_draws_cover_loops_reductions_and_both_types():
    draws = [draw(i) for i in range(300)]
    assert {len(d.grid) for d in draws} == {1, 2, 3}
    assert {d.reduce for d in draws} == {(), ("r",), ("t",), ("r", "t")}
    assert {d.dtype for d in draws} == {"float32", "float64"}
    assert any(d.transposed for d in draws) and any(d.horner >= 16 for d in draws)
    reuse = [d for d in draws if len({r.array for r in d.reads}) < len(d.reads)]
    assert len(reuse) > 30  # arrays read at several offsets


def test_variants_are_distinct_and_within_the_limits():
    for i in range(40):
        fam = random_family(i)
        variants = random_variants(fam, 8)
        assert variants == random_variants(fam, 8)
        assert len({variant_key(v) for v in variants}) == len(variants) > 0
        for v in variants:
            items = math.prod(v[f"{a.iname}.group"] for a in fam.space.axes)
            assert MIN_GROUP <= items <= 1024
            assert math.prod(v[f"{a.iname}.per_item"] for a in fam.space.axes) \
                <= MAX_PER_ITEM
            assert invalid(v, fam.space, max_group_size=1024) is None


def test_a_variant_key_reads_back():
    fam = random_family(5)
    for v in random_variants(fam, 8):
        parsed = parse_variant_key(variant_key(v))
        assert {k: x for k, x in v.items() if k in parsed} == parsed
        assert apply(fam.build(), parsed, fam.space) is not None


def test_a_split_reduction_needs_a_free_local_axis():
    space = Space((Axis("i", (32,)), Axis("j", (2,)), Axis("k", (2,))),
                  split=(("r", (1, 32)),))
    v = {"i.group": 32, "i.per_item": 1, "j.group": 2, "j.per_item": 1, "k.group": 2,
         "k.per_item": 1, "split.r": 32}
    assert "4 local axes" in invalid(v, space, max_group_size=1 << 20)
    assert invalid({**v, "split.r": 1}, space, max_group_size=1 << 20) is None


@pytest.mark.parametrize("i", CHECKED)
def test_a_family_computes_its_reference_untuned_and_tuned(i, pocl):
    fam = random_family(i)
    for variant in [None, *random_variants(fam, 8)[:2]]:
        knl = fam.build() if variant is None else apply(fam.build(), variant, fam.space)
        case = SimpleNamespace(params=fam.check_params, kernel=lambda knl=knl: knl,
                               reference=fam.reference)
        errors = check_case(case, pocl)  # outputs poisoned with NaN first
        tolerance = 1e-12 if draw(i).dtype == "float64" else 1e-5
        assert max(errors.values()) < tolerance, (variant, errors)


def test_the_committed_corpus_is_what_the_generator_makes(store):
    rows = [r for r in store.rows() if r["status"] in ("ok", "unstable")]
    assert len(rows) > 8000
    data = load_random_dataset(store)
    assert len(data) == len(rows) and data.info.kernel_class.nunique() > 1000
    by_family = {}
    for r in rows:
        by_family.setdefault(r["case_name"].split("/")[0], []).append(r)
    compared = 0
    for name in random.Random(0).sample(sorted(by_family), 8):
        fam = random_family(int(name.split("-")[1]))
        drawn = {f"{name}/{variant_key(v)}": v for v in random_variants(fam, 8)}
        for r in by_family[name]:
            assert r["params"] == fam.params
            variant = drawn[r["case_name"]]
            if any(k.startswith(("split.", "prefetch.")) and v not in (1, False)
                   for k, v in variant.items()):
                continue  # Loopy's code for these depends on the process's hash seed
            code = generate(apply(fam.build(), variant, fam.space), "cuda")
            assert code.code_sha256 == r["code_sha256"], r["case_name"]
            compared += 1
    assert compared >= 20
