"""The paper's skeletons through the data-usage algebra: what GROPHECY says of MatMul's
Stage+LoopUnroll layout (§9.1: a 16 x 16 block, stage 16), worked by hand beside each
value, and indirect accesses bounded by a sample file."""

from pathlib import Path

from kernelcast.frontends.skeleton import load_skeleton, parse_skeleton
from kernelcast.models.grophecy import instructions as eq
from kernelcast.models.grophecy.sections import Indirect, Range, Tile, size
from kernelcast.models.grophecy.skeletons import loop_space, placed_accesses
from kernelcast.models.grophecy.usage import (
    num_stages,
    shmem,
    shmem_alloc,
    shr_degree,
    stage_size,
)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "skeletons"


def test_matmul_stage_16_on_a_16x16_block():
    skeleton = load_skeleton(EXAMPLES / "matmul.sk")
    [kernel] = skeleton.kernels
    assert loop_space(kernel) == {"i": 800, "j": 800}  # Table 4: C is 800 x 800
    placed = placed_accesses(skeleton, kernel)
    assert [(p.access.array, p.store, p.stream) for p in placed] == [
        ("A", False, "k"), ("B", False, "k"), ("C", True, "")]
    by_array = {p.access.array: [p.access] for p in placed}
    k = Range(0, 400, 1)  # stream k = 0:K, K = 400
    b_hat = Tile.of(i=Range(0, 16), j=Range(0, 16), k=k)  # the block plus its inner loops
    f_hat = Tile.of(i=Range(0, 1), j=Range(0, 1), k=k)  # one thread plus its inner loops
    # (1) A[i][k] over F̂: 1 x 400; over B̂: 16 x 400; x 256 threads: 400*256/6400 = 16
    assert shr_degree(by_array["A"], f_hat, b_hat, 256) == 16
    assert shr_degree(by_array["B"], f_hat, b_hat, 256) == 16
    assert shr_degree(by_array["C"], f_hat, b_hat, 256) == 1  # not worth caching
    # (3) per iteration of k the block needs 16 elements of A: 256 threads / 16 = 16
    assert stage_size(by_array["A"], b_hat, "k", k, 256) == 16
    # (4) 400 / 16 = 25 stages; (5) a stage of A: 16 rows x 16 columns = 256 elements
    assert num_stages(k, 16) == 25
    stage_a = shmem(by_array["A"], b_hat, "k", k, 16)
    stage_b = shmem(by_array["B"], b_hat, "k", k, 16)
    assert (size(stage_a), size(stage_b)) == (256, 256)
    # (6) 4 bytes x 256 each; (7) 2048 bytes per block, as Listing 3's two 16x16 tiles
    allocs = [shmem_alloc(4, [stage_a]), shmem_alloc(4, [stage_b])]
    assert allocs == [1024, 1024] and eq.shared_mem_bytes_per_block(allocs) == 2048
    # (12) each thread loads floor(256 / 256) = 1 element of A per stage: 25 in all
    assert eq.caching_mem_insts([size(stage_a)], [25], 256) == 25


def test_an_indirect_index_is_bounded_by_its_sample_file(tmp_path):
    (tmp_path / "cols.txt").write_text("# three columns\n4 9 7\n")
    text = """
    float B[16][100]
    int I[3] : hints<sample="cols.txt">
    parallel_for(16) : i {
      for n = 0:3 {
        r = I[n]
        ld B[i][r]
      }
    }
    """
    path = tmp_path / "gather.sk"
    path.write_text(text)
    hinted = load_skeleton(path)
    [access] = [p.access for p in placed_accesses(hinted, hinted.kernels[0])
                if p.access.array == "B"]
    assert access.indices[1] == Indirect(Range(4, 10, 1))  # the sample's 4 ... 9
    unhinted = parse_skeleton(text.replace(' : hints<sample="cols.txt">', ""))
    [access] = [p.access for p in placed_accesses(unhinted, unhinted.kernels[0])
                if p.access.array == "B"]
    assert access.indices[1] == Indirect(None)  # anywhere in the row (§6.3)
