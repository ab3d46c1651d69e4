"""The fine-grained model's microbenchmarks compiled here, without a GPU, by NVIDIA's nvcc
and ptxas from PyPI (the test extra pins CUDA 13.0.88's: nvidia-cuda-nvcc, nvidia-nvvm,
nvidia-cuda-crt): a kernel of every family and element type gives the PTX that the H100's
machine compiled with the same release, passes the paper's Figure 2 (b) check and
assembles for sm_90. tests/test_criteria_gpu_data.py checks that every microbenchmark's
source is the one the H100 compiled and that all its listings pass both checks, so the
sample stands for all 64 (compiling each here takes two minutes of a 2-core machine).
The measuring code's own compilation
(kernelcast.suites.criteria_microbenchmarks.compile_microbenchmark: nvcc to PTX and a
cubin, PyPI's nvdisasm to SASS) gives listings that pass both checks."""

import io
import lzma
import os
import subprocess
import tarfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kernelcast.facts.ptx_checks import check_ptx, check_sass
from kernelcast.suites.criteria_microbenchmarks import (compile_microbenchmark,
                                                      microbenchmarks)

ROOT = Path(__file__).resolve().parent.parent
SMS = 132  # the H100's: the sources' default grid is eight blocks per SM
#: a kernel of each family, each element type and each memory level and access
SAMPLE = ("throughput/int/add", "throughput/f32/sin", "throughput/f64/mul",
          "latency/int/xor", "latency/f32/rcp", "latency/f64/add", "shared/conflicts-8",
          "divergence/d-0.375", "memory/load-latency/l1", "memory/load-throughput/dram",
          "memory/store-throughput/l2", "memory/store-throughput/shared",
          "dram-intensity/0.25", "arith-intensity/1")


def _cuda_bin() -> Path | None:
    try:
        import nvidia
    except ImportError:
        return None
    for root in nvidia.__path__:
        folder = Path(root) / "cu13" / "bin"
        if (folder / "nvcc").exists() and (folder / "ptxas").exists():
            return folder
    return None


BIN = _cuda_bin()


def _code(ptx: str) -> str:
    """PTX without its comment lines (the compiler's banner)."""
    return "\n".join(line for line in ptx.splitlines() if not line.startswith("//"))


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    if BIN is None:
        if os.environ.get("CI"):
            pytest.fail("CI installs nvidia-cuda-nvcc (the test extra); it is missing")
        pytest.skip("nvidia-cuda-nvcc is not installed (pip install -e '.[test]')")
    folder = tmp_path_factory.mktemp("ptx")

    def build(bench):
        stem = folder / bench.name.replace("/", "_")
        cu, ptx, cubin = (Path(f"{stem}{s}") for s in (".cu", ".ptx", ".cubin"))
        cu.write_text(bench.source)
        for command in ([str(BIN / "nvcc"), "-arch=sm_90", "-ptx", "-o", str(ptx), str(cu)],
                        [str(BIN / "ptxas"), "-arch=sm_90", "-o", str(cubin), str(ptx)]):
            run = subprocess.run(command, capture_output=True, text=True)
            if run.returncode:
                return bench, None, f"{Path(command[0]).name}: {run.stderr.strip()[:300]}"
        return bench, ptx.read_text(), cubin.stat().st_size

    sample = [b for b in microbenchmarks(grid=SMS * 8) if b.name in SAMPLE]
    with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        return list(pool.map(build, sample))


def test_the_sample_covers_every_family_and_element_type():
    names = {b.name for b in microbenchmarks()}
    assert set(SAMPLE) <= names
    assert {n.split("/")[0] for n in SAMPLE} == {n.split("/")[0] for n in names}
    assert {n.split("/")[1] for n in SAMPLE if n.startswith(("throughput/", "latency/"))} \
        == {"int", "f32", "f64"}
    assert {n.split("/")[1] for n in SAMPLE if n.startswith("memory/")} \
        == {n.split("/")[1] for n in names if n.startswith("memory/")}


def test_a_sample_compiles_here_and_passes_the_ptx_check(compiled):
    assert len(compiled) == len(SAMPLE)
    for bench, ptx, cubin in compiled:
        assert ptx is not None, f"{bench.name}: {cubin}"
        assert cubin > 0
        assert check_ptx(bench, ptx) == [], bench.name


def test_the_ptx_compiled_here_is_the_h100_machines(compiled):
    data = lzma.decompress((ROOT / "data/h100/criteria/listings.tar.xz").read_bytes())
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        there = {m.name: tar.extractfile(m).read().decode() for m in tar.getmembers()
                 if m.name.endswith(".ptx")}
    for bench, ptx, _ in compiled:
        theirs = there[bench.name.replace("/", "_") + ".ptx"]
        assert "release 13.0, V13.0.88" in theirs and "release 13.0, V13.0.88" in ptx
        assert _code(ptx) == _code(theirs), bench.name


@pytest.mark.parametrize("name", ["throughput/f32/add", "shared/conflicts-32",
                                  "divergence/d-0.5"])
def test_the_measuring_code_compiles_listings_that_pass_both_checks(name, tmp_path):
    if BIN is None or not (BIN / "nvdisasm").exists():
        pytest.skip("nvidia-cuda-nvcc or nvidia-cuda-nvdisasm is not installed "
                    "(pip install -e '.[test]')")
    bench = next(b for b in microbenchmarks(grid=SMS * 8) if b.name == name)
    build = compile_microbenchmark(bench, tmp_path, "90", tools=BIN)
    assert "error" not in build, build["error"]
    assert build["stem"] == name.replace("/", "_")
    assert build["ptx_seconds"] >= 0 and build["cubin_seconds"] >= 0
    stem = tmp_path / build["stem"]
    assert Path(f"{stem}.cu").read_text() == bench.source
    assert check_ptx(bench, Path(f"{stem}.ptx").read_text()) == []
    assert check_sass(bench, Path(f"{stem}.sass").read_text()) == []
