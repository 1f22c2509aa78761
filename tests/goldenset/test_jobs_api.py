"""The lmkit job endpoints: poll and cancel; the job row asserted each time."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from evalsite.jobs.models import Job, JobStatus
from goldenset.models import GoldenJobKind
from tests.support import iso

URL = "/lmkit/v1/jobs"


def job_json(job: Job) -> dict:
    job.refresh_from_db()
    return {
        "job_id": str(job.pk),
        "kind": job.kind,
        "status": job.status,
        "progress": job.progress,
        "progress_done": job.progress_done,
        "progress_total": job.progress_total,
        "collection_id": job.collection.slug if job.collection else None,
        "result": job.result,
        "error": job.error,
        "created_at": iso(job.created_at),
        "started_at": iso(job.started_at),
        "finished_at": iso(job.finished_at),
        "attempts": job.attempts,
        "history": job.history,
        "parent_id": str(job.parent_id) if job.parent_id else None,
    }


def test_it_polls_a_running_job(world):
    started = timezone.now() - timedelta(seconds=5)
    job = Job.objects.create(
        tenant=world.tenant,
        kind=GoldenJobKind.INGEST,
        collection=world.collection,
        status=JobStatus.RUNNING,
        progress_done=1,
        progress_total=4,
        started_at=started,
    )
    response = world.client.get(f"{URL}/{job.pk}", {"cluster_id": "acme", "tenant_id": "search"})
    assert response.status_code == 200, response.json()
    assert response.json() == {
        "job_id": str(job.pk),
        "kind": "Ingest",
        "status": "Running",
        "progress": 0.25,
        "progress_done": 1,
        "progress_total": 4,
        "collection_id": "handbook",
        "result": None,
        "error": None,
        "created_at": iso(job.created_at),
        "started_at": iso(started),
        "finished_at": None,
        "attempts": 0,
        "history": [],
        "parent_id": None,
    }


def test_it_polls_a_failed_job_without_a_collection(world):
    error = {"code": "collection-gone", "message": "The collection was deleted.", "details": {}}
    job = Job.objects.create(
        tenant=world.tenant,
        kind=GoldenJobKind.GENERATE,
        status=JobStatus.FAILED,
        error=error,
        started_at=timezone.now(),
        finished_at=timezone.now(),
    )
    response = world.client.get(f"{URL}/{job.pk}")
    assert response.status_code == 200, response.json()
    assert response.json() == job_json(job)
    assert (response.json()["collection_id"], response.json()["error"], response.json()["progress"]) == (
        None,
        error,
        0.0,
    )


def test_it_polls_a_completed_job(world):
    job = Job.objects.create(
        tenant=world.tenant,
        kind=GoldenJobKind.INGEST,
        collection=world.collection,
        status=JobStatus.COMPLETED,
        progress_done=2,
        progress_total=2,
        result={"received": 2, "created": 2, "updated": 0, "pages": 2},
        started_at=timezone.now(),
        finished_at=timezone.now(),
    )
    body = world.client.get(f"{URL}/{job.pk}").json()
    assert body == job_json(job)
    assert body["progress"] == 1.0 and body["result"] == {
        "received": 2,
        "created": 2,
        "updated": 0,
        "pages": 2,
    }


@pytest.mark.parametrize("status", [JobStatus.QUEUED, JobStatus.RUNNING])
def test_it_cancels_a_job_that_has_not_finished(world, status):
    job = Job.objects.create(
        tenant=world.tenant, kind=GoldenJobKind.INGEST, collection=world.collection, status=status
    )
    response = world.client.post(f"{URL}/{job.pk}/cancel")
    assert response.status_code == 200, response.json()
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED and job.finished_at is not None
    assert response.json() == job_json(job)
    assert response.json()["status"] == "Cancelled"
    assert response.json()["finished_at"] == iso(job.finished_at)


def test_it_cancels_with_the_tenant_named_in_the_body(world):
    job = Job.objects.create(tenant=world.tenant, kind=GoldenJobKind.INGEST)
    response = world.client.post(
        f"{URL}/{job.pk}/cancel", {"cluster_id": "acme", "tenant_id": "search"}, format="json"
    )
    assert response.status_code == 200, response.json()
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED


def test_a_cancel_naming_another_tenant_in_the_body_is_not_found(world):
    job = Job.objects.create(tenant=world.tenant, kind=GoldenJobKind.INGEST)
    response = world.client.post(f"{URL}/{job.pk}/cancel", {"tenant_id": "rival"}, format="json")
    assert response.status_code == 404
    assert response.json() == {
        "error": {
            "code": "not-found",
            "message": "Tenant rival not found.",
            "details": {"resource": "Tenant", "id": "rival"},
        }
    }
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED and job.finished_at is None


@pytest.mark.parametrize("status", [JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED])
def test_it_refuses_to_cancel_a_finished_job(world, status):
    finished = timezone.now() - timedelta(minutes=1)
    job = Job.objects.create(
        tenant=world.tenant, kind=GoldenJobKind.INGEST, status=status, finished_at=finished
    )
    response = world.client.post(f"{URL}/{job.pk}/cancel")
    assert response.status_code == 409
    assert response.json() == {
        "error": {
            "code": "job-finished",
            "message": f"Job {job.pk} already ended as {status}.",
            "details": {"status": str(status)},
        }
    }
    job.refresh_from_db()
    assert job.status == status and job.finished_at == finished


@pytest.mark.parametrize("method", ["get", "cancel"])
# A fixed unknown uuid: parameters are the test's id, which every test process must collect the same.
@pytest.mark.parametrize("job_id", ["not-a-uuid", "9894844a-5c4a-466a-928d-a0a0fb150a11", "12345"])
def test_an_unknown_or_malformed_job_id_is_not_found(world, method, job_id):
    url = f"{URL}/{job_id}" if method == "get" else f"{URL}/{job_id}/cancel"
    response = world.client.get(url) if method == "get" else world.client.post(url)
    assert response.status_code == 404
    assert response.json() == {
        "error": {
            "code": "not-found",
            "message": f"Job {job_id} not found.",
            "details": {"resource": "Job", "id": job_id},
        }
    }


def test_another_tenants_job_is_not_found(world):
    job = Job.objects.create(tenant=world.other_tenant, kind=GoldenJobKind.INGEST)
    missing = world.client.get(f"{URL}/{uuid.uuid4()}").json()
    for response in (world.client.get(f"{URL}/{job.pk}"), world.client.post(f"{URL}/{job.pk}/cancel")):
        assert response.status_code == 404
        assert response.json() == {
            "error": {
                "code": "not-found",
                "message": f"Job {job.pk} not found.",
                "details": {"resource": "Job", "id": str(job.pk)},
            }
        }
        assert response.json()["error"].keys() == missing["error"].keys()
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED and job.finished_at is None
    # Its own tenant still sees it.
    assert world.other_client.get(f"{URL}/{job.pk}").json() == job_json(job)
