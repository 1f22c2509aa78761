"""Human labels and calibrated thresholds in the admin: browsable and filterable, never added, changed or
deleted by hand (their imports and applications are all or nothing, and audited)."""

from __future__ import annotations

from django.urls import reverse

from evaluation.judgments.label_import import labels_import
from evaluation.judgments.labels import read_rows
from evaluation.models import HumanLabel
from goldenset import services
from tests.support import add_entries


def test_labels_are_listed_and_read_only(admin_client, world):
    add_entries(world.collection, services.EntryInput(question="How long is the refund window?", key="w1"))
    row = {"question_id": "w1", "rater": "ann", "metric": "faithfulness", "label": "not supported",
           "statement": "Refunds take a year.", "passages": [{"text": "Refunds within 30 days."}]}  # fmt: skip
    labels_import(
        tenant=world.tenant, collection=world.collection, rows=read_rows([("line 1", row)]), actor="t"
    )
    label = HumanLabel.objects.get()
    listing = admin_client.get(reverse("admin:evaluation_humanlabel_changelist") + "?rater=ann")
    assert listing.status_code == 200
    assert "Refunds take a year." in listing.content.decode() and "not supported" in listing.content.decode()
    assert admin_client.get(reverse("admin:evaluation_humanlabel_add")).status_code == 403
    delete = reverse("admin:evaluation_humanlabel_delete", args=[label.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    assert HumanLabel.objects.count() == 1
    assert admin_client.get(reverse("admin:evaluation_judgethreshold_changelist")).status_code == 200
