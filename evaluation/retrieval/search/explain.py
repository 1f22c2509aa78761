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
    vector_top_rows,
)
from goldenset.text import tokenize

__all__ = ["explain_page", "term_contributions"]


def term_contributions(index: BM25Index, query: str, page_row: int) -> dict:
    """The page's BM25 score taken apart by query term (terms in query order, once each): what each added."""
    postings = index.postings
    counts = Counter(tokenize(query))
    params = index.params
    norm = float(length_norm(params, postings.lengths[page_row : page_row + 1])[0]) if postings.size else 0.0
    lengths = np.asarray(postings.lengths)
    average = float(lengths.sum() / len(lengths)) if len(lengths) else 0.0
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
        weight = float(index.weights[lo + at])
        contribution = weight * times
        total += contribution
        terms.append(
            {
                "term": token,
                "matched": True,
                "times_in_query": times,
                "tf": int(postings.tfs[lo + at]),
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


def _hybrid(index: SearchIndex, query: str, config: SearchConfig, page_row: int) -> dict:
    """The page's place in both first stages and how the fusion scored it, as SearchIndex._hybrid does."""
    bm25 = index.bm25_for(config)
    ranks = _descending_ranks(index.corpus.size)
    text_rows, text_scores, _ = bm25.top_documents(tokenize(query), CANDIDATES, ranks)
    embedder, vectors = index.vectors()
    vector_rows, vector_scores = vector_top_rows(vectors, embedder.embed_query(query), CANDIDATES)
    stages = {
        "FullText": _first_stage(text_rows, text_scores, page_row),
        "Vector": _first_stage(vector_rows, vector_scores, page_row),
    }
    if config.fusion == "Rrf":
        k = config.rrf_k or fusion.RRF_K
        for stage in stages.values():
            stage["fused"] = 0.0 if stage["rank"] is None else 1.0 / (k + stage["rank"])
        fused_rows, fused = fusion.rrf([text_rows, vector_rows], k=k)
        how = {"fusion": "Rrf", "rrf_k": k}
    else:
        weights = {"FullText": config.fulltext_weight, "Vector": 1 - config.fulltext_weight}
        for name, scores in (("FullText", text_scores), ("Vector", vector_scores)):
            stage = stages[name]
            stage["weight"] = weights[name]
            if stage["score"] is None or not len(scores):
                stage["normalised"], stage["fused"] = None, 0.0
                continue
            low, high = float(scores.min()), float(scores.max())
            stage["normalised"] = (stage["score"] - low) / (high - low) if high > low else 1.0
            stage["fused"] = weights[name] * stage["normalised"]
        fused_rows, fused = fusion.weighted(
            [(text_rows, text_scores), (vector_rows, vector_scores)], [weights["FullText"], weights["Vector"]]
        )
        how = {"fusion": "Weighted"}
    where = np.flatnonzero(fused_rows == page_row)
    return {
        "method": "Hybrid: FullText and Vector fused",
        **how,
        "candidates": CANDIDATES,
        "stages": stages,
        "score": float(fused[where[0]]) if len(where) else None,
    }


def explain_page(
    index: SearchIndex,
    query: str,
    config: SearchConfig,
    page_row: int,
    reranker: Reranker | None = None,
) -> dict:
    """Why this page (a result's best page) scores what it does under this configuration."""
    if config.search_type == "FullText":
        explained = term_contributions(index.bm25_for(config), query, page_row)
    elif config.search_type == "Vector":
        embedder, vectors = index.vectors()
        query_vector = embedder.embed_query(query)
        rows, scores = vector_top_rows(vectors, query_vector, CANDIDATES)
        explained = {
            "method": f"Vector: cosine of the query's and the page's vectors ({embedder.name})",
            "score": float(
                np.asarray(vectors[page_row], dtype=np.float32) @ np.asarray(query_vector, np.float32)
            ),
            "rank_among_candidates": _first_stage(rows, scores, page_row)["rank"],
        }
    else:
        explained = _hybrid(index, query, config, page_row)
        bm25 = term_contributions(index.bm25_for(config), query, page_row)
        explained["terms"] = bm25["terms"]
    if reranker is not None:
        first = explained.get("score")
        text = index.corpus.texts_of([page_row])
        rescored = reranker.score(query, text, np.array([first if first is not None else -np.inf]))
        explained["rerank"] = {
            "reranker": reranker.name,
            "first_stage_score": first,
            "score": float(rescored[0]),
        }
    return explained
