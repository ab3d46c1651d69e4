"""The on-disk properties cache: hits, exact round trips, damaged entries, stable keys."""

import json
import os
import subprocess
import sys
import threading
import warnings
from fractions import Fraction

import islpy as isl
import loopy as lp
import numpy as np
import pandas as pd
import pytest

import kernelcast as kc
from kernelcast.errors import KernelcastWarning
from kernelcast.properties import cache, cached_properties
from kernelcast.suites import kernels

KERNELS = {
    "scale": kernels.scale,
    "matmul_tiled": lambda: kernels.matmul_tiled((16, 8)),
    "transpose": kernels.transpose,
    "nbody": lambda: kernels.nbody(64),
    "finite_difference": kernels.finite_difference,
    "convolution": kernels.convolution,
}
SCALES = (1, 2, 7, 33, 1000, 4099)


def spmv():
    """A loop bound read from data: its properties need data statistics."""
    knl = lp.make_kernel(
        ["{[i]: 0<=i<n}", "{[jj]: 0<=jj<rowlen}"],
        """
        for i
            <> start = row_ptr[i]
            <> rowlen = row_ptr[i+1] - start
            y[i] = sum(jj, values[start + jj] * x[cols[start + jj]])
        end
        """,
        [lp.GlobalArg("row_ptr, cols", np.int32, shape=lp.auto),
         lp.GlobalArg("values, x", np.float32, shape=lp.auto), "..."],
        lang_version=(2018, 2), assumptions="n >= 1")
    return lp.split_iname(knl, "i", 64, outer_tag="g.0", inner_tag="l.0")


@pytest.fixture
def extractions(monkeypatch):
    """Counts the extractions cached_properties makes (each one still extracts)."""
    calls = []
    extract = cache.extract_properties

    def counting(knl, **kwargs):
        calls.append(knl)
        return extract(knl, **kwargs)

    monkeypatch.setattr(cache, "extract_properties", counting)
    return calls


def entries(folder):
    return sorted(p for p in folder.iterdir() if p.suffix == ".json")


def sizes(props):
    return [{p: s + i for i, p in enumerate(props.params)} for s in SCALES]


def reread(pwqp):
    return isl.PwQPolynomial.read_from_str(pwqp.get_ctx(), str(pwqp))


def assert_same(fresh, cached):
    """*cached* holds what *fresh* holds and evaluates exactly as it does."""
    for attr in ("kernel_name", "names", "params", "statistics", "reference", "accesses",
                 "local_memory"):
        assert getattr(cached, attr) == getattr(fresh, attr), attr
    assert str(cached._assumptions) == str(fresh._assumptions)
    for name in fresh.names:
        if name.startswith("minls_"):
            continue  # a fold of two counts compared here
        # isl prints a count it read with a piece's disjuncts perhaps in another order
        assert str(cached.symbolic(name)) in (str(fresh.symbolic(name)),
                                              str(reread(fresh.symbolic(name)))), name
    for params in sizes(fresh):
        assert cached.evaluate(params) == fresh.evaluate(params), params
        assert cached.extent(params) == fresh.extent(params), params
        assert cached.local_memory_bytes(params) == fresh.local_memory_bytes(params)


def test_a_second_call_reads_the_entry(tmp_path, extractions):
    first = cached_properties(kernels.scale(), cache_dir=tmp_path)
    assert len(extractions) == 1 and len(entries(tmp_path)) == 1
    again = cached_properties(kernels.scale(), cache_dir=tmp_path)  # built anew, same key
    as_loop_kernel = cached_properties(kernels.scale().default_entrypoint, cache_dir=tmp_path)
    assert len(extractions) == 1 and len(entries(tmp_path)) == 1
    other = cached_properties(kernels.scale(gsize=128), cache_dir=tmp_path)
    assert len(extractions) == 2 and len(entries(tmp_path)) == 2
    assert again.names == as_loop_kernel.names == first.names
    assert other.evaluate({"n": 1000})["workgroup"] == 8  # not the other entry's 4
    assert first.evaluate({"n": 1000})["workgroup"] == 4
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_cached_properties_are_exact(name, tmp_path, extractions):
    fresh = kc.extract_properties(KERNELS[name]())
    miss = cached_properties(KERNELS[name](), cache_dir=tmp_path)
    hit = cached_properties(KERNELS[name](), cache_dir=tmp_path)
    assert len(extractions) == 1
    assert_same(fresh, miss)
    assert_same(fresh, hit)
    assert set(vars(hit)) == set(vars(fresh))  # built as Properties builds itself
    # a first call returns what later calls read, symbolic forms included
    for n in fresh.names:
        assert str(hit.symbolic(n)) == str(miss.symbolic(n)), n


def test_symbolic_forms_read_back_verbatim(tmp_path):
    fresh = kc.extract_properties(kernels.scale())
    hit = cached_properties(kernels.scale(), cache_dir=tmp_path)
    assert [str(hit.symbolic(n)) for n in hit.names] == [
        str(fresh.symbolic(n)) for n in fresh.names]


def test_data_statistics_are_part_of_the_key(tmp_path, extractions):
    stats = ({"rowlen": 12.5}, {"rowlen": 16}, {"rowlen": Fraction(25, 3)})
    first = [cached_properties(spmv(), data_statistics=s, cache_dir=tmp_path) for s in stats]
    again = [cached_properties(spmv(), data_statistics=s, cache_dir=tmp_path) for s in stats]
    assert len(extractions) == 3 and len(entries(tmp_path)) == 3
    for s, props, hit in zip(stats, first, again, strict=True):
        fresh = kc.extract_properties(spmv(), data_statistics=s)
        assert hit.statistics == fresh.statistics == s
        assert_same(fresh, hit)
    assert first[0].evaluate({"n": 100})["add_f32"] == 1250.0
    assert first[1].evaluate({"n": 100})["add_f32"] == 1600.0


INJECTED = {"evaluate": "__import__('os').getpid(), ", "extent": "exit(3), ",
            "assumptions_hold": "vars(), "}


def damage(path, how):
    text = path.read_text()
    entry = json.loads(text)
    props = entry["properties"]
    if how == "not JSON":
        path.write_text("{ this is not json")
        return
    if how == "truncated":
        path.write_text(text[: len(text) // 2])
        return
    if how == "format":
        entry["format"] = cache.FORMAT_VERSION + 1
    elif how == "key":
        entry["key"]["kernel"] = "0" * 16  # another kernel's entry under this name
    elif how == "count":
        props["counts"][next(iter(props["counts"]))] = "[n] -> { (2 * n) }"
    elif how.startswith("code"):  # the checksum fits: only the check of the code stops it
        name = how.split()[1]
        props["sources"][name] = props["sources"][name].replace(
            "return (", "return (" + INJECTED[name])
        entry["checksum"] = cache._checksum(props)
    path.write_text(json.dumps(entry))


@pytest.mark.parametrize("how", ["not JSON", "truncated", "format", "key", "count",
                                 "code evaluate", "code extent", "code assumptions_hold"])
def test_a_damaged_entry_is_deleted_and_extracted_again(how, tmp_path, extractions):
    fresh = cached_properties(kernels.transpose(), cache_dir=tmp_path)
    [path] = entries(tmp_path)
    damage(path, how)
    with pytest.warns(KernelcastWarning, match="damaged properties cache entry"):
        again = cached_properties(kernels.transpose(), cache_dir=tmp_path)
    assert len(extractions) == 2
    assert_same(fresh, again)
    json.loads(path.read_text())  # written whole again
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cached_properties(kernels.transpose(), cache_dir=tmp_path)
    assert len(extractions) == 2


def test_an_unwritable_folder_only_costs_the_caching(tmp_path, extractions):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    folder = blocker / "cache"  # a folder inside a file: cannot exist, even for root
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = cached_properties(kernels.scale(), cache_dir=folder)
        second = cached_properties(kernels.scale(), cache_dir=folder)
    assert len(extractions) == 2
    [warning] = [str(w.message) for w in caught if issubclass(w.category, KernelcastWarning)]
    assert warning.startswith(f"cannot write the properties cache {folder} (")
    assert warning.endswith("); extracting without caching")
    assert first.evaluate({"n": 5000}) == second.evaluate({"n": 5000})


def test_concurrent_writers_of_one_key(tmp_path):
    """Readers see a whole entry or none while writers replace it."""
    path = tmp_path / "entry.json"
    text = json.dumps({"payload": "x" * 200_000})
    seen, stop = [], threading.Event()

    def read():
        while not stop.is_set():
            try:
                seen.append(json.loads(path.read_text()) == json.loads(text))
            except FileNotFoundError:
                pass

    def write():
        for _ in range(25):
            cache._write(path, text)

    reader = threading.Thread(target=read)
    reader.start()
    writers = [threading.Thread(target=write) for _ in range(6)]
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    stop.set()
    reader.join()
    assert seen and all(seen)
    assert [p.name for p in tmp_path.iterdir()] == ["entry.json"]


CHILD = """
import sys
from kernelcast.properties import cache
from kernelcast.suites import kernels
calls = []
extract = cache.extract_properties
cache.extract_properties = lambda knl, **kw: calls.append(1) or extract(knl, **kw)
for build in (kernels.matmul_tiled, kernels.nbody, kernels.transpose, kernels.convolution):
    print(cache.kernel_digest(build()))
    cache.cached_properties(build(), cache_dir=sys.argv[1])
print(len(calls))
"""


def test_keys_are_equal_across_processes_and_hash_seeds(tmp_path):
    """Loopy builds these kernels differently under different hash seeds (parameter order
    of their sets, order of index sums); their keys, and so the entries, are the same."""
    builds = (kernels.matmul_tiled, kernels.nbody, kernels.transpose, kernels.convolution)
    for build in builds:
        cached_properties(build(), cache_dir=tmp_path)
    here = [cache.kernel_digest(build()) for build in builds]
    for seed in ("1", "2", "5"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path)], env=env,
                             capture_output=True, text=True, check=True).stdout.split()
        assert out == [*here, "0"], seed  # same digests, and every kernel a hit
    assert len(entries(tmp_path)) == len(builds)


def test_default_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("KERNELCAST_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.default_cache_dir() == tmp_path / "home/.cache/kernelcast/properties"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.default_cache_dir() == tmp_path / "xdg/kernelcast/properties"
    monkeypatch.setenv("KERNELCAST_CACHE_DIR", str(tmp_path / "mine"))
    assert cache.default_cache_dir() == tmp_path / "mine"
    cached_properties(kernels.scale())
    assert len(entries(tmp_path / "mine")) == 1


def test_not_a_kernel_is_refused_as_extraction_refuses_it(tmp_path):
    with pytest.raises(kc.NotALoopyKernelError):
        cached_properties("out[i] = 2*a[i]", cache_dir=tmp_path)
    assert not tmp_path.exists() or not list(tmp_path.iterdir())


# {{{ suite cases, cached under their names

def _twins():
    """Case 0 of each random suite: the same kernel name and sizes, two kernels."""
    from kernelcast.suites.random_kernels import RANDOM_REALISTIC, RANDOM_UNRESTRICTED

    return [next(c for c in suite.cases() if c.variant == "0")
            for suite in (RANDOM_REALISTIC, RANDOM_UNRESTRICTED)]


@pytest.fixture
def builds(monkeypatch):
    """Counts the suite kernels built (Case.kernel)."""
    from kernelcast.suites.suite import Case

    calls = []
    build = Case.kernel

    def counting(case):
        calls.append(case.name)
        return build(case)

    monkeypatch.setattr(Case, "kernel", counting)
    return calls


def test_a_suite_case_is_read_by_its_name_without_building_its_kernel(
        tmp_path, monkeypatch, builds, extractions):
    from kernelcast.fitting.dataset import PropertyCache
    from kernelcast.suites.paper import TEST_CPU

    monkeypatch.setenv("KERNELCAST_CACHE_DIR", str(tmp_path))
    case = TEST_CPU.cases()[0]
    fresh = kc.extract_properties(case.kernel())
    builds.clear()
    miss = PropertyCache().properties(case)
    assert len(builds) == len(extractions) == 1 and len(entries(tmp_path)) == 1
    hit = PropertyCache().properties(case)  # another dataset, as another process has
    assert len(builds) == len(extractions) == 1
    assert_same(fresh, miss)
    assert_same(fresh, hit)
    PropertyCache().properties(case.with_params({"n": 64}))  # other sizes: the same kernel
    assert len(builds) == 1
    # kernelcast's code changed: the name no longer serves
    monkeypatch.setattr(cache, "_source_digest", lambda: "edited")
    PropertyCache().properties(case)
    assert len(builds) == len(extractions) == 2 and len(entries(tmp_path)) == 2


def test_a_class_of_the_same_name_but_not_the_suites_own_is_extracted(tmp_path, monkeypatch):
    from dataclasses import replace

    from kernelcast.fitting.dataset import PropertyCache
    from kernelcast.suites.paper import TEST_CPU

    monkeypatch.setenv("KERNELCAST_CACHE_DIR", str(tmp_path))
    case = next(c for c in TEST_CPU.cases() if c.class_name == "nbody")
    PropertyCache().properties(case)
    other = replace(case, kclass=replace(case.kclass, build=lambda c: kernels.scale()))
    props = PropertyCache().properties(other)
    assert props.names == kc.extract_properties(kernels.scale()).names
    assert len(entries(tmp_path)) == 1  # not cached under the suite's name


def test_a_variant_of_kernelcasts_own_family_is_read_by_its_name(tmp_path, monkeypatch,
                                                                 extractions):
    from dataclasses import replace

    from kernelcast.tune.corpus import CORPUS
    from kernelcast.tune.variants import DiskPropertyCache, VariantCase

    monkeypatch.setenv("KERNELCAST_CACHE_DIR", str(tmp_path))
    fam = CORPUS["poly"]
    variants = [v for _, v in zip(range(2), fam.space.variants())]
    made = []
    mine = replace(fam, build=lambda: made.append(1) or fam.build())
    cases = [VariantCase(f, v, f"{f.name}/{i}") for f in (fam, mine)
             for i, v in enumerate(variants)]
    fresh = [kc.extract_properties(c.kernel()) for c in cases[:2]]
    made.clear()
    first = [DiskPropertyCache().properties(c) for c in cases[:2]]
    assert len(extractions) == 2 and len(entries(tmp_path)) == 2
    built = []
    monkeypatch.setattr(VariantCase, "kernel", lambda c: built.append(c) or fam.build())
    again = [DiskPropertyCache().properties(c) for c in cases[:2]]  # read, none built
    assert not built and len(extractions) == 2
    for f, a, b in zip(fresh, first, again, strict=True):
        assert_same(f, a)
        assert_same(f, b)
    # a family of the same name that is not the corpus's own: its kernels are built
    monkeypatch.undo()
    monkeypatch.setenv("KERNELCAST_CACHE_DIR", str(tmp_path))
    [DiskPropertyCache().properties(c) for c in cases[2:]]
    assert len(made) == 2


def test_the_random_suites_kernels_of_one_name_keep_their_own_properties(tmp_path,
                                                                          monkeypatch):
    from kernelcast.fitting.dataset import Dataset
    from kernelcast.models import get_model

    monkeypatch.setenv("KERNELCAST_CACHE_DIR", str(tmp_path))
    twins = _twins()
    assert twins[0].kernel_name == twins[1].kernel_name
    assert twins[0].params == twins[1].params
    fresh = [kc.extract_properties(c.kernel()).evaluate({}) for c in twins]
    assert fresh[0] != fresh[1]
    info = pd.DataFrame({"suite": [c.suite for c in twins]})
    data = Dataset(twins, np.ones(2), info, {"device": "d", "driver": "", "backend": ""})
    assert [data.properties(i).evaluate({}) for i in range(2)] == fresh
    model = get_model("paper")
    values = [model.case_values(data, i) for i in range(2)]
    assert values == [model.features(kc.extract_properties(c.kernel()), {}) for c in twins]
    assert values[0] != values[1]

# }}}
