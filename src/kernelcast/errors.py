"""Errors and warnings of kernelcast.

Every error kernelcast raises derives from :class:`KernelcastError`, so a caller can
catch one class; the subclasses name the kind of problem. Values the program had to
assume rather than know raise a :class:`KernelcastWarning` subclass instead of being
used silently.

Public names: KernelcastError, UsageError, NotALoopyKernelError, UnsupportedKernelError,
DtypeNotFixedError, ParameterError, DataDependentError, MissingDependencyError,
KernelcastWarning, UncountedWarning, AssumedValueWarning, SolverWarning, HardwareGuessWarning,
NotFittedError, StoreError, DeviceBusyError, KernelFileError, ProfileError,
SequentialKernelWarning, DamagedRowsWarning, ExtrapolationWarning,
DeviceMismatchWarning.
"""

from __future__ import annotations


class KernelcastError(Exception):
    """Root of every error raised by kernelcast."""


class UsageError(KernelcastError):
    """What the caller asked for cannot be done as asked: a bad argument, file or
    combination (the command line exits with status 2)."""


class NotALoopyKernelError(KernelcastError, TypeError):
    """The object given is not a Loopy kernel (TranslationUnit or LoopKernel)."""


class UnsupportedKernelError(KernelcastError):
    """A Loopy kernel uses a feature kernelcast cannot model (the message says which)."""


class DtypeNotFixedError(KernelcastError):
    """Some arguments have no dtype, so operations and accesses cannot be classified."""


class ParameterError(KernelcastError, ValueError):
    """Parameter values are missing, unknown, not integers, negative, or violate the
    kernel's assumptions."""


class DataDependentError(KernelcastError):
    """Control flow depends on data and no statistics were supplied for it."""


class MissingDependencyError(KernelcastError, ImportError):
    """An installed component is missing or built without a needed feature."""


class NotFittedError(KernelcastError):
    """A model was asked to predict before it was fitted or loaded from a profile."""


class StoreError(KernelcastError):
    """A measurement store cannot be opened, read or written (damaged, read-only, a full
    disk); the message says what was stored and whether resuming works."""


class DeviceBusyError(KernelcastError):
    """Another campaign holds the device's lock; the message names the holder."""


class KernelFileError(UsageError):
    """A kernel file (FILE.py:FACTORY) cannot be loaded or its factory fails."""


class ProfileError(UsageError):
    """A profile or hardware file cannot be read or does not describe what it should."""


class KernelcastWarning(UserWarning):
    """Root of kernelcast's warnings."""


class UncountedWarning(KernelcastWarning):
    """Something in the kernel falls outside the property vocabulary and is not counted."""


class AssumedValueWarning(KernelcastWarning):
    """kernelcast had to assume a value it could not determine."""


class SolverWarning(KernelcastWarning):
    """A fit's numerical solver stopped without converging; its weights may be off."""


class HardwareGuessWarning(KernelcastWarning):
    """A hardware parameter is a guess, not a measurement or a device report."""


class SequentialKernelWarning(KernelcastWarning):
    """A kernel has no parallel launch tags (no g.N or l.N iname): it runs as a single
    work-item, as when ``split_iname`` was forgotten; the message names the loops that
    could be tagged."""


class DamagedRowsWarning(KernelcastWarning):
    """Rows of a measurement store failed their checks (checksum, times, JSON) and were
    left out; the message says how many and names the first cases."""


class ExtrapolationWarning(KernelcastWarning):
    """A prediction lies outside what its model was fitted on (a feature beyond the
    training range, or a time that does not grow with the work); the message says which
    and by how much."""


class DeviceMismatchWarning(KernelcastWarning):
    """Numbers of one device are applied to or compared with another device's (a
    profile of one GPU judging another's profiler output); the message names both."""
