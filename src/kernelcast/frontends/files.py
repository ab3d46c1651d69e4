"""Files users name on the command line: kernels as ``path/to/file.py:FACTORY``, and the
JSON files (profiles, hardware descriptions, registers) that kernelcast reads.

Every failure is a one-line error that names the file: a kernel file that is not a .py
file, that cannot be imported (a syntax error, an exception or an ImportError inside it),
a factory that is missing, needs arguments, raises or returns something that is not a
Loopy kernel (KernelFileError); a JSON file that is missing, a directory, unreadable,
binary, not UTF-8, not JSON or a measurement store (ProfileError). Errors raised by the
user's code keep it as their ``__cause__``, so ``kernelcast --debug`` can print its
traceback.

Public names: load_factory, build_kernel, load_kernel, read_json_file, read_toml_file,
describe_os_error, SQLITE_MAGIC.
"""

from __future__ import annotations

import errno
import importlib.util
import inspect
import json
import os
import sys
from pathlib import Path

from kernelcast.errors import KernelFileError, ProfileError, UsageError

SQLITE_MAGIC = b"SQLite format 3\x00"
_DEBUG_HINT = "(run with --debug for the traceback)"


def describe_os_error(err: OSError) -> str:
    """What went wrong, in words, without the errno prefix: "permission denied"."""
    if isinstance(err, FileNotFoundError):
        return "no such file or directory"
    if isinstance(err, IsADirectoryError):
        return "is a directory"
    if isinstance(err, NotADirectoryError):
        return "a part of the path is not a directory"
    if isinstance(err, PermissionError):
        return "permission denied"
    if err.errno == errno.ENAMETOOLONG:
        return "file name too long"
    if err.errno == errno.ENOSPC:
        return "no space left on the device"
    return (err.strerror or str(err) or type(err).__name__).lower()


def _one_line(text: str) -> str:
    return "; ".join(line.strip() for line in str(text).splitlines() if line.strip())


def _raised(err: BaseException) -> str:
    message = _one_line(err)
    return f"{type(err).__name__}: {message}" if message else type(err).__name__


def _stat(path: Path, error=KernelFileError):
    try:
        return path.stat()
    except FileNotFoundError:
        raise error(f"no such file: {path}") from None
    except ValueError as err:  # an embedded NUL character
        raise error(f"{path!r}: not a file name: {err}") from None
    except OSError as err:
        raise error(f"{path}: {describe_os_error(err)}") from None


def load_factory(spec: str):
    """Load ``path/to/file.py:factory`` and return the callable named *factory*.

    Raises KernelFileError naming the file for a spec that is not FILE.py:FACTORY, a file
    that is missing, not a .py file or fails to import, and a missing factory."""
    if not isinstance(spec, str):
        raise UsageError(f"a kernel is named as FILE.py:FACTORY, got {type(spec).__name__}")
    path_str, sep, attr = spec.rpartition(":")
    if not sep or not path_str or not attr:
        raise KernelFileError(f"expected FILE.py:FACTORY, got {spec!r}")
    path = Path(path_str)
    if path.suffix != ".py":
        raise KernelFileError(f"{path}: a kernel file is a Python file whose name ends in "
                              f".py (FILE.py:FACTORY)")
    import stat

    info = _stat(path)
    if stat.S_ISDIR(info.st_mode):
        raise KernelFileError(f"{path} is a directory, not a Python file")
    if not stat.S_ISREG(info.st_mode):
        raise KernelFileError(f"{path} is not a regular file")
    if not attr.isidentifier():
        raise KernelFileError(f"{path}: {attr!r} is not a Python name (FILE.py:FACTORY)")
    try:
        source = path.read_bytes()
    except OSError as err:
        raise KernelFileError(f"{path}: cannot read it: {describe_os_error(err)}") from None
    if b"\x00" in source:
        raise KernelFileError(f"{path} is a binary file, not Python source")
    module_name = f"kernelcast_user_{abs(hash(path.resolve()))}"
    spec_obj = importlib.util.spec_from_file_location(module_name, path)
    if spec_obj is None or spec_obj.loader is None:
        raise KernelFileError(f"{path}: Python cannot import it as a module")
    module = importlib.util.module_from_spec(spec_obj)
    sys.modules[module_name] = module
    try:
        spec_obj.loader.exec_module(module)
    except SyntaxError as err:
        sys.modules.pop(module_name, None)
        where = f"{path}:{err.lineno}" if err.lineno else str(path)
        raise KernelFileError(f"{where}: syntax error: {_one_line(err.msg)}") from err
    except (Exception, SystemExit) as err:  # noqa: BLE001 - the user's code
        sys.modules.pop(module_name, None)
        raise KernelFileError(f"{path}: importing it raised {_raised(err)} "
                              f"{_DEBUG_HINT}") from err
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise KernelFileError(f"{path} has no callable named {attr!r}")
    return factory


def _required_arguments(factory) -> list[str]:
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # builtins and the like: call them and see
        return []
    return [name for name, p in signature.parameters.items()
            if p.default is p.empty
            and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def build_kernel(factory, spec: str):
    """Call *factory* (from ``load_factory(spec)``) and return the Loopy kernel it makes,
    as a TranslationUnit (a LoopKernel becomes one with itself as the entry point).

    Raises KernelFileError naming *spec* where the factory needs arguments, raises (the
    exception is the error's ``__cause__``) or returns something that is not a Loopy
    kernel (a TranslationUnit or LoopKernel)."""
    import loopy as lp

    required = _required_arguments(factory)
    if required:
        raise KernelFileError(f"{spec} needs arguments ({', '.join(required)}); a kernel "
                              "factory is called without any")
    try:
        knl = factory()
    except (Exception, SystemExit) as err:  # noqa: BLE001 - the user's code
        raise KernelFileError(f"{spec} raised {_raised(err)} {_DEBUG_HINT}") from err
    if isinstance(knl, lp.LoopKernel):
        return lp.make_program(knl).with_entrypoints(knl.name)
    if not isinstance(knl, lp.TranslationUnit):
        raise KernelFileError(f"{spec} returned {type(knl).__module__}."
                              f"{type(knl).__qualname__}, not a Loopy kernel (make one "
                              "with loopy.make_kernel)")
    return knl


def load_kernel(spec: str):
    """The Loopy kernel that the factory of ``FILE.py:FACTORY`` *spec* returns."""
    return build_kernel(load_factory(spec), spec)


def read_json_file(path, what: str, error=ProfileError,
                   invalid: str = "{path} is not a JSON {what}"):
    """The JSON document in the file at *path*, which should hold *what* ("profile",
    "hardware description"); every failure is an *error* that names the file. *invalid*
    begins the message for a file that is not JSON text."""
    if not isinstance(path, (str, os.PathLike)):
        raise UsageError(f"a {what} is given as a path to a JSON file, got "
                         f"{type(path).__name__}")
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise error(f"no {what} at {path}") from None
    except IsADirectoryError:
        raise error(f"{path} is a directory, not a {what}") from None
    except ValueError as err:  # an embedded NUL character
        raise error(f"{path!r}: not a file name: {err}") from None
    except OSError as err:
        raise error(f"{path}: cannot read the {what}: {describe_os_error(err)}") from None
    if data.startswith(SQLITE_MAGIC):
        raise error(f"{path} is a measurement store, not a {what}; did you mean --db?")
    bad = invalid.format(path=path, what=what)
    if not data.strip():
        raise error(f"{bad}: the file is empty")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise error(f"{bad}: not UTF-8 text (a binary file?)") from None
    try:
        return json.loads(text)
    except RecursionError:
        raise error(f"{bad}: nested too deeply") from None
    except ValueError as err:  # JSONDecodeError, or an integer of too many digits
        raise error(f"{bad}: {_one_line(err)}") from None


def read_toml_file(path, what: str) -> dict:
    """The TOML document in the file at *path*, which should be a *what* ("hints file",
    "space file"); every failure is a UsageError that names the file."""
    import tomllib

    where = str(path)
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{where}: no such {what}") from None
    except IsADirectoryError:
        raise UsageError(f"{where}: is a folder, not a {what}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{where}: cannot read the {what}: not UTF-8 text") from None
    except OSError as err:
        raise UsageError(f"{where}: cannot read the {what}: "
                         f"{describe_os_error(err)}") from None
    except tomllib.TOMLDecodeError as err:
        raise UsageError(f"{where}: not a TOML {what}: {err}") from None
