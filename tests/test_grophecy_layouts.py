"""Block shapes and foldings of GROPHECY's layout space (§6.1, §6.2), counted by hand."""

import pytest

from kernelcast.errors import UsageError
from kernelcast.models.grophecy.layouts import MAX_TASKS, block_shapes, foldings


def test_power_of_two_blocks_of_at_most_512_threads_over_matmuls_loops():
    blocks = block_shapes((800, 800), 512)
    # sides 2^a x 2^b with a, b in 0..9 (2^9 = 512 <= 800) and a + b <= 9:
    # sum over a of (10 - a) = 10 + 9 + ... + 1 = 55
    assert len(blocks) == 55
    assert (16, 16) in blocks and (1, 512) in blocks and (32, 32) not in blocks
    assert len(set(blocks)) == len(blocks)


def test_a_short_loop_limits_its_side():
    # a 3 x 1000 space: the first side is 1 or 2 (4 > 3); the second 1 ... 512 within
    # 1024 threads: 2 x 10 shapes, all at most 2 * 512 = 1024 threads
    assert len(block_shapes((3, 1000), 1024)) == 20


def test_blocks_hold_whole_warps_unless_the_space_is_smaller():
    # with 32-thread warps: 2^a x 2^b with 5 <= a + b <= 9: 55 less the 15 with
    # a + b <= 4 (5 + 4 + 3 + 2 + 1) = 40
    blocks = block_shapes((800, 800), 512, warp_size=32)
    assert len(blocks) == 40 and (4, 4) not in blocks and (1, 32) in blocks
    # a 4 x 4 space has 16 tasks: its blocks go down to them, not below
    assert block_shapes((4, 4), 512, warp_size=32) == [(4, 4)]


def test_foldings_keep_block_times_folding_within_the_loops():
    # block 16 x 16 over 800 x 800: at most 50 tasks a side, 1 ... 32 (6 powers), and
    # at most MAX_TASKS = 16 tasks: 2^a x 2^b with a + b <= 4: 5 + 4 + 3 + 2 + 1 = 15
    assert MAX_TASKS == 16
    folds = foldings((800, 800), (16, 16))
    assert len(folds) == 15 and (2, 4) in folds and (32, 1) not in folds
    # a 64 x 1 block over 128 x 128: the first side folds at most twice (128 / 64):
    # 2^a x 2^b, a <= 1, a + b <= 4: 5 + 4 = 9
    assert len(foldings((128, 128), (64, 1))) == 9
    assert foldings((16,), (16,)) == [(1,)]


def test_hints_name_the_blocks_and_foldings_to_explore():
    assert block_shapes((800, 800), 512, hints=[(16, 16), (16, 16), (24, 8)]) == [
        (16, 16), (24, 8)]
    assert foldings((512, 512), (16, 16), hints=[(2, 4)]) == [(2, 4)]


@pytest.mark.parametrize(("call", "message"), [
    (lambda: block_shapes((800, 800), 512, hints=[(32, 32)]), "1024 threads; the device"),
    (lambda: block_shapes((8, 800), 512, hints=[(16, 16)]), "longer than the loop space"),
    (lambda: block_shapes((800, 800), 512, hints=[(16,)]), "does not fit a 2-D"),
    (lambda: foldings((512, 512), (16, 16), hints=[(64, 1)]), "covers more than"),
    (lambda: foldings((512, 512), (16, 16), hints=[(0, 1)]), "does not fit a 2-D"),
])
def test_a_hint_that_breaks_a_limit_is_refused_naming_it(call, message):
    with pytest.raises(UsageError, match=message):
        call()
