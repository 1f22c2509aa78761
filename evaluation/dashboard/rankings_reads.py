"""Two retrieval runs side by side, question by question, without judgments (how alike their rankings are) and
with them (which questions got better or worse): the reads behind Compare's "rankings side by side"."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from evaluation.models import EvaluationRun, QuestionResult
from evaluation.retrieval.similarity import rankings_similarity

PERSISTENCE = 0.9  # RBO's p: the top 10 carry 86% of the weight


@dataclass(frozen=True)
class QuestionPair:
    key: str
    question: str
    first_position: int
    second_position: int
    overlap: float
    jaccard: float
    rbo: float
    first_value: float | None  # the metric, when both runs scored it
    second_value: float | None

    @property
    def delta(self) -> float | None:
        if self.first_value is None or self.second_value is None:
            return None
        return self.second_value - self.first_value


def _rows(run: EvaluationRun) -> dict[str, tuple]:
    rows = QuestionResult.objects.filter(run=run, error="").values_list(
        "entry_id", "entry_key", "question", "position", "ranked_ids", "metrics"
    )
    return {str(entry_id): (key, question, position, ids.split("\n") if ids else [], metrics)
            for entry_id, key, question, position, ids, metrics in rows}  # fmt: skip


def ranking_pairs(first: EvaluationRun, second: EvaluationRun, k: int, metric: str) -> list[QuestionPair]:
    """Per question both runs answered: how alike their top k are, and the metric in each (least alike first)."""
    a, b = _rows(first), _rows(second)
    similar = rankings_similarity(
        {q: r[3] for q, r in a.items()}, {q: r[3] for q, r in b.items()}, k, PERSISTENCE
    )
    pairs = [
        QuestionPair(
            key=a[s.question][0] or s.question,
            question=a[s.question][1],
            first_position=a[s.question][2],
            second_position=b[s.question][2],
            overlap=s.overlap,
            jaccard=s.jaccard,
            rbo=s.rbo,
            first_value=a[s.question][4].get(metric),
            second_value=b[s.question][4].get(metric),
        )  # fmt: skip
        for s in similar
    ]
    return sorted(pairs, key=lambda p: (p.rbo, p.first_position))


def summary(pairs: list[QuestionPair]) -> dict:
    deltas = [p.delta for p in pairs if p.delta is not None]
    return {
        "questions": len(pairs),
        "overlap": statistics.fmean(p.overlap for p in pairs) if pairs else None,
        "jaccard": statistics.fmean(p.jaccard for p in pairs) if pairs else None,
        "rbo": statistics.fmean(p.rbo for p in pairs) if pairs else None,
        "identical": sum(1 for p in pairs if p.rbo >= 1.0 - 1e-12),
        "better": sum(1 for d in deltas if d > 0),
        "worse": sum(1 for d in deltas if d < 0),
        "same": sum(1 for d in deltas if d == 0),
    }
