"""Nsight Compute's raw CSV (kernelcast.frontends.profiler), read from the case studies'
profiles taken on the H100 and the H200 (data/<gpu>/criteria/ncu.tar.xz): the launches
each application makes, and counters that the kernels' designs fix by hand."""

import io
import json
import lzma
import tarfile
from pathlib import Path

import pytest

from kernelcast.errors import UsageError
from kernelcast.frontends.profiler import read_ncu_csv

DATA = Path(__file__).resolve().parent.parent / "data"
GPUS = ("h100", "h200")
N = 4096  # the transposed matrix is N x N floats


def _profiles(gpu) -> dict[str, str]:
    data = lzma.decompress((DATA / gpu / "criteria" / "ncu.tar.xz").read_bytes())
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return {m.name[:-4]: tar.extractfile(m).read().decode() for m in tar.getmembers()}


PROFILES = {gpu: _profiles(gpu) for gpu in GPUS}


def _own(label, gpu="h100"):
    """The application's own launches (ncu also profiled cupy's buffer copies)."""
    return [l for l in read_ncu_csv(PROFILES[gpu][label], label)
            if not l.kernel.startswith("cupy")]


@pytest.mark.parametrize("gpu", GPUS)
def test_every_case_has_a_profile_of_each_of_its_launches(gpu):
    cases = json.loads((DATA / gpu / "criteria" / "cases.json").read_text())["records"]
    assert set(PROFILES[gpu]) == {f"{r['application']}-{r['version']}" for r in cases}
    for r in cases:
        launches = _own(f"{r['application']}-{r['version']}", gpu)
        assert len(launches) == r["launches"]
        assert [l.id for l in launches] == sorted(l.id for l in launches)
        for launch in launches:  # thousands separators read as numbers, with units
            assert launch.value("gpu__time_duration.sum") > 1000
            assert launch.units["gpu__time_duration.sum"] == "ns"


@pytest.mark.parametrize("gpu", GPUS)
def test_bank_conflicts_of_the_tiled_transposes(gpu):
    # each warp reads a column of the 32 x 32 tile: 32 lanes on one bank (32 wavefronts)
    # without padding, one wavefront with it; a warp-level load per 32 elements
    loads = N * N / 32
    for label, wavefronts in (("transpose-2-tiled", 32), ("transpose-3-padded", 1)):
        (launch,) = _own(label, gpu)
        measured = launch.value("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum")
        assert measured / loads == pytest.approx(wavefronts, rel=0.05)


@pytest.mark.parametrize("gpu", GPUS)
def test_global_store_sectors_of_the_naive_and_tiled_transposes(gpu):
    # a warp's 32 stores: one 32-byte sector each when strided by a row (naive), four
    # sectors of one 128-byte row when coalesced (tiled)
    for label, sectors in (("transpose-1-naive", 32), ("transpose-2-tiled", 4)):
        (launch,) = _own(label, gpu)
        per_request = (launch.value("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum")
                       / launch.value("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"))
        assert per_request == pytest.approx(sectors, rel=0.01)
        assert launch.value("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum") == N * N / 32


def test_bad_input_is_a_one_line_error():
    with pytest.raises(UsageError, match="not the CSV of ncu") as info:
        read_ncu_csv("==PROF== nothing profiled\n", "run.csv")
    assert "\n" not in str(info.value)
    (launch,) = _own("transpose-1-naive")
    with pytest.raises(UsageError, match="missing"):
        launch.value("no__such_metric.sum")
    header = PROFILES["h100"]["transpose-1-naive"].splitlines()
    short = "\n".join(line for line in header if line.startswith('"ID"'))
    with pytest.raises(UsageError, match="units row|not the CSV"):
        read_ncu_csv(short + "\n" + '"x"', "cut.csv")
