"""Golden files over HTTP: upload a golden.json, export one; the database state asserted each time."""

from __future__ import annotations

import json

from django.core.files.uploadedfile import SimpleUploadedFile

from evalsite.audit.models import AuditEvent
from goldenset.golden_files import GoldenRecord, parse_golden
from goldenset.models import GoldenEntry, Origin
from goldenset.services import EntryInput, collection_create
from tests.conftest import add_documents
from tests.support import add_entries, imported

UPLOAD = "/lmkit/v1/search/golden-set/upload"
EXPORT = "/lmkit/v1/search/golden-set/export"

RECORDS = [
    {
        "id": "refund-window",
        "question": "How long do customers have to request a refund?",
        "expected_answer": "Customers get a full refund within 30 days.",
        "must_cite": ["refunds"],
        "tags": ["policy"],
    },
    {"id": "express", "question": "How fast is express shipping?", "must_cite": ["shipping"]},
    {"question": "Who is the CEO of Mars?", "answerable": False},
]


def golden_file(content: str | bytes, name: str = "golden.json") -> SimpleUploadedFile:
    data = content.encode() if isinstance(content, str) else content
    return SimpleUploadedFile(name, data, content_type="application/json")


def upload(client, content, **fields):
    body = {"collection_id": "handbook", "file": golden_file(content), **fields}
    return client.post(UPLOAD, body, format="multipart")


def test_upload_loads_a_golden_file(world):
    response = upload(world.client, json.dumps(RECORDS, indent=2), cluster_id="acme", tenant_id="search")
    assert response.status_code == 201, response.json()
    assert response.json() == imported(records=3, created=3)
    rows = list(
        world.collection.golden_entries.order_by("created_at", "id").values(
            "key", "question", "expected_document_ids", "reference_answer", "tags", "answerable", "origin"
        )
    )
    assert rows == [
        {
            "key": "refund-window",
            "question": "How long do customers have to request a refund?",
            "expected_document_ids": ["refunds"],
            "reference_answer": "Customers get a full refund within 30 days.",
            "tags": ["policy"],
            "answerable": True,
            "origin": Origin.IMPORTED,
        },
        {
            "key": "express",
            "question": "How fast is express shipping?",
            "expected_document_ids": ["shipping"],
            "reference_answer": "",
            "tags": [],
            "answerable": True,
            "origin": Origin.IMPORTED,
        },
        {
            "key": "",
            "question": "Who is the CEO of Mars?",
            "expected_document_ids": [],
            "reference_answer": "",
            "tags": [],
            "answerable": False,
            "origin": Origin.IMPORTED,
        },
    ]
    events = AuditEvent.objects.filter(object_type="golden-entry", action="create")
    assert events.count() == 3 and all(e.actor.startswith("api-key:esk_") for e in events)
    assert not GoldenEntry.objects.filter(collection__tenant=world.other_tenant).exists()


def test_upload_again_updates_records_by_id(world):
    upload(world.client, json.dumps(RECORDS))
    changed = [{**RECORDS[1], "expected_answer": "Next day."}]
    response = upload(world.client, json.dumps(changed))
    assert response.status_code == 200, response.json()  # nothing created
    assert response.json() == imported(records=1, updated=1)
    assert world.collection.golden_entries.count() == 3
    assert world.collection.golden_entries.get(key="express").reference_answer == "Next day."


def test_upload_with_a_syntax_error_answers_golden_invalid_with_line_and_column(world):
    response = upload(world.client, '[\n  {"question": "ok?"},\n  {"question": "broken?" "x": 1}\n]\n')
    assert response.status_code == 400
    assert response.json() == {
        "error": {
            "code": "golden-invalid",
            "message": "golden.json line 3, column 26: Expecting ',' delimiter",
            "details": {"line": 3, "column": 26},
        }
    }
    assert (
        GoldenEntry.objects.count() == 0
        and AuditEvent.objects.filter(object_type="golden-entry").count() == 0
    )


def test_upload_of_a_non_utf8_file_answers_golden_invalid(world):
    response = upload(world.client, b'[{"question": "caf\xe9?"}]')
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "golden-invalid"
    assert response.json()["error"]["details"] == {"line": 1, "column": 19}
    assert GoldenEntry.objects.count() == 0


def test_upload_with_a_schema_error_answers_golden_schema_naming_the_record(world):
    records = [RECORDS[0], {"id": "bad", "question": "Which card?", "must_cite": "refunds"}]
    response = upload(world.client, "[\n" + ",\n".join(json.dumps(r) for r in records) + "\n]\n")
    assert response.status_code == 400
    assert response.json() == {
        "error": {
            "code": "golden-schema",
            "message": 'record 1 (id "bad"), line 3: field "must_cite" must be a list of non-empty strings',
            "details": {"index": 1, "id": "bad", "field": "must_cite", "line": 3},
        }
    }
    assert (
        GoldenEntry.objects.count() == 0
        and AuditEvent.objects.filter(object_type="golden-entry").count() == 0
    )


def test_upload_with_unknown_must_cite_names_the_record_and_writes_nothing(world):
    records = [RECORDS[0], {"id": "ghost", "question": "Ghost policy?", "must_cite": ["ghost-doc"]}]
    response = upload(world.client, json.dumps(records))
    assert response.status_code == 400
    assert response.json() == {
        "error": {
            "code": "unknown-documents",
            "message": 'record 1 (id "ghost"): expected_document_ids: 1 unknown in collection handbook: ghost-doc',
            "details": {
                "index": 1,
                "where": 'record 1 (id "ghost")',
                "id": "ghost",
                "field": "expected_document_ids",
                "unknown_document_ids": ["ghost-doc"],
            },
        }
    }
    assert (
        GoldenEntry.objects.count() == 0
        and AuditEvent.objects.filter(object_type="golden-entry").count() == 0
    )


def test_upload_without_a_file_is_a_validation_error(world):
    response = world.client.post(UPLOAD, {"collection_id": "handbook"}, format="multipart")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "validation-error"
    assert "file" in response.json()["error"]["details"]["fields"]
    assert GoldenEntry.objects.count() == 0


def test_export_returns_a_golden_file_that_reads_back_to_the_same_records(world):
    add_entries(
        world.collection,
        EntryInput(
            question="How long do customers have to request a refund?",
            expected_document_ids=["refunds"],
            reference_answer="Customers get a full refund within 30 days.",
            key="refund-window",
            tags=["policy"],
        ),
        EntryInput(question="Où est la garantie ? Straße", expected_document_ids=["warranty", "refunds"]),
        EntryInput(question="Who is the CEO of Mars?", answerable=False),
    )
    response = world.client.get(
        EXPORT, {"collection_id": "handbook", "cluster_id": "acme", "tenant_id": "search"}
    )
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response["Content-Disposition"] == 'attachment; filename="handbook-golden.json"'
    assert parse_golden(response.content) == [
        GoldenRecord(
            id="refund-window",
            question="How long do customers have to request a refund?",
            expected_answer="Customers get a full refund within 30 days.",
            must_cite=("refunds",),
            tags=("policy",),
        ),
        GoldenRecord(question="Où est la garantie ? Straße", must_cite=("warranty", "refunds")),
        GoldenRecord(question="Who is the CEO of Mars?", answerable=False),
    ]
    # Uploaded into another collection, the file gives the same entries.
    copy = collection_create(tenant=world.tenant, slug="copy", actor="test")
    add_documents(copy, {"refunds": "r", "warranty": "w"})
    assert upload(world.client, response.content, collection_id="copy").status_code == 201
    assert world.client.get(EXPORT, {"collection_id": "copy"}).content == response.content


def test_export_of_an_empty_golden_set_is_an_empty_list(world):
    response = world.client.get(EXPORT, {"collection_id": "handbook"})
    assert response.status_code == 200 and parse_golden(response.content) == []


def test_export_requires_a_collection_id(world):
    response = world.client.get(EXPORT)
    assert response.status_code == 400
    assert response.json()["error"]["details"] == {"field": "collection_id"}


def test_another_tenants_key_gets_404_and_writes_nothing(world):
    add_entries(world.collection, "Refund window?")
    collection_create(tenant=world.tenant, slug="faq", actor="test")  # exists only for the first tenant
    before = (GoldenEntry.objects.count(), AuditEvent.objects.filter(object_type="golden-entry").count())

    scoped = {"cluster_id": "acme", "tenant_id": "search"}
    for response in (
        upload(world.other_client, json.dumps(RECORDS[2:]), **scoped),
        upload(world.other_client, json.dumps(RECORDS[2:]), collection_id="faq"),
        world.other_client.get(EXPORT, {"collection_id": "handbook", **scoped}),
        world.other_client.get(EXPORT, {"collection_id": "faq"}),
    ):
        assert response.status_code == 404, response.content
        assert response.json()["error"]["code"] == "not-found"
    assert (
        GoldenEntry.objects.count(),
        AuditEvent.objects.filter(object_type="golden-entry").count(),
    ) == before

    # Without tenant ids, the rival's key reaches only the rival's own collection of the same name.
    own = world.other_client.get(EXPORT, {"collection_id": "handbook"})
    assert own.status_code == 200 and parse_golden(own.content) == []
    assert world.client.get(EXPORT, {"collection_id": "handbook"}).content != own.content


def test_upload_and_export_need_a_key(world):
    anonymous = world.client.__class__()
    assert anonymous.get(EXPORT, {"collection_id": "handbook"}).status_code == 401
    assert upload(anonymous, json.dumps(RECORDS)).status_code == 401
    assert GoldenEntry.objects.count() == 0
