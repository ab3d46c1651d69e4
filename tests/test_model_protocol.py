"""Every registered model of every workload (kernelcast.models.base.workloads and
model_names) through the same checks, as scikit-learn's test_common runs every estimator
of all_estimators through parametrize_with_checks: keyword-only construction and clones,
parameters checked by fit and not by the constructor, refusal to predict when unfitted,
explain summing to seconds and predict on real workloads, predict_dataset equal to them
case by case, one-line refusals of another workload's kind and of sizes that are not
integers, a profile round trip, a broken profile refused with its path, and two fits of
the same data giving bit-identical results that set provenance_ and fit_report_.

CONFIGS holds each registered model with its defaults and the configurations that take
another path through a model's code; EXCEPTIONS names the checks a configuration cannot
take, with the reason (the check is then expected to fail, strictly, so that an entry no
longer needed is noticed). SUBJECTS gives, per workload, what the checks need of its
configurations, all from committed data:

- "kernel": the H100 OpenCL measurements (data/h100/opencl.sqlite, small subsets so that
  the extended model's fit stays quick); the models on the facts read their launches from
  data/h100/facts-summaries.json.xz, which tests/test_facts_model.py checks against what
  the facts predict now;
- "opencl": the H100's Pöppl–Herz microbenchmarks (data/h100/poppl-herz.sqlite.xz, the
  families that the facts variant needs, to fit in a second), the committed H100
  profiles, random kernels of data/h100/random.sqlite.xz (their facts committed as
  above), a kernel's source and a launch of the OpenCL programs
  (kernelcast.suites.opencl_programs);
- "variant": the poly family of the training corpus (data/h100/tuning-corpus-cuda.sqlite)
  and the committed H100 profiles; the learned model on the facts reads the family's
  launches from data/h100/learned-summaries.json.xz (tests/test_learned_facts.py checks
  them against the facts);
- "skeleton": the example skeletons (examples/skeletons) on packaged hardware;
- "profile": the H100's committed criteria microbenchmarks and profile and two of its
  profiled applications (Nsight Compute CSVs of data/h100/criteria/ncu.tar.xz).
"""

import json
import lzma
import tarfile
import warnings
from pathlib import Path

import numpy as np
import pytest
from opencl_sample import OPENCL_SAMPLE

import kernelcast as kc
from kernelcast.errors import KernelcastError, NotFittedError
from kernelcast.fitting.dataset import PropertyCache, load_dataset
from kernelcast.measure.store import Store
from kernelcast.models import get_model, model_class, model_names
from kernelcast.models.base import workloads
from kernelcast.profile import load_profile, save_profile
from kernelcast.suites import kernels

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data" / "h100"
PROFILES = ROOT / "data" / "profiles"
H100 = DATA / "opencl.sqlite"
SKELETONS = ROOT / "examples" / "skeletons"
#: id -> (registered name, parameters): every registered model of every workload with its
#: defaults, and configurations that take another path through a model's code
CONFIGS = {name: (name, {}) for workload in workloads() for name in model_names(workload)}
CONFIGS.update({
    # the Hong–Kim model with the registers its suite kernels compiled to
    "hong-kim-registers": ("hong-kim", {"registers": str(DATA / "registers.json")}),
    # the slides' simple model: every global access priced as a coalesced one
    "poppl-herz-simple": ("poppl-herz", {"classes": False}),
    # cache levels priced by measured load throughputs, not by the hardware's latencies
    "poppl-herz-facts-throughputs": (
        "poppl-herz-facts", {"throughputs": str(DATA / "criteria" / "microbenchmarks.json")}),
    # GROPHECY on a packaged GPU named, fitted without a dataset
    "grophecy-c1060": ("grophecy", {"hardware": "c1060"}),
})
#: (configuration, check) -> why the configuration cannot take the check; the check is
#: then expected to fail, strictly, so that an entry no longer needed is noticed
NO_DATASET = ("it predicts {}, and no Dataset holds them: a measurement store's rows are "
              "suite cases and kernels")
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("grophecy", "test_predict_dataset_is_predict_case_by_case"):
        NO_DATASET.format("code skeletons"),
    ("grophecy-c1060", "test_predict_dataset_is_predict_case_by_case"):
        NO_DATASET.format("code skeletons"),
    ("criteria", "test_predict_dataset_is_predict_case_by_case"):
        NO_DATASET.format("profiled applications (Nsight Compute's launches)"),
}
#: configurations whose fitted model is a committed H100 profile: the round trip also
#: checks what restore makes of a profile fitted elsewhere, and fits that take minutes
#: are left to the two-fits check, on a small real dataset
COMMITTED = {"poppl-herz": "nvidia-h100-80gb-hbm3-opencl-poppl-herz.json",
             "poppl-herz-simple": "nvidia-h100-80gb-hbm3-opencl-poppl-herz-simple.json",
             "learned": "nvidia-h100-80gb-hbm3-cuda-learned.json",
             "learned-facts": "nvidia-h100-80gb-hbm3-cuda-learned-facts.json",
             "criteria": "nvidia-h100-80gb-hbm3-cuda-criteria.json"}
CLASSES = ["scale_add", "global_access", "arithmetic", "empty", "parallelism", "chain",
           "matmul_tiled"]
CACHE = PropertyCache()
#: a 2-D kernel's source (tests/opencl_sample.py), predicted at a launch below
OPENCL_KERNEL = OPENCL_SAMPLE


@pytest.fixture(scope="module", autouse=True)
def known_facts(h100_known_facts):
    """Every model on the facts reads the committed launches: the kernel and opencl
    models those of conftest's h100_known_facts, the learned model on the facts those of
    data/h100/learned-summaries.json.xz."""
    import kernelcast.models.learned.facts as learned_facts
    from kernelcast.models.extended.facts import SummaryCache

    before = learned_facts.SUMMARIES
    learned_facts.SUMMARIES = SummaryCache(DATA / "learned-summaries.json.xz")
    learned_facts.SUMMARIES.path = None  # read, never written
    yield
    learned_facts.SUMMARIES = before


# {{{ what the checks need of each workload

def known_by_code(summaries, name, knl, params) -> None:
    """The committed H100 summary of a dataset's launch (kept under *name*) filed also under
    the name of its kernel's code, which is how a model on the facts knows the Loopy
    kernel *knl* it is given: the same launch, not predicted again. A launch not
    committed is left to be predicted."""
    from kernelcast.hardware import load_hardware
    from kernelcast.models.extended import launch_name
    from kernelcast.models.extended.facts import SummaryCache

    device = load_hardware("h100").name
    summary = summaries.entries.get(SummaryCache.key(name, params, device))
    if summary is not None:
        summaries.entries[SummaryCache.key(launch_name(knl), params, device)] = summary


class Subject:
    """What the checks need of the configurations of one workload: the data a fit takes
    (``fit_data``), a fitted model (``fitted``: a committed profile where COMMITTED names
    one, else fitted once), Datasets whose cases it predicts (``datasets``) and further
    real workloads with their params (``workloads``)."""

    def __init__(self, tmp_path_factory):
        self._fitted = {}

    def fit_data(self, config):
        raise NotImplementedError

    def datasets(self, config) -> list:
        return []

    def workloads(self, config) -> list[tuple]:
        return []

    def case(self, model, dataset, i) -> tuple:
        """(what *model* predicts for case *i* of *dataset*, its params): the Loopy
        kernel for a model that compiles it, else the case's properties."""
        if getattr(model, "needs_kernel", False):
            return dataset.cases[i].kernel(), dataset.params(i)
        return dataset.properties(i), dataset.params(i)

    def cases(self, model, config):
        """Every (workload, params) of the configuration, one at a time: its datasets'
        cases, then its further workloads."""
        for data in self.datasets(config):
            for i in range(len(data)):
                yield self.case(model, data, i)
        yield from self.workloads(config)

    def kinds(self, model, config) -> set[type]:
        """The types of the configuration's workloads: its datasets' cases are of one
        type each."""
        firsts = [self.case(model, data, 0) for data in self.datasets(config)]
        return {type(workload) for workload, _ in firsts + self.workloads(config)}

    def fitted(self, config):
        if config not in self._fitted:
            name, params = CONFIGS[config]
            if config in COMMITTED:
                model = load_profile(PROFILES / COMMITTED[config])
                assert type(model) is model_class(name)
                assert model.get_params() == get_model(name, **params).get_params()
            else:
                model = get_model(name, **params).fit(self.fit_data(config))
            self._fitted[config] = model
        return self._fitted[config]


class Kernels(Subject):
    """Per model, a subset of the suites it is fitted from; the test suite, and a sample
    of the fitted data (for Hong–Kim, float64 tiled matrix products among them, whose
    registers limit its occupancy). The models on the facts compile a kernel they are
    given: the cases' launches are known by their code as by their suite and name."""

    def __init__(self, tmp_path_factory):
        super().__init__(tmp_path_factory)
        self.fits = {}
        with Store(H100) as store:
            for name in model_names("kernel"):
                data = load_dataset(store, model_class(name).fit_suites("measurement"),
                                    cache=CACHE)
                self.fits[name] = data.subset(data.info.kernel_class.isin(CLASSES)
                                              .to_numpy())
            self.test = load_dataset(store, "test", cache=CACHE)

    def fit_data(self, config):
        return self.fits[CONFIGS[config][0]]

    def datasets(self, config):
        fit = self.fit_data(config)
        return [self.test, fit.subset(np.arange(len(fit)) % 48 == 0)]

    def case(self, model, dataset, i) -> tuple:
        if not getattr(model, "needs_kernel", False):
            return super().case(model, dataset, i)
        import kernelcast.models.extended as extended

        case, params = dataset.cases[i], dataset.params(i)
        knl = case.kernel()
        known_by_code(extended.SUMMARIES, f"{case.suite}:{case.name}", knl, params)
        return knl, params


class OpenCL(Subject):
    """The H100's microbenchmarks of the families that the facts variant prices memory
    from (base, work-group size, copies, float adds and global accesses), fitted in a
    second; random kernels (their source and Loopy twin); for the source-level models
    also a sample of the microbenchmark kernels, a kernel's source and the counts of an
    OpenCL program's launch."""

    FAMILIES = ("add:float", "global:read:coalesced", "global:write:coalesced",
                "global:read:interval")

    def __init__(self, tmp_path_factory):
        super().__init__(tmp_path_factory)
        folder = tmp_path_factory.mktemp("opencl")
        stores = {}
        for name in ("poppl-herz", "random"):
            stores[name] = folder / f"{name}.sqlite"
            stores[name].write_bytes(lzma.open(DATA / f"{name}.sqlite.xz").read())
        with Store(stores["poppl-herz"]) as store:
            micro = load_dataset(store, "poppl-herz")
        info = micro.info
        family = info.variant.str.rsplit(":", n=1).str[0]
        self.micro = micro.subset((info.kernel_class.isin(["empty", "wgsize", "transfer"])
                                   | family.isin(self.FAMILIES)).to_numpy())
        with Store(stores["random"]) as store:
            random = load_dataset(store, "random-realistic")
        self.random = random.subset(np.arange(len(random)) < 3)
        # copies are no kernels (the model prices them with transfer(), not predict)
        kernels_ = (self.micro.info.kernel_class != "transfer").to_numpy()
        sample = np.zeros(len(self.micro), bool)
        sample[np.flatnonzero(kernels_)[::25]] = True
        self.sample = self.micro.subset(sample)
        self._sources = None

    def fit_data(self, config):
        return self.micro

    def datasets(self, config):
        if CONFIGS[config][0] == "poppl-herz-facts":  # the facts of random kernels only
            return [self.random]
        return [self.random, self.sample]

    def case(self, model, dataset, i):
        return dataset.cases[i], dataset.params(i)

    def workloads(self, config):
        if CONFIGS[config][0] == "poppl-herz-facts":  # needs a Loopy twin
            return []
        if self._sources is None:
            from kernelcast.frontends.opencl import count_kernel
            from kernelcast.suites.opencl_programs import PROGRAMS, source

            launch = next(p for p in PROGRAMS if p.kernel == "atax_ax" and p.size == "gpu")
            counts = count_kernel(source(launch), launch.kernel, path=launch.program,
                                  options=launch.options, scalars=launch.scalars,
                                  global_size=launch.global_size,
                                  local_size=launch.local_size, stats=launch.stats)
            self._sources = [
                (OPENCL_KERNEL, {"global_size": [1024, 1024], "local_size": [16, 16]}),
                (counts, {"global_size": list(launch.global_size),
                          "local_size": list(launch.local_size)})]
        return self._sources


class Variants(Subject):
    """The poly family of the training corpus: fitted to in whole, predicted on a sample; the
    learned model also on a kernel the corpus does not hold. The learned model on the
    facts compiles a kernel it is given: the sample's launches are known by their code
    as by their name."""

    def __init__(self, tmp_path_factory):
        super().__init__(tmp_path_factory)
        import kernelcast.models.learned.facts as learned_facts
        from kernelcast.tune.corpus import CORPUS
        from kernelcast.tune.variants import load_variant_dataset

        with Store(DATA / "tuning-corpus-cuda.sqlite") as store:
            self.poly = load_variant_dataset(store, [CORPUS["poly"]])
        self.sample = self.poly.subset(np.arange(len(self.poly)) % 10 == 0)
        for i, case in enumerate(self.sample.cases):
            known_by_code(learned_facts.SUMMARIES, case.kernel_name, case.kernel(),
                          self.sample.params(i))

    def fit_data(self, config):
        return self.poly

    def datasets(self, config):
        return [self.sample]

    def workloads(self, config):
        if CONFIGS[config][0] == "learned-facts":  # compiles: the sample's kernels only
            return []
        from kernelcast.properties import extract_properties

        return [(extract_properties(kernels.scale(256)), {"n": 2**24})]


class Skeletons(Subject):
    """Two example skeletons, one at its own sizes and at smaller ones (params are its
    macros), and a skeleton with a layout given. The default configuration is fitted to
    a dataset of the H100 (only its device is read), the other to the GPU it names."""

    def fit_data(self, config):
        if CONFIGS[config][1].get("hardware"):
            return None
        if not hasattr(self, "_h100"):
            with Store(H100) as store:
                self._h100 = load_dataset(store, "test", cache=CACHE)
        return self._h100

    def workloads(self, config):
        from kernelcast.frontends.skeleton import load_skeleton
        from kernelcast.models.grophecy.layouts import Layout

        staged = Layout((16, 16), (1, 1), (("k", 16),), ("A", "B"))
        return [(SKELETONS / "rowsum.sk", {}), (SKELETONS / "rowsum.sk", {"N": 2048, "K": 512}),
                ((load_skeleton(SKELETONS / "matmul.sk"), staged), {})]


class Profiles(Subject):
    """The H100's criteria microbenchmarks (read as a fit takes them) and two of its
    profiled applications, the launches of the case's kernels (the cupy copies that set
    up their buffers left out)."""

    APPLICATIONS = ("transpose-1-naive", "reduction-1-interleaved")

    def fit_data(self, config):
        from kernelcast.fitting.microbenchmarks import load_microbenchmarks

        return load_microbenchmarks(DATA / "criteria" / "microbenchmarks.json")

    def workloads(self, config):
        from kernelcast.frontends.profiler import read_ncu_csv
        from kernelcast.models.criteria.criteria import Application

        out = []
        with tarfile.open(DATA / "criteria" / "ncu.tar.xz") as tar:
            for name in self.APPLICATIONS:
                text = tar.extractfile(f"{name}.csv").read().decode("utf-8")
                launches = tuple(x for x in read_ncu_csv(text)
                                 if not x.kernel.startswith("cupy_"))
                out.append((Application(name, launches), {}))
        return out


#: workload -> its Subject
SUBJECTS = {"kernel": Kernels, "opencl": OpenCL, "variant": Variants, "skeleton": Skeletons,
            "profile": Profiles}


@pytest.fixture(scope="module")
def subjects(tmp_path_factory):
    """A function: the Subject of a configuration (or of a workload, named), made once per
    workload."""
    made = {}

    def subject(config):
        workload = config if config in SUBJECTS else model_class(CONFIGS[config][0]).workload
        if workload not in made:
            made[workload] = SUBJECTS[workload](tmp_path_factory)
        return made[workload]
    return subject


@pytest.fixture(scope="module")
def fit_of(subjects):
    """A function: the fitted model of a configuration (one fit, or its profile)."""
    return lambda config: subjects(config).fitted(config)


@pytest.fixture(scope="module")
def outcomes(subjects, fit_of):
    """A function: per (workload, params) of a configuration, its explain, seconds and
    predict (its value, or None and its refusal), computed once for the checks that
    compare them."""
    done = {}

    def outcome(config):
        if config not in done:
            model, subject, rows = fit_of(config), subjects(config), []
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", kc.KernelcastWarning)
                for workload, params in subject.cases(model, config):
                    parts = model.explain(workload, params)
                    seconds = model.seconds(workload, params)
                    try:
                        predicted, refusal = model.predict(workload, params), None
                    except KernelcastError as err:
                        predicted, refusal = None, err
                    rows.append((workload, params, parts, seconds, predicted, refusal))
            done[config] = rows
        return done[config]
    return outcome


@pytest.fixture(params=list(CONFIGS))
def config(request):
    """Each configuration; a check it cannot take (EXCEPTIONS) is expected to fail."""
    reason = EXCEPTIONS.get((request.param, request.function.__name__))
    if reason:
        request.node.add_marker(pytest.mark.xfail(reason=reason, strict=True))
    return request.param


@pytest.fixture
def model(config):
    """A new, unfitted model of the configuration."""
    name, params = CONFIGS[config]
    return get_model(name, **params)


@pytest.fixture
def fitted(config, fit_of):
    """The model of the configuration, fitted (shared by the checks)."""
    return fit_of(config)

# }}}


# {{{ the checks

def as_json(value):
    """*value* as a profile's JSON gives it back (tuples as lists)."""
    return json.loads(json.dumps(value))


def test_the_registry_has_every_model_under_one_vocabulary():
    """Every workload the registry names has its subject here, and every model one name,
    one workload and a summary."""
    names = [name for workload in workloads() for name in model_names(workload)]
    assert len(names) == len(set(names))
    assert {name for name, _ in CONFIGS.values()} == set(names)
    assert set(SUBJECTS) == set(workloads())
    for workload in workloads():
        for name in model_names(workload):
            cls = model_class(name)
            assert cls.name == name and cls.workload == workload and cls.summary
    with pytest.raises(KernelcastError, match="unknown model 'kernelcast'"):
        get_model("kernelcast")


def test_no_model_is_fitted_from_test_or_validation_kernels(model):
    for suite in ("measurement", "measurement-cpu"):
        try:
            suites = model.fit_suites(suite)
        except KernelcastError:  # a model that cannot be fitted from this suite
            continue
        assert not {s for s in suites if s.startswith(("test", "validation"))}


def test_models_take_keyword_arguments_only(model):
    cls = type(model)
    assert cls(**model.get_params()).get_params() == model.get_params()
    with pytest.raises(TypeError):
        cls(*model.get_params().values())


def test_a_clone_is_unfitted_with_the_same_parameters(fitted):
    clone = fitted.clone()
    assert type(clone) is type(fitted) and clone.get_params() == fitted.get_params()
    assert fitted.is_fitted and not clone.is_fitted


def test_fit_not_the_constructor_checks_the_parameters(config, model, subjects):
    """A value that is none of a parameter's values is kept by the constructor and
    refused by fit, in a KernelcastError that names the parameter."""
    data = subjects(config).fit_data(config)
    for key in model.get_params():
        broken = type(model)(**{**model.get_params(), key: object()})
        with pytest.raises(KernelcastError, match=key):
            broken.fit(data)
        assert not broken.is_fitted


def test_an_unfitted_model_refuses_to_predict(config, model, subjects, tmp_path):
    subject = subjects(config)
    workload, params = next(subject.cases(model, config))
    assert not model.is_fitted
    assert issubclass(NotFittedError, KernelcastError)  # a one-line error on the CLI
    with pytest.raises(NotFittedError, match="not fitted"):
        model.predict(workload, params)
    with pytest.raises(NotFittedError):
        model.explain(workload, params)
    with pytest.raises(NotFittedError):
        model.seconds(workload, params)
    try:
        details = model.details(workload, params)
    except NotFittedError:
        pass
    else:  # Model.details, of the models with no details of their own, says nothing
        assert details == {}
    for data in subject.datasets(config)[:1]:
        with pytest.raises(NotFittedError):
            model.predict_dataset(data)
    with pytest.raises(NotFittedError):
        model.fitted_state()
    with pytest.raises(NotFittedError):
        save_profile(model, tmp_path / "p.json")
    assert not (tmp_path / "p.json").exists()


def test_explain_sums_to_seconds_and_predict_on_real_workloads(config, outcomes):
    """On every case of the configuration's datasets and its further workloads: explain's
    parts are finite and sum to seconds, which predict gives where it is a positive time
    and refuses where it is not (the paper's unconstrained weights may give t <= 0)."""
    for workload, params, parts, seconds, predicted, refusal in outcomes(config):
        where = getattr(workload, "name", None) or type(workload).__name__, params
        assert all(np.isfinite(v) for v in parts.values()), where
        assert sum(parts.values()) == pytest.approx(seconds, rel=1e-12, abs=0), where
        if refusal is None:
            assert np.isfinite(seconds) and seconds > 0, where
            assert predicted == pytest.approx(seconds, rel=1e-12, abs=0), where
        else:
            assert seconds <= 0 and "not a positive time" in str(refusal) \
                or seconds == 0 and "no time" in str(refusal), (where, refusal)


def test_a_workload_of_another_kind_is_refused_in_one_line(config, fitted, subjects):
    """The first workload of every other workload's configurations, where its type is
    none of this configuration's, is refused by predict and explain with a one-line
    KernelcastError, not an error from deep inside the model."""
    own = subjects(config).kinds(fitted, config)
    for workload in [w for w in workloads() if w != fitted.workload]:
        other = next(c for c, (name, _) in CONFIGS.items()
                     if model_class(name).workload == workload)
        foreign, params = next(subjects(workload).cases(fitted, other))
        if type(foreign) in own:  # a kernel's properties: kernel and variant models
            continue
        for method in (fitted.predict, fitted.explain):
            with pytest.raises(KernelcastError) as err:
                method(foreign, params)
            assert "\n" not in str(err.value), (workload, str(err.value))


def test_sizes_that_are_not_integers_are_refused_in_one_line(config, fitted, subjects):
    """Each of the configuration's kinds of workload (its datasets' first cases and its
    further workloads) at params whose values are all text: predict refuses them with a
    one-line KernelcastError (a model that takes no params has none to give)."""
    subject = subjects(config)
    firsts = [subject.case(fitted, data, 0) for data in subject.datasets(config)]
    for workload, params in firsts + subject.workloads(config):
        if not params:
            continue
        with pytest.raises(KernelcastError) as err:
            fitted.predict(workload, dict.fromkeys(params, "many"))
        assert "\n" not in str(err.value)


def test_predict_dataset_is_predict_case_by_case(config, fitted, subjects, outcomes):
    """predict_dataset gives each case's seconds (predict's value where positive)."""
    datasets = subjects(config).datasets(config)
    assert datasets, NO_DATASET.format(f"{fitted.workload} workloads")
    values = [seconds for _, _, _, seconds, _, _ in outcomes(config)]
    i = 0
    for data in datasets:
        batch = fitted.predict_dataset(data)
        assert batch.shape == (len(data),)
        assert list(batch) == pytest.approx(values[i:i + len(data)], rel=1e-12, abs=0)
        i += len(data)


def test_profiles_round_trip(config, fitted, subjects, tmp_path):
    subject = subjects(config)
    path = save_profile(fitted, tmp_path / "model.json")
    doc = json.loads(path.read_text())
    assert doc["format"] == 2 and doc["model"] == fitted.name
    assert doc["device"] == fitted.provenance_["device"]
    assert doc["backend"] == fitted.provenance_["backend"]
    again = load_profile(path)
    assert type(again) is type(fitted) and again.get_params() == fitted.get_params()
    assert again.fitted_state() == fitted.fitted_state()
    # restore sets what the profile keeps; a committed profile, fitted elsewhere, too
    assert as_json(again.fitted_state()) == doc["state"]
    if config in COMMITTED:
        committed = json.loads((PROFILES / COMMITTED[config]).read_text())
        assert as_json(fitted.fitted_state()) == committed["state"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kc.KernelcastWarning)
        for data in subject.datasets(config):
            np.testing.assert_array_equal(again.predict_dataset(data),
                                          fitted.predict_dataset(data))
        for workload, params in subject.workloads(config)[:1]:
            assert again.seconds(workload, params) == fitted.seconds(workload, params)
    # the store (or the document fitted from) is found again from the profile's folder
    if fitted.provenance_["store"]:
        assert Path(again.provenance_["store"]).resolve() \
            == Path(fitted.provenance_["store"]).resolve()


def test_a_broken_profile_is_refused_with_its_path(fitted, tmp_path):
    path = save_profile(fitted, tmp_path / "p.json")
    doc = json.loads(path.read_text())
    for broken, message in ((dict(doc, format=9), "refit it"),
                            (dict(doc, model="roofline"), "unknown model"),
                            (dict(doc, params={"no_such_parameter": 2}),
                             f"do not fit the {fitted.name} model"),
                            ({k: v for k, v in doc.items() if k != "device"}, "'device'")):
        path.write_text(json.dumps(broken))
        with pytest.raises(KernelcastError, match=message) as err:
            load_profile(path)
        assert str(path) in str(err.value)


def test_two_fits_of_the_same_data_are_bit_identical(config, model, subjects):
    """The one check that fits every configuration: fit returns the model, fitted, with
    provenance_ and fit_report_ (every solver's outcome, each converged)."""
    data = subjects(config).fit_data(config)
    with warnings.catch_warnings():
        warnings.simplefilter("error", kc.KernelcastWarning)  # every solver converges
        first, second = model.fit(data), model.clone().fit(data)
    assert first is model and model.is_fitted
    assert json.dumps(first.fitted_state(), sort_keys=True) == json.dumps(
        second.fitted_state(), sort_keys=True)
    assert {"device", "backend", "store"} <= set(first.provenance_)
    assert first.fit_report_["criterion"]
    assert all(s["success"] for s in first.fit_report_["solver"])

# }}}


# {{{ the paper's and the extended model's profiles

def test_broken_weights_are_refused(fit_of, tmp_path):
    path = save_profile(fit_of("paper"), tmp_path / "p.json")
    doc = json.loads(path.read_text())
    weights = doc["state"]["weights"]
    name = next(iter(weights))
    for value in (True, "1e-9", float("nan")):
        bad = json.loads(json.dumps(doc))
        bad["state"]["weights"][name]["value"] = value
        path.write_text(json.dumps(bad))
        with pytest.raises(KernelcastError, match="not a finite number"):
            load_profile(path)
    for change, message in (({"value": 1e300}, "not a plausible time"),
                            ({"unit": "ms"}, "profiles give seconds")):
        bad = json.loads(json.dumps(doc))
        bad["state"]["weights"][name].update(change)
        path.write_text(json.dumps(bad))
        with pytest.raises(KernelcastError, match=message):
            load_profile(path)
    path.write_text(json.dumps({**doc, "state": {"weights": {}}}))
    with pytest.raises(KernelcastError, match="no weights"):
        load_profile(path)


def test_a_prediction_that_is_not_a_positive_time_is_refused(fit_of, tmp_path):
    """All-negative weights (a damaged profile) would predict negative times."""
    path = save_profile(fit_of("paper"), tmp_path / "p.json")
    doc = json.loads(path.read_text())
    for entry in doc["state"]["weights"].values():
        entry["value"] = -abs(entry["value"])
    path.write_text(json.dumps(doc))
    model = load_profile(path)
    with pytest.raises(KernelcastError, match="not a positive time"):
        model.predict(kernels.scale(256), {"n": 4096})
    assert model.seconds(kernels.scale(256), {"n": 4096}) < 0  # evaluation sees the value


def test_format_1_profiles_still_load(fit_of, tmp_path):
    """Profiles written before the model interface: the paper's model, and the extended
    model under its old name "kernelcast" with its exponent as "overlap"."""
    model = fit_of("extended")
    old = {"format": 1, "model": "kernelcast", "device": "NVIDIA H100 80GB HBM3",
           "driver": "580.159.04", "backend": "opencl", "suite": "measurement",
           "weights": {k: {"value": v, "unit": "s"} for k, v in model.weights_.items()},
           "overlap": model.q, "resident_items": model.resident_items_}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    loaded = load_profile(path)
    assert loaded.name == "extended" and loaded.weights_ == model.weights_
    assert loaded.q == model.q and loaded.resident_items_ == model.resident_items_
    knl = kernels.scale(256)
    assert loaded.predict(knl, {"n": 2**20}) == model.predict(knl, {"n": 2**20})


_TWO_FITS_IN_A_NEW_PROCESS = """
import json, sys, warnings
warnings.simplefilter("ignore")
import kernelcast as kc
from kernelcast.measure.store import Store
with Store(sys.argv[1]) as store:
    data = kc.load_dataset(store, "measurement")
first, second = (kc.get_model("extended").fit(data).fitted_state() for _ in range(2))
print(json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True))
"""


def test_the_first_fit_of_a_process_is_the_same_as_the_next():
    """Fits run BLAS on one thread; scipy's own BLAS, loaded during the first fit of a
    process, once escaped that limit, and that fit differed from the next in its last
    bits (on the H100's measurement suite, 1,099 cases; a fresh process, as a user's).
    Without scipy imported first in kernelcast.fitting.linear.one_blas_thread, the two
    fits differ."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _TWO_FITS_IN_A_NEW_PROCESS, str(H100)],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"


@pytest.mark.parametrize(("args", "status"), [
    (["--model", "hong-kim"], 1),  # the device has no hardware description: a failure
    (["--model", "hong-kim", "--hardware", "gtx9999"], 2)])  # a bad argument
def test_a_calibration_that_could_not_be_fitted_is_refused_before_measuring(
        args, status, tmp_path, capsys, pocl):
    from kernelcast.cli import main

    db = tmp_path / "cpu.sqlite"
    assert main(["calibrate", "--device", "portable", "--db", str(db), *args]) == status
    assert "hardware" in capsys.readouterr().err
    assert not db.exists()
