"""kernelcast: predict how long a GPU compute kernel runs before running it.

Public names: extract_properties, Properties, AccessInfo, PROPERTY_NAMES, UNITS,
LinearModel, Profile, load_profile, predict, explain, and the errors and warnings of
kernelcast.errors. GPU libraries are imported only when a backend is made.
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

from kernelcast.version import __version__  # noqa: E402

from kernelcast.evaluate import explain, predict  # noqa: E402
from kernelcast.models.linear import LinearModel  # noqa: E402
from kernelcast.models.profile import Profile, load_profile  # noqa: E402

__all__ = [
    "PROPERTY_NAMES",
    "UNITS",
    "AccessInfo",
    "AssumedValueWarning",
    "DataDependentError",
    "DtypeNotFixedError",
    "KernelcastError",
    "KernelcastWarning",
    "LinearModel",
    "MissingDependencyError",
    "NotALoopyKernelError",
    "ParameterError",
    "Profile",
    "Properties",
    "UncountedWarning",
    "UnsupportedKernelError",
    "__version__",
    "explain",
    "extract_properties",
    "load_profile",
    "predict",
]
