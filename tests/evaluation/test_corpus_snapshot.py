"""An index's corpus is read from one snapshot: documents another connection deletes between two of its reads
(the schema fuzz run deleted them while a build ran) change nothing the build sees. PostgreSQL's default
isolation gives each statement its own snapshot, so load_corpus reads in REPEATABLE READ there; SQLite's
transactions see one snapshot already."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections

from evaluation.retrieval import corpus as corpus_reading
from goldenset.models import Document
from tests.conftest import add_documents

pytestmark = pytest.mark.django_db(transaction=True)


def _delete_from_another_connection(pks: list[int]) -> None:
    """Delete documents and commit, on a connection of another thread (its own), while this one reads."""

    failed: list[BaseException] = []

    def run() -> None:
        try:
            Document.objects.filter(pk__in=pks).delete()
        except BaseException as exc:  # noqa: BLE001  (reported in the test's thread)
            failed.append(exc)
        finally:
            connections.close_all()

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive() and not failed, failed


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's per-statement snapshots")
def test_documents_deleted_between_two_reads_of_a_build_change_nothing_it_sees(world, monkeypatch):
    add_documents(world.collection, {f"doc-{i}": f"page text number {i} about refunds" for i in range(6)})
    documents = Document.objects.filter(collection=world.collection, pages__isnull=False).distinct()
    pks = list(documents.order_by("pk").values_list("pk", flat=True))
    before = sorted(documents.values_list("external_id", flat=True))
    original = corpus_reading._document_writes
    deleted = []

    def writes_after_a_delete(collection):
        if not deleted:  # between the documents' read and this one: three documents go, committed
            deleted.extend(pks[:3])
            _delete_from_another_connection(pks[:3])
        return original(collection)

    monkeypatch.setattr(corpus_reading, "_document_writes", writes_after_a_delete)
    corpus = corpus_reading.load_corpus(world.collection)
    assert deleted and Document.objects.filter(pk__in=pks).count() == len(pks) - 3  # the delete did commit
    # The build saw every document as it was when it began, ids and stamps alike.
    assert sorted(corpus.document_ids) == before and len(before) >= 6
    assert corpus.stamps is not None and len(corpus.stamps.document_updated) == len(before)
    # Texts are read as the build goes (a few thousand at a time, never all held): a page deleted meanwhile
    # reads as empty (the deletion made a new content version, built from the pages then), never a failure.
    texts = list(corpus.iter_texts())
    assert len(texts) == len(corpus.page_ids) >= len(before)
    assert sum(1 for text in texts if not text) == 3
