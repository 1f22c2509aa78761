"""An index saved and read back (evaluation.retrieval.search.index_format): a JSON description beside plain
arrays, so reading one runs no code. The index read back answers every kind of search exactly as the one built
(rankings and scores bit for bit, temporal filters included), and a pickle where the description should be (the
old format, or planted) is refused and rebuilt, never unpickled."""

from __future__ import annotations

import json
import pickle
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from evaluation.retrieval import index_files, indexes
from evaluation.retrieval.search import index_format
from evaluation.retrieval.search.corpus import Corpus
from evaluation.retrieval.search.engine import SearchConfig
from evaluation.retrieval.search.id_table import IdTable
from goldenset import services
from goldenset.temporal import ALWAYS, EPOCH, NEVER

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
    description = json.loads(path.read_bytes())
    assert path.name == "index.json" and description["format"] == index_format.FORMAT
    # the validity is two mapped arrays and the one supersession, not an entry a document in the JSON
    policy = list(built.corpus.document_ids).index("policy-2024")
    assert description["corpus"]["time"] == {"supersedes": [[policy, ["policy-2023"]]]}
    assert "validity" not in description["corpus"] and (path.parent / "corpus-valid_from.npy").is_file()
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


def _mapped(array: np.ndarray) -> bool:
    """Whether the array is a view of a file mapping (what load_mapped opens), not memory of this process."""
    while array is not None and not isinstance(array, np.memmap):
        array = array.base if isinstance(array.base, np.ndarray) else None
    return array is not None


def test_what_grows_with_the_collection_is_mapped_not_parsed(world):
    """The document ids and their first page rows are arrays every process maps (IdTable), not a list of
    strings parsed from the JSON into each process's private memory; the ids read back are the ids built."""
    built = indexes.get_index(world.collection, parts=["bm25:lucene"], build=True, keep=False)
    path = index_files.index_path(index_files.index_key(world.collection))
    description = json.loads(path.read_bytes())
    assert "document_ids" not in description["corpus"]
    assert description["corpus"]["documents"] == len(built.corpus.document_ids)
    loaded = index_files.read_index(path)
    assert loaded is not None
    ids = loaded.corpus.document_ids
    assert isinstance(ids, IdTable) and ids == built.corpus.document_ids
    assert list(ids) == list(built.corpus.document_ids)
    for array in (ids.offsets, ids.data, loaded.corpus.document_starts, loaded.corpus.id_rank):
        assert _mapped(array)


def test_an_id_table_reads_as_the_list_it_packs():
    names = ["doc-1", "", "Ünïcødé ✓", "doc-10", "z" * 300, "日本語"]
    table = IdTable.packed(names)
    assert len(table) == len(names) and list(table) == names and table == names
    assert [table[i] for i in range(len(names))] == names
    assert table[-1] == names[-1] and table[1:4] == names[1:4] and table[::-2] == names[::-2]
    assert table.take(np.array([5, 0, 5, 2])) == [names[5], names[0], names[5], names[2]]
    assert table.take(np.zeros(0, dtype=np.int64)) == []
    assert table != names[:-1] and table != [*names[:-1], "other"]
    with pytest.raises(IndexError):
        table[len(names)]
    empty = IdTable.packed([])
    assert len(empty) == 0 and list(empty) == [] and empty == []
    with pytest.raises(ValueError):
        IdTable(np.array([0, 3], dtype=np.int64), np.zeros(2, dtype=np.uint8))


@pytest.mark.parametrize("old_format", [1, 2])
def test_an_index_saved_in_an_older_format_is_still_read_and_answers_alike(world, old_format):
    """An index saved before the ids were arrays (format 1: a list in the JSON, the first rows derived), or before
    the validity was (formats 1 and 2: an entry a document in the JSON), is read as it was, not rebuilt, until
    the collection's next version saves format 3; its time filters answer alike."""
    _temporal_collection(world)
    built = indexes.get_index(world.collection, parts=PARTS, build=True, keep=False)
    path = index_files.index_path(index_files.index_key(world.collection))
    description = json.loads(path.read_bytes())
    description["format"] = old_format
    corpus = description["corpus"]
    time, ids = built.corpus.validity, list(built.corpus.document_ids)
    assert time is not None and corpus.pop("time") is not None
    corpus["validity"] = [
        [i, _iso(time.valid_from[row]), _iso(time.valid_until[row]), list(time.supersedes.get(row, ()))]
        for row, i in enumerate(ids)
    ]
    old_arrays = ["valid_from", "valid_until"]
    if old_format == 1:
        corpus["document_ids"] = ids
        del corpus["documents"]
        old_arrays += ["id_offsets", "id_bytes", "document_starts"]
    for name in old_arrays:
        (path.parent / f"corpus-{name}.npy").unlink()
    path.write_text(json.dumps(description))
    loaded = index_files.read_index(path)
    assert loaded is not None and loaded.corpus.document_ids == ids
    assert loaded.corpus.validity == built.corpus.validity
    loaded.embedder_factory = indexes.embedder_factory
    np.testing.assert_array_equal(loaded.corpus.document_starts, built.corpus.document_starts)
    for config in (
        SearchConfig("FullText"),
        SearchConfig("Hybrid"),
        SearchConfig("Vector"),
        SearchConfig("FullText", include_superseded=True),
        SearchConfig("FullText", as_of=datetime(2024, 1, 7, tzinfo=UTC)),
    ):
        want, got = (
            built.rank_documents("refund card", config, 10),
            loaded.rank_documents("refund card", config, 10),
        )
        assert (got.document_ids, got.scores.tobytes()) == (want.document_ids, want.scores.tobytes())


def _iso(value: int) -> str | None:
    """A TimeTable's microseconds as the ISO text formats 1 and 2 saved (None for an unset bound)."""
    if value in (ALWAYS, NEVER):
        return None
    return (EPOCH + timedelta(microseconds=int(value))).isoformat()


def test_an_id_table_streamed_equals_one_packed_and_sorts_in_bytes_order_as_python_does():
    """IdTable.streamed (a build's ids read a row at a time) and byte_order (the trec_eval tie order, through
    numpy on fixed-width bytes, or Python's sort for ids with a NUL byte or of very uneven lengths)."""
    import random

    from evaluation.retrieval.search.id_table import IdTable

    rng = random.Random(7)
    alphabet = ["a", "B", "é", "日", "\U0001f600", "-", "0", " "]
    for _ in range(100):
        ids = [
            "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 7))) for _ in range(rng.randint(0, 50))
        ]
        table = IdTable.streamed(iter(ids))
        assert table == IdTable.packed(ids) and list(table) == ids
        assert table.byte_order().tolist() == sorted(range(len(ids)), key=lambda i: ids[i].encode())
    for ids in (
        ["b\x00", "b", "a\x00b", "a"],
        ["x" * 5000, "b", "a", "c"],
    ):  # NUL bytes (Python sorts), uneven
        table = IdTable.streamed(iter(ids))
        assert table.byte_order().tolist() == sorted(range(len(ids)), key=lambda i: ids[i].encode())


def test_a_corpus_finds_the_rows_of_ids_by_binary_search_in_byte_order():
    """Corpus.rows_of (the supersessions' names to rows): the ids' byte order is id_rank's, for a list and for a
    mapped IdTable alike; names it does not hold are left out."""
    names = ["doc-1", "", "Ünïcødé ✓", "doc-10", "z" * 300, "日本語", "Doc-2", "doc-1 "]
    for ids in (names, IdTable.packed(names)):
        corpus = Corpus(None, np.arange(len(names)), ids, [])
        assert corpus.rows_of([*names, "ghost", "doc-", "日本"]) == {n: i for i, n in enumerate(names)}
        assert corpus.rows_of([]) == {}
