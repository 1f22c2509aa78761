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

from evaluation.search.engine import Reranker
from goldenset.text import tokenize

WINDOW = 5
K1 = 1.2


class ProximityReranker(Reranker):
    name = "proximity"

    def __init__(self, idf: dict[str, float] | None = None):
        self.idf = idf or {}

    def score(self, query: str, texts: Sequence[str], first_stage: np.ndarray) -> np.ndarray:
        terms = list(dict.fromkeys(tokenize(query)))
        if len(terms) < 2:
            return np.asarray(first_stage, dtype=np.float64).copy()
        bonuses = np.array([self._bonus(terms, tokenize(text)) for text in texts], dtype=np.float64)
        return np.asarray(first_stage, dtype=np.float64) + bonuses

    def _bonus(self, terms: list[str], tokens: list[str]) -> float:
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
            weight = min(1.0, self.idf.get(ti, 1.0)) * min(1.0, self.idf.get(tj, 1.0))
            bonus += weight * accumulated * (K1 + 1) / (accumulated + K1)
        return bonus


def idf_table(vocabulary: dict[str, int], document_frequency: np.ndarray, n_docs: int) -> dict[str, float]:
    """Lucene-style idf per term, for weighting proximity pairs."""
    return {
        term: math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
        for term, df in zip(vocabulary, document_frequency.tolist(), strict=True)
    }
