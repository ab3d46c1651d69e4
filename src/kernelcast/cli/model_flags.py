"""The command line's flags of the models' declared parameters (kernelcast.models.base.
Parameter): one flag per parameter name, whatever the models that take it, its help
saying which do; and the keyword arguments of the chosen model read back from them, a
flag the model does not take being a usage error that names the models that do."""

from __future__ import annotations

import argparse

from kernelcast.cli.args import positive_int
from kernelcast.errors import UsageError


def _declared(names) -> dict[str, list]:
    """Parameter name -> [(model name, Parameter)] over the models *names*."""
    from kernelcast.models import model_class

    found: dict[str, list] = {}
    for name in names:
        for parameter in model_class(name).parameters:
            found.setdefault(parameter.name, []).append((name, parameter))
    return found


def _help(entries) -> str:
    """One help text for a flag several models take: each distinct text once, after the
    models it is theirs."""
    by_text: dict[str, list[str]] = {}
    for model, parameter in entries:
        by_text.setdefault(parameter.help, []).append(model)
    return "; ".join(f"{', '.join(models)}: {text}" for text, models in by_text.items())


def add_model_flags(p, names, *, predicting: bool = False) -> None:
    """Add the flags of the parameters of the models *names* to parser *p*. Predicting
    (predict, tune): those of the models made from hardware alone, and those given at
    prediction time (``at_predict``)."""
    from kernelcast.models import model_class

    takers = []
    for name, entries in _declared(names).items():
        if predicting:
            entries = [(m, q) for m, q in entries
                       if q.at_predict or model_class(m).from_hardware]
            if not entries:
                continue
        takers += [m for m, _ in entries]
        parameter = entries[0][1]
        kwargs = {"dest": f"model_{name}", "default": None, "help": _help(entries)}
        if parameter.kind == "boolean":
            kwargs["action"] = argparse.BooleanOptionalAction
        else:
            kwargs["metavar"] = parameter.value_name
            kwargs["type"] = {"number": float, "count": positive_int,
                              "optional count": positive_int,
                              "sizes": positive_int}.get(parameter.kind)
            if parameter.kind == "sizes":
                kwargs["nargs"] = "+"
        p.add_argument(parameter.flag, **kwargs)
    p.set_defaults(flag_models=tuple(names))


def given_params(args) -> dict[str, object]:
    """The model parameters given on the command line: name -> value."""
    prefix = "model_"
    return {key[len(prefix):]: value for key, value in vars(args).items()
            if key.startswith(prefix) and value is not None}


def model_params(args, name: str | None, *, with_profile: bool = False) -> dict:
    """The keyword arguments of model *name* given on the command line; a UsageError for
    a flag it does not take (naming the models of the verb that do) or a value it does
    not accept. With a fitted profile, which holds the model's parameters, only those
    given at prediction time (``at_predict``) may be."""
    from kernelcast.models import model_class

    given = given_params(args)
    cls = model_class(name) if name else None
    params = {}
    for key, value in given.items():
        parameter = cls.parameter(key) if cls else None
        flag = "--" + key.replace("_", "-")
        if parameter is None:
            takers = [m for m in getattr(args, "flag_models", ())
                      if model_class(m).parameter(key)]
            raise UsageError(f"{flag} is for --model {' or '.join(takers)}"
                             + (f", not the {name} model" if name else ""))
        if with_profile and not parameter.at_predict:
            raise UsageError(f"{flag} is for --model {name} without --profile; the profile "
                             "holds the parameters it was fitted with")
        problem = parameter.problem(value)
        if problem:
            raise UsageError(f"{flag}: {problem}")
        params[key] = tuple(value) if isinstance(value, list) else value
    return params


def trained_models() -> tuple[str, ...]:
    """The models calibrate and fit make: those of kernels and of OpenCL source fitted to
    a store's suites, and those fitted from microbenchmarks."""
    from kernelcast.models import model_class, model_names

    return model_names() + model_names("opencl") + tuple(
        n for n in model_names("profile") if model_class(n).fitted_from == "microbenchmarks")


def models_markdown() -> str:
    """The registered models and their parameters as markdown: what docs/cli.md's
    "Models and their parameters" holds, made from the declarations."""
    from kernelcast.models import model_class, model_names, workloads

    lines = ["| model | predicts | without a profile | parameter (flag) | values | what it is |",
             "| --- | --- | --- | --- | --- | --- |"]
    flagged = trained_models()
    for workload in workloads():
        for name in model_names(workload):
            cls = model_class(name)
            bare = "from `--hardware`" if cls.from_hardware else ""
            rows = cls.parameters or (None,)
            for i, parameter in enumerate(rows):
                head = (f"`{name}`", workload, bare) if i == 0 else ("", "", "")
                if parameter is None:
                    lines.append(f"| {' | '.join(head)} | none | | |")
                    continue
                flag = (f"`{parameter.flag}`" if parameter.kind != "boolean" else
                        f"`{parameter.flag}`, `--no-{parameter.flag[2:]}`")
                if name not in flagged and not cls.from_hardware:
                    flag = f"{parameter.name} (in its profile; no verb fits it)"
                elif parameter.at_predict:
                    flag += " (also with a profile)"
                text = parameter.help.replace("|", "\\|")
                lines.append(f"| {' | '.join(head)} | {flag} | {parameter.describe()} | "
                             f"{text} |")
    return "\n".join(lines)


def models(args) -> int:
    """The models verb: the registered models, what each predicts and its parameters."""
    import json
    import sys

    from kernelcast.models import model_class, model_names, workloads

    if args.markdown:
        print(models_markdown())
        return 0
    entries = [{"model": name, "predicts": workload,
                "summary": model_class(name).summary,
                "from_hardware": model_class(name).from_hardware,
                "parameters": [{"name": p.name, "flag": p.flag, "values": p.describe(),
                                "at_predict": p.at_predict, "help": p.help}
                               for p in model_class(name).parameters]}
               for workload in workloads() for name in model_names(workload)]
    if args.json:
        json.dump(entries, sys.stdout, indent=1)
        print()
        return 0
    for entry in entries:
        print(f"{entry['model']} (predicts: {entry['predicts']}"
              f"{'; needs no profile, given --hardware' if entry['from_hardware'] else ''})")
        print(f"  {entry['summary']}")
        for p in entry["parameters"]:
            print(f"  {p['flag']:<24} {p['values']}: {p['help']}")
    return 0
