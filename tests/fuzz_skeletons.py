"""GROPHECY inputs of the command-line fuzz (tests/fuzzing.py): code skeletons (the
examples, copies edited token by token and character by character, their numbers made
extreme, and skeletons that stress the front-end: eight parallel dimensions, macros that
double at each step, a 5,000-digit literal, nesting thousands deep), hints files, and
the invocations of ``kernelcast project``.

A search of a whole layout space takes up to seconds: without budget for one
(``Budget.searches``), an invocation gets a hints file that fixes the block, folding and
unrolling (a damaged one keeps to the skeletons whose whole space is small).

Public names: prepare, gen_project.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from mutations import mutated

SKELETONS = Path(__file__).resolve().parent.parent / "examples" / "skeletons"
SMALL = ("rowsum", "transpose", "hotspot", "matmul")  # whole spaces searched in ~1 s
TOKEN = re.compile(r"\s+|/\*.*?\*/|//[^\n]*|[A-Za-z_]\w*|\d+|\"[^\"\n]*\"|#define|.", re.S)
WORDS = ["ld", "st", "comp", "for", "stream", "parallel_for", "hints", "#define", "float",
         "int", "double", "(hint:14)", "/*", "*/", "0:4", "9" * 40, "9" * 5000, "[", "]",
         "{", "}", "-", "/0", "*i", "%0", "N*N*N*N", "(", ")", ",", ":", "i, j, k"]
ALPHABET = "[](){}<>:;,=+-*/#\"'\n\t 0123456789abcijknrxyzABCIJMNT_\x00\u00e9\U0001f600"
NUMBERS = ("0", "-1", "1", "99999999999999999999", "9" * 5000, "1e308", "x", "1.5",
           "2147483648")


def _stressing() -> dict[str, str]:
    """Skeletons at the front-end's limits."""
    loop = "{\n  ld A[i]\n  comp 1\n}\n"
    doubling = "#define A0 2\n" + "".join(f"#define A{i} A{i - 1}*A{i - 1}\n"
                                          for i in range(1, 41))
    return {
        "eight_d.sk": "float A[4]\nparallel_for(2, 2, 2, 2, 2, 2, 2, 2) : a, b, c, d, e, "
                      "f, g, h\n{\n  ld A[a]\n  comp 1\n}\n",
        "doubling.sk": doubling + "float A[64]\nparallel_for(A40) : i\n" + loop,
        "doubling_text.sk": "#define B0 i\n" + "".join(
            f"#define B{i} B{i - 1}+B{i - 1}\n" for i in range(1, 41))
        + "float A[64]\nparallel_for(64) : i\n{\n  ld A[B40]\n}\n",
        "digits.sk": f"float A[{'9' * 5000}]\nparallel_for(64) : i\n" + loop,
        "parens.sk": "#define N " + "(" * 3000 + "64" + ")" * 3000
                     + "\nfloat A[N]\nparallel_for(N) : i\n" + loop,
        "loops.sk": "float A[64]\nparallel_for(64) : i\n{\n" + "for k = 0:2 {\n" * 2000
                    + "ld A[i]\n" + "}\n" * 2000 + "}\n",
        "huge.sk": "float A[1099511627776]\nparallel_for(1099511627776) : i\n" + loop,
        "zero.sk": "float A[0]\nparallel_for(0) : i\n" + loop,
        "empty.sk": "",
        "binary.sk": bytes(range(256)).decode("latin-1"),
    }


def prepare(ws) -> None:
    """The example skeletons (and SpinFlap's sample) and the stressing ones, in the
    workspace."""
    folder = ws.root / "skeletons"
    folder.mkdir(exist_ok=True)
    ws.skeletons = {}  # name -> (text, dimensions of its parallel_for, its macros)
    for path in sorted(SKELETONS.glob("*.sk")):
        text = path.read_text()
        loop = re.search(r"parallel_for\(([^)]*)\)", text)
        ws.skeletons[path.stem] = (text, loop.group(1).count(",") + 1,
                                   re.findall(r"#define (\w+)", text))
        (folder / path.name).write_text(text)
    shutil.copy(SKELETONS / "spinflap_sample.txt", folder)
    for name, text in _stressing().items():
        (folder / name).write_text(text, encoding="latin-1" if name == "binary.sk"
                                   else "utf-8")
    ws.stressing = sorted(_stressing())


def _mutated(ws, text: str) -> str:
    return mutated(text, ws.rng, TOKEN, WORDS, ALPHABET)


def _skeleton(ws, damaged: bool, cheap: bool) -> tuple[str, str]:
    """(path, example it comes from or ""): an example, or *damaged*: an edited copy, a
    stressing skeleton or a bad path; *cheap*: only examples whose whole space is small."""
    name = ws.choice(SMALL if cheap else sorted(ws.skeletons))
    text = ws.skeletons[name][0]
    if not damaged:
        return (str(ws.root / "skeletons" / f"{name}.sk") if ws.chance(0.8) else
                str(SKELETONS / f"{name}.sk")), name  # the examples: read only
    ws.damaged.add("skeleton")
    kind = ws.rng.random()
    path = ws.root / "skeletons" / f"{ws.fresh().name}.sk"  # beside SpinFlap's sample
    if kind < 0.55:
        path.write_text(_mutated(ws, text), encoding="utf-8", errors="surrogatepass")
        return str(path), ""
    if kind < 0.75:
        path.write_text(ws.numbers_replaced(text, NUMBERS))
        return str(path), ""
    if kind < 0.9:
        return str(ws.root / "skeletons" / ws.choice(ws.stressing)), ""
    return ws.bad_path(".sk"), ""


def _hints_text(dims: int) -> str:
    block = "[16, 16]" if dims == 2 else "[256]" if dims == 1 else "[4, 4, 4]"
    fold = ", ".join(["1"] * dims)
    return f"block = [{block}]\nfold = [[{fold}]]\nunroll = [false]\n"


def _hints(ws, dims: int, damaged: bool) -> str:
    """A hints file that fixes block, folding and unrolling; or, *damaged*, a damaged
    one, one the skeleton cannot use, or a bad path."""
    text = _hints_text(dims)
    kind = ws.rng.random()
    if not damaged:
        path = ws.fresh(".toml")
        path.write_text(text + ws.choice(("", "", "cache = [[]]\n")))
        return str(path)
    ws.damaged.add("hints file")
    if kind < 0.55:
        return ws.text_file(text, ".toml", "[]{}=,\"'\n 0123456789abcdefklnrstu_.",
                            ("0", "-1", "1e308", "nan", "inf", '"x"', "true", "1.5",
                             "99999999999999999999", "[]", "[[]]"))
    if kind < 0.85:
        path = ws.fresh(".toml")
        path.write_text(ws.choice((
            _hints_text(3 - dims) if dims in (1, 2) else "block = [[1]]\n",
            text + 'cache = [["NOT_AN_ARRAY"]]\n', text + "stage = { q = [4] }\n",
            text + "stage = { k = [0] }\n", text + "bogus = 1\n",
            text + "block = [[32, 32]]\n", "block = [[1024, 1024]]\n", 'block = "16x16"\n',
            "fold = [[0, 0]]\n" + text.split("\n", 1)[0] + "\n",
            f"block = {ws.deep('toml')}\n")))
        return str(path)
    return ws.bad_path(".toml")


def gen_project(ws, budget) -> list[str]:
    fault = ws.fault("skeleton", "hardware", "hints", "flags")
    whole = fault != "hints" and ws.chance(0.15) and budget.take("searches")  # no hints
    path, name = _skeleton(ws, fault == "skeleton", cheap=whole or fault == "hints")
    dims = ws.skeletons[name][1] if name else 2
    argv = ["project", path]
    if fault != "hardware" or ws.chance(0.9):
        argv += ["--hardware", ws.hardware_arg() if fault == "hardware" else ws.choice(
            ("h100", "h200", "fx5600", "c1060", str(ws.root / "c1060.json")))]
    if not whole:
        argv += ["--hints", _hints(ws, dims, fault == "hints")]
    flags = fault == "flags"
    if ws.chance(0.3):
        argv += ["--top", ws.choice(("0", "-1", "x", "1e3", "", "99999999999999999999")
                                    if flags else ("1", "3", "10"))]
    if ws.chance(0.4 if flags else 0.2):
        macros = ws.skeletons[name][2] if name else ["N"]
        argv += ["--define", *[ws.choice((
            f"{ws.choice(macros)}={ws.choice(('0', '-1', 'x', '1e3', '', '9' * 5000))}",
            "FLOPS=0", "FLOPS=-1", "ZZ_NOT_USED=3", "N", "=3", f"{ws.choice(macros)}=2**40")
            if flags else (f"{ws.choice(macros)}={ws.choice(('64', '256', '512'))}",))
            for _ in range(ws.rng.randrange(1, 3) if flags else 1)]]
    if ws.chance(0.3 if flags else 0.05):
        argv += ["--kernel", ws.choice(("1", "-1", "x", "99") if flags else ("0",))]
    if ws.chance(0.4):
        argv += ["--json"]
    return argv
