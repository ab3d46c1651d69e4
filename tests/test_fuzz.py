"""The command line never lies (issue 21): a seeded fuzz of every verb, in-process.

Malformed sizes and statistics, missing, unreadable and wrong paths, kernel files that
fail in every way, damaged profiles, hardware and registers files, and damaged stores
(tests/fuzzing.py generates them): every invocation exits with 0, 1 or 2, prints no
traceback, ends a failure with exactly one "kernelcast: error:" line (or argparse's usage
and error), and leaves data/ as it was. At least 1,000 invocations run; generating stops
when the time budget is spent (benchmarks/fuzz.py runs a larger fuzz).
"""

import sys

import pytest

from fuzzing import KNOWN_ELSEWHERE, VERBS, Budget, Workspace, fuzz, generate, judge, run

SECONDS = 60.0  # generation stops here; the workspace and the checks take a few more
MINIMUM = 1000


@pytest.fixture(scope="module")
def summary(tmp_path_factory):
    return fuzz(tmp_path_factory.mktemp("fuzz"), seed=21, invocations=1600,
                seconds=SECONDS, budget=Budget())


def test_enough_invocations_of_every_verb_ran(summary):
    assert summary["invocations"] >= MINIMUM, summary
    for verb in VERBS:
        assert sum(summary["by_verb"][verb].values()) >= 10, (verb, summary["by_verb"])
    outcomes = summary["outcomes"]
    assert outcomes.get("ok", 0) >= 50 and outcomes.get("error 2", 0) >= 100
    assert outcomes.get("error 1", 0) >= 20 and outcomes.get("usage", 0) >= 20


def test_no_invocation_lies(summary):
    failures = [f for f in summary["findings"] if f["outcome"] == "failure"]
    report = "\n".join(f"{f['argv']}: {f['problems']}; {f['stderr_tail']}; "
                       f"{f['traceback_tail']}" for f in failures[:20])
    assert not failures, f"{len(failures)} invocations failed:\n{report}"


def test_data_is_left_as_it_was(summary):
    assert summary["data_changed"] == []


def test_known_findings_elsewhere_are_listed(summary):
    """Findings in code being fixed elsewhere count apart; report them while they last."""
    known = [f for f in summary["findings"] if f["outcome"] == "known"]
    if known:
        print(f"\n{len(known)} known findings elsewhere ({len(KNOWN_ELSEWHERE)} patterns)",
              file=sys.stderr)


def test_the_generator_is_seeded(tmp_path):
    def first(seed, where):
        ws = Workspace(tmp_path / where, __import__("random").Random(seed))
        return [generate(ws, Budget())[1] for _ in range(40)]

    one, again = first(5, "a"), first(5, "b")
    assert [[a.replace("/b/", "/a/") for a in argv] for argv in again] == one


def test_the_judge_catches_what_lies(tmp_path):
    from fuzzing import Result

    def judged(code, err, argv=("properties",)):
        return judge(Result("properties", list(argv), code, "", err, 0.0))

    assert judged(0, "").outcome == "ok"
    assert judged(2, "kernelcast: error: bad\n").outcome == "error 2"
    assert judged(2, "usage: kernelcast\nkernelcast: error: argument\n").outcome == "usage"
    assert judged(1, "Traceback (most recent call last):\nkernelcast: error: x\n"
                  ).outcome == "failure"
    assert judged(1, "kernelcast: error: a\nkernelcast: error: b\n").outcome == "failure"
    assert judged(1, "kernelcast: error: a\nmore\n").outcome == "failure"
    assert judged(3, "kernelcast: error: a\n").outcome == "failure"
    assert judged(1, "kernelcast: internal error: KeyError: 'x'\n").outcome == "failure"
    assert judged(0, "kernelcast: error: x\n").outcome == "failure"
    assert run("devices", ["--version"]).code == 0
