"""kernelcast.tune.launches: a launch entry of each kind rebuilds the very kernel the
committed plan (data/counters-plan.json.xz) recorded when it was made — its CUDA code,
function name and launch geometry — and with the parameters it was launched at."""

import json
import lzma
import warnings
from pathlib import Path

import pytest

from kernelcast.measure.codegen import generate
from kernelcast.tune.launches import launch_kernel

PLAN = Path(__file__).resolve().parent.parent / "data" / "counters-plan.json.xz"


@pytest.fixture(scope="module")
def plan():
    return json.loads(lzma.decompress(PLAN.read_bytes()))


@pytest.mark.parametrize("kind, label", [
    ("suite", "measurement:matmul_tiled[square]/float32/g16x16/l=4096,m=4096,n=4096"),
    ("random", "random:realistic_1/n=2048"),
    ("family", "family:matmul/j.group=16,j.per_item=1,i.group=2,i.per_item=1,unroll.k=1"),
    ("corpus", "corpus:outer/j.group=16,j.per_item=1,i.group=2,i.per_item=1"),
])
def test_an_entry_rebuilds_the_kernel_its_plan_recorded(plan, kind, label):
    [entry] = [e for e in plan if e["label"] == label]
    assert entry["kind"] == kind
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        knl, params = launch_kernel(entry)
        generated = generate(knl, "cuda")
    assert generated.name == entry["function"]
    assert generated.code == entry["code"]
    assert params == ({} if kind == "random" else entry["params"])
    grid, block = generated.launch_sizes(params)
    assert (list(grid), list(block)) == (entry["grid"], entry["block"])


def test_the_parameters_are_a_copy_of_the_entry():
    entry = {"kind": "corpus", "family": "outer", "params": {"n": 8192},
             "variant": {"j.group": 16, "j.per_item": 1, "i.group": 1, "i.per_item": 1}}
    _, params = launch_kernel(entry)
    params["n"] = 1
    assert entry["params"] == {"n": 8192}
