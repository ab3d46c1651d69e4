"""Spaces with tiles, prefetches into local memory, padding, reductions split across
work-items and restrictions: the TOML format, the names and code of the variants measured
on the H100 kept, Loopy's refusals given as reasons, and new variants run on PoCL against
NumPy (outputs poisoned with NaN first, by kernelcast.measure.verify)."""

import sqlite3
from pathlib import Path
from types import SimpleNamespace

import loopy as lp
import numpy as np
import pytest
from tune_kernels import PARAMS, build  # the small product

from kernelcast.errors import UsageError
from kernelcast.measure.codegen import generate
from kernelcast.measure.verify import check_case
from kernelcast.models import get_model
from kernelcast.tune.families import FAMILIES
from kernelcast.tune.space import (
    OFF,
    Axis,
    InvalidVariant,
    Prefetch,
    Space,
    apply,
    check_space,
    code,
    default_space,
    invalid,
    load_space,
    variant_key,
)
from kernelcast.tune.tuner import rank

STORE = Path(__file__).resolve().parents[1] / "data" / "h100" / "tuning-cuda.sqlite"
LOCAL = 48 * 1024


def _mm_reference(args):
    return {"out": args["a"] @ args["b"]}


def _uses_new(variant) -> bool:
    """Whether *variant* tiles, splits, prefetches or pads."""
    return any(k.partition(".")[0] in OFF and v != OFF[k.partition(".")[0]]
               for k, v in variant.items())


def _check(knl, params, reference, pocl):
    case = SimpleNamespace(params=params, kernel=lambda: knl, reference=reference)
    return max(check_case(case, pocl).values())


TOML = """restrict = ["(tile.k > 1) == (prefetch.a or prefetch.b)", "prefetch.b or pad.b == 0"]
[axes.j]
group = [4, 8]
[axes.i]
group = [2]
per_item = [1, 2]
[unroll]
k = [1, 2]
[tile]
k = [1, 2]
[split]
k = [1, 4]
[prefetch.a]
over = ["i", "k"]
[prefetch.b]
over = ["k", "j"]
fetch = [false, true]
pad = [0, 1]
"""


def test_a_space_file_with_tiles_splits_prefetches_and_restrictions(tmp_path):
    path = tmp_path / "space.toml"
    path.write_text(TOML)
    space = load_space(path)
    assert space == Space(
        (Axis("j", (4, 8)), Axis("i", (2,), (1, 2))), (("k", (1, 2)),),
        tile=(("k", (1, 2)),), split=(("k", (1, 4)),),
        prefetch=(Prefetch("a", ("i", "k")), Prefetch("b", ("k", "j"), pad=(0, 1))),
        restrict=("(tile.k > 1) == (prefetch.a or prefetch.b)", "prefetch.b or pad.b == 0"))
    assert list(space.parameters()) == [
        "j.group", "j.per_item", "i.group", "i.per_item", "unroll.k", "tile.k", "split.k",
        "prefetch.a", "prefetch.b", "pad.b"]
    variants = list(space.variants())
    # j, i.per_item, unroll, split: 16; untiled without prefetch: 1; tiled: a, b or both,
    # b with padding or not: 5
    assert len(space) == len(variants) == 16 * (1 + 5)
    assert all((v["tile.k"] > 1) == (v["prefetch.a"] or v["prefetch.b"]) for v in variants)
    # parameters at their "off" value stay out of the key: the names of variants made
    # before tiles and prefetches existed do not change
    assert variant_key(variants[0]) == \
        "j.group=4,j.per_item=1,i.group=2,i.per_item=1,unroll.k=1"
    on = {**variants[0], "tile.k": 2, "prefetch.b": True, "pad.b": 1}
    assert variant_key(on).endswith("unroll.k=1,tile.k=2,prefetch.b=true,pad.b=1")
    # only KIND.NAME parameters are left out: a Kernel Tuner parameter "prefetch" stays
    assert variant_key({"j.group": 4, "prefetch": False}) == "j.group=4,prefetch=false"
    check_space(space, build())
    for bad, message in [(Prefetch("out", ("j",)), "prefetches out, not an array that "
                                                   "kernel 'mm' reads"),
                         (Prefetch("a", ("q",)), "names q, not a loop")]:
        with pytest.raises(UsageError, match=message):
            check_space(Space(space.axes, prefetch=(bad,)), build())


@pytest.mark.parametrize("text, message", [
    ("[axes.j]\ngroup = [4]\n[prefetch.a]\nfetch = [true]\n", "takes over"),
    ("[axes.j]\ngroup = [4]\n[prefetch.a]\nover = []\n", "non-empty list of loop"),
    ("[axes.j]\ngroup = [4]\n[prefetch.a]\nover = ['j']\nfetch = [1]\n", "true/false"),
    ("[axes.j]\ngroup = [4]\n[prefetch.a]\nover = ['j']\npad = [-1]\n", "non-negative"),
    ("[axes.j]\ngroup = [4]\n[tile]\nk = [0]\n", "positive integers"),
    ("restrict = ['tile.k > 1']\n[axes.j]\ngroup = [4]\n", "not a parameter"),
    ("restrict = ['__import__(\"os\")']\n[axes.j]\ngroup = [4]\n", "not allowed"),
    ("restrict = ['j.group >']\n[axes.j]\ngroup = [4]\n", "not an expression"),
    ("restrict = ['group > 1']\n[axes.j]\ngroup = [4]\n", "written KIND.NAME"),
    ("restrict = 'j.group > 1'\n[axes.j]\ngroup = [4]\n", "list of conditions"),
    ("[axes.tile]\ngroup = [4]\n", "may not be named tile"),
    ("[axes.j]\ngroup = [4]\n[pad]\nj = [1]\n", "unknown section pad"),
])
def test_a_bad_space_file_is_refused_in_one_line(tmp_path, text, message):
    path = tmp_path / "space.toml"
    path.write_text(text)
    with pytest.raises(UsageError, match=message) as err:
        load_space(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_the_measured_variants_keep_their_names_and_their_code():
    """Every variant measured on the H100 (data/h100/tuning-cuda.sqlite) is a valid
    variant of its family's extended space, under the same name; every variant that uses
    none of the local-memory parameters was measured (before they existed); a sample
    makes the same CUDA code."""
    with sqlite3.connect(f"file:{STORE}?mode=ro", uri=True) as db:
        stored = dict(db.execute("SELECT case_name, code_sha256 FROM measurements"))
    for name, fam in FAMILIES.items():
        valid = {f"{name}/{variant_key(v)}": v for v in fam.space.variants()
                 if invalid(v, fam.space, max_group_size=1024) is None}
        old = {k: v for k, v in valid.items() if not _uses_new(v)}
        measured = {k for k in stored if k.startswith(f"{name}/")}
        assert set(old) <= measured <= set(valid), name
        for key in sorted(measured)[::max(1, len(measured) // 3)][:3]:
            made = apply(fam.build(), valid[key], fam.space)
            assert generate(made, "cuda").code_sha256 == stored[key], key


def test_a_variant_that_cannot_be_made_or_run_says_why():
    matvec, matmul = FAMILIES["matvec"], FAMILIES["matmul"]
    split = {"i.group": 64, "i.per_item": 1, "unroll.j": 1, "split.j": 32}
    assert invalid(split, matvec.space, max_group_size=1024) == \
        "a work-group of 2048 work-items; the device runs at most 1024"
    tiled = {"j.group": 128, "j.per_item": 4, "i.group": 8, "i.per_item": 4, "unroll.k": 4,
             "tile.k": 16, "prefetch.a": True, "prefetch.b": True}
    # not in the family (restricted out), but a variant a user may write
    short = Space(matmul.space.axes, matmul.space.unroll, tile=(("k", (4, 16)),),
                  prefetch=matmul.space.prefetch)
    assert invalid({**tiled, "tile.k": 4, "unroll.k": 8}, short, max_group_size=1024) == \
        "unroll.k=8 does not divide the tile of k (tile.k=4)"
    made = apply(matmul.build(), tiled, matmul.space)
    assert invalid(tiled, matmul.space, max_group_size=1024, local_mem_bytes=LOCAL,
                   knl=made) is None
    assert invalid(tiled, matmul.space, max_group_size=1024, local_mem_bytes=16384,
                   knl=made) == (f"{(16 * 512 + 32 * 16) * 4} bytes of local memory per "
                                 "work-group; the device has 16384")
    transpose = FAMILIES["transpose"]
    padded = {"j.group": 32, "j.per_item": 1, "i.group": 8, "i.per_item": 1, "pad.a": 1}
    assert invalid(padded, transpose.space, max_group_size=1024) == \
        "pad.a=1 without prefetch.a: nothing to pad"
    with pytest.raises(InvalidVariant, match="nothing to pad"):
        apply(transpose.build(), padded, transpose.space)
    # a fetch by one row of work-items: Loopy will not leave local axis 1 unused
    flat = {**padded, "i.group": 1, "prefetch.a": True}
    assert invalid(flat, transpose.space, max_group_size=1024,
                   knl=apply(transpose.build(), flat, transpose.space)) == (
        "prefetch.a with i.group=1, i.per_item=1: the tile is one element along i, so "
        "Loopy cannot spread its fetch over every local axis of the work-group")
    # a 2-D stencil's loops start at 1, so its first tile is clipped and Loopy sizes the
    # tile by the whole array: refused, as the family's space leaves it out
    stencil = FAMILIES["stencil2d"]
    halo = Space(stencil.space.axes, prefetch=(Prefetch("u", ("j", "i")),))
    with pytest.raises(InvalidVariant, match=r"tile of u \(n, n\), not of a size the"):
        apply(stencil.build(), {"j.group": 32, "j.per_item": 1, "i.group": 4,
                                "i.per_item": 1, "prefetch.u": True}, halo)


def test_rank_skips_what_loopy_refuses_with_its_reason():
    stencil = FAMILIES["stencil2d"]
    halo = Space((Axis("j", (32,)), Axis("i", (4, 64))), prefetch=(Prefetch("u", ("j", "i")),))
    model = get_model("hong-kim", hardware="h100").fit()
    ranked, skipped = rank(stencil.build(), stencil.params, halo, model,
                           max_group_size=1024, local_mem_bytes=LOCAL)
    assert [r.key for r in ranked] == ["j.group=32,j.per_item=1,i.group=4,i.per_item=1"]
    assert [r.reason for r in skipped] == [
        "Loopy made the tile of u (n, n), not of a size the work-group fixes",
        "a work-group of 2048 work-items; the device runs at most 1024",
        "a work-group of 2048 work-items; the device runs at most 1024"]


def test_the_code_of_a_padded_prefetch_makes_the_same_kernel():
    fam = FAMILIES["transpose"]
    variant = {"j.group": 32, "j.per_item": 1, "i.group": 8, "i.per_item": 2,
               "prefetch.a": True, "pad.a": 1}
    text = code(variant, fam.space)
    assert "from kernelcast.tune.space import pad_local_array\n" in text
    assert ("fetch_outer_inames=frozenset({'i_g', 'j_outer'})" in text
            and "knl = pad_local_array(knl, 'a_fetch', 1)" in text)
    namespace = {"knl": fam.build()}
    exec(text, namespace)  # noqa: S102 - what a user pastes
    device = lp.generate_code_v2(namespace["knl"]).device_code()
    assert device == lp.generate_code_v2(apply(fam.build(), variant, fam.space)).device_code()
    assert "__local float a_fetch[32 * 17];" in device  # 16 columns, padded by one


@pytest.mark.parametrize("name, count, sample", [("matmul", 378, 5), ("transpose", 136, 4),
                                                 ("matvec", 135, 4)])
def test_new_family_variants_compute_the_reference(name, count, sample, pocl):
    fam = FAMILIES[name]
    new = [v for v in fam.space.variants()
           if _uses_new(v) and invalid(v, fam.space, max_group_size=1024) is None]
    assert len(new) == count
    for variant in new[len(new) // (2 * sample)::len(new) // sample][:sample]:
        knl = apply(fam.build(), variant, fam.space)
        assert invalid(variant, fam.space, max_group_size=1024, local_mem_bytes=LOCAL,
                       knl=knl) is None
        assert _check(knl, fam.check_params, fam.reference, pocl) < 1e-5, variant


SMALL = Space((Axis("j", (8,), (1, 2)), Axis("i", (2,), (1, 2))), (("k", (1, 2)),),
              tile=(("k", (1, 2)),), split=(("k", (1, 4)),),
              prefetch=(Prefetch("a", ("i", "k")), Prefetch("b", ("k", "j"), pad=(0, 1))),
              restrict=("j.per_item == i.per_item", "tile.k == 1 or split.k == 1",
                        "(tile.k > 1) == (prefetch.a or prefetch.b)",
                        "prefetch.b == (pad.b == 1)",
                        "unroll.k == 1 or (tile.k > 1 and j.per_item == 1)"))


def test_every_variant_of_a_small_space_computes_the_product(pocl):
    variants = list(SMALL.variants())
    # per item 1 or 2: plain, split by 4, tiled with a, b (padded) or both prefetched;
    # the three tiled ones unrolled too
    assert len(variants) == 13
    for variant in variants:
        knl = apply(build(), variant, SMALL)
        assert invalid(variant, SMALL, max_group_size=64, local_mem_bytes=LOCAL,
                       knl=knl) is None
        assert _check(knl, PARAMS, _mm_reference, pocl) < 1e-5, variant


def test_the_default_space_splits_reductions_and_prefetches_reused_reads(pocl):
    matvec = FAMILIES["matvec"]
    space = default_space(matvec.build(), matvec.params)
    assert space.split == (("j", (1, 32)),) and not space.prefetch
    # a matrix's own tile is not reused; nor is a stencil's whose loops start at 1
    for name in ("transpose", "stencil2d"):
        fam = FAMILIES[name]
        assert not default_space(fam.build(), fam.params).prefetch
    # a stencil whose loops start at 0 gets its tile with the halo
    knl = lp.make_kernel(
        "{[i, j]: 0 <= i < n - 2 and 0 <= j < n - 2}",
        "v[i + 1, j + 1] = 0.2f * (u[i + 1, j + 1] + u[i, j + 1] + u[i + 2, j + 1]"
        " + u[i + 1, j] + u[i + 1, j + 2])",
        [lp.GlobalArg("u", np.float32, shape=("n", "n")),
         lp.GlobalArg("v", np.float32, shape=("n", "n"), is_output=True),
         lp.ValueArg("n", np.int32)], name="jacobi", lang_version=(2018, 2))
    space = default_space(knl, {"n": 37}, max_group_size=64)
    assert space.prefetch == (Prefetch("u", ("j", "i")),)
    variant = {"j.group": 16, "j.per_item": 1, "i.group": 4, "i.per_item": 2,
               "prefetch.u": True}
    made = apply(knl, variant, space)
    assert made.default_entrypoint.temporary_variables["u_fetch"].shape == (10, 18)

    def reference(a):
        u, v = a["u"], np.full_like(a["u"], np.nan)
        v[1:-1, 1:-1] = 0.2 * (u[1:-1, 1:-1] + u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2]
                               + u[1:-1, 2:])
        return {"v": v}

    assert _check(made, {"n": 37}, reference, pocl) < 1e-5
