"""An external target in a real browser: create it on the Targets page (its secret typed once), test the
connection, launch an evaluation mixing it with a built-in configuration, and read quality beside latency on
Compare (the plotly scatter drawn, nothing loaded from off the server)."""

from __future__ import annotations

import pytest

from evaluation.models import EvaluationRun
from goldenset import services
from goldenset.models import Collection
from tests.browser.conftest import HANDBOOK, HANDBOOK_PASSWORD, HANDBOOK_USER
from tests.browser.pages import assert_clean, log_in, watch_requests
from tests.dashboard.answer_runs_support import PASSAGES
from tests.llm_server import llm_server_fixture  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)
SECRET = "sk-browser-never-shown-31"
QUESTIONS = {
    "refunds": "How long do customers have to get a full refund?",
    "shipping": "When does express shipping arrive?",
    "warranty": "What does the two-year warranty cover?",
}


def test_a_user_creates_tests_and_evaluates_a_target_beside_builtin_search(
    live_server, page, screenshot, handbook_member, llm_server
):
    collection = Collection.objects.get(slug=HANDBOOK)
    services.golden_entries_add(
        collection=collection,
        entries=[
            services.EntryInput(question=question, expected_document_ids=[doc], key=doc)
            for doc, question in QUESTIONS.items()
        ],
        actor="test",
    )
    llm_server.documents = {doc: text for doc, (_, text) in PASSAGES.items()}
    llm_server.latency = 0.02
    urls = watch_requests(page)
    log_in(page, live_server.url, HANDBOOK_USER, HANDBOOK_PASSWORD)
    page.click("nav.main-nav >> text=Targets")
    page.click("text=New target")
    page.fill("input[name=name]", "prod-search")
    page.select_option("select[name=kind]", "http")
    page.fill("input[name=base_url]", llm_server.url + "/search")
    page.fill("textarea[name=secret_headers]", f"Authorization: Bearer {SECRET}")
    page.fill(
        "textarea[name=options]",
        '{"request_template": {"query": "{{query}}", "limit": "{{top_k}}"},'
        ' "response_mapping": {"ids": "data.hits[].id", "scores": "data.hits[].relevance"}}',
    )
    page.click("button:has-text('Create target')")
    page.wait_for_url("**/targets/prod-search/")
    page.fill("input[name=query]", QUESTIONS["shipping"])
    page.click("button:has-text('Send one query')")
    page.wait_for_selector(".test-result")
    screenshot(page, "targets-01-test-connection")
    assert "OK:" in page.inner_text(".test-result")
    assert SECRET not in page.content()

    page.click("nav.main-nav >> text=Launch")
    page.wait_for_url(f"{live_server.url}/launch/")
    rows = page.locator("table.configs tbody tr")
    target_row = rows.filter(
        has=page.locator("select[name$='-target'] option[selected][value='prod-search']")
    )
    assert target_row.count() == 1
    target_row.locator("input[type=checkbox]").check()
    page.click("button:has-text('Start evaluation')")
    page.wait_for_url("**/compare/**", timeout=60_000)
    page.wait_for_selector("#latency-chart .main-svg")
    screenshot(page, "targets-02-compare-latency")
    assert "against p95 latency per question" in page.inner_text("#latency-chart-title")
    labels = set(EvaluationRun.objects.values_list("label", flat=True))
    assert "target:prod-search" in labels and len(labels) >= 2
    assert_clean(page, urls, "targets")
    assert {r.headers.get("Authorization") for r in llm_server.requests} == {f"Bearer {SECRET}"}
