"""GROPHECY's characterization of code layouts (§7) on the paper's skeletons, every value
worked by hand beside it, and the search of §6.2 on them."""

from pathlib import Path

import pytest

from kernelcast.errors import UsageError
from kernelcast.frontends.skeleton import load_skeleton
from kernelcast.models import get_model, model_names
from kernelcast.models.grophecy.characterize import Characterizer
from kernelcast.models.grophecy.layouts import Layout
from kernelcast.models.grophecy.search import Hints, load_hints, search
from kernelcast.models.hong_kim import load_hardware
from kernelcast.models.hong_kim.equations import estimate

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "skeletons"


def _characterize(name, gpu, layout):
    skeleton = load_skeleton(EXAMPLES / f"{name}.sk")
    return Characterizer(skeleton, skeleton.kernels[0], load_hardware(gpu)).characterize(layout)


def _memory(ch):
    return {(m.array, m.kind): (m.count, m.coalesced, m.transactions) for m in ch.memory}


def test_matmul_stage_and_loop_unroll_on_the_c1060():
    # §9.1's Stage+LoopUnroll: 16 x 16 threads, stage 16, A and B in shared memory
    ch = _characterize("matmul", "c1060", Layout((16, 16), (1, 1), (("k", 16),), ("A", "B")))
    w = ch.workload
    assert (w.threads_per_block, w.blocks) == (256, 50 * 50)  # 800 / 16 a side
    # (5)-(7): a 16 x 16 tile of A and of B per stage, 4 bytes each: 2 x 256 x 4
    assert ch.shared_mem_per_block == w.shared_mem_per_block == 2048
    assert ch.num_stages == {"k": 25}  # (4) 400 / 16
    # (12) ⌈256 / 256⌉ x 25 stages each; a half-warp loads 16 adjacent floats of one row,
    # 64 aligned bytes in one 128-byte segment: coalesced. (13) C: one element per thread
    assert _memory(ch) == {("A", "caching"): (25, True, 2), ("B", "caching"): (25, True, 2),
                           ("C", "direct store"): (1, True, 2)}
    assert (w.coal_mem_insts, w.uncoal_mem_insts, w.uncoal_per_mw) == (51, 0, 1.0)  # (14)-(16)
    assert w.load_bytes_per_warp == 128  # (11) 4 bytes x 32
    # (17) 1 + 3 x 400 + 5 = 1206 functional instructions
    assert ch.func_insts == 1206
    # the stage loop runs 25 times: unrolled by 16, 2 groups x 5; the 16 iterations of a
    # stage are one group: none. Data preparation 2 x 50 loads; 2 shared reads x 400
    assert ch.peripheral == {"loop management": 10, "data preparation": 100,
                             "index calculation": 0, "bounds checks": 0,
                             "shared-memory reads": 800}
    assert w.comp_insts == 1206 + 10 + 100 + 800
    assert w.synch_insts == 50  # two per stage


def test_without_unrolling_matmul_runs_about_twice_the_instructions():
    # §9.1: "without loop unrolling, the number of computation instructions doubles"
    unrolled = _characterize("matmul", "c1060",
                             Layout((16, 16), (1, 1), (("k", 16),), ("A", "B"), True))
    rolled = _characterize("matmul", "c1060",
                           Layout((16, 16), (1, 1), (("k", 16),), ("A", "B"), False))
    # 5 per iteration: 25 stage iterations + 25 x 16 inner ones = 2125
    assert rolled.peripheral["loop management"] == 5 * 25 + 5 * 400
    assert rolled.workload.comp_insts == 2116 - 10 + 2125
    assert 1.9 < rolled.workload.comp_insts / unrolled.workload.comp_insts < 2.1


def test_naive_matmul_on_the_fx5600_pays_for_uncoalesced_rows():
    ch = _characterize("matmul", "fx5600", Layout((16, 16), (1, 1)))
    # a warp's threads differ in j: A[i][k] is one address for all (compute capability
    # 1.0: not adjacent, a transaction per thread), B[k][j] adjacent and aligned
    assert _memory(ch) == {("A", "direct load"): (400, False, 32),
                           ("B", "direct load"): (400, True, 2),
                           ("C", "direct store"): (1, True, 2)}
    w = ch.workload
    assert (w.coal_mem_insts, w.uncoal_mem_insts, w.uncoal_per_mw) == (401, 400, 32)
    # 1206 + loop 5 x ⌈400 / 16⌉ + index calculation 4 x 400
    assert w.comp_insts == 1206 + 125 + 1600
    assert (w.synch_insts, w.shared_mem_per_block) == (0, 0)


def test_hotspot_shared_memory_and_folding_2x4():
    # §9.2's ShM+Fold 2 x 4 on a 16 x 16 block: the block covers 32 x 64 elements
    ch = _characterize("hotspot", "c1060", Layout((16, 16), (2, 4), (), ("TIN",)))
    # ShMem(TIN, 0): the 3 x 3 neighborhoods of 32 x 64 elements, (32+2) x (64+2)
    assert ch.shmem == {"TIN": 34 * 66} and ch.shared_mem_per_block == 34 * 66 * 4
    # (12) ⌈2244 / 256⌉ = 9 loads, once; (13) POWER and TOUT: 2 x 4 per thread
    assert _memory(ch) == {("TIN", "caching"): (9, True, 2),
                           ("POWER", "direct load"): (8, True, 2),
                           ("TOUT", "direct store"): (8, True, 2)}
    # (17) 8 tasks x (6 + 9 x 2 + 12); every loop fits one group of 16: no loop cost;
    # data preparation 2 x 9; 9 shared reads per task
    assert ch.func_insts == 8 * 36
    assert ch.workload.comp_insts == 288 + 18 + 72
    assert ch.workload.synch_insts == 2
    assert ch.workload.blocks == (512 // 32) * (512 // 64)


def test_hotspot_folding_reuses_the_neighborhood_in_registers():
    # §6.4: a thread keeps what it reads again in registers; TIN is read in a for loop
    # (not a streaming one), so 2 x 4 tasks read (2+2) x (4+2) elements, not 8 x 9
    ch = _characterize("hotspot", "c1060", Layout((16, 16), (2, 4)))
    assert _memory(ch)[("TIN", "direct load")][0] == 4 * 6


def test_ispinex_uncoalesced_instructions_vanish_from_listing_4_to_5():
    # §9.3: the complex B (Listing 4) is read with a stride of 2 floats; the real B of
    # Listing 5 adjacently. Fold j 132 (the paper's hint), 64 threads along i, T, I, J in
    # shared memory, staged along the folded rows
    layout = Layout((1, 64), (132, 1), (("j", 4),), ("I", "J", "T"))
    complex_ = _characterize("ispinex_complex", "fx5600", layout)
    real = _characterize("ispinex_real", "fx5600", layout)
    # per thread 132 rows x 14 nonzeros (the hint) x 2 loads of B, and 132 x 2 stores of
    # C, all uncoalesced on compute capability 1.0
    assert complex_.workload.uncoal_mem_insts == 132 * 14 * 2 + 132 * 2
    assert real.workload.uncoal_mem_insts == 0


def test_spinflap_indirect_accesses_on_the_fx5600():
    # §9.4, 1 x 256 threads along i, nothing cached: per thread 4 iterations of n each
    # load M[i][n], the two parts of A[j][M[i][n]] and of B, and store the two parts of
    # C: 7 statements x 4 = 28 direct instructions; an indirect pattern covers the whole
    # dimension, so (13) is capped at the 4 executions
    ch = _characterize("spinflap", "fx5600", Layout((1, 256), (1, 1)))
    assert [(m.array, m.kind, m.count) for m in ch.memory] == [
        ("M", "direct load", 4), ("A", "direct load", 4), ("A", "direct load", 4),
        ("B", "direct load", 4), ("B", "direct load", 4),
        ("C", "direct store", 4), ("C", "direct store", 4)]
    assert {m.transactions for m in ch.memory} == {32}
    # compute capability 1.0: M[i][0] is 4 ints apart from one thread to the next and the
    # sampled columns are scattered: no access is adjacent, every thread is a transaction
    # (the paper's Uncoal_per_mw for SpinFlap on the FX5600 is 32 as well)
    assert (ch.workload.coal_mem_insts, ch.workload.uncoal_mem_insts) == (0, 28)
    assert ch.workload.uncoal_per_mw == 32

def test_the_search_space_follows_the_dependency_order_and_hints():
    skeleton = load_skeleton(EXAMPLES / "matmul.sk")
    hw = load_hardware("c1060")
    hinted = search(skeleton, hw, hints=Hints(block=((16, 16),), fold=((1, 1),)))
    # B and F fixed; S: k unstaged or Eq. (3)'s 16; caching: {}, {A}, {B}, {A, B};
    # staging with nothing cached in k is the unstaged layout: 4 + 3 = 7
    assert hinted.searched == 7
    assert hinted.best.layout == Layout((16, 16), (1, 1), (("k", 16),), ("A", "B"))
    assert [p.seconds for p in hinted.projections] == sorted(
        p.seconds for p in hinted.projections)


def test_hints_files_are_read_and_checked(tmp_path):
    good = tmp_path / "good.toml"
    good.write_text('block = [[16, 16]]\nstage = { k = [16, 400] }\ncache = [["B", "A"]]\n'
                    "unroll = [false]\n")
    hints = load_hints(good)
    assert hints.block == ((16, 16),) and hints.stage == {"k": (16, 400)}
    assert hints.cache == (("A", "B"),) and hints.unroll == (False,)
    for text, message in [("blocks = [[1]]", "unknown hint blocks"),
                          ("block = [16, 16]", "list of lists"),
                          ("stage = { k = [0] }", "positive integers"),
                          ("cache = ['A']", "list of lists of array names"),
                          ("unroll = ['yes']", "true/false"),
                          ("block = [[16", "not a TOML hints file")]:
        bad = tmp_path / "bad.toml"
        bad.write_text(text)
        with pytest.raises(UsageError, match=message):
            load_hints(bad)
    with pytest.raises(UsageError, match="no such hints file"):
        load_hints(tmp_path / "missing.toml")


def test_a_hint_naming_what_the_kernel_lacks_is_refused():
    skeleton = load_skeleton(EXAMPLES / "matmul.sk")
    hw = load_hardware("c1060")
    with pytest.raises(UsageError, match="never loads"):
        search(skeleton, hw, hints=Hints(block=((16, 16),), fold=((1, 1),),
                                         cache=(("Z",),)))
    with pytest.raises(UsageError, match="not a streaming loop"):
        search(skeleton, hw, hints=Hints(block=((16, 16),), stage={"q": (4,)}))


def test_grophecy_is_a_model_of_skeletons():
    assert "grophecy" in model_names("skeleton") and "grophecy" not in model_names()
    model = get_model("grophecy", hardware="c1060").fit()
    path = EXAMPLES / "matmul.sk"
    best = model.project(path).best
    assert model.predict(path, {}) == best.seconds
    assert sum(model.explain(path, {}).values()) == pytest.approx(best.seconds)
    layout = Layout((16, 16), (1, 1), (("k", 16),), ("A", "B"))
    skeleton = load_skeleton(path)
    assert model.predict((skeleton, layout), {}) >= best.seconds
    # smaller sizes through params, the skeleton's macros: a quarter of the work
    assert model.predict(path, {"N": 400, "M": 400}) < best.seconds
    assert model.details(path, {})["verdict"] in ("memory-bound", "compute-bound",
                                                  "not enough warps")
    with pytest.raises(UsageError, match="code skeletons"):
        model.predict(42, {})


@pytest.mark.parametrize("value", [400.5, "400", [400], None, True])
def test_params_are_the_skeletons_integer_macros(value):
    """Never truncated or read from text, as int() would; NumPy's integers are integers."""
    import numpy as np

    model = get_model("grophecy", hardware="c1060").fit()
    path = EXAMPLES / "rowsum.sk"
    with pytest.raises(UsageError, match="macros, which are integers: N is"):
        model.predict(path, {"N": value})
    assert model.predict(path, {"N": np.int64(400)}) == model.predict(path, {"N": 400})


def test_skeletons_parsed_from_text_are_projected_each_on_its_own():
    """The search is cached per skeleton, not per path: two texts share "<string>"."""
    from kernelcast.frontends.skeleton import parse_skeleton

    texts = [(EXAMPLES / f"{name}.sk").read_text() for name in ("matmul", "transpose")]
    model = get_model("grophecy", hardware="c1060").fit()
    shared = [model.predict(parse_skeleton(t), {}) for t in texts]
    alone = [get_model("grophecy", hardware="c1060").fit().predict(parse_skeleton(t), {})
             for t in texts]
    assert shared == alone and shared[0] != shared[1]


def _projected(name, gpu, layout):
    ch = _characterize(name, gpu, layout)
    return estimate(load_hardware(gpu), ch.workload)


def test_what_the_paper_observes_holds():
    # §9.1: staging turns MatMul from memory bound to compute bound
    naive = _projected("matmul", "c1060", Layout((16, 16), (1, 1)))
    staged = _projected("matmul", "c1060", Layout((16, 16), (1, 1), (("k", 16),), ("A", "B")))
    assert naive.verdict == "memory-bound" and staged.verdict == "compute-bound"
    assert staged.seconds < naive.seconds
    # §9.2: caching HotSpot's neighborhood helps on the FX5600, hurts on the C1060 (its
    # coalescing already served the naive layout), and folding 2 x 4 helps on both
    for gpu, shm_helps in (("fx5600", True), ("c1060", False)):
        naive = _projected("hotspot", gpu, Layout((16, 16), (1, 1)))
        shm = _projected("hotspot", gpu, Layout((16, 16), (1, 1), (), ("TIN",)))
        fold = _projected("hotspot", gpu, Layout((16, 16), (2, 4), (), ("TIN",)))
        assert (shm.seconds < naive.seconds) == shm_helps
        assert fold.seconds < shm.seconds


def test_the_measured_h100_kernels_are_what_realize_makes_today():
    # data/h100/grophecy-cuda.sqlite holds realized layouts timed on an H100; the CUDA
    # code measured must be the code kernelcast generates now for the same layouts, or
    # the committed comparison (data/h100/grophecy.json) describes other kernels
    import json

    from kernelcast.measure.codegen import generate
    from kernelcast.measure.store import Store
    from kernelcast.models.grophecy.realize import realize

    data = Path(__file__).resolve().parent.parent / "data" / "h100"
    layouts = json.loads((data / "grophecy-layouts.json").read_text())["layouts"]
    with Store(data / "grophecy-cuda.sqlite") as store:
        rows = {r["case_name"]: r for r in store.rows()}
    assert len(rows) == len(layouts) == 99
    for name in sorted(layouts)[::12]:  # a sample across the four skeletons
        info = layouts[name]
        skeleton = load_skeleton(EXAMPLES / f"{info['skeleton']}.sk")
        d = info["layout"]
        layout = Layout(tuple(d["block"]), tuple(d["fold"]),
                        tuple((k, s) for k, s in d["stages"]), tuple(d["cached"]),
                        d["unroll"])
        case = realize(skeleton, layout)
        assert case.name == name
        assert generate(case.kernel(), "cuda").code_sha256 == rows[name]["code_sha256"]
