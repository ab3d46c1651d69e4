"""The Pöppl–Herz model on the hardware facts (poppl-herz-facts): fitted from the H100's
committed microbenchmarks, its per-level costs (positive, L1 ≤ L2 ≤ DRAM, anchored on the
fitted coalesced access), its parts on a committed random kernel's facts, what strided
and L1-resident reads cost against a streamed one (NVIDIA's compiler from PyPI), a damaged
profile and its one-line refusals (tests/test_model_protocol.py runs it through the Model
protocol)."""

import json
import lzma
import warnings
from pathlib import Path

import loopy as lp
import numpy as np
import pytest

import kernelcast.models.extended as extended
from kernelcast.errors import KernelcastError, ProfileError
from kernelcast.fitting.dataset import load_dataset
from kernelcast.measure.store import Store
from kernelcast.models import get_model
from kernelcast.models.poppl_herz.facts import LEVELS
from kernelcast.profile import load_profile, save_profile

DATA = Path(__file__).resolve().parent.parent / "data"
THROUGHPUTS = DATA / "h100" / "criteria" / "microbenchmarks.json"


def _unpacked(tmp_path_factory, gpu: str, name: str) -> Path:
    path = tmp_path_factory.mktemp(gpu) / f"{name}.sqlite"
    path.write_bytes(lzma.open(DATA / gpu / f"{name}.sqlite.xz").read())
    return path


@pytest.fixture(scope="module")
def micro(tmp_path_factory):
    with Store(_unpacked(tmp_path_factory, "h100", "poppl-herz")) as store:
        return load_dataset(store, "poppl-herz")


@pytest.fixture(scope="module")
def fitted(micro):
    return get_model("poppl-herz-facts", throughputs=str(THROUGHPUTS)).fit(micro)


# {{{ the fit

@pytest.mark.parametrize("throughputs", [str(THROUGHPUTS), None])
def test_the_costs_are_positive_ordered_and_anchored_on_the_fit(micro, throughputs):
    model = get_model("poppl-herz-facts", throughputs=throughputs).fit(micro)
    costs = model.memory_["costs"]
    assert set(costs) == set(LEVELS) and all(c > 0 for c in costs.values())
    assert costs["read:l1"] <= costs["read:l2"] <= costs["read:dram"]
    assert costs["write:l2"] <= costs["write:dram"]
    # a coalesced float access, streamed from DRAM, costs what the fit says it does
    for direction in ("read", "write"):
        c = model.terms_[f"global:{direction}:coalesced"][0]
        assert costs[f"{direction}:dram"] * 4 == pytest.approx(c)
    assert model.memory_["hardware"] == "h100"
    assert set(model.memory_["sources"]) == set(LEVELS)
    origin = "load-throughput" if throughputs else "latency"
    assert origin in model.memory_["sources"]["read:l2"]


def test_the_throughput_ratios_price_l1_as_the_fitted_l1_resident_read(fitted):
    """Beside the fit, not in it: the interval microbenchmark reads a 128-float window
    that stays in L1, a warp's request 4 or 5 sectors; the L1 cost from the measured
    throughputs prices it within a factor 1.5 of what the fit found for it."""
    costs = fitted.memory_["costs"]
    per_item = [costs["read:l1"] * sectors for sectors in (4, 5)]  # 32 B over 32 lanes
    c = fitted.terms_["global:read:interval"][0]
    assert per_item[0] / 1.5 < c < per_item[1] * 1.5


def test_everything_but_global_accesses_is_the_poppl_herz_fit(micro, fitted):
    plain = get_model("poppl-herz").fit(micro).fitted_state()
    state = fitted.fitted_state()
    assert {k: v for k, v in state.items() if k != "memory"} == plain

# }}}


# {{{ a random kernel from its committed facts

@pytest.fixture(scope="module")
def random_cases(tmp_path_factory, h100_known_facts):
    """The first realistic random kernel, and the first unrestricted one whose groups
    fill less than a warp."""
    with Store(_unpacked(tmp_path_factory, "h100", "random")) as store:
        realistic = load_dataset(store, "random-realistic")
        unrestricted = load_dataset(store, "random-unrestricted")
    small = next(i for i, c in enumerate(unrestricted.cases) if np.prod(c.group_size) < 32)
    return [(realistic.cases[0], realistic.params(0)),
            (unrestricted.cases[small], unrestricted.params(small))]


@pytest.fixture(scope="module")
def random_case(random_cases):
    return random_cases[0]


@pytest.mark.parametrize("which", [0, 1], ids=["realistic", "small-groups"])
def test_a_random_kernel_is_priced_by_its_traffic(micro, fitted, random_cases, which):
    case, params = random_cases[which]
    parts = fitted.explain(case, params)
    assert sum(parts.values()) == pytest.approx(fitted.predict(case, params))
    assert not any(k.split(":")[-1] in ("coalesced", "complex", "interval", "constant")
                   for k in parts)
    details = fitted.details(case, params)
    assert (details["utilization"] < 1) == (which == 1)
    costs = details["seconds_per_byte"]
    memory = {k: v for k, v in parts.items() if k.startswith("global:")}
    assert memory == {f"global:{k}": pytest.approx(v * costs[k] / details["utilization"])
                      for k, v in details["bytes"].items() if v}
    # the rest is the Pöppl–Herz model's: base and operations
    plain = get_model("poppl-herz").fit(micro)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ops = {k: v for k, v in plain.explain(case, params).items()
               if not k.startswith(("global:", "constant:"))}
    assert {k: v for k, v in parts.items() if not k.startswith("global:")} == \
        pytest.approx(ops)


def test_a_launch_without_facts_is_one_line(fitted, random_case):
    case, params = random_case
    key = extended.SUMMARIES.key(f"{case.suite}:{case.name}", params,
                                 "NVIDIA H100 80GB HBM3")
    known = extended.SUMMARIES.entries[key]
    extended.SUMMARIES.entries[key] = "KernelcastError: no NVIDIA compiler"
    try:
        with pytest.raises(KernelcastError, match="no hardware facts for random") as err:
            fitted.predict(case, params)
    finally:
        extended.SUMMARIES.entries[key] = known
    assert "\n" not in str(err.value)

# }}}


# {{{ reads of three kinds, compiled

N = 1 << 24  # 64 MiB a float array: a stream does not stay in L2 between launches


def _pair(name: str, index: str, shape: str, cl_index: str | None = None):
    """(OpenCL source, Loopy twin) of y[i] = 2 x[INDEX] over N work-items, groups of 256
    (*cl_index*: the source's spelling of INDEX where it differs)."""
    source = (f"__kernel void {name}(__global const float *restrict x,\n"
              f"    __global float *restrict y)\n{{\n    int i = get_global_id(0);\n"
              f"    y[i] = 2.0f * x[{cl_index or index}];\n}}\n")
    knl = lp.make_kernel("{[i]: 0<=i<n}", f"y[i] = 2 * x[{index}]",
                         [lp.GlobalArg("x", np.float32, shape=(shape,)),
                          lp.GlobalArg("y", np.float32, shape=("n",)), "..."],
                         assumptions="n mod 256 = 0 and n >= 256", name=name,
                         lang_version=(2018, 2))
    return source, lp.split_iname(knl, "i", 256, outer_tag="g.0", inner_tag="l.0")


PARAMS = {"global_size": [N], "local_size": [256], "n": N}


@pytest.fixture(scope="module")
def reads(fitted, compiler):
    pairs = {"stream": _pair("stream", "i", "n"),
             "strided": _pair("strided", "8 * i", "8 * n"),
             "table": _pair("table", "i % 128", "128", "i & 0x7F")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {k: (fitted.explain(p, PARAMS), fitted.details(p, PARAMS))
                for k, p in pairs.items()}


def _read_seconds(parts):
    return sum(v for k, v in parts.items() if k.startswith("global:read:"))


def test_a_strided_read_costs_as_much_more_as_its_traffic(reads):
    """Stride 8 floats: every lane its own 32-byte sector, 8 times the bytes of the
    streamed read, all from DRAM (neither fits L2); its reads cost 8 times as much."""
    (stream, s_details), (strided, t_details) = reads["stream"], reads["strided"]
    traffic = t_details["bytes"]["read:dram"] / s_details["bytes"]["read:dram"]
    assert traffic == pytest.approx(8, rel=0.1)
    assert _read_seconds(strided) / _read_seconds(stream) == pytest.approx(traffic, rel=0.1)
    assert 1 < sum(strided.values()) / sum(stream.values()) < traffic


def test_a_table_that_stays_in_l1_costs_less_than_a_stream(reads, fitted):
    (stream, _), (table, details) = reads["stream"], reads["table"]
    served = details["bytes"]
    assert served["read:l1"] > 10 * (served["read:l2"] + served["read:dram"])
    costs = fitted.memory_["costs"]
    ratio = _read_seconds(table) / _read_seconds(stream)
    assert ratio < 2 * costs["read:l1"] / costs["read:dram"]
    assert sum(table.values()) < sum(stream.values())

# }}}


# {{{ profiles and refusals

def test_a_profile_whose_l1_byte_costs_more_than_dram_is_refused(fitted, tmp_path):
    path = save_profile(fitted, tmp_path / "phf.json")
    doc = json.loads(path.read_text())
    doc["state"]["memory"]["costs"]["read:l1"] = 1e-9  # an L1 byte dearer than DRAM's
    path.write_text(json.dumps(doc))
    with pytest.raises(ProfileError, match="L1 ≤ L2 ≤ DRAM") as err:
        load_profile(path)
    assert "\n" not in str(err.value)


def test_source_without_a_loopy_twin_is_refused_in_one_line(fitted):
    source, _ = _pair("stream", "i", "n")
    with pytest.raises(KernelcastError, match="Loopy twin") as err:
        fitted.predict(source, PARAMS)
    assert "\n" not in str(err.value)


def test_a_device_without_a_hardware_description_is_refused(tmp_path_factory):
    with Store(_unpacked(tmp_path_factory, "pocl", "poppl-herz")) as store:
        cpu = load_dataset(store, "poppl-herz-cpu")
    with pytest.raises(KernelcastError, match="describes NVIDIA GPUs") as err:
        get_model("poppl-herz-facts").fit(cpu)
    assert "\n" not in str(err.value)


def test_throughputs_of_another_gpu_are_refused(micro):
    other = DATA / "h200" / "criteria" / "microbenchmarks.json"
    with pytest.raises(KernelcastError, match="measured on 'NVIDIA H200'"):
        get_model("poppl-herz-facts", throughputs=str(other)).fit(micro)

# }}}
