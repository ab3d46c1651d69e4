"""Tuning inputs of the command-line fuzz (tests/fuzzing.py): kernels whose parallel
loops are not yet mapped (a matrix product with a reduction, an elementwise one), search
spaces as TOML (small ones of a few variants; damaged copies; spaces at the tuner's
limits: an unrolled parallel loop, a restriction that divides by zero, tens of thousands
of variants, nesting thousands deep), and the invocations of ``kernelcast tune``.

Ranking needs a device: within ``Budget.real_measures`` a small space (or a damaged or
stressing one) is ranked and its best variant measured on this machine's device (PoCL);
otherwise tune gets a device name no device has, and is refused once its inputs are
read.

Public names: prepare, gen_tune.
"""

from __future__ import annotations

from tune_kernels import matmul_source

FACTORIES = '''"""Kernels to tune: parallel loops not yet mapped to the hardware."""
import loopy as lp
import numpy as np

''' + matmul_source("mm") + '''

def vec():
    knl = lp.make_kernel("{[i]: 0<=i<n}", "out[i] = 2*a[i]", lang_version=(2018, 2),
                         assumptions="n >= 1", name="vec")
    return lp.add_dtypes(knl, {"a": np.float32})


def mapped():
    return lp.split_iname(vec(), "i", 32, outer_tag="g.0", inner_tag="l.0")


def fails():
    raise RuntimeError("the factory fails")
'''

# kernel -> (sizes, a space of a few variants)
KERNELS = {
    "mm": (["n=24", "m=40"], "[axes.j]\ngroup = [4, 8]\n[axes.i]\ngroup = [1]\n"),
    "vec": (["n=1000"], "[axes.i]\ngroup = [16, 32]\nper_item = [1, 2]\n"),
    "mapped": (["n=1000"], "[axes.i]\ngroup = [16]\n"),
    "fails": (["n=10"], "[axes.i]\ngroup = [16]\n"),
}
MM = KERNELS["mm"][1]
STRESSING = (
    MM + "[unroll]\nk = [1, 4]\n",
    MM + "[unroll]\nj = [2]\n",  # a parallel loop unrolled
    MM + "[unroll]\nq = [2]\n",
    'restrict = ["j.group // 0 == 1"]\n' + MM,
    'restrict = ["j.group % 0 == 1 or i.group > 0"]\n' + MM,
    'restrict = ["nope > 1"]\n' + MM,
    'restrict = ["' + "(" * 3000 + "1" + ")" * 3000 + ' == 1"]\n' + MM,
    "[axes.j]\ngroup = [" + ", ".join(map(str, range(1, 3001))) + "]\n[axes.i]\n"
    "group = [" + ", ".join(map(str, range(1, 301))) + "]\n",
    MM + "[tile]\nk = [1, 2]\n[prefetch.a]\nover = [\"i\", \"k\"]\n",
    MM + "[split]\nk = [1, 2]\n",
    MM + "[tile]\nk = [0]\n",
    "[axes.j]\ngroup = [0]\n[axes.i]\ngroup = [-1]\n",
    "[axes.j]\ngroup = [99999999999999999999]\n",
    "[axes.j]\ngroup = [4096, 4096]\n[axes.i]\ngroup = [4096]\n",
    "[axes]\n",
    "",
)
ALPHABET = "[]{}=,\"'\n .0123456789abgijkmnoprstu_"
NUMBERS = ("0", "-1", "1e308", "5e-324", "nan", "inf", "-inf", '"x"', "true", "1.5",
           "99999999999999999999", "[]", "2147483648")


def prepare(ws) -> None:
    (ws.root / "tune_kernels.py").write_text(FACTORIES)


def _space(ws, kernel: str, damaged: bool) -> str:
    """A space's path: small and valid for *kernel*; or *damaged*: edited, stressing,
    or a bad path."""
    text = KERNELS.get(kernel, KERNELS["mm"])[1]
    kind = ws.rng.random()
    if not damaged:
        path = ws.fresh(".toml")
        path.write_text(text)
        return str(path)
    ws.damaged.add("space file")
    if kind < 0.5:
        return ws.text_file(text, ".toml", ALPHABET, NUMBERS)
    if kind < 0.85:
        path = ws.fresh(".toml")
        path.write_text(ws.choice(STRESSING))
        return str(path)
    return ws.bad_path(".toml")


def _real(ws) -> list[str]:
    """A small space (or, half the time, a damaged or stressing one) ranked by a valid
    model, its best variant measured on PoCL."""
    kernel = ws.choice(("mm", "vec"))
    sizes = KERNELS[kernel][0]
    model = ws.choice((["--model", "hong-kim", "--hardware", "h100"],
                       ["--profile", str(ws.root / "learned.json")],
                       ["--profile", str(ws.root / "paper.json")]))
    return ["tune", f"{ws.root}/tune_kernels.py:{kernel}", "--param", *sizes, "--space",
            _space(ws, kernel, ws.chance(0.5)), *model, "--measure-top", "1", "--device",
            "portable", "--db", str(ws.fresh(".sqlite"))] + (["--json"] if ws.chance(0.5)
                                                            else [])


def gen_tune(ws, budget) -> list[str]:
    if ws.chance(0.05) and budget.take("real_measures"):
        return _real(ws)
    fault = ws.fault("kernel", "sizes", "space", "model", "flags")
    flags = fault == "flags"
    kernel = ws.choice(("mm", "mm", "vec"))
    argv = ["tune", ws.choice((ws.kernel(), *(f"{ws.root}/tune_kernels.py:{k}" for k in (
        "mapped", "fails")))) if fault == "kernel" else f"{ws.root}/tune_kernels.py:{kernel}"]
    if fault != "sizes" or ws.chance(0.9):
        argv += ["--param", *(ws.sizes(valid=0.0) if fault == "sizes" else KERNELS[kernel][0])]
    if fault == "space" or ws.chance(0.8):
        argv += ["--space", _space(ws, kernel, fault == "space")]
    if fault == "model":
        argv += ws.choice((["--model", "hong-kim", "--hardware", ws.hardware_arg()],
                           ["--profile", ws.profile(valid=0.1)],
                           ["--model", ws.choice(("paper", "extended"))], []))
    else:
        argv += ws.choice((["--model", "hong-kim", "--hardware", ws.choice(("h100", "c1060"))],
                           ["--profile", ws.profile(1.0, models=("paper", "extended",
                                                                 "hong-kim", "learned"))]))
    if ws.chance(0.4 if flags else 0.2):
        argv += ["--measure-top", ws.choice(("0", "-1", "x", "1e3", "", "99999999999999999999")
                                            if flags else ("1", "2"))]
    if ws.chance(0.6):
        argv += ["--db", ws.out_path(".sqlite") if flags else str(ws.fresh(".sqlite"))]
    argv += ["--device", ws.no_device()]
    if ws.chance(0.1):
        argv += ["--backend", ws.choice(("opencl", "cuda"))]
    if flags and ws.chance(0.2):
        argv += ["--stat", *ws.statistics()]
    if flags and ws.chance(0.3):
        argv += ws.choice((["--max-variants", ws.choice(("0", "-1", "x", "1e3", "1"))],
                           ["--workers", ws.choice(("0", "x", "2", "-1"))],
                           ["--devices", ws.choice(("x", "0", "all", "99", "-1"))],
                           ["--scheduler", ws.choice(("nope", "tcp://", "tcp://127.0.0.1:1"))]))
    if ws.chance(0.4):
        argv += ["--json"]
    return argv
