"""Fuzzing kernelcast's command line: seeded random invocations of every verb (but
``models``, whose one input is its flags: tests/test_model_parameters.py) with
malformed sizes and statistics, bad and non-regular paths (a FIFO, a character device),
and every input kind damaged: profiles of every model (paper, extended, Hong–Kim,
learned, Pöppl–Herz, criteria), hardware and registers files and measurement stores
(here); kernel files (fuzz_loopy), GROPHECY code skeletons and hints (fuzz_skeletons),
OpenCL C source (fuzz_opencl), Nsight Compute CSVs (fuzz_ncu) and search spaces
(fuzz_tune). Damage is structural (a field of another type, deleted, renamed), numeric
extremes (1e308, 5e-324, -1, 0, NaN, Infinity, a string where a number is), nesting
thousands deep, and bytes (truncated, flipped, random, a byte-order mark).

Each invocation runs in a forked child and is judged (fuzz_run: ``run``, ``judge``):
exit status 0, 1 or 2; no death by a signal, no hang; no traceback, no internal error;
a failure ends in exactly one "kernelcast: error: ..." line; no warning printed twice; no
NaN, infinity or negative time in the output; every input file left as it was; and
(``fuzz``) nothing under data/ changed. Findings whose cause lies in code being fixed
elsewhere are listed in KNOWN_ELSEWHERE and counted apart.

Costly invocations are budgeted (``Budget``): real fits, evaluations and reports, full
GROPHECY searches, advise's figures, and real measurements on this machine's device
(``measure`` of one kernel, ``tune`` of a space of a few variants); otherwise ``measure``,
``calibrate``, ``demo`` and ``tune`` get a device name no device has, and ``evaluate``
always gets ``--no-measure``.

tests/test_fuzz.py runs a bounded fuzz; benchmarks/fuzz.py a larger one with a summary.

Public names: Workspace, Budget, Result, generate, run, judge, fuzz, warm, data_snapshot,
KNOWN_ELSEWHERE, VERBS, CHECKS.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import random
import re
import shutil
import sqlite3
import stat
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import fuzz_ncu
import fuzz_opencl
import fuzz_skeletons
import fuzz_tune
from fuzz_loopy import BROKEN_FILES, FACTORIES, KERNELS, SIZES_BAD, SIZES_GOOD, STATS
from fuzz_run import (  # noqa: F401 - public names of the fuzz
    CHECKS,
    KNOWN_ELSEWHERE,
    Result,
    judge,
    opened_drivers,
    run,
    warm,
)
from mutations import edit_characters

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
EXAMPLES = ROOT / "examples" / "kernels.py"
PROFILES = sorted((DATA / "profiles").glob("*.json"))
SOURCE_STORE = DATA / "h100" / "opencl.sqlite"
REGISTERS = DATA / "h100" / "registers.json"
HARDWARE = sorted((ROOT / "src" / "kernelcast" / "hardware").glob("*.json"))
VERBS = ("properties", "suites", "devices", "measure", "calibrate", "fit", "predict",
         "evaluate", "report", "demo", "project", "tune", "advise", "counters")

NO_DEVICE = ("zz-no-such-device", "NVIDIA GeForce 256 zz", "zz-", "Radeon 9700 zz")

# Values put where a number was: the largest and smallest doubles, the smallest
# subnormal, a negative, zero, the non-finite ones, an integer no double holds, strings.
EXTREMES = (1e308, -1e308, 5e-324, -1, 0, float("nan"), float("inf"), float("-inf"),
            10**400, "1e-9", "x")
TEXT_EXTREMES = ("0", "-1", "1e308", "5e-324", "nan", "inf", "-inf", "x",
                 "99999999999999999999", "9" * 5000)
_NUMBER_TEXT = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])")
SPECIAL_SUFFIXES = ("", ".json", ".sqlite", ".py", ".cl", ".csv", ".toml", ".sk", ".png")


# {{{ inputs

JSON_VALUES = (None, True, False, 0, -1, 1, 2**31, 10**30, 1e308, -1e-300, 0.5, "", "x",
               "s", "1e-9", "paper", [], [1, 2], ["a"], {}, {"value": 1e-9}, {"a": [None]})


@dataclass
class Budget:
    """How many invocations of each costly kind may run: successful fits, evaluations
    and reports take a fraction of a second to seconds, a full GROPHECY search and an
    advise figure about a second, a real measurement (one kernel, or a tune of a few
    variants) seconds."""

    fits: int = 6
    evaluations: int = 6
    reports: int = 2
    real_measures: int = 3
    devices: int = 12
    searches: int = 2
    figures: int = 2
    used: Counter = field(default_factory=Counter)

    def take(self, kind: str) -> bool:
        if self.used[kind] >= getattr(self, kind):
            return False
        self.used[kind] += 1
        return True


def _small_store(path: Path) -> Path:
    """A real store of few rows: the paper's finite-difference test kernels and a few
    measurement kernels of the committed H100 OpenCL store, with its tables, triggers
    and identity."""
    source = sqlite3.connect(f"file:{SOURCE_STORE}?mode=ro", uri=True)
    target = sqlite3.connect(path)
    try:
        for (sql,) in source.execute(
                "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE "
                "'sqlite_%' ORDER BY rowid"):
            target.execute(sql)
        target.executemany("INSERT INTO meta VALUES (?, ?)", source.execute(
            "SELECT * FROM meta"))
        rows = source.execute(
            "SELECT * FROM measurements WHERE (suite = 'test' AND kernel_class = "
            "'finite_difference') OR (suite = 'measurement' AND (kernel_class = 'empty' OR "
            "(kernel_class = 'scale_add' AND id % 8 = 0))) ORDER BY id").fetchall()
        width = len(rows[0])
        target.executemany(f"INSERT INTO measurements VALUES ({', '.join('?' * width)})",
                           rows)
        columns = [c[1] for c in source.execute("PRAGMA table_info(measurements)")]
        shas = {row[columns.index("code_sha256")] for row in rows}
        target.executemany("INSERT INTO kernels VALUES (?, ?, ?)", [
            row for row in source.execute("SELECT * FROM kernels") if row[0] in shas])
        target.commit()
    finally:
        source.close()
        target.close()
    return path


def _leaves(node, path=()):
    """(path, value) of every leaf of a JSON document."""
    items = node.items() if isinstance(node, dict) else (
        enumerate(node) if isinstance(node, list) else None)
    if items is None:
        yield path, node
        return
    for key, value in items:
        yield from _leaves(value, (*path, key))


def _set(doc, path, value):
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value


class Workspace:
    """A scratch folder with every input the fuzz hands to kernelcast, and fresh files
    (damaged copies, new output paths) on demand. Inputs that take long to make (the
    Pöppl–Herz profile, the ncu CSVs) are made on first use."""

    def __init__(self, root: Path, rng: random.Random):
        self.root = Path(root)
        self.rng = rng
        self.count = 0
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "kernels.py").write_text(KERNELS)
        for name, content in BROKEN_FILES.items():
            (self.root / name).write_bytes(content)
        (self.root / "folder.py").mkdir(exist_ok=True)
        (self.root / "folder").mkdir(exist_ok=True)
        (self.root / "cache").mkdir(exist_ok=True)
        (self.root / "a file").write_text("not a folder\n")
        (self.root / "zero").write_bytes(b"")
        (self.root / "garbage.bin").write_bytes(bytes(rng.randrange(256) for _ in range(4096)))
        self.damaged = set()  # the kinds of damaged input of the invocation being made
        self.devices = os.geteuid() == 0  # a character device needs root to make
        for suffix in SPECIAL_SUFFIXES:
            if not (self.root / f"pipe{suffix}").exists():
                os.mkfifo(self.root / f"pipe{suffix}")
            if self.devices and not (self.root / f"null{suffix}").exists():
                os.mknod(self.root / f"null{suffix}", stat.S_IFCHR | 0o644, os.makedev(1, 3))
        self.store_bytes = _small_store(self.root / "small.sqlite").read_bytes()
        self.profiles = {}  # model -> a valid profile's document, in the workspace
        for path in PROFILES:
            doc = json.loads(path.read_text())
            if "opencl" in path.name and "h100" in path.name:
                doc["store"] = "small.sqlite"  # fitted from it (near enough)
            elif not ("h100" in path.name and doc["model"] in ("learned", "criteria")):
                continue
            self.profiles[doc["model"]] = doc
            (self.root / f"{doc['model']}.json").write_text(json.dumps(doc, indent=1))
        self.profiles["poppl-herz"] = None  # fitted on first use
        self.hardware = {p.stem: json.loads(p.read_text()) for p in HARDWARE}
        for name, doc in self.hardware.items():
            (self.root / f"{name}.json").write_text(json.dumps(doc))
        self.registers = json.loads(REGISTERS.read_text())
        (self.root / "registers.json").write_text(json.dumps(self.registers))
        for kind in (fuzz_skeletons, fuzz_opencl, fuzz_ncu, fuzz_tune):
            kind.prepare(self)

    def fresh(self, suffix: str = "") -> Path:
        self.count += 1
        return self.root / f"f{self.count}{suffix}"

    def choice(self, items):
        items = list(items) if isinstance(items, (set, dict)) else items
        return items[self.rng.randrange(len(items))]

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def no_device(self) -> str:
        return self.choice(NO_DEVICE)

    def fault(self, *parts: str):
        """Which one of *parts* an invocation gets wrong, or None (a third of the time
        with two parts, less with more): every other part is valid, so that the damage
        reaches the code that reads it."""
        return self.choice((None, None, *parts))

    def good_kernel(self) -> tuple[str, list[str], list[str]]:
        """(FILE.py:FACTORY, its sizes, its statistics) of a kernel that predicts."""
        return self.choice((
            (f"{EXAMPLES}:scale", [self.choice(SIZES_GOOD)], []),
            (f"{EXAMPLES}:transpose_naive", ["n=512"], []),
            (f"{EXAMPLES}:spmv_csr", ["n=4096"], ["rowlen=12.5"]),
            (f"{self.root}/kernels.py:scale", [self.choice(SIZES_GOOD)], []),
            (f"{self.root}/kernels.py:sequential", ["n=64", "m=8"], [])))

    # {{{ paths

    def special(self, suffix: str = "") -> str:
        """A FIFO or (as root) a character device (/dev/null's numbers) named *.suffix."""
        suffix = suffix if suffix in SPECIAL_SUFFIXES else ""
        kind = "null" if self.devices and self.chance(0.5) else "pipe"
        self.damaged.add("a character device" if kind == "null" else "a FIFO")
        return str(self.root / f"{kind}{suffix}")

    def bad_path(self, suffix: str = ".json") -> str:
        kind = self.rng.randrange(11)
        if kind == 0:
            return str(self.root / f"missing{suffix}")
        if kind == 1:
            return str(self.root / "folder")
        if kind == 2:
            return str(self.root / "a file" / f"inside{suffix}")
        if kind == 3:
            return str(self.root / "garbage.bin")
        if kind == 4:
            return str(self.root / "zero")
        if kind == 5:
            return str(self.root / ("x" * self.choice((255, 256, 300, 5000)) + suffix))
        if kind == 6:
            return "/" + "/".join(["d" * 200] * 30) + suffix  # longer than PATH_MAX
        if kind == 7:
            return str(self.root / f"sp ace \u00e9\u4e2d -- {suffix}")
        if kind in (8, 9):
            return self.special(suffix)
        return self.choice(("", ".", "..", "/", "-", "~/x" + suffix))

    # }}}

    # {{{ kernels

    def kernel(self) -> str:
        kind = self.rng.random()
        if kind < 0.35:
            return self.choice((f"{EXAMPLES}:scale", f"{EXAMPLES}:spmv_csr",
                                f"{self.root}/kernels.py:scale"))
        if kind < 0.7:
            return f"{self.root}/kernels.py:{self.choice(FACTORIES)}"
        if kind < 0.85:
            self.damaged.add("kernel file")
            return f"{self.root}/{self.choice(list(BROKEN_FILES))}:scale"
        path = self.bad_path(".py")
        return self.choice((f"{path}:scale", path, f"{path}::", f":{path}"))

    def sizes(self, valid: float = 0.6) -> list[str]:
        if self.chance(valid):
            return [self.choice(SIZES_GOOD)] + (["m=8"] if self.chance(0.2) else [])
        values = [self.choice(SIZES_BAD) for _ in range(self.rng.randrange(1, 3))]
        if self.chance(0.2):
            values += values[:1]  # duplicates
        return values

    def statistics(self) -> list[str]:
        return [self.choice(STATS) for _ in range(self.rng.randrange(1, 3))]

    # }}}

    # {{{ damage

    def _mutate(self, doc):
        """*doc* changed in one to three places: a value of another type, a field
        deleted, renamed or emptied."""
        doc = json.loads(json.dumps(doc))
        for _ in range(self.rng.randrange(1, 4)):
            parent, key = None, None
            node = doc
            for _ in range(self.rng.randrange(1, 5)):
                if isinstance(node, dict) and node:
                    parent, key = node, self.choice(sorted(node))
                elif isinstance(node, list) and node:
                    parent, key = node, self.rng.randrange(len(node))
                else:
                    break
                node = parent[key]
            if parent is None:
                return copy.deepcopy(self.choice(JSON_VALUES))
            op = self.rng.randrange(4)
            if op == 0 and isinstance(parent, dict):
                del parent[key]
            elif op == 1 and isinstance(parent, dict):
                parent["renamed_" + str(key)] = parent.pop(key)
            else:
                parent[key] = copy.deepcopy(self.choice(JSON_VALUES))
        return doc

    def _extremes(self, doc):
        """*doc* with one to three numbers made extreme (EXTREMES), or a long string
        (a LightGBM model's text) damaged."""
        doc = json.loads(json.dumps(doc))
        leaves = list(_leaves(doc))
        numbers = [(p, v) for p, v in leaves if p and isinstance(v, (int, float))
                   and not isinstance(v, bool)]
        texts = [(p, v) for p, v in leaves if p and isinstance(v, str) and len(v) > 200]
        for _ in range(self.rng.randrange(1, 4)):
            if texts and (not numbers or self.chance(0.3)):
                path, text = self.choice(texts)
                _set(doc, path, self.damaged_string(text))
            elif numbers:
                _set(doc, self.choice(numbers)[0], self.choice(EXTREMES))
        return doc

    def damaged_string(self, text: str) -> str:
        """A long text (a LightGBM model) cut, a number in it made extreme, or a line
        deleted or repeated."""
        op = self.rng.randrange(4)
        if op == 0:
            return text[:self.rng.randrange(len(text))]
        if op == 1:
            return self.numbers_replaced(text, TEXT_EXTREMES)
        lines = text.split("\n")
        i = self.rng.randrange(len(lines))
        lines[i:i + 1] = [] if op == 2 else [lines[i]] * 2
        return "\n".join(lines)

    def numbers_replaced(self, text: str, values) -> str:
        """*text* with one to three of its numbers replaced by one of *values*."""
        spans = [m.span() for m in _NUMBER_TEXT.finditer(text)]
        if not spans:
            return text + self.choice(values)
        for start, end in sorted({self.choice(spans) for _ in range(self.rng.randrange(1, 4))},
                                 reverse=True):
            text = text[:start] + self.choice(values) + text[end:]
        return text

    def deep(self, kind: str) -> str:
        """A value nested thousands deep: a JSON or TOML array or table."""
        self.damaged.add(f"{kind.upper()} nested deeply")
        n = self.choice((1000, 3000, 100_000))
        if kind == "json":
            return self.choice(("[" * n + "]" * n, '{"a": ' * n + "1" + "}" * n))
        return self.choice(("[" * n + "]" * n, "{a = " * n + "1" + "}" * n))

    def _damaged_text(self, text: str) -> bytes:
        data = text.encode() or b" "
        kind = self.rng.randrange(7)
        if kind == 0:
            return data[:self.rng.randrange(len(data))]  # truncated
        if kind == 1:
            return bytes(self.rng.randrange(256) for _ in range(self.rng.randrange(1, 600)))
        if kind == 2:
            data = bytearray(data)
            for _ in range(self.rng.randrange(1, 8)):
                data[self.rng.randrange(len(data))] = self.rng.randrange(256)
            return bytes(data)
        if kind == 3:
            return b"\xef\xbb\xbf" + data  # a byte-order mark
        if kind == 4:
            return self.choice((b"", b"null", b"[]", b"{}", b"\"profile\"", b"1e999",
                                b"[" * 50000, b"{\"format\": 2}", b"NaN"))
        if kind == 5:
            return data.replace(b"1", b"NaN", 1)
        return data + b"garbage"

    def json_file(self, doc, suffix: str = ".json") -> str:
        """A damaged copy of *doc*: its structure, its numbers, nesting or its bytes."""
        path = self.fresh(suffix)
        kind = self.rng.random()
        if kind < 0.35:
            path.write_text(json.dumps(self._mutate(doc), indent=1))
        elif kind < 0.65:
            path.write_text(json.dumps(self._extremes(doc), indent=1))
        elif kind < 0.72 and isinstance(doc, dict) and doc:
            damaged = dict(doc)
            damaged[self.choice(sorted(doc))] = "@deep@"
            path.write_text(json.dumps(damaged).replace('"@deep@"', self.deep("json")))
        else:
            path.write_bytes(self._damaged_text(json.dumps(doc, indent=1)))
        return str(path)

    def text_file(self, text: str, suffix: str, alphabet: str, numbers=TEXT_EXTREMES) -> str:
        """A damaged copy of a text (a TOML file, a CSV): characters edited, its numbers
        made extreme, a table nested thousands deep, or its bytes."""
        path = self.fresh(suffix)
        kind = self.rng.random()
        if kind < 0.3:
            for _ in range(self.rng.randrange(1, 4)):
                text = edit_characters(text, self.rng, alphabet)
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
        elif kind < 0.65:
            path.write_text(self.numbers_replaced(text, numbers))
        elif kind < 0.75 and suffix == ".toml":
            path.write_text(text + f"\ndeep = {self.deep('toml')}\n")
        else:
            path.write_bytes(self._damaged_text(text))
        return str(path)

    # }}}

    # {{{ profiles, hardware, registers

    def profile_doc(self, model: str) -> dict:
        if self.profiles[model] is None:
            self.profiles[model] = fuzz_opencl.poppl_herz_profile(self)
        return self.profiles[model]

    def profile(self, valid: float = 0.3, committed: bool = True, models=None) -> str:
        """A profile's path: valid (of the small store, or a copy of a committed one),
        damaged, a store, a committed profile (read only; its store is a committed one,
        so not where *committed* is False) or a bad path. *models*: the models to pick
        from (default: mostly those a Loopy kernel's prediction takes, now and then a
        learned, Pöppl–Herz or criteria one)."""
        if models is None:
            models = (("paper", "extended", "hong-kim") if self.chance(0.75)
                      else ("learned", "poppl-herz", "criteria"))
        model = self.choice(models)
        doc = self.profile_doc(model)
        if self.chance(valid):
            return str(self.root / f"{model}.json")
        kind = self.rng.random()
        if kind < 0.65:
            self.damaged.add(f"{model} profile")
            return self.json_file(doc)
        if kind < 0.75:
            return self.store()  # a store given as a profile
        if kind < 0.85 and committed:
            return self.choice([str(p) for p in PROFILES])  # read only
        return self.bad_path()

    def hardware_arg(self) -> str:
        kind = self.rng.random()
        if kind < 0.3:
            return self.choice(("h100", "H200", "fx5600", "c1060", "gtx9999", "h100.json",
                                "./h100"))
        if kind < 0.45:
            return str(self.root / f"{self.choice(sorted(self.hardware))}.json")
        if kind < 0.85:
            self.damaged.add("hardware file")
            return self.json_file(self.hardware[self.choice(sorted(self.hardware))])
        return self.bad_path()

    def registers_arg(self) -> str:
        kind = self.rng.random()
        if kind < 0.3:
            return str(self.root / "registers.json")
        if kind < 0.8:
            self.damaged.add("registers file")
            small = dict(list(self.registers.items())[:20])
            return self.json_file(small)
        return self.bad_path()

    # }}}

    # {{{ stores

    def store(self, valid: float = 1.0) -> str:
        """A fresh copy of the small store, damaged unless chance(*valid*)."""
        path = self.fresh(".sqlite")
        data = self.store_bytes
        if self.chance(valid):
            path.write_bytes(data)
            return str(path)
        self.damaged.add("measurement store")
        kind = self.rng.randrange(8)
        if kind == 0:
            data = data[:self.rng.randrange(len(data))]  # truncated
        elif kind == 1:
            data = b""
        elif kind in (2, 3):  # bytes changed
            data = bytearray(data)
            for _ in range(self.rng.randrange(1, 64)):
                data[self.rng.randrange(len(data))] = self.rng.randrange(256)
            data = bytes(data)
        elif kind == 4:  # a page zeroed
            page = 4096 * self.rng.randrange(max(1, len(data) // 4096))
            data = data[:page] + bytes(4096) + data[page + 4096:]
        elif kind == 5:  # the header damaged
            data = data[:16] + bytes(self.rng.randrange(256) for _ in range(84)) + data[100:]
        elif kind == 6:
            data = json.dumps(self.profiles["paper"]).encode()  # a profile as a store
        else:
            data = data + bytes(self.rng.randrange(256) for _ in range(5000))
        path.write_bytes(data)
        return str(path)

    def db(self, valid: float = 0.3) -> str:
        if self.chance(0.85):
            return self.store(valid)
        return self.bad_path(".sqlite")

    def out_path(self, suffix=".json") -> str:
        kind = self.rng.random()
        if kind < 0.6:
            return str(self.fresh(suffix))
        if kind < 0.7:
            return self.store()
        if kind < 0.8:
            return str(self.root / "notpython.txt")
        return self.bad_path(suffix)

    # }}}

    def tidy(self) -> None:
        """Remove the fresh files made so far, and damage an entry of the properties
        cache the children share (kernelcast must refuse or recount it)."""
        for path in [*self.root.glob("f*"), *self.root.glob("*/f*")]:
            if not re.fullmatch(r"f\d+(\..*)?", path.name):
                continue
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        entries = sorted(p for p in (self.root / "cache").rglob("*") if p.is_file())
        if entries:
            entry = self.choice(entries)
            entry.write_bytes(self._damaged_text(entry.read_text(errors="replace")))

# }}}


# {{{ invocations

def _maybe(ws: Workspace, p: float, *args) -> list[str]:
    return list(args) if ws.chance(p) else []


def _gen_properties(ws, budget):
    argv = ["properties", ws.kernel()]
    if ws.chance(0.7):
        argv += ["--param", *ws.sizes()]
    if ws.chance(0.25):
        argv += ["--stat", *ws.statistics()]
    return argv + _maybe(ws, 0.3, "--json")


def _gen_suites(ws, budget):
    argv = ["suites"]
    if ws.chance(0.8):
        argv += ["--suite", ws.choice(("measurement", "test", "measurement-cpu", "test-cpu",
                                       "validation", "extension", "nope", "", "TEST"))]
    if ws.chance(0.4):
        argv += ["--p", *[ws.choice(("scale_add=20", "matmul_tiled=8", "scale_add=0",
                                     "scale_add=-3", "scale_add=1e99", "fft=3", "scale_add",
                                     "scale_add=x", "=20", "scale_add=" + "9" * 400,
                                     f"arithmetic={2**31}", "max"))
                          for _ in range(ws.rng.randrange(1, 3))]]
    if ws.chance(0.3):
        argv += ["--dtype", ws.choice(("float32", "float64", "float16", "int32"))]
    if ws.chance(0.3):
        argv += ["--group-set", ws.choice(("2-D Med", "1-D Small", "nope", ""))]
    return argv + _maybe(ws, 0.3, "--json")


def _gen_devices(ws, budget):
    if not budget.take("devices"):
        return ["devices", ws.choice(("--bogus", "extra", "--json=1"))]
    return ["devices"] + _maybe(ws, 0.5, "--json")


def _gen_measure(ws, budget):
    argv = ["measure"]
    real = False
    if ws.chance(0.5):
        argv += ["--kernel", ws.kernel()]
        if ws.chance(0.8):
            argv += ["--param", *ws.sizes(valid=0.5)]
        if ws.chance(0.1):
            argv += ["--suite", "test"]
        real = ws.chance(0.05) and budget.take("real_measures")
    else:
        argv += ["--suite", ws.choice(("test", "measurement-cpu", "nope", "extension"))]
        if ws.chance(0.3):
            argv += ["--p", ws.choice(("max", "scale_add=20", "scale_add=x", "nope=3"))]
        if ws.chance(0.2):
            argv += ["--classes", ws.choice(("scale_add", "nope", ",", ""))]
        if ws.chance(0.2):
            argv += ["--dtype", ws.choice(("float32", "float16"))]
        if ws.chance(0.2):
            argv += ["--group-set", ws.choice(("2-D Med", "nope"))]
    if real:  # one kernel on this machine's device, into a fresh store
        argv = ["measure", "--kernel", f"{EXAMPLES}:scale", "--param", "n=1000",
                "--db", str(ws.fresh(".sqlite")), "--runs", "6", "--tolerance", "10"]
        return argv
    if ws.chance(0.9):
        argv += ["--db", ws.db(valid=0.5)]
    argv += ["--device", ws.no_device()]
    if ws.chance(0.2):
        argv += ["--backend", ws.choice(("opencl", "cuda", "metal"))]
    if ws.chance(0.2):
        argv += ["--runs", ws.choice(("0", "-3", "x", "4", "5", "1e3",
                                      "99999999999999999999"))]
    if ws.chance(0.2):
        argv += ["--tolerance", ws.choice(("-1", "nan", "inf", "0", "x", "1e-300"))]
    return argv


def _gen_calibrate(ws, budget):
    argv = ["calibrate", "--device", ws.no_device()]
    if ws.chance(0.5):
        argv += ["--db", ws.db()]
    if ws.chance(0.5):
        argv += ["--profile", ws.out_path()]
    if ws.chance(0.5):
        argv += ["--model", ws.choice(("paper", "extended", "hong-kim", "roofline"))]
    if ws.chance(0.3):
        argv += ["--suite", ws.choice(("measurement", "measurement-cpu", "test", "nope"))]
    if ws.chance(0.2):
        argv += ["--hardware", ws.hardware_arg()]
    if ws.chance(0.2):
        argv += ["--registers", ws.registers_arg()]
    if ws.chance(0.1):
        argv += ["--nonnegative"]
    if ws.chance(0.2):
        argv += ["--backend", ws.choice(("opencl", "cuda"))]
    if ws.chance(0.1):
        argv += ["--runs", ws.choice(("0", "5", "x"))]
    return argv


def _gen_fit(ws, budget):
    cheap = not budget.take("fits")
    argv = ["fit"]
    if ws.chance(0.95):
        argv += ["--db", ws.db(valid=0.0 if cheap else 0.5)]
    if ws.chance(0.95):
        argv += ["--profile", ws.out_path() if not cheap else ws.choice(
            (ws.store(), str(ws.root / "folder"), str(ws.root / "notpython.txt"),
             ws.bad_path()))]
    model = ws.choice(("paper", "paper", "hong-kim", "extended", "nope"))
    argv += ["--model", model]
    if model == "hong-kim" or ws.chance(0.1):
        if ws.chance(0.8):
            argv += ["--hardware", ws.hardware_arg()]
        if ws.chance(0.4):
            argv += ["--registers", ws.registers_arg()]
    if ws.chance(0.2):
        argv += ["--suite", ws.choice(("measurement", "measurement-cpu", "test", "nope", ""))]
    return argv + _maybe(ws, 0.1, "--nonnegative")


def _gen_predict(ws, budget):
    if ws.chance(0.35):  # OpenCL C source
        return fuzz_opencl.gen_predict(ws, budget)
    fault = ws.fault("kernel", "sizes", "model", "flags")
    kernel, sizes, stats = ws.good_kernel()
    argv = ["predict", ws.kernel() if fault == "kernel" else kernel]
    if fault != "sizes" or ws.chance(0.9):
        argv += ["--param", *(ws.sizes(valid=0.0) if fault == "sizes" else sizes)]
    if stats or fault == "flags" and ws.chance(0.3):
        argv += ["--stat", *(ws.statistics() if fault == "flags" else stats)]
    kind = ws.rng.random()
    if kind < 0.6 and fault == "model":
        argv += ["--profile", ws.profile(valid=0.1)]
    elif kind < 0.6:
        argv += ["--profile", ws.profile(1.0, models=("paper", "extended", "hong-kim",
                                                      "learned"))]
    elif kind < 0.9:
        argv += ["--model", "hong-kim", "--hardware", ws.hardware_arg() if fault == "model"
                 else ws.choice(("h100", "h200", "fx5600", "c1060"))]
        if ws.chance(0.2):
            argv += ["--registers-per-thread", ws.choice(("32", "255"))]
    elif fault == "model":
        argv += _maybe(ws, 0.5, "--model", ws.choice(("paper", "extended", "bogus")))
    if fault == "flags" and ws.chance(0.5):
        argv += ["--registers-per-thread", ws.choice(("0", "-1", "x", "1e3", str(2**40)))]
    return argv + _maybe(ws, 0.4, "--json")


def _gen_evaluate(ws, budget):
    cheap = not budget.take("evaluations")
    argv = ["evaluate"]
    kind = ws.rng.random()
    if kind < 0.6:
        argv += ["--profile", ws.profile(valid=0.0 if cheap else 0.7, committed=False)]
        if ws.chance(0.5):
            argv += ["--db", ws.db(valid=0.0 if cheap else 0.7)]
        if ws.chance(0.1):
            argv += ["--model", ws.choice(("paper", "all", "hong-kim"))]
    else:
        argv += ["--db", ws.db(valid=0.0 if cheap else 0.7)]
        model = ws.choice(("hong-kim", "paper", "extended", "all"))
        argv += ["--model", model]
        if model == "hong-kim" and ws.chance(0.8):
            argv += ["--hardware", ws.hardware_arg()]
        if ws.chance(0.3):
            argv += ["--registers", ws.registers_arg()]
        if ws.chance(0.2):
            argv += ["--fit-suite", ws.choice(("measurement", "nope", "test"))]
    if ws.chance(0.2):
        argv += ["--suite", ws.choice(("test", "measurement", "nope", "validation"))]
    argv += ["--no-measure"]  # even where the profile's device is absent: a machine
    # with the GPU of a committed profile would measure the test suite for real
    if ws.chance(0.05) and not cheap:
        argv += ["--cv"]
    return argv


def _gen_report(ws, budget):
    cheap = not budget.take("reports")
    argv = ["report"]
    if ws.chance(0.95):
        argv += ["--profile", ws.profile(valid=0.0 if cheap else 0.8, committed=False)]
    if ws.chance(0.5):
        argv += ["--db", ws.db(valid=0.0 if cheap else 0.8)]
    if ws.chance(0.95):
        kind = ws.rng.random()
        argv += ["--out", str(ws.fresh()) if kind < 0.6 else ws.choice(
            (str(ws.root / "a file"), str(ws.root / "a file" / "inside"),
             str(ws.root / ("o" * 300)), ws.store()))]
    return argv


def _gen_demo(ws, budget):
    argv = ["demo", "--device", ws.no_device()]
    if ws.chance(0.3):
        argv += ["--backend", ws.choice(("opencl", "cuda"))]
    return argv


def _gen_counters(ws, budget):
    """The workspace's scale (whose launches fuzz_ncu.counters_csv profiles) or another
    good kernel, with one part wrong now and then: the kernel, its sizes, the hardware,
    the profile to compare with, or the flags."""
    fault = ws.fault("kernel", "sizes", "hardware", "csv", "flags")
    size = ws.choice(SIZES_GOOD)
    kernel, sizes, stats = ((f"{ws.root}/kernels.py:scale", [size], []) if ws.chance(0.6)
                            else ws.good_kernel())
    argv = ["counters", ws.kernel() if fault == "kernel" else kernel]
    if fault != "sizes" or ws.chance(0.9):
        argv += ["--param", *(ws.sizes(valid=0.0) if fault == "sizes" else sizes)]
    if stats or fault == "flags" and ws.chance(0.4):
        argv += ["--stat", *(ws.statistics() if fault == "flags" else stats)]
    if fault != "hardware" or ws.chance(0.8):
        argv += ["--hardware", ws.hardware_arg() if fault == "hardware"
                 else ws.choice(("h100", "h200", "H100"))]
    if fault == "csv" or ws.chance(0.4):
        argv += ["--compare", fuzz_ncu.counters_csv(ws, size, damaged=fault == "csv")]
    if fault == "flags" and ws.chance(0.5):
        argv += ws.choice((["--compare"], ["--no-compiler=1"], ["--hardware"],
                           ["--compare", f"{ws.root}/kernels.py:scale"]))
    return argv + _maybe(ws, 0.3, "--no-compiler") + _maybe(ws, 0.4, "--json")


GENERATORS = {"properties": _gen_properties, "suites": _gen_suites,
              "devices": _gen_devices, "measure": _gen_measure,
              "calibrate": _gen_calibrate, "fit": _gen_fit, "predict": _gen_predict,
              "evaluate": _gen_evaluate, "report": _gen_report, "demo": _gen_demo,
              "project": fuzz_skeletons.gen_project, "tune": fuzz_tune.gen_tune,
              "advise": fuzz_ncu.gen_advise, "counters": _gen_counters}
WEIGHTS = {"properties": 12, "suites": 5, "devices": 2, "measure": 7, "calibrate": 5,
           "fit": 6, "predict": 20, "evaluate": 7, "report": 4, "demo": 2, "project": 10,
           "tune": 3, "advise": 10,  # tune: its kernel is made in a process of its own
           "counters": 4}


def _argparse_noise(ws: Workspace, argv: list[str]) -> list[str]:
    """Now and then: an unknown flag, a flag without its value, --help, no verb."""
    kind = ws.rng.randrange(6)
    if kind == 0:
        return argv + ["--no-such-flag"]
    if kind == 1:
        return argv + [ws.choice(("--param", "--profile", "--db", "--stat", "--runs"))]
    if kind == 2:
        return argv[:1] + ["--help"]
    if kind == 3:
        return ws.choice(([], ["--version"], ["nope"], ["--debug"], ["-x"]))
    if kind == 4:
        return argv + [ws.choice(("--json", "--model", "--model=bogus", "--backend=cl"))]
    return argv[:1]  # the verb alone


def generate(ws: Workspace, budget: Budget) -> tuple[str, list[str]]:
    """(verb, argv) of one random invocation."""
    verbs = list(WEIGHTS)
    verb = ws.rng.choices(verbs, weights=[WEIGHTS[v] for v in verbs])[0]
    ws.damaged = set()
    argv = GENERATORS[verb](ws, budget)
    if ws.chance(0.06) and verb not in ("measure", "calibrate", "demo", "tune"):
        argv = _argparse_noise(ws, argv)
    elif ws.chance(0.06) and verb in ("measure", "calibrate", "demo", "tune"):
        argv = argv + ["--no-such-flag"]
    return verb, argv

# }}}


# {{{ the fuzz

def data_snapshot() -> dict[str, str]:
    """Every file under data/ with a digest of its content."""
    return {str(p.relative_to(DATA)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(DATA.rglob("*")) if p.is_file()}


def fuzz(root: Path, *, seed: int = 21, invocations: int = 1500, seconds: float = 60.0,
         budget: Budget | None = None, timeout: float = 120.0, progress=None) -> dict:
    """Run up to *invocations* random invocations (stopping once *seconds* are spent)
    in a workspace under *root*, each killed after *timeout* seconds; returns a summary:
    counts by verb and outcome, by check, the findings (failures and known ones, with
    the traceback's last line and innermost kernelcast frame), the time."""
    rng = random.Random(seed)
    budget = budget or Budget()
    start = time.perf_counter()
    if opened_drivers():
        raise RuntimeError(f"this process has loaded {', '.join(opened_drivers())}: fork "
                           "the fuzz's children from a process that has opened no device")
    warm()
    before = data_snapshot()
    workdir = os.getcwd()
    ws = Workspace(Path(root), rng)
    env = {"KERNELCAST_CACHE_DIR": str(ws.root / "cache")}  # not the user's cache
    counts: dict[str, Counter] = {verb: Counter() for verb in VERBS}
    spent, cpu, checks, damaged = Counter(), Counter(), Counter(), Counter()
    findings, slowest = [], []
    os.chdir(ws.root)  # default output paths (kernelcast-data/) land in the workspace
    try:
        n = 0
        while n < invocations and time.perf_counter() - start < seconds:
            verb, argv = generate(ws, budget)
            result = judge(run(verb, argv, timeout=timeout, env=env))
            damaged.update(ws.damaged)
            n += 1
            counts[verb][result.outcome] += 1
            spent[verb] += result.seconds
            cpu[verb] += result.cpu
            slowest = sorted([*slowest, (result.seconds, verb, argv)], reverse=True)[:5]
            if result.outcome in ("failure", "known"):
                checks.update({p.split(":")[0] for p in result.problems})
                findings.append({"verb": verb, "argv": argv, "outcome": result.outcome,
                                 "code": result.code, "problems": result.problems,
                                 "stderr_tail": result.err.strip().splitlines()[-3:],
                                 "innermost_frame": result.innermost,
                                 "traceback_tail": result.last_line,
                                 "owner": result.owner})
            if progress is not None and n % 250 == 0:
                print(f"{n} invocations, {time.perf_counter() - start:.0f} s",
                      file=progress, flush=True)
            if n % 100 == 0:  # keep the scratch folder small
                ws.tidy()
    finally:
        os.chdir(workdir)
    after = data_snapshot()
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    outcomes = Counter()
    for per_verb in counts.values():
        outcomes.update(per_verb)
    return {"seed": seed, "invocations": n, "seconds": round(time.perf_counter() - start, 1),
            "by_verb": {v: dict(c) for v, c in counts.items()}, "outcomes": dict(outcomes),
            "by_check": {c: checks[c] for c in CHECKS if checks[c]},
            "damaged": dict(sorted(damaged.items())),
            "seconds_by_verb": {v: round(spent[v], 1) for v in VERBS},
            "cpu_seconds_by_verb": {v: round(cpu[v], 1) for v in VERBS},
            "budget_used": dict(budget.used), "findings": findings,
            "data_changed": changed, "drivers_in_parent": opened_drivers(),
            "slowest": [{"seconds": round(s, 2), "verb": v, "argv": a}
                        for s, v, a in slowest]}

# }}}
