"""kernelcast: predict how long a GPU compute kernel runs before running it.

Public names: extract_properties, Properties, AccessInfo, PROPERTY_NAMES, UNITS, and the
errors and warnings of kernelcast.errors.
"""

from kernelcast.errors import (
    AssumedValueWarning,
    DataDependentError,
    DtypeNotFixedError,
    KernelcastError,
    KernelcastWarning,
    MissingDependencyError,
    NotALoopyKernelError,
    ParameterError,
    UncountedWarning,
    UnsupportedKernelError,
)
from kernelcast.properties import PROPERTY_NAMES, UNITS, AccessInfo, Properties, extract_properties

__version__ = "0.1.0"

__all__ = [
    "PROPERTY_NAMES",
    "UNITS",
    "AccessInfo",
    "AssumedValueWarning",
    "DataDependentError",
    "DtypeNotFixedError",
    "KernelcastError",
    "KernelcastWarning",
    "MissingDependencyError",
    "NotALoopyKernelError",
    "ParameterError",
    "Properties",
    "UncountedWarning",
    "UnsupportedKernelError",
    "__version__",
    "extract_properties",
]
