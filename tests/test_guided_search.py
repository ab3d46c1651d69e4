"""The guided search (kernelcast.tune.guided) on spaces an H100 measured exhaustively
(data/h100/tuning-cuda.sqlite, tuning-corpus-cuda.sqlite): it measures nothing twice,
keeps to its budget, repeats itself, resumes where it stopped, and its feedback finds
the fastest variants where the model's order alone does not."""

from pathlib import Path

import pytest

from kernelcast.measure.store import Store
from kernelcast.tune.guided import Candidate, Settings, replay, search

DATA = Path(__file__).resolve().parents[1] / "data" / "h100"


def _measured(store: str, family: str) -> dict:
    with Store(DATA / store) as s:
        return {r["case_name"].partition("/")[2]: r["min_s"] for r in s.rows()
                if r["case_name"].startswith(f"{family}/") and r["min_s"]}


@pytest.fixture(scope="module")
def pairwise():
    """The corpus's all-pairs sum: 54 variants, their H100 times and Hong–Kim's
    predictions for the H100."""
    from kernelcast.models import get_model
    from kernelcast.properties import cached_properties
    from kernelcast.tune.corpus import CORPUS
    from kernelcast.tune.space import apply, variant_key

    fam = CORPUS["pairwise"]
    times = _measured("tuning-corpus-cuda.sqlite", "pairwise")
    model = get_model("hong-kim", hardware="h100").fit()
    cands = []
    for variant in fam.space.variants():
        key = variant_key(variant)
        if key in times:
            props = cached_properties(apply(fam.build(), variant, fam.space))
            cands.append(Candidate(key, variant, model.seconds(props, fam.params)))
    assert len(cands) >= 50
    return cands, times


def _to_five(order, times):
    best = min(times.values())
    return next(i + 1 for i, k in enumerate(order) if times[k] <= 1.05 * best)


def test_replay_measures_nothing_twice_keeps_its_budget_and_repeats_itself(pairwise):
    cands, times = pairwise
    order = replay(cands, times, budget=15)
    assert len(order) == len(set(order)) == 15 and set(order) <= set(times)
    assert replay(cands, times, budget=15) == order
    assert replay(cands, times, budget=len(cands))[:15] == order  # the budget only ends it


def test_a_search_resumed_from_what_was_stored_goes_on_as_if_never_stopped(pairwise):
    cands, times = pairwise
    whole = replay(cands, times, budget=12, settings=Settings(2, None))
    stored = {k: times[k] for k in whole[:6]}
    asked = []

    def measure(batch):
        asked.extend(c.key for c in batch)
        return {c.key: times[c.key] for c in batch}

    done, why = search(cands, measure, settings=Settings(2, 12), measured=stored, stop=False)
    assert why == "budget" and list(done) == whole and asked == whole[6:]


def test_feedback_finds_the_fastest_where_the_models_order_is_backwards(pairwise):
    # the same real times, but a model that ranks them backwards: in its order the
    # fastest variant comes last; the correction learns the model is wrong and turns
    cands, times = pairwise
    backwards = [Candidate(c.key, c.variant, 1e-3 / times[c.key]) for c in cands]
    in_order = sorted(backwards, key=lambda c: c.predicted_s)
    assert _to_five([c.key for c in in_order], times) > len(cands) - 5
    assert _to_five(replay(backwards, times, budget=len(cands)), times) <= 15


def test_the_search_stops_once_nothing_left_is_predicted_faster(pairwise):
    # a model right up to a constant factor: once the fastest is measured, the search
    # stops well before the space is spent
    cands, times = pairwise
    exact = [Candidate(c.key, c.variant, 3 * times[c.key]) for c in cands]
    done, why = search(exact, lambda b: {c.key: times[c.key] for c in b},
                       settings=Settings(2, None), noise=0.02)
    assert why == "nothing predicted faster" and len(done) < len(cands) / 2
    assert min(v for v in done.values()) == min(times.values())


def test_variants_that_gave_no_time_count_and_are_not_measured_again():
    cands = [Candidate(f"v{i}", {"g": 2 ** i}, 1.0 + i) for i in range(6)]
    times = {"v0": None, "v1": None, "v2": 3e-6, "v3": 2e-6, "v4": 5e-6, "v5": 4e-6}
    order = replay(cands, times, budget=6)
    assert order[:2] == ["v0", "v1"] and sorted(order) == sorted(times)
    done, why = search(cands, lambda b: {c.key: times[c.key] for c in b},
                       settings=Settings(1, 3), stop=False)
    assert why == "budget" and len(done) == 3 and done["v0"] is None


def test_predictions_a_linear_model_puts_at_zero_are_taken_as_the_fastest():
    cands = [Candidate("a", {"g": 1}, -1e-6), Candidate("b", {"g": 2}, 2e-6),
             Candidate("c", {"g": 4}, 0.0)]
    order = replay(cands, {"a": 1e-6, "b": 2e-6, "c": 3e-6}, budget=3)
    assert sorted(order) == ["a", "b", "c"] and order[0] == "a"
