"""The question's words marked in a document's text, for a rater reading it. Plain Python: no Django import."""

from __future__ import annotations

import re

from goldenset.text import tokenize
from goldenset.vocabulary.stopwords import CONTENT_STOPWORDS

__all__ = ["marked_spans", "snippet"]

SNIPPET_CHARS = 320  # a result's text shown beside its title

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


def snippet(text: str, question: str, width: int = SNIPPET_CHARS) -> str:
    """At most `width` characters of the text around the first of the question's words in it (the start when
    none is), cut at spaces, with an ellipsis where text was left out: what a results list shows of a page."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    at = 0
    for run, hit in marked_spans(text, question):
        if hit:
            break
        at += len(run)
    else:
        at = 0
    start = max(0, at - width // 4)
    if start:
        space = text.find(" ", start)
        start = space + 1 if 0 <= space < at else start
    end = min(len(text), start + width)
    if end < len(text):
        space = text.rfind(" ", start, end)
        end = space if space > start else end
    return ("… " if start else "") + text[start:end] + (" …" if end < len(text) else "")
