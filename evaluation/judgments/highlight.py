"""The question's words marked in a document's text, for a rater reading it. Plain Python: no Django import."""

from __future__ import annotations

import re

from goldenset.text import tokenize
from goldenset.vocabulary.stopwords import CONTENT_STOPWORDS

__all__ = ["marked_spans"]

_WORDS = re.compile(r"\w+", re.UNICODE)


def marked_spans(text: str, question: str) -> list[tuple[str, bool]]:
    """The text cut into runs, each with whether it is one of the question's content words (compared as the
    search compares words: case-folded and normalised; stopwords are never marked). Joined, the runs are the
    text unchanged."""
    terms = {t for t in tokenize(question) if t not in CONTENT_STOPWORDS}
    spans: list[tuple[str, bool]] = []
    at = 0
    for match in _WORDS.finditer(text):
        words = tokenize(match.group())
        if words and all(word in terms for word in words):
            if match.start() > at:
                spans.append((text[at : match.start()], False))
            spans.append((match.group(), True))
            at = match.end()
    if at < len(text):
        spans.append((text[at:], False))
    return spans
