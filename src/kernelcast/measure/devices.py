"""The compute devices kernelcast can measure on: OpenCL (any ICD) and CUDA (cupy).

On machines where NVIDIA's OpenCL driver library is installed but not registered with the
ICD loader, ``register_nvidia_opencl`` registers it for this process (a private vendors
folder named by OCL_ICD_VENDORS, holding the ICDs the loader read before, except those
pyopencl bundles, which its loader reads anyway) and says so with a KernelcastWarning. It
must run before the first OpenCL platform query of the process; ``opencl_devices`` calls
it.

Every device has an ``instance``: which physical device it is, so that two identical GPUs
of a host are told apart (each its own lock, store and profile) and an OpenCL and a CUDA
view of one GPU are the same device. For NVIDIA GPUs it is the PCI address,
``pci:DOMAIN:BUS:DEVICE`` in hexadecimal (the same from OpenCL's cl_nv_device_attribute_query
and from CUDA); elsewhere ``#INDEX``, the position in its platform. ``--device`` matches it
too, so ``--device pci:0000:1b`` picks one GPU.

``siblings(device, backend)`` lists the devices identical to *device* (name, driver,
compute units): those a measurement spread over several devices may use, in order of
instance.

Public names: DeviceInfo, opencl_devices, cuda_devices, list_devices, find_device,
best_device, siblings, find_instance, register_nvidia_opencl.
"""

from __future__ import annotations

import glob
import os
import shutil
import tempfile
import warnings
from dataclasses import asdict, dataclass

from kernelcast.errors import (
    KernelcastError,
    KernelcastWarning,
    MissingDependencyError,
    UsageError,
)

NVIDIA_OPENCL_LIBRARIES = (
    "/usr/local/nvidia/lib64/libnvidia-opencl.so.1",
    "/usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1",
    "/usr/lib64/libnvidia-opencl.so.1",
    "/usr/lib/libnvidia-opencl.so.1",
)

_registered = False


@dataclass(frozen=True)
class DeviceInfo:
    """One device as a backend sees it. ``index`` is the position in its platform."""

    backend: str  # "opencl" or "cuda"
    platform: str
    index: int
    name: str
    vendor: str
    driver: str
    kind: str  # "GPU", "CPU", ...
    compute_units: int
    clock_mhz: int
    global_mem_bytes: int
    max_alloc_bytes: int
    local_mem_bytes: int
    max_group_size: int
    instance: str = ""  # which physical device: pci:DOMAIN:BUS:DEVICE, else #INDEX

    @property
    def label(self) -> str:
        return f"{self.backend}:{self.platform}:{self.name}"

    @property
    def lock_name(self) -> str:
        """What its lock is named by: its name and instance (one lock per physical
        device, whatever the backend)."""
        return f"{self.name} {self.instance}" if self.instance else self.name

    def as_dict(self) -> dict:
        return asdict(self)


def _vendor_dir() -> str:
    """The folder of ICDs the loader reads now: OCL_ICD_VENDORS, else the system's."""
    current = os.environ.get("OCL_ICD_VENDORS")
    return current if current and os.path.isdir(current) else "/etc/OpenCL/vendors"


def _bundled_dirs() -> list[str]:
    """The ICDs shipped in pyopencl's wheel: its bundled loader reads them whatever
    OCL_ICD_VENDORS says, so they are never copied (that would list them twice)."""
    try:
        import pyopencl
    except ImportError:
        return []
    return [os.path.join(os.path.dirname(pyopencl.__file__), ".libs")]


def _icds(dirs) -> list[str]:
    return [icd for d in dirs for icd in sorted(glob.glob(os.path.join(d, "*.icd")))]


def register_nvidia_opencl() -> str | None:
    """Register NVIDIA's OpenCL driver with the ICD loader for this process when it is
    installed but not registered. Returns the vendors folder it made, or None."""
    global _registered
    if _registered:
        return os.environ.get("OCL_ICD_VENDORS")
    library = next((lib for lib in NVIDIA_OPENCL_LIBRARIES if os.path.exists(lib)), None)
    if library is None:
        return None
    bundled = {os.path.realpath(d) for d in _bundled_dirs()}
    # what our folder replaces; pyopencl's own ICDs are found without it
    icds = [icd for icd in _icds([_vendor_dir()])
            if os.path.realpath(os.path.dirname(icd)) not in bundled]
    for icd in _icds(dict.fromkeys([_vendor_dir(), "/etc/OpenCL/vendors", *_bundled_dirs()])):
        with open(icd, encoding="utf-8", errors="replace") as f:
            if "nvidia" in f.read().lower():
                return None
    folder = tempfile.mkdtemp(prefix="kernelcast-icd-")
    for icd in icds:
        shutil.copy(icd, os.path.join(folder, os.path.basename(icd)))
    with open(os.path.join(folder, "nvidia.icd"), "w", encoding="utf-8") as f:
        f.write(library + "\n")
    os.environ["OCL_ICD_VENDORS"] = folder
    _registered = True
    warnings.warn(f"NVIDIA's OpenCL driver ({library}) was not registered with the OpenCL "
                  f"ICD loader; kernelcast registered it for this process ({folder})",
                  KernelcastWarning, stacklevel=2)
    return folder


def pci_instance(domain: int, bus: int, device: int) -> str:
    """A PCI address as an instance: pci:0000:1b:00."""
    return f"pci:{domain:04x}:{bus:02x}:{device:02x}"


def _opencl_instance(device, index: int) -> str:
    try:  # cl_nv_device_attribute_query (NVIDIA's driver); others raise
        return pci_instance(device.pci_domain_id_nv, device.pci_bus_id_nv,
                            device.pci_slot_id_nv)
    except Exception:  # noqa: BLE001 - pyopencl raises LogicError, AttributeError, ...
        return f"#{index}"


def _cuda_instance(cupy, index: int, props: dict) -> str:
    """The PCI address of CUDA device *index* (cudaDeviceGetPCIBusId, else its
    properties), else #INDEX."""
    try:
        domain, bus, rest = cupy.cuda.runtime.deviceGetPCIBusId(index).split(":")
        return pci_instance(int(domain, 16), int(bus, 16), int(rest.split(".")[0], 16))
    except Exception:  # noqa: BLE001 - an old cupy, an odd string
        if "pciBusID" in props:
            return pci_instance(props.get("pciDomainID", 0), props["pciBusID"],
                                props.get("pciDeviceID", 0))
        return f"#{index}"


def _opencl_info(platform, index, device) -> DeviceInfo:
    import pyopencl as cl

    return DeviceInfo(
        backend="opencl", platform=platform.name.strip(), index=index,
        name=device.name.strip(), vendor=device.vendor.strip(),
        driver=device.driver_version.strip(),
        kind=cl.device_type.to_string(device.type), compute_units=device.max_compute_units,
        clock_mhz=device.max_clock_frequency, global_mem_bytes=device.global_mem_size,
        max_alloc_bytes=device.max_mem_alloc_size, local_mem_bytes=device.local_mem_size,
        max_group_size=device.max_work_group_size,
        instance=_opencl_instance(device, index))


def opencl_devices() -> list[DeviceInfo]:
    """Every OpenCL device the ICD loader offers; empty without pyopencl."""
    try:
        import pyopencl as cl
    except ImportError:
        return []
    register_nvidia_opencl()

    try:
        platforms = cl.get_platforms()
    except cl.Error:  # no ICD at all
        return []
    return [_opencl_info(p, i, d) for p in platforms for i, d in enumerate(p.get_devices())]


def cuda_devices() -> list[DeviceInfo]:
    """Every CUDA device cupy sees; empty without cupy or a driver."""
    try:
        import cupy
    except ImportError:
        return []
    try:
        count = cupy.cuda.runtime.getDeviceCount()
        driver = cupy.cuda.runtime.driverGetVersion()
    except Exception:  # noqa: BLE001 - cupy raises its own error types without a driver
        return []
    devices = []
    for i in range(count):
        props = cupy.cuda.runtime.getDeviceProperties(i)
        name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        devices.append(DeviceInfo(
            backend="cuda", platform="CUDA", index=i, name=name, vendor="NVIDIA Corporation",
            driver=f"CUDA {driver // 1000}.{driver % 1000 // 10}", kind="GPU",
            compute_units=props["multiProcessorCount"], clock_mhz=props["clockRate"] // 1000,
            global_mem_bytes=props["totalGlobalMem"], max_alloc_bytes=props["totalGlobalMem"],
            local_mem_bytes=props["sharedMemPerBlock"],
            max_group_size=props["maxThreadsPerBlock"],
            instance=_cuda_instance(cupy, i, props)))
    return devices


def list_devices() -> list[DeviceInfo]:
    return opencl_devices() + cuda_devices()


def find_device(substring: str | None = None, backend: str = "opencl") -> DeviceInfo:
    """The device of *backend* whose platform, name or instance contains *substring*
    (case-insensitive); the best one when *substring* is None."""
    if backend == "cuda":
        try:
            import cupy  # noqa: F401
        except ImportError:
            raise MissingDependencyError(
                "the CUDA backend needs cupy: pip install 'kernelcast[cuda]'") from None
        devices = cuda_devices()
    elif backend == "opencl":
        try:
            import pyopencl  # noqa: F401
        except ImportError:
            raise MissingDependencyError(
                "the OpenCL backend needs pyopencl: pip install pyopencl") from None
        devices = opencl_devices()
    else:
        raise UsageError(f"unknown backend {backend!r}; use opencl or cuda")
    if substring is None:
        return best_device(devices, backend)
    matches = [d for d in devices
               if substring.lower() in f"{d.platform} {d.name} {d.instance}".lower()]
    if not matches:
        known = "; ".join(f"{d.platform}: {d.name} ({d.instance})" for d in devices
                          ) or "none"
        raise UsageError(f"no {backend} device matches {substring!r}; devices: {known}")
    return matches[0]


def _devices(backend: str) -> list[DeviceInfo]:
    return cuda_devices() if backend == "cuda" else opencl_devices()


def siblings(device: DeviceInfo, backend: str | None = None) -> list[DeviceInfo]:
    """The devices of *backend* (default: *device*'s) identical to *device* (name,
    driver, compute units), *device* among them, in order of instance."""
    same = [d for d in _devices(backend or device.backend)
            if (d.name, d.driver, d.compute_units)
            == (device.name, device.driver, device.compute_units)]
    def order(d):
        local = d.instance.startswith("#")
        return (local, d.index if local else d.instance)

    return sorted(same, key=order) or [device]


def find_instance(instance: str, backend: str, name: str | None = None) -> DeviceInfo:
    """The device of *backend* that is *instance* (and named *name*, where given: #INDEX
    is an index within one platform), else a KernelcastError."""
    for d in _devices(backend):
        if d.instance == instance and name in (None, d.name):
            return d
    named = f" {name}" if name else ""
    raise KernelcastError(f"no {backend} device{named} is {instance} on this host")


def best_device(devices: list[DeviceInfo], backend: str = "opencl") -> DeviceInfo:
    """A GPU before anything else, then the most compute units × clock."""
    if not devices:
        raise KernelcastError(f"no {backend} device found; `kernelcast devices` lists what "
                              "the machine offers (scripts/setup.sh installs PoCL for the CPU)")
    return max(devices, key=lambda d: (d.kind == "GPU", d.compute_units * d.clock_mhz))
