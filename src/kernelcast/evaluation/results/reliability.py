"""Reliability, from data/reliability.json (benchmarks/reliability.py): campaigns killed
and resumed, stores with a bit flipped, concurrent campaigns and store creation, the CLI
fuzz (benchmarks/fuzz.py: ``fuzz_lines``, the checks in FUZZ_CHECKS) and the fuzz of the
OpenCL front-end on real programs (data/reliability/opencl-programs-fuzz.json:
``opencl_fuzz_lines``).

Public names: FUZZ_CHECKS, section_reliability, opencl_fuzz_lines, fuzz_lines.
"""

from __future__ import annotations

import json

from kernelcast.evaluation.results.common import Data, stamp, table

def section_reliability(data: Data) -> list[str]:
    path = data / "reliability.json"
    out = ["## Reliability", ""]
    doc = data.load(path)
    if doc is None:
        return out + [data.missing(path, "reliability.py")]
    try:
        kills, worse = doc["kills"], doc["corruptions"]
        out += [f"`benchmarks/reliability.py`, {stamp(doc)}, "
                f"on {doc['machine']}, {doc['device']}, seed {doc['seed']}, "
                f"{doc['seconds']:.0f} s. Data: `{data.rel(path)}` ({data.file_commit(path)}).", ""]
        delays = [r["delay_s"] for r in kills["runs"]
                  if r["target"] == "campaign" and not r["ended_before_kill"]]
        out += [f"- **Kills**: {kills['survived']} of {kills['total']} survived — "
                f"{kills['campaign_kills']} campaigns ({kills['campaign_seconds']:.1f} s "
                f"each when not killed) killed with SIGKILL after "
                f"{min(delays) * 1e3:.0f} ms to {max(delays):.1f} s, then resumed (the "
                "store absent or whole after the kill, every case stored exactly once, "
                "the rows from before the kill unchanged, none damaged), and "
                f"{kills['worker_kills']} campaigns whose measuring worker was killed "
                "(the case it ran stored as `crashed`, the campaign went on to the end)."]
        for kind, what in (("value", "one bit flipped in one stored value of one row"),
                           ("byte", "one bit flipped in one random byte of the file")):
            counts = worse[kind]
            total = sum(counts.values())
            parts = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
            out.append(f"- **Corruptions, {what}**: {total} copies of a finished store: "
                       f"{parts}; undetected: {counts.get('undetected', 0)}.")
        out.append("  (Detected: the row is reported damaged and left out of fits; refused: "
                   "the store is refused in one line; harmless: every row reads back as "
                   "before; refused by SQLite: the flip broke a CHECK or UNIQUE constraint, "
                   "so it could not be made.)")
        conc = doc["concurrency"]
        refused = conc["second_campaign_refused_naming_the_first"]
        out.append(f"- **Concurrency**: a second campaign on the device being measured "
                   f"{'was refused naming the first' if refused else 'was NOT refused'}"
                   f"; {conc['creators']} processes creating one store at once: "
                   f"{conc['races_all_created']} of {conc['races']} races all succeeded.")
        out += fuzz_lines(doc.get("fuzz") or {})
        out += opencl_fuzz_lines(data)
        out += ["", "Exit statuses: 0 success; 1 the job failed; 2 a usage error; 130 and "
                "143 stopped by Ctrl-C or SIGTERM after saying what was stored "
                "(docs/cli.md)."]
    except (KeyError, TypeError, ValueError) as err:
        out.append(f"*Not generated: `{data.rel(path)}` is not in the expected form ({err}).*")
    return out


def opencl_fuzz_lines(data: Data) -> list[str]:
    """The fuzz of the OpenCL front-end on the real programs
    (benchmarks/fuzz_opencl_programs.py)."""
    path = data / "reliability" / "opencl-programs-fuzz.json"
    if not path.exists():
        return []
    fz = json.loads(path.read_text(encoding="utf-8"))
    tree = " (with uncommitted changes)" if fz["uncommitted_changes"] else ""
    return [f"- **OpenCL front-end on real programs** "
            f"(`benchmarks/fuzz_opencl_programs.py`, {fz['date'][:10]}, commit "
            f"{fz['commit']}{tree}, seed {fz['seed']}, {fz['seconds']:.0f} s): "
            f"{fz['cases']} mutations of the programs of data/opencl-programs/, each counted "
            f"at a launch of its kernel (arguments, options and sizes sometimes extreme): "
            f"{fz['counted']} counted with finite, non-negative counts, "
            f"{fz['typed_errors']} refused with a one-line OpenCLSourceError, "
            f"{len(fz['findings'])} other exceptions."]


FUZZ_CHECKS = {  # the judge's checks (tests/fuzz_run.py CHECKS): what each asserts
    "status": "the exit status is 0, 1 or 2",
    "escaped": "no exception escapes",
    "signal": "the process is not killed by a signal (SIGABRT, SIGSEGV, ...)",
    "hangs": "it ends within the time limit and never waits on a FIFO",
    "traceback": "no Python traceback is printed",
    "internal": "no \"internal error\"",
    "error-lines": "a failure ends in exactly one error line",
    "nan": "no NaN or infinity in the output (text or --json)",
    "negative-time": "no negative time in the output",
    "json": "--json prints one JSON document",
    "repeated-warning": "no warning line is printed twice",
    "input-changed": "every input file named is there afterwards, of the same type and "
                     "bytes (a FIFO or device node included)",
}


def fuzz_lines(fz: dict) -> list[str]:
    """The fuzz of benchmarks/fuzz.py: invocations per verb and outcome, damaged inputs
    by kind, and the invocations that failed each check."""
    if "invocations" not in fz:
        return ["- **Fuzz**: not run with this summary."]
    outcomes = ("ok", "help", "usage", "error 1", "error 2", "known", "failure")
    seen = [o for o in outcomes if fz["outcomes"].get(o)]
    rows = [[verb, *[counts.get(o, 0) for o in seen], sum(counts.values())]
            for verb, counts in fz["by_verb"].items()]
    rows.append(["all", *[fz["outcomes"].get(o, 0) for o in seen], fz["invocations"]])
    out = [f"- **Fuzz** (`benchmarks/fuzz.py`, seed {fz['seed']}, {fz['seconds']:.0f} s): "
           f"{fz['invocations']} invocations of every verb with malformed arguments and "
           "damaged or non-regular input files, each in a forked child process and judged "
           "by every check below; data/ changed: "
           f"{'no' if not fz.get('data_changed') else 'YES'}.", "",
           table(["verb", *seen, "total"], rows), "",
           "(ok: exit 0; usage: argparse's usage error; error 1/2: one-line error with that "
           "status; help: --help or --version.)", ""]
    damaged = fz.get("damaged") or {}
    if damaged:
        out += ["Invocations given a damaged input, by kind: " + ", ".join(
            f"{kind} {n}" for kind, n in sorted(damaged.items())) + ".", ""]
    failed = fz.get("by_check") or {}
    out += [table(["check", "invocations that failed it"],
                  [[what, failed.get(check, 0)] for check, what in FUZZ_CHECKS.items()],
                  ["l", "r"])]
    return out
