"""GROPHECY layouts realized as Loopy kernels (kernelcast.models.grophecy.realize), run
for real on PoCL with their outputs poisoned with NaN and compared with the NumPy
reference of the computation a skeleton stands for."""

import math
from pathlib import Path

import loopy as lp
import numpy as np
import pytest
from pymbolic import evaluate

from kernelcast.errors import KernelcastError, UsageError
from kernelcast.frontends.skeleton import load_skeleton, parse_skeleton
from kernelcast.measure.arrays import array_specs, scalar_arguments, typed_kernel
from kernelcast.measure.codegen import generate, generate_case
from kernelcast.measure.verify import TOLERANCE, check_case, relative_error
from kernelcast.models.grophecy.layouts import Layout
from kernelcast.models.grophecy.realize import UnrealizableLayout, realizable, realize
from kernelcast.models.grophecy.search import search
from kernelcast.models.hong_kim import load_hardware

SKELETONS = Path(__file__).resolve().parent.parent / "examples" / "skeletons"
# small sizes that divide no power-of-two block (40 = 8 * 5, 24 = 8 * 3, 37 is prime)
SMALL = {"matmul": {"N": 40, "M": 24, "K": 20}, "hotspot": {"ROWS": 24, "COLS": 40},
         "rowsum": {"N": 100, "K": 37}, "transpose": {"N": 40}}


def small(name):
    return load_skeleton(SKELETONS / f"{name}.sk", defines=SMALL.get(name))


def assert_correct(case, pocl):
    errors = check_case(case, pocl, seed=3)
    assert errors and all(e < TOLERANCE["float32"] for e in errors.values()), \
        (case.name, errors)


LAYOUTS = [
    # plain: one task per thread, no unrolling
    ("matmul", Layout((8, 8), (1, 1), unroll=False)),
    # folded along i: two tasks per thread, 8 apart
    ("matmul", Layout((4, 8), (2, 1))),
    # Listing 3's Stage+LoopUnroll: A and B tiles in local memory, k in stages of 8
    # (8 does not divide K = 20)
    ("matmul", Layout((8, 8), (1, 1), (("k", 8),), ("A", "B"))),
    # a register tile: 2 x 2 tasks per thread, kept in "ilp" accumulators over stages of k
    ("matmul", Layout((4, 8), (2, 2), (("k", 5),), ("A", "B"))),
    # the fold loop along i staged one iteration at a time, and k in stages of 8
    ("matmul", Layout((4, 4), (2, 2), (("i", 1), ("k", 8)), ("A", "B"), unroll=False)),
    # a block that divides neither loop (40 = 13 * 3 + 1, 24 = 4 * 5 + 4), A cached
    ("matmul", Layout((3, 5), (1, 1), (), ("A",))),
    ("hotspot", Layout((8, 8), (1, 1))),
    ("hotspot", Layout((4, 8), (2, 2), (), ("TIN",), unroll=False)),
    ("hotspot", Layout((4, 4), (2, 4), (("i", 1), ("j", 2)), ("TIN", "POWER"))),
    ("hotspot", Layout((3, 5), (1, 1), (), ("TIN",))),
    ("rowsum", Layout((32,), (1,))),
    ("rowsum", Layout((16,), (4,), (), (), unroll=False)),
    ("rowsum", Layout((32,), (1,), (("k", 8),), ("A",))),
    ("rowsum", Layout((16,), (2,), (("k", 16),), ("A",))),
    ("rowsum", Layout((16,), (4,), (("i", 2),), ("A",))),
    ("transpose", Layout((8, 8), (1, 1), unroll=False)),
    ("transpose", Layout((8, 8), (1, 1), (), ("IN",))),
    ("transpose", Layout((4, 8), (2, 2), (("i", 1), ("j", 1)), ("IN",))),
    ("transpose", Layout((3, 16), (1, 1), (), ("IN",))),
]


@pytest.mark.parametrize("name, layout", LAYOUTS,
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(LAYOUTS)])
def test_a_realized_layout_computes_its_reference(name, layout, pocl):
    case = realize(small(name), layout)
    assert case.layout == layout and case.name.startswith(name + "/block=")
    assert case.kernel().default_entrypoint.name == name
    assert_correct(case, pocl)


def test_a_fetch_with_thread_dependent_bounds_on_pocl(pocl):
    """A fetch loop whose trip count depends on get_local_id and that holds another loop,
    ahead of a barrier: PoCL 3.1 (LLVM 15) runs it with one trip count for the whole
    work-group, so the last group's fetch of A (rows 36-39 of 40; block 3 x 5, fold 2 x 1)
    misses row 39 (Loopy's OpenCL is correct: with the two fetch loops swapped PoCL runs
    it right; docs/grophecy-realize.md). Every other row of C matches the reference; row
    39 does not, until a PoCL that compiles the loop right, when this test fails and the
    layout joins LAYOUTS."""
    case = realize(small("matmul"), Layout((3, 5), (2, 1), (), ("A",), False))
    knl = case.kernel()
    generated = generate_case(knl, pocl.name, case)
    compiled = pocl.compile(generated)
    specs, scalars = array_specs(typed_kernel(knl), case.params)
    values = scalar_arguments(scalars, case.params, np.random.default_rng(3))
    host = pocl.run_once(compiled, generated, specs, values, case.params, 3)
    host.update(values)
    # C = A B, from the inputs the kernel was given, not from the case's own reference
    expected = (host["A"].astype(np.float64) @ host["B"].astype(np.float64))
    out = host["C"]
    assert out.shape == expected.shape == (40, 24)
    assert relative_error(out[:39], expected[:39]) < TOLERANCE["float32"]
    assert relative_error(out[39], expected[39]) > TOLERANCE["float32"]


def test_matmul_computes_a_real_matrix_product():
    # the reference is the computation the docs define: C = A B (comp is exact)
    case = realize(small("matmul"), Layout((8, 8), (1, 1)))
    rng = np.random.default_rng(0)
    a, b = rng.random((40, 20)), rng.random((20, 24))
    out = case.reference({"A": a, "B": b, "one": 1, "zero": 0})["C"]
    assert np.allclose(out, (a @ b).astype(np.float32), rtol=1e-6)


def test_hotspot_is_a_box_sum_plus_the_power():
    case = realize(small("hotspot"), Layout((8, 8), (1, 1)))
    rng = np.random.default_rng(0)
    tin, power = rng.random((26, 42)), rng.random((24, 40))
    box = sum(tin[di:di + 24, dj:dj + 40] for di in range(3) for dj in range(3))
    out = case.reference({"TIN": tin, "POWER": power, "one": 1, "zero": 0})["TOUT"]
    assert np.allclose(out, power + box, rtol=1e-6)


def test_tasks_are_dealt_cyclically_and_blocks_are_the_launch_geometry():
    case = realize(small("rowsum"), Layout((16,), (4,), (("i", 2),), ("A",)))
    knl = case.kernel()
    entry = knl.default_entrypoint
    store = next(i for i in entry.instructions if i.assignee_var_names() == ("S",))
    index = store.assignee.index_tuple[0]
    # task = group * b * f + m * b + t, with m = fold_stage * 2 + fold_in
    names = {v: 0 for v in entry.all_inames()}
    assert evaluate(index, {**names, "i_t": 1}) == 1
    assert evaluate(index, {**names, "i_fi": 1}) == 16
    assert evaluate(index, {**names, "i_fs": 1}) == 32
    assert evaluate(index, {**names, "i_g": 1}) == 64
    code = generate(knl)
    assert code.block == (16,) and code.grid == (math.ceil(100 / 64),)
    local = [t for t in entry.temporary_variables.values()
             if t.address_space == lp.AddressSpace.LOCAL]
    assert [t.name for t in local] == ["cached_A"]
    assert "barrier(CLK_LOCAL_MEM_FENCE)" in code.code


def test_unrolling_tags_loops_with_a_static_trip_count():
    def unrolled(layout):
        entry = realize(small("matmul"), layout).kernel().default_entrypoint
        return {i for i in entry.all_inames()
                if entry.iname_tags_of_type(i, lp.kernel.data.UnrollTag)}

    # K = 20 > 16: k is split by 16 and its inner part unrolled
    assert unrolled(Layout((8, 8), (1, 1))) == {"k_u"}
    assert unrolled(Layout((8, 8), (1, 1), unroll=False)) == set()
    # a fold of 2 is unrolled as well
    assert unrolled(Layout((4, 8), (2, 1))) == {"i_f", "k_u"}
    # a stage of 8 (k_i) too, not its stage loop (it holds the barriers); the fold then
    # runs inside the stage loop as an "ilp.unr" loop
    assert unrolled(Layout((4, 8), (2, 1), (("k", 8),), ("B",))) == {"k_i"}


def test_a_staged_and_cached_fold_runs_its_tasks_as_ilp():
    entry = realize(small("matmul"), Layout((4, 8), (2, 2), (("k", 5),), ("A", "B"))
                    ).kernel().default_entrypoint
    tags = {i: str(t) for i in entry.all_inames() for t in entry.iname_tags(i)}
    # the two fold loops joined into one ilp loop of 2 x 2 tasks
    assert tags["fold"] == "ilp.unr" and "i_f" not in tags and "j_f" not in tags
    assert tags["i_t"] == "l.1" and tags["j_t"] == "l.0"


def test_realized_code_does_not_depend_on_the_hash_seed(tmp_path):
    # Loopy orders the private axes of several ilp loops by iterating a set of names:
    # the code (and a store's keys) would change from one process to the next
    import os
    import subprocess
    import sys

    script = (
        "import warnings; warnings.simplefilter('ignore')\n"
        "from kernelcast.frontends.skeleton import load_skeleton\n"
        "from kernelcast.measure.codegen import generate\n"
        "from kernelcast.models.grophecy.layouts import Layout\n"
        "from kernelcast.models.grophecy.realize import realize\n"
        f"s = load_skeleton({str(SKELETONS / 'matmul.sk')!r}, "
        "defines={'N': 64, 'M': 32, 'K': 48})\n"
        "c = realize(s, Layout((4, 8), (2, 2), (('k', 8),), ('B',)))\n"
        "print(generate(c.kernel(), 'cuda').code_sha256)\n")
    codes = set()
    for seed in range(4):
        env = {**os.environ, "PYTHONHASHSEED": str(seed), "LOOPY_NO_CACHE": "1"}
        run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                             text=True, check=True)
        codes.add(run.stdout.strip())
    assert len(codes) == 1


def _spread(projections, count):
    return [projections[round(i * (len(projections) - 1) / (count - 1))]
            for i in range(count)]


@pytest.mark.parametrize("name, defines", [
    ("matmul", {"N": 64, "M": 32, "K": 48}), ("hotspot", {"ROWS": 32, "COLS": 64}),
    ("rowsum", {"N": 256, "K": 64}), ("transpose", {"N": 64})])
def test_layouts_of_the_search_realize_and_compute_their_reference(name, defines, pocl):
    skeleton = load_skeleton(SKELETONS / f"{name}.sk", defines=defines)
    projections = search(skeleton, load_hardware("h100")).projections
    realized = 0
    for projection in _spread(projections, 6):  # from the fastest to the slowest
        try:
            case = realize(skeleton, projection.layout)
        except UnrealizableLayout as exc:
            assert str(exc) and "\n" not in str(exc)
            continue
        assert_correct(case, pocl)
        realized += 1
    assert realized == 6  # every sampled layout of these four is realized


def test_spinflap_is_realized_with_its_sample_baked_in(pocl):
    skeleton = load_skeleton(SKELETONS / "spinflap.sk")
    assert realizable(skeleton) is None
    for layout in (Layout((4, 32), (1, 1)), Layout((4, 32), (2, 2), (), (), False),
                   Layout((4, 32), (2, 1), (("j", 1),), ("M",))):
        case = realize(skeleton, layout)
        entry = case.kernel().default_entrypoint
        assert "M" not in entry.arg_dict and entry.temporary_variables["M"].read_only
        assert_correct(case, pocl)
    with pytest.raises(UnrealizableLayout, match="A is read through an index array"):
        realize(skeleton, Layout((4, 32), (1, 1), (), ("A",)))


def test_indirect_stores_need_a_sample_without_repeats(tmp_path):
    text = (SKELETONS / "spinflap.sk").read_text()
    without = parse_skeleton(text.replace(' : hints<sample="spinflap_sample.txt">', ""),
                             path=str(tmp_path / "spinflap.sk"))
    assert realizable(without) == ("tasks may store to the same element of C: no sample "
                                   "of M to check its index against")
    (tmp_path / "repeats.txt").write_text("0 1 2 3\n" * 512)
    repeats = parse_skeleton(text.replace("spinflap_sample.txt", "repeats.txt"),
                             path=str(tmp_path / "spinflap.sk"))
    assert realizable(repeats) == "two tasks store to the same element C[0][0][0]"
    with pytest.raises(UnrealizableLayout, match="same element"):
        realize(repeats, Layout((4, 32), (1, 1)))


def _csr_ispinex(tmp_path):
    """IspinEx (Listing 5) at 12 x 64 with samples for its CSR arrays J and I."""
    rng = np.random.default_rng(5)
    lengths = rng.integers(0, 7, 12)
    j = np.concatenate([[0], np.cumsum(lengths)])
    i = rng.integers(0, 12, j[-1])
    (tmp_path / "J.txt").write_text(" ".join(map(str, j)))
    (tmp_path / "I.txt").write_text(" ".join(map(str, i)))
    text = (SKELETONS / "ispinex_real.sk").read_text()
    text = text.replace("int J[ROWS+1]", 'int J[ROWS+1] : hints<sample="J.txt">')
    text = text.replace("int I[ELEMS]", 'int I[ELEMS] : hints<sample="I.txt">')
    return parse_skeleton(text, path=str(tmp_path / "ispinex.sk"),
                          defines={"ROWS": 12, "COLS": 64, "ELEMS": int(j[-1])})


def test_ispinex_data_dependent_bounds_are_realized(tmp_path, pocl):
    skeleton = _csr_ispinex(tmp_path)
    for layout in (Layout((4, 32), (1, 1)), Layout((2, 16), (2, 2), (), (), False),
                   Layout((4, 32), (1, 1), (("n", 4),)), Layout((4, 16), (1, 2), (), ("J",))):
        assert_correct(realize(skeleton, layout), pocl)
    # the rows are not empty: the reference is not all zeros
    case = realize(skeleton, Layout((4, 32), (1, 1)))
    out = case.reference({"T": np.ones(skeleton.macro("ELEMS")), "B": np.ones((12, 64)),
                          "one": 1, "zero": 0})["C"]
    assert out[:, 0].tolist() == np.diff([int(v) for v in
                                          (tmp_path / "J.txt").read_text().split()]).tolist()


def test_ispinex_refuses_caches_whose_footprint_is_data(pocl):
    skeleton = load_skeleton(SKELETONS / "ispinex_complex.sk")
    assert realizable(skeleton) is None
    # without samples J and I are kernel arguments (verify fills them with 0s and 1s)
    case = realize(skeleton, Layout((4, 32), (1, 1)))
    assert {"J", "I"} <= set(case.kernel().default_entrypoint.arg_dict)
    assert_correct(case, pocl)
    with pytest.raises(UnrealizableLayout, match="T is read inside loop n, whose bounds"):
        realize(skeleton, Layout((4, 32), (1, 1), (("n", 4),), ("T",)))
    with pytest.raises(UnrealizableLayout, match="B is read through an index array"):
        realize(skeleton, Layout((4, 32), (1, 1), (), ("B",)))


def test_affine_bounds_and_loops_empty_for_some_tasks(pocl):
    skeleton = parse_skeleton("""
        #define N 50
        #define K 60
        float A[N][K]
        float S[N]
        parallel_for(N) : i {
          comp 2
          for k = 0:i { ld A[i][k] }
          stream k = i:K { ld A[i][k] ld A[i][k] comp 3 }
          st S[i]
        }""", path="triangle.sk")
    for layout in (Layout((16,), (1,)), Layout((8,), (2,), (), (), False)):
        assert_correct(realize(skeleton, layout), pocl)


def test_a_loop_with_bounds_in_the_index_of_a_data_dependent_loop(tmp_path, pocl):
    (tmp_path / "J.txt").write_text("0 1 1 3 5 5 5 6 7 7 8 9 9 9 10 11 12 12 13 14 15")
    skeleton = parse_skeleton("""
        #define N 20
        int J[N+1] : hints<sample="J.txt">
        float A[N][20]
        float S[N]
        parallel_for(N) : i {
          b = J[i]
          e = J[i+1]
          stream n = b:e (hint:2) { for m = n:n+3 { ld A[i][m] } }
          st S[i]
        }""", path=str(tmp_path / "nested.sk"))
    for layout in (Layout((8,), (1,)), Layout((4,), (2,), (("i", 1),), ("J",))):
        assert_correct(realize(skeleton, layout), pocl)


@pytest.mark.parametrize("text, reason", [
    ("float A[4] parallel_for(4) : i { ld A[i] }", "stores nothing"),
    ("float A[4] parallel_for(4) : i { ld A[i] comp 1 st A[i] }", "both read and stored"),
    ("float A[4] float S[1] parallel_for(4) : i { ld A[i] st S[0] }",
     "two tasks store to the same element S[0]"),
    ("float M_X[4] float S[4] parallel_for(4) : i { ld M_X[i] st S[i] }",
     "reads as a built-in constant"),
])
def test_skeletons_that_cannot_be_realized_say_why(text, reason):
    skeleton = parse_skeleton(text)
    assert reason in realizable(skeleton)
    with pytest.raises(UnrealizableLayout, match=reason.split()[0]):
        realize(skeleton, Layout((4,), (1,)))
    assert issubclass(UnrealizableLayout, KernelcastError)


@pytest.mark.parametrize("layout, message", [
    (Layout((8,), (1,)), "do not fit the 2-D loop space"),
    (Layout((8, 8), (1, 1), (("i", 2),)), "streaming loops are k"),
    (Layout((8, 8), (1, 1), (), ("C",)), "never reads"),
])
def test_layouts_that_do_not_fit_the_skeleton(layout, message):
    with pytest.raises(UsageError, match=message):
        realize(small("matmul"), layout)


@pytest.mark.parametrize("name, flops", [("rowsum", 16384 * 4096), ("transpose", 0)])
def test_the_new_skeletons_at_full_size(name, flops):
    skeleton = load_skeleton(SKELETONS / f"{name}.sk")
    assert skeleton.macro("FLOPS") == flops and realizable(skeleton) is None
    best = search(skeleton, load_hardware("h100")).best.layout
    case = realize(skeleton, best)
    assert case.params["FLOPS"] == flops
    assert generate(case.kernel()).name == name
