"""goldenset.vocabulary.sentences: where each splitter ends a sentence, as it behaves today. Pure: no database."""

from __future__ import annotations

import pytest

from evaluation.answers import writer as answer_writer
from goldenset.vocabulary.sentences import (
    FIRST_SENTENCE_END,
    PAGE_SENTENCE_END,
    TEMPLATE_SENTENCE_END,
    split_sentences,
)

# ---------------------------------------------------------------- split_sentences (answers, passages, judge)


def test_answers_and_the_judge_use_the_one_splitter() -> None:
    assert answer_writer.split_sentences is split_sentences


def test_abbreviations_do_not_end_a_sentence() -> None:
    text = "See Fig. 3 for details. It costs approx. 30 dollars. Ask Dr. Smith, e.g. by mail. Pears too."
    assert split_sentences(text) == [
        "See Fig. 3 for details.",
        "It costs approx. 30 dollars.",
        "Ask Dr. Smith, e.g. by mail.",
        "Pears too.",
    ]


def test_an_unlisted_abbreviation_ends_a_sentence_only_before_a_capital_or_digit() -> None:
    assert split_sentences("U.S. law applies. Really.") == ["U.S. law applies.", "Really."]
    assert split_sentences("Call the U.S. Embassy.") == ["Call the U.S.", "Embassy."]


def test_decimal_numbers_stay_whole_and_a_digit_may_start_a_sentence() -> None:
    assert split_sentences("The fee is 3.5 percent. 2024 was a good year.") == [
        "The fee is 3.5 percent.",
        "2024 was a good year.",
    ]


def test_a_lower_case_word_after_a_stop_continues_the_sentence() -> None:
    assert split_sentences("Version 2.0 is out. the next one is not.") == [
        "Version 2.0 is out. the next one is not."
    ]


def test_a_closing_quote_stays_with_its_sentence_and_an_opening_one_starts_the_next() -> None:
    assert split_sentences('He said "Stop." Then he left. "Why?" she asked.') == [
        'He said "Stop."',
        "Then he left.",
        '"Why?" she asked.',
    ]


def test_citation_markers_before_the_stop_stay_in_the_sentence() -> None:
    assert split_sentences("Refunds take 30 days [1]. Shipping is free [2, 3].") == [
        "Refunds take 30 days [1].",
        "Shipping is free [2, 3].",
    ]


def test_paragraphs_and_list_items_are_sentences_and_bullets_are_dropped() -> None:
    text = (
        "Steps:\n1. First step here\n2) Second step\n\n- a bullet\n* another\nline\n\nIt rained.\nIt poured."
    )
    assert split_sentences(text) == [
        "Steps:",
        "First step here",
        "Second step",
        "a bullet",
        "another line",  # a line break inside a paragraph (not before a list item) is a space
        "It rained.",
        "It poured.",
    ]


def test_cjk_stops_end_a_sentence_without_whitespace() -> None:
    assert split_sentences("第一句。第二句！第三句") == ["第一句。", "第二句！", "第三句"]


def test_blank_text_has_no_sentences() -> None:
    assert split_sentences("") == []
    assert split_sentences(" \n\n \r\n") == []


# ---------------------------------------------------------------- the simpler variants


@pytest.mark.parametrize(
    ("text", "page", "first", "template"),
    [
        # Each ends at . ! ? and whitespace; none knows abbreviations.
        ("See Fig. 3 here.", ["See Fig.", "3 here."], ["See Fig.", "3 here."], ["See Fig.", "3 here."]),
        # The page splitter cuts before any word; the other two want a capital or a digit.
        ("It is out. the end.", ["It is out.", "the end."], ["It is out. the end."], ["It is out. the end."]),
        # After a quote: the first-sentence rule cuts whatever follows it, the template rule wants a capital.
        ('Out. "no," he said.', ["Out.", '"no," he said.'], ["Out.", '"no," he said.'], ['Out. "no," he said.']),
        # A bracket opens a sentence for the template rule only.
        ("Out. [A] note.", ["Out.", "[A] note."], ["Out. [A] note."], ["Out.", "[A] note."]),
        # A closing quote after the stop never ends a sentence here (split_sentences does end it).
        ('He said "Stop." Then left.', ['He said "Stop." Then left.'], ['He said "Stop." Then left.'], ['He said "Stop." Then left.']),
        # No CJK stops.
        ("第一句。第二句", ["第一句。第二句"], ["第一句。第二句"], ["第一句。第二句"]),
    ],
)  # fmt: skip
def test_the_page_first_sentence_and_template_rules_differ_where_documented(
    text: str, page: list[str], first: list[str], template: list[str]
) -> None:
    assert PAGE_SENTENCE_END.split(text) == page
    assert FIRST_SENTENCE_END.split(text) == first
    assert TEMPLATE_SENTENCE_END.split(text) == template
