"""goldenset.vocabulary.stopwords: the two stopword lists and who uses which. Pure: no database."""

from __future__ import annotations

from goldenset import lexical, sample
from goldenset.vocabulary.stopwords import CONTENT_STOPWORDS, SAMPLE_STOPWORDS


def test_content_terms_and_the_starter_set_read_their_list_from_the_vocabulary() -> None:
    assert lexical.STOPWORDS is CONTENT_STOPWORDS
    assert sample.STOPWORDS is SAMPLE_STOPWORDS


def test_both_lists_are_case_folded_single_words() -> None:
    for words in (CONTENT_STOPWORDS, SAMPLE_STOPWORDS):
        assert all(word == word.casefold() and word.split() == [word] for word in words)


def test_the_starter_set_also_skips_direction_quantity_and_number_words_content_terms_keep() -> None:
    """The lists differ on purpose: these words change what a question asks, so content terms keep them,
    but they make poor distinctive words for a starter question."""
    assert sorted(SAMPLE_STOPWORDS - CONTENT_STOPWORDS) == [
        "above", "after", "before", "below", "down", "few", "more", "most", "off",
        "one", "out", "over", "three", "two", "under", "up", "use", "used",
    ]  # fmt: skip
    assert len(SAMPLE_STOPWORDS) == 125
    assert len(CONTENT_STOPWORDS) == 213


def test_content_terms_drop_contraction_fragments_and_fillers_the_starter_list_keeps() -> None:
    for word in ("don", "ll", "etc", "basically", "approximately", "without", "cannot"):
        assert word in CONTENT_STOPWORDS
        assert word not in SAMPLE_STOPWORDS
