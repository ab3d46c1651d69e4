"""Fuzzing kernelcast's command line: seeded random invocations of every verb with
malformed sizes and statistics, bad paths, kernel files that fail in every way, damaged
profiles, hardware and registers files, and damaged measurement stores.

Each invocation runs in-process (``kernelcast.cli.main`` with stdout and stderr captured)
inside a scratch folder (``Workspace``) that holds every input, and is judged by
``judge``: the exit status is 0, 1 or 2; stderr holds no traceback; a failure ends in
exactly one line "kernelcast: error: ..." (or argparse's usage and error line) and no
other error line; nothing under data/ changes (``data_snapshot``). An internal error or
an exception that escapes ``main`` is a finding; findings whose cause lies in code being
fixed elsewhere are listed in KNOWN_ELSEWHERE and counted apart.

Nothing is measured for real except at most ``Budget.real_measures`` single kernels:
``measure``, ``calibrate`` and ``demo`` get a device name no device has (or an input that
is refused before the device is touched), and ``evaluate`` always gets ``--no-measure``.

tests/test_fuzz.py runs a bounded fuzz; benchmarks/fuzz.py a larger one with a summary.

Public names: Workspace, Budget, Result, generate, run, judge, fuzz, data_snapshot,
KNOWN_ELSEWHERE, VERBS.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import io
import json
import os
import random
import re
import shutil
import sqlite3
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
EXAMPLES = ROOT / "examples" / "kernels.py"
PROFILES = sorted((DATA / "profiles").glob("*.json"))
SOURCE_STORE = DATA / "h100" / "opencl.sqlite"
REGISTERS = DATA / "h100" / "registers.json"
HARDWARE = ROOT / "src" / "kernelcast" / "hardware" / "h100.json"
VERBS = ("properties", "suites", "devices", "measure", "calibrate", "fit", "predict",
         "evaluate", "report", "demo")

# Findings caused by code that is being fixed elsewhere (not in the CLI, profiles or
# kernel files): (regular expression on the innermost kernelcast frame of the finding's
# traceback, as `kernelcast --debug` prints it; owner). Each is counted as "known", not
# as a failure; remove an entry once the fix is in.
KNOWN_ELSEWHERE: list[tuple[str, str]] = []

NO_DEVICE = ("zz-no-such-device", "NVIDIA GeForce 256 zz", "zz-", "Radeon 9700 zz")


# {{{ inputs

KERNELS = '''"""Kernel factories for the fuzz: good ones and ones that fail in every way."""
import sys

import loopy as lp
import numpy as np


def scale():
    knl = lp.make_kernel("{[i]: 0<=i<n}", "out[i] = 2*a[i]", lang_version=(2018, 2),
                         assumptions="n >= 1")
    knl = lp.add_dtypes(knl, {"a": np.float32})
    return lp.split_iname(knl, "i", 128, outer_tag="g.0", inner_tag="l.0")


def loop_kernel():
    return scale().default_entrypoint


def sequential():
    knl = lp.make_kernel("{[i, j]: 0<=i<n and 0<=j<m}", "out[i] = sum(j, a[i, j])",
                         lang_version=(2018, 2), assumptions="n >= 1 and m >= 1")
    return lp.add_dtypes(knl, {"a": np.float32})


def untyped():
    knl = lp.make_kernel("{[i]: 0<=i<n}", "out[i] = 2*a[i]", lang_version=(2018, 2))
    return lp.split_iname(knl, "i", 32, outer_tag="g.0", inner_tag="l.0")


def divides():
    return 1 / 0


def needs(n, m=3):
    return n


def keyword_only(*, n):
    return n


def variadic(*args, **kwargs):
    return scale()


def number():
    return 42


def nothing():
    return None


def source():
    return "out[i] = 2*a[i]"


def exits():
    sys.exit(3)


def recurses():
    return recurses()


def import_error():
    import no_such_module_for_the_fuzz  # noqa: F401


class Factory:
    def __call__(self):
        return scale()


instance = Factory()
not_callable = 5
'''

FACTORIES = ("scale", "loop_kernel", "sequential", "untyped", "divides", "needs",
             "keyword_only", "variadic", "number", "nothing", "source", "exits", "recurses",
             "import_error", "instance", "Factory", "not_callable", "missing", "")

BROKEN_FILES = {
    "import_error.py": b"import no_such_module_for_the_fuzz\n",
    "raises.py": b"raise ValueError('at import')\n",
    "exits.py": b"import sys\nsys.exit(4)\n",
    "syntax.py": b"def scale(:\n    pass\n",
    "indent.py": b"def scale():\nreturn 1\n",
    "latin1.py": b"# caf\xe9\nx = '\xe9'\ndef scale():\n    return x\n",
    "empty.py": b"",
    "binary.py": bytes(range(256)),
    "notpython.txt": KERNELS.encode(),
    "kernels": KERNELS.encode(),
}

JSON_VALUES = (None, True, False, 0, -1, 1, 2**31, 10**30, 1e308, -1e-300, 0.5, "", "x",
               "s", "1e-9", "paper", [], [1, 2], ["a"], {}, {"value": 1e-9}, {"a": [None]})

SIZES_GOOD = ("n=1000", "n=4096", "n=1", "n=128")
SIZES_BAD = ("n=0", "n=-1", f"n={2**31}", f"n={2**63}", "n=1e99", "n=1e999", "n=x", "n=",
             "=5", "n", "n=1.5", "n=nan", "n=inf", "n=-inf", "n=0x10", "n==5", "n=5=6",
             f"n={10**30}", "n=" + "9" * 5000, "n=\u0663", " n = 7 ", "m=3", "n=1e3",
             "n=-0", "N=10", "n=10 ", "n=1_000", "", "=", "==", "n=\x7f")
STATS = ("rowlen=12.5", "rowlen=0", "rowlen=-1", "rowlen=x", "rowlen", "=3", "rowlen=",
         "rowlen=nan", "rowlen=inf", "rowlen=1e308", "foo=1", "rowlen=1", "insn=0.5")


@dataclass
class Budget:
    """How many invocations of each costly kind may run: successful fits, evaluations
    and reports take a fraction of a second to seconds; a real measurement seconds."""

    fits: int = 6
    evaluations: int = 6
    reports: int = 2
    real_measures: int = 1
    devices: int = 12
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


class Workspace:
    """A scratch folder with every input the fuzz hands to kernelcast, and fresh files
    (damaged copies, new output paths) on demand."""

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
        (self.root / "a file").write_text("not a folder\n")
        (self.root / "zero").write_bytes(b"")
        (self.root / "garbage.bin").write_bytes(bytes(rng.randrange(256) for _ in range(4096)))
        self.store_bytes = _small_store(self.root / "small.sqlite").read_bytes()
        self.profiles = {}  # model -> valid profile of the small store, in the workspace
        for path in PROFILES:
            doc = json.loads(path.read_text())
            if "opencl" in path.name and "h100" in path.name:
                doc["store"] = "small.sqlite"
                self.profiles[doc["model"]] = doc
                (self.root / f"{doc['model']}.json").write_text(json.dumps(doc, indent=1))
        self.hardware = json.loads(HARDWARE.read_text())
        (self.root / "h100.json").write_text(json.dumps(self.hardware))
        self.registers = json.loads(REGISTERS.read_text())
        (self.root / "registers.json").write_text(json.dumps(self.registers))

    def fresh(self, suffix: str = "") -> Path:
        self.count += 1
        return self.root / f"f{self.count}{suffix}"

    def choice(self, items):
        return items[self.rng.randrange(len(items))]

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    # {{{ paths

    def bad_path(self, suffix: str = ".json") -> str:
        kind = self.rng.randrange(9)
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

    # {{{ JSON files

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

    def _damaged_text(self, text: str) -> bytes:
        data = text.encode()
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
        path = self.fresh(suffix)
        if self.chance(0.6):
            path.write_text(json.dumps(self._mutate(doc), indent=1, allow_nan=True))
        else:
            path.write_bytes(self._damaged_text(json.dumps(doc, indent=1)))
        return str(path)

    def profile(self, valid: float = 0.3, committed: bool = True) -> str:
        """A profile's path: valid (of the small store), damaged, a store, a committed
        profile (read only; its store is a committed one, so not where *committed* is
        False) or a bad path."""
        model = self.choice(sorted(self.profiles))
        if self.chance(valid):
            return str(self.root / f"{model}.json")
        kind = self.rng.random()
        if kind < 0.65:
            return self.json_file(self.profiles[model])
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
            return str(self.root / "h100.json")
        if kind < 0.85:
            return self.json_file(self.hardware)
        return self.bad_path()

    def registers_arg(self) -> str:
        kind = self.rng.random()
        if kind < 0.3:
            return str(self.root / "registers.json")
        if kind < 0.8:
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
    argv += ["--device", ws.choice(NO_DEVICE)]
    if ws.chance(0.2):
        argv += ["--backend", ws.choice(("opencl", "cuda", "metal"))]
    if ws.chance(0.2):
        argv += ["--runs", ws.choice(("0", "-3", "x", "4", "5", "1e3",
                                      "99999999999999999999"))]
    if ws.chance(0.2):
        argv += ["--tolerance", ws.choice(("-1", "nan", "inf", "0", "x", "1e-300"))]
    return argv


def _gen_calibrate(ws, budget):
    argv = ["calibrate", "--device", ws.choice(NO_DEVICE)]
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
    argv = ["predict", ws.kernel()]
    if ws.chance(0.95):
        argv += ["--param", *ws.sizes()]
    kind = ws.rng.random()
    if kind < 0.55:
        argv += ["--profile", ws.profile()]
        if ws.chance(0.1):
            argv += ["--model", ws.choice(("paper", "extended", "hong-kim"))]
    elif kind < 0.9:
        argv += ["--model", "hong-kim"]
        if ws.chance(0.9):
            argv += ["--hardware", ws.hardware_arg()]
    else:
        argv += _maybe(ws, 0.5, "--model", ws.choice(("paper", "extended", "bogus")))
    if ws.chance(0.15):
        argv += ["--registers-per-thread", ws.choice(("32", "255", "0", "-1", "x", "1e3",
                                                      str(2**40)))]
    if ws.chance(0.2):
        argv += ["--stat", *ws.statistics()]
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
    argv = ["demo", "--device", ws.choice(NO_DEVICE)]
    if ws.chance(0.3):
        argv += ["--backend", ws.choice(("opencl", "cuda"))]
    return argv


GENERATORS = {"properties": _gen_properties, "suites": _gen_suites,
              "devices": _gen_devices, "measure": _gen_measure,
              "calibrate": _gen_calibrate, "fit": _gen_fit, "predict": _gen_predict,
              "evaluate": _gen_evaluate, "report": _gen_report, "demo": _gen_demo}
WEIGHTS = {"properties": 16, "suites": 8, "devices": 2, "measure": 10, "calibrate": 8,
           "fit": 8, "predict": 22, "evaluate": 10, "report": 6, "demo": 3}


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
    argv = GENERATORS[verb](ws, budget)
    if ws.chance(0.06) and verb not in ("measure", "calibrate", "demo"):
        argv = _argparse_noise(ws, argv)
    elif ws.chance(0.06) and verb in ("measure", "calibrate", "demo"):
        argv = argv + ["--no-such-flag"]
    return verb, argv

# }}}


# {{{ running and judging

class _Capture(io.StringIO):
    def close(self):  # main closes stderr after a broken pipe
        pass


@dataclass
class Result:
    verb: str
    argv: list[str]
    code: object
    out: str
    err: str
    seconds: float
    escaped: str = ""  # the traceback of an exception that escaped main
    outcome: str = ""
    problems: list[str] = field(default_factory=list)
    traceback: str = ""  # of a finding: as `kernelcast --debug` prints it
    owner: str = ""  # of a known finding

    @property
    def innermost(self) -> str:
        """The innermost kernelcast frame of the traceback ("" without one)."""
        frames = [line.strip() for line in self.traceback.splitlines()
                  if line.strip().startswith("File ") and "/kernelcast/" in line]
        return frames[-1] if frames else ""

    @property
    def last_line(self) -> str:
        lines = [line for line in self.traceback.splitlines()
                 if line.strip() and not line.startswith(("kernelcast: ", " "))]
        return lines[-1] if lines else ""


def run(verb: str, argv: list[str]) -> Result:
    """*argv* run through kernelcast.cli.main in-process, its output captured."""
    from kernelcast.cli import main

    out, err = _Capture(), _Capture()
    escaped = ""
    start = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as stop:
            code = 0 if stop.code is None else stop.code
        except KeyboardInterrupt:
            raise
        except BaseException:  # noqa: BLE001 - a finding
            code, escaped = None, traceback.format_exc()
    return Result(verb, list(argv), code, out.getvalue(), err.getvalue(),
                  time.perf_counter() - start, escaped)


_ERROR = re.compile(r"^kernelcast( [a-z-]+)?: error: ")


def judge(result: Result, trace: bool = True) -> Result:
    """Set *result*'s outcome (ok, help, usage, error 1, error 2, known, failure) and its
    problems; with *trace*, a finding is run again with --debug for its traceback, and
    is "known" where its innermost kernelcast frame is one of KNOWN_ELSEWHERE."""
    problems = result.problems
    lines = result.err.splitlines()
    if result.escaped:
        problems.append("an exception escaped main")
    if result.code not in (0, 1, 2):
        problems.append(f"exit status {result.code!r}")
    if "Traceback (most recent call last)" in result.err:
        problems.append("a traceback on stderr")
    errors = [line for line in lines if _ERROR.match(line)]
    internal = [line for line in lines if line.startswith("kernelcast: internal error")]
    if internal:
        problems.append("an internal error")
    if result.code == 0:
        if errors or internal:
            problems.append("an error line, yet exit status 0")
        outcome = "help" if ("--help" in result.argv or "--version" in result.argv) else "ok"
    elif lines and lines[0].startswith("usage:"):
        outcome = "usage"
        if result.code != 2 or not errors or errors[-1] != lines[-1]:
            problems.append("argparse's error is not its last line")
    else:
        outcome = f"error {result.code}"
        if len(errors) != 1:
            problems.append(f"{len(errors)} error lines, not one")
        elif errors[0] != lines[-1]:
            problems.append("the error line is not the last line")
    outcome = "failure" if problems else outcome
    if problems and trace:
        result.traceback = result.escaped or run(result.verb, ["--debug", *result.argv]).err
        known = [owner for pattern, owner in KNOWN_ELSEWHERE
                 if re.search(pattern, result.innermost)]
        if known:
            outcome, result.owner = "known", known[0]
    result.outcome = outcome
    return result


def data_snapshot() -> dict[str, str]:
    """Every file under data/ with a digest of its content."""
    return {str(p.relative_to(DATA)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(DATA.rglob("*")) if p.is_file()}


def fuzz(root: Path, *, seed: int = 21, invocations: int = 1500, seconds: float = 60.0,
         budget: Budget | None = None, progress=None) -> dict:
    """Run up to *invocations* random invocations (stopping once *seconds* are spent)
    in a workspace under *root*; returns a summary: counts by verb and outcome, the
    findings (failures and known ones, with the traceback's last line), the time."""
    rng = random.Random(seed)
    budget = budget or Budget()
    start = time.perf_counter()
    before = data_snapshot()
    workdir = os.getcwd()
    ws = Workspace(Path(root), rng)
    counts: dict[str, Counter] = {verb: Counter() for verb in VERBS}
    spent = Counter()
    findings, slowest = [], []
    os.chdir(ws.root)  # default output paths (kernelcast-data/) land in the workspace
    try:
        n = 0
        while n < invocations and time.perf_counter() - start < seconds:
            verb, argv = generate(ws, budget)
            result = judge(run(verb, argv))
            n += 1
            counts[verb][result.outcome] += 1
            spent[verb] += result.seconds
            slowest = sorted([*slowest, (result.seconds, verb, argv)], reverse=True)[:5]
            if result.outcome in ("failure", "known"):
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
                for path in ws.root.glob("f*"):
                    if path.is_dir():
                        shutil.rmtree(path, ignore_errors=True)
                    else:
                        path.unlink(missing_ok=True)
    finally:
        os.chdir(workdir)
    after = data_snapshot()
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    outcomes = Counter()
    for per_verb in counts.values():
        outcomes.update(per_verb)
    return {"seed": seed, "invocations": n, "seconds": round(time.perf_counter() - start, 1),
            "by_verb": {v: dict(c) for v, c in counts.items()}, "outcomes": dict(outcomes),
            "seconds_by_verb": {v: round(spent[v], 1) for v in VERBS},
            "budget_used": dict(budget.used), "findings": findings,
            "data_changed": changed,
            "slowest": [{"seconds": round(s, 2), "verb": v, "argv": a}
                        for s, v, a in slowest]}

# }}}
