"""A BEIR corpus is read and written a batch at a time (bounded memory), in one transaction all the same."""

from __future__ import annotations

import json
import time
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from evalsite.audit.models import AuditEvent
from evalsite.errors import EvalsiteError
from evalsite.tenancy.services import tenant_get_or_create
from goldenset import importers, services
from goldenset.beir_import import beir_import
from goldenset.models import Collection, Document, GoldenEntry, Page
from goldenset.services import content
from goldenset.services import written as written_module

pytestmark = pytest.mark.django_db
BATCH = 10


@pytest.fixture
def small_batches(monkeypatch):
    monkeypatch.setattr(content, "DOCUMENT_BATCH", BATCH)


def corpus_row(number: int) -> str:
    return json.dumps({"_id": f"d{number}", "title": f"Doc {number}", "text": f"Body of document {number}."})


def beir_folder(path: Path, corpus: list[str]) -> Path:
    path.mkdir()
    (path / "corpus.jsonl").write_text("".join(f"{line}\n" for line in corpus), encoding="utf-8")
    (path / "queries.jsonl").write_text('{"_id": "q1", "text": "Where is document 1?"}\n', encoding="utf-8")
    (path / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n", encoding="utf-8")
    return path


def test_the_corpus_is_written_a_batch_at_a_time_as_it_is_read(tmp_path, small_batches):
    """At each progress report the batches so far are in the database and the file is not yet read through:
    the importer holds one batch, never the corpus."""
    folder = beir_folder(tmp_path / "big", [corpus_row(i) for i in range(1, 36)])
    tenant = tenant_get_or_create(cluster_slug="demo", tenant_slug="demo")
    seen = []

    def progress(documents: int, read: int, size: int) -> None:
        seen.append((documents, Document.objects.count(), Page.objects.count(), read < size))

    result = beir_import(folder=folder, tenant=tenant, collection_id="big", actor="test", progress=progress)
    assert seen == [
        (10, 10, 10, True),
        (20, 20, 20, True),
        (30, 30, 30, True),
        (35, 35, 35, False),  # the last, shorter batch, then the end
    ]
    assert result == {
        "documents": 35,
        "documents_created": 35,
        "documents_updated": 0,
        "pages_written": 35,
        "queries": 1,
        "entries_created": 1,
        "entries_updated": 0,
        "qrels_without_query": 0,
    }
    collection = Collection.objects.get(slug="big")
    assert collection.content_version == 1  # bumped once for the import, not once per batch
    ingests = AuditEvent.objects.filter(object_type="document", action="ingest")
    assert [(e.object_id, e.changes["created"], len(e.changes["created_ids"])) for e in ingests] == [
        ("35 documents", 35, 20)
    ]
    assert collection.documents.get(external_id="d35").pages.get().text == "Body of document 35."
    assert GoldenEntry.objects.get().expected_document_ids == ["d1"]


def fails(folder: Path) -> str:
    out, err = StringIO(), StringIO()
    with pytest.raises(SystemExit) as info:
        call_command(
            "import_beir", str(folder), cluster="demo", tenant="demo", collection="c", stdout=out, stderr=err
        )
    assert info.value.code == 2
    return err.getvalue().strip()


def assert_nothing_written():
    for model in (Collection, Document, Page, GoldenEntry, AuditEvent):
        assert model.objects.count() == 0, model.__name__


def test_a_malformed_line_after_several_batches_refuses_the_whole_import(tmp_path, small_batches):
    corpus = [corpus_row(i) for i in range(1, 36)]
    corpus[32] = '{"_id": "d33" "text": "no comma"}'
    folder = beir_folder(tmp_path / "broken", corpus)
    assert fails(folder) == "error [beir-invalid] corpus.jsonl line 33, column 15: Expecting ',' delimiter"
    assert_nothing_written()  # three batches were written, and rolled back


def test_a_qrels_row_judging_a_document_the_corpus_lacks_is_refused_after_the_corpus(tmp_path, small_batches):
    folder = beir_folder(tmp_path / "broken", [corpus_row(i) for i in range(1, 26)])
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td99\t0\n", encoding="utf-8")
    assert fails(folder) == (
        "error [beir-invalid] qrels.tsv line 3: query q1 judges document d99, which is not in corpus.jsonl"
    )
    assert_nothing_written()


def test_a_bad_query_is_refused_before_the_corpus_is_read(tmp_path, small_batches, monkeypatch):
    folder = beir_folder(tmp_path / "broken", [corpus_row(i) for i in range(1, 26)])
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": ""}\n', encoding="utf-8")
    monkeypatch.setattr(importers.beir, "read_corpus", None)  # would fail loudly if called
    assert fails(folder) == 'error [beir-invalid] queries.jsonl line 1: field "text" (the question) is empty'
    assert_nothing_written()


def test_an_id_repeated_in_a_later_batch_replaces_the_earlier(tmp_path, small_batches):
    corpus = [corpus_row(i) for i in range(1, 16)]
    corpus.append(json.dumps({"_id": "d2", "title": "Doc 2 again", "text": "The last one wins."}))
    folder = beir_folder(tmp_path / "repeated", corpus)
    tenant = tenant_get_or_create(cluster_slug="demo", tenant_slug="demo")
    result = beir_import(folder=folder, tenant=tenant, collection_id="c", actor="test")
    assert (result["documents"], result["documents_created"], result["documents_updated"]) == (16, 15, 1)
    document = Document.objects.get(external_id="d2")
    assert (document.title, document.pages.get().text) == ("Doc 2 again", "The last one wins.")
    assert Document.objects.count() == 15


def test_a_corpus_of_several_default_batches_imports_whole(tmp_path):
    """Past DOCUMENT_BATCH (the real size) every document and page is there; re-importing changes nothing."""
    count = content.DOCUMENT_BATCH * 2 + 7
    folder = beir_folder(tmp_path / "large", [corpus_row(i) for i in range(1, count + 1)])
    out = StringIO()
    call_command(
        "import_beir", str(folder), cluster="demo", tenant="demo", collection="large", stdout=out, verbosity=2
    )
    lines = out.getvalue().splitlines()
    assert [line.split(" (")[0] for line in lines[:-1]] == [
        f"  {content.DOCUMENT_BATCH} documents written",
        f"  {content.DOCUMENT_BATCH * 2} documents written",
        f"  {count} documents written",
    ]
    assert lines[-1] == (
        f"large: {count} documents ({count} created, 0 updated, {count} pages written), 1 queries -> "
        "1 golden entries created, 0 updated"
    )
    assert Document.objects.count() == count and Page.objects.count() == count
    version = Collection.objects.get(slug="large").content_version

    tenant = tenant_get_or_create(cluster_slug="demo", tenant_slug="demo")
    again = beir_import(folder=folder, tenant=tenant, collection_id="large", actor="test")
    assert (again["documents_created"], again["documents_updated"], again["pages_written"]) == (0, 0, 0)
    assert Collection.objects.get(slug="large").content_version == version


def test_the_error_of_a_generator_rolls_back_the_batches_written_before_it(world, small_batches):
    """documents_upsert itself: a generator that raises midway leaves the collection as it was."""

    def documents():
        for number in range(25):
            yield services.DocumentInput(id=f"g{number}", pages=[f"Page {number}."])
        raise EvalsiteError("beir-invalid", "line 26: broken")

    before = (Document.objects.count(), Page.objects.count(), world.collection.content_version)
    with pytest.raises(EvalsiteError):
        services.documents_upsert(collection=world.collection, documents=documents(), actor="test")
    world.collection.refresh_from_db()
    assert (Document.objects.count(), Page.objects.count(), world.collection.content_version) == before


def test_a_large_transaction_refreshes_the_planner_statistics_as_it_grows_on_postgresql(world, monkeypatch):
    """Each batch looks up its ids; planned on the statistics of an empty collection, that lookup read every
    document the transaction had written (an 8.8M-document import slowed to a crawl). The import ANALYZEs the
    tables once it has written STATISTICS_FROM documents and each time that doubles; on PostgreSQL only."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    monkeypatch.setattr(written_module, "STATISTICS_FROM", 20)
    documents = [services.DocumentInput(id=f"d{n}", pages=[f"Body of document {n}."]) for n in range(170)]
    with CaptureQueriesContext(connection) as queries:
        written = services.documents_upsert(
            collection=world.collection, documents=iter(documents), actor="test", batch_size=10
        )
    analyzed = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("ANALYZE")]
    if connection.vendor != "postgresql":
        assert analyzed == []
        return
    assert analyzed == ["ANALYZE goldenset_document, goldenset_page"] * 4  # at 20, 40, 80 and 160 written
    assert written["created"] == 170


def test_a_refresh_never_waits_on_another_transactions_statistics_lock(world, monkeypatch, caplog):
    """ANALYZE's lock is held to the end of the transaction that took it: another large import's is never waited
    on (100 ms at most); the refresh is tried again later and the import completes all the same."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("the statistics are refreshed on PostgreSQL only")
    import psycopg

    monkeypatch.setattr(written_module, "STATISTICS_FROM", 20)
    settings = connection.settings_dict
    other = psycopg.connect(
        host=settings["HOST"], port=settings["PORT"], user=settings["USER"], dbname=settings["NAME"]
    )
    other.execute(
        "ANALYZE goldenset_document"
    )  # psycopg opened a transaction: the lock is held until it ends
    try:
        documents = [services.DocumentInput(id=f"d{n}", pages=[f"Body {n}."]) for n in range(90)]
        started = time.monotonic()
        caplog.set_level("INFO", logger="goldenset.services.written")
        written = services.documents_upsert(
            collection=world.collection, documents=iter(documents), actor="test", batch_size=10
        )
        seconds = time.monotonic() - started
    finally:
        other.rollback()
        other.close()
    assert written["created"] == 90
    refused = [r.message for r in caplog.records if "not refreshed" in r.message]
    assert len(refused) == 4, refused
    assert seconds < 5, seconds  # 20, 40, 60, 80 written: four refusals of 100 ms, not a wait on the other
