"""Vector search through the API with EVALSITE_EMBEDDER=endpoint, against the scripted server over real HTTP:
sensible results, page vectors computed once per page and stored, a clear 503 when the endpoint fails."""

from __future__ import annotations

import httpx
import pytest
from django.test import override_settings

from evaluation.models import PageEmbedding
from evaluation.retrieval import indexes
from tests.conftest import add_documents
from tests.llm_server import llm_server_fixture  # noqa: F401

URL = "/lmkit/v1/search"
MODEL = "scripted-embed"


@pytest.fixture(autouse=True)
def endpoint(llm_server, tmp_path):
    """The scripted server as the embedder; each test with an empty index cache and its own data directory."""
    indexes.clear_memory()
    with override_settings(
        DATA_DIR=tmp_path,
        EVALSITE_EMBEDDER="endpoint",
        EVALSITE_EMBEDDINGS_BASE_URL=llm_server.url,
        EVALSITE_EMBEDDINGS_MODEL=MODEL,
        EVALSITE_EMBEDDINGS_API_KEY="k-123",
        EVALSITE_EMBEDDINGS_BACKOFF=0.01,
        EVALSITE_EMBEDDINGS_MAX_ATTEMPTS=2,
    ):
        yield llm_server
    indexes.clear_memory()


def search(world, query: str, **config):
    return world.client.post(
        URL, {"collection_id": "handbook", "query": query, "search_type": "Vector", **config}, format="json"
    )


def test_vector_search_ranks_by_the_endpoint_embeddings(world, endpoint):
    response = search(world, "when does express shipping arrive", top_k=3)
    assert response.status_code == 200, response.json()
    body = response.json()
    assert [r["document_id"] for r in body["results"]][0] == "shipping"
    assert body["config"]["search_type"] == "Vector"
    assert all(-1.0 <= r["score"] <= 1.0 + 1e-6 for r in body["results"])
    embedded = endpoint.embedded_texts()
    assert len(embedded) == 4  # three pages, then the query
    assert embedded[-1] == "when does express shipping arrive"
    assert all(r.headers["Authorization"] == "Bearer k-123" for r in endpoint.requests)
    assert {r.body["model"] for r in endpoint.requests} == {MODEL}

    # The index (with its vectors) is cached: another query costs one embedding call, for the query.
    endpoint.reset()
    hybrid = search(world, "full refund within 30 days", search_type="Hybrid")
    assert hybrid.json()["results"][0]["document_id"] == "refunds"
    assert endpoint.embedded_texts() == ["full refund within 30 days"]


def test_a_failing_endpoint_answers_a_clear_503(world, endpoint):
    endpoint.fail_next(500, 500)
    response = search(world, "refund")
    assert response.status_code == 503
    error = response.json()["error"]
    assert error["code"] == "embeddings-unavailable"
    assert "after 2 attempts" in error["message"]
    assert error["details"]["model"] == MODEL
    # Nothing half-built was cached: the next call builds the vectors and succeeds.
    assert search(world, "refund").status_code == 200


def test_full_text_search_never_calls_the_endpoint(world, endpoint):
    response = search(world, "refund", search_type="FullText")
    assert response.status_code == 200
    assert endpoint.count() == 0


def test_a_new_content_version_embeds_only_the_changed_page(world, endpoint):
    assert search(world, "warranty coverage").status_code == 200
    assert PageEmbedding.objects.filter(embedder=f"endpoint:{MODEL}").count() == 3
    version = world.collection.content_version

    add_documents(world.collection, {"warranty": "Every device carries a three-year warranty."})
    world.collection.refresh_from_db()
    assert world.collection.content_version > version  # a new index will be built
    endpoint.reset()
    indexes.clear_memory()  # as in another process: nothing in memory

    response = search(world, "warranty coverage")
    assert response.status_code == 200
    assert response.json()["results"][0]["document_id"] == "warranty"
    # Only the changed page (and the query) went to the endpoint; the other two pages' vectors were stored.
    assert endpoint.embedded_texts() == [
        "Warranty\nEvery device carries a three-year warranty.",
        "warranty coverage",
    ]


def test_the_scripted_server_also_speaks_chat(endpoint):
    """The same server scripts chat completions (for the chat client's tests): rules by regex, else an echo."""
    endpoint.reply(r"capital of france", "Paris.")
    endpoint.reply(r"count (\w+)", lambda messages: str(len(messages)))

    def chat(*contents: str) -> httpx.Response:
        messages = [{"role": "user", "content": c} for c in contents]
        return httpx.post(f"{endpoint.url}/v1/chat/completions", json={"model": "m", "messages": messages})

    assert chat("What is the capital of France?").json()["choices"][0]["message"]["content"] == "Paris."
    assert chat("hello", "count these").json()["choices"][0]["message"]["content"] == "2"
    assert chat("say this back").json()["choices"][0]["message"]["content"] == "say this back"
    endpoint.fail_next(429, "malformed")
    assert chat("x").status_code == 429
    with pytest.raises(ValueError):
        chat("x").json()
    assert endpoint.count("/v1/chat/completions") == 5
