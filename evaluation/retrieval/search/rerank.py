"""Rerankers: re-score a query's first-stage candidate pages with a stronger, slower scorer.

``proximity`` (always available, offline): the first-stage score plus a term-proximity bonus in the manner
of Rasolofo & Savoy (2003): every pair of distinct query terms occurring within five words of each other
adds 1/distance², saturated like BM25's term frequency and weighted by the pair's idf, so pages where the
query's words stand together rise above pages that merely contain them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from evaluation.retrieval.search.engine import Reranker
from evaluation.retrieval.search.postings import Postings
from goldenset.text import tokenize

WINDOW = 5
K1 = 1.2


class ProximityReranker(Reranker):
    name = "proximity"

    def __init__(self, postings: Postings | None = None):
        """Pairs are weighted by their terms' Lucene idf in these postings (1.0 without them)."""
        self.postings = postings

    def score(self, query: str, texts: Sequence[str], first_stage: np.ndarray) -> np.ndarray:
        terms = list(dict.fromkeys(tokenize(query)))
        if len(terms) < 2:
            return np.asarray(first_stage, dtype=np.float64).copy()
        idf = self._idf(terms)
        bonuses = np.array([self._bonus(terms, tokenize(text), idf) for text in texts], dtype=np.float64)
        return np.asarray(first_stage, dtype=np.float64) + bonuses

    def _idf(self, terms: list[str]) -> dict[str, float]:
        return lucene_idf(self.postings, terms) if self.postings is not None else {}

    @staticmethod
    def _bonus(terms: list[str], tokens: list[str], idf: dict[str, float]) -> float:
        wanted = set(terms)
        positions = [(i, t) for i, t in enumerate(tokens) if t in wanted]
        pair_weight: dict[tuple[str, str], float] = {}
        for a in range(len(positions)):
            i, ti = positions[a]
            for b in range(a + 1, len(positions)):
                j, tj = positions[b]
                distance = j - i
                if distance > WINDOW:
                    break
                if ti != tj:
                    pair = (ti, tj) if ti < tj else (tj, ti)
                    pair_weight[pair] = pair_weight.get(pair, 0.0) + 1.0 / distance**2
        bonus = 0.0
        for (ti, tj), accumulated in pair_weight.items():
            weight = min(1.0, idf.get(ti, 1.0)) * min(1.0, idf.get(tj, 1.0))
            bonus += weight * accumulated * (K1 + 1) / (accumulated + K1)
        return bonus


def lucene_idf(postings: Postings, terms: Sequence[str]) -> dict[str, float]:
    """Lucene-style idf of these terms in the postings (terms not in them are left out): only theirs, never a
    table of the whole vocabulary."""
    n_docs = postings.size
    return {
        term: math.log(1 + (n_docs - freq + 0.5) / (freq + 0.5))
        for term, freq in postings.document_frequencies(terms).items()
    }
