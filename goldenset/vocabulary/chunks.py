"""Cutting long things into pieces. Plain Python: no Django import.

- `chunks`: a sequence in consecutive slices of at most `size` items, for every loop that bounds a database
  round trip or a model call: ids per `IN (...)` query, rows per insert, texts per embedding request. Each
  caller names its size (CHUNK, the common one, or its own where its reason differs).
- `cut_at_word`: a text longer than a limit cut at the last space before it, with a mark saying so (the
  prompts' page and passage texts, the starter set's expected answer).

A document's text is split into pages in one place, goldenset.text.split_pages.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

__all__ = ["CHUNK", "chunks", "cut_at_word"]

CHUNK = 500  # ids per IN (...) query: well under SQLite's parameter limit


def chunks(items: Sequence, size: int = CHUNK) -> Iterator[Sequence]:
    """items[0:size], items[size:2 * size], ...: slices (a list gives lists), the last one shorter; none for
    an empty sequence."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def cut_at_word(text: str, max_chars: int, mark: str) -> str:
    """text when it has at most max_chars characters; else its first max_chars characters up to the last space
    among them (at the limit when there is none), followed by mark (" ..." or "…")."""
    if len(text) <= max_chars:
        return text
    return text[:max_chars].rsplit(" ", 1)[0] + mark
