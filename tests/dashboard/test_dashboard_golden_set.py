"""The golden set in the dashboard: filters, inline edit, review, delete and exports; every write audited as the
signed-in user through the same services as the admin and the API."""

from __future__ import annotations

import csv
import io
import json

from django.urls import reverse

from evalsite.audit.models import AuditEvent
from goldenset.golden_files import parse_golden
from goldenset.models import GoldenEntry
from goldenset.services.golden import EntryInput
from tests.dashboard.conftest import ACTOR, collection_url, edit_data
from tests.support import add_entries


def test_the_golden_set_lists_and_filters(alice, world, golden):
    page = alice.get(collection_url(world))
    assert [row["entry"].pk for row in page.context["rows"]] == [e.pk for e in golden]
    assert page.context["counts"] == {"total": 3, "reviewed": 0}
    by_tag = alice.get(collection_url(world, "?tag=policy"))
    assert [row["entry"].key for row in by_tag.context["rows"]] == ["q-refund", ""]
    by_text = alice.get(collection_url(world, "?q=express"))
    assert [row["entry"].key for row in by_text.context["rows"]] == ["q-ship"]
    assert alice.get(collection_url(world, "?reviewed=yes")).context["rows"] == []
    assert len(alice.get(collection_url(world, "?origin=Manual&reviewed=no")).context["rows"]) == 3
    assert alice.get(collection_url(world, "?origin=Generated")).context["rows"] == []


def test_an_empty_golden_set_says_what_to_do(alice, world):
    page = alice.get(collection_url(world))
    assert b"No golden entries yet" in page.content
    assert b"import_golden" in page.content


def test_inline_edit_saves_through_the_service_and_is_audited(alice, world, golden):
    entry = golden[0]
    response = alice.post(
        reverse("dashboard:golden-entry", args=[world.collection.slug, entry.pk]),
        edit_data(
            entry, question="How many days is the refund window?", tags="policy", next=collection_url(world)
        ),
    )
    assert response.status_code == 302 and response["Location"] == collection_url(world)
    entry.refresh_from_db()
    assert entry.question == "How many days is the refund window?"
    assert entry.tags == ["policy"]
    event = AuditEvent.objects.get(object_id=str(entry.pk), action="update")
    assert event.actor == ACTOR
    assert event.changes == {
        "question": ["How long is the refund window?", "How many days is the refund window?"],
        "tags": [["policy", "money"], ["policy"]],
    }
    # The entry page shows the trail, as the admin does.
    page = alice.get(reverse("dashboard:golden-entry", args=[world.collection.slug, entry.pk]))
    assert [t["event"].actor for t in page.context["trail"]] == [ACTOR, "test"]


def test_an_edit_without_the_grades_box_keeps_the_grades(alice, world, golden):
    """The collection page's inline editor sends no grades: its edits leave them as they are."""
    entry = golden[2]  # expects warranty (grade 2) and refunds
    response = alice.post(
        reverse("dashboard:golden-entry", args=[world.collection.slug, entry.pk]),
        edit_data(entry, tags="policy"),
    )
    assert response.status_code == 302
    entry.refresh_from_db()
    assert entry.tags == ["policy"] and entry.grades == {"warranty": 2}


def test_an_edit_the_service_refuses_is_a_form_error_and_changes_nothing(alice, world, golden):
    entry = golden[0]
    url = reverse("dashboard:golden-entry", args=[world.collection.slug, entry.pk])
    duplicate = alice.post(url, edit_data(entry, question=golden[1].question))
    assert duplicate.status_code == 400
    assert "question" in duplicate.context["form"].errors
    unknown = alice.post(url, edit_data(entry, expected_document_ids="refunds\nno-such-doc"))
    assert unknown.status_code == 400
    assert "no-such-doc" in str(unknown.context["form"].errors["expected_document_ids"])
    key_taken = alice.post(url, edit_data(entry, key="q-ship"))
    assert "key" in key_taken.context["form"].errors
    entry.refresh_from_db()
    assert entry.question == "How long is the refund window?" and entry.key == "q-refund"
    assert not AuditEvent.objects.filter(object_id=str(entry.pk), action="update").exists()


def test_an_edit_beyond_the_entry_limits_is_a_form_error_and_changes_nothing(alice, world, golden):
    entry = golden[0]
    url = reverse("dashboard:golden-entry", args=[world.collection.slug, entry.pk])
    question = ("Why " * 1001)[:4000] + "?"
    too_long = alice.post(url, edit_data(entry, question=question))
    assert too_long.status_code == 400
    assert too_long.context["form"].errors == {
        "question": ["May have at most 4000 characters (it has 4001)."]
    }
    many_tags = alice.post(url, edit_data(entry, tags=", ".join(f"t{i}" for i in range(51))))
    assert many_tags.context["form"].errors == {"tags": ["May have at most 50 tags (it has 51)."]}
    long_answer = alice.post(url, edit_data(entry, reference_answer="a" * 20_001))
    assert list(long_answer.context["form"].errors) == ["reference_answer"]
    entry.refresh_from_db()
    assert (entry.question, entry.tags) == ("How long is the refund window?", ["policy", "money"])
    assert not AuditEvent.objects.filter(object_id=str(entry.pk), action="update").exists()
    saved = alice.post(url, edit_data(entry, question=question[1:]))
    assert saved.status_code == 302
    entry.refresh_from_db()
    assert entry.question == question[1:] and len(entry.question) == 4000


def test_a_new_entry_beyond_the_limits_is_a_form_error(alice, world, golden):
    response = alice.post(
        reverse("dashboard:golden-new", args=[world.collection.slug]), {"question": "Q" * 4001 + "?"}
    )
    assert response.status_code == 400
    assert response.context["form"].errors == {
        "question": ["May have at most 4000 characters (it has 4002)."]
    }
    assert GoldenEntry.objects.count() == len(golden)


def test_an_unchanged_edit_writes_no_event(alice, world, golden):
    entry = golden[0]
    response = alice.post(
        reverse("dashboard:golden-entry", args=[world.collection.slug, entry.pk]), edit_data(entry)
    )
    assert response.status_code == 302
    assert not AuditEvent.objects.filter(object_id=str(entry.pk), action="update").exists()


def test_mark_reviewed_and_unreviewed_are_audited(alice, world, golden):
    url = reverse("dashboard:golden-action", args=[world.collection.slug])
    response = alice.post(url, {"action": "reviewed", "entry": [str(golden[0].pk), str(golden[1].pk)]})
    assert response.status_code == 302
    assert set(GoldenEntry.objects.filter(reviewed=True).values_list("pk", flat=True)) == {
        golden[0].pk,
        golden[1].pk,
    }
    events = AuditEvent.objects.filter(action="update", changes={"reviewed": [False, True]})
    assert sorted(e.object_id for e in events) == sorted([str(golden[0].pk), str(golden[1].pk)])
    assert {e.actor for e in events} == {ACTOR}
    # A row's own button.
    alice.post(url, {"single": f"{golden[0].pk}:unreviewed"})
    assert not GoldenEntry.objects.get(pk=golden[0].pk).reviewed
    assert AuditEvent.objects.filter(
        object_id=str(golden[0].pk), changes={"reviewed": [True, False]}, actor=ACTOR
    ).exists()


def test_delete_asks_first_then_deletes_through_the_service(alice, world, golden):
    url = reverse("dashboard:golden-action", args=[world.collection.slug])
    confirm = alice.post(url, {"action": "delete", "entry": [str(golden[1].pk)]})
    assert confirm.status_code == 200
    assert [e.pk for e in confirm.context["entries"]] == [golden[1].pk]
    assert b"delete-confirmed" in confirm.content
    assert GoldenEntry.objects.filter(pk=golden[1].pk).exists()  # nothing deleted yet
    done = alice.post(url, {"action": "delete-confirmed", "entry": [str(golden[1].pk)]})
    assert done.status_code == 302
    assert not GoldenEntry.objects.filter(pk=golden[1].pk).exists()
    event = AuditEvent.objects.get(object_id=str(golden[1].pk), action="delete")
    assert event.actor == ACTOR
    assert event.changes["question"] == "When does express shipping arrive?"


def test_actions_never_reach_another_tenants_entries(alice, world):
    rival = world.other_tenant.collections.get()
    created = add_entries(rival, EntryInput(question="Rival?", expected_document_ids=["refunds"]))
    response = alice.post(
        reverse("dashboard:golden-action", args=[world.collection.slug]),
        {"action": "delete-confirmed", "entry": [str(created[0].pk)]},
    )
    assert response.status_code == 302
    assert GoldenEntry.objects.filter(pk=created[0].pk).exists()
    assert (
        alice.post(
            reverse("dashboard:golden-entry", args=[world.collection.slug, created[0].pk]), {"question": "x"}
        ).status_code
        == 404
    )


def test_adding_an_entry_is_audited_as_a_create(alice, world):
    response = alice.post(
        reverse("dashboard:golden-new", args=[world.collection.slug]),
        {
            "question": "Is there a warranty?",
            "expected_document_ids": "warranty",
            "tags": "policy",
            "answerable": "on",
        },
    )
    assert response.status_code == 302
    entry = GoldenEntry.objects.get(question="Is there a warranty?")
    assert (
        entry.origin == "Manual" and entry.expected_document_ids == ["warranty"] and entry.tags == ["policy"]
    )
    assert AuditEvent.objects.get(object_id=str(entry.pk)).actor == ACTOR


def test_csv_export_has_one_row_per_entry(alice, world, golden):
    response = alice.get(reverse("dashboard:golden-csv", args=[world.collection.slug]))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="handbook-golden.csv"'
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert list(rows[0]) == [
        "id",
        "key",
        "question",
        "expected_document_ids",
        "reference_answer",
        "tags",
        "answerable",
        "origin",
        "reviewed",
        "created_at",
        "updated_at",
    ]
    assert [r["id"] for r in rows] == [str(e.pk) for e in golden]
    assert rows[0]["key"] == "q-refund"
    assert json.loads(rows[2]["expected_document_ids"]) == ["warranty", "refunds"]
    assert json.loads(rows[0]["tags"]) == ["policy", "money"]
    assert (
        rows[0]["answerable"] == "true" and rows[0]["reviewed"] == "false" and rows[0]["origin"] == "Manual"
    )


def test_exports_follow_the_pages_filters(alice, world, golden):
    response = alice.get(reverse("dashboard:golden-csv", args=[world.collection.slug]) + "?tag=shipping")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [r["key"] for r in rows] == ["q-ship"]


def test_json_export_is_a_golden_file(alice, world, golden):
    response = alice.get(reverse("dashboard:golden-json", args=[world.collection.slug]))
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="handbook-golden.json"'
    records = parse_golden(response.content)
    assert [(r.id, r.question, r.must_cite) for r in records] == [
        ("q-refund", "How long is the refund window?", ("refunds",)),
        ("q-ship", "When does express shipping arrive?", ("shipping",)),
        (None, "What does the warranty cover?", ("warranty", "refunds")),
    ]
    assert records[0].expected_answer == "30 days." and records[0].tags == ("policy", "money")


def test_documents_are_searchable_and_paginated(alice, world):
    page = alice.get(reverse("dashboard:documents", args=[world.collection.slug]))
    assert [d.external_id for d in page.context["page"].object_list] == ["refunds", "shipping", "warranty"]
    found = alice.get(reverse("dashboard:documents", args=[world.collection.slug]) + "?q=warr")
    assert [d.external_id for d in found.context["page"].object_list] == ["warranty"]
    document = alice.get(reverse("dashboard:document", args=[world.collection.slug, "refunds"]))
    assert b"full refund within 30 days" in document.content
    assert alice.get(reverse("dashboard:document", args=[world.collection.slug, "nope"])).status_code == 404


def test_url_maker_gives_what_reverse_gives_for_any_id():
    from django.urls import reverse

    from evaluation.dashboard.common_views import url_maker

    document_url = url_maker("dashboard:document", "hand book")
    for document_id in [
        "plain",
        "with space",
        "a/b/c",
        "100%",
        "q?x=1#f",
        "é-ü",
        "semi;colon,comma",
        "~:@!$&'()*+=",
    ]:
        assert document_url(document_id) == reverse("dashboard:document", args=["hand book", document_id])


def test_a_cached_golden_row_shows_an_edit_at_once(alice, world):
    """Rows are cached by their entry's id and updated_at: an edit, or a review, shows on the next view."""
    from django.core.cache import cache

    from goldenset.services import EntryInput, golden_entries_mark_reviewed, golden_entry_update

    cache.clear()
    (entry,) = add_entries(
        world.collection,
        EntryInput(question="How long is the refund window?", expected_document_ids=["refunds"]),
    )
    url = reverse("dashboard:collection", args=["handbook"])
    assert "How long is the refund window?" in alice.get(url).content.decode()
    golden_entry_update(
        entry=entry, changes={"question": "How many days is the refund window?"}, actor="test"
    )
    html = alice.get(url).content.decode()
    assert ">How many days is the refund window?</a>" in html  # the row, not only the recent changes
    assert ">How long is the refund window?</a>" not in html
    entry.refresh_from_db()
    golden_entries_mark_reviewed(entries=[entry], reviewed=True, actor="test")
    assert '<span class="badge ok">reviewed</span>' in alice.get(url).content.decode()
