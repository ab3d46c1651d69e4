"""Kernels named on the command line: ``path/to/file.py:FACTORY``.

Public names: load_factory.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from kernelcast.errors import UsageError


def load_factory(spec: str):
    """Load ``path/to/file.py:factory`` and return the callable named *factory*."""
    path_str, sep, attr = spec.rpartition(":")
    if not sep or not path_str or not attr:
        raise UsageError(f"expected FILE.py:FACTORY, got {spec!r}")
    path = Path(path_str)
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    module_name = f"kernelcast_user_{abs(hash(path.resolve()))}"
    spec_obj = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec_obj)
    sys.modules[module_name] = module
    spec_obj.loader.exec_module(module)
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise UsageError(f"{path} has no callable named {attr!r}")
    return factory
