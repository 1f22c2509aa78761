"""Unit tests for goldenset.text: pure Python, no database."""

from __future__ import annotations

import random
import re
import string

import pytest

from evalsite.bounded_json import find_nul
from goldenset.text import first_sentence, normalize_question, split_pages, tokenize

# ---------------------------------------------------------------- split_pages


def test_short_text_is_one_page_with_its_paragraphs_kept():
    text = "First paragraph.\n\nSecond paragraph."
    assert split_pages(text, 2000) == ["First paragraph.\n\nSecond paragraph."]


def test_paragraphs_are_packed_greedily_and_never_split_when_they_fit():
    paragraphs = ["A" * 40, "B" * 40, "C" * 40, "D" * 10]
    text = "\n\n".join(paragraphs)
    # 40 + 2 + 40 = 82 fits in 90, a third paragraph would not; the last two pack together (40 + 2 + 10).
    assert split_pages(text, 90) == [f"{'A' * 40}\n\n{'B' * 40}", f"{'C' * 40}\n\n{'D' * 10}"]


def test_paragraph_breaks_may_hold_spaces_tabs_and_crlf():
    text = "One.\r\n \t\r\nTwo.\n\n\n\nThree."
    assert split_pages(text, 6) == ["One.", "Two.", "Three."]


def test_an_over_long_paragraph_is_split_at_sentence_ends():
    sentences = ["The cat sat on the mat.", "It was warm there!", "Was it happy?", "Yes."]
    text = " ".join(sentences) + "\n\nA second paragraph."
    pages = split_pages(text, 45)
    assert pages == [
        "The cat sat on the mat. It was warm there!",
        "Was it happy? Yes.\n\nA second paragraph.",
    ]
    assert all(len(p) <= 45 for p in pages)


def test_an_over_long_sentence_is_split_at_spaces_without_cutting_words():
    sentence = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
    pages = split_pages(sentence, 20)
    assert pages == ["alpha beta gamma", "delta epsilon zeta", "eta theta iota kappa"]
    assert " ".join(pages).split() == sentence.split()


def test_a_word_longer_than_a_page_is_cut():
    word = "x" * 25
    assert split_pages(f"see {word} end", 10) == ["see", "x" * 10, "x" * 10, "xxxxx end"]


@pytest.mark.parametrize("text", ["", "   ", "\n\n\n", " \t\r\n \n"])
def test_a_blank_text_gives_no_pages(text):
    assert split_pages(text, 100) == []


def test_no_page_exceeds_the_limit_and_no_word_is_lost_on_random_texts():
    rnd = random.Random(20240601)
    vocabulary = ["a", "bb", "ccc.", "dddd!", "eeeee?", "ffffff,", "ggggggggg", "\n", "\n\n", " \n \n"]
    for _ in range(2000):
        text = " ".join(rnd.choice(vocabulary) for _ in range(rnd.randint(0, 80)))
        limit = rnd.randint(9, 60)
        pages = split_pages(text, limit)
        assert all(0 < len(page) <= limit and page == page.strip() for page in pages), (text, limit)
        assert " ".join(pages).split() == text.split(), (text, limit)


# ---------------------------------------------------------------- normalize_question


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("  How   LONG\tis\n it?  ", "how long is it?"),
        ("Non\u00a0breaking\u2003spaces", "non breaking spaces"),
        ("STRASSE or Straße", "strasse or strasse"),
        ("ＡＢＣ １２３", "abc 123"),
        ("cafe\u0301", "café"),
        ("", ""),
    ],
)
def test_normalize_question(question, expected):
    assert normalize_question(question) == expected


def test_normalized_questions_compare_equal_across_case_space_and_unicode_forms():
    assert normalize_question("What is a CAFÉ?") == normalize_question("  what is a  cafe\u0301? ")


# ---------------------------------------------------------------- tokenize


def test_tokenize_folds_case_and_drops_punctuation_and_underscores():
    assert tokenize("Hello, WORLD! it's snake_case v2.0") == [
        "hello",
        "world",
        "it",
        "s",
        "snake",
        "case",
        "v2",
        "0",
    ]


def test_tokenize_keeps_unicode_words_and_case_folds_them():
    assert tokenize("Straße ÉTÉ Œuvre 東京 Москва ﬁle") == [
        "strasse",
        "été",
        "œuvre",
        "東京",
        "москва",
        "file",
    ]


def test_tokenize_gives_the_same_tokens_for_composed_and_decomposed_text():
    """A page stored in NFD (macOS, some PDFs) must match a query typed in NFC, or search cannot find it."""
    assert tokenize("nai\u0308ve cafe\u0301") == tokenize("naïve café") == ["naïve", "café"]
    assert tokenize("Ｒｅｆｕｎｄ ２０２４") == ["refund", "2024"]


def test_tokenize_equals_the_reference_regex_on_ascii_text():
    rnd = random.Random(7)
    alphabet = string.printable
    for _ in range(3000):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 60)))
        assert tokenize(text) == re.findall(r"[a-z0-9]+", text.lower()), text


def test_tokenize_of_blank_text_is_empty():
    assert tokenize("") == [] and tokenize(" \t\n.,;!") == []


# ---------------------------------------------------------------- first_sentence


def test_first_sentence_stops_at_the_first_sentence_end():
    text = "Customers get a full refund within 30 days.\n\nRefunds go to the original card."
    assert first_sentence(text) == "Customers get a full refund within 30 days."


def test_first_sentence_of_a_long_sentence_is_cut_at_a_space():
    text = "word " * 100
    sentence = first_sentence(text, max_chars=23)
    assert sentence == "word word word word…"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain text", None),
        ('{"a": "x\\u0000"}', (1, 9)),
        ('{\n  "a": "\\u0000"\n}', (2, 9)),
        ('{"a": "\\\\u0000"}', None),  # an escaped backslash, then the letters u0000: no NUL
        ('{"a": "\\\\\\u0000"}', (1, 10)),
        ("line one\nab\x00c", (2, 3)),
    ],
)
def test_find_nul_reports_the_first_nul_literal_or_escaped(text, expected):
    assert find_nul(text) == expected


def test_find_nul_without_json_escapes_sees_only_literal_nul():
    assert find_nul("a \\u0000 b", json_escapes=False) is None
    assert find_nul("a\n\x00", json_escapes=False) == (2, 1)
