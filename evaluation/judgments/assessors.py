"""A chat model as a relevance assessor: the prompt it is given (fixed and versioned), how its answer is read,
and how several samples of it become one grade. Plain Python: no Django import.

The prompt follows the UMBRELA recipe (Upadhyay et al., 2024: the 0-3 scale of TREC's deep-learning tracks,
asked for as "##final score: N" after a short weighing of intent and trust), written anew for evalsite. Its
version and the sha256 of its template are recorded with every judgment it makes, so a judgment is always
traceable to the exact words that produced it. An answer without a readable final score is unreadable; a
grade is never guessed from it.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from evaluation.judgments.grades import GRADE_MEANING, GRADES, LLM_PREFIX

__all__ = [
    "MACHINE_PREFIX",
    "PASSAGE_LIMIT",
    "PROMPT_SHA",
    "PROMPT_VERSION",
    "Verdict",
    "assessor_name",
    "majority",
    "messages",
    "read_grade",
]

PROMPT_VERSION = "evalsite-relevance-1"
PASSAGE_LIMIT = 4000  # characters of a document the model is shown
_TEMPLATE = """A search engine was asked a question and returned the passage below. Grade how well the passage serves the
question, on this scale:
{scale}
Grade 1 when the passage is on the topic but does not answer; 2 when it answers part of the question, or answers it
amid much else; 3 only when it is about the question and holds the exact answer. Otherwise grade 0.

Question: {question}

Passage: {passage}

Think in steps: what does the asker most likely want; how well does the passage meet that; how far can it be
trusted. Then give the grade, an integer, on a line of its own in exactly this form, with no reasoning after it:
##final score: <grade>"""
PROMPT_SHA = hashlib.sha256(_TEMPLATE.encode()).hexdigest()
_FINAL = re.compile(r"##\s*final\s+score\s*:\s*([0-9]+)\b", re.IGNORECASE)


MACHINE_PREFIX = LLM_PREFIX


def assessor_name(model: str) -> str:
    """The rater a model's judgments are stored under."""
    return f"{MACHINE_PREFIX}{model}"


def messages(question: str, passage: str) -> list[dict[str, str]]:
    scale = "\n".join(f"{grade} = {meaning}" for grade, meaning in GRADE_MEANING.items())
    text = _TEMPLATE.format(scale=scale, question=question, passage=passage[:PASSAGE_LIMIT])
    return [{"role": "user", "content": text}]


def read_grade(answer: str) -> int | None:
    """The grade of the answer's last "##final score: N" line, or None when there is none or N is off the
    scale (the answer is unreadable: no grade is guessed)."""
    found = _FINAL.findall(answer or "")
    if not found:
        return None
    grade = int(found[-1])
    return grade if grade in GRADES else None


@dataclass(frozen=True)
class Verdict:
    grade: int | None  # None: no sample could be read
    samples: tuple[int | None, ...]  # each sample's grade, None for an unreadable one
    agreement: float  # the share of readable samples that gave the grade


def majority(samples: Sequence[int | None]) -> Verdict:
    """The grade most readable samples gave; a tie goes to the lower grade (a model unsure between two grades
    is never credited with the higher one). Unreadable samples are left out, never counted as 0."""
    readable = [g for g in samples if g is not None]
    if not readable:
        return Verdict(None, tuple(samples), 0.0)
    counts = Counter(readable)
    top = max(counts.values())
    grade = min(g for g, n in counts.items() if n == top)
    return Verdict(grade, tuple(samples), top / len(readable))
