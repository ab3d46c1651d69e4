"""Shared fixtures: a real OpenCL backend on PoCL, the CPU device CI has."""

import pytest

from kernelcast.measure.backends import OpenCLBackend
from kernelcast.measure.devices import opencl_devices


@pytest.fixture(scope="session")
def pocl():
    """The OpenCL backend on PoCL's CPU device; fails (never skips) when PoCL is missing,
    because OpenCL code is tested for real."""
    for device in opencl_devices():
        if "portable computing language" in device.platform.lower():
            return OpenCLBackend(device)
    pytest.fail("no PoCL device found; run scripts/setup.sh (it installs PoCL)")
