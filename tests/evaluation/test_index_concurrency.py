"""Many threads at once on one collection's index: each part is built once, nothing shared is changed under a
reader, and saving never disturbs a search (the live-server version is tests/evalsite/test_live_server.py)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from evalsite.jobs.models import Job, JobStatus
from evaluation.configs import RunConfig
from evaluation.models import EvaluationJobKind
from evaluation.retrieval import index_files, indexes
from evaluation.retrieval.read_path import search
from evaluation.retrieval.search.engine import VECTORS, SearchConfig, SearchIndex
from tests.conftest import add_documents

pytestmark = pytest.mark.django_db(transaction=True)  # the threads read what the test wrote


def _corpus(world, count: int = 60) -> None:
    add_documents(
        world.collection,
        {
            f"doc-{i}": f"Document {i} is about topic {i % 7} and subject {i % 11}, with refunds."
            for i in range(count)
        },
    )


def test_thirty_concurrent_first_hybrid_searches_build_each_part_once(world):
    _corpus(world)
    # The ingest queued the build of the new version's index (run inline: django-q's sync mode): BM25 only,
    # the part every collection gets; the vectors are built when a search first asks for them.
    world.collection.refresh_from_db()
    build = Job.objects.get(
        collection=world.collection,
        kind=EvaluationJobKind.INDEX_BUILD,
        input__content_version=world.collection.content_version,
    )
    assert (build.status, build.result["parts"]) == (JobStatus.COMPLETED, ["bm25:lucene"])
    config = RunConfig(label="Hybrid", search_type="Hybrid")
    barrier = threading.Barrier(30)

    def one(i: int) -> dict:
        try:
            barrier.wait()
            return search(
                collections=[world.collection], query=f"topic {i % 7} refunds", config=config, top_k=5
            )
        finally:
            connection.close()

    with ThreadPoolExecutor(30) as pool:
        bodies = list(pool.map(one, range(30)))
    assert all(len(body["results"]) == 5 for body in bodies)
    infos = [body["index"] for body in bodies]
    assert sum(i["built"] for i in infos) == 0  # the corpus was read by the build job
    assert sum(i["parts_built"] for i in infos) == 1  # the vectors, once
    # The same query answers the same whoever built the index.
    same = [b["results"] for b in bodies if b["query"] == "topic 3 refunds"]
    assert len(same) > 1 and all(r == same[0] for r in same)


def test_a_process_that_finds_the_saved_file_loads_it_instead_of_building(world):
    _corpus(world)
    config = RunConfig(label="Hybrid", search_type="Hybrid")
    first = search(collections=[world.collection], query="topic 1", config=config, top_k=3)
    indexes.clear_memory()  # another process: nothing in memory, the file on disk
    again = search(collections=[world.collection], query="topic 1", config=config, top_k=3)
    # The ingest's build job built and saved BM25; the first Hybrid search added the vectors.
    assert (first["index"]["built"], first["index"]["parts_built"]) == (0, 1)
    assert (again["index"]["built"], again["index"]["parts_built"], again["index"]["loaded"]) == (0, 0, 1)
    assert again["results"] == first["results"]


def test_a_part_saved_by_another_process_is_adopted_not_rebuilt(world):
    """Process A saved FullText; process B (a fresh memory) adds the vectors; A, asking for vectors next,
    reloads the file B wrote instead of building them again."""
    _corpus(world)
    fulltext = RunConfig(label="FullText", search_type="FullText")
    vector = RunConfig(label="Vector", search_type="Vector")
    search(collections=[world.collection], query="topic 1", config=fulltext, top_k=3)
    in_a = dict(indexes._memory)
    indexes.clear_memory()
    search(collections=[world.collection], query="topic 1", config=vector, top_k=3)  # "B" saves the vectors
    indexes.clear_memory()
    indexes._memory.update(in_a)  # back in "A", whose index has no vectors and whose file is out of date
    body = search(collections=[world.collection], query="topic 1", config=vector, top_k=3)
    assert body["index"]["parts_built"] == 0 and body["index"]["loaded"] == 1


def test_saving_an_index_never_changes_it_and_loses_no_part(world):
    _corpus(world, 20)
    index = indexes.get_index(world.collection, parts={"bm25:lucene", VECTORS})
    factory = index.embedder_factory
    path = index_files.index_path(index_files.index_key(world.collection))
    index_files.write_index(world.collection, path, index)
    copy = index_files.read_index(path)
    assert copy is not None
    assert index.embedder_factory is factory  # the shared object was not touched
    assert copy.embedder_factory is None and copy.has_part("bm25:lucene") and copy.has_part(VECTORS)
    query = SearchConfig(search_type="Hybrid")
    copy.embedder_factory = factory
    assert (
        copy.rank_documents("topic 2", query, 5).document_ids
        == index.rank_documents("topic 2", query, 5).document_ids
    )


def test_parts_for_names_what_each_search_reads():
    assert SearchIndex.parts_for(SearchConfig("FullText")) == {"bm25:lucene"}
    assert SearchIndex.parts_for(SearchConfig("Vector")) == {VECTORS}
    assert SearchIndex.parts_for(SearchConfig("Hybrid", bm25_variant="okapi")) == {"bm25:okapi", VECTORS}
    assert SearchIndex.parts_for(SearchConfig("Vector", rerank="proximity")) == {"bm25:lucene", VECTORS}
