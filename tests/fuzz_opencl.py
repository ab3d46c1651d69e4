"""OpenCL inputs of the command-line fuzz (tests/fuzzing.py): OpenCL C source (Pöppl &
Herz's random kernels, hand-written ones with local memory, loops and several kernels,
copies edited token by token and character by character, their numbers made extreme,
and sources at the front-end's limits: ``% 0``, a uchar loop that never ends, a 4-D
work-item, a 5,000-digit literal, nesting thousands deep), a Pöppl–Herz profile fitted
in the workspace, and the invocations of ``kernelcast predict`` on a .cl file.

Public names: prepare, poppl_herz_profile, gen_predict.
"""

from __future__ import annotations

import json
import lzma
import re
from pathlib import Path

from mutations import mutated

# the microbenchmarks measured on PoCL
PACKED = Path(__file__).resolve().parent.parent / "data" / "pocl" / "poppl-herz.sqlite.xz"

# name -> (source, its kernels, global size, local size)
HANDWRITTEN = {
    "scale.cl": ("""__kernel void scale(__global const float *a, __global float *out, float s)
{
    int i = get_global_id(0);
    out[i] = s * a[i];
}

kernel void shift(global const int *a, global int *out) {
    size_t i = get_global_id(0);
    out[i] = a[(i + 1) & 1023] << 2;
}
""", ("scale", "shift"), ("1024",), ("64",)),
    "tiled.cl": ("""#define TILE 16
__kernel void mm(__global const float *A, __global const float *B, __global float *C, int n) {
    __local float As[TILE][TILE];
    int tx = get_local_id(0), ty = get_local_id(1);
    int col = get_global_id(0), row = get_global_id(1);
    float acc = 0.0f;
    for (int t = 0; t < 4; t++) {
        As[ty][tx] = A[row * n + t * TILE + tx];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TILE; ++k)
            acc += As[ty][k] * B[(t * TILE + k) * n + col];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    C[row * n + col] = acc;
}
""", ("mm",), ("64", "64"), ("16", "16")),
    "blur.cl": ("""__constant float w[3] = {0.25f, 0.5f, 0.25f};
__kernel void blur(__global const uchar *in, __global float *out, const uint n) {
    uint i = get_global_id(0);
    float s = 0;
    for (int d = -1; d <= 1; d++)
        s += w[d + 1] * (float)in[clamp((int)i + d, 0, (int)n - 1)];
    if (i < n && s > 0.5f) out[i] = sqrt(s); else out[i] = -s;
}
""", ("blur",), ("4096",), ("128",)),
}

# sources at the front-end's limits (one kernel each, one dimension)
STRESSING = {
    "mod0.cl": "__kernel void k(__global int *a) { int i = get_global_id(0); "
               "a[i] = a[i] % 0 + i / 0; }\n",
    "uchar.cl": "__kernel void k(__global float *a) { float s = 0;\n"
                "  for (uchar c = 0; c < 300; c++) s += a[c];\n  a[0] = s; }\n",
    "dim4.cl": "__kernel void k(__global float *a) { a[get_global_id(3)] = 1.0f; }\n",
    "digits.cl": f"__kernel void k(__global float *a) {{ a[get_global_id(0)] = "
                 f"{'9' * 5000}; }}\n",
    "parens.cl": "__kernel void k(__global float *a) { a[0] = " + "(" * 3000 + "1.0f"
                 + ")" * 3000 + "; }\n",
    "trips.cl": "__kernel void k(__global float *a) { float s = 0;\n"
                "  for (long i = 0; i < 9223372036854775807; i++)\n"
                "    for (int j = 0; j < 2147483647; j++) s += a[j];\n  a[0] = s; }\n",
    "neg.cl": "__kernel void k(__global float *a) { for (int i = 10; i > 0; i += 1) "
              "a[i] = 0; }\n",
    "vector.cl": "__kernel void k(__global float4 *a) { a[get_global_id(0)] *= 2; }\n",
    "while.cl": "__kernel void k(__global int *a) { int i = 0; while (a[i]) i++; }\n",
    "empty.cl": "",
}
TOKEN = re.compile(r"\s+|/\*.*?\*/|//[^\n]*|#\w+|[A-Za-z_]\w*|[0-9.]+[fFuUlLxX0-9a-fA-F]*"
                   r"|<<=|>>=|[-+*/%&|^<>=!]=|\+\+|--|&&|\|\||<<|>>|.", re.S)
WORDS = ["for", "if", "else", "while", "return", "barrier", "__local", "__global",
         "get_global_id(0)", "get_local_id(1)", "get_global_id(3)", "int", "uchar", "float",
         "double", "float4", "half", "#define", "#include", "%", "/", "0", "9" * 40, ";",
         "{", "}", "(", ")", "[", "]", "sqrt", "i++", "x = x / 0"]
ALPHABET = "[](){}<>;:,=+-*/%&|^!~?#\"'\n\t .0123456789abcfgilnrstxyz_\x00\u00e9"
NUMBERS = ("0", "-1", "1", "4294967296", "99999999999999999999", "9" * 5000, "1e308",
           "0x7fffffff", "1.5", "-2147483648")


def prepare(ws) -> None:
    """Random kernels of both sets at N = 256, the hand-written and the stressing
    sources, in the workspace."""
    from kernelcast.suites.random_kernels import random_kernel

    folder = ws.root / "cl"
    folder.mkdir(exist_ok=True)
    ws.opencl = {}  # file name -> (source, kernels, global size, local size)
    for set_name in ("realistic", "unrestricted"):
        for index in range(4):
            kernel = random_kernel(set_name, index, 256)
            ws.opencl[f"{kernel.name}.cl"] = (
                kernel.opencl_source(), (kernel.name,), ("256", "256"),
                tuple(map(str, kernel.group)))
    ws.opencl.update(HANDWRITTEN)
    for name, (source, *_) in ws.opencl.items():
        (folder / name).write_text(source)
    for name, source in STRESSING.items():
        (folder / name).write_text(source)


def poppl_herz_profile(ws) -> dict:
    """The Pöppl–Herz model fitted to the PoCL microbenchmarks committed under data/pocl
    (about a second), as a profile document; written to the workspace."""
    from kernelcast.fitting.dataset import load_dataset
    from kernelcast.measure.store import Store
    from kernelcast.models import PopplHerzModel
    from kernelcast.profile import save_profile

    store = ws.root / "poppl-herz.sqlite"
    with lzma.open(PACKED) as packed:
        store.write_bytes(packed.read())
    with Store(store) as opened:
        model = PopplHerzModel().fit(load_dataset(opened, "poppl-herz-cpu"))
    save_profile(model, ws.root / "poppl-herz.json")
    return json.loads((ws.root / "poppl-herz.json").read_text())


def _mutated(ws, text: str) -> str:
    return mutated(text, ws.rng, TOKEN, WORDS, ALPHABET)


def _source(ws, damaged: bool) -> tuple[str, tuple]:
    """(path, (kernels, global size, local size)) of a .cl file: a good one, or
    *damaged*: an edited copy, a stressing one or a bad path (sizes of one dimension
    where unknown)."""
    name = ws.choice(sorted(ws.opencl))
    text, *sizes = ws.opencl[name]
    if not damaged:
        return str(ws.root / "cl" / name), tuple(sizes)
    ws.damaged.add("OpenCL source")
    kind = ws.rng.random()
    path = ws.fresh(".cl")
    if kind < 0.5:
        path.write_text(_mutated(ws, text), encoding="utf-8", errors="surrogatepass")
        return str(path), tuple(sizes)
    if kind < 0.65:
        path.write_text(ws.numbers_replaced(text, NUMBERS))
        return str(path), tuple(sizes)
    unknown = (("k",), ("64",), ("16",))
    if kind < 0.85:
        return str(ws.root / "cl" / ws.choice(sorted(STRESSING))), unknown
    if kind < 0.9:
        path.write_bytes(ws._damaged_text(text))
        return str(path), tuple(sizes)
    return ws.bad_path(".cl"), unknown


def gen_predict(ws, budget) -> list[str]:
    fault = ws.fault("source", "model", "sizes", "flags")
    path, (kernels, global_size, local_size) = _source(ws, fault == "source")
    argv = ["predict", path]
    kind = ws.rng.random()
    valid = 0.1 if fault == "model" else 1.0
    if kind < 0.65:
        argv += ["--profile", ws.profile(valid, models=("poppl-herz",))]
    elif kind < 0.85:
        argv += ["--profile", ws.profile(valid, models=("paper", "extended", "hong-kim"))]
    elif kind < 0.95:
        argv += ["--model", "hong-kim", "--hardware",
                 ws.hardware_arg() if fault == "model" else "h100"]
    elif fault == "model":
        argv += ws.choice((["--model", "poppl-herz"], [], ["--model", "paper"],
                           ["--profile", ws.profile(0.5, models=("learned", "criteria"))]))
    else:
        argv += ["--profile", str(ws.root / "learned.json")]
    sizes = fault == "sizes"
    if not sizes or ws.chance(0.9):
        argv += ["--global-size", *(global_size if not sizes or ws.chance(0.3) else ws.choice((
            ("0",), ("-1",), ("x",), ("1e3",), ("99999999999",), ("2", "2", "2", "2"),
            ("256", "256", "256"), ("1",), ("4294967296", "4294967296"), ("",))))]
    if not sizes and ws.chance(0.8) or sizes and ws.chance(0.6):
        argv += ["--local-size", *(local_size if not sizes or ws.chance(0.3) else ws.choice((
            ("0",), ("3",), ("7", "7"), ("2", "2", "2", "2"), ("1025", "1025"),
            ("4096",), ("x",), ("-8",))))]
    flags = fault == "flags"
    if ws.chance(0.3 if flags else 0.1):
        argv += ["--kernel-name", ws.choice(("nope", "") if flags else kernels)]
    for flag in ("--bytes-in", "--bytes-out"):
        if ws.chance(0.3 if flags else 0.1):
            argv += [flag, ws.choice(("0", "-1", "1e308", "x", "99999999999999999999") if flags
                                     else ("1024", "1", "4096", "1099511627776"))]
    if flags and ws.chance(0.1):
        argv += ["--param", ws.choice(("n=4", "n=0"))]
    if flags and ws.chance(0.1):
        argv += ["--stat", *ws.statistics()]
    if flags and ws.chance(0.1):
        argv += ["--registers-per-thread", ws.choice(("32", "0", "x"))]
    if ws.chance(0.4):
        argv += ["--json"]
    return argv
