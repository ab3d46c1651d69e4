"""The ``advise`` verb: the fine-grained model's criteria of a profiled application.

``kernelcast advise PROFILE.csv`` reads Nsight Compute's raw page of an application's
launches (``ncu --set full --page raw --csv``); ``kernelcast advise FILE.py:FACTORY
--param NAME=SIZE ...`` profiles one launch of a Loopy kernel so itself, through the CUDA
backend (kernelcast.frontends.profiler.run: ncu and an NVIDIA GPU needed). It judges them with a criteria profile (a GPU's
characterization from its microbenchmarks: ``--profile FILE``, or found by ``--device
NAME`` among the criteria profiles in kernelcast-data/ and data/profiles/; default: the
device the CSV names) and prints a table of the nine criteria with their potential
speedups, each launch's bound and overall potential, the application's overall potential
speedup and a hint for every criterion worth improving. ``--loopy`` (implied for a Loopy
kernel) names the Loopy transformation behind each hint; ``--figure PNG`` draws the paper's Figures 5–7;
``--json`` prints one JSON object instead.

Public names: advise, find_profile.
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

from kernelcast.errors import KernelcastError, ProfileError, UsageError

PROFILE_FOLDERS = ("kernelcast-data", "data/profiles")


def find_profile(device: str) -> Path:
    """The criteria profile whose device name contains *device* (case-insensitive),
    among the JSON files of PROFILE_FOLDERS; one-line errors for none or several."""
    found = []
    for folder in PROFILE_FOLDERS:
        for path in sorted(Path(folder).glob("*-criteria.json")):
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(doc, dict) and doc.get("model") == "criteria" \
                    and device.lower() in str(doc.get("device", "")).lower():
                found.append((path, doc["device"]))
    if not found:
        raise UsageError(f"no criteria profile for a device named like {device!r} in "
                         f"{' or '.join(PROFILE_FOLDERS)}; pass --profile FILE (made by "
                         "benchmarks/criteria_microbenchmarks.py profile)")
    devices = {name for _, name in found}
    if len(devices) > 1:
        raise UsageError(f"--device {device!r} names several devices ({', '.join(sorted(devices))}); "
                         "be more precise")
    return found[0][0]


def _is_loopy(file: str) -> bool:
    return Path(file.rpartition(":")[0]).suffix == ".py"


def _launches(args):
    from kernelcast.frontends.profiler import read_ncu_csv

    if _is_loopy(args.file):
        from kernelcast.cli.args import sizes
        from kernelcast.frontends.profiler.run import profile_kernel

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
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        from kernelcast.frontends.files import describe_os_error

        raise UsageError(f"{path}: {describe_os_error(err)}") from None
    launches = read_ncu_csv(text, str(path))
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
    if model.name != "criteria":
        raise ProfileError(f"{path}: a {model.name} profile; advise needs a criteria "
                           "profile (benchmarks/criteria_microbenchmarks.py profile)")
    return model, path


def _print(model, path, assessment, loopy) -> None:
    from kernelcast.models.criteria.advice import hints, rows

    out = [f"{assessment.application}: {len(assessment.kernels)} launch"
           f"{'es' if len(assessment.kernels) != 1 else ''}, "
           f"{sum(k.seconds for k in assessment.kernels) * 1e6:,.1f} µs on the GPU"
           + (f", span {assessment.span * 1e6:,.1f} µs" if assessment.values["HOSTSYNC"]
              is not None else " (no --span: HOSTSYNC not judged)"),
           f"characterization: {model.provenance_['device']} ({path})", ""]
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
    from kernelcast.models.criteria.advice import as_json, figure
    from kernelcast.models.criteria.criteria import Application

    if args.span is not None and not args.span > 0:
        raise UsageError(f"--span {args.span}: the span must be a positive time in seconds")
    launches = _launches(args)
    model, path = _model(args, launches)
    try:
        name = args.file.rpartition(":")[2] if _is_loopy(args.file) else Path(args.file).stem
        application = Application(name, tuple(launches), span=args.span)
        assessment = model.assess(application)
    except ValueError as err:
        raise KernelcastError(str(err)) from None
    if args.span is not None and args.span < sum(k.seconds for k in assessment.kernels):
        print(f"kernelcast: warning: --span {args.span:g} s is shorter than the launches' "
              "own time; HOSTSYNC is capped at 1", file=sys.stderr)
    if args.figure:
        figure([(application.name, assessment)], Path(args.figure),
               title=f"{application.name} on {model.provenance_['device']}")
    loopy = args.loopy or _is_loopy(args.file)
    if args.json:
        print(json.dumps(as_json(assessment, loopy), indent=1))
    else:
        _print(model, path, assessment, loopy)
        if args.figure:
            print(f"\nfigure: {args.figure}")
    return 0
