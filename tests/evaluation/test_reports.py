"""Run reports: JUnit XML (evaluation.runs.report_formats) from the CLI gate and the dashboard, the markdown summary, and an
answer run as Ragas evaluation rows."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from evaluation.models import EvaluationRun
from evaluation.runs.report_formats import Case, Suite, junit_xml, markdown_table
from tests.support import handbook_entries, member_of

SCOPE = ["--cluster", "acme", "--tenant", "search", "--collection", "handbook"]


def test_junit_xml_counts_failures_and_errors_and_escapes_text():
    suites = [
        Suite(
            "fulltext <baseline>",
            [
                Case("q1", "pass", seconds=0.002),
                Case("q2", "fail", 'miss: "none" & more', "Q2?"),
                Case("q3", "error", "error: HTTP 500"),
            ],
            {"ndcg@10": "0.5"},
            1.5,
        ),  # fmt: skip
        Suite("hybrid", [Case("q1", "pass")], {}),
    ]
    root = ET.fromstring(junit_xml(suites))
    assert (root.tag, root.get("tests"), root.get("failures"), root.get("errors")) == (
        "testsuites",
        "4",
        "1",
        "1",
    )
    first = root.find("testsuite")
    assert first.get("name") == "fulltext <baseline>" and first.get("time") == "1.500"
    failure = first.find("testcase[@name='q2']/failure")
    assert failure.get("message") == 'miss: "none" & more' and failure.text == "Q2?"
    assert (
        first.find("testcase[@name='q3']/error") is not None
        and first.find("testcase[@name='q1']").get("time") == "0.002"
    )
    assert first.find("properties/property[@name='ndcg@10']").get("value") == "0.5"


def test_markdown_tables_escape_pipes():
    assert markdown_table(["a", "b|c"], [["1", "x|y"]]) == "| a | b\\|c |\n|---|---|\n| 1 | x\\|y |"


def run(*args: str) -> tuple[int, str]:
    out = StringIO()
    try:
        call_command("evaluate", *SCOPE, *args, stdout=out, stderr=StringIO())
    except SystemExit as exc:
        return int(exc.code or 0), out.getvalue()
    return 0, out.getvalue()


def test_the_gate_writes_junit_and_markdown(world):
    handbook_entries(world.collection)
    code, out = run("--config", "FullText", "--config", "FullText:top_k=1,label=top1", "--ks", "1,3",
                    "--metric", "ndcg@3", "--fail-under", "0.5", "--format", "junit")  # fmt: skip
    root = ET.fromstring(out)
    names = [s.get("name") for s in root.findall("testsuite")]
    assert names == ["FullText", "top1"] and root.get("tests") == "6"
    failures = int(root.get("failures"))
    assert code == 0 and failures == sum(
        1 for r in EvaluationRun.objects.all() for q in r.results.all() if q.missing_document_ids
    )
    code, out = run("--ks", "1,3", "--metric", "ndcg@3", "--fail-under", "0.99", "--format", "markdown")
    lines = out.splitlines()
    assert lines[0].startswith("### evalsite: ndcg@3 >= 0.99: ")
    assert lines[2].startswith("| configuration | recall@1 |") and lines[3].startswith("|---|")
    assert lines[4].startswith("| FullText | ") and lines[4].endswith(("| PASS |", "| FAIL |"))
    assert code == (1 if lines[4].endswith("FAIL |") else 0)


def test_the_dashboard_downloads_a_run_as_junit_and_an_answer_run_as_ragas_rows(
    world, django_capture_on_commit_callbacks
):
    handbook_entries(world.collection)
    user = member_of(world.tenant, "ann", password="x")
    client = Client()
    client.force_login(user)
    retrieval = world.client.post(
        "/lmkit/v1/search/evaluate", {"collection_id": "handbook"}, format="json"
    ).json()
    run_id = retrieval["runs"][0]["run_id"]
    junit = client.get(reverse("dashboard:run-junit", args=[run_id]))
    assert junit.status_code == 200 and junit["Content-Type"].startswith("application/xml")
    assert ET.fromstring(junit.content).get("tests") == "3"
    assert client.get(reverse("dashboard:run-ragas", args=[run_id])).status_code == 404  # not an answer run
    with django_capture_on_commit_callbacks(execute=True):
        job = world.client.post(
            "/lmkit/v1/search/evaluate/answers", {"collection_id": "handbook"}, format="json"
        ).json()
    answer_run = world.client.get(f"/lmkit/v1/jobs/{job['job_id']}").json()["result"]["runs"][0]["run_id"]
    rows = [
        json.loads(line)
        for line in client.get(reverse("dashboard:run-ragas", args=[answer_run])).content.splitlines()
    ]
    assert len(rows) == 3
    first = rows[0]
    assert first["user_input"] == "How long is the refund window?" and first["reference_context_ids"] == [
        "refunds"
    ]
    assert first["response"] and first["retrieved_contexts"] and "faithfulness" in first
    stored = EvaluationRun.objects.get(pk=answer_run).results.order_by("position").first()
    assert first["faithfulness"] == stored.metrics.get("faithfulness")


@pytest.mark.parametrize("fmt", ["junit", "markdown"])
def test_a_run_file_gates_with_junit_and_markdown(world, tmp_path, fmt):
    handbook_entries(world.collection)
    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 refunds 1 3 mine\nq2 Q0 refunds 1 3 mine\n")
    out = StringIO()
    call_command("evaluate_run", str(path), *SCOPE, "--metric", "mrr", "--format", fmt, stdout=out)
    text = out.getvalue()
    if fmt == "junit":
        assert ET.fromstring(text).get("failures") == "2"  # q2 and q3 miss their documents
    else:
        assert text.startswith("### evalsite: mrr") and "| mine |" in text
