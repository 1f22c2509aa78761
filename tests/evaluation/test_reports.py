"""Run reports: JUnit XML (evaluation.reports.report_formats) from the CLI gate and the dashboard, the markdown
summary, and an answer run as Ragas evaluation rows."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from evaluation.models import EvaluationRun
from evaluation.reports.gate import Check, Gate
from evaluation.reports.report_formats import Suite, gate_case, junit_xml, markdown_table, question_case
from goldenset.services import EntryInput
from tests.support import add_entries, handbook_entries, member_of

SCOPE = ["--cluster", "acme", "--tenant", "search", "--collection", "handbook"]


def test_junit_xml_fails_the_gate_alone_and_skips_the_questions_that_did_not_pass():
    gate = Gate("ndcg@10", 0.8, [Check("fulltext <baseline>", 0.71), Check("hybrid", 0.85)])
    suites = [
        Suite(
            "fulltext <baseline>",
            [
                gate_case(gate, gate.checks[0]),
                question_case("q1", "pass", "", seconds=0.002),
                question_case("q2", "miss", 'no "expected" & more', "Q2?"),
                question_case("q3", "error", "HTTP 500"),
            ],
            {"ndcg@10": "0.71"},
            1.5,
        ),  # fmt: skip
        Suite("hybrid", [gate_case(gate, gate.checks[1]), question_case("q1", "pass", "")], {}),
    ]
    root = ET.fromstring(junit_xml(suites))
    assert [root.get(k) for k in ("tests", "failures", "errors", "skipped")] == ["6", "1", "0", "2"]
    first, second = root.findall("testsuite")
    assert [first.get(k) for k in ("name", "time", "failures", "skipped")] == [
        "fulltext <baseline>",
        "1.500",
        "1",
        "2",
    ]
    failure = first.find("testcase[@name='gate: ndcg@10 >= 0.8']/failure")
    assert (
        failure.get("message") == "ndcg@10 0.7100 < 0.8"
        and failure.text == "fulltext <baseline>: ndcg@10 0.7100 < 0.8"
    )
    skipped = first.find("testcase[@name='q2']/skipped")
    assert skipped.get("message") == 'miss: no "expected" & more' and skipped.text == "Q2?"
    assert first.find("testcase[@name='q3']/skipped").get("message") == "error: HTTP 500"
    assert first.find("testcase[@name='q2']/properties/property[@name='diagnosis']").get("value") == "miss"
    passed = first.find("testcase[@name='q1']")
    assert (
        passed.get("time") == "0.002" and list(passed.iter("failure")) == list(passed.iter("skipped")) == []
    )
    assert passed.find("properties/property").get("value") == "pass"
    assert first.find("properties/property[@name='ndcg@10']").get("value") == "0.71"
    gate_passed = second.find("testcase[@name='gate: ndcg@10 >= 0.8']")
    assert gate_passed.find("failure") is None
    assert gate_passed.find("system-out").text == "hybrid: ndcg@10 0.8500 >= 0.8"


def test_the_gate_shows_a_value_below_the_bar_as_below_it():
    gate = Gate("score", 70, [Check("a", 69.96), Check("b", None)], places=1, requires_complete=False)
    assert gate.verdict_line() == "gate failed: score >= 70: a 69.96 < 70; b no value"
    assert (
        gate.report_line() == "gate: score >= 70 for every configuration: FAIL (a: 69.96 < 70; b: no value)"
    )
    assert Gate("score", None, gate.checks, requires_complete=False).name is None


def test_markdown_tables_escape_pipes():
    assert markdown_table(["a", "b|c"], [["1", "x|y"]]) == "| a | b\\|c |\n|---|---|\n| 1 | x\\|y |"


def run(*args: str) -> tuple[int, str]:
    out = StringIO()
    try:
        call_command("evaluate", *SCOPE, *args, stdout=out, stderr=StringIO())
    except SystemExit as exc:
        return int(exc.code or 0), out.getvalue()
    return 0, out.getvalue()


def gated(*args: str) -> tuple[int, ET.Element, str]:
    """`manage.py evaluate --format junit` on the handbook: exit code, the XML's root, the stderr line."""
    out, err = StringIO(), StringIO()
    code = 0
    try:
        call_command("evaluate", *SCOPE, *args, "--format", "junit", stdout=out, stderr=err)
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, ET.fromstring(out.getvalue()), err.getvalue()


def with_misses(world) -> None:
    """The handbook's three questions and two harder ones: FullText ranks q5's document second (top_k=1 misses
    it) and cannot find q6's."""
    handbook_entries(world.collection)
    add_entries(
        world.collection,
        EntryInput(question="Can I return my express order for a refund?", expected_document_ids=["shipping"], key="q5"),
        EntryInput(question="Who repairs broken devices?", expected_document_ids=["refunds"], key="q6"),
    )  # fmt: skip


def not_passing() -> int:
    """The stored questions whose diagnosis is not pass (some expected document missing)."""
    return sum(1 for r in EvaluationRun.objects.all() for q in r.results.all() if q.missing_document_ids)


TWO_CONFIGS = [
    "--config",
    "FullText",
    "--config",
    "FullText:top_k=1,label=top1",
    "--ks",
    "1,3",
    "--metric",
    "ndcg@3",
]


def test_a_passing_gate_is_green_in_junit_though_questions_miss(world):
    with_misses(world)
    code, root, err = gated(*TWO_CONFIGS, "--fail-under", "0.5")
    assert [s.get("name") for s in root.findall("testsuite")] == ["FullText", "top1"]
    assert code == 0 and root.get("tests") == "12"  # 5 questions and the gate per configuration
    assert (root.get("failures"), root.get("errors")) == ("0", "0")
    assert root.get("skipped") == str(not_passing()) and not_passing() > 0
    for suite in root.findall("testsuite"):
        gate = suite.find("testcase")
        assert gate.get("name") == "gate: ndcg@3 >= 0.5" and gate.find("failure") is None
        assert re.fullmatch(r"\w+: ndcg@3 \d\.\d{4} >= 0\.5", gate.find("system-out").text)
    assert re.fullmatch(r"gate passed: ndcg@3 >= 0\.5: FullText \d\.\d{4}, top1 \d\.\d{4}\n", err)


def test_a_failing_gate_fails_its_case_in_junit_and_says_so_on_stderr(world):
    with_misses(world)
    code, root, err = gated(*TWO_CONFIGS, "--fail-under", "0.99")
    runs = {r.label: r.metrics["ndcg@3"] for r in EvaluationRun.objects.all()}
    below = [label for label in ("FullText", "top1") if runs[label] < 0.99]
    assert code == 1 and below and root.get("failures") == str(len(below))
    for label in below:
        failure = root.find(f"testsuite[@name='{label}']/testcase[@name='gate: ndcg@3 >= 0.99']/failure")
        assert failure.get("message") == f"ndcg@3 {runs[label]:.4f} < 0.99"
    reasons = "; ".join(f"{label} {runs[label]:.4f} < 0.99" for label in below)
    assert err == f"gate failed: ndcg@3 >= 0.99: {reasons}\n"
    assert root.get("skipped") == str(not_passing())  # the questions are reported as before: skipped


def test_the_gate_writes_markdown(world):
    handbook_entries(world.collection)
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
    root = ET.fromstring(junit.content)  # no gate: a case per question, none failing
    assert (root.get("tests"), root.get("failures")) == ("3", "0")
    assert not any(case.get("name").startswith("gate:") for case in root.iter("testcase"))
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
    if fmt == "junit":  # no bar: the gate is that the run completed; q2 and q3 miss their documents
        root = ET.fromstring(text)
        assert [root.get(k) for k in ("tests", "failures", "skipped")] == ["4", "0", "2"]
        assert root.find("testsuite/testcase").get("name") == "gate: every run complete"
    else:
        assert text.startswith("### evalsite: mrr") and "| mine |" in text
