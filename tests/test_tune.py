"""Tuning: spaces as data, variants made by Loopy and run on PoCL, a ranking by a model,
the top K measured into a store and resumed without measuring anything twice."""

from types import SimpleNamespace

import loopy as lp
import pytest
from tune_kernels import PARAMS, build

from kernelcast.errors import UsageError
from kernelcast.measure.store import Store
from kernelcast.measure.verify import check_case
from kernelcast.models import get_model
from kernelcast.tune.families import FAMILIES
from kernelcast.tune.space import (
    Axis,
    Space,
    apply,
    code,
    default_space,
    invalid,
    load_space,
    variant_key,
)
from kernelcast.tune.tuner import rank, tune

SPACE = Space((Axis("j", (4, 8), (1, 2)), Axis("i", (1, 2))), (("k", (1, 4)),))


def test_a_space_file_lists_its_variants(tmp_path):
    path = tmp_path / "space.toml"
    path.write_text("[axes.j]\ngroup = [4, 8]\nper_item = [1, 2]\n[axes.i]\ngroup = [1, 2]\n"
                    "[unroll]\nk = [1, 4]\n")
    space = load_space(path)
    assert space == SPACE and len(space) == 2 * 2 * 2 * 1 * 2
    first = next(space.variants())
    assert variant_key(first) == "j.group=4,j.per_item=1,i.group=1,i.per_item=1,unroll.k=1"
    for text, message in [("[axes]\n", "at least one"), ("[axes.j]\nper_item = [1]\n",
                                                         "takes group"),
                          ("[axes.j]\ngroup = [0]\n", "positive integers"),
                          ("[tiles]\n", "unknown section"), ("[axes.j\n", "not a TOML")]:
        path.write_text(text)
        with pytest.raises(UsageError, match=message):
            load_space(path)


def test_the_default_space_tunes_the_parallel_loops_and_unrolls_the_reduction():
    space = default_space(build(), PARAMS, max_group_size=64)
    # j (40) fastest, then i (24); work-groups of whole warps (32) up to the device's 64
    assert [a.iname for a in space.axes] == ["j", "i"]
    assert space.axes[0].group == (32,) and space.axes[1].group == (1, 2)
    assert space.unroll == (("k", (1, 4)),)
    # without a warp (a CPU): every power of two up to the loop or the device
    cpu = default_space(build(), PARAMS, max_group_size=64, warp_size=1, max_variants=None)
    assert cpu.axes[0].group == (1, 2, 4, 8, 16, 32) and cpu.axes[1].group[-1] == 16


def test_every_variant_computes_the_product(pocl):
    for variant in SPACE.variants():
        knl = apply(build(), variant, SPACE)
        case = SimpleNamespace(
            params=PARAMS, kernel=lambda knl=knl: knl,
            reference=lambda args: {"out": args["a"] @ args["b"]})
        errors = check_case(case, pocl)
        assert errors["out"] < 1e-5, variant


def test_a_variant_too_big_for_the_device_is_skipped_with_its_reason():
    space = Space((Axis("j", (8, 64)), Axis("i", (1, 2))))
    model = get_model("hong-kim", hardware="h100").fit()
    ranked, skipped = rank(build(), PARAMS, space, model, max_group_size=64)
    assert [r.variant["j.group"] * r.variant["i.group"] for r in skipped] == [128]
    assert "work-group of 128 work-items; the device runs at most 64" in skipped[0].reason
    assert len(ranked) == 3 and all(r.predicted_s > 0 for r in ranked)
    assert [r.predicted_s for r in ranked] == sorted(r.predicted_s for r in ranked)
    assert invalid({"j.group": 8, "i.group": 2}, space, max_group_size=64) is None


def test_tuning_measures_the_top_k_and_resumes_without_measuring_twice(pocl, tmp_path):
    model = get_model("hong-kim", hardware="h100").fit()
    db = tmp_path / "tune.sqlite"
    with Store(db, pocl.identity) as store:
        result = tune(build, PARAMS, SPACE, model, pocl, store, family="mm", top=3,
                      progress=None)
        rows = store.rows()
    assert len(result.ranked) == len(SPACE) and not result.skipped
    top = [f"mm/{r.key}" for r in result.ranked[:3]]
    assert sorted(result.measured) == sorted(top) == sorted(r["case_name"] for r in rows)
    assert set(result.statuses.values()) <= {"ok", "unstable"}
    name, seconds = result.best
    assert name in top and seconds == min(result.measured.values())
    with Store(db, pocl.identity) as store:
        again = tune(build, PARAMS, SPACE, model, pocl, store, family="mm", top=3,
                     progress=None)
        assert len(store.rows()) == 3  # nothing measured twice
    assert again.measured == result.measured


def test_the_code_of_a_variant_makes_the_same_kernel():
    variant = {"j.group": 8, "j.per_item": 2, "i.group": 2, "i.per_item": 1, "unroll.k": 4}
    text = code(variant, SPACE)
    assert "lp.split_iname(knl, 'j', 16, outer_tag='g.0'" in text
    namespace = {"knl": build()}
    exec(text, namespace)  # noqa: S102 - what a user pastes
    made = apply(build(), variant, SPACE)
    assert lp.generate_code_v2(namespace["knl"]).device_code() == \
        lp.generate_code_v2(made).device_code()


def test_the_worked_example_of_docs_tuning_runs():
    import doctest
    from pathlib import Path

    page = Path(__file__).resolve().parents[1] / "docs" / "tuning.md"
    result = doctest.testfile(str(page), module_relative=False,
                              optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted >= 8


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_a_family_has_enough_variants_and_they_compute_its_reference(name, pocl):
    fam = FAMILIES[name]
    valid = [v for v in fam.space.variants()
             if invalid(v, fam.space, max_group_size=1024) is None]
    assert len(valid) >= 10
    for variant in valid[:: max(1, len(valid) // 5)]:  # five spread over the space
        knl = apply(fam.build(), variant, fam.space)
        case = SimpleNamespace(params=fam.check_params, kernel=lambda knl=knl: knl,
                               reference=fam.reference)
        errors = check_case(case, pocl)
        assert max(errors.values()) < 1e-5, (variant, errors)


def test_two_families_have_two_hundred_variants_or_more():
    sizes = sorted(sum(invalid(v, f.space, max_group_size=1024) is None
                       for v in f.space.variants()) for f in FAMILIES.values())
    assert sizes[-2] >= 200


def test_a_folded_3d_stencil_is_counted_exactly():
    # folded along two axes, its counts are quasi-polynomials of thousands of terms; their
    # compiled evaluator must still compile (a flat sum overflowed Python's recursion)
    from kernelcast.properties import extract_properties

    fam = FAMILIES["stencil3d"]
    variant = {"k.group": 16, "k.per_item": 2, "j.group": 2, "j.per_item": 2,
               "i.group": 2, "i.per_item": 2}
    props = extract_properties(apply(fam.build(), variant, fam.space))
    for n in (13, 40, 512):
        values = props.evaluate({"n": n})
        interior = (n - 2) ** 3  # every interior point: 6 additions, 1 division, 7 loads
        assert (values["add_f32"], values["div_f32"]) == (6 * interior, interior)
        assert values["load_global_32_s1"] == 7 * interior


def test_a_space_naming_loops_the_kernel_lacks_is_refused(pocl, tmp_path):
    from kernelcast.tune.space import check_space

    with pytest.raises(UsageError, match="not a loop of kernel 'mm'"):
        check_space(Space((Axis("q", (4,)),)), build())
    tagged = lp.split_iname(build(), "j", 4, outer_tag="g.0", inner_tag="l.0")
    with pytest.raises(UsageError, match="already mapped"):
        check_space(Space((Axis("j_inner", (4,)),)), tagged)
    model = get_model("hong-kim", hardware="h100").fit()
    with Store(tmp_path / "t.sqlite", pocl.identity) as store, \
            pytest.raises(UsageError, match="not a loop"):
        tune(build, PARAMS, Space((Axis("q", (4,)),)), model, pocl, store, family="mm")
