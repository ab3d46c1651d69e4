"""The fine-grained model's microbenchmarks as compiled and run on the H100 and the H200
(data/<gpu>/criteria, benchmarks/criteria_microbenchmarks.py): the committed PTX and
SASS, made by nvcc and nvdisasm there, pass the checks of the paper's Figure 2 and are
the listings of today's sources; the characterization functions come from the H100's
measurements."""

import hashlib
import io
import json
import lzma
import tarfile
from pathlib import Path

import numpy as np
import pytest

from kernelcast.facts.ptx_checks import check_ptx, check_sass
from kernelcast.models.criteria.characterization import (Characterization,
                                                         shared_memory_function)
from kernelcast.suites.criteria_microbenchmarks import microbenchmarks

ROOT = Path(__file__).resolve().parent.parent / "data"
GPUS = ("h100", "h200")


def _listings(folder: Path) -> dict[str, str]:
    data = lzma.decompress((folder / "listings.tar.xz").read_bytes())
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return {m.name: tar.extractfile(m).read().decode() for m in tar.getmembers()}


def _gpu(gpu):
    folder = ROOT / gpu / "criteria"
    doc = json.loads((folder / "microbenchmarks.json").read_text())
    return (doc, {r["name"]: r for r in doc["records"]},
            {b.name: b for b in microbenchmarks(grid=doc["sms"] * 8)}, _listings(folder))


MEASURED = {gpu: _gpu(gpu) for gpu in GPUS}
DOC, RECORDS, BENCHES, LISTINGS = MEASURED["h100"]


@pytest.mark.parametrize("gpu", GPUS)
def test_every_microbenchmark_was_measured_from_todays_source(gpu):
    doc, records, benches, listings = MEASURED[gpu]
    assert set(records) == set(benches)
    for name, bench in benches.items():
        record = records[name]
        assert record["source_sha256"] == hashlib.sha256(bench.source.encode()).hexdigest(), \
            f"{gpu} {name}: the source changed since it was measured; rerun the benchmark"
        assert listings[f"{record['stem']}.cu"] == bench.source


@pytest.mark.parametrize("gpu, name", [(g, n) for g in GPUS for n in sorted(BENCHES)])
def test_the_gpus_listings_pass_both_checks(gpu, name):
    doc, records, benches, listings = MEASURED[gpu]
    bench, stem = benches[name], records[name]["stem"]
    assert check_ptx(bench, listings[f"{stem}.ptx"]) == []
    assert check_sass(bench, listings[f"{stem}.sass"]) == []


def test_a_listing_of_another_microbenchmark_fails_the_checks():
    add, mul = BENCHES["throughput/int/add"], BENCHES["throughput/f32/mul"]
    assert check_sass(add, LISTINGS[f"{RECORDS[mul.name]['stem']}.sass"])
    assert check_ptx(mul, LISTINGS[f"{RECORDS[add.name]['stem']}.ptx"])


def _cycles_per_load(one_warp: bool) -> dict[int, float]:
    out = {}
    for r in DOC["records"]:
        if r["kind"] == "bank-conflicts":
            timing = r["one_warp"] if one_warp else r
            out[r["params"]["ways"]] = timing["block_cycles_median"] / r["ops_per_thread"]
    return out


def test_bank_conflicts_cost_what_the_hardware_says():
    # one warp: every extra way adds the same cycles to a dependent load (a line)
    lone = _cycles_per_load(one_warp=True)
    ways = sorted(lone)
    slope = np.polyfit(ways, [lone[w] for w in ways], 1)
    assert np.allclose(np.polyval(slope, ways), [lone[w] for w in ways], rtol=0.02)
    # the full GPU: bandwidth-bound, so time doubles with the ways beyond two
    full = _cycles_per_load(one_warp=False)
    for w in (4, 8, 16, 32):
        assert full[w] / full[w // 2] == pytest.approx(2, rel=0.03)


def test_f_shmem_passes_through_its_samples():
    full = _cycles_per_load(one_warp=False)
    f = shared_memory_function(full)
    assert f.x == tuple(sorted(1 / w for w in full)) and f(1.0) == 1.0
    for w, c in full.items():  # r × F(r) is the measured relative performance
        assert (1 / w) * f(1 / w) == pytest.approx(full[1] / c)
    assert f(0.001) == f(1 / 32) and f(2.0) == f(1.0)  # the nearest sample outside
    between = f(np.linspace(1 / 32, 1, 50))
    assert between.min() >= min(f.y) - 1e-12 and between.max() <= max(f.y) + 1e-12


def test_a_characterization_refuses_bad_samples():
    with pytest.raises(ValueError, match="ascend"):
        Characterization("F", (0.5, 0.25), (1.0, 1.0))
    with pytest.raises(ValueError, match="two or more"):
        Characterization("F", (1.0,), (1.0,))
    with pytest.raises(ValueError, match="conflict-free"):
        shared_memory_function({2: 10.0, 4: 20.0})


def _by(kind_prefix, key, value):
    return {r["params"][key]: r[value] for r in DOC["records"]
            if r["name"].startswith(kind_prefix)}


def test_f_divergence_from_the_measured_branches():
    from kernelcast.models.criteria.characterization import divergence_function

    cycles = _by("divergence/", "divergent_fraction", "block_cycles_median")
    assert sorted(cycles) == [i / 8 for i in range(9)]
    f = divergence_function(cycles)
    for d, c in cycles.items():  # r × F(r) is the measured relative performance
        r = 1 / (1 + d)
        assert r * f(r) == pytest.approx(cycles[0] / c)
    # more divergent statements never run faster, and all-divergent costs less than twice
    ordered = [cycles[d] for d in sorted(cycles)]
    assert ordered == sorted(ordered) and cycles[1] < 2 * cycles[0]


@pytest.mark.parametrize("prefix, name", [("dram-intensity/", "F_DRAMThr"),
                                          ("arith-intensity/", "F_ARITHThr")])
def test_utilization_functions_from_the_intensity_runs(prefix, name):
    from kernelcast.models.criteria.characterization import utilization_function

    seconds = _by(prefix, "fraction", "min_s")
    f = utilization_function(name, seconds)
    assert f(1.0) == pytest.approx(1.0) and f.x[0] == min(seconds)
    for frac, t in seconds.items():  # throughput f / t relative to all warps working
        assert f(frac) == pytest.approx(frac / t * seconds[1])
    assert f(f.x[0]) < 0.5  # a sixteenth of the warps reaches well under the peak
