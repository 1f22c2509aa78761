"""The dashboard's writes and the collection's activity: "add and mark reviewed" is one audited create, grades
follow one rule on every path (refused, naming the field), and the collection page shows who changed what."""

from __future__ import annotations

from django.urls import reverse

from evalsite.audit.models import AuditEvent
from goldenset import services
from goldenset.models import GoldenEntry
from tests.dashboard.conftest import ACTOR, collection_url, edit_data

GOLDEN_API = "/lmkit/v1/search/golden-set"


def entry_url(world, entry) -> str:
    return reverse("dashboard:golden-entry", args=[world.collection.slug, entry.pk])


def last_id() -> int:
    return AuditEvent.objects.order_by("-pk").values_list("pk", flat=True).first() or 0


# --- add and mark reviewed ---------------------------------------------------------------------------------


def test_add_and_mark_reviewed_is_one_create_event(alice, world):
    since = last_id()
    response = alice.post(
        reverse("dashboard:golden-new", args=[world.collection.slug]),
        {
            "question": "Is there a warranty?",
            "expected_document_ids": "warranty",
            "grades": "warranty: 3",
            "answerable": "on",
            "reviewed": "on",
        },
    )
    assert response.status_code == 302
    entry = GoldenEntry.objects.get(question="Is there a warranty?")
    assert (entry.reviewed, entry.grades) == (True, {"warranty": 3})
    (event,) = AuditEvent.objects.filter(pk__gt=since)
    assert (event.object_id, event.action, event.actor) == (str(entry.pk), "create", ACTOR)
    assert event.changes["reviewed"] is True and event.changes["grades"] == {"warranty": 3}


def test_a_refused_add_marks_nothing_and_writes_nothing(alice, world, golden):
    since = last_id()
    response = alice.post(
        reverse("dashboard:golden-new", args=[world.collection.slug]),
        {"question": golden[0].question, "reviewed": "on"},
    )
    assert response.status_code == 400
    assert "question" in response.context["form"].errors
    assert GoldenEntry.objects.count() == len(golden)
    assert last_id() == since


# --- grades: one rule for the dashboard and the API --------------------------------------------------------


def test_dropping_a_graded_document_is_refused_naming_the_grades(alice, world, golden):
    """The dashboard refuses the edit the API refuses, with the same message, on the grades field."""
    entry = golden[2]  # expects warranty (grade 2) and refunds
    since = last_id()
    response = alice.post(entry_url(world, entry), edit_data(entry, expected_document_ids="refunds"))
    assert response.status_code == 400
    message = "Graded documents not in expected_document_ids: warranty (a document that is not expected takes only grade 0, judged not relevant)."
    assert response.context["form"].errors == {"grades": [message]}
    # The page shows the grades as stored, to fix.
    assert "warranty: 2" in response.content.decode()
    api = world.client.patch(
        f"{GOLDEN_API}/{entry.pk}", {"expected_document_ids": ["refunds"]}, format="json"
    )
    assert api.status_code == 400
    assert api.json()["error"] == {
        "code": "validation-error",
        "message": "entries[0].grades: " + message[:1].lower() + message[1:],
        "details": {"index": 0, "field": "grades", "document_ids": ["warranty"]},
    }
    entry.refresh_from_db()
    assert (entry.expected_document_ids, entry.grades) == (["warranty", "refunds"], {"warranty": 2})
    assert last_id() == since


def test_dropping_the_document_with_its_grade_is_saved_and_audited(alice, world, golden):
    entry = golden[2]
    response = alice.post(
        entry_url(world, entry), edit_data(entry, expected_document_ids="refunds", grades="")
    )
    assert response.status_code == 302
    entry.refresh_from_db()
    assert (entry.expected_document_ids, entry.grades) == (["refunds"], {})
    event = AuditEvent.objects.get(object_id=str(entry.pk), action="update")
    assert (event.actor, event.changes) == (
        ACTOR,
        {"expected_document_ids": [["warranty", "refunds"], ["refunds"]], "grades": [{"warranty": 2}, {}]},
    )


def test_bad_grades_are_a_form_error_on_the_grades_field(alice, world, golden):
    entry = golden[2]
    for text, message in [
        ("warranty", 'Line 1: write "document id: grade", the grade a whole number.'),
        ("warranty: high", 'Line 1: write "document id: grade", the grade a whole number.'),
        ("warranty: 5000", "Grades are whole numbers from 0 to 1000; check: warranty."),
    ]:
        response = alice.post(entry_url(world, entry), edit_data(entry, grades=text))
        assert response.status_code == 400, text
        assert response.context["form"].errors == {"grades": [message]}, text
    entry.refresh_from_db()
    assert entry.grades == {"warranty": 2}


# --- the collection's activity -----------------------------------------------------------------------------


def test_the_collection_page_shows_recent_activity_of_every_kind(alice, world, golden):
    world.client.delete("/lmkit/v1/collections/handbook/documents/shipping")
    alice.post(entry_url(world, golden[0]), edit_data(golden[0], tags="policy"))
    page = alice.get(collection_url(world))
    assert page.status_code == 200
    rows = [
        (c["event"].object_type, c["event"].action, c["event"].actor, c["summary"])
        for c in page.context["changes"]
    ]
    key = f"api-key:{world.key[:12]}"
    assert rows[:2] == [
        ("golden-entry", "update", ACTOR, 'tags: ["policy", "money"] → ["policy"]'),
        ("document", "delete", key, "Shipping"),
    ]
    # The fixture's own writes follow, newest first: entries, then the documents' ingest, then the collection.
    assert rows[-1] == ("collection", "create", "test", "Handbook")
    assert ("document", "ingest", "test", "3 received, 3 created, 0 updated, 0 unchanged") in rows
    html = page.content.decode()
    assert "Recent activity" in html and key in html
    assert not page.context["changes_more"]


def test_the_collection_page_caps_its_activity_and_links_to_all_of_it(alice, world, golden):
    for n in range(12):
        services.golden_entries_add(
            collection=world.collection,
            entries=[services.EntryInput(question=f"Question {n}?")],
            actor="test",
        )
    total = AuditEvent.objects.filter(collection_uid=world.collection.uid).count()
    page = alice.get(collection_url(world))
    assert len(page.context["changes"]) == 10 and page.context["changes_more"]
    activity_url = reverse("dashboard:collection-activity", args=[world.collection.slug])
    assert activity_url in page.content.decode()
    activity = alice.get(activity_url)
    assert activity.status_code == 200
    assert activity.context["page"].paginator.count == total
    assert [c["event"].pk for c in activity.context["changes"]] == list(
        AuditEvent.objects.filter(collection_uid=world.collection.uid)
        .order_by("-at", "-id")
        .values_list("pk", flat=True)
    )


def test_another_tenants_activity_is_invisible(alice, outsider, world, golden, client):
    """The rival tenant has a collection of the same slug: its events never show here, and the rival's member
    cannot read this collection's activity."""
    world.other_client.delete("/lmkit/v1/collections/handbook/documents/refunds")
    page = alice.get(reverse("dashboard:collection-activity", args=[world.collection.slug]))
    tenants = {c["event"].tenant_id for c in page.context["changes"]}
    assert tenants == {world.tenant.pk}
    rival_event = AuditEvent.objects.get(tenant=world.other_tenant, action="delete")
    assert rival_event.pk not in {c["event"].pk for c in page.context["changes"]}
    client.force_login(outsider)
    # rob's tenant has its own "handbook": he sees that one's activity, never acme/search's.
    response = client.get(reverse("dashboard:collection-activity", args=[world.collection.slug]))
    assert response.status_code == 200
    assert {c["event"].tenant_id for c in response.context["changes"]} == {world.other_tenant.pk}
    # A collection only the rival tenant has is a 404 for alice, exactly as a missing one.
    services.collection_create(tenant=world.other_tenant, slug="secret", actor="test")
    for slug in ("secret", "nope"):
        assert alice.get(reverse("dashboard:collection-activity", args=[slug])).status_code == 404
