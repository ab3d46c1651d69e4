"""The ``kernelcast`` command line: a parser and one function per verb.

Verbs: properties, suites, devices (kernelcast.cli.kernels); models (model_flags: the
registered models and their parameters); measure, calibrate, fit
(measuring); predict, evaluate, report, demo (models); project (project: GROPHECY's
layout search of a code skeleton); tune (tune: rank a kernel's variants with a model,
measure the best); advise (advise: the fine-grained model's criteria of an Nsight
Compute profile); counters (counters: the predicted Nsight Compute counters of one
launch). Every ``--model`` takes the registry's names
(kernelcast.models), and the flags of the models' parameters are made from what each
model declares (kernelcast.cli.model_flags). A flag means the same on every verb that has
it; list flags take several values after one flag or the flag repeated. Errors print one line, warnings one line each; the exit status is 0 on success,
1 on a failure and 2 on a usage error (a bad argument, file or combination). ``--debug``
(before or after the verb) also prints the traceback of an error, the user's code's
included.
"""

from __future__ import annotations

import argparse
import errno
import signal
import sys
import traceback
import warnings

from kernelcast.cli import (advise, counters, kernels, measuring, model_flags, models,
                            project, spread, tune)
from kernelcast.cli.args import nonnegative_float, positive_int, run_count
from kernelcast.cli.model_flags import add_model_flags
from kernelcast.cli.interrupt import Terminated, catch_sigterm, interrupted
from kernelcast.errors import UsageError
from kernelcast.errors import DataDependentError, KernelcastError, ParameterError


def _model_choices():
    """The kernel models; the same with the models of OpenCL source; and those with the
    models fitted from microbenchmarks (calibrate, fit), described."""
    from kernelcast.models import model_class, model_names

    from kernelcast.cli.model_flags import trained_models

    names = model_names()
    every = names + model_names("opencl")
    fitted = trained_models()
    return names, every, fitted, "; ".join(f"{n}: {model_class(n).summary}"
                                           for n in fitted)


def _suite_names() -> str:
    from kernelcast.suites.paper import all_suites

    return ", ".join(all_suites())


def _timing(p):
    p.add_argument("--runs", type=run_count, default=30, metavar="N",
                   help="launches of a case per timing attempt, the first 4 dropped "
                        "(paper §4.2: 30)")
    p.add_argument("--tolerance", type=nonnegative_float, default=0.10, metavar="X",
                   help="a case is stable when its median time is at most (1 + X) times "
                        "its minimum (default 0.10)")


def _param(p, what, required=False):
    p.add_argument("--param", nargs="+", action="extend", metavar="NAME=SIZE",
                   required=required, help=what + "; integers, e.g. --param n=4096 m=512")


def _json(p):
    p.add_argument("--json", action="store_true",
                   help="print JSON (for programs) instead of a table")


def _debug(p, default=argparse.SUPPRESS):
    p.add_argument("--debug", action="store_true", default=default,
                   help="on an error, also print the traceback (the kernel file's code "
                        "included)")


def _kernel_args(p, opencl=""):
    p.add_argument("kernel", help="FILE.py:FACTORY, a function in FILE.py that takes no "
                                  "arguments and returns a Loopy kernel"
                                  + (f"; or KERNEL.cl, OpenCL C source ({opencl})"
                                     if opencl else ""))
    p.add_argument("--stat", nargs="+", action="extend", metavar="NAME=VALUE",
                   help="typical values of what depends on data: a loop bound read from "
                        "data (rowlen=12.5) or the fraction of executions of an "
                        "instruction guarded by data (insn_id=0.3); for a .cl kernel, "
                        "keyed by source line: the probability that the if there is "
                        "taken, or the mean trip count of the loop there (12=0.3)")


def _opencl_launch(p):
    """The flags of one launch of a .cl kernel."""
    p.add_argument("--global-size", nargs="+", type=positive_int, metavar="N",
                   help="a .cl kernel's global work size, one number per dimension")
    p.add_argument("--local-size", nargs="+", type=positive_int, metavar="N",
                   help="a .cl kernel's work-group size, one number per dimension "
                        "(default: 1 in each)")
    p.add_argument("--kernel-name", help="the kernel of a .cl file that has several")
    p.add_argument("--build-options", metavar="OPTIONS",
                   help="a .cl file's OpenCL build options, e.g. \"-D TILE=16 -D USE_DOUBLE\" "
                        "(-D NAME[=VALUE] defines a macro; other options are ignored; a "
                        "single option without a space: --build-options=-DTILE=16)")
    p.add_argument("--arg", nargs="+", action="extend", metavar="NAME=VALUE",
                   help="a .cl kernel's scalar arguments (int n, float alpha), e.g. --arg "
                        "n=4096 alpha=1.5; a loop bound or branch that needs one not given "
                        "is an error")


def _p(p, extra=""):
    p.add_argument("--p", nargs="+", action="extend", metavar="CLASS=P",
                   help="base size exponent p of a kernel class, §4.1 (sizes grow as 2^p); "
                        + extra)


def _dtype(p):
    p.add_argument("--dtype", nargs="+", action="extend", metavar="DTYPE",
                   choices=("float32", "float64"),
                   help="only cases of these precisions (float32, float64; default both)")


def _group_set(p):
    p.add_argument("--group-set", metavar="SET",
                   help="a §4.1 group-size set such as '2-D Med' instead of the class's "
                        "default")


def _device_args(p):
    p.add_argument("--device", help="a substring of the device or platform name "
                   "(default: the best device)")
    p.add_argument("--backend", default="opencl", choices=("opencl", "cuda"),
                   help="the API that runs kernels: OpenCL (pyopencl, default) or CUDA "
                        "(cupy)")
    p.add_argument("--wait", type=nonnegative_float, default=0.0, metavar="SECONDS",
                   help="if another campaign is measuring the device, wait this long for it "
                        "(default: refuse at once, naming it)")


def _devices(p, what: str):
    p.add_argument("--devices", metavar="all|N",
                   help=f"{what}, on every device identical to --device's (all) or the "
                        "first N of them (in PCI order): one worker process per device, "
                        "each holding its own device's lock")


def _model_args(p, names, profile_help: str):
    """--profile, or --model with its parameters: what predicts (predict, tune)."""
    from kernelcast.models import model_class

    p.add_argument("--profile", help=profile_help)
    bare = [n for n in names if model_class(n).from_hardware]
    p.add_argument("--model", choices=names,
                   help=f"{' or '.join(bare)} with --hardware needs no profile; otherwise "
                        "the profile's model")
    add_model_flags(p, names, predicting=True)


def build_parser() -> argparse.ArgumentParser:
    names, fitted, trained, described = _model_choices()
    parser = argparse.ArgumentParser(
        prog="kernelcast", description="Predict GPU kernel run times from Loopy kernels.")
    from kernelcast.version import __version__

    parser.add_argument("--version", action="version", version=f"kernelcast {__version__}")
    _debug(parser, default=False)
    sub = parser.add_subparsers(dest="command", required=True, metavar="VERB",
                                help="what to do (kernelcast VERB --help for its flags)")
    suites = _suite_names()

    p = sub.add_parser("properties", help="symbolic and evaluated properties of a kernel")
    _kernel_args(p)
    _param(p, "also evaluate every property at these sizes")
    _json(p)
    p.set_defaults(run=kernels.properties)

    p = sub.add_parser("suites", help="list the cases of a kernel suite (paper §4.1, §5)")
    p.add_argument("--suite", default="measurement",
                   help=f"the suite to list: {suites} (default: measurement)")
    _p(p, "default: the paper's smallest")
    _dtype(p)
    _group_set(p)
    _json(p)
    p.set_defaults(run=kernels.suites)

    p = sub.add_parser("devices", help="list the OpenCL and CUDA devices")
    _json(p)
    p.set_defaults(run=kernels.devices)

    p = sub.add_parser("models", help="list the models, what each predicts and its "
                                      "parameters (the flags of calibrate, fit, predict)")
    p.add_argument("--markdown", action="store_true",
                   help="print the table docs/cli.md holds (markdown)")
    _json(p)
    p.set_defaults(run=model_flags.models)

    p = sub.add_parser("measure", help="time kernels on a device into a measurement store")
    p.add_argument("--suite", help=f"a suite to measure: {suites}")
    p.add_argument("--kernel", help="instead of --suite, FILE.py:FACTORY: a function in "
                                    "FILE.py that takes no arguments and returns a Loopy "
                                    "kernel")
    _param(p, "the sizes of --kernel")
    p.add_argument("--db", required=True,
                   help="the SQLite measurement store (created if missing; measuring "
                        "resumes where it stopped)")
    _device_args(p)
    p.add_argument("--build-options", metavar="OPTIONS",
                   help="options for the device compiler, e.g. '-cl-fast-relaxed-math'")
    _p(p, "default: chosen as in §4.2; 'max' for the largest allowed p of every class")
    p.add_argument("--classes", metavar="A,B",
                   help="only these kernel classes of --suite, comma-separated")
    _dtype(p)
    _group_set(p)
    _timing(p)
    p.add_argument("--no-verify", action="store_true",
                   help="skip checking suite kernels against their references")
    _devices(p, "spread --suite's cases over several devices (rows into the one --db)")
    spread.add_scheduler_arguments(p, "measure --suite's cases")
    p.set_defaults(run=measuring.measure)

    model_help = f"the model ({described})"
    p = sub.add_parser("calibrate", help="measure what a model is fitted from, fit it, "
                                         "write a profile")
    _device_args(p)
    p.add_argument("--db", help="measurement store (default: "
                   "kernelcast-data/<device>-<backend>.sqlite; for criteria, a folder for "
                   "its microbenchmarks, default kernelcast-data/<device>-criteria/)")
    p.add_argument("--profile", help="where to write the profile (default: beside the "
                   "store, named after the model)")
    p.add_argument("--suite", help="the measurement suite: measurement (GPU default) or "
                   "measurement-cpu (CPU default)")
    p.add_argument("--model", choices=trained,
                   help=model_help + ". Default: extended on a GPU, paper on a CPU")
    add_model_flags(p, trained)
    _timing(p)
    _devices(p, "calibrate several devices at once, each in its own right (a store and a "
                "profile per device, named after its PCI address; not with --db or "
                "--profile)")
    p.set_defaults(run=measuring.calibrate)

    p = sub.add_parser("fit", help="fit a model to a measurement store, write a profile")
    p.add_argument("--db", required=True, help="the measurement store (for criteria, its "
                   "microbenchmarks' microbenchmarks.json)")
    p.add_argument("--model", choices=trained, default="paper", help=model_help)
    p.add_argument("--suite", default="measurement",
                   help="the measurement suite (measurement or measurement-cpu)")
    p.add_argument("--profile", required=True, help="where to write the profile (JSON)")
    add_model_flags(p, trained)
    p.set_defaults(run=measuring.fit)

    p = sub.add_parser("predict", help="predict a kernel's run time with a profile "
                                       "or the Hong–Kim model")
    _kernel_args(p, opencl="every model: poppl-herz from its counts, the others from its "
                           "paper properties")
    _param(p, "the kernel's sizes (every size parameter it has; not for a .cl file)")
    _model_args(p, fitted, "a fitted profile (any model; a .cl file is predicted by "
                           "poppl-herz from its counts, by the others from its paper "
                           "properties)")
    p.add_argument("--device", metavar="NAME",
                   help="instead of --profile, a part of the device's name (h100, 'NVIDIA "
                        "H200', xeon): the profile of --model for that device, found in "
                        "kernelcast-data/ or data/profiles/ of the current folder, else the "
                        "checkout's data/profiles/ (docs/cli.md)")
    _opencl_launch(p)
    p.add_argument("--array", nargs="+", action="extend", metavar="NAME=ELEMENTS",
                   help="a .cl kernel's array lengths in elements, for the fitted models' "
                        "data volume (default: the highest element its indices reach)")
    p.add_argument("--bytes-in", type=positive_int, metavar="B",
                   help="poppl-herz: a .cl kernel's bytes copied to the device (default: "
                        "one element per work-item of each global array it reads)")
    p.add_argument("--bytes-out", type=positive_int, metavar="B",
                   help="poppl-herz: bytes copied back (default: one element per "
                        "work-item of each global array it writes)")
    p.add_argument("--explain", action="store_true",
                   help="per term of the prediction: its time, the value its weight "
                        "multiplies and the Nsight Compute counter it stands on (the "
                        "facts model's terms are predicted counters)")
    _json(p)
    p.set_defaults(run=models.predict)

    p = sub.add_parser("counters", help="the Nsight Compute counters of one launch of a "
                                        "kernel, predicted without a GPU (memory requests, "
                                        "sectors, caches, registers, occupancy)")
    _kernel_args(p, opencl="its memory requests, sectors and shared wavefronts")
    _param(p, "the kernel's sizes (every size parameter it has; not for a .cl file)")
    _opencl_launch(p)
    p.add_argument("--hardware", metavar="NAME|FILE",
                   help="required: the GPU whose counters to predict, h100, h200 or a "
                        "hardware JSON file (src/kernelcast/hardware/h100.json)")
    p.add_argument("--compare", metavar="PROFILE.csv",
                   help="Nsight Compute's raw page of the same launch (ncu --csv --page raw "
                        "--metrics ... > PROFILE.csv): predicted, measured and their ratio "
                        "side by side")
    p.add_argument("--no-compiler", action="store_true",
                   help="leave out what needs NVIDIA's compiler (registers, instructions, "
                        "occupancy and the caches): the memory requests and sectors only")
    _json(p)
    p.set_defaults(run=counters.counters)

    p = sub.add_parser("evaluate", help="Table 1 of one model or of every model side by "
                                        "side on a store's test suite")
    p.add_argument("--profile", help="a fitted profile; its store and device")
    p.add_argument("--model", choices=(*names, "all"),
                   help="also (or, without --profile, only) this model, fitted to the same "
                        "store; 'all' puts every model side by side but facts, which "
                        "compiles every case of the store (minutes) and is compared when "
                        "named")
    add_model_flags(p, names)  # of the model fitted without --profile
    p.add_argument("--db", help="measurement store (default: the profile's)")
    p.add_argument("--suite", help=f"the suite to evaluate: {suites} (default: the test "
                   "suite of the profile's measurement suite)")
    p.add_argument("--fit-suite", default="measurement",
                   help="without --profile: the measurement suite models are fitted from")
    p.add_argument("--no-measure", action="store_true",
                   help="only read the store, even when the device is present")
    p.add_argument("--cv", action="store_true",
                   help="also leave-one-class-out cross-validation of each model")
    _timing(p)
    p.set_defaults(run=models.evaluate)

    p = sub.add_parser("report", help="markdown, CSV and figures of a profile's evaluation")
    p.add_argument("--profile", required=True,
                   help="the fitted profile to report on (its model, device and store)")
    p.add_argument("--db", help="measurement store (default: the profile's)")
    p.add_argument("--out", required=True, help="folder for the report (created)")
    p.set_defaults(run=models.report)

    p = sub.add_parser("project", help="search a GROPHECY code skeleton's layouts and "
                                       "print the fastest projected on a GPU")
    p.add_argument("skeleton", metavar="SKELETON.sk", help="the code skeleton "
                   "(docs/grophecy-skeletons.md)")
    p.add_argument("--hardware", required=True, metavar="NAME|FILE",
                   help="the GPU: h100, h200, fx5600, c1060 or a JSON file")
    p.add_argument("--hints", metavar="FILE", help="a TOML file narrowing the layout "
                   "space: block, fold, stage, cache, unroll (docs/cli.md)")
    p.add_argument("--top", default="10", metavar="N",
                   help="print the N fastest layouts (default 10)")
    p.add_argument("--kernel", metavar="INDEX", help="which parallel_for loop to project, "
                   "0-based in source order (default: the only one)")
    p.add_argument("--define", nargs="+", action="extend", metavar="NAME=VALUE",
                   help="override (or supply) a #define of the skeleton; integers, e.g. "
                        "--define N=400 K=200; FLOPS=N gives the GFLOP/s column")
    _json(p)
    p.set_defaults(run=project.project)

    p = sub.add_parser("tune", help="rank every variant of a kernel's search space with a "
                                    "model, measure the best few, print the fastest")
    _kernel_args(p)
    _param(p, "the kernel's sizes (every size parameter it has)", required=True)
    _model_args(p, names, "a fitted profile (any model) that ranks the variants")
    p.add_argument("--space", metavar="FILE", help="a TOML search space: [axes.NAME] group, "
                   "per_item; [unroll] (docs/cli.md; default: derived from the kernel)")
    p.add_argument("--budget", metavar="N|TIME",
                   help="search guided by the model, correcting it with each batch "
                        "measured: at most N measurements, or measuring for at most TIME "
                        "(90s, 5min, 1h); the variants the store holds count (default 20; "
                        "docs/tuning.md)")
    p.add_argument("--batch", metavar="B", help="variants the guided search measures "
                   "between two corrections (default 1)")
    p.add_argument("--measure-top", metavar="K",
                   help="instead of the guided search, measure the K best-predicted "
                        "variants (0: measure none, as --rank-only)")
    p.add_argument("--rank-only", action="store_true",
                   help="rank for the model's device and measure nothing: no device "
                        "needed")
    p.add_argument("--max-variants", default=str(tune.MAX_VARIANTS), metavar="N",
                   help="refuse a space of more than N variants, saying how long ranking "
                        f"it would take (default {tune.MAX_VARIANTS}: a few minutes of "
                        "ranking; docs/cli.md)")
    p.add_argument("--db", help="measurement store (default: "
                   "kernelcast-data/<device>-<backend>-tune.sqlite); a rerun measures "
                   "nothing twice")
    _device_args(p)
    spread.add_arguments(p)  # --workers, --scheduler (kernelcast.tune.distributed)
    _devices(p, "rank, and measure the best variants, over several devices (rows into "
                "the one --db)")
    _json(p)
    p.set_defaults(run=tune.tune)

    p = sub.add_parser("advise", help="the fine-grained model's optimization criteria, "
                                      "potential speedups and hints for a profiled "
                                      "application")
    p.add_argument("file", metavar="PROFILE.csv|FILE.py:FACTORY",
                   help="Nsight Compute's raw page of the application's launches "
                        "(ncu --set full --page raw --csv APP > PROFILE.csv), or a Loopy "
                        "kernel to profile so now (needs ncu and an NVIDIA GPU)")
    _param(p, "a Loopy kernel's sizes")
    p.add_argument("--profile", metavar="FILE",
                   help="a criteria profile (the GPU's characterization; "
                        "kernelcast calibrate --model criteria writes one)")
    p.add_argument("--device", metavar="NAME",
                   help="instead of --profile, a substring of the GPU's name: its criteria "
                        "profile in kernelcast-data/ or data/profiles/ of the current folder, "
                        "else the checkout's data/profiles/ (default: the GPU the CSV "
                        "names)")
    p.add_argument("--kernel", metavar="REGEX",
                   help="judge only the launches of kernels whose name matches (default: "
                        "every launch)")
    p.add_argument("--span", type=float, metavar="SECONDS",
                   help="the application's measured span, first launch's start to last "
                        "launch's end (judges HOSTSYNC)")
    p.add_argument("--loopy", action="store_true",
                   help="name the Loopy transformation that addresses each hint (implied "
                        "for a Loopy kernel)")
    p.add_argument("--figure", metavar="PNG",
                   help="also draw the criteria as the paper's Figures 5-7")
    _json(p)
    p.set_defaults(run=advise.advise)

    p = sub.add_parser("demo", help="the main job: calibrate the best device, evaluate")
    _device_args(p)
    p.set_defaults(run=models.demo)
    for verb in sub.choices.values():  # --debug after the verb, too
        _debug(verb)
    return parser


def _one_line(text) -> str:
    return "; ".join(line.strip() for line in str(text).splitlines() if line.strip())


def _warning_printer():
    """A ``warnings.showwarning`` that prints each warning as one line, "kernelcast:
    warning: ...", and a line it printed once not again (the same warning given from
    several places, as predict and explain both give a model's)."""
    from kernelcast.errors import KernelcastWarning

    printed = set()

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        kind = "" if issubclass(category, KernelcastWarning) else f"{category.__name__}: "
        text = f"kernelcast: warning: {kind}{_one_line(message)}"
        if text not in printed:
            printed.add(text)
            print(text, file=sys.stderr)

    return show


def _one_line_warnings():
    """Entered warnings.catch_warnings: Loopy's warnings ignored, the others shown as one
    line each, once; ``__exit__`` restores what was before."""
    from loopy.diagnostic import LoopyWarning

    saved = warnings.catch_warnings()
    saved.__enter__()
    warnings.filterwarnings("ignore", category=LoopyWarning)
    warnings.showwarning = _warning_printer()
    return saved


def _fail(err: BaseException, status: int, debug: bool, text=None,
          prefix="error") -> int:
    if debug:
        traceback.print_exception(err, file=sys.stderr)
    print(f"kernelcast: {prefix}: {_one_line(err if text is None else text)}",
          file=sys.stderr)
    return status


# errors of a path: the argument's fault (exit 2) where the path was given as one
_PATH_ERRNOS = {errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.ENAMETOOLONG,
                errno.EACCES, errno.EPERM, errno.ELOOP, errno.EEXIST}


def _os_failure(err: OSError, argv, debug: bool) -> int:
    """An OSError no verb turned into a KernelcastError: its path and what went wrong;
    exit 2 where the path is one the command line gave, else 1."""
    from kernelcast.frontends.files import describe_os_error

    names = [str(n) for n in (err.filename, err.filename2) if n is not None]
    what = describe_os_error(err)
    given = set()
    for arg in sys.argv[1:] if argv is None else argv:
        given |= {str(arg), str(arg).partition("=")[2]}
    status = 2 if err.errno in _PATH_ERRNOS and any(n in given for n in names) else 1
    return _fail(err, status, debug, f"{', '.join(names)}: {what}" if names else what)


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    debug = bool(getattr(args, "debug", False))
    quiet = _one_line_warnings()
    previous = signal.getsignal(signal.SIGTERM)
    try:
        catch_sigterm()
        return args.run(args)
    except (KeyboardInterrupt, Terminated) as stop:  # after the last committed row
        line, status = interrupted(stop)
        print(f"kernelcast: {line}", file=sys.stderr)
        return status
    except (UsageError, ParameterError, DataDependentError) as err:  # fixed by arguments
        return _fail(err, 2, debug)
    except KernelcastError as err:
        return _fail(err, 1, debug)
    except BrokenPipeError:  # output piped into head and the like
        sys.stderr.close()
        return 0
    except OSError as err:  # a file or the disk: one line, never a traceback
        return _os_failure(err, argv, debug)
    except MemoryError as err:
        return _fail(err, 1, debug, "out of memory")
    except SystemExit as err:  # exit() in a kernel file's code: not kernelcast's status
        return _fail(err, 1, debug, f"exit({err.code!r}) was called during `kernelcast "
                     f"{args.command}` (by a kernel file's code?); --debug shows where")
    except Exception as err:  # noqa: BLE001 - a bug: one line, the traceback on --debug
        return _fail(err, 1, debug, f"{type(err).__name__}: {_one_line(err)} (please "
                     "report; --debug shows the traceback)", prefix="internal error")
    finally:
        signal.signal(signal.SIGTERM, previous)
        quiet.__exit__(None, None, None)
