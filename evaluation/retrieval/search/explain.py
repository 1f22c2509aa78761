"""Why a page ranks where it does, as Elasticsearch's explain API says it: the score taken apart. Plain Python and
numpy: no Django import.

- FullText: each query term that matched the page, with its idf, its frequency in the page, the page's length
  against the average, and its BM25 contribution (the posting's weight, the same number the search added, times
  the times the query repeats the term); the contributions sum to the page's BM25 score.
- Vector: the cosine of the query's and the page's vectors, and the page's rank among the vector candidates.
- Hybrid: the page's rank and score in each first stage (FullText's and Vector's CANDIDATES best pages, or
  "not a candidate"), the fusion (RRF with its k: 1 / (k + rank) per list; Weighted: each list's score
  min-max normalised over its candidates, times its weight) and the fused score.
- Rerank: the first-stage score and the reranker's, which is the score the page ranks by.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from evaluation.retrieval.search import fusion
from evaluation.retrieval.search.bm25 import BM25Index, length_norm
from evaluation.retrieval.search.engine import (
    CANDIDATES,
    Reranker,
    SearchConfig,
    SearchIndex,
    _descending_ranks,
)
from evaluation.retrieval.search.vectors import vector_top_rows
from goldenset.text import tokenize

__all__ = ["explain_pages", "term_contributions"]


def term_contributions(index: BM25Index, query: str, page_row: int) -> dict:
    """The page's BM25 score taken apart by query term (terms in query order, once each): what each added."""
    postings = index.postings
    counts = Counter(tokenize(query))
    params = index.params
    lengths = np.asarray(postings.lengths)
    average = float(lengths.sum() / len(lengths)) if len(lengths) else 0.0
    # the page's own norm under the collection's average length (not the page's alone)
    norm = float(length_norm(params, lengths[page_row : page_row + 1], average)[0]) if postings.size else 0.0
    terms = []
    total = 0.0
    for token, times in counts.items():
        columns = postings.term_ids([token])
        if not len(columns):
            terms.append({"term": token, "matched": False, "reason": "not in the collection"})
            continue
        column = int(columns[0])
        lo, hi = int(postings.indptr[column]), int(postings.indptr[column + 1])
        rows = postings.rows[lo:hi]
        at = int(np.searchsorted(rows, page_row))
        if at >= len(rows) or int(rows[at]) != page_row:
            found = np.flatnonzero(
                rows == page_row
            )  # rows are ascending within a term; this is the safe read
            if not len(found):
                terms.append({"term": token, "matched": False, "reason": "not in this page",
                              "idf": float(index.idf[column]), "df": hi - lo})  # fmt: skip
                continue
            at = int(found[0])
        weight = index.weight(column, lo + at)
        contribution = weight * times
        total += contribution
        terms.append(
            {
                "term": token,
                "matched": True,
                "times_in_query": times,
                "tf": postings.tf_at(lo + at),
                "df": hi - lo,
                "idf": float(index.idf[column]),
                "contribution": contribution,
            }
        )
    return {
        "method": f"BM25 ({params.variant}: k1={params.k1:g}, b={params.b:g})",
        "page_length": int(postings.lengths[page_row]),
        "average_length": average,
        "length_norm": norm,
        "terms": terms,
        "score": total,
    }


def _first_stage(rows: np.ndarray, scores: np.ndarray, page_row: int) -> dict:
    where = np.flatnonzero(rows == page_row)
    if not len(where):
        return {"rank": None, "score": None}
    return {"rank": int(where[0]) + 1, "score": float(scores[where[0]])}


class _Stages:
    """Hybrid's two first stages and their fusion, computed once for every page explained (as
    SearchIndex._hybrid computes them)."""

    def __init__(self, index: SearchIndex, query: str, config: SearchConfig):
        ranks = _descending_ranks(index.corpus.size)
        self.text = index.bm25_for(config).top_documents(tokenize(query), CANDIDATES, ranks)[:2]
        embedder, vectors = index.vectors()
        self.vector = vector_top_rows(vectors, embedder.embed_query(query), CANDIDATES)
        self.config = config
        lists = [self.text[0], self.vector[0]]
        if config.fusion == "Rrf":
            self.k = config.rrf_k or fusion.RRF_K
            self.fused = fusion.rrf(lists, k=self.k)
        else:
            self.weights = {"FullText": config.fulltext_weight, "Vector": 1 - config.fulltext_weight}
            self.fused = fusion.weighted([self.text, self.vector], list(self.weights.values()))

    def explain(self, page_row: int) -> dict:
        stages = {
            "FullText": _first_stage(*self.text, page_row),
            "Vector": _first_stage(*self.vector, page_row),
        }
        if self.config.fusion == "Rrf":
            for stage in stages.values():
                stage["fused"] = 0.0 if stage["rank"] is None else 1.0 / (self.k + stage["rank"])
            how: dict = {"fusion": "Rrf", "rrf_k": self.k}
        else:
            for name, (rows, scores) in (("FullText", self.text), ("Vector", self.vector)):
                stage = stages[name]
                stage["weight"] = self.weights[name]
                if stage["score"] is None or not len(scores):
                    stage["normalised"], stage["fused"] = None, 0.0
                    continue
                # As fusion.weighted normalises: over the list's own candidates, in the list's own dtype.
                low, high = float(scores.min()), float(scores.max())
                normalised = (scores - low) / (high - low) if high > low else np.ones(len(scores))
                at = int(np.flatnonzero(rows == page_row)[0])
                stage["normalised"] = float(normalised[at])
                stage["fused"] = float((self.weights[name] * normalised)[at])
            how = {"fusion": "Weighted"}
        rows, fused = self.fused
        where = np.flatnonzero(rows == page_row)
        return {
            "method": "Hybrid: FullText and Vector fused",
            **how,
            "candidates": CANDIDATES,
            "stages": stages,
            "score": float(fused[where[0]]) if len(where) else None,
        }


def explain_pages(
    index: SearchIndex,
    query: str,
    config: SearchConfig,
    page_rows: list[int],
    reranker: Reranker | None = None,
) -> list[dict]:
    """Why each of these pages (the results' best pages) scores what it does under this configuration: what
    every page shares (first stages, the query's vector) computed once."""
    if config.search_type == "FullText":
        bm25 = index.bm25_for(config)
        explained = [term_contributions(bm25, query, row) for row in page_rows]
    elif config.search_type == "Vector":
        embedder, vectors = index.vectors()
        query_vector = np.asarray(embedder.embed_query(query), dtype=np.float32)
        rows, scores = vector_top_rows(vectors, query_vector, CANDIDATES)
        explained = [
            {
                "method": f"Vector: cosine of the query's and the page's vectors ({embedder.name})",
                "score": float(np.asarray(vectors[row], dtype=np.float32) @ query_vector),
                "rank_among_candidates": _first_stage(rows, scores, row)["rank"],
            }
            for row in page_rows
        ]
    else:
        stages = _Stages(index, query, config)
        bm25 = index.bm25_for(config)
        explained = [
            {**stages.explain(row), "terms": term_contributions(bm25, query, row)["terms"]}
            for row in page_rows
        ]
    if reranker is not None and page_rows:
        first = np.array([e["score"] if e.get("score") is not None else -np.inf for e in explained])
        rescored = reranker.score(query, index.corpus.texts_of(page_rows), first)
        for item, before, after in zip(explained, first.tolist(), rescored.tolist(), strict=True):
            item["rerank"] = {
                "reranker": reranker.name,
                "first_stage_score": None if before == -np.inf else before,
                "score": float(after),
            }
    return explained
