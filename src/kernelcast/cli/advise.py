"""The ``advise`` verb: the fine-grained model's criteria of a profiled application.

``kernelcast advise PROFILE.csv`` reads Nsight Compute's raw page of an application's
launches (``ncu --set full --page raw --csv``); ``kernelcast advise FILE.py:FACTORY
--param NAME=SIZE ...`` profiles one launch of a Loopy kernel so itself, through the CUDA
backend (kernelcast.measure.ncu: ncu and an NVIDIA GPU needed). It judges them
with a criteria profile (a GPU's characterization from its microbenchmarks: ``--profile
FILE``, or found by ``--device NAME`` among the criteria profiles where
kernelcast.profile.find_profiles looks: kernelcast-data/ and data/profiles/ of the current
folder, then the source checkout's data/profiles/; default: the device the CSV names) and
prints a table of the nine criteria with their potential speedups, each launch's bound
and overall potential, the application's overall potential speedup and a hint for every
criterion worth improving.
``--loopy`` (implied for a Loopy kernel) names the Loopy transformation behind each hint;
``--figure PNG`` draws the paper's Figures 5–7 (".png" added to a name without a suffix;
a directory or a FIFO refused); ``--json`` prints one JSON object instead. A profile of
another GPU than the CSV's is a DeviceMismatchWarning and a note in the output.

Public names: advise, find_profile.
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

from kernelcast.errors import KernelcastError, ProfileError, UsageError


def find_profile(device: str) -> Path:
    """The criteria profile whose device *device* names (kernelcast.profile.named_like),
    the first of kernelcast.profile.profile_folders() that holds one (files that cannot be
    read as JSON, a FIFO among them, are passed over); one-line errors for none or several
    devices."""
    from kernelcast.models import model_names
    from kernelcast.profile import find_profiles, profile_folders

    found = [entry for name in model_names("profile") for entry in find_profiles(name, device)]
    if not found:
        where = " or ".join(f"{folder}/" for folder in profile_folders())
        raise UsageError(f"no criteria profile for a device named like {device!r} in "
                         f"{where}; pass --profile FILE, or measure one on that GPU: "
                         "kernelcast calibrate --model criteria")
    devices = {doc["device"] for _, doc in found}
    if len(devices) > 1:
        raise UsageError(f"--device {device!r} names several devices ({', '.join(sorted(devices))}); "
                         "be more precise")
    return found[0][0]


def _figure_path(text: str) -> Path:
    """The file ``--figure`` *text* writes: *text*, with ".png" added where it has no
    suffix (as matplotlib does); a one-line UsageError where matplotlib cannot write
    that format or the path is not a regular file."""
    from matplotlib.backend_bases import FigureCanvasBase

    from kernelcast.frontends.files import check_regular_file

    path = Path(text)
    check_regular_file(path, "figure file (--figure)")
    if not path.suffix:
        path = path.with_name(path.name + ".png")
    formats = FigureCanvasBase.get_supported_filetypes()
    if path.suffix[1:].lower() not in formats:
        raise UsageError(f"--figure {text}: matplotlib cannot write {path.suffix!r} "
                         f"files; end the name with one of .{', .'.join(sorted(formats))}")
    check_regular_file(path, "figure file (--figure)")
    return path


def _is_loopy(file: str) -> bool:
    return Path(file.rpartition(":")[0]).suffix == ".py"


def _launches(args):
    from kernelcast.frontends.files import read_regular_file
    from kernelcast.frontends.profiler import read_ncu_csv

    if _is_loopy(args.file):
        from kernelcast.frontends.arguments import sizes
        from kernelcast.measure.ncu import profile_kernel

        def started():
            print(f"kernelcast: profiling {args.file} under Nsight Compute (its full set "
                  "replays the launch some 40 times: allow a minute)", file=sys.stderr,
                  flush=True)

        return profile_kernel(args.file, sizes(args.param or []), on_start=started)
    if args.param:
        raise UsageError("--param gives a Loopy kernel's sizes (FILE.py:FACTORY), not a CSV's")
    path = Path(args.file)
    if path.suffix.lower() != ".csv":
        raise UsageError(f"{path}: advise reads Nsight Compute's raw page as CSV "
                         "(ncu --set full --page raw --csv ... > FILE.csv) or profiles a "
                         "Loopy kernel, FILE.py:FACTORY")
    data = read_regular_file(path, "CSV of Nsight Compute")  # a FIFO is refused, not read
    if data is None:
        raise UsageError(f"{path}: no such file or directory")
    launches = read_ncu_csv(data.decode("utf-8", errors="replace"), str(path))
    if args.kernel:
        try:
            pattern = re.compile(args.kernel)
        except re.error as err:
            raise UsageError(f"--kernel {args.kernel!r} is not a regular expression: "
                             f"{err}") from None
        launches = [x for x in launches if pattern.search(x.kernel)]
        if not launches:
            raise UsageError(f"{path}: no launch of a kernel matching {args.kernel!r}")
    if not launches:
        raise UsageError(f"{path}: the profile holds no launch")
    return launches


def _model(args, launches):
    from kernelcast.profile import load_profile

    if args.profile:
        path = Path(args.profile)
    else:
        device = args.device or next(
            (x.metrics.get("device__attribute_display_name") for x in launches
             if isinstance(x.metrics.get("device__attribute_display_name"), str)), None)
        if not device:
            raise UsageError("the profile does not name its device: pass --device NAME "
                             "or --profile FILE")
        path = find_profile(device)
    model = load_profile(path)
    if model.workload != "profile":
        raise ProfileError(f"{path}: a {model.name} profile; advise needs a criteria "
                           "profile (kernelcast calibrate --model criteria)")
    return model, path


def _print(model, path, assessment, loopy) -> None:
    from kernelcast.models.criteria.advice import hints, rows

    out = [f"{assessment.application}: {len(assessment.kernels)} launch"
           f"{'es' if len(assessment.kernels) != 1 else ''}, "
           f"{sum(k.seconds for k in assessment.kernels) * 1e6:,.1f} µs on the GPU"
           + (f", span {assessment.span * 1e6:,.1f} µs" if assessment.values["HOSTSYNC"]
              is not None else " (no --span: HOSTSYNC not judged)"),
           f"characterization: {model.provenance_['device']} ({path})",
           *([f"note: device mismatch: {assessment.mismatch}"] if assessment.mismatch
             else []), ""]
    table = [["criterion", "value", "potential speedup"], *rows(assessment)]
    widths = [max(len(r[i]) for r in table) for i in range(3)]
    for i, row in enumerate(table):
        out.append(f"  {row[0]:<{widths[0]}}  {row[1]:>{widths[1]}}  {row[2]:>{widths[2]}}")
        if i == 0:
            out.append("  " + "  ".join("-" * w for w in widths))
    out += ["", "launches (the longest first):"]
    for i, k in sorted(enumerate(assessment.kernels), key=lambda ik: -ik[1].seconds)[:8]:
        out.append(f"  #{i} {k.kernel}: {k.seconds * 1e6:,.1f} µs, {k.bound}-bound, "
                   f"MEMTHR {k.memthr:.2f}, ARITHTHR {k.ariththr:.2f}, potential "
                   f"{k.potential:.2f}×")
    if len(assessment.kernels) > 8:
        out.append(f"  ... and {len(assessment.kernels) - 8} more")
    out += ["", f"overall potential speedup: {assessment.potential:.2f}×", ""]
    advice = hints(assessment, loopy)
    if not advice:
        out.append("no criterion promises a speedup of 1.1× or more")
    for h in advice:
        out += textwrap.wrap(f"- {h.criterion} ({h.speedup:.2f}×): {h.text}", 100,
                             subsequent_indent="  ")
        if h.loopy:
            out += textwrap.wrap(f"Loopy: {h.loopy}", 100, initial_indent="  ",
                                 subsequent_indent="    ")
    print("\n".join(out))


def advise(args) -> int:
    from kernelcast.models.criteria.advice import as_json
    from kernelcast.report import advice_figure, save_figure
    from kernelcast.models.criteria.criteria import LONGEST_SECONDS, Application

    if args.span is not None and not 0 < args.span <= LONGEST_SECONDS:
        raise UsageError(f"--span {args.span}: the span must be a positive time in "
                         "seconds, at most 2^64 ns (what a 64-bit nanosecond timer holds)")
    figure_path = _figure_path(args.figure) if args.figure else None
    launches = _launches(args)
    model, path = _model(args, launches)
    try:
        name = args.file.rpartition(":")[2] if _is_loopy(args.file) else Path(args.file).stem
        application = Application(name, tuple(launches), span=args.span)
        assessment = model.assess(application)
    except UsageError as err:  # a launch's metric out of range: name the file
        raise UsageError(f"{args.file}: {err}") from None
    except ValueError as err:
        raise KernelcastError(str(err)) from None
    if args.span is not None and args.span < sum(k.seconds for k in assessment.kernels):
        print(f"kernelcast: warning: --span {args.span:g} s is shorter than the launches' "
              "own time; HOSTSYNC is capped at 1", file=sys.stderr)
    if figure_path:
        save_figure(advice_figure([(application.name, assessment)],
                                  title=f"{application.name} on "
                                        f"{model.provenance_['device']}", model=model),
                    figure_path)
    loopy = args.loopy or _is_loopy(args.file)
    if args.json:  # allow_nan=False: never print a NaN or an infinity as JSON
        print(json.dumps(as_json(assessment, loopy), indent=1, allow_nan=False))
    else:
        _print(model, path, assessment, loopy)
        if figure_path:
            print(f"\nfigure: {figure_path}")
    return 0
