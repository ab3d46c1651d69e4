"""Every model declares its parameters (kernelcast.models.base.Parameter), and the command
line's flags, a profile's validation, fit's check and docs/cli.md's table are made from
those declarations: checked over every registered model, with no hand list of models."""

import inspect
import json
import re
from pathlib import Path

import pytest

from kernelcast.cli import build_parser, main
from kernelcast.cli.model_flags import model_params, models_markdown
from kernelcast.errors import KernelcastError
from kernelcast.models import model_class, model_names, workloads
from kernelcast.profile import load_profile

ROOT = Path(__file__).resolve().parent.parent
EVERY = [name for workload in workloads() for name in model_names(workload)]
DECLARED = [(name, p) for name in EVERY for p in model_class(name).parameters]

# a value each kind refuses, and one it takes
BAD = {"boolean": "yes", "number": "3", "count": 0, "optional count": -2, "sizes": [],
       "file": 5, "hardware": ["h100"]}


def _good(parameter):
    if parameter.kind == "number":
        return parameter.high if parameter.high is not None else parameter.low + 1
    return {"boolean": True, "count": 7, "optional count": 7, "sizes": [64, 128],
            "file": "x.json", "hardware": "h100"}[parameter.kind]


def test_every_kind_of_parameter_is_exercised_here():
    assert {p.kind for _, p in DECLARED} <= set(BAD)


@pytest.mark.parametrize("name", EVERY)
def test_the_declared_parameters_are_the_constructors_keywords_and_get_params(name):
    cls = model_class(name)
    keywords = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    declared = [p.name for p in cls.parameters]
    assert declared == keywords
    assert list(cls().get_params()) == declared
    assert len(set(declared)) == len(declared)


@pytest.mark.parametrize(("name", "parameter"), DECLARED,
                         ids=[f"{n}.{p.name}" for n, p in DECLARED])
def test_fit_refuses_a_value_the_declaration_refuses_before_it_fits(name, parameter):
    """Made with any value (no check in __init__); fit refuses it before it reads its
    dataset (None here), naming the parameter."""
    model = model_class(name)(**{parameter.name: BAD[parameter.kind]})
    with pytest.raises(KernelcastError, match=rf"{re.escape(parameter.name)}: "):
        model.fit(None)
    assert parameter.problem(_good(parameter)) is None
    if parameter.kind == "number":
        for outside in (parameter.low - 1 if parameter.low is not None else None,
                        parameter.high + 1 if parameter.high is not None else None):
            if outside is not None:
                assert parameter.problem(outside)


def _profiles():
    """One committed profile of each model that has one."""
    found = {}
    for path in sorted((ROOT / "data" / "profiles").glob("*.json")):
        model = json.loads(path.read_text()).get("model")
        found.setdefault(model, path)
    return found


PROFILES = _profiles()
IN_PROFILES = [(n, p) for n, p in DECLARED if n in PROFILES]


def test_committed_profiles_cover_most_models():
    assert len(set(PROFILES) & set(EVERY)) >= 6


@pytest.mark.parametrize(("name", "parameter"), IN_PROFILES,
                         ids=[f"{n}.{p.name}" for n, p in IN_PROFILES])
def test_a_profile_with_a_bad_parameter_is_refused_naming_it(name, parameter, tmp_path):
    doc = json.loads(PROFILES[name].read_text())
    doc["params"] = {**doc.get("params", {}), parameter.name: BAD[parameter.kind]}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(KernelcastError, match=rf"params\.{parameter.name} is .*, not "):
        load_profile(path)


def _flags(verb: str) -> dict[str, object]:
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices[verb]
    return {flag: action for action in sub._actions for flag in action.option_strings}


@pytest.mark.parametrize("verb", ["calibrate", "fit"])
def test_calibrate_and_fit_have_a_flag_for_every_parameter_of_their_models(verb):
    flags = _flags(verb)
    models = flags["--model"].choices
    for name in models:
        for parameter in model_class(name).parameters:
            action = flags[parameter.flag]
            assert name in action.help and parameter.help in action.help


@pytest.mark.parametrize("verb", ["predict", "tune"])
def test_predict_and_tune_take_the_parameters_of_models_needing_no_profile(verb):
    flags = _flags(verb)
    for name in flags["--model"].choices:
        cls = model_class(name)
        for parameter in cls.parameters:
            assert (parameter.flag in flags) == (cls.from_hardware or parameter.at_predict
                                                 or any(model_class(m).from_hardware
                                                        and model_class(m).parameter(
                                                            parameter.name)
                                                        for m in flags["--model"].choices))


def test_flags_come_back_as_the_chosen_models_keywords():
    parser = build_parser()
    args = parser.parse_args(["fit", "--db", "s.sqlite", "--profile", "p.json", "--model",
                              "extended", "--q", "2", "--items-per-unit", "64", "256"])
    assert model_params(args, "extended") == {"q": 2.0, "items_per_unit": (64, 256)}
    args = parser.parse_args(["fit", "--db", "s.sqlite", "--profile", "p.json", "--model",
                              "poppl-herz", "--no-classes", "--simd-width", "8"])
    assert model_params(args, "poppl-herz") == {"classes": False, "simd_width": 8}


@pytest.mark.parametrize(("argv", "parts"), [
    (["--model", "paper", "--q", "2"], ["--q is for --model extended or facts",
                                        "not the paper model"]),
    (["--model", "extended", "--nonnegative"], ["--nonnegative is for --model paper"]),
    (["--model", "extended", "--q", "0.5"], ["--q: 0.5 is not a number at least 1"]),
    (["--model", "hong-kim", "--simd-width", "4"], ["--simd-width is for --model "
                                                    "poppl-herz or poppl-herz-facts"]),
])
def test_a_flag_the_model_does_not_take_is_a_usage_error_naming_who_does(argv, parts,
                                                                         capsys, tmp_path):
    code = main(["fit", "--db", str(tmp_path / "none.sqlite"), "--profile",
                 str(tmp_path / "p.json"), *argv])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1, err
    for part in parts:
        assert part in err, err
    assert not (tmp_path / "none.sqlite").exists()


def test_a_profile_holds_its_parameters_but_those_given_at_prediction(capsys):
    profile = ROOT / "data" / "profiles" / "nvidia-h100-80gb-hbm3-opencl-hong-kim.json"
    code = main(["predict", "examples/kernels.py:scale", "--param", "n=4096", "--profile",
                 str(profile), "--hardware", "h200"])
    err = capsys.readouterr().err
    assert code == 2 and "--hardware is for --model hong-kim without --profile" in err


def test_the_table_in_docs_is_the_declarations():
    doc = (ROOT / "docs" / "cli.md").read_text()
    start = doc.index("<!-- generated by `kernelcast models --markdown`")
    end = doc.index("<!-- end of generated table -->")
    in_docs = doc[start:end].split("\n", 1)[1].strip()
    assert in_docs == models_markdown(), ("docs/cli.md's table of model parameters is "
                                          "stale: paste `kernelcast models --markdown`")
    for name, parameter in DECLARED:
        assert f"`{name}`" in in_docs
        assert f"`{parameter.flag}`" in in_docs or f"{parameter.name} (in its profile" \
            in in_docs


@pytest.mark.parametrize(("argv", "code"), [
    ([], 0), (["--json"], 0), (["--markdown"], 0), (["--bogus"], 2), (["paper"], 2),
    (["--json=1"], 2), (["--markdown", "--json"], 0)])
def test_the_models_verb_lists_every_model_or_refuses_in_one_line(argv, code, capsys):
    """Its one input is its flags (the CLI fuzz, tests/test_fuzz.py, leaves it out)."""
    try:
        got = main(["models", *argv])
    except SystemExit as exit_:  # argparse's usage error
        got = exit_.code
    out, err = capsys.readouterr()
    assert got == code, err
    if code:
        assert len(err.strip().splitlines()) <= 2 and "Traceback" not in err  # usage, error
        return
    if "--markdown" in argv:
        assert out.strip() == models_markdown()
    elif "--json" in argv:
        doc = json.loads(out)
        assert [d["model"] for d in doc] == EVERY
        assert all(len(d["parameters"]) == len(model_class(d["model"]).parameters)
                   for d in doc)
    else:
        for name in EVERY:
            assert re.search(rf"^{re.escape(name)} \(predicts: ", out, re.M), name
