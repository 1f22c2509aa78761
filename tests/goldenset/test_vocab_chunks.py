"""goldenset.vocabulary.chunks: fixed-size chunks of a sequence and a text cut at a word. Pure: no database."""

from __future__ import annotations

from goldenset.vocabulary.chunks import CHUNK, chunks, cut_at_word


def test_chunks_are_consecutive_slices_the_last_one_shorter() -> None:
    assert list(chunks([1, 2, 3, 4, 5], 2)) == [[1, 2], [3, 4], [5]]
    assert list(chunks((1, 2, 3, 4), 2)) == [(1, 2), (3, 4)]
    assert list(chunks("abcde", 3)) == ["abc", "de"]


def test_an_empty_sequence_has_no_chunks() -> None:
    assert list(chunks([], 3)) == []


def test_by_default_a_chunk_holds_the_ids_of_one_in_query() -> None:
    ids = [str(i) for i in range(CHUNK * 2 + 1)]
    assert [len(chunk) for chunk in chunks(ids)] == [500, 500, 1]


def test_a_text_within_the_limit_is_kept_as_it_is() -> None:
    assert cut_at_word("Refunds take 30 days.", 21, " ...") == "Refunds take 30 days."


def test_a_longer_text_is_cut_at_the_last_space_before_the_limit_and_marked() -> None:
    assert cut_at_word("Refunds take 30 days.", 20, " ...") == "Refunds take 30 ..."
    assert cut_at_word("Refunds take 30 days.", 13, "…") == "Refunds take…"  # the space at the limit
    assert cut_at_word("Refunds take 30 days.", 12, "…") == "Refunds…"


def test_with_no_space_before_the_limit_the_cut_is_at_the_limit() -> None:
    assert cut_at_word("https://example.com/a/long/path", 10, "…") == "https://ex…"
