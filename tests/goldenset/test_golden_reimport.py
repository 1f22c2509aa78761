"""Re-importing a golden.json: the answer says what happened (created, updated, unchanged), and only an import
that created entries answers 201 Created."""

from __future__ import annotations

import json

from django.core.files.uploadedfile import SimpleUploadedFile

from evalsite.audit.models import AuditEvent
from tests.support import imported

UPLOAD = "/lmkit/v1/search/golden-set/upload"
RECORDS = [
    {"id": "refund-window", "question": "How long is the refund window?", "must_cite": ["refunds"]},
    {"id": "express", "question": "How fast is express shipping?", "must_cite": ["shipping"]},
]


def upload(client, records):
    data = json.dumps(records).encode()
    body = {"collection_id": "handbook", "file": SimpleUploadedFile("golden.json", data, "application/json")}
    return client.post(UPLOAD, body, format="multipart")


def test_an_identical_reimport_answers_200_with_everything_unchanged(world):
    first = upload(world.client, RECORDS)
    assert first.status_code == 201, first.json()
    assert first.json() == imported(records=2, created=2)
    events = AuditEvent.objects.count()

    again = upload(world.client, RECORDS)
    assert again.status_code == 200, again.json()
    assert again.json() == imported(records=2, unchanged=2)
    assert world.collection.golden_entries.count() == 2
    assert AuditEvent.objects.count() == events  # nothing changed, nothing audited


def test_a_reimport_that_adds_one_answers_201_and_counts_each_record(world):
    upload(world.client, RECORDS)
    records = [RECORDS[0], {**RECORDS[1], "expected_answer": "Next day."}, {"question": "Warranty length?"}]
    response = upload(world.client, records)
    assert response.status_code == 201, response.json()
    assert response.json() == imported(records=3, created=1, updated=1, unchanged=1)
    assert world.collection.golden_entries.count() == 3
