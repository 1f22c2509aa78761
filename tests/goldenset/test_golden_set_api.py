"""The lmkit golden-set endpoints: list, add, get, edit, delete; the database state asserted each time."""

from __future__ import annotations

import pytest

from evalsite.audit.models import AuditEvent
from goldenset.models import GoldenEntry, Origin
from goldenset.services import EntryInput, golden_entries_add
from tests.support import add_entries

URL = "/lmkit/v1/search/golden-set"


def _add(world, **body):
    payload = {"cluster_id": "acme", "tenant_id": "search", "collection_id": "handbook", **body}
    return world.client.post(URL, payload, format="json")


def test_it_adds_entries_and_audits_them(world):
    response = _add(
        world,
        entries=[
            {
                "question": "How long do customers have to request a refund?",
                "expected_document_ids": ["refunds"],
                "reference_answer": "Customers get a full refund within 30 days.",
            },
            {"question": "How fast is express shipping?", "expected_document_ids": ["shipping"]},
        ],
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["added"] == 2
    first = body["entries"][0]
    entry = GoldenEntry.objects.get(pk=first["id"])
    assert first == {
        "id": str(entry.pk),
        "key": "",
        "collection_id": "handbook",
        "question": "How long do customers have to request a refund?",
        "expected_document_ids": ["refunds"],
        "grades": {},
        "reference_answer": "Customers get a full refund within 30 days.",
        "tags": [],
        "answerable": True,
        "origin": "Manual",
        "reviewed": False,
        "source_page_id": None,
        "job_id": None,
        "created_at": first["created_at"],
        "updated_at": first["updated_at"],
    }
    assert entry.collection == world.collection and entry.origin == Origin.MANUAL
    assert GoldenEntry.objects.filter(collection=world.collection).count() == 2
    events = AuditEvent.objects.filter(object_type="golden-entry", action="create").order_by("id")
    assert [e.object_id for e in events] == [e["id"] for e in body["entries"]]
    assert events[0].actor.startswith("api-key:esk_")
    assert events[0].changes["question"] == "How long do customers have to request a refund?"


def test_it_accepts_the_optional_fields(world):
    response = _add(
        world,
        entries=[
            {
                "question": "What does the warranty cover?",
                "expected_document_ids": ["warranty", "refunds"],
                "grades": {"warranty": 2},
                "key": "q-warranty",
                "tags": ["policy", "device"],
                "answerable": "true",
            },
            {"question": "Who founded the company?", "answerable": False},
        ],
    )
    assert response.status_code == 201, response.json()
    entry = GoldenEntry.objects.get(key="q-warranty")
    assert entry.grades == {"warranty": 2} and entry.grade("refunds") == 1 and entry.grade("warranty") == 2
    assert entry.tags == ["policy", "device"]
    assert GoldenEntry.objects.get(question="Who founded the company?").answerable is False


def test_it_lists_entries_with_filters_and_pagination(world):
    golden_entries_add(
        collection=world.collection,
        entries=[
            EntryInput(
                question=f"Question number {i} about refunds?", expected_document_ids=["refunds"], tags=["t"]
            )
            for i in range(5)
        ]
        + [EntryInput(question="Shipping speed?", expected_document_ids=["shipping"], tags=["ship", "t2"])],
        actor="test",
    )
    GoldenEntry.objects.filter(question="Shipping speed?").update(reviewed=True, origin=Origin.IMPORTED)

    body = world.client.get(URL, {"collection_id": "handbook", "page_size": 4}).json()
    assert body["count"] == 6 and len(body["results"]) == 4 and body["next"] and body["previous"] is None
    assert [r["question"] for r in body["results"]][:2] == [
        "Question number 0 about refunds?",
        "Question number 1 about refunds?",
    ]

    def questions(**params):
        response = world.client.get(URL, {"collection_id": "handbook", **params})
        assert response.status_code == 200, response.json()
        return sorted(r["question"] for r in response.json()["results"])

    assert questions(tag="ship") == ["Shipping speed?"]
    assert questions(tag="t") == [f"Question number {i} about refunds?" for i in range(5)]
    assert questions(origin="Imported") == ["Shipping speed?"]
    assert questions(reviewed="true") == ["Shipping speed?"]
    assert len(questions(reviewed="false")) == 5
    assert questions(text="SPEED") == ["Shipping speed?"]


def test_the_list_without_parameters_shows_every_collection_of_the_keys_tenant(world):
    add_entries(world.collection, "Refund window?")
    rival = world.other_tenant.collections.get()
    add_entries(rival, "Rival question?")
    body = world.client.get(URL).json()
    assert [r["question"] for r in body["results"]] == ["Refund window?"]


def test_it_gets_edits_and_deletes_one_entry(world):
    (entry,) = add_entries(world.collection, "Refund window?")
    url = f"{URL}/{entry.pk}"
    assert world.client.get(url).json()["question"] == "Refund window?"

    response = world.client.patch(
        url, {"reviewed": True, "expected_document_ids": ["refunds"]}, format="json"
    )
    assert response.status_code == 200, response.json()
    entry.refresh_from_db()
    assert entry.reviewed is True and entry.expected_document_ids == ["refunds"]
    update = AuditEvent.objects.get(object_id=str(entry.pk), action="update")
    assert update.changes == {"expected_document_ids": [[], ["refunds"]], "reviewed": [False, True]}

    assert world.client.delete(url).status_code == 204
    assert not GoldenEntry.objects.filter(pk=entry.pk).exists()
    deleted = AuditEvent.objects.get(object_id=str(entry.pk), action="delete")
    assert deleted.changes["question"] == "Refund window?"


def test_an_add_is_all_or_nothing(world):
    response = _add(
        world,
        entries=[
            {"question": "A fine question?", "expected_document_ids": ["refunds"]},
            {"question": "A broken one?", "expected_document_ids": ["no-such-doc"]},
        ],
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "unknown-documents"
    assert error["details"] == {
        "index": 1,
        "field": "expected_document_ids",
        "unknown_document_ids": ["no-such-doc"],
    }
    assert (
        GoldenEntry.objects.count() == 0
        and AuditEvent.objects.filter(object_type="golden-entry").count() == 0
    )


@pytest.mark.parametrize(
    ("entries", "status", "code", "details"),
    [
        ([{"question": "   "}], 400, "empty-question", {"index": 0, "field": "question"}),
        ([{"question": "ok?"}, {"question": ""}], 400, "empty-question", {"index": 1, "field": "question"}),
        (
            [{"question": "Same?"}, {"question": "  same? "}],
            409,
            "duplicate-question",
            {"index": 1, "first_index": 0, "question": "  same? "},
        ),
        (
            [{"question": "a?", "key": "k"}, {"question": "b?", "key": "k"}],
            409,
            "duplicate-key",
            {"index": 1, "key": "k", "first_index": 0},
        ),
        (
            [{"question": "a?", "expected_document_ids": ["refunds"], "grades": {"shipping": 1}}],
            400,
            "validation-error",
            {"index": 0, "field": "grades", "document_ids": ["shipping"]},
        ),
    ],
)
def test_it_rejects_bad_entries_naming_the_index(world, entries, status, code, details):
    response = _add(world, entries=entries)
    assert response.status_code == status, response.json()
    assert response.json()["error"]["code"] == code
    assert response.json()["error"]["details"] == details
    assert GoldenEntry.objects.count() == 0


def test_it_rejects_a_duplicate_of_an_existing_question(world):
    (existing,) = add_entries(world.collection, "Refund window?")
    response = _add(world, entries=[{"question": "new one?"}, {"question": "REFUND   window?"}])
    assert response.status_code == 409
    assert response.json()["error"]["details"] == {
        "index": 1,
        "question": "REFUND   window?",
        "existing_entry_id": str(existing.pk),
    }
    assert GoldenEntry.objects.count() == 1


def test_the_same_question_may_exist_in_another_collection(world):
    add_entries(world.collection, "Refund window?")
    world.client.post("/lmkit/v1/collections", {"collection_id": "faq"}, format="json")
    response = world.client.post(
        URL, {"collection_id": "faq", "entries": [{"question": "Refund window?"}]}, format="json"
    )
    assert response.status_code == 201
    assert GoldenEntry.objects.filter(question="Refund window?").count() == 2


def test_a_patch_into_a_duplicate_question_is_refused(world):
    (a, b) = add_entries(world.collection, "One?", "Two?")
    response = world.client.patch(f"{URL}/{b.pk}", {"question": "one?"}, format="json")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "duplicate-question"
    b.refresh_from_db()
    assert b.question == "Two?"
    # Re-sending an entry's own question is not a duplicate of itself.
    assert (
        world.client.patch(f"{URL}/{a.pk}", {"question": "One?", "tags": ["x"]}, format="json").status_code
        == 200
    )
