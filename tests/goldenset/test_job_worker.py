"""End to end with a real django-q2 cluster: a large ingest answers 202, a qcluster process runs the job."""

from __future__ import annotations

from django.test import override_settings

from evalsite.jobs.models import Job, JobStatus
from goldenset.models import Document
from tests.worker_support import job_ended, job_until


@override_settings(EVALSITE_INGEST_JOB_THRESHOLD_DOCUMENTS=5)
def test_a_large_ingest_runs_as_a_job_in_a_real_worker(world, qcluster):
    documents = [{"id": f"doc-{i}", "title": f"Doc {i}", "text": f"Body of document {i}."} for i in range(40)]
    response = world.client.post(
        "/lmkit/v1/collections/handbook/documents", {"documents": documents}, format="json"
    )
    assert response.status_code == 202, response.json()
    job_id = response.json()["job_id"]

    body = job_until(world.client, job_id, job_ended, worker=qcluster)

    assert body["status"] == "Completed", body
    assert body["result"] == {
        "received": 40,
        "created": 40,
        "updated": 0,
        "unchanged": 0,
        "pages_written": 40,
        "pages_deleted": 0,
    }
    assert body["progress"] == 1.0 and body["progress_done"] == body["progress_total"] == 40
    assert Document.objects.filter(collection=world.collection, external_id__startswith="doc-").count() == 40
    job = Job.objects.get(pk=job_id)
    assert job.status == JobStatus.COMPLETED and job.started_at and job.finished_at >= job.started_at
