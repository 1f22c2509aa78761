"""Explain (evaluation.retrieval.search.explain, pure): a page's score taken apart adds up to the score the search
gave it, for every search type, fusion, BM25 variant, tuned k1 and b, and reranker."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.retrieval.search.corpus import Corpus
from evaluation.retrieval.search.embeddings import LsiEmbedder
from evaluation.retrieval.search.engine import SearchConfig, SearchIndex
from evaluation.retrieval.search.explain import explain_pages, term_contributions
from evaluation.retrieval.search.rerank import ProximityReranker
from goldenset.temporal import Validity

TEXTS = [
    "the refund window is thirty days from purchase",
    "express shipping arrives the next business day",
    "refund requests go to the original card, refund refund",
    "a two year warranty covers manufacturing defects",
    "shipping a refund: the card is credited within days",
    "warranty claims need the purchase receipt",
] * 3  # 18 pages, so BM25's idf is positive for the words of a few
QUERY = "refund card days refund"


def _index() -> SearchIndex:
    ids = [f"d{i:02d}" for i in range(len(TEXTS))]
    corpus = Corpus(list(TEXTS), np.arange(len(TEXTS)), ids, [Validity(i) for i in ids])
    return SearchIndex(corpus, embedder_factory=lambda _: LsiEmbedder(dimensions=4, sample=100))


@pytest.mark.parametrize(
    "config",
    [
        SearchConfig(),
        SearchConfig(bm25_variant="okapi"),
        SearchConfig(bm25_k1=0.6, bm25_b=0.2),
    ],
)
def test_fulltext_contributions_add_up_to_the_page_s_score(config):
    index = _index()
    scores = index.page_scores(QUERY, config)
    ranking = index.rank_documents(QUERY, config, 5)
    explained = explain_pages(index, QUERY, config, ranking.page_rows.tolist())
    for row, item, score in zip(ranking.page_rows.tolist(), explained, ranking.scores.tolist(), strict=True):
        assert item["score"] == pytest.approx(scores[row], rel=1e-12) == pytest.approx(score, rel=1e-12)
        matched = [t for t in item["terms"] if t["matched"]]
        # "refund" is asked twice: it counts twice, as the search counts it.
        refund = next(t for t in matched if t["term"] == "refund")
        assert refund["times_in_query"] == 2
        assert sum(t["contribution"] for t in matched) == pytest.approx(score, rel=1e-12)
    params = config.bm25_params()
    assert explained[0]["method"] == f"BM25 ({params.variant}: k1={params.k1:g}, b={params.b:g})"


def test_a_term_the_page_lacks_or_the_collection_lacks_is_said_so():
    index = _index()
    found = term_contributions(index.bm25(SearchConfig().bm25_variant), "warranty zebra", 0)
    assert found["terms"] == [
        {
            "term": "warranty",
            "matched": False,
            "reason": "not in this page",
            "idf": found["terms"][0]["idf"],
            "df": 6,
        },
        {"term": "zebra", "matched": False, "reason": "not in the collection"},
    ]
    assert found["score"] == 0.0


@pytest.mark.parametrize("fusion", ["Rrf", "Weighted"])
def test_hybrid_explains_both_first_stages_and_the_fused_score(fusion):
    index = _index()
    config = SearchConfig(search_type="Hybrid", fusion=fusion, fulltext_weight=0.3, rrf_k=10)
    ranking = index.rank_documents(QUERY, config, 4)
    explained = explain_pages(index, QUERY, config, ranking.page_rows.tolist())
    for item, score in zip(explained, ranking.scores.tolist(), strict=True):
        assert item["score"] == pytest.approx(score, rel=1e-12)
        assert sum(stage["fused"] for stage in item["stages"].values()) == pytest.approx(score, rel=1e-12)
        if fusion == "Rrf":
            assert item["rrf_k"] == 10
            for stage in item["stages"].values():
                assert stage["fused"] == (
                    0.0 if stage["rank"] is None else pytest.approx(1 / (10 + stage["rank"]))
                )
        else:
            assert item["stages"]["FullText"]["weight"] == 0.3
            assert item["stages"]["Vector"]["weight"] == pytest.approx(0.7)


def test_vector_and_rerank_scores_are_the_ones_ranked_by():
    index = _index()
    vector = SearchConfig(search_type="Vector")
    ranking = index.rank_documents(QUERY, vector, 3)
    for item, score in zip(
        explain_pages(index, QUERY, vector, ranking.page_rows.tolist()), ranking.scores, strict=True
    ):
        assert item["score"] == pytest.approx(float(score), abs=1e-6)
        assert item["rank_among_candidates"] is not None
    reranker = ProximityReranker(index.bm25("lucene").postings)
    ranking = index.rank_documents(QUERY, SearchConfig(), 3, reranker)
    explained = explain_pages(index, QUERY, SearchConfig(), ranking.page_rows.tolist(), reranker)
    for item, score in zip(explained, ranking.scores.tolist(), strict=True):
        assert item["rerank"]["reranker"] == "proximity"
        assert item["rerank"]["score"] == pytest.approx(score, rel=1e-12)
        assert item["rerank"]["first_stage_score"] == pytest.approx(item["score"], rel=1e-12)
        assert (
            item["rerank"]["score"] >= item["rerank"]["first_stage_score"]
        )  # a proximity bonus is never negative
