"""The pure core of studies (evaluation.studies): the space checked before anything runs, the seeded stratified
split, the trials over an objective (samplers, pruning, budgets, failures, a stop), the confirmation, importance
(withheld from too few trials) and the fields of a space without effect in all or some trials."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalsite.errors import EvalsiteError
from evaluation.studies import importance
from evaluation.studies.confirm import confirm
from evaluation.studies.importance import distribution, importances
from evaluation.studies.inert import inert_fields
from evaluation.studies.search import Budget, run_study
from evaluation.studies.space import MAX_GRID, Dimension, applied, grid, parse_space
from evaluation.studies.split import split_questions


def test_a_space_of_choices_and_ranges_is_read_in_order():
    space = parse_space(
        {
            "fusion": ["Rrf", "Weighted"],
            "fulltext_weight": {"low": 0.1, "high": 0.9, "step": 0.2},
            "bm25_k1": {"low": 0.5, "high": 3, "log": True},
            "top_k": [10, 20],
            "params.boost": {"low": 1, "high": 4},
        }
    )
    assert [d.name for d in space] == ["fusion", "fulltext_weight", "bm25_k1", "top_k", "params.boost"]
    assert space[0] == Dimension("fusion", choices=("Rrf", "Weighted"))
    assert space[1].points() == [0.1, 0.3, 0.5, 0.7, 0.9]
    assert space[2].log and space[2].step is None
    assert space[4].integer  # a target parameter's range of whole numbers stays whole


@pytest.mark.parametrize(
    ("space", "message"),
    [
        ({"colour": ["red"]}, "space.colour: not a field a study varies"),
        ({"fusion": ["Rrf", "Sum"]}, "space.fusion: 'Sum' is not one of 'Rrf', 'Weighted'."),
        ({"fusion": {"low": 0, "high": 1}}, "space.fusion: takes a list of choices"),
        (
            {"fulltext_weight": {"low": 0.9, "high": 0.1}},
            "space.fulltext_weight: low (0.9) must be below high (0.1).",
        ),
        ({"fulltext_weight": {"low": 0, "high": 2}}, "space.fulltext_weight: high 2 is outside 0 to 1."),
        (
            {"bm25_k1": {"low": 0.5, "high": 2, "step": 0.5, "log": True}},
            "space.bm25_k1: a range on a log scale has no step.",
        ),
        (
            {"bm25_b": {"low": 0, "high": 1, "log": True}},
            "space.bm25_b: a range on a log scale needs low above 0.",
        ),
        ({"top_k": [10, 10.5]}, "space.top_k: a choice 10.5 is not a whole number."),
        ({"top_k": [10, 10.0]}, "space.top_k: 10.0 is listed twice."),
        ({"rerank": [True, 1]}, "space.rerank: 1 is not one of False, True."),
        ({"top_k": []}, "space.top_k: expected 1 to 100 choices (it has 0)."),
        ({"top_k": {"low": 1, "high": 9, "by": 2}}, "space.top_k: unknown key 'by' of a range"),
        ({"params.boost": [[1]]}, "space.params.boost: [1] is not a plain value"),
        ({"params.9lives": [1]}, "space.params.9lives: not a field a study varies"),
        ({}, "space: expected an object mapping configuration fields"),
        ({f"params.p{i}": [1] for i in range(13)}, "space: at most 12 fields (it has 13)."),
    ],
)
def test_a_bad_space_is_refused_naming_its_field(space, message):
    with pytest.raises(EvalsiteError) as caught:
        parse_space(space)
    assert caught.value.code == "validation-error" and caught.value.message.startswith(message)


def test_a_grid_is_every_combination_and_bounded():
    space = parse_space({"fusion": ["Rrf", "Weighted"], "top_k": {"low": 5, "high": 15, "step": 5}})
    assert grid(space) == [
        {"fusion": "Rrf", "top_k": 5}, {"fusion": "Rrf", "top_k": 10}, {"fusion": "Rrf", "top_k": 15},
        {"fusion": "Weighted", "top_k": 5}, {"fusion": "Weighted", "top_k": 10}, {"fusion": "Weighted", "top_k": 15},
    ]  # fmt: skip
    with pytest.raises(EvalsiteError, match="a grid needs a step"):
        grid(parse_space({"bm25_b": {"low": 0.1, "high": 0.9}}))
    big = parse_space({f"params.p{i}": list(range(10)) for i in range(5)})
    with pytest.raises(EvalsiteError, match=f"a grid of 100,000 points; at most {MAX_GRID:,}"):
        grid(big)


def test_a_trials_values_are_applied_to_the_base_configuration():
    base = {"label": "es", "target": "prod", "params": {"index": "docs"}}
    assert applied(base, {"top_k": 20, "params.boost": 2.5}) == {
        "label": "es", "target": "prod", "top_k": 20, "params": {"index": "docs", "boost": 2.5}
    }  # fmt: skip
    assert base["params"] == {"index": "docs"}  # the base is left as it was


QUESTIONS = [(f"q{i}", ["rare"] if i % 10 == 0 else ["common"] if i % 3 else []) for i in range(100)]


def test_the_split_is_seeded_stratified_and_independent_of_order():
    split = split_questions(QUESTIONS, share=0.5, seed=7)
    assert len(split.confirmation) == 50 and len(split.tuning) == 50
    assert set(split.tuning) | set(split.confirmation) == {k for k, _ in QUESTIONS}
    tags = dict(QUESTIONS)
    for tag in ("rare", "common"):
        on = [[k for k in part if tag in tags[k]] for part in (split.tuning, split.confirmation)]
        assert abs(len(on[0]) - len(on[1])) <= 1, tag  # each tag on both sides, half and half
    assert split_questions(list(reversed(QUESTIONS)), share=0.5, seed=7).confirmation == tuple(
        sorted(split.confirmation, key=lambda k: -int(k[1:]))
    )  # the same questions, in the order given
    assert split_questions(QUESTIONS, share=0.5, seed=8) != split
    assert len(split_questions(QUESTIONS, share=0.3, seed=7).confirmation) == 30


@pytest.mark.parametrize(
    ("questions", "share", "message"),
    [
        (QUESTIONS, 1.0, "share must be between 0 and 1"),
        (
            [("a", []), ("b", []), ("c", [])],
            0.5,
            "3 questions split 50% / 50% leave a part with fewer than 2",
        ),
        ([("a", []), ("a", [])], 0.5, "a question key repeats"),
    ],
)
def test_a_split_that_cannot_be_made_says_why(questions, share, message):
    with pytest.raises(ValueError, match=message):
        split_questions(questions, share=share, seed=1)


# A known objective: each question's score peaks at fulltext_weight 0.7 with fusion Weighted; noise per question.
NOISE = np.random.default_rng(0).normal(0, 0.05, size=200)


def score(values, questions):
    peak = 1 - abs(values["fulltext_weight"] - 0.7) - (0.2 if values["fusion"] == "Rrf" else 0.0)
    return peak + NOISE[questions]


SPACE = parse_space(
    {"fusion": ["Rrf", "Weighted"], "fulltext_weight": {"low": 0.0, "high": 1.0, "step": 0.1}}
)


def test_a_grid_study_tries_every_point_and_finds_the_peak():
    result = run_study(SPACE, score, 200, budget=Budget(trials=500), seed=3, sampler="grid")
    assert len(result.trials) == 22 and result.evaluations == 22 * 200
    assert result.best.values == {"fusion": "Weighted", "fulltext_weight": 0.7}
    assert result.best.questions == 200 and not result.best.pruned


def test_tpe_with_pruning_finds_the_peak_for_fewer_question_scorings():
    result = run_study(SPACE, score, 200, budget=Budget(trials=40), seed=3, prune=True)
    assert len(result.trials) == 40
    assert (
        result.best.values["fusion"] == "Weighted" and abs(result.best.values["fulltext_weight"] - 0.7) <= 0.1
    )
    pruned = [t for t in result.trials if t.pruned]
    assert pruned and all(t.questions < 200 for t in pruned)
    # values proposed again are not scored again: the study pays for fewer scorings than its trials read
    assert result.evaluations < sum(t.questions for t in result.trials) < 40 * 200
    again = run_study(SPACE, score, 200, budget=Budget(trials=40), seed=3, prune=True)
    assert [t.values for t in again.trials] == [t.values for t in result.trials]  # seeded


def test_values_proposed_again_cost_no_new_scoring():
    calls = []

    def counted(values, questions):
        calls.append(len(questions))
        return score(values, questions)

    space = parse_space({"fusion": ["Rrf", "Weighted"], "fulltext_weight": [0.7]})
    result = run_study(space, counted, 200, budget=Budget(trials=12), seed=5, sampler="random")
    assert len(result.trials) == 12 and len({t.values["fusion"] for t in result.trials}) == 2
    assert result.evaluations == sum(calls) == 2 * 200
    assert (
        len({t.value for t in result.trials if t.values["fusion"] == "Rrf"}) == 1
    )  # the same scores, reused


def test_a_trial_slower_than_the_latency_constraint_cannot_win():
    """Weighted scores best but its searches take 300 ms at the 95th percentile: with max_p95_ms 200 the best
    is the best of the fast ones, and the slow trials say why."""

    def timed(values, questions):
        slow = values["fusion"] == "Weighted"
        return score(values, questions), np.full(len(questions), 300.0 if slow else 20.0)

    result = run_study(SPACE, timed, 200, budget=Budget(trials=500), seed=3, sampler="grid", max_p95_ms=200)
    assert result.best.values["fusion"] == "Rrf" and result.best.p95_ms == 20.0
    slow = [t for t in result.trials if t.values["fusion"] == "Weighted"]
    assert slow and all(t.infeasible and t.p95_ms == 300.0 for t in slow)
    assert not any(t.infeasible for t in result.trials if t.values["fusion"] == "Rrf")
    free = run_study(SPACE, timed, 200, budget=Budget(trials=500), seed=3, sampler="grid")
    assert free.best.values == {"fusion": "Weighted", "fulltext_weight": 0.7}


def test_a_failing_trial_is_recorded_and_a_stop_ends_the_study():
    def flaky(values, questions):
        if values["fusion"] == "Rrf":
            raise RuntimeError("the target timed out")
        return score(values, questions)

    seen = []
    result = run_study(SPACE, flaky, 200, budget=Budget(trials=30), seed=1, sampler="random",
                       on_trial=seen.append, stop=lambda: len(seen) >= 12)  # fmt: skip
    assert len(result.trials) == 12 == len(seen)
    failed = [t for t in result.trials if t.error]
    assert failed and all(t.value is None and t.error == "RuntimeError: the target timed out" for t in failed)
    assert result.best.values["fusion"] == "Weighted"


def test_the_confirmation_calls_a_winner_better_only_when_it_holds():
    rng = np.random.default_rng(5)
    baseline = rng.uniform(0, 1, 150)
    same = confirm(baseline.copy(), baseline, configurations_tried=100)
    assert (same.difference, same.p_value, same.significant) == (0.0, 1.0, False)
    assert same.verdict("ndcg@10").startswith("Not shown better: the winner's ndcg@10 is")
    better = confirm(np.clip(baseline + 0.1, 0, 1), baseline, configurations_tried=100)
    assert better.significant and better.p_value < 0.001 and better.winner_ci[0] > better.baseline
    assert "Better:" in better.verdict("ndcg@10") and "100 configurations tried" in better.verdict("ndcg@10")
    worse = confirm(np.clip(baseline - 0.1, 0, 1), baseline, configurations_tried=3)
    assert worse.p_value < 0.001 and not worse.significant  # behind is never "better", however clear


def test_a_hostile_space_is_refused_with_bounded_messages():
    """Names and values a tenant sends may be any size: errors name them cut short, and text choices are bounded."""
    huge = "x" * 100_000
    for space, field in (
        ({huge: [1]}, "space." + "x" * 57 + "..."),
        ({"params.p": [huge]}, "space.params.p"),
        ({"fusion": [huge]}, "space.fusion"),
        ({"model": [huge]}, "space.model"),
    ):
        with pytest.raises(EvalsiteError) as refused:
            parse_space(space)
        assert refused.value.details["field"] == field and len(refused.value.message) < 400, (
            refused.value.message
        )


def test_importance_gives_the_field_that_matters_the_larger_share():
    """PED-ANOVA over stored trials rebuilt as an Optuna study: the value follows fulltext_weight (and fusion a
    little), never top_k; the same trials give the same shares."""
    space = parse_space(
        {
            "fulltext_weight": {"low": 0.0, "high": 1.0, "step": 0.1},
            "top_k": [10, 20, 50],
            "fusion": ["Rrf", "Weighted"],
            "bm25_k1": {"low": 0.5, "high": 3.0, "log": True},
        }
    )
    result = run_study(space, score, 200, budget=Budget(trials=60), seed=2, sampler="random")
    trials = [t.as_dict() for t in result.trials]
    found = importances(space, trials, seed=0)
    assert found.shares is not None and found.trials == 60
    assert found.reason == "From 60 trials scored on every tuning question (the best 6 of them against all)."
    assert set(found.shares) == {"fulltext_weight", "top_k", "fusion", "bm25_k1"}
    assert list(found.shares)[0] == "fulltext_weight"
    assert found.shares["fulltext_weight"] > 0.5 > found.shares["top_k"]
    assert found.shares["top_k"] < 0.1  # it never changes the value
    assert sum(found.shares.values()) == pytest.approx(1.0)
    assert importances(space, trials, seed=0) == found  # seeded


def test_importance_counts_only_complete_trials_and_says_when_it_cannot_tell():
    space = parse_space({"fulltext_weight": [0.3, 0.7], "fusion": ["Rrf", "Weighted"]})
    trial = {"values": {"fulltext_weight": 0.3, "fusion": "Rrf"}, "value": 0.5, "pruned": False, "error": ""}
    pruned = {**trial, "pruned": True}
    failed = {**trial, "value": None, "error": "RuntimeError: boom"}
    few = importances(space, [trial, trial, pruned, pruned, failed])
    assert few.shares is None and few.trials == 2 and "withheld below 41 trials" in few.reason
    assert "(2 so far)" in few.reason
    alone = importances(parse_space({"top_k": [10, 20]}), [trial] * 5)
    assert alone.shares is None and "One field is varied" in alone.reason
    flat = importances(
        space, [trial, {**trial, "values": {"fulltext_weight": 0.7, "fusion": "Weighted"}}] * 21
    )
    assert flat.shares is None and "scored the same" in flat.reason
    assert distribution(space[1]).choices == (0, 1)  # a choice by its index, as search._suggest asks it


def test_importance_over_many_trials_is_computed_on_a_seeded_sample(monkeypatch):
    monkeypatch.setattr(importance, "MAX_TRIALS", 45)
    result = run_study(SPACE, score, 200, budget=Budget(trials=60), seed=4, sampler="random")
    trials = [t.as_dict() for t in result.trials]
    found = importances(SPACE, trials, seed=1)
    assert found.trials == 45 and found.complete == 60 and found.shares is not None
    assert importances(SPACE, trials, seed=1) == found


def _k1_matters(count: int) -> list[dict]:
    """Random trials of bm25_k1 (the value a parabola of it, with noise) and bm25_b (no effect at all)."""
    rng = np.random.default_rng(0)
    trials = []
    for number in range(count):
        k1, b = rng.uniform(0, 3), rng.uniform(0, 1)
        value = 0.5 - 0.05 * (k1 - 1.2) ** 2 + rng.normal(0, 0.01)
        trials.append({"number": number, "values": {"bm25_k1": k1, "bm25_b": b}, "value": value})
    return trials


def test_importance_from_too_few_trials_is_withheld_and_says_how_many_it_rests_on():
    """From these 12 trials PED-ANOVA names bm25_b, which does nothing, at 84% (its best tenth is 2 trials):
    below MIN_TRIALS it is withheld, and said why; from 100 trials it names bm25_k1."""
    space = parse_space({"bm25_k1": {"low": 0.0, "high": 3.0}, "bm25_b": {"low": 0.0, "high": 1.0}})
    assert importance.MIN_TRIALS == 41 and math.ceil(importance.TARGET_QUANTILE * 41) == importance.MIN_TOP
    assert (
        math.ceil(importance.TARGET_QUANTILE * 40) < importance.MIN_TOP
    )  # 41 is the fewest with five on top
    few = importances(space, _k1_matters(12))
    assert few.shares is None and few.trials == 12
    assert few.as_dict() == {
        "shares": None, "trials": 12, "complete": 12, "minimum_trials": 41,
        "note": "Importance is withheld below 41 trials scored on every tuning question (12 so far): it compares "
        "the best tenth of them with all, and with fewer than 5 in that tenth which field it names is largely chance.",
    }  # fmt: skip
    many = importances(space, _k1_matters(100))
    assert many.shares is not None and list(many.shares)[0] == "bm25_k1" and many.as_dict()["trials"] == 100


def _inert(base, space, depth=10):
    return [(i.field, i.always) for i in inert_fields(base, parse_space(space), depth)]


@pytest.mark.parametrize(
    ("base", "space", "found"),
    [
        # without effect in every trial
        ({"search_type": "FullText"}, {"fulltext_weight": [0.3, 0.7]}, [("space.fulltext_weight", True)]),
        (
            {"search_type": "Hybrid", "fusion": "Rrf"},
            {"fulltext_weight": [0.3]},
            [("space.fulltext_weight", True)],
        ),
        ({"search_type": "Hybrid", "fusion": "Weighted"}, {"rrf_k": [20, 60]}, [("space.rrf_k", True)]),
        (
            {"search_type": "Vector"},
            {"bm25_k1": [1.0], "bm25_b": [0.5]},
            [("space.bm25_k1", True), ("space.bm25_b", True)],
        ),
        (
            {"search_type": "Vector", "rerank": False},
            {"bm25_variant": ["okapi"]},
            [("space.bm25_variant", True)],
        ),
        ({"search_type": "FullText"}, {"fusion": ["Rrf", "Weighted"]}, [("space.fusion", True)]),
        ({}, {"top_k": [10, 20, 50]}, [("space.top_k", True)]),
        ({}, {"top_k": {"low": 10, "high": 100}}, [("space.top_k", True)]),
        # in some trials only: allowed, said
        (
            {"search_type": "Hybrid"},
            {"fusion": ["Rrf", "Weighted"], "fulltext_weight": [0.3, 0.7], "rrf_k": [20]},
            [("space.fulltext_weight", False), ("space.rrf_k", False)],
        ),
        ({}, {"search_type": ["FullText", "Vector"], "bm25_b": [0.3, 0.9]}, [("space.bm25_b", False)]),
        (
            {},
            {"search_type": ["FullText", "Hybrid"], "fusion": ["Rrf", "Weighted"]},
            [("space.fusion", False)],
        ),
        # with effect in every trial
        ({"search_type": "Hybrid", "fusion": "Weighted"}, {"fulltext_weight": [0.3, 0.7]}, []),
        ({"search_type": "Hybrid"}, {"rrf_k": [20, 60], "bm25_k1": [1.0, 2.0], "top_k": [5, 10]}, []),
        ({"search_type": "Vector", "rerank": "proximity"}, {"bm25_variant": ["lucene", "okapi"]}, []),
        ({"search_type": "Vector"}, {"rerank": [False, True], "search_type": ["Vector", "Hybrid"]}, []),
    ],
)
def test_a_field_without_effect_in_all_or_some_trials_is_found(base, space, found):
    assert _inert(base, space) == found


def test_a_field_without_effect_says_why_and_top_k_follows_the_depth():
    [always] = inert_fields(
        {"search_type": "Hybrid", "fusion": "Rrf"}, parse_space({"fulltext_weight": [0.3]}), 10
    )
    assert always.message == (
        "has no effect in any trial: it matters only when search_type is Hybrid and fusion is Weighted, and the "
        "trials have search_type Hybrid (the base's); fusion Rrf (the base's). Set that in the base, or vary it too"
    )
    assert _inert({}, {"top_k": [10, 20, 50]}, depth=100) == []  # recall@100 reads below 50
    assert _inert({}, {"top_k": [10, 20, 50]}, depth=None) == []  # an answer's passages: always matters
    assert always.as_dict()["field"] == "space.fulltext_weight"
