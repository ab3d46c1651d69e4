"""`kernelcast tune` never lies and never runs away: a space too large to rank is refused
with the time it would take; the device's lock is held only while measuring; a bad space,
restriction, size, profile or factory is one line (exit 2) before any lock; sizes are
integers written in digits."""

import io
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tune_kernels import matmul_source

from kernelcast.cli import main

FACTORY = textwrap.dedent("""\
    import os
    import signal
    import warnings

    import loopy as lp
    import numpy as np
    """) + matmul_source() + textwrap.dedent("""

    def exits():
        os._exit(0)


    def crashes():
        os.kill(os.getpid(), signal.SIGKILL)


    def warns():
        warnings.warn("the factory's own word", UserWarning)
        return build()
    """)
SPACE = "[axes.j]\ngroup = [4, 8]\nper_item = [1, 2]\n[axes.i]\ngroup = [1, 2]\n"
BAD_SPACES = {
    "unroll.toml": SPACE + "[unroll]\nj = [1, 2]\n",
    "split.toml": SPACE + "[split]\ni = [1, 2]\n",
    "tile.toml": SPACE + "[tile]\nj = [1, 4]\n",
    "divides.toml": 'restrict = ["j.per_item // (j.group - 4) == 0"]\n' + SPACE,
    "in5.toml": 'restrict = ["j.group in 5"]\n' + SPACE,
    "tuple.toml": 'restrict = ["(j.group, 1)"]\n' + SPACE,
    "nested.toml": f'restrict = ["{"not " * 1000}j.group"]\n' + SPACE,
    "none.toml": 'restrict = ["j.group in ()"]\n' + SPACE,
    "big.toml": ("[axes.j]\ngroup = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n"
                 "per_item = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n"
                 "[axes.i]\ngroup = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n"
                 "per_item = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n"
                 "[unroll]\nk = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n"
                 "[split]\nk = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n"),
}
CRITERIA = str(Path(__file__).resolve().parent.parent / "data" / "profiles"
               / "nvidia-h100-80gb-hbm3-cuda-criteria.json")
LOCK_HOLDER = """\
import sys, time
from kernelcast.errors import DeviceBusyError
from kernelcast.measure.lock import DeviceLock
try:
    DeviceLock(sys.argv[1])
except DeviceBusyError:
    print("busy", flush=True)
    sys.exit(0)
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


@pytest.fixture
def files(tmp_path):
    (tmp_path / "k.py").write_text(FACTORY)
    (tmp_path / "space.toml").write_text(SPACE)
    for name, text in BAD_SPACES.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def _args(tmp_path, *extra, space="space.toml", factory="build", sizes=("n=24", "m=40")):
    return ["tune", str(tmp_path / f"k.py:{factory}"), "--param", *sizes,
            *(("--space", str(tmp_path / space)) if space else ()),
            "--model", "hong-kim", "--hardware", "h100", "--measure-top", "2", "--device",
            "portable", "--db", str(tmp_path / "tune.sqlite"), *extra]


def _one_line(capsys, status, code, *parts) -> str:
    err = capsys.readouterr().err
    assert status == code, err
    lines = [line for line in err.splitlines() if line.startswith("kernelcast: error:")]
    assert len(lines) == 1 and "Traceback" not in err and "internal error" not in err, err
    for part in parts:
        assert part in lines[0], lines[0]
    return lines[0]


def _try_lock(device) -> str:
    """"held" where another process can take *device*'s lock (then releases it), else
    "busy"."""
    done = subprocess.run([sys.executable, "-c", LOCK_HOLDER, device.lock_name, "0"],
                          capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def held(pocl_device):
    """The device's lock, held by another process for the test."""
    holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, pocl_device.lock_name,
                               "600"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        holder.kill()
        holder.wait()


# {{{ a space too large to rank

def test_a_space_too_large_to_rank_is_refused_with_its_count_and_time(files, capsys):
    line = _one_line(capsys, main(_args(files, space="big.toml")), 2,
                     "big.toml has 1,000,000 variants, more than --max-variants 3,000",
                     "ranking them would take about 29.9 h in one process",
                     "108 ms a variant", "data/ranking-speed.json",
                     "pass --max-variants 1000000")
    assert "Traceback" not in line
    assert not (files / "tune.sqlite").exists()


class _Stop(BaseException):
    """Ends a tune at its first variant's ranking (main lets it through)."""


def _stop_at_ranking(monkeypatch):
    import kernelcast.tune.tuner as tuner

    def stop(*args, **kwargs):
        raise _Stop

    monkeypatch.setattr(tuner, "_rank_variant", stop)


def test_max_variants_is_checked_and_counts_the_restricted_space(files, capsys,
                                                                 monkeypatch):
    _one_line(capsys, main(_args(files, "--max-variants", "1e3")), 2,
              "--max-variants 1e3: expected a positive integer")
    _one_line(capsys, main(_args(files, "--max-variants", "7")), 2,
              "space.toml has 8 variants, more than --max-variants 7")
    (files / "half.toml").write_text('restrict = ["j.per_item == 1"]\n' + SPACE)
    # 4 variants meet the restriction: allowed (the ranking is stopped at its start)
    _stop_at_ranking(monkeypatch)
    with pytest.raises(_Stop):
        main(_args(files, "--max-variants", "4", space="half.toml"))


def test_the_ranking_progress_says_how_long_is_left():
    from kernelcast.cli.tune import _RankProgress

    stream = io.StringIO()
    progress = _RankProgress(stream)
    progress.start -= 120  # two minutes for the first 40 of 100
    progress(40, 100)
    assert "ranking: 40 of 100 variants counted, 120s, about 3 min left" in stream.getvalue()

# }}}


# {{{ the device's lock: only while measuring

def test_the_lock_is_free_while_ranking_and_held_while_measuring(files, capsys, monkeypatch,
                                                                   pocl_device):
    import kernelcast.measure.campaign as campaign
    import kernelcast.tune.tuner as tuner

    seen = {}
    rank_variant, run_campaign = tuner._rank_variant, campaign.run_campaign

    def ranking(*args, **kwargs):
        seen.setdefault("ranking", _try_lock(pocl_device))
        return rank_variant(*args, **kwargs)

    def measuring(*args, **kwargs):
        seen["measuring"] = _try_lock(pocl_device)
        return run_campaign(*args, **kwargs)

    monkeypatch.setattr(tuner, "_rank_variant", ranking)
    monkeypatch.setattr(campaign, "run_campaign", measuring)
    assert main(_args(files)) == 0, capsys.readouterr().err
    assert seen == {"ranking": "held", "measuring": "busy"}
    assert _try_lock(pocl_device) == "held"  # released at the end


def test_a_device_busy_at_the_start_without_wait_is_refused_at_once(files, capsys, held):
    import time

    start = time.monotonic()
    _one_line(capsys, main(_args(files)), 1, "is being measured by process "
              f"{held.pid}", "pass --wait SECONDS")
    assert time.monotonic() - start < 30  # nothing ranked
    assert not (files / "tune.sqlite").exists()

# }}}


# {{{ usage errors: one line, exit 2, before any lock

@pytest.mark.parametrize(("change", "parts"), [
    ({"space": "unroll.toml"}, ["unroll.toml: [unroll] names j, an axis of the space",
                                "unroll, tile and split take the sequential loops"]),
    ({"space": "split.toml"}, ["split.toml: [split] names i, an axis of the space"]),
    ({"space": "tile.toml"}, ["tile.toml: [tile] names j, an axis of the space"]),
    ({"space": "divides.toml"}, ["restriction 'j.per_item // (j.group - 4) == 0' divides "
                                 "by zero at j.group=4, j.per_item=1, i.group=1, "
                                 "i.per_item=1", "guard the division"]),
    ({"space": "in5.toml"}, ["restriction 'j.group in 5': in takes a list of values"]),
    ({"space": "tuple.toml"}, ["restriction '(j.group, 1)': a list of values only follows "
                               "in or not in"]),
    ({"space": "nested.toml"}, ["restriction 'not not not", "nests more than 50 levels"]),
    ({"space": "none.toml"}, ["none.toml has no variant: its restrictions exclude every "
                              "one"]),
    ({"space": "big.toml"}, ["has 1,000,000 variants, more than --max-variants 3,000"]),
    ({"sizes": ("n=0", "m=40")}, ["kernel 'mm' does no work at n=0, m=40 (loops i, j, k "
                                  "run no iteration)"]),
    ({"sizes": ("n=1e3", "m=40")}, ["--param n: sizes must be integers in decimal digits",
                                    "got 1e3"]),
    ({"factory": "exits"}, ["k.py:exits: the kernel factory ended the process "
                            "(os._exit(0)) before returning a kernel"]),
    ({"factory": "crashes"}, ["k.py:crashes: the kernel factory ended the process "
                              "(killed by SIGKILL"]),
    ({"profile": CRITERIA}, ["holds the criteria model (workload: profile), which does not "
                             "predict Loopy kernels", "with paper, extended, facts, hong-kim, "
                             "hong-kim-facts, learned or learned-facts"]),
], ids=["unroll", "split", "tile", "divides", "in5", "tuple", "nested", "none", "big", "n0",
        "n1e3", "exits", "crashes", "criteria"])
def test_usage_errors_come_before_the_devices_lock(files, capsys, held, change, parts):
    profile = change.pop("profile", None)
    argv = _args(files, **change)
    if profile:
        at = argv.index("--model")
        argv[at:at + 4] = ["--profile", profile]
    _one_line(capsys, main(argv), 2, *parts)
    assert not (files / "tune.sqlite").exists()
    assert held.poll() is None


def test_a_kernel_factory_warning_is_still_one_line(files, capsys, monkeypatch):
    # the factory runs in a worker process; what it warns is given here, once
    _stop_at_ranking(monkeypatch)
    with pytest.raises(_Stop):
        main(_args(files, factory="warns"))
    err = capsys.readouterr().err
    assert err.count("kernelcast: warning: UserWarning: the factory's own word") == 1

# }}}


# {{{ restrictions: a small language whose every mistake is one line

@pytest.mark.parametrize(("text", "message"), [
    ("j.group // 0 == 1", "divides by zero at j.group=4"),
    ("j.group % 0 == 1", "divides by zero at j.group=4"),
    ("(j.group, 1)", "a list of values only follows in or not in"),
    ("1 < (1, 2)", "a list of values only follows in or not in"),
    ("j.group in (1, (2, 3))", "a list of values only follows in or not in"),
    ("j.group in 5", "in takes a list of values"),
    ("j.group in (4, 8) == 1", "in takes a list of values"),
    ("not " * 1000 + "j.group", "nests more than 50 levels deep"),
    ("-" * 100000 + "j.group", "nests more than 50 levels deep"),
    ("j.group * " * 10000 + "1", "nests more than 50 levels deep"),
    ("a.b.c", "a.b.c is not a parameter name"),
    ("j.group ** 2 > 3", "Pow is not allowed"),
], ids=["div0", "mod0", "tuple", "compare-tuple", "nested-tuple", "in5", "in-chain",
        "not1000", "minus100000", "times10000", "attribute", "pow"])
def test_every_bad_restriction_is_a_usage_error_naming_it(text, message):
    from kernelcast.errors import UsageError
    from kernelcast.tune.space import Axis, Space

    with pytest.raises(UsageError) as err:
        len(Space((Axis("j", (4, 8)),), restrict=(text,)))
    line = str(err.value)
    assert message in line and "\n" not in line
    assert line.startswith(f"restriction {repr(text[:59])[:-1]}")


@pytest.mark.parametrize(("name", "loop"), [("unroll", "j"), ("split", "i"), ("tile", "j")])
def test_a_space_that_unrolls_tiles_or_splits_an_axis_is_refused(files, name, loop):
    from kernelcast.errors import UsageError
    from kernelcast.tune.space import load_space

    with pytest.raises(UsageError, match=rf"{name}.toml: \[{name}\] names {loop}, an axis"):
        load_space(files / f"{name}.toml")


def test_good_restrictions_still_hold():
    from kernelcast.tune.space import Axis, Space

    def count(text):
        return len(Space((Axis("j", (2, 4, 8), (1, 2)),), restrict=(text,)))

    assert count("j.group in (4, 8)") == 4
    assert count("j.group not in [4]") == 4
    assert count("j.group != 4 and 8 // (j.group - 4) >= 2") == 2  # guarded: j.group=8
    assert count("not not (j.group * j.per_item <= 4)") == 3

# }}}


# {{{ sizes are integers written in digits

@pytest.mark.parametrize("value", ["1e3", "1000.0", "0x10", "\u0663", "nan", "inf", "1.5"])
def test_a_size_not_written_in_digits_is_refused(value):
    from kernelcast.frontends.arguments import sizes
    from kernelcast.errors import UsageError

    with pytest.raises(UsageError) as err:
        sizes([f"n={value}"])
    assert str(err.value) == (f"--param n: sizes must be integers in decimal digits "
                              f"(such as 1000 or 1_000), got {value}")


def test_sizes_in_digits_are_read_exactly():
    from kernelcast.frontends.arguments import sizes

    assert sizes(["n=1_000", "m= 7 ", "k=9007199254740993"]) == {
        "n": 1000, "m": 7, "k": 2**53 + 1}


def test_a_define_not_written_in_digits_is_refused(capsys):
    skeleton = str(Path(__file__).resolve().parents[1] / "examples" / "skeletons" / "matmul.sk")
    _one_line(capsys, main(["project", skeleton, "--hardware", "c1060", "--define",
                            "N=1e3"]), 2, "--define N: expected an integer, got '1e3'")

# }}}


def test_a_ranking_outside_the_models_training_data_warns_once():
    """The learned profile extrapolates for every variant of a scale at n=65,536: one
    line for the ranking says so, not one per variant."""
    import warnings

    import loopy as lp
    import numpy as np

    from kernelcast.errors import ExtrapolationWarning
    from kernelcast.profile import load_profile
    from kernelcast.tune.space import Axis, Space
    from kernelcast.tune.tuner import rank

    knl = lp.add_dtypes(lp.make_kernel("{[i]: 0<=i<n}", "out[i] = 2*a[i]",
                                       lang_version=(2018, 2), assumptions="n >= 1"),
                        {"a": np.float32})
    model = load_profile(Path(__file__).resolve().parent.parent / "data" / "profiles"
                         / "nvidia-h100-80gb-hbm3-cuda-learned.json")
    space = Space((Axis("i", (1, 32, 128)),))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ranked, _ = rank(knl, {"n": 65536}, space, model, max_group_size=1024)
    lines = [str(w.message) for w in caught if issubclass(w.category, ExtrapolationWarning)]
    assert len(ranked) == 3
    assert len(lines) == 1 and lines[0].startswith("3 of 3 variants are predicted outside")


def test_a_kernel_holding_a_class_of_its_file_is_made_again_here(tmp_path):
    """Such a kernel cannot travel back from the worker that showed its factory returns;
    it is made again in this process, not refused."""
    from kernelcast.measure.backends.isolated import load_kernel_isolated

    path = tmp_path / "tagged.py"
    path.write_text(textwrap.dedent("""\
        import loopy as lp
        import numpy as np
        from pytools.tag import Tag


        class Mine(Tag):
            pass


        def scale():
            knl = lp.make_kernel("{[i]: 0<=i<n}", "out[i] = 2*a[i]", lang_version=(2018, 2),
                                 assumptions="n >= 1")
            knl = lp.add_dtypes(knl, {"a": np.float32})
            return knl.with_kernel(knl.default_entrypoint.tagged(Mine()))
        """))
    knl, name = load_kernel_isolated(f"{path}:scale")
    assert name == "scale"
    assert [type(t).__name__ for t in knl.default_entrypoint.tags] == ["Mine"]
