"""A person behind every run (docs/teams.md): a run keeps who asked for it, as the audit trail names them, whether
it was evaluated in the request, by a job or by a command, and its page says so."""

from __future__ import annotations

from io import StringIO

from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from evaluation.models import EvaluationRun
from tests.conftest import person_client
from tests.support import handbook_entries

BODY = {"collection_id": "handbook", "configs": [{"label": "lucene"}], "ks": [1, 5]}


def test_a_run_keeps_who_asked_for_it_in_a_request_a_job_and_a_command(
    world, settings, django_capture_on_commit_callbacks
):
    handbook_entries(world.collection)
    eve = person_client(world, "eve", role="evaluator")
    assert eve.post("/lmkit/v1/search/evaluate", BODY, format="json").status_code == 200
    key = world.__dict__["_person_clients"][(world.tenant.pk, "eve")]
    prefix = key._credentials["HTTP_AUTHORIZATION"].split()[1][:12]
    (run,) = EvaluationRun.objects.all()
    assert run.created_by == f"user:eve api-key:{prefix}"

    settings.EVALSITE_EVALUATE_SYNC_LIMIT = 0  # a job this time (run at once by the tests' synchronous queue)
    with django_capture_on_commit_callbacks(execute=True):
        answer = world.client.post(
            "/lmkit/v1/search/evaluate", {**BODY, "configs": [{"label": "job"}]}, format="json"
        )
    assert answer.status_code == 202, answer.json()
    by_job = EvaluationRun.objects.get(label="job")
    assert (
        by_job.created_by.startswith("api-key:") and by_job.job_id is not None
    )  # a machine's key: no person

    call_command(
        "evaluate", "--cluster", "acme", "--tenant", "search", "--collection", "handbook", "--format", "json",
        stdout=StringIO(), stderr=StringIO(),
    )  # fmt: skip
    assert EvaluationRun.objects.filter(created_by="command:evaluate").exists()

    browser = Client()
    browser.force_login(run.tenant.memberships.get(user__username="eve").user)
    page = browser.get(reverse("dashboard:run", args=[run.pk])).content.decode()
    assert f"<dt>by</dt><dd>user:eve api-key:{prefix}</dd>" in page
