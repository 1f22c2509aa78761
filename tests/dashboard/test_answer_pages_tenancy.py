"""Every answer-run page renders for a member and is a 404 under another tenant."""

from __future__ import annotations

from django.test import Client
from django.urls import reverse

from tests.dashboard.conftest import compare_url, question_url, run_url

# --- tenancy -----------------------------------------------------------------------------------------------


def test_another_tenants_answer_runs_are_a_404(world, outsider, answer_batch):
    client = Client()
    client.force_login(outsider)
    run = answer_batch.judged
    for url in [
        run_url(run),
        run_url(run, "?diagnosis=retrieval"),
        question_url(run, 0),
        reverse("dashboard:run-csv", args=[run.pk]),
        reverse("dashboard:compare") + f"?batch={answer_batch.batch_id}",
        compare_url(answer_batch.heuristic, run),
    ]:
        assert client.get(url).status_code == 404, url
    listed = client.get(reverse("dashboard:runs") + "?kind=answers")
    assert listed.context["rows"] == []


def test_every_answer_page_renders_for_a_member_and_is_a_404_under_another_tenant(alice, world, answer_batch):
    run = answer_batch.judged
    urls = [
        run_url(run),
        run_url(run, "?diagnosis=generation&outcome=failed"),
        *(question_url(run, p) for p in range(8)),
        question_url(answer_batch.heuristic, 7),
        reverse("dashboard:run-json", args=[run.pk]),
        reverse("dashboard:run-csv", args=[run.pk]),
        reverse("dashboard:compare") + f"?batch={answer_batch.batch_id}",
        reverse("dashboard:trends") + "?metric=faithfulness",
        reverse("dashboard:trends") + "?metric=score",
        reverse("dashboard:launch-answers"),
        reverse("dashboard:runs") + "?kind=answers",
    ]
    for url in urls:
        assert alice.get(url).status_code == 200, url
        joiner = "&" if "?" in url else "?"
        assert alice.get(f"{url}{joiner}tenant=acme/rival").status_code == 404, url
