"""An on-disk cache of extracted Properties, so that ranking many kernel variants extracts
each distinct variant once across runs.

An entry is one JSON file named by the SHA-256 of its key. The key holds the kernel's
digest (Loopy's persistent hash of a canonical copy of the kernel, see ``kernel_digest``)
or, for a kernel that kernelcast's own code makes from a name (``named_properties``), that
name; the data statistics, kernelcast's version and a digest of its source, Loopy's data-model
version (Loopy, islpy, cgen) and the entry format. The entry stores the whole key and a
read compares it, so a file never serves another kernel. It holds the isl strings of the
counts and assumptions, and the source of the evaluators that Properties compiled from
them (Properties keeps no isl form of the extent), so a hit evaluates with the very code
the extraction made; that source must name nothing but its parameters and locals before
it is compiled, and a count is read from its string only when ``symbolic`` asks for it,
on a hit and on the miss that wrote the entry alike (isl takes 20 ms to a second to read
a large one, longer than extracting it; ranking variants never asks). Writes go to a
temporary file in the cache folder and then os.replace, so readers and concurrent
writers of one key see a whole entry or none. An entry that fails its checks (UTF-8,
JSON, format, key, checksum, code) is deleted and extracted again; a folder that cannot
be read or written, or an entry's path that is not a regular file (a FIFO, which is
never opened, or a device: left as they are), only costs the caching, with one warning.
Warnings the extraction gave (UncountedWarning, ...) are not repeated on a hit.

Public names: cached_properties, named_properties, kernel_digest, default_cache_dir,
FORMAT_VERSION.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import warnings
from collections.abc import Mapping
from fractions import Fraction
from functools import lru_cache
from pathlib import Path

import islpy as isl
import loopy as lp
import pymbolic
from loopy.kernel.array import ArrayBase
from loopy.kernel.function_interface import CallableKernel
from loopy.symbolic import IdentityMapper
from loopy.tools import LoopyKeyBuilder
from loopy.version import DATA_MODEL_VERSION
from pymbolic.primitives import Product, Sum

from kernelcast.errors import KernelcastError, KernelcastWarning, NotALoopyKernelError
from kernelcast.frontends.files import check_regular_file, read_regular_file
from kernelcast.properties.compiled import LazyEvaluator, compile_source
from kernelcast.properties.extract import extract_properties
from kernelcast.properties.result import AccessInfo, Properties
from kernelcast.version import __version__

FORMAT_VERSION = 1

_warned_dirs: set[str] = set()

# what reading a damaged entry raises (bad JSON is a ValueError)
_DAMAGE = (ValueError, KeyError, TypeError, IndexError, AttributeError, SyntaxError, isl.Error)


def default_cache_dir() -> Path:
    """``$KERNELCAST_CACHE_DIR``, else ``$XDG_CACHE_HOME/kernelcast/properties``, else
    ``~/.cache/kernelcast/properties``."""
    if os.environ.get("KERNELCAST_CACHE_DIR"):
        return Path(os.environ["KERNELCAST_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "kernelcast" / "properties"


def cached_properties(knl, *, data_statistics: dict | None = None,
                      cache_dir: str | os.PathLike | None = None) -> Properties:
    """The Properties of *knl* (as ``extract_properties`` gives them): read from the cache
    in *cache_dir* (default: ``default_cache_dir()``) when an entry exists, else
    extracted and stored there.

    A first call returns the Properties as read back from the entry it wrote, so a hit
    and a miss give equal Properties, symbolic forms included: isl may print a count read
    from its string with a piece's disjuncts in another order than the count it came from.
    Either way a count is read from its string when ``symbolic`` first asks for it.
    """
    try:
        key = _key(knl, data_statistics)
    except TypeError as err:  # not a Loopy kernel, or parts Loopy's key builder can't hash
        if isinstance(knl, (lp.TranslationUnit, lp.LoopKernel)):
            warnings.warn(f"kernel {knl.name!r} has no cache key ({err}); extracting "
                          "without the properties cache", KernelcastWarning, stacklevel=2)
        return extract_properties(knl, data_statistics=data_statistics)
    return _through_cache(key, lambda: extract_properties(knl, data_statistics=data_statistics),
                          cache_dir)


def named_properties(name: list, build, *, cache_dir: str | os.PathLike | None = None
                     ) -> Properties:
    """The Properties of the kernel ``build()`` makes, cached under *name* (a list of
    strings) in place of the kernel's digest: for kernels that kernelcast's own code makes
    from their name alone (its suites' cases, its tuning families' variants), whose
    entries the digest of that code in the key keeps current. A hit builds no kernel: a
    hundredth of the time."""
    key = {**_code_key(), "name": [str(part) for part in name], "statistics": []}
    return _through_cache(key, lambda: extract_properties(build()), cache_dir)


def _through_cache(key: dict, extract, cache_dir) -> Properties:
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    path = folder / f"{_file_name(key)}.json"
    props = _read(path, key)
    if props is not None:
        return props
    props = extract()
    try:
        encoded = _encode(props)
        text = json.dumps({"format": FORMAT_VERSION, "key": key,
                           "checksum": _checksum(encoded), "properties": encoded},
                          sort_keys=True)
        # the entry as a hit reads it, with the extraction's own evaluators (their source
        # is the entry's): compiled when first called, and the counts read from their
        # strings when symbolic first asks (isl takes up to a second to read the counts
        # of a large kernel, far longer than extracting them)
        decoded = _decode(json.loads(text)["properties"], evaluators=props)
    except _DAMAGE:  # not representable: return it uncached
        return props
    _write(path, text)
    return decoded


# {{{ key

def _key(knl, data_statistics: dict | None) -> dict:
    """The cache key of *knl* with *data_statistics*: plain JSON data, equal in every
    process (whatever PYTHONHASHSEED) for equal kernels; TypeError if there is none."""
    return {**_code_key(), "kernel": kernel_digest(knl),
            "statistics": _statistics_key(data_statistics)}


def _code_key() -> dict:
    """The part of a key that names the code: the entry format, kernelcast's version and
    source, Loopy's data model and pymbolic's version."""
    return {"format": FORMAT_VERSION, "kernelcast": __version__,
            "kernelcast_source": _source_digest(), "loopy": DATA_MODEL_VERSION,
            "pymbolic": pymbolic.__version__}


def kernel_digest(knl) -> str:
    """Loopy's persistent hash of a canonical copy of *knl* (a TranslationUnit or a
    LoopKernel, which hashes as its one-kernel TranslationUnit).

    Loopy builds the same kernel differently in different processes: the parameters of
    domains and assumptions come in set-iteration order, and prefetches write index sums
    in either order (``i_inner + 16*i_outer`` or ``16*i_outer + i_inner``), so its hash
    of the kernel as built changed with PYTHONHASHSEED for 40 to 103 of the 234 suite and
    test kernels, seed against seed. The canonical copy orders parameters by name and the
    terms of sums and products by their own hash; neither changes what is counted.
    """
    if isinstance(knl, lp.LoopKernel):
        knl = lp.make_program(knl).with_entrypoints(knl.name)
    if not isinstance(knl, lp.TranslationUnit):
        raise NotALoopyKernelError(f"expected a Loopy kernel, got {type(knl).__name__}")
    try:
        canonical = knl
        for clbl in knl.callables_table.values():
            if isinstance(clbl, CallableKernel):
                canonical = canonical.with_kernel(_canonical_kernel(clbl.subkernel))
    except Exception:  # noqa: BLE001 - a node the canonical copy can't map: hash as built
        canonical = knl
    return LoopyKeyBuilder()(canonical)


def _canonical_kernel(knl: lp.LoopKernel) -> lp.LoopKernel:
    order = _CommutativeOrder()
    return knl.copy(
        domains=[_sorted_params(d) for d in knl.domains],
        assumptions=_sorted_params(knl.assumptions),
        instructions=[insn.with_transformed_expressions(order)
                      for insn in knl.instructions],
        substitutions={name: rule.copy(expression=order(rule.expression))
                       for name, rule in knl.substitutions.items()},
        args=[a.map_exprs(order) if isinstance(a, ArrayBase) else a for a in knl.args],
        temporary_variables={name: tv.map_exprs(order)
                             for name, tv in knl.temporary_variables.items()})


def _sorted_params(bset):
    names = sorted(bset.get_var_names(isl.dim_type.param))
    return bset.align_params(isl.Space.create_from_names(bset.get_ctx(), set=[],
                                                         params=names).params())


class _CommutativeOrder(IdentityMapper):
    """Orders the terms of sums and the factors of products by their persistent hash."""

    def map_sum(self, expr, *args, **kwargs):
        return Sum(_by_hash(self.rec(c, *args, **kwargs) for c in expr.children))

    def map_product(self, expr, *args, **kwargs):
        return Product(_by_hash(self.rec(c, *args, **kwargs) for c in expr.children))


def _by_hash(children) -> tuple:
    return tuple(sorted(children, key=LoopyKeyBuilder()))


def _statistics_key(statistics: dict | None) -> list:
    items = sorted((statistics or {}).items(), key=lambda kv: str(kv[0]))
    if any(not isinstance(k, str) for k, _ in items):
        raise TypeError("data statistics need string names")
    return [[k, _number(v)] for k, v in items]


def _number(value) -> list:
    """A tagged, exact JSON form of an int, float or Fraction (as data statistics are)."""
    if isinstance(value, bool):
        raise TypeError(f"not a number: {value!r}")
    if isinstance(value, int):
        return ["int", int(value)]
    if isinstance(value, float):
        return ["float", float(value).hex()]
    if isinstance(value, Fraction):
        return ["fraction", str(value)]
    raise TypeError(f"not a number: {value!r}")


def _from_number(tagged):
    kind, value = tagged
    return {"int": int, "float": float.fromhex, "fraction": Fraction}[kind](value)


@lru_cache(maxsize=1)
def _source_digest() -> str:
    """SHA-256 of kernelcast's own .py files: a checkout whose code changed (the version
    string stays put between releases) does not read entries an older extraction wrote."""
    root = Path(__file__).resolve().parents[1]
    sha = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        sha.update(path.relative_to(root).as_posix().encode() + b"\0")
        sha.update(path.read_bytes() + b"\0")
    return sha.hexdigest()


def _file_name(key: dict) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()

# }}}


# {{{ entries

def _read(path: Path, key: dict) -> Properties | None:
    if not path.parent.is_dir():
        return None  # a miss; _write says why there can be no cache
    try:
        data = read_regular_file(path, "properties cache entry", KernelcastError)
    except KernelcastError as err:  # unreadable, or not a regular file: left as it is
        _warn_once(path.parent, f"cannot read the properties cache: {err}")
        return None
    if data is None:
        return None
    try:
        entry = json.loads(data.decode("utf-8"))  # UnicodeDecodeError is a ValueError
        if entry["format"] != FORMAT_VERSION:
            raise ValueError(f"format {entry['format']}, not {FORMAT_VERSION}")
        if entry["key"] != key:
            raise ValueError("its key is not the kernel's")
        if entry["checksum"] != _checksum(entry["properties"]):
            raise ValueError("its checksum does not match")
        return _decode(entry["properties"])
    except _DAMAGE as err:
        warnings.warn(f"damaged properties cache entry {path} ({type(err).__name__}: "
                      f"{err}); deleted, extracting again", KernelcastWarning, stacklevel=3)
        try:
            path.unlink()
        except OSError:
            pass
        return None


def _write(path: Path, text: str) -> None:
    try:  # a FIFO or device at the entry's path is not replaced
        check_regular_file(path, "properties cache entry", KernelcastError)
    except KernelcastError as err:
        _warn_once(path.parent, f"cannot write the properties cache {path.parent} "
                   f"({err}); extracting without caching")
        return
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent,
                                         prefix=".tmp-", delete=False) as f:
            tmp = f.name
            f.write(text)
        os.replace(tmp, path)
    except OSError as err:
        _warn_once(path.parent, f"cannot write the properties cache {path.parent} "
                   f"({err}); extracting without caching")
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _warn_once(folder: Path, message: str) -> None:
    if str(folder) not in _warned_dirs:
        _warned_dirs.add(str(folder))
        warnings.warn(message, KernelcastWarning, stacklevel=4)


def _checksum(properties: dict) -> str:
    return hashlib.sha256(json.dumps(properties, sort_keys=True).encode()).hexdigest()


def _encode(props: Properties) -> dict:
    sources = {"evaluate": props._fn.source, "assumptions_hold": props._guard.source,
               "extent": None if props._extent_fn is None else props._extent_fn.source}
    local_memory = []
    for shape, itemsize in props.local_memory:
        dims = [str(n) for n in shape]
        if tuple(pymbolic.parse(d) for d in dims) != tuple(shape):
            raise ValueError(f"local-memory shape {shape} does not read back")
        local_memory.append([dims, int(itemsize)])
    return {
        "kernel_name": props.kernel_name,
        "names": list(props.names),
        "params": list(props.params),
        "arg_names": list(props._arg_names),
        "counts": {n: str(c) for n, c in props._counts.items()},
        "count_order": list(props._base_names),
        "minls": {n: list(pair) for n, pair in props._minls.items()},
        "extent_names": list(props._extent_names),
        "sources": sources,
        "assumptions": str(props._assumptions),
        "statistics": _statistics_key(props.statistics),
        "reference": {k: int(v) for k, v in props.reference.items()},
        "accesses": [[a.instruction, a.array, a.direction, a.bits, a.stride,
                      None if a.utilization is None else str(a.utilization),
                      a.stride_class] for a in props.accesses],
        "local_memory": local_memory,
    }


def _decode(d: dict, evaluators: Properties | None = None) -> Properties:
    """The Properties an entry holds, with the extracted Properties' own evaluators and
    its isl counts read when first asked for. It sets the attributes that
    Properties.__init__ sets (which would make the evaluators again from isl objects);
    tests/test_properties_cache.py checks that the two sets of attributes agree.
    *evaluators*: the Properties the entry was just made from, whose evaluators (of the
    very source the entry holds) are taken instead of compiling the entry's source."""
    arg_names = tuple(d["arg_names"])
    props = Properties.__new__(Properties)
    props.kernel_name = d["kernel_name"]
    props.local_memory = tuple((tuple(pymbolic.parse(n) for n in dims), int(itemsize))
                               for dims, itemsize in d["local_memory"])
    props.params = tuple(d["params"])
    props.statistics = {k: _from_number(v) for k, v in d["statistics"]}
    props.reference = {k: int(v) for k, v in d["reference"].items()}
    props.accesses = tuple(
        AccessInfo(insn, array, direction, int(bits), None if stride is None else int(stride),
                   None if util is None else Fraction(util), stride_class)
        for insn, array, direction, bits, stride, util, stride_class in d["accesses"])
    props._counts = _LazyCounts(dict(d["counts"]))
    props._minls = {n: (load, store) for n, (load, store) in d["minls"].items()}
    props.names = tuple(d["names"])
    props._assumptions = isl.BasicSet.read_from_str(isl.DEFAULT_CONTEXT, d["assumptions"])
    props._arg_names = arg_names
    props._base_names = base = tuple(d["count_order"])
    if sorted(base) != sorted(d["counts"]):
        raise ValueError("the evaluator's counts are not the entry's")
    props._minls_index = [(n, base.index(a), base.index(b))
                          for n, (a, b) in props._minls.items()]
    props._extent_names = tuple(d["extent_names"])
    extent = d["sources"]["extent"]
    if evaluators is not None:
        for attr in ("_fn", "_extent_fn", "_guard"):
            fn = getattr(evaluators, attr)
            setattr(props, attr, fn.for_owner(props, attr)
                    if isinstance(fn, LazyEvaluator) else fn)
        return props
    props._fn = _compiled(d["sources"]["evaluate"], "evaluate", arg_names)
    props._extent_fn = None if extent is None else _compiled(extent, "extent", arg_names)
    props._guard = _compiled(d["sources"]["assumptions_hold"], "assumptions_hold", arg_names)
    return props


class _LazyCounts(Mapping):
    """Counts by name, each read from its isl string on first use."""

    def __init__(self, strings: dict[str, str]):
        self._strings = strings
        self._read: dict[str, isl.PwQPolynomial] = {}

    def __getitem__(self, name):
        if name not in self._read:
            self._read[name] = isl.PwQPolynomial.read_from_str(isl.DEFAULT_CONTEXT,
                                                               self._strings[name])
        return self._read[name]

    def __iter__(self):
        return iter(self._strings)

    def __len__(self):
        return len(self._strings)


_KEYWORDS = {"def", "return", "if", "else", "and", "or", "not", "True", "False"}
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LOCAL = re.compile(r"_d[0-9]+")  # compile_evaluator's shared floor divisions and powers
_FORBIDDEN = set(".[]{}'\"\\@;:#`")


def _compiled(source: str, name: str, arg_names: tuple[str, ...]):
    """Compile an evaluator that compile_evaluator wrote, after checking that *source* is
    the function ``name(*arg_names)`` and names nothing but its parameters, its locals and
    Python keywords of arithmetic and conditionals, with no attribute, item, string or
    lambda in it (ValueError otherwise): an entry holds data, never code to run. (A walk
    of the syntax tree checked the same at ten times the cost.)"""
    head = f"def {name}({', '.join(arg_names)}):\n"
    if not source.startswith(head) or _FORBIDDEN.intersection(source[len(head):]):
        raise ValueError(f"the {name} evaluator is not one of arithmetic")
    allowed = {name, *arg_names, *_KEYWORDS}
    for word in _IDENTIFIER.findall(source):
        if word not in allowed and not _LOCAL.fullmatch(word):
            raise ValueError(f"the {name} evaluator names {word!r}")
    return compile_source(source, name)

# }}}
