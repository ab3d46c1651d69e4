"""Files users name on the command line: kernels as ``path/to/file.py:FACTORY``, and the
JSON files (profiles, hardware descriptions, registers) that kernelcast reads.

Every failure is a one-line error that names the file: a kernel file that is not a .py
file, that cannot be imported (a syntax error, an exception or an ImportError inside it),
a factory that is missing, needs arguments, raises or returns something that is not a
Loopy kernel (KernelFileError); a JSON file that is missing, a directory, unreadable,
binary, not UTF-8, not JSON, nested too deeply or a measurement store (ProfileError).
Errors raised by the user's code keep it as their ``__cause__``, so ``kernelcast --debug``
can print its traceback.

Every path kernelcast reads or writes as a file passes ``check_regular_file`` first, and
readers read through ``read_regular_file``: anything but a regular file (a directory, a
FIFO, a device node, a socket) is refused with one line naming it, and never opened,
created over or removed.

Public names: load_factory, build_kernel, load_kernel, read_json_file, read_toml_file,
check_regular_file, read_regular_file, describe_os_error, SQLITE_MAGIC.
"""

from __future__ import annotations

import errno
import importlib.util
import inspect
import json
import os
import stat
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


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def _a(what: str) -> str:
    """*what* with its indefinite article: "a skeleton", "an OpenCL source"."""
    return f"{'an' if what[:1].lower() in 'aeiou' else 'a'} {what}"


def _kind(mode: int) -> str:
    return next((words for test, words in _KINDS if test(mode)), "not a regular file")


def _file_on_the_way(path: Path) -> Path:
    """The first ancestor of *path* that is a file rather than a directory."""
    for ancestor in reversed(path.parents):
        if ancestor.exists() and not ancestor.is_dir():
            return ancestor
    return path.parent


def check_regular_file(path, what: str, error=UsageError) -> os.stat_result | None:
    """The ``os.stat`` of *path* (symbolic links followed) where it is a regular file;
    None where nothing is there. Anything else is an *error* naming *path* and what it is
    ("… is a FIFO (named pipe), not a profile"), as is a path that cannot be looked at.
    *path* is not opened: opening a FIFO waits for a writer forever, and writing to,
    replacing or removing a device node acts on the machine (root's /dev/null)."""
    if not isinstance(path, (str, os.PathLike)):  # os.stat takes an int as a descriptor
        raise UsageError(f"a {what} is given as a path, got {type(path).__name__}")
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise error(f"{path}: {_file_on_the_way(Path(path))} is not a directory") from None
    except ValueError as err:  # an embedded NUL character
        raise error(f"{path!r}: not a file name: {err}") from None
    except OSError as err:
        raise error(f"{path}: {describe_os_error(err)}") from None
    if not stat.S_ISREG(info.st_mode):
        raise error(f"{path} is {_kind(info.st_mode)}, not {_a(what)}")
    return info


def read_regular_file(path, what: str, error=UsageError, limit: int = -1) -> bytes | None:
    """The bytes of the regular file at *path* (its first *limit* bytes, where given), or
    None where nothing is there; what ``check_regular_file`` refuses and a failed read
    are an *error* naming *path*. It is opened without blocking and checked again once
    open, so that a FIFO put there in between cannot hang the reader."""
    if check_regular_file(path, what, error) is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise error(f"{path}: cannot read the {what}: {describe_os_error(err)}") from None
    with os.fdopen(fd, "rb") as f:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise error(f"{path} is {_kind(mode)}, not {_a(what)}")
        try:
            return f.read(limit)
        except OSError as err:
            raise error(f"{path}: cannot read the {what}: {describe_os_error(err)}"
                        ) from None


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
    if check_regular_file(path, "Python file", KernelFileError) is None:
        raise KernelFileError(f"no such file: {path}")
    if not attr.isidentifier():
        raise KernelFileError(f"{path}: {attr!r} is not a Python name (FILE.py:FACTORY)")
    source = read_regular_file(path, "Python file", KernelFileError)
    if source is None:
        raise KernelFileError(f"no such file: {path}")
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
    data = read_regular_file(path, what, error)
    if data is None:
        raise error(f"no {what} at {path}")
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
        return json.loads(text, parse_int=_int64)
    except RecursionError:
        raise error(f"{bad}: nested too deeply") from None
    except _TooLarge as err:
        line = text.count("\n", 0, text.find(err.digits)) + 1
        raise error(f"{bad}: line {line}: the integer {err.digits[:20]}... "
                    f"({len(err.digits)} digits) is beyond 64 bits") from None
    except ValueError as err:  # JSONDecodeError, or an integer of too many digits
        raise error(f"{bad}: {_one_line(err)}") from None


class _TooLarge(ValueError):
    def __init__(self, digits: str):
        super().__init__(digits)
        self.digits = digits


def _int64(text: str) -> int:
    """A JSON integer, refused beyond 64 bits: no count or size kernelcast reads is larger,
    and a larger one would overflow where it is converted to a float."""
    if len(text.lstrip("-")) > 20 or abs(int(text)) >= 2**64:
        raise _TooLarge(text)
    return int(text)


def read_toml_file(path, what: str) -> dict:
    """The TOML document in the file at *path*, which should be a *what* ("hints file",
    "space file"); every failure is a UsageError that names the file."""
    import tomllib

    data = read_regular_file(path, what)
    if data is None:
        raise UsageError(f"{path}: no such {what}")
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise UsageError(f"{path}: cannot read the {what}: not UTF-8 text") from None
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise UsageError(f"{path}: not a TOML {what}: nested too deeply") from None
    except tomllib.TOMLDecodeError as err:
        raise UsageError(f"{path}: not a TOML {what}: {err}") from None


def json_kind(value) -> str:
    """What a JSON value is, with its article, for messages: "null", "a list", "a number
    (5)", "a string ('x')"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int | float):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return f"a string ({value[:40]!r})"
    return "a list" if isinstance(value, list) else "an object"
