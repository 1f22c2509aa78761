"""Where sentences end. Plain Python: no Django import.

One splitter for reading answers and passages (`split_sentences`), and the three simpler rules older callers
were built on. They differ, and each caller's output depends on its rule (page boundaries at ingest, the
starter set's expected answers, the template writer's questions), so they stay named variants here rather
than one rule that would change what those callers produce:

- `split_sentences` (grounded answers, citations, the heuristic judge): paragraph breaks and list items,
  then . ! ? followed by whitespace and a capital or a digit (an opening quote or parenthesis may come
  between); a closing quote or parenthesis after the stop stays with the sentence; common abbreviations
  ("Dr.", "e.g.", "No.") do not end one; after 。！？ no whitespace is needed.
- `PAGE_SENTENCE_END` (goldenset.text.split_pages, for a paragraph longer than a page): any . ! ? followed
  by whitespace. Where the page is cut matters less than that it is cut somewhere.
- `FIRST_SENTENCE_END` (goldenset.text.first_sentence: the starter set's expected answers): . ! ? then
  whitespace, then a capital, a digit, a quote or "(" (whatever follows the quote).
- `TEMPLATE_SENTENCE_END` (the old offline template writer, kept as it was in benchmarks/fluency_bench.py to
  measure against; the writer now splits with goldenset.clear_sentences, which also splits lower-case text):
  . ! ? then whitespace, then a capital or digit, optionally after one of " ' ( [.
"""

from __future__ import annotations

import re

__all__ = [
    "ABBREVIATIONS",
    "FIRST_SENTENCE_END",
    "PAGE_SENTENCE_END",
    "TEMPLATE_SENTENCE_END",
    "split_sentences",
]

PAGE_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
FIRST_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
TEMPLATE_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")

# A paragraph break, or a line break before a list item.
_BLOCK = re.compile(r"\n[ \t]*\n+|\n(?=[ \t]*(?:[-*•–]|\d{1,2}[.)])\s)")
_BULLET = re.compile(r"^(?:[-*•–]|\d{1,2}[.)])\s+")
# Abbreviations whose full stop does not end a sentence in `split_sentences` (case-sensitive, whole words).
ABBREVIATIONS = ("Mr", "Mrs", "Ms", "Dr", "Prof", "St", "No", "vs", "e.g", "i.e", "cf", "Fig", "approx")
_NOT_ABBREVIATION = "".join(rf"(?<!\b{re.escape(a)}\.)" for a in ABBREVIATIONS)
_SENTENCE_END = re.compile(
    rf"(?:(?<=[.!?])|(?<=[.!?][\"'”’)])){_NOT_ABBREVIATION}\s+(?=[\"'“‘(]?[A-Z0-9])|(?<=[。！？])\s*"
)


def split_sentences(text: str) -> list[str]:
    """Sentences of text: split at paragraph breaks and list items (bullets dropped), then at . ! ? followed by
    whitespace and a capital or digit (and after 。！？); line breaks inside a paragraph are spaces."""
    out: list[str] = []
    for block in _BLOCK.split(text.replace("\r\n", "\n")):
        block = " ".join(_BULLET.sub("", block.strip()).split())
        out.extend(s.strip() for s in _SENTENCE_END.split(block) if s and s.strip())
    return out
