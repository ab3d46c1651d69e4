"""The ``kernelcast`` command line: a parser and one function per verb.

Verbs: properties, suites, devices (kernelcast.cli.kernels); measure, calibrate, fit
(measuring); predict, evaluate, report, demo (models). Every ``--model`` takes the
registry's names (kernelcast.models). Errors print one line; the exit status is 0 on
success, 1 on a failure and 2 on a usage error (a bad argument or combination).
"""

from __future__ import annotations

import argparse
import sys
import warnings

from kernelcast.cli import kernels, measuring, models
from kernelcast.errors import UsageError
from kernelcast.errors import DataDependentError, KernelcastError, ParameterError


def _model_choices():
    from kernelcast.models import model_class, model_names

    names = model_names()
    return names, "; ".join(f"{n}: {model_class(n).summary}" for n in names)


def _timing(p):
    p.add_argument("--runs", type=int, default=30, help="launches per attempt (paper: 30)")
    p.add_argument("--tolerance", type=float, default=0.10,
                   help="largest median/min - 1 of a stable case")


def _kernel_args(p):
    p.add_argument("kernel", help="FILE.py:FACTORY, a function returning a Loopy kernel")
    p.add_argument("--stat", nargs="+", action="extend", metavar="NAME=VALUE",
                   help="statistics for data-dependent loop bounds or conditions")


def _device_args(p):
    p.add_argument("--device", help="a substring of the device or platform name "
                   "(default: the best device)")
    p.add_argument("--backend", default="opencl", choices=("opencl", "cuda"),
                   help="OpenCL (pyopencl) or CUDA (cupy)")


def _registers_file(p):
    p.add_argument("--registers", metavar="FILE",
                   help="hong-kim: registers per thread of each suite kernel, as the "
                        "device's compiler reported them (data/<gpu>/registers.json)")


def build_parser() -> argparse.ArgumentParser:
    names, described = _model_choices()
    parser = argparse.ArgumentParser(
        prog="kernelcast", description="Predict GPU kernel run times from Loopy kernels.")
    from kernelcast.version import __version__

    parser.add_argument("--version", action="version", version=f"kernelcast {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("properties", help="symbolic and evaluated properties of a kernel")
    _kernel_args(p)
    p.add_argument("--param", nargs="+", action="extend", metavar="NAME=SIZE",
                   help="evaluate at these sizes")
    p.add_argument("--json", action="store_true", help="print JSON for machines")
    p.set_defaults(run=kernels.properties)

    p = sub.add_parser("suites", help="list the cases of a kernel suite (paper §4.1, §5)")
    p.add_argument("--suite", default="measurement",
                   help="measurement, test, extension, validation, or their -cpu forms")
    p.add_argument("--p", nargs="+", action="extend", metavar="CLASS=P",
                   help="base size exponent of a class (default: the paper's smallest)")
    p.add_argument("--dtype", nargs="+", action="extend", metavar="DTYPE",
                   help="only these precisions (float32, float64)")
    p.add_argument("--group-set", metavar="SET",
                   help="a §4.1 group-size set such as '2-D Med' instead of the default")
    p.add_argument("--json", action="store_true", help="print JSON for machines")
    p.set_defaults(run=kernels.suites)

    p = sub.add_parser("devices", help="list the OpenCL and CUDA devices")
    p.add_argument("--json", action="store_true", help="print JSON for machines")
    p.set_defaults(run=kernels.devices)

    p = sub.add_parser("measure", help="time kernels on a device into a measurement store")
    p.add_argument("--suite", help="a suite to measure (see `kernelcast suites`)")
    p.add_argument("--kernel", help="FILE.py:FACTORY, a function returning a Loopy kernel")
    p.add_argument("--param", nargs="+", action="extend", metavar="NAME=SIZE",
                   help="sizes for --kernel")
    p.add_argument("--db", required=True, help="the SQLite measurement store")
    _device_args(p)
    p.add_argument("--build-options", help="options for the device compiler")
    p.add_argument("--p", nargs="+", action="extend", metavar="CLASS=P",
                   help="base size exponent of a class (default: chosen as in §4.2); "
                   "'max' for the largest allowed p of every class")
    p.add_argument("--classes", help="only these classes, comma-separated")
    p.add_argument("--dtype", nargs="+", action="extend", metavar="DTYPE",
                   help="only these precisions (float32, float64)")
    p.add_argument("--group-set", metavar="SET", help="a §4.1 group-size set")
    _timing(p)
    p.add_argument("--no-verify", action="store_true",
                   help="skip checking suite kernels against their references")
    p.set_defaults(run=measuring.measure)

    model_help = f"the model ({described})"
    p = sub.add_parser("calibrate", help="measure what a model is fitted from, fit it, "
                                         "write a profile")
    _device_args(p)
    p.add_argument("--db", help="measurement store (default: "
                   "kernelcast-data/<device>-<backend>.sqlite)")
    p.add_argument("--profile", help="where to write the profile (default: beside the "
                   "store, named after the model)")
    p.add_argument("--suite", help="measurement (GPU default) or measurement-cpu (CPU "
                   "default)")
    p.add_argument("--model", choices=names,
                   help=model_help + ". Default: extended on a GPU, paper on a CPU")
    p.add_argument("--nonnegative", action="store_true",
                   help="paper model: fit non-negative weights")
    p.add_argument("--hardware", help="hong-kim: h100, h200, fx5600, c1060 or a JSON file "
                   "(default: the device's)")
    _registers_file(p)
    _timing(p)
    p.set_defaults(run=measuring.calibrate)

    p = sub.add_parser("fit", help="fit a model to a measurement store, write a profile")
    p.add_argument("--db", required=True, help="the measurement store")
    p.add_argument("--model", choices=names, default="paper", help=model_help)
    p.add_argument("--suite", default="measurement",
                   help="the measurement suite (measurement or measurement-cpu)")
    p.add_argument("--profile", required=True, help="where to write the profile")
    p.add_argument("--nonnegative", action="store_true",
                   help="paper model: fit non-negative weights")
    p.add_argument("--hardware", help="hong-kim: h100, h200, fx5600, c1060 or a JSON file")
    _registers_file(p)
    p.set_defaults(run=measuring.fit)

    p = sub.add_parser("predict", help="predict a kernel's run time with a profile "
                                       "or the Hong–Kim model")
    _kernel_args(p)
    p.add_argument("--param", nargs="+", action="extend", metavar="NAME=SIZE", required=True,
                   help="the kernel's sizes")
    p.add_argument("--profile", help="a fitted profile (any model)")
    p.add_argument("--model", choices=names,
                   help="hong-kim with --hardware needs no profile; otherwise the "
                        "profile's model")
    p.add_argument("--hardware", help="hong-kim: h100, h200, fx5600, c1060 or a JSON file")
    p.add_argument("--registers", type=int, metavar="N",
                   help="hong-kim: registers per thread, as the compiler reports them "
                        "(limits the blocks an SM holds)")
    p.add_argument("--json", action="store_true", help="print JSON for machines")
    p.set_defaults(run=models.predict)

    p = sub.add_parser("evaluate", help="Table 1 of one model or of every model side by "
                                        "side on a store's test suite")
    p.add_argument("--profile", help="a fitted profile; its store and device")
    p.add_argument("--model", choices=(*names, "all"),
                   help="also (or, without --profile, only) this model, fitted to the same "
                        "store; 'all' puts every model side by side")
    p.add_argument("--hardware", help="hong-kim without --profile: the hardware")
    _registers_file(p)
    p.add_argument("--db", help="measurement store (default: the profile's)")
    p.add_argument("--suite", help="the suite to evaluate (default: the test suite of the "
                   "profile's measurement suite)")
    p.add_argument("--fit-suite", default="measurement",
                   help="without --profile: the measurement suite models are fitted from")
    p.add_argument("--no-measure", action="store_true",
                   help="only read the store, even when the device is present")
    p.add_argument("--cv", action="store_true",
                   help="also leave-one-class-out cross-validation of each model")
    _timing(p)
    p.set_defaults(run=models.evaluate)

    p = sub.add_parser("report", help="markdown, CSV and figures of a profile's evaluation")
    p.add_argument("--profile", required=True, help="a fitted profile")
    p.add_argument("--db", help="measurement store (default: the profile's)")
    p.add_argument("--out", required=True, help="folder for the report")
    p.set_defaults(run=models.report)

    p = sub.add_parser("demo", help="the main job: calibrate the best device, evaluate")
    _device_args(p)
    p.set_defaults(run=models.demo)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    from loopy.diagnostic import LoopyWarning

    warnings.filterwarnings("ignore", category=LoopyWarning)
    try:
        return args.run(args)
    except (UsageError, ParameterError, DataDependentError) as err:  # fixed by arguments
        print(f"kernelcast: error: {err}", file=sys.stderr)
        return 2
    except KernelcastError as err:
        print(f"kernelcast: error: {err}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # output piped into head and the like
        sys.stderr.close()
        return 0
