"""Relevance grades, as raters give them and as the golden set stores them. Plain Python: no Django import.

A judgment grades one document for one question on its collection's scale (goldenset.vocabulary.grade_scales:
binary, 0-2, 0-3, 0-4; the scale is kept in the judgment's detail, absent meaning the legacy 0-3 that TREC's
deep-learning tracks and the UMBRELA prompt use), or says the rater cannot judge it. Grade 0 is a judgment: a document judged not relevant
is no longer unjudged, and the measures for incomplete judgments (bpref, condensed lists) read it so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from goldenset.vocabulary.grade_scales import SCALES, Scale, converted, scale_named

__all__ = [
    "CANNOT_JUDGE",
    "GRADES",
    "GRADE_MEANING",
    "NOTE_MAX_LENGTH",
    "RATER_MAX_LENGTH",
    "SPLIT",
    "LEGACY_SCALE",
    "SETTLES",
    "SETTLER_PREFIX",
    "settler",
    "grade_on",
    "is_settlement",
    "judgment_scale",
    "split_at",
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

# The legacy scale: a judgment whose detail names no scale was given on it, and machine assessors (the chat
# model's UMBRELA prompt, the lexical assessor, clicks) grade on it whatever the collection's scale.
LEGACY_SCALE = "0-3"
GRADE_MEANING = dict(SCALES[LEGACY_SCALE].meaning)
GRADES: tuple[int, ...] = tuple(GRADE_MEANING)
HIGHEST_GRADE = max(scale.top for scale in SCALES.values())  # what any collection's scale may hold (0-4's 4)
CANNOT_JUDGE = None  # the rater could not tell (a page that does not load, a language they do not read)
RATER_MAX_LENGTH = 100
NOTE_MAX_LENGTH = 2000
SPLIT = 2  # raters this many grades apart or more disagree about the document: the item is flagged for review
# A judgment's detail key marking a curator's grade settling the raters' split, which apply takes. It is stored
# under the curator's name so prefixed: a curator who also rated the item keeps their rating beside it.
SETTLES, SETTLER_PREFIX = "settles", "settled-by:"


def settler(rater: str) -> str:
    return SETTLER_PREFIX + rater


def split_at(scale: Scale) -> int:
    """How many grades apart raters split on `scale`: SPLIT, or 1 on binary (0 against 1 is all there is)."""
    return min(SPLIT, scale.top)


def judgment_scale(detail: object) -> Scale:
    """The scale a judgment was given on: its detail's "scale", the legacy 0-3 when absent (or unknown)."""
    name = detail.get("scale") if isinstance(detail, Mapping) else None
    try:
        return scale_named(name) if name else SCALES[LEGACY_SCALE]
    except ValueError:
        return SCALES[LEGACY_SCALE]


def grade_on(grade: int | None, detail: object, target: Scale) -> int | None:
    """A judgment's grade on `target` (grade_scales.converted from the scale it was given on); None stays None,
    and a grade off its own scale is clamped into it first (a hand-edited row must not stop an apply)."""
    if grade is None:
        return None
    source = judgment_scale(detail)
    return converted(max(0, min(int(grade), source.top)), source, target)


def is_settlement(detail: object) -> bool:
    return isinstance(detail, Mapping) and detail.get(SETTLES) is True


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


def combine(grades: Sequence[int | None], split: int = SPLIT) -> Combined:
    """Several raters' grades of one document as one: the median of the grades given (the lower of the two
    middle ones for an even count, so two raters at 1 and 3 give 1: a grade is never more than half the
    raters gave); "cannot judge" is left out. Raters SPLIT or more grades apart flag the item for review."""
    given = sorted(g for g in grades if g is not None)
    if not given:
        return Combined(None, 0, False)
    return Combined(given[(len(given) - 1) // 2], len(given), given[-1] - given[0] >= split)
