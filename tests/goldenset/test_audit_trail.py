"""The audit trail of every write made over the API and by the commands: one event per write, naming the
tenant, the actor, the action, the object and what changed, written in the write's own transaction."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import transaction
from django.test import override_settings

from evalsite.audit.models import AuditEvent
from evalsite.jobs.models import Job
from evalsite.tenancy.models import ApiKey
from evalsite.tenancy.services import api_key_create, api_key_revoke
from goldenset import services
from goldenset.models import Collection, Document, GoldenEntry

DOCS = "/lmkit/v1/collections/handbook/documents"
SCOPE = {"cluster_id": "acme", "tenant_id": "search"}


def key_actor(world) -> str:
    return f"api-key:{world.key[:12]}"


def new_events(since: int) -> list[dict]:
    """The events written after the event id `since`, oldest first, as plain values."""
    return [
        {
            "tenant": e.tenant.slug,
            "collection": e.collection_slug,
            "type": e.object_type,
            "id": e.object_id,
            "action": e.action,
            "actor": e.actor,
            "changes": e.changes,
        }
        for e in AuditEvent.objects.filter(pk__gt=since).select_related("tenant").order_by("pk")
    ]


def last_id() -> int:
    return AuditEvent.objects.order_by("-pk").values_list("pk", flat=True).first() or 0


# --- collections -------------------------------------------------------------------------------------------


def test_creating_a_collection_over_the_api_is_audited_as_the_key(world):
    since = last_id()
    response = world.client.post(
        "/lmkit/v1/collections", {**SCOPE, "collection_id": "faq", "name": "FAQ"}, format="json"
    )
    assert response.status_code == 201, response.json()
    assert new_events(since) == [
        {
            "tenant": "search",
            "collection": "faq",
            "type": "collection",
            "id": "faq",
            "action": "create",
            "actor": key_actor(world),
            "changes": {"name": "FAQ"},
        }
    ]
    event = AuditEvent.objects.get(pk__gt=since)
    assert event.collection_uid == Collection.objects.get(tenant=world.tenant, slug="faq").uid


def test_a_refused_collection_create_writes_no_event(world):
    since = last_id()
    response = world.client.post(
        "/lmkit/v1/collections", {**SCOPE, "collection_id": "handbook"}, format="json"
    )
    assert response.status_code == 409
    assert new_events(since) == []


# --- documents ---------------------------------------------------------------------------------------------


def test_an_ingest_is_one_event_with_its_counts_and_ids(world):
    since = last_id()
    response = world.client.post(
        DOCS,
        {**SCOPE, "documents": [{"id": "refunds", "text": "Refunds changed."}, {"id": "faq", "text": "Q."}]},
        format="json",
    )
    assert response.status_code == 200, response.json()
    assert new_events(since) == [
        {
            "tenant": "search",
            "collection": "handbook",
            "type": "document",
            "id": "2 documents",
            "action": "ingest",
            "actor": key_actor(world),
            "changes": {
                "received": 2,
                "created": 1,
                "updated": 1,
                "unchanged": 0,
                "pages_written": 2,
                "pages_deleted": 0,
                "created_ids": ["faq"],
                "updated_ids": ["refunds"],
            },
        }
    ]


def test_an_ingest_that_changes_nothing_writes_no_event(world):
    since = last_id()
    body = {
        **SCOPE,
        "documents": [
            {
                "id": "shipping",
                "title": "Shipping",
                "text": Document.objects.get(collection=world.collection, external_id="shipping")
                .pages.get()
                .text,
            }
        ],
    }
    response = world.client.post(DOCS, body, format="json")
    assert response.status_code == 200 and response.json()["unchanged"] == 1, response.json()
    assert new_events(since) == []


def test_an_upload_names_its_files(world):
    since = last_id()
    files = [
        SimpleUploadedFile("a.md", b"# Alpha\n\nAlpha text.", content_type="text/markdown"),
        SimpleUploadedFile("b.txt", b"Beta text.", content_type="text/plain"),
    ]
    response = world.client.post(
        "/lmkit/v1/collections/handbook/uploads", {"file": files}, format="multipart"
    )
    assert response.status_code == 200, response.json()
    (event,) = new_events(since)
    assert (event["action"], event["actor"]) == ("ingest", key_actor(world))
    assert event["changes"]["source"] == "upload: a.md, b.txt"
    assert sorted(event["changes"]["created_ids"]) == ["a", "b"]


@override_settings(EVALSITE_INGEST_JOB_THRESHOLD_DOCUMENTS=1)
def test_a_large_ingest_audits_its_launch_and_its_writes_as_the_key(
    world, django_capture_on_commit_callbacks
):
    since = last_id()
    documents = [{"id": "n1", "text": "One."}, {"id": "n2", "text": "Two."}]
    with django_capture_on_commit_callbacks(execute=True):
        response = world.client.post(DOCS, {**SCOPE, "documents": documents}, format="json")
    assert response.status_code == 202, response.json()
    job = Job.objects.get(pk=response.json()["job_id"])
    launch, ingest = new_events(since)
    assert launch == {
        "tenant": "search",
        "collection": "handbook",
        "type": "job",
        "id": str(job.pk),
        "action": "launch",
        "actor": key_actor(world),
        "changes": {"kind": "Ingest"},
    }
    assert (ingest["action"], ingest["actor"], ingest["changes"]["source"]) == (
        "ingest",
        key_actor(world),
        f"job {job.pk}",
    )
    assert ingest["changes"]["created_ids"] == ["n1", "n2"]


def test_deleting_a_document_records_what_it_was(world):
    since = last_id()
    response = world.client.delete(f"{DOCS}/refunds", SCOPE)
    assert response.status_code == 204
    assert new_events(since) == [
        {
            "tenant": "search",
            "collection": "handbook",
            "type": "document",
            "id": "refunds",
            "action": "delete",
            "actor": key_actor(world),
            "changes": {"title": "Refunds", "source": "", "pages": 1},
        }
    ]


def test_another_tenants_delete_is_a_404_and_writes_nothing(world):
    since = last_id()
    response = world.other_client.delete(f"{DOCS}/shipping")
    assert response.status_code == 404
    assert new_events(since) == []
    assert Document.objects.filter(collection=world.collection, external_id="shipping").exists()


# --- golden entries and generation -------------------------------------------------------------------------


def test_golden_writes_over_the_api_name_the_key(world):
    since = last_id()
    response = world.client.post(
        "/lmkit/v1/search/golden-set",
        {
            **SCOPE,
            "collection_id": "handbook",
            "entries": [{"question": "Refunds?", "expected_document_ids": ["refunds"]}],
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    entry_id = response.json()["entries"][0]["id"]
    assert world.client.delete(f"/lmkit/v1/search/golden-set/{entry_id}", SCOPE).status_code == 204
    events = new_events(since)
    assert [(e["type"], e["id"], e["action"], e["actor"]) for e in events] == [
        ("golden-entry", entry_id, "create", key_actor(world)),
        ("golden-entry", entry_id, "delete", key_actor(world)),
    ]


def test_a_generation_job_launch_is_audited(world, django_capture_on_commit_callbacks):
    since = last_id()
    with django_capture_on_commit_callbacks(execute=True):
        response = world.client.post(
            "/lmkit/v1/search/golden-set/generate",
            {**SCOPE, "collection_id": "handbook", "count": 1, "seed": 7},
            format="json",
        )
    assert response.status_code == 202, response.json()
    launch = new_events(since)[0]
    assert (launch["type"], launch["id"], launch["action"], launch["actor"], launch["changes"]) == (
        "job",
        response.json()["job_id"],
        "launch",
        key_actor(world),
        {"kind": "Generate"},
    )


# --- API keys and commands ---------------------------------------------------------------------------------


def test_createapikey_is_audited_as_the_command_without_the_secret(db):
    out = StringIO()
    call_command(
        "createapikey", "--cluster", "c", "--tenant", "t", "--role", "evaluator", "--name", "ci", stdout=out
    )
    secret = out.getvalue().strip().splitlines()[-1]
    key = ApiKey.objects.get()
    (event,) = AuditEvent.objects.all()
    assert (event.tenant, event.object_type, event.object_id, event.action, event.actor, event.changes) == (
        key.tenant,
        "api-key",
        key.prefix,
        "create",
        "command:createapikey",
        {"name": "ci", "role": "evaluator"},
    )
    assert secret not in json.dumps(event.changes) and key.key_hash not in json.dumps(event.changes)


def test_revoking_twice_writes_one_event(world):
    key = ApiKey.objects.get(tenant=world.tenant)
    since = last_id()
    assert api_key_revoke(key=key, actor="user:ops") is True
    with transaction.atomic():
        assert api_key_revoke(key=key, actor="user:ops") is False
    assert [(e["action"], e["id"], e["actor"]) for e in new_events(since)] == [
        ("revoke", key.prefix, "user:ops")
    ]


def test_import_golden_names_the_command(world, tmp_path):
    path = tmp_path / "golden.json"
    path.write_text(json.dumps([{"question": "Refunds?", "must_cite": ["refunds"]}]))
    since = last_id()
    call_command(
        "import_golden",
        str(path),
        "--cluster",
        "acme",
        "--tenant",
        "search",
        "--collection",
        "handbook",
        stdout=StringIO(),
    )
    assert [(e["type"], e["action"], e["actor"]) for e in new_events(since)] == [
        ("golden-entry", "create", "command:import_golden")
    ]


# --- one transaction ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "write",
    [
        lambda w: services.collection_create(tenant=w.tenant, slug="faq", actor="t"),
        lambda w: services.documents_upsert(
            collection=w.collection, documents=[services.DocumentInput(id="x", pages=["X."])], actor="t"
        ),
        lambda w: services.document_delete(
            document=Document.objects.get(collection=w.collection, external_id="refunds"), actor="t"
        ),
        lambda w: api_key_create(tenant=w.tenant, role="admin", name="n", actor="t"),
        lambda w: services.collection_delete(collection=w.collection, actor="t"),
        lambda w: services.golden_entries_add(
            collection=w.collection, entries=[services.EntryInput(question="Q?")], actor="t"
        ),
    ],
    ids=["collection-create", "ingest", "document-delete", "key-create", "collection-delete", "golden-add"],
)
def test_a_write_rolled_back_leaves_no_event(world, write):
    """The event is written in the write's transaction: when that transaction fails after the write, the
    write and its event go together."""
    state = (
        last_id(),
        Collection.objects.count(),
        Document.objects.count(),
        ApiKey.objects.count(),
        GoldenEntry.objects.count(),
    )
    with pytest.raises(RuntimeError), transaction.atomic():
        write(world)
        assert last_id() > state[0]  # the event was there, inside the transaction
        raise RuntimeError("the request fails after the write")
    after = (
        last_id(),
        Collection.objects.count(),
        Document.objects.count(),
        ApiKey.objects.count(),
        GoldenEntry.objects.count(),
    )
    assert after == state


def test_documents_of_another_collection_are_never_deleted_under_this_one(world):
    """The event names the collection given: a document of another one (another tenant's) is refused."""
    rival = Document.objects.get(collection__tenant=world.other_tenant, external_id="refunds")
    since = last_id()
    with pytest.raises(ValueError):
        services.documents_delete(collection=world.collection, documents=[rival], actor="t")
    assert Document.objects.filter(pk=rival.pk).exists() and new_events(since) == []
