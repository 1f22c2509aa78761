"""An index saved and read back (evaluation.retrieval.search.index_format): a JSON description beside plain
arrays, so reading one runs no code. The index read back answers every kind of search exactly as the one built
(rankings and scores bit for bit, temporal filters included), and a pickle where the description should be (the
old format, or planted) is refused and rebuilt, never unpickled."""

from __future__ import annotations

import json
import pickle
from datetime import UTC, datetime

import numpy as np
import pytest

from evaluation.retrieval import index_files, indexes
from evaluation.retrieval.search import index_format
from evaluation.retrieval.search.engine import SearchConfig
from goldenset import services

PARTS = ["bm25:lucene", "bm25:okapi", "vectors"]


class Payload:
    """What a planted pickle holds: unpickling it creates a file (any other code could run instead)."""

    def __init__(self, marker) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _temporal_collection(world) -> None:
    day = lambda d: datetime(2024, 1, d, tzinfo=UTC)  # noqa: E731
    documents = [
        services.DocumentInput(
            id="policy-2023", title="Refund policy", pages=["Refunds within 14 days.", "Card."]
        ),
        services.DocumentInput(
            id="policy-2024",
            title="Refund policy",
            pages=["Refunds within 30 days of purchase.", "Refunds go to the original card."],
            valid_from=day(10),
            supersedes=["policy-2023"],
        ),
        services.DocumentInput(id="promo", pages=["A refund bonus, this week only."], valid_until=day(5)),
        services.DocumentInput(id="shipping", pages=["Orders ship within two business days."]),
    ]
    services.documents_upsert(collection=world.collection, documents=documents, actor="test")
    world.collection.refresh_from_db()


def test_an_index_read_back_answers_every_search_as_the_one_built(world):
    _temporal_collection(world)
    built = indexes.get_index(world.collection, parts=PARTS, build=True, keep=False)
    path = index_files.index_path(index_files.index_key(world.collection))
    assert path.name == "index.json" and json.loads(path.read_bytes())["format"] == index_format.FORMAT
    loaded = index_files.read_index(path)
    assert loaded is not None and all(loaded.has_part(p) for p in PARTS)
    loaded.embedder_factory = indexes.embedder_factory

    a, b = built.corpus, loaded.corpus
    assert a.temporal and b.temporal and b.texts is None
    assert (a.document_ids, a.validity, a.successors) == (b.document_ids, b.validity, b.successors)
    for name in ("page_document", "page_ids", "id_rank", "document_starts", "page_document_rows"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert (a.size, a.one_page_each) == (b.size, b.one_page_each)
    assert loaded.content_version == built.content_version == world.collection.content_version

    configs = [
        SearchConfig("FullText", bm25_variant="lucene"),
        SearchConfig("FullText", bm25_variant="okapi"),
        SearchConfig("Vector"),
        SearchConfig("Hybrid"),
        SearchConfig("Hybrid", fusion="Weighted", fulltext_weight=0.3),
        SearchConfig("FullText", as_of=datetime(2024, 1, 3, tzinfo=UTC)),
        SearchConfig("Hybrid", include_superseded=True),
    ]
    for config in configs:
        for query in ("refund card", "refunds within days", "orders ship", "bonus week"):
            want, got = built.rank_documents(query, config, 10), loaded.rank_documents(query, config, 10)
            assert got.document_ids == want.document_ids, (config, query)
            assert got.scores.tobytes() == want.scores.tobytes(), (config, query)
            assert got.page_rows.tolist() == want.page_rows.tolist(), (config, query)


def test_a_pickle_in_the_index_directory_is_never_unpickled_and_the_index_is_built(world, tmp_path, caplog):
    """The old format's description (index.pickle), or one planted where the description goes: a search never
    unpickles it (the file its payload would create does not appear), builds the index and answers."""
    marker = tmp_path / "executed"
    payload = pickle.dumps(Payload(marker))
    indexes.clear_memory()
    path = index_files.index_path(index_files.index_key(world.collection))
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.parent / "index.pickle").write_bytes(payload)
    path.write_bytes(payload)

    body = {"collection_id": "handbook", "query": "refund", "search_type": "FullText"}
    answered = world.client.post("/lmkit/v1/search", body, format="json")
    assert not marker.exists()
    assert answered.status_code == 200, answered.json()
    assert [r["document_id"] for r in answered.json()["results"]] == ["refunds"]
    assert "unreadable (not a JSON index description" in caplog.text
    assert json.loads(path.read_bytes())["format"] == index_format.FORMAT  # rebuilt in the JSON format
    assert (path.parent / "index.pickle").read_bytes() == payload  # left alone, never read


@pytest.mark.parametrize(
    "raw", [pickle.dumps({"format": 1}), b'{"format": 0}', b"[1]", b"\x80\x04K\x01."], ids=str
)
def test_a_description_that_is_not_this_formats_json_is_refused(raw):
    with pytest.raises(ValueError):
        index_format.parse(raw)
