"""Relevance grades, as raters give them and as the golden set stores them. Plain Python: no Django import.

A judgment grades one document for one question on four levels (the scale TREC's deep-learning tracks and the
UMBRELA prompt use), or says the rater cannot judge it. Grade 0 is a judgment: a document judged not relevant
is no longer unjudged, and the measures for incomplete judgments (bpref, condensed lists) read it so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "CANNOT_JUDGE",
    "GRADES",
    "GRADE_MEANING",
    "NOTE_MAX_LENGTH",
    "RATER_MAX_LENGTH",
    "SPLIT",
    "Combined",
    "combine",
    "CLICKS_PREFIX",
    "LEXICAL_PREFIX",
    "LLM_PREFIX",
    "MACHINE_PREFIXES",
    "PERSON_PREFIX",
    "IMPORTED_PREFIX",
    "is_machine",
    "is_imported",
    "live_rater",
    "imported_rater",
    "rater_error",
]

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
SPLIT = 2  # raters this many grades apart or more disagree about the document: the item is flagged for review


# The names machine assessors judge under: a chat model (evaluation.judgments.assessors), the keyless lexical
# assessor (evaluation.judgments.lexical), a click model over search logs (evaluation.judgments.clicks). A person cannot take one; their grades are never combined with people's.
LLM_PREFIX, LEXICAL_PREFIX, CLICKS_PREFIX = "llm-relevance:", "lexical-relevance:", "clicks:"
MACHINE_PREFIXES: tuple[str, ...] = (LLM_PREFIX, LEXICAL_PREFIX, CLICKS_PREFIX)


def is_machine(rater: str) -> bool:
    return rater.startswith(MACHINE_PREFIXES)


# People. A live rater is the person signed in (the dashboard's user, an API key's person): "user:<username>".
# A rater named in an imported file (qrels, a CSV of another team's judgments) is "imported:<name>": kept and
# compared with people in agreement, never counted among a pool's live raters. Names compare without case
# ("Alice" and "alice" are one rater), so both are stored casefolded.
PERSON_PREFIX, IMPORTED_PREFIX = "user:", "imported:"


def live_rater(username: str) -> str:
    return PERSON_PREFIX + username.casefold()


def imported_rater(name: str) -> str:
    name = name.strip().casefold()
    return name if name.startswith(IMPORTED_PREFIX) else IMPORTED_PREFIX + name


def is_imported(rater: str) -> bool:
    return rater.startswith(IMPORTED_PREFIX)


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


@dataclass(frozen=True)
class Combined:
    grade: int | None  # None: nobody could judge it
    raters: int  # the raters who graded it ("cannot judge" is no grade)
    split: bool  # two of them SPLIT or more grades apart: flagged for review


def combine(grades: Sequence[int | None]) -> Combined:
    """Several raters' grades of one document as one: the median of the grades given (the lower of the two
    middle ones for an even count, so two raters at 1 and 3 give 1: a grade is never more than half the
    raters gave); "cannot judge" is left out. Raters SPLIT or more grades apart flag the item for review."""
    given = sorted(g for g in grades if g is not None)
    if not given:
        return Combined(None, 0, False)
    return Combined(given[(len(given) - 1) // 2], len(given), given[-1] - given[0] >= SPLIT)
