"""Kernel properties of the paper's model (§2-3): vocabulary, extraction, evaluation.

Public names: extract_properties, cached_properties, Properties, AccessInfo, PROPERTY_NAMES, UNITS.
"""

from kernelcast.properties.cache import cached_properties
from kernelcast.properties.extract import extract_properties
from kernelcast.properties.result import AccessInfo, Properties
from kernelcast.properties.vocabulary import PROPERTY_NAMES, UNITS

__all__ = ["PROPERTY_NAMES", "UNITS", "AccessInfo", "Properties", "cached_properties",
           "extract_properties"]
