"""Relevance grades, as raters give them and as the golden set stores them. Plain Python: no Django import.

A judgment grades one document for one question on four levels (the scale TREC's deep-learning tracks and the
UMBRELA prompt use), or says the rater cannot judge it. Grade 0 is a judgment: a document judged not relevant
is no longer unjudged, and the measures for incomplete judgments (bpref, condensed lists) read it so.
"""

from __future__ import annotations

__all__ = ["CANNOT_JUDGE", "GRADES", "GRADE_MEANING", "RATER_MAX_LENGTH", "NOTE_MAX_LENGTH", "rater_error"]

GRADE_MEANING = {
    0: "not relevant: nothing to do with the question",
    1: "related: on the topic, but does not answer the question",
    2: "relevant: answers part of the question, or answers it unclearly",
    3: "perfectly relevant: dedicated to the question, holds the exact answer",
}
GRADES: tuple[int, ...] = tuple(GRADE_MEANING)
CANNOT_JUDGE = None  # the rater could not tell (a page that does not load, a language they do not read)
RATER_MAX_LENGTH = 100
NOTE_MAX_LENGTH = 2000


def rater_error(rater: str) -> str | None:
    """Why `rater` cannot name a rater, or None. A rater is "user:<name>" for a person signed in, or any name a
    client gives ("alice", "llm-relevance:qwen2.5:7b"): printable, without spaces at its ends, up to 100
    characters."""
    if not rater or rater != rater.strip():
        return "a rater is a non-empty name without spaces at its ends"
    if len(rater) > RATER_MAX_LENGTH:
        return f"a rater's name has at most {RATER_MAX_LENGTH} characters"
    if not rater.isprintable():
        return "a rater's name holds no control characters"
    return None
