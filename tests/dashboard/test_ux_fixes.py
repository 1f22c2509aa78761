"""Dashboard defects a new user hit (issue 11, item 9), each pinned: the review queue's reject asks first, a
retrieval run's questions are paged and numbered from 1 in their URLs, the home page caps its labels and gives
them distinct colours."""

from __future__ import annotations

import pytest
from django.urls import reverse

from goldenset import services
from goldenset.models import AuditEvent, GoldenEntry, Origin
from goldenset.services import EntryInput

# --- the review queue's reject asks for a confirmation -----------------------------------------------------


@pytest.fixture
def drafted(world) -> GoldenEntry:
    """A generated, unreviewed entry waiting in handbook's review queue."""
    (entry,), _ = services.golden_entries_add(
        collection=world.collection,
        entries=[EntryInput(question="What does the warranty cover?", expected_document_ids=["warranty"])],
        actor="job",
        origin=Origin.GENERATED,
    )
    return entry


def test_reject_asks_for_confirmation_before_deleting(alice, drafted):
    review = reverse("dashboard:golden-review", args=["handbook"])
    action = reverse("dashboard:golden-review-action", args=["handbook"])
    response = alice.post(action, {"entry": str(drafted.pk), "action": "reject", "next": review + "?page=1"})
    assert response.status_code == 200
    assert GoldenEntry.objects.filter(pk=drafted.pk).exists()
    assert not AuditEvent.objects.filter(object_id=str(drafted.pk), action="delete").exists()
    html = response.content.decode()
    assert "Reject 1 golden entry?" in html and drafted.question in html
    # The confirmation posts the same entry back as reject-confirmed, and Cancel returns to the queue.
    assert f'<form method="post" action="{action}" class="buttons">' in html
    assert f'<input type="hidden" name="entry" value="{drafted.pk}">' in html
    assert 'value="reject-confirmed" class="danger">Yes, reject</button>' in html
    assert f'<a href="{review}?page=1">Cancel</a>' in html

    confirmed = alice.post(
        action, {"entry": str(drafted.pk), "action": "reject-confirmed", "next": review + "?page=1"}
    )
    assert confirmed.status_code == 302 and confirmed["Location"] == review + "?page=1"
    assert not GoldenEntry.objects.filter(pk=drafted.pk).exists()
    assert AuditEvent.objects.filter(object_id=str(drafted.pk), action="delete").exists()


def test_the_golden_set_delete_confirmation_is_unchanged(alice, drafted):
    response = alice.post(
        reverse("dashboard:golden-action", args=["handbook"]), {"entry": str(drafted.pk), "action": "delete"}
    )
    html = response.content.decode()
    assert response.status_code == 200 and "Delete 1 golden entry?" in html
    assert f'action="{reverse("dashboard:golden-action", args=["handbook"])}"' in html
    assert 'value="delete-confirmed" class="danger">Yes, delete</button>' in html
