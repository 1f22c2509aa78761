"""The dashboard's targets: create (secret typed once, never shown), test connection, edit, delete; a launch
mixing a target with a built-in configuration; the run and compare pages showing latency and failures."""

from __future__ import annotations

import json
import re
import time

import pytest
from django.urls import reverse

from evalsite.jobs.models import Job
from evaluation.dashboard.target_forms import PYTHON_EXAMPLE, TargetForm, kind_examples
from evaluation.models import EvaluationRun, Target, TargetKind
from evaluation.targets.services import target_check
from tests.dashboard.conftest import launch_data, text_of
from tests.llm_server import llm_server_fixture  # noqa: F401

SECRET = "sk-dashboard-never-shown-99"
TEXTS = {
    "refunds": "Customers get a full refund within 30 days of purchase. Refunds go to the original card.",
    "shipping": "Orders ship within two business days. Express shipping arrives the next day.",
    "warranty": "Every device carries a two-year warranty covering manufacturing defects.",
}
OPTIONS = (
    '{"request_template": {"query": "{{query}}", "limit": "{{top_k}}"},'
    ' "response_mapping": {"ids": "data.hits[].id", "scores": "data.hits[].relevance"}}'
)


def target_form(url: str, **fields) -> dict:
    return {
        "name": "prod-search",
        "kind": "http",
        "base_url": url + "/search",
        "headers": '{"X-Team": "search"}',
        "secret_headers": f"Authorization: Bearer {SECRET}",
        "timeout_s": "5",
        "concurrency": "2",
        "rate_limit": "",
        "options": OPTIONS,
        **fields,
    }


def test_a_target_is_created_tested_edited_and_deleted_and_its_secret_never_rendered(alice, llm_server):
    llm_server.documents = dict(TEXTS)
    new = reverse("dashboard:target-new")
    assert alice.get(new).status_code == 200
    bad = alice.post(new, target_form(llm_server.url, options='{"index": "x"}'))
    assert bad.status_code == 400 and "Not an option of kind http" in text_of(bad)
    assert alice.post(new, target_form(llm_server.url, secret_headers="no colon here")).status_code == 400
    assert not Target.objects.exists()

    created = alice.post(new, target_form(llm_server.url))
    assert created.status_code == 302
    page = alice.get(created["Location"])
    assert "Stored (values hidden): Authorization" in text_of(page)

    tested = alice.post(
        reverse("dashboard:target-test", args=["prod-search"]), {"query": "express shipping", "top_k": 5}
    )
    text = text_of(tested)
    assert "OK: 1 result" in text and "shipping 2.0" in text and "Raw answer" in text
    assert llm_server.requests[-1].headers["Authorization"] == f"Bearer {SECRET}"

    edited = alice.post(
        reverse("dashboard:target", args=["prod-search"]),
        target_form(llm_server.url, secret_headers="X-Api-Key: second-secret-5", timeout_s="7"),
    )
    assert edited.status_code == 302
    target = Target.objects.get()
    assert target.timeout_s == 7 and target.secret_header_names == ["Authorization", "X-Api-Key"]
    listing = alice.get(reverse("dashboard:targets"))
    pages = [page, tested, listing, alice.get(reverse("dashboard:target", args=["prod-search"]))]
    for response in pages:
        body = response.content.decode()
        assert SECRET not in body and "second-secret-5" not in body

    llm_server.fail_next(500, 500, 500)
    failed = alice.post(
        reverse("dashboard:target-test", args=["prod-search"]), {"query": "refund", "top_k": 5}
    )
    assert "Failed: HTTP 500 after 3 attempts" in text_of(failed)

    deleted = alice.post(reverse("dashboard:target-delete", args=["prod-search"]))
    assert deleted.status_code == 302 and not Target.objects.exists()


def test_another_tenants_target_pages_are_404(world, alice, llm_server):
    world.other_client.post(
        "/lmkit/v1/targets",
        {"name": "rival", "kind": "http", "base_url": llm_server.url + "/search", "options": {
            "request_template": {"q": "{{query}}"}, "response_mapping": {"ids": "ids"}}},
        format="json",
    )  # fmt: skip
    for name in ("target", "target-test", "target-delete"):
        response = alice.post(reverse(f"dashboard:{name}", args=["rival"]))
        assert response.status_code == 404, name
    assert "rival" not in text_of(alice.get(reverse("dashboard:targets")))


@pytest.mark.django_db(transaction=True)
def test_a_launch_mixes_a_target_with_a_builtin_configuration_and_compare_shows_latency(
    alice, golden, llm_server, qcluster
):
    llm_server.documents = dict(TEXTS)
    llm_server.latency = 0.01
    alice.post(reverse("dashboard:target-new"), target_form(llm_server.url))
    launch = alice.get(reverse("dashboard:launch"))
    assert 'value="prod-search"' in launch.content.decode()  # a row for the target
    data = launch_data(
        [{"enabled": True, "label": "built-in"}, {"enabled": True, "label": "prod", "target": "prod-search"}]
    )
    data["ks"] = "1,3"
    started = alice.post(reverse("dashboard:launch"), data)
    assert started.status_code == 302, text_of(started)
    job = Job.objects.get(kind="Evaluate")
    deadline = time.monotonic() + 90  # the real worker runs the job, calling the target from its process
    while job.status in ("Queued", "Running") and time.monotonic() < deadline:
        assert qcluster.poll() is None, qcluster.log.read_text()
        time.sleep(0.2)
        job.refresh_from_db()
    assert job.status == "Completed", (job.status, job.error)
    runs = {r.label: r for r in EvaluationRun.objects.all()}
    assert runs["prod"].config["target"] == "prod-search" and runs["prod"].status == "complete"
    run_page = text_of(alice.get(reverse("dashboard:run", args=[runs["prod"].pk])))
    assert re.search(r"latency p50 / p95 / p99 [\d.]+ / [\d.]+ / [\d.]+ ms", run_page)
    compare = alice.get(reverse("dashboard:compare") + f"?batch={runs['prod'].batch_id}")
    body = compare.content.decode()
    assert 'id="latency-chart"' in body and "ndcg@3 against p95 latency per question" in body


def test_a_run_file_uploaded_on_launch_opens_the_comparison_or_names_its_bad_line(alice, golden):
    from django.core.files.uploadedfile import SimpleUploadedFile

    url = reverse("dashboard:launch-run-file")
    assert "Run file" in text_of(alice.get(url))
    bad = alice.post(
        url,
        {
            "collection": "handbook",
            "ks": "1,5",
            "file": SimpleUploadedFile("r.trec", b"q-refund Q0 refunds 1\n"),
        },
    )
    assert bad.status_code == 400 and "Line 1: expected 6 columns" in text_of(bad)
    assert not EvaluationRun.objects.exists()
    good = SimpleUploadedFile("r.trec", b"q-refund Q0 refunds 1 2.0 mine\nq-ship Q0 shipping 1 1.0 mine\n")
    response = alice.post(url, {"collection": "handbook", "ks": "1,5", "file": good})
    assert response.status_code == 302 and "/compare/?batch=" in response["Location"]
    run = EvaluationRun.objects.get()
    assert run.label == "mine" and run.config["run_file"] == "r.trec" and run.metrics["recall@5"] > 0


def test_the_answer_launcher_offers_answering_targets_and_the_retrieval_launcher_search_ones(
    alice, llm_server
):
    alice.post(reverse("dashboard:target-new"), target_form(llm_server.url))
    rag_options = (
        '{"request_template": {"question": "{{query}}"}, "response_mapping": {"answer": "output.text"}}'
    )
    created = alice.post(
        reverse("dashboard:target-new"),
        target_form(llm_server.url, name="rag-prod", kind="rag-http", options=rag_options),
    )
    assert created.status_code == 302, text_of(created)
    answers = alice.get(reverse("dashboard:launch-answers")).content.decode()
    retrieval = alice.get(reverse("dashboard:launch")).content.decode()
    assert 'value="rag-prod"' in answers and 'value="prod-search"' not in answers
    assert 'value="prod-search"' in retrieval and 'value="rag-prod"' not in retrieval


def test_moving_a_target_to_another_server_asks_for_its_secrets_again_on_the_form(alice, llm_server):
    new = reverse("dashboard:target-new")
    assert alice.post(new, target_form(llm_server.url)).status_code == 302
    page = reverse("dashboard:target", args=["prod-search"])
    moved = alice.post(page, target_form("http://localhost:1", secret_headers=""))
    assert moved.status_code == 400
    assert "send each again in the same change" in text_of(moved) and "(Authorization)" in text_of(moved)
    assert Target.objects.get().base_url == llm_server.url + "/search"
    moved = alice.post(page, target_form("http://localhost:1", secret_headers="Authorization: Bearer new-9"))
    assert moved.status_code == 302 and Target.objects.get().base_url == "http://localhost:1/search"


def test_a_url_into_the_servers_network_is_refused_on_the_form(alice, settings):
    settings.EVALSITE_OUTBOUND_ALLOW = []
    bad = alice.post(reverse("dashboard:target-new"), target_form("http://169.254.169.254"))
    assert bad.status_code == 400 and "Link-local address not allowed" in text_of(bad)
    assert not Target.objects.exists()


def test_the_new_target_form_shows_empty_boxes_and_an_example_per_kind_that_validates(alice, settings):
    page = alice.get(reverse("dashboard:target-new"))
    boxes = re.findall(r'<textarea name="(\w+)"[^>]*>(.*?)</textarea>', page.content.decode(), re.S)
    assert {name: value.strip() for name, value in boxes} == {
        "headers": "",
        "secret_headers": "",
        "options": "",
    }
    shown = page.context["examples"]
    assert [e["kind"] for e in shown] == list(TargetKind.values)  # every kind, each on the page
    for example in shown:
        assert f'data-kind-example="{example["kind"]}"' in page.content.decode()
    settings.EVALSITE_PYTHON_TARGETS = [PYTHON_EXAMPLE]  # the example names a callable the operator lists
    for example in kind_examples():
        form = TargetForm(
            {"name": f"ex-{example['kind']}", "kind": example["kind"], "base_url": example["base_url"],
             "options": example["options"], "timeout_s": "30", "concurrency": "4"}
        )  # fmt: skip
        assert form.is_valid(), (example["kind"], form.errors)
        data = form.as_data(creating=True)
        checked = target_check(data["kind"], data["options"], data["base_url"])
        assert checked == json.loads(example["options"]), example
        created = alice.post(
            reverse("dashboard:target-new"),
            {**target_form("", name=f"ex-{example['kind']}", kind=example["kind"], base_url=example["base_url"],
                           options=example["options"], headers="", secret_headers="")},
        )  # fmt: skip
        assert created.status_code == 302, (example["kind"], text_of(created))
    edit = alice.get(reverse("dashboard:target", args=["ex-http"])).content.decode()
    headers = re.search(r'<textarea name="headers"[^>]*>(.*?)</textarea>', edit, re.S)
    assert headers and headers.group(1).strip() == ""  # {} stored: an empty box, never "null"
