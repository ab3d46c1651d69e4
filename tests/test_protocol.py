"""The §4.2 timing protocol with a stability check: pure logic, driven by scripted times."""

import pytest

from kernelcast.measure import protocol
from kernelcast.measure.protocol import time_with_protocol


class Script:
    """A stand-in for launching a kernel *count* times: returns the next scripted list of
    times and remembers what it was asked for."""

    def __init__(self, *attempts):
        self.attempts = [list(a) for a in attempts]
        self.counts = []

    def __call__(self, count):
        self.counts.append(count)
        times = self.attempts[len(self.counts) - 1]
        assert len(times) == count
        return times


def test_defaults_are_the_papers():
    assert (protocol.RUNS, protocol.DROP) == (30, 4)
    assert protocol.TOLERANCE == 0.10 and protocol.RETRIES == 2


def test_drops_the_first_runs_and_keeps_min_median_and_every_time():
    times = [9.0, 7.0, 5.0, 3.0, 2.0, 2.1, 2.05, 2.2, 2.02, 2.3]
    run = Script(times)
    timing = time_with_protocol(run, runs=10, drop=4)
    assert run.counts == [10]
    assert timing.status == "ok"
    assert timing.times == tuple(times)  # the dropped ones too, first
    assert timing.drop == 4
    assert timing.kept == (2.0, 2.1, 2.05, 2.2, 2.02, 2.3)
    assert timing.min == 2.0  # not 3.0 or below: the slow early runs are dropped
    assert timing.median == pytest.approx((2.05 + 2.1) / 2)
    assert timing.attempts == 1
    # kept, sorted: 2.0 2.02 2.05 2.1 2.2 2.3; median 2.075, min 2.0: spread 2.075/2 - 1
    assert timing.spreads == (pytest.approx(0.0375),)


def test_a_fast_dropped_run_does_not_become_the_minimum():
    timing = time_with_protocol(Script([0.1, 1.0, 1.0, 1.0, 1.0, 1.0]), runs=6, drop=2)
    assert timing.min == 1.0 and timing.median == 1.0
    assert timing.times[0] == 0.1


def test_unstable_first_attempt_is_retried_and_a_stable_one_kept():
    noisy = [5.0, 5.0, 1.0, 1.0, 2.0, 2.0, 2.0]  # median 2.0 = min + 100 %
    steady = [5.0, 5.0, 1.5, 1.52, 1.51, 1.55, 1.5]
    run = Script(noisy, steady)
    timing = time_with_protocol(run, runs=7, drop=2, tolerance=0.1, retries=2)
    assert run.counts == [7, 7]  # stops as soon as an attempt is stable
    assert timing.status == "ok"
    assert timing.attempts == 2
    assert timing.times == tuple(steady)
    assert timing.min == 1.5 and timing.median == 1.51
    assert timing.spreads == (pytest.approx(1.0), pytest.approx(1.51 / 1.5 - 1))


def test_never_stable_is_flagged_after_bounded_retries_with_the_steadiest_attempt():
    attempts = ([1.0, 2.0, 2.0],   # spread 1.0
                [1.0, 1.3, 1.3],   # spread 0.3: the steadiest
                [1.0, 1.5, 1.5],   # spread 0.5
                [1.0, 1.0, 1.0])   # never asked for: retries are bounded
    run = Script(*([9.0] + list(a) for a in attempts))
    timing = time_with_protocol(run, runs=4, drop=1, tolerance=0.1, retries=2)
    assert run.counts == [4, 4, 4]
    assert timing.status == "unstable"
    assert timing.attempts == 3
    assert timing.times == (9.0, 1.0, 1.3, 1.3)
    assert timing.min == 1.0 and timing.median == 1.3
    assert timing.spreads == pytest.approx((1.0, 0.3, 0.5))


def test_no_retries_means_one_attempt():
    run = Script([1.0, 1.0, 3.0, 3.0], [1.0, 1.0, 1.0, 1.0])
    timing = time_with_protocol(run, runs=4, drop=1, tolerance=0.1, retries=0)
    assert run.counts == [4]
    assert timing.status == "unstable" and timing.attempts == 1


def test_tolerance_is_inclusive_and_adjustable():
    times = [0.0, 2.0, 3.0, 3.0]  # spread exactly 0.5
    assert time_with_protocol(Script(times), runs=4, drop=1, tolerance=0.5).status == "ok"
    run = Script(times, times, times)
    assert time_with_protocol(run, runs=4, drop=1, tolerance=0.49).status == "unstable"
    assert len(run.counts) == 3


def test_a_zero_time_is_never_stable():
    timing = time_with_protocol(Script([1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0]),
                                runs=3, drop=1)
    assert timing.status == "unstable"
    assert timing.spreads == (float("inf"),) * 3


def test_times_are_converted_to_floats():
    import numpy as np

    timing = time_with_protocol(lambda count: list(np.full(count, 2, np.int64)), runs=5,
                                drop=1)
    assert all(type(t) is float for t in timing.times)
    assert timing.min == 2.0


@pytest.mark.parametrize(("runs", "drop"), [(4, 4), (3, 4), (0, 0)])
def test_runs_must_exceed_the_dropped_runs(runs, drop):
    with pytest.raises(ValueError, match="must exceed the dropped runs"):
        time_with_protocol(Script(), runs=runs, drop=drop)
