"""The Hong–Kim model on the hardware facts (kernelcast.models.hong_kim.facts): its
workload from hand-worked launch summaries, and from real kernels compiled with NVIDIA's
compiler from PyPI."""

import warnings
from dataclasses import replace
from pathlib import Path

import loopy as lp
import numpy as np
import pytest

from kernelcast.errors import KernelcastError
from kernelcast.hardware import load_hardware
from kernelcast.models import get_model
from kernelcast.models.extended.facts import launch_summary
from kernelcast.models.hong_kim.facts import memory_latency, workload_from_summary

H100 = load_hardware("h100")
#: latencies easy to follow by hand
HW = replace(H100, mem_ld=1000.0, l1_latency_cycles=10.0, l2_latency_cycles=100.0,
             dram_latency_cycles=500.0)


def summary(**kw):
    out = {"inst_executed": 0.0, "dram_bytes_read": 0.0, "dram_bytes_written": 0.0,
           "global_requests": 0.0, "uncoalesced_requests": 0.0, "uncoalesced_sectors": 0.0,
           "load_sectors": 0.0, "l1_hit_sectors": 0.0, "barriers": 0.0, "registers": 32.0,
           "shared_bytes": 0.0}
    return {**out, **kw}


def test_latency_follows_where_the_load_sectors_are_served():
    # 100 sectors: 50 hit L1; of the 50 misses, 25 sectors' bytes come from DRAM
    s = summary(load_sectors=100.0, l1_hit_sectors=50.0, dram_bytes_read=25 * 32.0)
    mix = 0.5 * 10 + 0.5 * (0.5 * 100 + 0.5 * 500)
    assert memory_latency(s, 1.0, HW) == pytest.approx(1000.0 * mix / 500)
    # timed back to back with the arrays in L2: no DRAM, every miss an L2 hit
    assert memory_latency(s, 0.0, HW) == pytest.approx(1000.0 * (0.5 * 10 + 0.5 * 100) / 500)
    # all from DRAM: the paper's Mem_LD
    s = summary(load_sectors=100.0, dram_bytes_read=100 * 32.0)
    assert memory_latency(s, 1.0, HW) == pytest.approx(1000.0)
    # no loads: the paper's Mem_LD too
    assert memory_latency(summary(), 1.0, HW) == 1000.0


def test_latency_needs_the_measured_levels():
    with pytest.raises(KernelcastError, match="latencies"):
        memory_latency(summary(load_sectors=1.0), 1.0, replace(HW, l2_latency_cycles=None))


def test_workload_counts_per_thread_from_warp_counts():
    # 4 groups of 64 threads: 8 warps; 80 warp requests, 16 of them of 8 sectors each
    s = summary(inst_executed=400.0, global_requests=80.0, uncoalesced_requests=16.0,
                uncoalesced_sectors=128.0, barriers=8.0, dram_bytes_read=3200.0,
                registers=40.0, shared_bytes=1024.0, load_sectors=100.0)
    wl, hw = workload_from_summary(s, 64, 4, 0.5, HW)
    assert (wl.threads_per_block, wl.blocks) == (64, 4)
    assert wl.coal_mem_insts == 64 / 8 and wl.uncoal_mem_insts == 16 / 8
    assert wl.uncoal_per_mw == 8.0
    assert wl.synch_insts == 1.0
    assert wl.comp_insts == (400 - 80 - 8) / 8
    assert wl.load_bytes_per_warp == 3200 * 0.5 / 80
    assert (wl.registers_per_thread, wl.shared_mem_per_block) == (40, 1024)
    assert hw.mem_ld == memory_latency(s, 0.5, HW) and hw.freq_hz == HW.freq_hz


def test_a_summary_from_before_the_memory_counts_is_refused():
    s = summary()
    del s["barriers"], s["l1_hit_sectors"]
    with pytest.raises(KernelcastError, match="l1_hit_sectors, barriers"):
        workload_from_summary(s, 32, 1, 1.0, HW)


def strided(stride: int, n: int = 1 << 16):
    """y[i] = 2 x[stride i] in groups of 256: a warp's 32 loads span 32 stride floats."""
    knl = lp.make_kernel("{[i]: 0<=i<n}", f"y[i] = 2 * x[{stride} * i]",
                         [lp.GlobalArg("x", np.float32, shape=(f"{stride} * n",)),
                          lp.GlobalArg("y", np.float32, shape=("n",)), "..."],
                         assumptions="n mod 256 = 0 and n >= 256",
                         name=f"strided{stride}", lang_version=(2018, 2))
    return lp.split_iname(knl, "i", 256, outer_tag="g.0", inner_tag="l.0")


def test_strided_loads_are_uncoalesced_with_their_sectors(compiler):
    n = 1 << 16
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        unit = launch_summary(strided(1), {"n": n}, "h100")
        wide = launch_summary(strided(32), {"n": n}, "h100")
    warps = n // 32
    assert unit["uncoalesced_requests"] == 0
    assert unit["global_requests"] == 2 * warps  # a load and a store per warp
    # stride 32 floats: every lane its own sector
    assert wide["uncoalesced_requests"] == warps
    assert wide["uncoalesced_sectors"] == 32 * warps
    assert wide["registers"] > 0 and wide["barriers"] == 0


def test_the_model_prices_the_uncoalesced_launch_higher(compiler):
    model = get_model("hong-kim-facts", hardware="h100").fit(None)
    n = 1 << 22  # 16,384 groups: enough warps for bandwidth to decide
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        unit = model.estimate(strided(1), {"n": n})
        wide = model.estimate(strided(32), {"n": n})
    assert wide.seconds > 1.5 * unit.seconds
    # both launches' arrays fit L2: loads are served faster than DRAM's latency
    assert unit.mem_l < H100.mem_ld
    with pytest.raises(KernelcastError, match="Loopy kernel"):
        from kernelcast.properties import extract_properties

        model.predict(extract_properties(strided(1)), {"n": n})


def test_the_cli_predicts_with_hardware_alone_and_refuses_without(compiler, capsys):
    from kernelcast.cli import main

    example = str(Path(__file__).resolve().parents[1] / "examples/kernels.py") + ":scale"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["predict", example, "--param", "n=1048576", "--model",
                     "hong-kim-facts", "--hardware", "h100"]) == 0
    out = capsys.readouterr().out
    assert "hong-kim-facts model" in out and "mem_l" in out
    assert main(["predict", example, "--param", "n=1048576", "--model",
                 "hong-kim-facts"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "needs --hardware" in err[0]


def test_a_scalar_argument_that_no_count_depends_on_is_passed_to_the_code_only(compiler):
    """y[i] = x[i] + k: the compiled launch needs k, the properties count in n alone."""
    knl = lp.make_kernel("{[i]: 0<=i<n}", "y[i] = x[i] + k",
                         [lp.GlobalArg("x, y", np.float32, shape=("n",)),
                          lp.ValueArg("k", np.int32), "..."],
                         assumptions="n mod 256 = 0 and n >= 256", name="shift",
                         lang_version=(2018, 2))
    knl = lp.split_iname(knl, "i", 256, outer_tag="g.0", inner_tag="l.0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = get_model("hong-kim-facts", hardware="h100").fit(None)
        assert model.predict(knl, {"n": 1 << 16, "k": 3}) > 0
