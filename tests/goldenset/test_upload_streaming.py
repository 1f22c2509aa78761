"""Document uploads are read line by line, and a large one becomes a job that holds the files, not documents."""

from __future__ import annotations

import io
import json

import pytest
from django.test import override_settings

from evalsite.audit.models import AuditEvent
from evalsite.jobs.models import Job, JobStatus
from goldenset import importers
from goldenset.models import Document
from goldenset.services import content
from tests.goldenset.conftest import UPLOADS
from tests.support import uploaded


def corpus(count: int, start: int = 0) -> str:
    return "".join(json.dumps({"_id": f"u{i}", "text": f"Body {i}."}) + "\n" for i in range(start, count))


def test_a_jsonl_file_is_read_as_its_documents_are_taken():
    file = io.BytesIO(corpus(1000).encode())
    documents = importers.documents_from_upload("corpus.jsonl", file)
    first = next(documents)
    assert first.id == "u0" and first.pages == ["Body 0."]
    assert 0 < file.tell() < len(file.getvalue()) // 10  # some lines read, not the file
    assert [d.id for d in documents][-1] == "u999"


@override_settings(EVALSITE_INGEST_JOB_THRESHOLD_DOCUMENTS=5)
def test_a_large_upload_queues_the_files_and_the_job_writes_them_in_batches(
    world, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(content, "DOCUMENT_BATCH", 10)
    text = corpus(25)
    ingests_before = AuditEvent.objects.filter(object_type="document", action="ingest").count()
    with django_capture_on_commit_callbacks(execute=True):
        response = world.client.post(
            UPLOADS,
            {"file": [uploaded("corpus.jsonl", text), uploaded("notes.md", "# Notes\n\nSome notes.")]},
            format="multipart",
        )
    assert response.status_code == 202, response.json()
    job = Job.objects.get(pk=response.json()["job_id"])
    assert job.input == {
        "files": [
            {"name": "corpus.jsonl", "text": text},
            {"name": "notes.md", "text": "# Notes\n\nSome notes."},
        ],
        "documents_total": 26,
        "source": "upload: corpus.jsonl, notes.md",
        "actor": job.input["actor"],
    }
    assert (job.status, job.progress_done, job.progress_total) == (JobStatus.COMPLETED, 26, 26)
    assert job.result == {
        "received": 26,
        "created": 26,
        "updated": 0,
        "unchanged": 0,
        "pages_written": 26,
        "pages_deleted": 0,
    }
    assert Document.objects.get(collection=world.collection, external_id="u24").pages.get().text == "Body 24."
    assert Document.objects.get(collection=world.collection, external_id="notes").title == "Notes"
    ingests = AuditEvent.objects.filter(object_type="document", action="ingest").order_by("pk")
    assert ingests.count() == ingests_before + 1  # one event for the job's three batches
    assert ingests.last().changes["source"] == f"upload: corpus.jsonl, notes.md job {job.pk}"


@override_settings(EVALSITE_INGEST_JOB_THRESHOLD_DOCUMENTS=5)
def test_a_malformed_line_late_in_a_large_upload_queues_nothing(world):
    text = corpus(40) + '{"_id": "bad" "text": "x"}\n' + corpus(60, start=40)
    before = (Document.objects.count(), AuditEvent.objects.count())
    response = world.client.post(UPLOADS, {"file": uploaded("corpus.jsonl", text)}, format="multipart")
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "beir-invalid",
        "message": "corpus.jsonl line 41, column 15: Expecting ',' delimiter",
        "details": {"file": "corpus.jsonl", "line": 41, "column": 15},
    }
    assert not Job.objects.exists()
    assert (Document.objects.count(), AuditEvent.objects.count()) == before


@pytest.mark.parametrize("text", ["", "\n \n", "\r\n"])
def test_an_upload_of_blank_lines_is_an_empty_file(world, text):
    response = world.client.post(UPLOADS, {"file": uploaded("corpus.jsonl", text)}, format="multipart")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "empty-file"


def test_carriage_returns_end_jsonl_lines_as_before(world):
    text = (
        json.dumps({"_id": "r1", "text": "One."}) + "\r" + json.dumps({"_id": "r2", "text": "Two."}) + "\r\n"
    )
    response = world.client.post(UPLOADS, {"file": uploaded("corpus.jsonl", text)}, format="multipart")
    assert response.status_code == 200, response.json()
    assert response.json()["created"] == 2
