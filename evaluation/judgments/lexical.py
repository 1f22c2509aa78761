"""A keyless relevance assessor: how much of the question (and of its reference answer, when there is one) a
document holds, word for word, weighted by how rare each word is. Plain Python: no Django import.

It is a weak fallback for when no chat model is configured, labelled as such wherever its grades appear: it
cannot tell a page that answers from one that merely repeats the question's words, and it sees no paraphrase.
Its score is the idf-weighted share of the question's content terms (goldenset.lexical's: stop words out,
inflections stemmed together) the document holds; with a reference answer, the mean of that and the same share
of the answer's. Three cuts turn the score into a
grade 0-3. The cuts are chosen by benchmarks/lexical_assessor.py on the dev halves of Cranfield, Vaswani and
ClapNQ (collections with human judgments, none made by us) and reported on their test halves; they are never
tuned on the labels evalsite's authors wrote.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from evaluation.judgments.grades import LEXICAL_PREFIX
from goldenset.lexical import content_terms

__all__ = ["CUTS", "LEXICAL_RATER", "LEXICAL_VERSION", "Cuts", "grade_of", "idf_of", "lexical_score"]

LEXICAL_VERSION = "evalsite-lexical-1"
LEXICAL_RATER = f"{LEXICAL_PREFIX}{LEXICAL_VERSION}"


@dataclass(frozen=True)
class Cuts:
    """The lowest score of grades 1, 2 and 3."""

    related: float
    relevant: float
    perfect: float


# Chosen on the dev halves by benchmarks/lexical_assessor.py (its "chosen cuts" line); see docs/benchmarks.md.
CUTS = Cuts(related=0.58, relevant=0.66, perfect=0.7)


def _content(text: str) -> set[str]:
    return set(content_terms(text))  # goldenset.lexical's content terms: stemmed, stop words out


def idf_of(texts: Iterable[str]) -> dict[str, float]:
    """Each word's inverse document frequency over these texts (Lucene's BM25 idf, always positive)."""
    df: dict[str, int] = {}
    n = 0
    for text in texts:
        n += 1
        for term in _content(text):
            df[term] = df.get(term, 0) + 1
    return {term: math.log(1 + (n - d + 0.5) / (d + 0.5)) for term, d in df.items()}


def _share(words: set[str], held: set[str], idf: Mapping[str, float], unseen: float) -> float | None:
    if not words:
        return None
    total = sum(idf.get(w, unseen) for w in words)
    return sum(idf.get(w, unseen) for w in words if w in held) / total


def lexical_score(question: str, reference: str, text: str, idf: Mapping[str, float]) -> float:
    """0..1: the idf-weighted share of the question's content words in the text, averaged with that of the
    reference answer's when there is one. A word no text of the idf holds weighs as the rarest word does."""
    held = _content(text)
    unseen = max(idf.values(), default=1.0)
    shares = [
        share
        for share in (
            _share(_content(question), held, idf, unseen),
            _share(_content(reference), held, idf, unseen),
        )
        if share is not None
    ]
    return sum(shares) / len(shares) if shares else 0.0


def grade_of(score: float, cuts: Cuts = CUTS) -> int:
    if score >= cuts.perfect:
        return 3
    if score >= cuts.relevant:
        return 2
    if score >= cuts.related:
        return 1
    return 0
