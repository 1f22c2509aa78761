"""The lmkit collection endpoints: create, list, get, delete; the database state asserted each time."""

from __future__ import annotations

from evalsite.audit.models import AuditEvent
from evalsite.jobs.models import Job
from goldenset.models import Collection, Document, GoldenEntry, GoldenJobKind, Page
from goldenset.services import EntryInput
from tests.support import add_entries, iso

URL = "/lmkit/v1/collections"


def collection_json(collection: Collection, **counts) -> dict:
    collection.refresh_from_db()
    return {
        "collection_id": collection.slug,
        "name": collection.name,
        "cluster_id": collection.tenant.cluster.slug,
        "tenant_id": collection.tenant.slug,
        "content_version": collection.content_version,
        "grade_scale": collection.grade_scale,
        **counts,
        "created_at": iso(collection.created_at),
        "updated_at": iso(collection.updated_at),
    }


def test_it_creates_a_collection(world):
    response = world.client.post(
        URL,
        {"cluster_id": "acme", "tenant_id": "search", "collection_id": "faq", "name": "Frequent questions"},
        format="json",
    )
    assert response.status_code == 201, response.json()
    collection = Collection.objects.get(tenant=world.tenant, slug="faq")
    assert collection.name == "Frequent questions" and collection.content_version == 0
    assert response.json() == collection_json(collection)
    assert response.json()["content_version"] == 0
    assert Collection.objects.filter(slug="faq").count() == 1


def test_a_collection_without_a_name_is_named_after_its_id(world):
    response = world.client.post(URL, {"collection_id": "  faq  "}, format="json")
    assert response.status_code == 201, response.json()
    collection = Collection.objects.get(tenant=world.tenant, slug="faq")
    assert collection.name == "faq"
    assert response.json() == collection_json(collection)


def test_it_refuses_a_collection_that_exists(world):
    before = Collection.objects.get(pk=world.collection.pk)
    response = world.client.post(URL, {"collection_id": "handbook", "name": "Other"}, format="json")
    assert response.status_code == 409
    assert response.json() == {
        "error": {
            "code": "collection-exists",
            "message": "Collection handbook already exists.",
            "details": {"collection_id": "handbook"},
        }
    }
    assert Collection.objects.filter(tenant=world.tenant).count() == 1
    world.collection.refresh_from_db()
    assert world.collection.name == before.name == "Handbook"


def test_the_same_id_may_exist_in_another_tenant(world):
    response = world.other_client.post(URL, {"collection_id": "faq"}, format="json")
    assert response.status_code == 201, response.json()
    assert world.client.post(URL, {"collection_id": "faq"}, format="json").status_code == 201
    assert sorted(Collection.objects.filter(slug="faq").values_list("tenant__slug", flat=True)) == [
        "rival",
        "search",
    ]


def test_it_lists_the_tenants_collections_with_their_counts(world):
    add_entries(world.collection, EntryInput(question="Refund window?", expected_document_ids=["refunds"]))
    assert world.client.post(URL, {"collection_id": "archive"}, format="json").status_code == 201
    response = world.client.get(URL, {"cluster_id": "acme", "tenant_id": "search"})
    assert response.status_code == 200, response.json()
    archive = Collection.objects.get(tenant=world.tenant, slug="archive")
    assert response.json() == {
        "count": 2,
        "next": None,
        "previous": None,
        "results": [
            collection_json(archive, document_count=0, golden_entry_count=0),
            collection_json(world.collection, document_count=3, golden_entry_count=1),
        ],
    }


def test_the_list_is_paginated(world):
    for slug in ("a", "b", "c"):
        world.client.post(URL, {"collection_id": slug}, format="json")
    body = world.client.get(URL, {"page_size": 2, "page": 2}).json()
    assert body["count"] == 4
    assert [c["collection_id"] for c in body["results"]] == ["c", "handbook"]
    assert body["next"] is None and body["previous"].endswith("page_size=2")
    assert Collection.objects.filter(tenant=world.tenant).count() == 4


def test_it_gets_one_collection_with_its_counts(world):
    add_entries(world.collection, "One?", "Two?")
    response = world.client.get(f"{URL}/handbook", {"tenant_id": "search"})
    assert response.status_code == 200, response.json()
    assert response.json() == collection_json(world.collection, document_count=3, golden_entry_count=2)
    assert response.json()["content_version"] == 1


def test_it_answers_404_for_a_missing_collection(world):
    response = world.client.get(f"{URL}/nope")
    assert response.status_code == 404
    assert response.json() == {
        "error": {
            "code": "not-found",
            "message": "Collection nope not found.",
            "details": {"resource": "Collection", "id": "nope"},
        }
    }


def test_it_deletes_a_collection_with_its_content(world):
    (entry,) = add_entries(
        world.collection, EntryInput(question="Refund window?", expected_document_ids=["refunds"])
    )
    job = Job.objects.create(tenant=world.tenant, kind=GoldenJobKind.INGEST, collection=world.collection)
    rival = Collection.objects.get(tenant=world.other_tenant, slug="handbook")
    rival_documents = Document.objects.filter(collection=rival).count()
    audit_events = AuditEvent.objects.count()
    deleted_by = f"api-key:{world.key[:12]}"

    response = world.client.delete(f"{URL}/handbook?cluster_id=acme&tenant_id=search")
    assert response.status_code == 204
    assert response.content == b""
    assert not Collection.objects.filter(pk=world.collection.pk).exists()
    assert not Document.objects.filter(collection_id=world.collection.pk).exists()
    assert not Page.objects.filter(document__collection_id=world.collection.pk).exists()
    assert not GoldenEntry.objects.filter(collection_id=world.collection.pk).exists()
    # The job outlives its collection; the audit trail is kept and records the collection's deletion and
    # each entry's; the rival's same-named collection is untouched.
    job.refresh_from_db()
    assert job.collection is None
    assert AuditEvent.objects.count() == audit_events + 2
    gone = AuditEvent.objects.get(object_type="collection", action="delete")
    assert (gone.object_id, gone.collection_uid, gone.actor) == ("handbook", world.collection.uid, deleted_by)
    assert gone.changes == {"name": "Handbook", "documents": 3, "golden_entries": 1}
    deleted = AuditEvent.objects.get(object_id=str(entry.pk), action="delete")
    assert deleted.actor == deleted_by and deleted.collection_slug == "handbook"
    assert deleted.changes["question"] == "Refund window?"
    assert Collection.objects.filter(pk=rival.pk).exists()
    assert Document.objects.filter(collection=rival).count() == rival_documents == 1
    assert world.client.get(f"{URL}/handbook").status_code == 404


def test_deleting_a_missing_collection_answers_404_and_deletes_nothing(world):
    response = world.client.delete(f"{URL}/nope")
    assert response.status_code == 404
    assert response.json()["error"]["details"] == {"resource": "Collection", "id": "nope"}
    assert Collection.objects.count() == 2 and Document.objects.count() == 4
