"""Shared fixtures: a real OpenCL queue on PoCL, the CPU device CI has."""

import pyopencl as cl
import pytest


@pytest.fixture(scope="session")
def pocl_queue():
    """A command queue on PoCL's CPU device; fails (never skips) when PoCL is missing,
    because OpenCL code is tested for real."""
    for platform in cl.get_platforms():
        if "portable computing language" in platform.name.lower():
            devices = platform.get_devices(device_type=cl.device_type.CPU)
            if devices:
                return cl.CommandQueue(cl.Context([devices[0]]))
    pytest.fail("no PoCL CPU device found; run scripts/setup.sh (it installs PoCL)")
