"""goldenset.vocabulary.groundedness: one list of levels, and what each reader of it keys on it. Pure."""

from __future__ import annotations

import pytest

from evalsite.errors import EvalsiteError
from evaluation.answers import writer as answer_writer
from evaluation.answers.configs import parse_answer_config
from goldenset.vocabulary.groundedness import GROUNDEDNESS_LEVELS


def test_the_levels_loosest_first_as_the_api_spells_them() -> None:
    assert GROUNDEDNESS_LEVELS == ("Off", "Low", "Medium", "High")


def test_the_answer_writer_and_the_request_reader_share_the_levels() -> None:
    assert answer_writer.GROUNDEDNESS is GROUNDEDNESS_LEVELS
    read = [
        parse_answer_config({"groundedness": level.upper()}, 0, []).groundedness
        for level in GROUNDEDNESS_LEVELS
    ]
    assert read == list(GROUNDEDNESS_LEVELS)
    with pytest.raises(EvalsiteError) as refused:
        parse_answer_config({"groundedness": "Strict"}, 0, [])
    assert refused.value.details["allowed"] == list(GROUNDEDNESS_LEVELS)


def test_every_level_has_a_support_threshold_and_a_rule_and_stricter_levels_need_more_support() -> None:
    assert tuple(answer_writer.GROUNDEDNESS_MIN_SUPPORT) == GROUNDEDNESS_LEVELS
    assert tuple(answer_writer.GROUNDEDNESS_RULES) == GROUNDEDNESS_LEVELS
    thresholds = [answer_writer.GROUNDEDNESS_MIN_SUPPORT[level] for level in GROUNDEDNESS_LEVELS]
    assert thresholds == sorted(thresholds)
    assert thresholds[0] == 0.0  # Off never declines for want of support
