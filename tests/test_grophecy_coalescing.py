"""GROPHECY's coalescing rules (§7.2, footnote 3) and ours for today's GPUs, each case
worked by hand from the rule in the comment beside it."""

import pytest

from kernelcast.errors import UsageError
from kernelcast.models.grophecy import compiler
from kernelcast.models.grophecy.coalescing import Access, rule_for, warp_access
from kernelcast.hardware import load_hardware


def _addresses(start, stride_bytes, threads=32):
    return [start + t * stride_bytes for t in range(threads)]


@pytest.mark.parametrize(("addresses", "elem", "expected"), [
    # 32 floats side by side from 0: bytes 0..127 = sectors 0..3; 4 = 32*4/32, the least
    (_addresses(0, 4), 4, Access(True, 4)),
    # every other float: bytes 0..251 = sectors 0..7, twice the 4 the warp needs
    (_addresses(0, 8), 4, Access(False, 8)),
    # side by side from byte 4: bytes 4..131 = sectors 0..4, one more than needed
    (_addresses(4, 4), 4, Access(False, 5)),
    # 32 doubles side by side: bytes 0..255 = 8 sectors = 32*8/32
    (_addresses(0, 8), 8, Access(True, 8)),
    # every thread the same float: one sector (a broadcast)
    ([64] * 32, 4, Access(True, 1)),
    # a column of a row-major 1024-wide float matrix: 4096 bytes apart, 32 sectors
    (_addresses(0, 4096), 4, Access(False, 32)),
])
def test_sectors_of_a_warp_on_compute_capability_9(addresses, elem, expected):
    assert warp_access(addresses, elem, rule_for("9.0")) == expected


@pytest.mark.parametrize(("addresses", "elem", "expected"), [
    # each half-warp: 16 floats = 64 bytes within one 128-byte segment: 1 + 1
    (_addresses(0, 4), 4, Access(True, 2)),
    # every other float: a half-warp spans 15*8+4 = 124 bytes, one 128-byte segment
    (_addresses(0, 8), 4, Access(True, 2)),
    # from byte 4: bytes 4..67 in segment 0 (1), bytes 68..131 across segments 0, 1 (2)
    (_addresses(4, 4), 4, Access(False, 3)),
    # 128 bytes apart: each thread in its own 128-byte segment, 16 per half-warp
    (_addresses(0, 128), 4, Access(False, 32)),
    # shorts: segment 64; 16 shorts = 32 bytes, both halves within bytes 0..63: 1 + 1
    (_addresses(0, 2), 2, Access(True, 2)),
])
def test_transactions_per_half_warp_on_compute_capability_1_3(addresses, elem, expected):
    assert warp_access(addresses, elem, rule_for("1.3")) == expected


@pytest.mark.parametrize(("addresses", "elem", "expected"), [
    # adjacent, in order, aligned to 16 floats: two transactions for the warp
    (_addresses(0, 4), 4, Access(True, 2)),
    # adjacent but from byte 4: not aligned, one per thread
    (_addresses(4, 4), 4, Access(False, 32)),
    # aligned but every other float: not adjacent, one per thread
    (_addresses(0, 8), 4, Access(False, 32)),
    # adjacent elements in reverse order within each half-warp: one per thread
    ([base + 4 * (15 - t) for base in (0, 64) for t in range(16)], 4, Access(False, 32)),
])
def test_all_or_nothing_below_compute_capability_1_3(addresses, elem, expected):
    assert warp_access(addresses, elem, rule_for("1.0")) == expected


@pytest.mark.parametrize(("capability", "rule"), [
    ("1.0", "cc1.0"), ("1.1", "cc1.0"), ("1.2", "cc1.0"), ("1.3", "cc1.3"),
    ("6.0", "sectors"), ("9.0", "sectors")])
def test_the_rule_follows_the_compute_capability(capability, rule):
    assert rule_for(capability) == rule


@pytest.mark.parametrize("capability", ["2.0", "5.2", "nine", None, "9"])
def test_capabilities_without_a_rule_are_refused(capability):
    with pytest.raises(UsageError, match="compute capability"):
        rule_for(capability)


@pytest.mark.parametrize(("gpu", "capability", "rule"), [
    ("fx5600", "1.0", "cc1.0"), ("c1060", "1.3", "cc1.3"), ("h100", "9.0", "sectors"),
    ("h200", "9.0", "sectors")])
def test_every_packaged_gpu_says_its_compute_capability_and_where_from(gpu, capability,
                                                                       rule):
    hardware = load_hardware(gpu)
    assert hardware.compute_capability == capability
    assert rule_for(hardware.compute_capability) == rule
    assert hardware.sources["compute_capability"]


def test_table_3_as_published():
    assert (compiler.UNROLL_GROUP, compiler.PER_BRANCH, compiler.PER_LOOP_ITERATION,
            compiler.PER_SHARED_LOAD, compiler.PER_UNCOALESCED_INDEX) == (16, 3, 5, 2, 4)


@pytest.mark.parametrize("bad", ["9", "nine.0", 9.0, ["9", "0"]])
def test_a_hardware_file_with_a_malformed_compute_capability_is_refused(tmp_path, bad):
    import json

    from kernelcast.errors import ProfileError

    data = json.loads((load_hardware.__globals__["HARDWARE_DIR"] / "h100.json").read_text())
    data["compute_capability"] = bad
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ProfileError, match="compute_capability .* is not 'major.minor'"):
        load_hardware(str(path))
