"""The warp-level memory counters of OpenCL source (kernelcast.facts.opencl), against the
lanes of every warp listed one by one, and the CUDA translation that Nsight Compute
profiles (kernelcast.frontends.opencl.cuda)."""

from __future__ import annotations

import itertools
import json

import pytest

from kernelcast.cli import main
from kernelcast.facts.opencl import opencl_launch_facts

LD, ST = ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
          "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"), (
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum")
SHARED = ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
          "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum")


def _listed(global_size, local_size, sites):
    """Requests and sectors (global) or wavefronts (local) of each (space, direction),
    from every warp of the launch: *sites* are (space, direction, a warp's passes,
    element(x, y, pass) or None where the lane does not run it at that pass)."""
    out = {}
    gx, gy = global_size
    lx, ly = local_size
    for space, direction, loop, element in sites:
        requests = units = 0
        for bx, by in itertools.product(range(gx // lx), range(gy // ly)):
            lanes = [(bx * lx + i, by * ly + j) for j in range(ly) for i in range(lx)]
            for w in range(0, len(lanes), 32):
                for k in loop:
                    touched = [element(x, y, k) for x, y in lanes[w:w + 32]]
                    touched = [e for e in touched if e is not None]
                    if not touched:
                        continue
                    requests += 1
                    if space == "global":
                        units += len({4 * e // 32 for e in touched})
                    else:  # one word a bank a wavefront; lanes share a word
                        words = set(touched)
                        units += max(sum(1 for e in words if e % 32 == b) for b in range(32))
        key = (space, direction)
        got = out.get(key, (0, 0))
        out[key] = (got[0] + requests, got[1] + units)
    return out


def _predicted(source, global_size, local_size, scalars=None):
    facts = opencl_launch_facts(source, global_size, local_size, scalars=scalars)
    c = facts.counters
    return {("global", "load"): (c[LD[0]], c[LD[1]]), ("global", "store"): (c[ST[0]], c[ST[1]]),
            ("local", "load"): (c["smsp__sass_inst_executed_op_shared_ld.sum"], c[SHARED[0]]),
            ("local", "store"): (c["smsp__sass_inst_executed_op_shared_st.sum"], c[SHARED[1]])}


HEAD = ("__kernel void k(__global const float *a, __global float *b, int n) {\n"
        "    int x = get_global_id(0); int y = get_global_id(1);\n")

CASES = {
    "a guarded triangle, strided and broadcast reads": (
        HEAD + "    if (x < n && y <= x) b[y * 64 + x] = a[x * 40 + y] + a[y];\n}\n",
        (64, 16), (32, 4), {"n": 50},
        [("global", "load", [0], lambda x, y, k: x * 40 + y if x < 50 and y <= x else None),
         ("global", "load", [0], lambda x, y, k: y if x < 50 and y <= x else None),
         ("global", "store", [0], lambda x, y, k: y * 64 + x if x < 50 and y <= x else None)]),
    "a loop over rows and columns": (
        HEAD + "    float s = 0.0f;\n"
               "    for (int k = 0; k < 8; k++) s += a[x * 8 + k] + a[k * 64 + x];\n"
               "    b[y * 64 + x] = s;\n}\n",
        (64, 4), (16, 4), None,
        [("global", "load", range(8), lambda x, y, k: x * 8 + k),
         ("global", "load", range(8), lambda x, y, k: k * 64 + x),
         ("global", "store", [0], lambda x, y, k: y * 64 + x)]),
    "a loop from the lane's own column": (  # at pass t, lane x is at j = x + 3 t
        HEAD + "    for (int j = x; j < 16; j += 3) b[y * 64 + x] += a[j * 32 + y];\n}\n",
        (16, 8), (16, 2), None,
        [("global", "load", range(6), lambda x, y, t: (x + 3 * t) * 32 + y
          if x + 3 * t < 16 else None),
         ("global", "load", range(6), lambda x, y, t: y * 64 + x if x + 3 * t < 16 else None),
         ("global", "store", range(6), lambda x, y, t: y * 64 + x if x + 3 * t < 16 else None)]),
    "a grid-stride loop": (  # a warp's lanes stay consecutive at every pass
        HEAD + "    for (int i = get_global_id(0); i < n; i += get_global_size(0))\n"
               "        b[i] = 2.0f * a[i];\n}\n",
        (64, 1), (32, 1), {"n": 1000},
        [("global", "load", range(16), lambda x, y, t: x + 64 * t
          if x + 64 * t < 1000 else None),
         ("global", "store", range(16), lambda x, y, t: x + 64 * t
          if x + 64 * t < 1000 else None)]),
    "__local rows with bank conflicts": (
        "__kernel void k(__global const float *a, __global float *b) {\n"
        "    __local float t[64 * 8];\n"
        "    int x = get_global_id(0); int lx = get_local_id(0);\n"
        "    int ly = get_local_id(1); int y = get_global_id(1);\n"
        "    t[lx * 8 + ly] = a[y * 64 + x];\n"
        "    barrier(CLK_LOCAL_MEM_FENCE);\n"
        "    b[y * 64 + x] = t[ly * 64 + lx] + t[(lx * 2) % 64];\n}\n",
        (64, 8), (64, 8), None,
        [("global", "load", [0], lambda x, y, k: y * 64 + x),
         ("local", "store", [0], lambda x, y, k: (x % 64) * 8 + y % 8),
         ("local", "load", [0], lambda x, y, k: (y % 8) * 64 + x % 64),
         ("local", "load", [0], lambda x, y, k: ((x % 64) * 2) % 64),
         ("global", "store", [0], lambda x, y, k: y * 64 + x)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_memory_counters_are_the_warps_listed_one_by_one(name):
    """Launches small enough that every group and every counter value is listed: the
    requests, sectors and wavefronts are those of the warps listed one by one (warps of
    32 work-items, local axis 0 fastest; at each pass of a loop, a lane active where its
    guards hold and its own loop still runs)."""
    source, global_size, local_size, scalars, sites = CASES[name]
    expected = _listed(global_size, local_size, sites)
    got = _predicted(source, global_size, local_size, scalars)
    for key, (requests, units) in expected.items():
        assert got[key][0] == pytest.approx(requests, rel=1e-9), key
        assert got[key][1] == pytest.approx(units, rel=1e-9), key
    for key in set(got) - set(expected):
        assert got[key] == (0, 0)


def test_a_gather_from_data_takes_a_sector_a_lane():
    """An index read from memory has no value before run time: each active lane counts a
    sector of its own, and the site says it was assumed."""
    source = ("__kernel void k(__global const int *col, __global const float *x,\n"
              "                __global float *y) {\n"
              "    int i = get_global_id(0);\n    y[i] = x[col[i]];\n}\n")
    facts = opencl_launch_facts(source, (1024,), (128,))
    gather = next(s for s in facts.sites if s.site.array == "x")
    assert gather.site.random and gather.sectors_per_request == 32
    assert facts.counters[LD[0]] == 2 * 1024 / 32  # col and x, a request a warp each
    assert facts.counters[LD[1]] == 1024 / 32 * (4 + 32)


def test_counters_of_a_cl_file_from_the_command_line(tmp_path, capsys):
    kernel = tmp_path / "k.cl"
    kernel.write_text(CASES["a loop over rows and columns"][0])
    argv = ["counters", str(kernel), "--hardware", "h100", "--global-size", "64", "4",
            "--local-size", "16", "4"]
    assert main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    expected = _listed((64, 4), (16, 4), CASES["a loop over rows and columns"][4])
    assert doc["counters"][LD[1]] == pytest.approx(expected["global", "load"][1])
    assert doc["counters"]["launch__grid_size"] == 4
    assert "launch__registers_per_thread" in doc["missing"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "not predicted (needs NVIDIA's compiler" in out and "line 4" in out
    assert main([*argv, "--param", "n=3"]) == 2
    assert "--param is for Loopy kernels" in capsys.readouterr().err
    assert main(argv[:4]) == 2
    assert "needs --global-size" in capsys.readouterr().err


def test_every_real_program_translates_to_cuda_that_nvrtc_compiles(compiler):
    """Each program of the real OpenCL set, with each launch's build options, is CUDA C++
    that NVRTC compiles (Nsight Compute profiles the translation)."""
    from kernelcast.facts.compiler import _nvrtc, _nvrtc_ptx
    from kernelcast.frontends.opencl.cuda import to_cuda, work_dim_option
    from kernelcast.suites.opencl_programs import PROGRAMS, source

    library = _nvrtc()[0]
    seen = set()
    for launch in PROGRAMS:
        key = (launch.program, launch.options, len(launch.global_size))
        if key in seen:
            continue
        seen.add(key)
        options = launch.options.replace("-D ", "-D").split()
        ptx = _nvrtc_ptx(library, to_cuda(source(launch)),
                         ["--gpu-architecture=compute_90", work_dim_option(launch.global_size),
                          *options])
        assert f".entry {launch.kernel}(" in ptx, launch.name
