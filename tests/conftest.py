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

#: the test files that take longest (a minute or more on two cores), about longest first:
#: run before all others, so that the workers of pytest-xdist (--dist loadfile hands out
#: whole files in collection order) do not end on one of them while the others sit idle
SLOW_FILES = [
    "test_multi_device.py",
    "test_model_protocol.py",
    "test_fuzz.py",
    "test_tuning_docs.py",
    "test_opencl_fuzz.py",
    "test_poppl_herz.py",
    "test_grophecy_realize.py",
    "test_tune_corpus.py",
    "test_suites.py",
    "test_extended_model.py",
    "test_search_families.py",
    "test_grophecy_characterize.py",
    "test_learned_model.py",
    "test_space_fit.py",
    "test_workflow.py",
    "test_poppl_herz_added.py",
    "test_random_kernels.py",
    "test_tune.py",
    "test_facts_compiler.py",
    "test_criteria_compiled_here.py",
    "test_random_families.py",
    "test_hardware_reliability.py",
    "test_tune_space_local.py",
    "test_learned_facts.py",
    "test_guided_search.py",
    "test_tune_reliability.py",
    "test_criteria_gpu_data.py",
    "test_frontend_reliability.py",
    "test_criteria_model.py",
    "test_facts_warps.py",
    "test_advise_reliability.py",
    "test_campaign.py",
    "test_model.py",
]


def pytest_collection_modifyitems(config, items):
    """The files of SLOW_FILES first, in its order; every file's tests stay together and
    in their order."""
    rank = {name: i for i, name in enumerate(SLOW_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(SLOW_FILES)))


@pytest.fixture(scope="session", autouse=True)
def private_device_locks():
    """Device locks of this test session apart from any other on the machine (the lock
    tests start and kill holders of their own). Each pytest-xdist worker is a session of
    its own, with its own locks: a lock test holding PoCL's lock never makes another
    worker's measurement wait or fail, and two workers may time PoCL at once, which
    slows both."""
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


# a process that takes the device lock named by its first argument, says so, and keeps
# it for as many seconds as its second argument says
_HOLDER = """
import sys, time
from kernelcast.measure.lock import DeviceLock
lock = DeviceLock(sys.argv[1])
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
"""


@pytest.fixture
def lock_holder(pocl_device):
    """A function that starts another process holding the lock of PoCL's device for
    *seconds* (600 unless told) and returns it once it holds the lock; every process it
    started is killed afterwards."""
    import subprocess
    import sys

    started = []

    def start(seconds: float = 600):
        process = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, pocl_device.lock_name, str(seconds)],
            stdout=subprocess.PIPE, text=True)
        started.append(process)
        assert process.stdout.readline().strip() == "holding"
        return process

    yield start
    for process in started:
        process.kill()
        process.wait()
        process.stdout.close()


@pytest.fixture
def holder(lock_holder):
    """Another process holding the lock of PoCL's device (killed afterwards)."""
    return lock_holder()


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


@pytest.fixture(scope="session")
def gpu_suite_properties():
    """One PropertyCache for the cases of the GPU suites (measurement, extension,
    validation, test), shared by the modules that load them from the committed stores or
    build them: each suite kernel's properties are extracted once a session (a pytest-xdist
    worker), not once a module. A PropertyCache knows a kernel by its case's kernel_name,
    which within these suites names one kernel."""
    from kernelcast.fitting.dataset import PropertyCache

    return PropertyCache()
