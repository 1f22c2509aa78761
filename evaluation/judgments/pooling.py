"""Depth-k pooling: the documents a set of runs found that nobody has judged yet, most promising first. Plain
Python: no Django import.

A pool takes, for each question, the top `depth` documents of every run, leaves out those the question already
has a judgment for (any grade, 0 too: a judged non-relevant document is judged), and lists each remaining
document once. The order is the one a rater should follow so that the judgments spent change the runs' figures
most: a document's priority is the sum, over the runs that rank it within the depth, of 1 / its rank there
(reciprocal-rank votes: a document that many runs rank near the top comes first; one that a single run ranks
10th comes last). Ties fall to the question's order in the pool, then to the document id, so a pool is the same
whatever order its runs are given in.

That order is fixed when the pool is made. `AdaptiveOrder` follows it as judgments come in instead: MaxMean
(Losada, Parapar and Barreiro, 2016), per question, gives the next document from the run whose documents judged
so far were most often relevant ((relevant + 1) / (judged + 2)), its best-ranked document not judged yet; among
questions, the one whose best run scores highest goes first; ties fall to the fixed order. A run that keeps
finding relevant documents is followed; one that finds none falls behind. benchmarks/pooling_bench.py measures
both orders against a random one.
"""

from __future__ import annotations

import heapq
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["AdaptiveOrder", "PoolCandidate", "pool_candidates"]


@dataclass(frozen=True)
class PoolCandidate:
    question: str  # the question's key in the rankings given
    document_id: str
    priority: float  # the sum of 1 / rank over the runs that rank it within the depth
    runs: int  # how many runs rank it within the depth
    best_rank: int  # its best rank among them (1 = top)
    # (run index, rank) for each run that ranks it within the depth, runs numbered as given
    ranks: tuple[tuple[int, int], ...] = field(default=(), compare=False)


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
    by_run: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for index, run in enumerate(runs):
        for question in questions:
            seen = set(judged.get(question, ()))
            ranking = run.get(question, ())
            for rank, document_id in enumerate(ranking[:depth], start=1):
                if document_id in seen:
                    continue
                seen.add(document_id)  # a run listing a document twice votes once, at its best rank
                votes.setdefault((question, document_id), []).append(rank)
                by_run.setdefault((question, document_id), []).append((index, rank))
    candidates = [
        PoolCandidate(q, d, _priority(ranks), len(ranks), min(ranks), tuple(by_run[(q, d)]))
        for (q, d), ranks in votes.items()
    ]
    candidates.sort(key=lambda c: (-c.priority, order[c.question], c.document_id))
    return candidates


def _priority(ranks: list[int]) -> float:
    total = 0.0
    for rank in sorted(ranks):  # summed in one order whatever the runs' order, so ties are exact
        total += 1.0 / rank
    return total


class AdaptiveOrder:
    """MaxMean over a pool (see the module docstring). `items` are the pool's candidates in their fixed order
    (an item's index is its place there); `record` an item's judgment as it comes; `next` the item to judge next
    of those not judged yet and not `unavailable` (given to enough raters already, say), or None. An item judged
    but still wanted by more raters is recorded with `finished=False`: its grade counts for its runs, and it can
    still be given."""

    def __init__(self, items: Sequence[PoolCandidate]):
        self.items = items
        self.done: set[int] = set()  # never to be given again
        self.counted: set[int] = set()  # judgments counted in their runs' means
        # per question, per run: its items best rank first; and the run's [relevant, judged] so far
        self.lists: dict[str, dict[int, list[int]]] = {}
        self.stats: dict[str, dict[int, list[int]]] = {}
        ranked: dict[str, dict[int, list[tuple[int, int]]]] = {}
        for index, item in enumerate(items):
            for run, rank in item.ranks:
                ranked.setdefault(item.question, {}).setdefault(run, []).append((rank, index))
        for question, runs in ranked.items():
            self.lists[question] = {run: [index for _, index in sorted(pairs)] for run, pairs in runs.items()}
            self.stats[question] = {run: [0, 0] for run in runs}
        self.heads = {q: dict.fromkeys(runs, 0) for q, runs in self.lists.items()}
        self.heap: list = []
        self.dirty: set[str] = set(self.lists)  # questions whose best must be pushed before the heap is read

    def record(self, index: int, relevant: bool, finished: bool = True) -> None:
        if finished:
            self.done.add(index)
        item = self.items[index]
        if index not in self.counted:
            self.counted.add(index)
            for run, _rank in item.ranks:
                counts = self.stats[item.question][run]
                counts[0] += int(relevant)
                counts[1] += 1
        self.dirty.add(item.question)

    def _best(self, question: str, unavailable: Container[int]) -> tuple[float, int, int | None]:
        """(-score, the item's fixed place, the item) of the question's best run's next item."""
        best: tuple[float, int, int | None] = (0.0, 0, None)
        for run, indexes in self.lists[question].items():
            head = self.heads[question][run]
            while head < len(indexes) and indexes[head] in self.done:
                head += 1
            self.heads[question][run] = head  # items judged stay judged: skipped for good
            nxt = next((indexes[n] for n in range(head, len(indexes)) if indexes[n] not in unavailable), None)
            if nxt is None:
                continue
            relevant, judged = self.stats[question][run]
            candidate = (-(relevant + 1) / (judged + 2), nxt, nxt)
            if best[2] is None or candidate < best:
                best = candidate
        return best

    def ranked(self, unavailable: Iterable[int], count: int) -> list[int]:
        """The next `count` items in turn if none of them were judged meanwhile (each left out of the next): every
        question's best once, then only the question of the item just taken moves on."""
        left_out = set(unavailable)
        heap: list[tuple[float, int, int, str]] = []
        for question in self.lists:
            score, place, best = self._best(question, left_out)
            if best is not None:
                heap.append((score, place, best, question))
        heapq.heapify(heap)
        out: list[int] = []
        while heap and len(out) < count:
            _score, _place, index, question = heapq.heappop(heap)
            out.append(index)
            left_out.add(index)
            score, place, best = self._best(question, left_out)
            if best is not None:
                heapq.heappush(heap, (score, place, best, question))
        return out

    def next(self, unavailable: Iterable[int] = frozenset()) -> int | None:
        if unavailable:  # a rater's view: every question's best, leaving out what they cannot take
            found = self.ranked(unavailable, 1)
            return found[0] if found else None
        for question in self.dirty:
            fresh = self._best(question, ())
            if fresh[2] is not None:
                heapq.heappush(self.heap, (*fresh, question))
        self.dirty.clear()
        while self.heap:
            score, place, index, question = self.heap[0]
            if (score, place, index) == self._best(question, ()):
                return index
            heapq.heappop(self.heap)  # stale: its question moved on since it was pushed
            fresh = self._best(question, ())
            if fresh[2] is not None:
                heapq.heappush(self.heap, (*fresh, question))
        return None
