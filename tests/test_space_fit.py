"""Spaces that fit the device: ``launchable`` against a brute-force filter, the default
spaces of examples/tunable.py (whole warps, a few hundred variants, ranked with few
skips, each said in kernelcast's words), Loopy's refusals predicted or translated, and an
example tuned on PoCL through the CLI."""

import importlib.util
import itertools
import math
from pathlib import Path

import loopy as lp
import numpy as np
import pytest

from kernelcast.cli import main
from kernelcast.errors import KernelcastError
from kernelcast.models import get_model
from kernelcast.models.hong_kim import Workload
from kernelcast.tune.families import FAMILIES
from kernelcast.tune.space import (
    Axis,
    InvalidVariant,
    Prefetch,
    Space,
    apply,
    count_launchable,
    default_space,
    invalid,
    launchable,
)
from kernelcast.tune.tuner import rank

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "tunable.py"
#: each factory of examples/tunable.py at the sizes its docstring gives
SIZES = {"softmax": {"rows": 4096, "cols": 1024}, "matmul": {"n": 1024},
         "matvec": {"n": 4096}, "stencil2d": {"n": 4096}, "transpose": {"n": 4096}}
LOCAL = 49152
#: words of Loopy's that a reason in kernelcast's words does not use
LOOPY_WORDS = ("LoopyError", "iname", "insn", "hw axes", "Workload(", "add_inames")


def _tunable():
    spec = importlib.util.spec_from_file_location("tunable", EXAMPLES)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TUNABLE = _tunable()


def _kernel(domain, insn, args, name):
    return lp.make_kernel(domain, insn, args, name=name, lang_version=(2018, 2))


def _two_sums():
    """y[i] = Σ_{j,k} a[i, j, k]: one reduction over two loops."""
    return _kernel("{[i, j, k]: 0 <= i < n and 0 <= j, k < m}", "y[i] = sum((j, k), a[i, j, k])",
                   [lp.GlobalArg("a", np.float32, shape=("n", "m", "m")),
                    lp.GlobalArg("y", np.float32, shape=("n",), is_output=True),
                    lp.ValueArg("n, m", np.int32)], "two_sums")


def _row_scale():
    """b[i, j] = a[i] c[i, j]: a is reused across j, its tile spans i alone."""
    return _kernel("{[i, j]: 0 <= i, j < n}", "b[i, j] = a[i] * c[i, j]",
                   [lp.GlobalArg("a", np.float32, shape=("n",)),
                    lp.GlobalArg("c", np.float32, shape=("n", "n")),
                    lp.GlobalArg("b", np.float32, shape=("n", "n"), is_output=True),
                    lp.ValueArg("n", np.int32)], "row_scale")


#: a space with every kind of check: groups too large, splits of two loops (4 local
#: axes with three axes), tiles and unrolls that conflict, pads without prefetches, a
#: tile spanning fewer loops than the axes, tiles too large for local memory
MIXED = Space((Axis("j", (16, 64, 256), (1, 4)), Axis("i", (1, 8, 64), (1, 2)),
               Axis("k", (1, 2))),
              (("r", (1, 4)),), tile=(("r", (1, 8)),), split=(("r", (1, 32)), ("s", (1, 4))),
              prefetch=(Prefetch("a", ("j", "i", "r"), pad=(0, 1)), Prefetch("b", ("j",))),
              restrict=("not (pad.a == 1 and unroll.r == 4)",))
#: one axis: a loop both tiled and split, unrollings that do not divide their tile, a
#: prefetch over a split loop, two reductions split
SPLIT = Space((Axis("i", (32, 64, 128), (1, 2)),), (("r", (1, 4, 8)),),
              tile=(("r", (1, 4, 8)),), split=(("r", (1, 32)), ("s", (1, 4))),
              prefetch=(Prefetch("a", ("i", "r"), pad=(0, 1)),))


def _items(variant, space):
    items = math.prod(variant[f"{a.iname}.group"] for a in space.axes)
    return items * math.prod(variant.get(f"split.{n}", 1) for n, _ in space.split)


#: words of each kind of reason: in ``invalid``'s reasons, in ``launchable``'s counts
REASONS = {"work-group": ("the device runs at most", "a work-group of more than"),
           "warp": ("not a multiple of the warp",),
           "axes": ("local axes (split", "more than 3 local axes"),
           "conflict": ("both tiled", "does not divide", "nothing to pad", "a tile spans axes",
                        "a loop both tiled", "an unrolling that", "a padding without",
                        "a prefetch over a split"),
           "loopy": ("reductions across work-items", "leave work-items out",
                     "more than one reduction split", "a prefetched tile spanning"),
           "local": ("bytes of local memory",)}


def _kind(reason: str) -> str:
    """The kind of a reason, by its words (independently of space.py)."""
    kinds = [k for k, words in REASONS.items() if any(w in reason for w in words)]
    assert len(kinds) == 1, reason
    return kinds[0]


def _brute(space, max_group_size, local, warp):
    """(kept, counts by kind): every variant of *space* judged one by one."""
    kept, counts = [], {}
    for v in space.variants():
        why = invalid(v, space, max_group_size=max_group_size, local_mem_bytes=local)
        items = _items(v, space)
        if warp and items <= max_group_size and items % warp:  # checked second
            why = "not a multiple of the warp"
        if why is None:
            kept.append(v)
        else:
            counts[_kind(why)] = counts.get(_kind(why), 0) + 1
    return kept, counts


@pytest.mark.parametrize("space, limit, local, warp", [
    (MIXED, 1024, 2048, None), (MIXED, 256, None, 32), (MIXED, 1 << 20, 100, 8),
    (SPLIT, 1024, 1024, None), (SPLIT, 4096, None, 64),
    (FAMILIES["matmul"].space, 1024, LOCAL, None), (FAMILIES["matvec"].space, 256, None, 64),
    (FAMILIES["transpose"].space, 512, 4096, 32)])
def test_launchable_agrees_with_judging_every_variant(space, limit, local, warp):
    kept, dropped = launchable(space, max_group_size=limit, local_mem_bytes=local,
                               warp_size=warp)
    brute, counts = _brute(space, limit, local, warp)
    assert kept == brute
    assert count_launchable(space, max_group_size=limit, local_mem_bytes=local,
                            warp_size=warp) == len(brute)
    assert len(space) == sum(1 for _ in space.variants()) == len(kept) + sum(
        dropped.values())
    by_kind = {}
    for text, count in dropped.items():
        by_kind[_kind(text)] = by_kind.get(_kind(text), 0) + count
    assert by_kind == counts
    assert len(dropped) <= 10  # few distinct texts


#: spaces whose count multiplies parameters no check reads: items per work-item and the
#: unrolling of a loop not tiled, named by a restriction or not
UNREAD = [
    Space((Axis("j", (16, 64, 256, 1024), (1, 2, 4)), Axis("i", (1, 4, 16), (1, 3))),
          (("r", (1, 2, 4)), ("s", (1, 8))), split=(("r", (1, 4)),)),
    Space((Axis("j", (16, 64, 256, 1024), (1, 2, 4)), Axis("i", (1, 4, 16), (1, 3))),
          (("r", (1, 2, 4)), ("s", (1, 8))), split=(("r", (1, 4)),),
          restrict=("j.per_item * unroll.s <= 8", "i.group * j.group >= 64")),
    Space((Axis("j", (32, 64), (1, 2, 4)),), (("r", (1, 2, 4)),), tile=(("r", (1, 4)),),
          prefetch=(Prefetch("a", ("j", "r"), pad=(0, 1)),),
          restrict=("unroll.r != 2 or j.per_item == 1",)),
    Space((Axis("j", (32, 64), (1, 2, 4)),), (("r", (1, 2, 4)),), tile=(("r", (1, 4)),),
          prefetch=(Prefetch("a", ("j", "r"), pad=(0, 1)),)),
]


@pytest.mark.parametrize("space", UNREAD)
@pytest.mark.parametrize("limit, local, warp", [(1024, None, None), (256, 600, 32)])
def test_count_launchable_is_the_brute_force_count(space, limit, local, warp):
    assert count_launchable(space, max_group_size=limit, local_mem_bytes=local,
                            warp_size=warp) == len(_brute(space, limit, local, warp)[0])


def test_launchable_counts_the_work_groups_it_leaves_out_by_shape():
    powers = tuple(1 << e for e in range(11))
    space = Space(tuple(Axis(n, powers, (1, 2, 4, 8)) for n in "kji"), (("r", (1, 2, 4)),))
    kept, dropped = launchable(space, max_group_size=1024, warp_size=32)
    shapes = [math.prod(s) for s in itertools.product(powers, repeat=3)]
    rest = 4 ** 3 * 3  # tasks per work-item and unrolling, for each shape
    assert dropped == {
        "a work-group of more than 1024 work-items": sum(s > 1024 for s in shapes) * rest,
        "a work-group not a multiple of the warp (32 work-items)":
            sum(s < 32 for s in shapes) * rest}
    assert len(kept) == sum(32 <= s <= 1024 for s in shapes) * rest
    assert all(32 <= _items(v, space) <= 1024 for v in kept[::97])


@pytest.mark.parametrize("name", sorted(SIZES))
def test_the_default_space_of_an_example_fits_the_device(name):
    knl = getattr(TUNABLE, name)()
    for limit, warp in ((1024, 32), (4096, 1), (256, 64)):
        space = default_space(knl, SIZES[name], max_group_size=limit, warp_size=warp)
        assert 0 < len(space) <= 300, (name, limit, len(space))
        kept, dropped = launchable(space, max_group_size=limit, warp_size=warp)
        assert len(kept) == len(space) and not dropped
        full = default_space(knl, SIZES[name], max_group_size=limit, warp_size=warp,
                             max_variants=None)
        assert not full.dropped
        # thinned only where the full default space is larger, and never silently
        assert bool(space.dropped) == (len(full) > 300)
        for parameter, values in space.dropped:
            kept_values = space.parameters()[parameter]
            assert sorted(values + kept_values) == sorted(full.parameters()[parameter])
    assert len(default_space(knl, SIZES[name], max_variants=40)) <= 40


def test_the_default_space_splits_only_a_lone_reduction():
    # matvec: one instruction, one reduction: split by 1 or 32
    matvec = default_space(TUNABLE.matvec(), SIZES["matvec"])
    assert matvec.split == (("j", (1, 32)),)
    assert "i.group * split.j <= 1024" in matvec.restrict
    # softmax: three instructions, so no split (the others would not run across it)
    softmax = default_space(TUNABLE.softmax(), SIZES["softmax"])
    assert not softmax.split and softmax.axes[0].group == (32, 64, 128, 256, 512, 1024)
    # the stencil's tile of u spans both axes, read with its halo
    stencil = default_space(TUNABLE.stencil2d(), SIZES["stencil2d"])
    assert [p.array for p in stencil.prefetch] == ["u"]
    # a tile spanning fewer loops than the axes is not offered
    assert not default_space(_row_scale(), {"n": 256}).prefetch


def test_what_loopy_refuses_whatever_the_kernel_is_predicted():
    """Both predicted refusals are Loopy's: it refuses the variants when asked."""
    space = Space((Axis("i", (4,)),), split=(("j", (1, 4)), ("k", (1, 4))))
    both = {"i.group": 4, "i.per_item": 1, "split.j": 4, "split.k": 4}
    assert invalid(both, space, max_group_size=1024) == (
        "split.j=4 and split.k=4 split 2 reductions across work-items; Loopy splits one "
        "at most, as each one's first step runs outside the other's work-items")
    made = apply(_two_sums(), both, space)
    with pytest.raises(lp.LoopyError, match="does not use all local hw axes"):
        _codegen(made)
    for one in ({**both, "split.k": 1}, {**both, "split.j": 1}):
        assert invalid(one, space, max_group_size=1024, knl=apply(_two_sums(), one,
                                                                     space)) is None
    space = Space((Axis("j", (32,)), Axis("i", (2,))), prefetch=(Prefetch("a", ("i",)),))
    fetched = {"j.group": 32, "j.per_item": 1, "i.group": 2, "i.per_item": 1,
               "prefetch.a": True}
    assert invalid(fetched, space, max_group_size=1024) == (
        "prefetch.a spans 1 loop (i), fewer than the work-group's 2 local axes: Loopy "
        "would leave work-items out of its fetch")
    with pytest.raises(lp.LoopyError, match="does not use all local hw axes"):
        _codegen(apply(_row_scale(), fetched, space))


def _codegen(knl):
    import contextlib
    import io

    from loopy.check import pre_codegen_checks

    with contextlib.redirect_stdout(io.StringIO()):
        pre_codegen_checks(lp.linearize(lp.preprocess_program(knl)))


def test_loopys_refusals_are_said_in_kernelcast_words():
    # a split reduction in a kernel of three instructions
    softmax = TUNABLE.softmax()
    space = Space((Axis("i", (8,)),), split=(("j", (1, 32)),))
    split = {"i.group": 8, "i.per_item": 1, "split.j": 32}
    why = invalid(split, space, max_group_size=1024, knl=apply(softmax, split, space))
    assert why == ("split.j=32: the kernel's other instructions do not run across the "
                   "work-items that share the reduction over j; Loopy splits a reduction "
                   "only where every instruction holds it")
    # a tile one element wide along i
    transpose = TUNABLE.transpose()
    space = Space((Axis("j", (32,)), Axis("i", (1, 4))),
                  prefetch=(Prefetch("a", ("j", "i"), fetch=(True,)),))
    flat = {"j.group": 32, "j.per_item": 1, "i.group": 1, "i.per_item": 1,
            "prefetch.a": True}
    why = invalid(flat, space, max_group_size=1024, knl=apply(transpose, flat, space))
    assert why.startswith("prefetch.a with i.group=1, i.per_item=1: the tile is one "
                          "element along i")
    # a tile of one element
    space = Space((Axis("j", (1,)), Axis("i", (1,))),
                  prefetch=(Prefetch("a", ("j", "i"), fetch=(True,)),))
    single = {"j.group": 1, "j.per_item": 1, "i.group": 1, "i.per_item": 1,
              "prefetch.a": True}
    with pytest.raises(InvalidVariant, match="prefetch.a: its tile is a single element"):
        apply(transpose, single, space)
    for text in (why, invalid(split, Space((Axis("i", (8,)),), split=(("j", (1, 32)),)),
                              max_group_size=1024, knl=apply(softmax, split, Space(
                                  (Axis("i", (8,)),), split=(("j", (1, 32)),))))):
        assert not any(word in text for word in LOOPY_WORDS), text


def test_a_launch_the_hong_kim_model_cannot_estimate_is_named_by_its_counts():
    with pytest.raises(KernelcastError) as err:
        Workload(threads_per_block=32, blocks=1, comp_insts=float("nan"), coal_mem_insts=0,
                 uncoal_mem_insts=-2)
    text = str(err.value)
    assert "comp_insts=nan, uncoal_mem_insts=-2" in text and "Workload(" not in text
    assert "\n" not in text


@pytest.fixture(scope="module")
def model():
    return get_model("hong-kim", hardware="h100").fit()


@pytest.mark.parametrize("name", sorted(SIZES))
def test_an_examples_default_space_ranks_with_few_skips_in_kernelcast_words(name, model):
    knl = getattr(TUNABLE, name)()
    small = {k: min(v, 512) for k, v in SIZES[name].items()}
    space = default_space(knl, small, max_group_size=1024, max_variants=60)
    ranked, skipped = rank(knl, small, space, model, max_group_size=1024,
                           local_mem_bytes=LOCAL)
    assert len(ranked) + len(skipped) == len(space) and len(skipped) <= len(space) // 20
    for r in skipped:
        assert not any(word in r.reason for word in LOOPY_WORDS), r.reason


def test_an_example_tunes_on_pocl_through_the_cli(pocl_device, tmp_path, capsys):
    space = tmp_path / "space.toml"
    space.write_text("[axes.j]\ngroup = [32, 64]\nper_item = [1, 2]\n"
                     "[axes.i]\ngroup = [1, 2]\n")
    status = main(["tune", f"{EXAMPLES}:transpose", "--param", "n=64", "--space", str(space),
                   "--model", "hong-kim", "--hardware", "h100", "--device", "portable",
                   "--measure-top", "1", "--db", str(tmp_path / "tune.sqlite")])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert "winner: rank 1" in captured.out
