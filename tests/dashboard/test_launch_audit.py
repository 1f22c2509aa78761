"""Evaluation launches are audited: a job launched from the dashboard names the user, one from the API its key."""

from __future__ import annotations

from django.test import override_settings
from django.urls import reverse

from evalsite.audit.models import AuditEvent
from evalsite.jobs.models import Job
from tests.dashboard import conftest

API_EVALUATE = "/lmkit/v1/search/evaluate"


def launches() -> list[tuple]:
    return list(
        AuditEvent.objects.filter(action="launch")
        .order_by("pk")
        .values_list("tenant_id", "collection_slug", "object_type", "object_id", "actor", "changes")
    )


def test_a_launch_from_the_dashboard_is_audited_as_the_user(alice, world, golden):
    data = conftest.launch_data([{"enabled": True, "label": "bm25"}], ("handbook",), ks="1,3")
    response = alice.post(reverse("dashboard:launch"), data)
    assert response.status_code == 302
    job = Job.objects.get()
    assert launches() == [
        (world.tenant.pk, "handbook", "job", str(job.pk), "user:alice", {"kind": "Evaluate"}),
    ]


def test_a_large_evaluation_over_the_api_is_audited_as_the_key(world, golden):
    body = {"collection_id": "handbook", "ks": [1], "configs": [{"label": "bm25", "search_type": "FullText"}]}
    with override_settings(EVALSITE_EVALUATE_SYNC_LIMIT=1):
        response = world.client.post(API_EVALUATE, body, format="json")
    assert response.status_code == 202, response.json()
    assert launches() == [
        (
            world.tenant.pk,
            "handbook",
            "job",
            response.json()["job_id"],
            f"api-key:{world.key[:12]}",
            {"kind": "Evaluate"},
        ),
    ]


def test_an_evaluation_answered_at_once_launches_nothing(world, golden):
    body = {"collection_id": "handbook", "ks": [1], "configs": [{"label": "bm25", "search_type": "FullText"}]}
    response = world.client.post(API_EVALUATE, body, format="json")
    assert response.status_code == 200, response.json()
    assert launches() == []
