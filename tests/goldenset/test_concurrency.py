"""Concurrent identical writes (fuzz finding 9): each answers what it would answer alone, never a 500.

The writers of a collection (and the creators of a tenant's collections) take its row lock first, so the second
of two identical writes sees the first one's rows instead of racing it into a unique constraint. Real threads,
each with its own database connection, against PostgreSQL; SQLite serializes writers by itself (IMMEDIATE
transactions), so these skip there.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from rest_framework.test import APIClient

from evalsite.tenancy.services import api_key_create, tenant_get_or_create
from goldenset import services
from goldenset.models import Collection, Document, GoldenEntry

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="needs PostgreSQL (DATABASE_URL=postgres://...)"
    ),
    pytest.mark.django_db(transaction=True),
]

API = "/lmkit/v1"
THREADS = 8


@pytest.fixture
def key() -> str:
    tenant = tenant_get_or_create(cluster_slug="acme", tenant_slug="search")
    _, secret = api_key_create(tenant=tenant, role="admin", name="tests", actor="test")
    collection = services.collection_create(tenant=tenant, slug="handbook", actor="test")
    services.documents_upsert(
        collection=collection,
        documents=[services.DocumentInput(id="refunds", pages=["Refunds."])],
        actor="test",
    )
    return secret


def _race(key: str, calls: list[Callable[[APIClient], Any]]) -> list[tuple[int, Any]]:
    """Run the calls at once, one thread and one database connection each: [(status, body)] in call order."""
    barrier = threading.Barrier(len(calls))
    results: list[tuple[int, Any] | BaseException | None] = [None] * len(calls)

    def run(index: int) -> None:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        try:
            barrier.wait(timeout=30)
            response = calls[index](client)
            body = response.json() if response.content else None
            results[index] = (response.status_code, body)
        except BaseException as exc:  # reported by the test thread
            results[index] = exc
        finally:
            connection.close()  # this thread's own connection

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a writer hung (a deadlock?)"
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return [r for r in results if isinstance(r, tuple)]


def _statuses(results: list[tuple[int, Any]]) -> list[int]:
    return sorted(status for status, _ in results)


def test_parallel_creates_of_one_collection_give_one_201_and_409s(key):
    results = _race(
        key, [lambda c: c.post(f"{API}/collections", {"collection_id": "new"}, format="json")] * THREADS
    )
    assert _statuses(results) == [201] + [409] * (THREADS - 1), results
    assert {body["error"]["code"] for status, body in results if status == 409} == {"collection-exists"}
    assert Collection.objects.filter(slug="new").count() == 1


def test_parallel_adds_of_one_question_give_one_201_and_409s(key):
    body = {"collection_id": "handbook", "entries": [{"question": "Refund window?"}]}
    results = _race(key, [lambda c: c.post(f"{API}/search/golden-set", body, format="json")] * THREADS)
    assert _statuses(results) == [201] + [409] * (THREADS - 1), results
    assert {body["error"]["code"] for status, body in results if status == 409} == {"duplicate-question"}
    assert GoldenEntry.objects.filter(question="Refund window?").count() == 1


def test_parallel_upserts_of_one_new_document_all_succeed_and_the_last_wins(key):
    def upsert(text: str) -> Callable[[APIClient], Any]:
        documents = {"documents": [{"id": "fresh", "text": text}]}
        return lambda c: c.post(f"{API}/collections/handbook/documents", documents, format="json")

    results = _race(key, [upsert(f"Version {i}.") for i in range(THREADS)])
    assert _statuses(results) == [200] * THREADS, results
    assert sum(body["created"] for _, body in results) == 1
    document = Document.objects.get(external_id="fresh")
    assert [p.text for p in document.pages.all()] in [[f"Version {i}."] for i in range(THREADS)]


def test_parallel_imports_of_one_golden_file_create_its_entries_once(key):
    golden = json.dumps([{"id": "q1", "question": "Refund window?"}, {"question": "Shipping time?"}])

    def upload(client: APIClient):
        form = {"collection_id": "handbook", "file": SimpleUploadedFile("golden.json", golden.encode())}
        return client.post(f"{API}/search/golden-set/upload", form, format="multipart")

    results = _race(key, [upload] * THREADS)
    # One import creates the two entries (201); every other finds them there, unchanged (200).
    assert _statuses(results) == [200] * (THREADS - 1) + [201], results
    assert sum(body["created"] for _, body in results) == 2
    assert sum(body["unchanged"] for _, body in results) == 2 * (THREADS - 1)
    assert GoldenEntry.objects.count() == 2


def test_parallel_edits_to_one_question_give_one_200_and_409s(key):
    collection = Collection.objects.get(slug="handbook")
    created, _ = services.golden_entries_add(
        collection=collection,
        entries=[services.EntryInput(question=f"Question {i}?") for i in range(THREADS)],
        actor="test",
    )

    def rename(entry: GoldenEntry) -> Callable[[APIClient], Any]:
        return lambda c: c.patch(f"{API}/search/golden-set/{entry.pk}", {"question": "Same?"}, format="json")

    results = _race(key, [rename(entry) for entry in created])
    assert _statuses(results) == [200] + [409] * (THREADS - 1), results
    assert GoldenEntry.objects.filter(question="Same?").count() == 1


def test_deleting_a_collection_while_it_is_written_never_fails_with_a_500(key):
    def write(i: int) -> Callable[[APIClient], Any]:
        documents = {"documents": [{"id": "refunds", "text": f"Refunds {i}."}, {"id": f"d{i}", "text": "D."}]}
        return lambda c: c.post(f"{API}/collections/handbook/documents", documents, format="json")

    calls = [write(i) for i in range(THREADS - 2)]
    calls.insert(THREADS // 2, lambda c: c.delete(f"{API}/collections/handbook"))
    calls.append(lambda c: c.delete(f"{API}/collections/handbook/documents/refunds"))
    results = _race(key, calls)
    statuses = [status for status, _ in results]
    assert statuses[THREADS // 2] == 204, results
    assert set(statuses) <= {200, 204, 404}, results
    assert not Collection.objects.filter(slug="handbook").exists()
