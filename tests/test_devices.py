"""Devices: what the OpenCL ICD loader offers (PoCL here), finding one by name, and
registering NVIDIA's OpenCL driver when it is installed but not registered.

Registration changes the environment of the process and happens once per process, so those
tests run in subprocesses. devices.py finds the driver library in the module constant
NVIDIA_OPENCL_LIBRARIES (absolute system paths, no environment variable); the subprocesses
point it at files under tmp_path, and TMPDIR puts the private vendors folder there too, so
nothing outside tmp_path is touched.
"""

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kernelcast.errors import KernelcastError, MissingDependencyError, UsageError
from kernelcast.measure.backends import make_backend
from kernelcast.measure.devices import (
    DeviceInfo,
    best_device,
    cuda_devices,
    find_device,
    list_devices,
    opencl_devices,
)


POCL = "Portable Computing Language"


def _pocl(devices):
    return [d for d in devices if d.platform == POCL]


def test_opencl_devices_lists_pocl_with_its_properties(pocl_device):
    # a machine may offer PoCL twice (pyopencl's own and the system's); the first is used
    device = _pocl(opencl_devices())[0]
    assert device == pocl_device
    assert isinstance(device, DeviceInfo)
    assert device.backend == "opencl"
    assert device.index == 0
    assert device.name and device.vendor and device.driver
    assert "CPU" in device.kind
    assert device.compute_units >= 1
    assert device.clock_mhz >= 1
    assert 0 < device.max_alloc_bytes <= device.global_mem_bytes
    assert device.local_mem_bytes > 0
    assert device.max_group_size >= 256
    assert device.label == f"opencl:Portable Computing Language:{device.name}"
    assert device.as_dict()["global_mem_bytes"] == device.global_mem_bytes
    assert set(device.as_dict()) == set(DeviceInfo.__dataclass_fields__)


def test_properties_match_what_pyopencl_reports(pocl_device):
    import pyopencl as cl

    device = pocl_device
    platform = next(p for p in cl.get_platforms() if p.name.strip() == device.platform)
    cl_device = platform.get_devices()[device.index]
    assert device.name == cl_device.name.strip()
    assert device.compute_units == cl_device.max_compute_units
    assert device.global_mem_bytes == cl_device.global_mem_size
    assert device.max_alloc_bytes == cl_device.max_mem_alloc_size
    assert device.max_group_size == cl_device.max_work_group_size


NO_CUPY = importlib.util.find_spec("cupy") is None
needs_no_cupy = pytest.mark.skipif(
    not NO_CUPY, reason="cupy is installed here: what happens without it cannot be tested")


def test_list_devices_is_opencl_then_cuda():
    assert list_devices() == opencl_devices() + cuda_devices()


@needs_no_cupy
def test_without_cupy_there_are_no_cuda_devices():
    assert cuda_devices() == []


def test_cuda_devices_are_what_cupy_reports():
    cupy = pytest.importorskip("cupy", reason="the CUDA backend needs cupy")
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as err:  # noqa: BLE001 - cupy's own error types without a driver
        pytest.skip(f"cupy finds no CUDA driver: {err}")
    devices = cuda_devices()
    assert len(devices) == count
    for index, device in enumerate(devices):
        assert (device.backend, device.platform, device.index, device.kind) == (
            "cuda", "CUDA", index, "GPU")
        assert device.compute_units >= 1 and device.global_mem_bytes > 0
        assert device.driver.startswith("CUDA ")


def test_find_device_by_substring_of_platform_or_name(pocl_device):
    pocl = pocl_device
    assert find_device("portable") == pocl
    assert find_device("PORTABLE COMPUTING") == pocl
    assert find_device(pocl.name[:5].lower()) == pocl
    assert find_device(None) == best_device(opencl_devices())


def test_an_unknown_device_is_refused_listing_the_devices(pocl_device):
    with pytest.raises(UsageError) as info:  # a bad --device: exit status 2
        find_device("no-such-device")
    message = str(info.value)
    assert "no opencl device matches 'no-such-device'" in message
    pocl = pocl_device
    assert message.startswith("no opencl device matches 'no-such-device'; devices: ")
    assert f"{pocl.platform}: {pocl.name}" in message  # among any others the machine has


def test_an_unknown_backend_is_refused():
    with pytest.raises(UsageError, match="unknown backend 'metal'"):
        find_device("x", "metal")


@needs_no_cupy
def test_the_cuda_backend_without_cupy_is_refused_saying_what_to_install():
    with pytest.raises(MissingDependencyError, match=r"kernelcast\[cuda\]"):
        find_device(None, "cuda")
    with pytest.raises(MissingDependencyError, match=r"kernelcast\[cuda\]"):
        make_backend("cuda")


def _device(kind, units, clock, name):
    return DeviceInfo("opencl", "P", 0, name, "V", "1", kind, units, clock, 1, 1, 1, 1)


def test_best_device_prefers_a_gpu_then_the_most_compute():
    cpu = _device("CPU", 128, 3000, "big cpu")
    gpu = _device("GPU", 8, 1000, "small gpu")
    gpu2 = _device("GPU", 16, 1000, "larger gpu")
    assert best_device([cpu, gpu]) == gpu
    assert best_device([gpu, cpu, gpu2]) == gpu2
    with pytest.raises(KernelcastError, match="no opencl device found"):
        best_device([])


# {{{ registering NVIDIA's OpenCL driver, in subprocesses

_REGISTER = textwrap.dedent("""
    import json, os, sys, warnings
    import kernelcast.measure.devices as devices
    from kernelcast.errors import KernelcastWarning

    devices.NVIDIA_OPENCL_LIBRARIES = tuple(sys.argv[1:])
    before = os.environ.get("OCL_ICD_VENDORS")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = devices.register_nvidia_opencl()
        second = devices.register_nvidia_opencl()
        names = [d.platform for d in devices.opencl_devices()]
    folder = os.environ.get("OCL_ICD_VENDORS")
    icds = {}
    if folder and folder != before:
        for name in sorted(os.listdir(folder)):
            with open(os.path.join(folder, name)) as f:
                icds[name] = f.read()
    print(json.dumps({
        "first": first, "second": second, "before": before, "after": folder, "icds": icds,
        "platforms": names,
        "warnings": [[w.category.__name__, issubclass(w.category, KernelcastWarning),
                      str(w.message)] for w in caught]}))
""")


def _system_icds() -> dict:
    """The ICDs registered with the system, by file name: what the loader reads where
    OCL_ICD_VENDORS is not set, besides those pyopencl bundles."""
    icds = {}
    for path in sorted(Path("/etc/OpenCL/vendors").glob("*.icd")):
        icds[path.name] = path.read_text()
    return icds


def _register(tmp_path, libraries, vendors=None):
    env = {k: v for k, v in os.environ.items() if k != "OCL_ICD_VENDORS"}
    env["TMPDIR"] = str(tmp_path)
    if vendors is not None:
        env["OCL_ICD_VENDORS"] = str(vendors)
    result = subprocess.run([sys.executable, "-c", _REGISTER, *map(str, libraries)],
                            capture_output=True, text=True, env=env, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_an_unregistered_nvidia_driver_is_registered_with_a_warning(tmp_path, pocl_device):
    library = tmp_path / "libnvidia-opencl.so.1"
    library.write_text("a dummy, not a real driver")
    doc = _register(tmp_path, [tmp_path / "not-installed.so.1", library])
    folder = doc["first"]
    assert folder is not None and folder.startswith(str(tmp_path / "kernelcast-icd-"))
    assert doc["after"] == folder and doc["second"] == folder  # once per process
    # the system's ICDs are kept; pyopencl's bundled loader finds its own pocl.icd without
    # the folder, so it is not copied
    assert doc["icds"] == {**_system_icds(), "nvidia.icd": f"{library}\n"}
    [(category, is_ours, message)] = doc["warnings"]
    assert is_ours and category == "KernelcastWarning"
    assert "NVIDIA's OpenCL driver" in message and str(library) in message
    assert "registered it for this process" in message and folder in message
    # the loader skips the dummy driver and still offers PoCL
    assert "Portable Computing Language" in doc["platforms"]


def test_registering_does_not_duplicate_platforms(tmp_path, pocl_device):
    library = tmp_path / "libnvidia-opencl.so.1"
    library.write_text("a dummy, not a real driver")
    doc = _register(tmp_path, [library])
    unregistered = _register(tmp_path, [tmp_path / "not-installed.so.1"])
    assert doc["first"] is not None and unregistered["first"] is None
    assert doc["platforms"].count(POCL) == unregistered["platforms"].count(POCL) >= 1


def test_registering_keeps_the_icds_registered_before(tmp_path, pocl_device):
    library = tmp_path / "libnvidia-opencl.so.1"
    library.write_text("a dummy, not a real driver")
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    (vendors / "other.icd").write_text(f"{tmp_path / 'libother-opencl.so'}\n")
    doc = _register(tmp_path, [library], vendors=vendors)
    assert doc["before"] == str(vendors) and doc["first"] != str(vendors)
    assert doc["icds"] == {"nvidia.icd": f"{library}\n",
                           "other.icd": f"{tmp_path / 'libother-opencl.so'}\n"}
    unregistered = _register(tmp_path, [tmp_path / "not-installed.so.1"], vendors=vendors)
    assert doc["platforms"].count(POCL) == unregistered["platforms"].count(POCL)


def test_without_the_driver_library_nothing_is_registered(tmp_path, pocl_device):
    doc = _register(tmp_path, [tmp_path / "libnvidia-opencl.so.1"])
    assert doc["first"] is None and doc["second"] is None
    assert doc["before"] is None and doc["after"] is None
    assert doc["warnings"] == []
    assert not list(tmp_path.glob("kernelcast-icd-*"))
    assert POCL in doc["platforms"]


def test_an_already_registered_driver_is_left_alone(tmp_path, pocl_device):
    library = tmp_path / "libnvidia-opencl.so.1"
    library.write_text("a dummy, not a real driver")
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    (vendors / "nvidia.icd").write_text("libnvidia-opencl.so.1\n")
    doc = _register(tmp_path, [library], vendors=vendors)
    assert doc["first"] is None
    assert doc["after"] == str(vendors)
    assert doc["warnings"] == []
    assert not list(tmp_path.glob("kernelcast-icd-*"))

# }}}
