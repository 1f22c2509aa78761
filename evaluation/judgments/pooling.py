"""Depth-k pooling: the documents a set of runs found that nobody has judged yet, most promising first. Plain
Python: no Django import.

A pool takes, for each question, the top `depth` documents of every run, leaves out those the question already
has a judgment for (any grade, 0 too: a judged non-relevant document is judged), and lists each remaining
document once. The order is the one a rater should follow so that the judgments spent change the runs' figures
most: a document's priority is the sum, over the runs that rank it within the depth, of 1 / its rank there
(reciprocal-rank votes: a document that many runs rank near the top comes first; one that a single run ranks
10th comes last). Ties fall to the question's order in the pool, then to the document id, so a pool is the same
whatever order its runs are given in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["PoolCandidate", "pool_candidates"]


@dataclass(frozen=True)
class PoolCandidate:
    question: str  # the question's key in the rankings given
    document_id: str
    priority: float  # the sum of 1 / rank over the runs that rank it within the depth
    runs: int  # how many runs rank it within the depth
    best_rank: int  # its best rank among them (1 = top)


def pool_candidates(
    runs: Sequence[Mapping[str, Sequence[str]]],
    judged: Mapping[str, Sequence[str] | set[str]],
    depth: int,
    questions: Sequence[str] | None = None,
) -> list[PoolCandidate]:
    """The unjudged documents within `depth` of any run, highest priority first.

    `runs`: each run's rankings, question -> document ids best first; `judged`: question -> the document ids that
    have a judgment already; `questions`: the questions to pool, in order (default: every question any run
    ranks, in the order first seen). A question no run ranked gives nothing.
    """
    if depth < 1:
        raise ValueError(f"depth must be a positive integer, got {depth!r}")
    if questions is None:
        questions = list(dict.fromkeys(q for run in runs for q in run))
    order = {question: position for position, question in enumerate(questions)}
    votes: dict[tuple[str, str], list[int]] = {}
    for run in runs:
        for question in questions:
            seen = set(judged.get(question, ()))
            ranking = run.get(question, ())
            for rank, document_id in enumerate(ranking[:depth], start=1):
                if document_id in seen:
                    continue
                seen.add(document_id)  # a run listing a document twice votes once, at its best rank
                votes.setdefault((question, document_id), []).append(rank)
    candidates = [
        PoolCandidate(question, document_id, _priority(ranks), len(ranks), min(ranks))
        for (question, document_id), ranks in votes.items()
    ]
    candidates.sort(key=lambda c: (-c.priority, order[c.question], c.document_id))
    return candidates


def _priority(ranks: list[int]) -> float:
    total = 0.0
    for rank in sorted(ranks):  # summed in one order whatever the runs' order, so ties are exact
        total += 1.0 / rank
    return total
