"""evaluation.answers.judge_votes, pure: the judge's sampling settings and how they are read, the majority and the median,
the quorum, the tally with its confidence, and a run's confidence summary."""

from __future__ import annotations

import math

import pytest

from evalsite.errors import EvalsiteError
from evaluation.answers.judge_votes import (
    DEFAULT_SAMPLING_TEMPERATURE,
    JudgeSampling,
    has_quorum,
    judge_run_config,
    majority,
    mean_confidence,
    median_rating,
    parse_judge_sampling,
    summarize_sampling,
    tally,
)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([True], True),
        ([False], False),
        ([True, True, False], True),
        ([False, True, False], False),
        ([True, False], False),  # a tie is the negative verdict
        ([True, True, False, False], False),
        ([True, True, True, False], True),
    ],
)
def test_majority(values, expected):
    assert majority(values) is expected


@pytest.mark.parametrize(
    ("values", "expected"), [([4], 4), ([5, 2, 4], 4), ([1, 5, 5], 5), ([3, 4], 3), ([2, 5, 1, 4], 2)]
)
def test_median_rating_takes_the_lower_middle_of_an_even_count(values, expected):
    assert median_rating(values) == expected


@pytest.mark.parametrize(
    ("readable", "asked", "expected"),
    [(1, 1, True), (0, 1, False), (2, 3, True), (1, 3, False), (3, 5, True), (2, 5, False), (5, 9, True)],
)
def test_quorum_is_more_than_half(readable, asked, expected):
    assert has_quorum(readable, asked) is expected


def test_tally_votes_per_item_and_keeps_the_first_agreeing_reason():
    samples = [
        {1: (True, "a1"), 2: (True, "a2"), 3: (False, "a3")},
        {1: (True, "b1"), 2: (False, "b2"), 3: (False, "b3")},
        {1: (True, "c1"), 2: (False, "c2"), 3: (True, "c3")},
    ]
    votes = tally(samples, majority)
    assert [(v.verdict, v.reason, v.values) for v in votes.values()] == [
        (True, "a1", (True, True, True)),
        (False, "b2", (True, False, False)),
        (False, "a3", (False, False, True)),
    ]
    assert [v.agreement for v in votes.values()] == [1.0, pytest.approx(2 / 3), pytest.approx(2 / 3)]
    assert mean_confidence(votes.values()) == pytest.approx(7 / 9)
    rating = tally([{0: (5, "x")}, {0: (2, "y")}, {0: (4, "z")}], median_rating)[0]
    assert (rating.verdict, rating.reason, rating.agreement) == (4, "z", pytest.approx(1 / 3))
    with pytest.raises(ValueError):
        tally([], majority)


def test_one_judgement_is_asked_at_temperature_0_with_the_judges_seed():
    one = JudgeSampling()
    assert (one.samples, one.call_temperature) == (1, 0.0)
    assert one.seeds(None) == [None] and one.seeds(7) == [7]
    three = JudgeSampling(3)
    assert three.call_temperature == DEFAULT_SAMPLING_TEMPERATURE == 0.7
    assert three.seeds(None) == [0, 1, 2] and three.seeds(7) == [7, 8, 9]
    assert JudgeSampling(5, 0.2).call_temperature == 0.2
    for bad in ({"samples": 2}, {"samples": 0}, {"samples": 11}, {"samples": 3, "temperature": -0.1}):
        with pytest.raises(ValueError):
            JudgeSampling(**bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("samples", "temperature", "expected"),
    [
        (None, None, JudgeSampling(1)),
        ("", "", JudgeSampling(1)),
        (1, None, JudgeSampling(1)),
        ("3", None, JudgeSampling(3, 0.7)),
        (5.0, "0.25", JudgeSampling(5, 0.25)),
        (9, 0, JudgeSampling(9, 0.0)),
        (3, 2, JudgeSampling(3, 2.0)),
    ],
)
def test_parse_judge_sampling(samples, temperature, expected):
    assert parse_judge_sampling(samples, temperature) == expected


@pytest.mark.parametrize(
    ("samples", "temperature", "field"),
    [
        (2, None, "judge_samples"),
        (0, None, "judge_samples"),
        (11, None, "judge_samples"),
        (-3, None, "judge_samples"),
        (3.5, None, "judge_samples"),
        ("three", None, "judge_samples"),
        (True, None, "judge_samples"),
        (3, -0.5, "judge_temperature"),
        (3, 2.5, "judge_temperature"),
        (3, "hot", "judge_temperature"),
        (3, math.nan, "judge_temperature"),
        (3, True, "judge_temperature"),
        (None, 0.7, "judge_temperature"),  # one judgement is made at 0: a temperature would be ignored
        (1, 0.7, "judge_temperature"),
    ],
)
def test_bad_sampling_is_a_validation_error_naming_the_field(samples, temperature, field):
    with pytest.raises(EvalsiteError) as raised:
        parse_judge_sampling(samples, temperature)
    assert raised.value.code == "validation-error" and raised.value.status_code == 400
    assert raised.value.details == {"field": field} and raised.value.message.startswith(f"{field}: ")


def test_a_run_records_its_judge_and_warns_when_samples_were_asked_of_the_heuristic():
    assert judge_run_config("m", JudgeSampling()) == (
        {"judge_model": "m", "judge_samples": 1, "judge_temperature": 0.0},
        [],
    )
    assert judge_run_config("m", JudgeSampling(3, 0.5))[0] == {
        "judge_model": "m",
        "judge_samples": 3,
        "judge_temperature": 0.5,
    }
    config, warnings = judge_run_config(None, JudgeSampling(3))
    assert config == {"judge_model": "heuristic", "judge_samples": 1, "judge_temperature": None}
    assert warnings == [
        "judge_samples 3 not used: the heuristic judge is deterministic (no chat endpoint, or judge_model "
        "heuristic), so it judged once"
    ]
    assert judge_run_config(None, JudgeSampling())[1] == []


def test_a_runs_confidence_is_the_mean_over_sampled_judgements_and_lost_samples_are_said():
    sampled = {"asked": 3, "readable": 3, "unreadable": 0, "failed": 0}
    per_question = [
        {
            "faithfulness": {"confidence": 1.0, "samples": sampled},
            "answer_relevancy": {"confidence": 1 / 3, "samples": sampled},
        },
        {
            "faithfulness": {"confidence": 0.5, "samples": {**sampled, "readable": 2, "unreadable": 1}},
            "answer_relevancy": {"rating": 4},  # judged once: no confidence
        },
        {"faithfulness": {"error": "x", "samples": {**sampled, "readable": 1, "unreadable": 2}}},  # excluded
    ]
    summary = summarize_sampling(per_question)
    assert summary.confidence == {"faithfulness": 0.75, "answer_relevancy": 0.3333}
    assert summary.warnings == [
        "faithfulness: 1 unreadable and 0 failed of 6 judge samples; those questions were judged on the "
        "readable majority"
    ]
    assert summarize_sampling([{"faithfulness": {"statements": []}}]).confidence == {}
