"""Retrieval metrics that reproduce trec_eval (and so pytrec_eval) exactly. Plain Python and numpy: no Django.

A ranking is a sequence of document ids, best first, already cut at the search depth; qrels map the judged
document ids of one query to their integer grade. A document is relevant when its grade is > 0 (trec_eval's
default relevance level of 1); a document absent from the qrels is unjudged and counts as non-relevant; a negative
grade (trec_eval's "in the pool but unjudged") is neither relevant nor a gain.

Each function follows the named trec_eval measure to the floating-point operation (same sums, in the same order,
with the C library's log2), so values equal pytrec_eval's to the last bit or within 1e-15:

- ``recall_at``          -> ``recall.k``      (m_recall.c)
- ``reciprocal_rank``    -> ``recip_rank``    (m_recip_rank.c)
- ``reciprocal_rank_at`` -> ``recip_rank`` on the run cut at k ("MRR@10" in the reference figures)
- ``ndcg_at``            -> ``ndcg_cut.k``    (m_ndcg_cut.c)
- ``average_precision``  -> ``map``           (m_map.c)
- ``bpref``              -> ``bpref``         (m_bpref.c)
- ``judged_at``          -> ``P.k`` with every judged document counted relevant (ir_measures' ``Judged@k``)
- ``condensed``          -> trec_eval's ``-J`` (judged documents only): the ranking with its unjudged documents
  removed, on which ``ndcg_at`` and ``average_precision`` give the condensed-list measures
- ``rank_run``           -> the order trec_eval gives a run (form_res_rels.c)

Judgments can be incomplete: a run finds documents nobody judged, and the standard measures count them as
non-relevant. ``judged_at`` says how much of the top k is judged at all; ``bpref`` and the measures over the
condensed list (Sakai's condensed lists; trec_eval -J) read only what was judged, so they punish a run less for
finding what nobody looked at. A judged document is one with a grade >= 0: grade 0 is judged non-relevant.

Queries: trec_eval ignores a query that has no qrels line at all (and, unless ``-c``, one with no retrieved
documents). A query that is judged but has no relevant document is NOT skipped: it scores 0 on every measure
here and counts in the mean. These functions return 0.0 for it too, and evalsite's evaluation leaves such queries
out (a question with no expected document cannot be scored on retrieval), so the means are over queries with at
least one relevant document.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from goldenset.vocabulary.metric_names import (
    BPREF,
    JUDGED_SHARE,
    MAP_COND,
    MRR,
    NDCG,
    NDCG_COND,
    RECALL,
    at_k,
)

__all__ = [
    "average_precision",
    "bpref",
    "condensed",
    "evaluate_query",
    "first_relevant_rank",
    "judged_at",
    "mean_metrics",
    "method_of",
    "missing_relevant",
    "ndcg_at",
    "rank_run",
    "recall_at",
    "reciprocal_rank",
    "reciprocal_rank_at",
]


def rank_run(scores: Mapping[str, float], *, trec_float: bool = True) -> list[str]:
    """Document ids in the order trec_eval ranks a run: score descending, ties by document id descending.

    trec_eval reads each score into a C ``float`` (32 bits; pytrec_eval converts the Python float the same way),
    so two scores equal to about 7 significant digits tie and fall to the id tie-break. With ``trec_float``
    (the default) scores are compared as those 32-bit values, which gives exactly trec_eval's order for the
    scores given; ``trec_float=False`` compares the float64 values as they are (the engine's own precision).

    Ids are compared as trec_eval's strcmp compares them: byte order of their UTF-8 encoding, which is the
    code point order Python compares strings in (so "9" ranks above "10" on a tie). A NaN score has no place
    in the order and raises ValueError.
    """
    docs = list(scores)
    values = np.fromiter((scores[doc] for doc in docs), dtype=np.float64, count=len(docs))
    if np.isnan(values).any():
        raise ValueError("a NaN score cannot be ranked")
    if trec_float:
        with np.errstate(over="ignore"):  # beyond float32's range a C cast gives +-inf, as here
            values = values.astype(np.float32)
    keys = values.tolist()
    order = sorted(range(len(docs)), key=lambda i: (keys[i], docs[i]), reverse=True)
    return [docs[i] for i in order]


def _cut(ranking: Sequence[str], k: int) -> Sequence[str]:
    if k < 1:
        raise ValueError(f"a cutoff must be a positive integer, got {k!r}")
    top = ranking[:k]
    if len(set(top)) != len(top):  # trec_eval refuses a run that lists a document twice
        raise ValueError("the ranking lists a document more than once")
    return top


def _relevant(qrels: Mapping[str, int]) -> list[str]:
    return [doc for doc, grade in qrels.items() if grade > 0]


def recall_at(ranking: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """trec_eval ``recall.k``: relevant documents in the top k / all judged relevant documents.

    The denominator counts every relevant judgment, retrieved or not; a ranking shorter than k counts as if
    filled with non-relevant documents. 0.0 when the query has no relevant document (trec_eval's value too,
    see the module docstring: evalsite's callers leave such queries out).
    """
    relevant = _relevant(qrels)
    if not relevant:
        return 0.0
    found = {doc for doc in _cut(ranking, k) if qrels.get(doc, 0) > 0}
    return len(found) / len(relevant)


def reciprocal_rank(ranking: Sequence[str], qrels: Mapping[str, int]) -> float:
    """trec_eval ``recip_rank``: 1 / rank of the first relevant document in the ranking, 0.0 if there is none.

    The ranking is taken as already cut at the search depth.
    """
    rank = first_relevant_rank(ranking, qrels)
    return 0.0 if rank is None else 1.0 / rank


def reciprocal_rank_at(ranking: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """``recip_rank`` on the ranking cut at k: how "MRR@10" is computed in the reference figures."""
    return reciprocal_rank(_cut(ranking, k), qrels)


def ndcg_at(ranking: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """trec_eval ``ndcg_cut.k``: DCG of the top k / ideal DCG at k; 0.0 when the ideal is 0.

    Linear gains: the grade of each relevant document (1 for binary qrels), discounted by log2(rank + 1) and
    summed in rank order. The ideal ranking holds every judged document with grade > 0, retrieved or not,
    best grade first, and is cut at k as well.
    """
    dcg = 0.0
    for i, doc in enumerate(_cut(ranking, k)):
        gain = qrels.get(doc, 0)
        if gain > 0:
            dcg += gain / math.log2(i + 2)
    ideal = 0.0
    for i, gain in enumerate(sorted((grade for grade in qrels.values() if grade > 0), reverse=True)[:k]):
        ideal += gain / math.log2(i + 2)
    return dcg / ideal if ideal > 0.0 else 0.0


def average_precision(ranking: Sequence[str], qrels: Mapping[str, int]) -> float:
    """trec_eval ``map`` for one query: the precision at each relevant document retrieved, summed in rank order,
    over all judged relevant documents (retrieved or not); 0.0 when none is retrieved."""
    relevant = len(_relevant(qrels))
    found = 0
    total = 0.0
    for i, doc in enumerate(_distinct(ranking)):
        if qrels.get(doc, 0) > 0:
            found += 1
            total += found / (i + 1)
    return total / relevant if found else 0.0


def bpref(ranking: Sequence[str], qrels: Mapping[str, int]) -> float:
    """trec_eval ``bpref``: for each judged relevant document retrieved, the share of the first R judged
    non-relevant documents (R: the judged relevant ones) ranked above it is a preference lost; the preserved
    share, summed over the relevant documents retrieved, over R. Unjudged documents are passed over: only
    judgments count. 0.0 when the query has no relevant document."""
    relevant = len(_relevant(qrels))
    nonrelevant = sum(1 for grade in qrels.values() if grade == 0)
    above = 0
    total = 0.0
    for doc in _distinct(ranking):
        grade = qrels.get(doc)
        if grade is None or grade < 0:  # unjudged (or trec_eval's "in the pool but unjudged")
            continue
        if grade == 0:
            above += 1
        elif above > 0:
            total += 1.0 - min(above, relevant) / min(nonrelevant, relevant)
        else:
            total += 1.0
    return total / relevant if relevant else 0.0


def judged_at(ranking: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """The share of the top k that has a judgment (any grade >= 0), over k as precision@k counts: a ranking
    shorter than k counts its empty places as unjudged."""
    return sum(1 for doc in _cut(ranking, k) if qrels.get(doc, -1) >= 0) / k


def condensed(ranking: Sequence[str], qrels: Mapping[str, int]) -> list[str]:
    """The ranking with its unjudged documents removed, the judged ones in their order (trec_eval -J)."""
    return [doc for doc in _distinct(ranking) if qrels.get(doc, -1) >= 0]


def _distinct(ranking: Sequence[str]) -> Sequence[str]:
    if len(set(ranking)) != len(ranking):  # trec_eval refuses a run that lists a document twice
        raise ValueError("the ranking lists a document more than once")
    return ranking


def first_relevant_rank(ranking: Sequence[str], qrels: Mapping[str, int]) -> int | None:
    """The 1-based rank of the first relevant document in the ranking, or None."""
    for rank, doc in enumerate(ranking, start=1):
        if qrels.get(doc, 0) > 0:
            return rank
    return None


def missing_relevant(ranking: Sequence[str], qrels: Mapping[str, int]) -> list[str]:
    """The relevant (expected) documents that the ranking does not contain, sorted."""
    retrieved = set(ranking)
    return sorted(doc for doc in _relevant(qrels) if doc not in retrieved)


def evaluate_query(ranking: Sequence[str], qrels: Mapping[str, int], ks: Iterable[int]) -> dict[str, float]:
    """The metrics of one query: ``recall@k`` for each k, then ``ndcg@k`` for each k, then ``mrr``; then the
    measures for incomplete judgments: ``judged@k`` and ``ndcg_cond@k`` for each k, ``bpref`` and ``map_cond``.

    The search depth is max(ks): every measure reads the ranking cut there (``mrr`` is the reciprocal rank within
    it; ``bpref`` and ``map_cond`` read the whole cut ranking, as trec_eval reads a run of that depth).
    """
    cutoffs = list(dict.fromkeys(ks))
    if not cutoffs:
        raise ValueError("at least one cutoff is needed")
    for k in cutoffs:
        if k < 1:
            raise ValueError(f"a cutoff must be a positive integer, got {k!r}")
    depth = max(cutoffs)
    top = ranking[:depth]
    if len(set(top)) != len(top):  # trec_eval refuses a run that lists a document twice
        raise ValueError("the ranking lists a document more than once")
    gains = sorted((grade for grade in qrels.values() if grade > 0), reverse=True)
    metrics: dict[str, float] = {}
    # One pass over the ranking, then every cutoff from it. Gains are added in rank order and the ideal in
    # grade order, term by term, exactly as recall_at / ndcg_at add them, so the values are bit-identical.
    hits = [(i, qrels[doc]) for i, doc in enumerate(top) if qrels.get(doc, 0) > 0]
    for k in cutoffs:
        found = sum(1 for i, _ in hits if i < k)
        metrics[at_k(RECALL, k)] = found / len(gains) if gains else 0.0
    ndcg = _ndcg_cuts(hits, gains, cutoffs)
    for k in cutoffs:
        metrics[at_k(NDCG, k)] = ndcg[k]
    metrics[MRR] = 1.0 / (hits[0][0] + 1) if hits else 0.0
    # The same over the condensed list (judged documents only, in their order): trec_eval -J.
    judged = [(i, qrels[doc]) for i, doc in enumerate(top) if qrels.get(doc, -1) >= 0]
    for k in cutoffs:
        metrics[at_k(JUDGED_SHARE, k)] = sum(1 for i, _ in judged if i < k) / k
    condensed_hits = [(j, grade) for j, (_, grade) in enumerate(judged) if grade > 0]
    ndcg_cond = _ndcg_cuts(condensed_hits, gains, cutoffs)
    for k in cutoffs:
        metrics[at_k(NDCG_COND, k)] = ndcg_cond[k]
    metrics[BPREF] = bpref(top, qrels)
    total = 0.0
    for found, (j, _) in enumerate(condensed_hits, start=1):
        total += found / (j + 1)
    metrics[MAP_COND] = total / len(gains) if condensed_hits else 0.0
    return metrics


def _ndcg_cuts(
    hits: Sequence[tuple[int, int]], gains: Sequence[int], cutoffs: Sequence[int]
) -> dict[int, float]:
    """nDCG at each cutoff from the (0-based rank, grade) of the relevant documents, as ndcg_at sums it."""
    values = {}
    for k in cutoffs:
        dcg = 0.0
        for i, gain in hits:
            if i >= k:
                break
            dcg += gain / math.log2(i + 2)
        ideal = 0.0
        for i, gain in enumerate(gains[:k]):
            ideal += gain / math.log2(i + 2)
        values[k] = dcg / ideal if ideal > 0.0 else 0.0
    return values


def method_of(name: str) -> str:
    """How a metric of evaluate_query is computed, as a run records it beside the value."""
    base = name.split("@")[0]
    if base == JUDGED_SHARE:
        return "judged share of the top k (ir_measures Judged@k)"
    if base in (NDCG_COND, MAP_COND):
        return "trec_eval -J (condensed list)"
    return "trec_eval"


def mean_metrics(per_query: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Arithmetic mean of each metric over the queries, in the first query's key order ({} for no queries).

    Summed in query order and divided by the number of queries, as trec_eval averages. Every query must
    carry the same metrics.
    """
    if not per_query:
        return {}
    keys = list(per_query[0])
    for metrics in per_query:
        if set(metrics) != set(keys):
            raise ValueError(f"queries carry different metrics: {sorted(metrics)} vs {sorted(keys)}")
    means: dict[str, float] = {}
    for key in keys:
        total = 0.0
        for metrics in per_query:
            total += metrics[key]
        means[key] = total / len(per_query)
    return means
