"""Kernel properties of the paper's model (§2-3): vocabulary, extraction, evaluation.

Public names: extract_properties, cached_properties, Properties, AccessInfo, PROPERTY_NAMES, UNITS.
Each is imported on first use (PEP 562): the vocabulary needs no Loopy, and every command
line builds its parser from models that name it.
"""

import importlib

_WHERE = {"cached_properties": "cache", "extract_properties": "extract",
          "AccessInfo": "result", "Properties": "result", "PROPERTY_NAMES": "vocabulary",
          "UNITS": "vocabulary"}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted([*globals(), *_WHERE])
