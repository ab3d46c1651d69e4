"""Shared fixtures: a real OpenCL backend on PoCL, the CPU device CI has; a CUDA backend
where cupy and a GPU are present; NVIDIA's compiler from PyPI (no GPU needed); and empty
measurement stores of schema version 1, as committed under data/.

Where PoCL (or pyopencl) is missing, the tests that need it are skipped, saying why and how
to install it; where it is present, OpenCL code is compiled and run for real.
"""

import importlib.util
import os
import sqlite3
import tempfile
from pathlib import Path

import pytest

POCL_PLATFORM = "portable computing language"
INSTALL = "scripts/setup.sh installs it"


@pytest.fixture(scope="session", autouse=True)
def private_device_locks():
    """Device locks of this test session apart from any other on the machine (the lock
    tests start and kill holders of their own)."""
    with tempfile.TemporaryDirectory(prefix="kernelcast-test-locks-") as folder:
        saved = os.environ.get("KERNELCAST_LOCK_DIR")
        os.environ["KERNELCAST_LOCK_DIR"] = folder
        yield folder
        if saved is None:
            os.environ.pop("KERNELCAST_LOCK_DIR", None)
        else:
            os.environ["KERNELCAST_LOCK_DIR"] = saved


@pytest.fixture(scope="session")
def pocl_device():
    """The DeviceInfo of PoCL's CPU device; skips where pyopencl or PoCL is missing."""
    if importlib.util.find_spec("pyopencl") is None:
        pytest.skip(f"needs pyopencl and PoCL: pyopencl is not installed ({INSTALL})")
    from kernelcast.measure.devices import opencl_devices

    for device in opencl_devices():
        if POCL_PLATFORM in device.platform.lower():
            return device
    pytest.skip(f"needs PoCL: the OpenCL ICD loader offers no PoCL device ({INSTALL})")


@pytest.fixture(scope="session")
def cuda():
    """The CUDA backend on the first CUDA device; skips without cupy or a CUDA device."""
    pytest.importorskip("cupy", reason="needs cupy and a CUDA device: pip install "
                                       "'kernelcast[cuda]' on a machine with an NVIDIA GPU")
    from kernelcast.measure.backends import CudaBackend
    from kernelcast.measure.devices import cuda_devices

    devices = cuda_devices()
    if not devices:
        pytest.skip("needs a CUDA device: cupy finds none (no NVIDIA GPU or driver)")
    return CudaBackend(devices[0])


@pytest.fixture(scope="session")
def pocl(pocl_device):
    """The OpenCL backend on PoCL's CPU device; skips where PoCL is missing."""
    from kernelcast.measure.backends import OpenCLBackend

    return OpenCLBackend(pocl_device)


DATA = Path(__file__).resolve().parent.parent / "data"
COMMITTED_STORES = sorted(DATA.glob("*/*.sqlite"))


@pytest.fixture
def schema1_store():
    """A function that makes an empty schema-1 store at *path* for *identity*, with the
    tables, constraints and triggers of a store committed under data/ (all schema 1)."""
    def make(path, identity):
        source = sqlite3.connect(f"file:{COMMITTED_STORES[0]}?mode=ro", uri=True)
        try:
            assert source.execute("SELECT value FROM meta WHERE name = 'schema_version'"
                                  ).fetchone() == ("1",)
            ddl = [sql for (sql,) in source.execute(
                "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL "
                "AND name NOT LIKE 'sqlite_%' ORDER BY rowid")]
        finally:
            source.close()
        target = sqlite3.connect(path)
        with target:
            for sql in ddl:
                target.execute(sql)
            target.executemany("INSERT INTO meta VALUES (?, ?)", [
                ("schema_version", "1"), ("created_at", "2026-01-01T00:00:00+00:00"),
                *((k, identity[k]) for k in ("backend", "device", "driver"))])
        target.close()
        return path
    return make


@pytest.fixture(scope="session")
def compiler():
    """NVIDIA's compiler and disassembler from PyPI, which the hardware facts need: a
    skip where they are missing, a failure on CI (which installs them)."""
    from kernelcast.errors import KernelcastError
    from kernelcast.facts.compiler import find_tools

    try:
        find_tools()
    except KernelcastError:
        if os.environ.get("CI"):
            pytest.fail("CI installs NVIDIA's compiler (the test extra); it is missing")
        pytest.skip("NVIDIA's compiler from PyPI is not installed (pip install -e '.[test]')")


@pytest.fixture(scope="module")
def h100_known_facts():
    """The facts model reads its launches' facts from data/h100/facts-summaries.json.xz
    (benchmarks/facts_model.py summaries; tests/test_facts_model.py checks a sample
    against what the facts predict now) instead of predicting them again."""
    import kernelcast.models.extended as extended
    from kernelcast.models.extended.facts import SummaryCache

    before = extended.SUMMARIES
    extended.SUMMARIES = SummaryCache(Path(__file__).resolve().parent.parent
                                      / "data/h100/facts-summaries.json.xz")
    extended.SUMMARIES.path = None  # read, never written
    yield
    extended.SUMMARIES = before
