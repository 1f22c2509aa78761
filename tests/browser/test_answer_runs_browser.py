"""Answer runs in a real browser (Playwright's Python client, Debian's Chromium, pytest-django's live server):
sign in, list the answer runs, open one (score, mode, metrics with their methods, refusal both ways), filter its
questions by diagnosis, open a question and read the answer beside the numbered passages it was written from,
follow a citation marker to its passage; then the comparison of the two runs and the score's trend, and the
run and question pages on a phone-sized screen.

The runs are written straight into the database in the shape the answer pipeline stores (as
tests/dashboard/answer_runs_support.py does), so the test needs no model or judge.

Every page must load without a JavaScript error and without a request to any host but the live server.
Screenshots go to test-artifacts/screenshots/ (not committed), prefixed "ans-".
"""

from __future__ import annotations

import re
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.utils import timezone

from evaluation.models import EvaluationRun
from goldenset.models import Collection
from tests.browser.conftest import HANDBOOK, HANDBOOK_PASSWORD, HANDBOOK_USER
from tests.browser.pages import PHONE, assert_clean, log_in, open_page, overflow, watch_requests
from tests.dashboard.answer_runs_support import make_answer_batch, make_answer_run, questions

SLUG, USERNAME, PASSWORD = HANDBOOK, HANDBOOK_USER, HANDBOOK_PASSWORD

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def answer_runs(handbook_member) -> list[EvaluationRun]:
    """Two answer runs of one batch (the extractive answer judged by the heuristic, and an LLM's answers judged
    by an LLM), over the same eight questions, every diagnosis among them."""
    collection = Collection.objects.get(slug=SLUG)
    batch = make_answer_batch(collection.tenant, collection)
    return [batch.heuristic, batch.judged]


def test_an_answer_run_its_questions_and_an_answer_beside_its_passages(
    live_server, page, screenshot, answer_runs
):
    base = live_server.url
    urls = watch_requests(page)
    log_in(page, base, USERNAME, PASSWORD)
    extractive, judged = answer_runs

    # 1. The runs list, filtered to answer runs: each shows its kind, score and mode.
    page.goto(f"{base}/runs/")
    page.select_option("select[name=kind]", "answers")
    page.click("form.filters button[type=submit]")
    page.wait_for_url(re.compile(r"kind=answers"))
    rows = page.locator("table.runs tbody tr")
    assert rows.count() == 2
    row = rows.filter(has_text="llm answers")
    assert row.locator(".kind.answers").inner_text() == "answers"
    assert f"score {judged.metrics['score']:.1f}" in row.locator("td.metrics").inner_text()
    assert row.locator(".mode.mixed").inner_text() == "mixed"
    screenshot(page, "ans-01-runs")
    assert_clean(page, urls, "runs")

    # 2. The run: score, mode, metrics with their methods and exclusions, refusal both ways side by side.
    row.locator("td.label a").click()
    page.wait_for_url(re.compile(rf"/runs/{judged.pk}/$"))
    assert page.locator("[data-score]").inner_text() == f"{judged.metrics['score']:.1f}"
    assert page.locator("[data-mode]").inner_text() == "mixed"
    faithfulness = page.locator(".answer-metrics [data-metric=faithfulness]")
    assert "1 excluded: unreadable" in faithfulness.inner_text()
    assert faithfulness.locator(".method").inner_text() == "mixed"
    recall, false_rate = page.locator("[data-refusal=recall]"), page.locator("[data-refusal=false]")
    assert "declined 1 of 2 unanswerable" in recall.inner_text()
    assert "declined 1 of 5 answerable" in false_rate.inner_text()
    recall_box, false_box = recall.bounding_box(), false_rate.bounding_box()
    assert recall_box and false_box
    assert (
        abs(recall_box["y"] - false_box["y"]) < 2 and recall_box["x"] + recall_box["width"] <= false_box["x"]
    )
    table = "table.answer-questions"
    assert page.locator(f"{table} tbody tr").count() == 8
    screenshot(page, "ans-02-run", max_height=2400)
    assert_clean(page, urls, "run")

    # 3. Filter the questions by diagnosis: the retrieval failures only.
    page.select_option("select[name=diagnosis]", "retrieval")
    page.click("form.filters button[type=submit]")
    page.wait_for_url(re.compile(r"diagnosis=retrieval"))
    diagnoses = page.locator(f"{table} tbody td.diag .diagnosis").all_inner_texts()
    assert diagnoses == ["retrieval"]
    assert page.locator("[data-question-count]").inner_text().startswith("1 of 8 questions")
    page.locator("[data-diagnosis-count=generation]").click()  # the header's counts filter too
    page.wait_for_url(re.compile(r"diagnosis=generation"))
    assert page.locator(f"{table} tbody td.diag .diagnosis").all_inner_texts() == ["generation"] * 3
    page.select_option("select[name=diagnosis]", "retrieval")
    page.click("form.filters button[type=submit]")
    page.wait_for_url(re.compile(r"diagnosis=retrieval"))
    screenshot(page, "ans-03-run-retrieval-failures")
    assert_clean(page, urls, "run filtered")

    # 4. The question: the answer and its passages side by side; a citation marker opens its passage.
    page.locator(f"{table} tbody tr").first.locator("td a").first.click()
    page.wait_for_url(re.compile(r"/questions/3/$"))
    assert page.locator("[data-diagnosis]").inner_text() == "retrieval"
    assert "expected document not retrieved: warranty" in page.locator("[data-reasons]").inner_text()
    screenshot(page, "ans-04-question-retrieval")
    page.goto(f"{base}/runs/{judged.pk}/questions/1/")
    answer, passages = page.locator(".answer-pane"), page.locator(".passages-pane")
    answer_box, passages_box = answer.bounding_box(), passages.bounding_box()
    assert answer_box and passages_box
    assert answer_box["x"] + answer_box["width"] <= passages_box["x"]  # beside, not below
    assert abs(answer_box["y"] - passages_box["y"]) < 40
    assert page.locator(".passages-pane article.passage").count() == 2
    assert "Refunds are accepted within 30 days" in page.locator("[data-answer]").inner_text()
    markers = page.locator("[data-answer] a.cite")
    assert markers.all_inner_texts() == ["1", "1", "2"]
    screenshot(page, "ans-05-question")
    page.locator("[data-answer] a.cite[data-cite='2']").click()
    page.wait_for_url(re.compile(r"#passage-2$"))
    target = page.locator("#passage-2")
    assert target.evaluate("e => e.matches(':target')")
    assert "Express shipping arrives the next day." in target.inner_text()
    assert "not relevant" in target.locator(".badges").inner_text()
    verdicts = page.locator("[data-judgement=faithfulness] ul.statements li")
    assert verdicts.count() == 2 and "supported" in verdicts.first.inner_text()
    assert_clean(page, urls, "question")

    # 5. Compare the batch: p-values per metric, the score and refusal table, the chart drawn.
    page.goto(f"{base}/compare/?batch={judged.batch_id}")
    page.wait_for_selector("#compare-chart .main-svg", timeout=15_000)
    traces = page.evaluate("Array.from(document.getElementById('compare-chart').data, t => t.name)")
    assert sorted(traces) == ["extractive", "llm answers"]
    headers = page.locator("table.compare-pairs thead th.num").all_inner_texts()
    assert headers[0].lower() == "score"
    assert page.locator("table.compare-pairs tbody tr").first.locator("div.p").count() == len(headers) - 1
    assert page.locator("table.compare-run-level tbody tr").count() == 2
    screenshot(page, "ans-06-compare")
    assert_clean(page, urls, "compare")

    # 6. The score over time, with a week of earlier runs of both configurations.
    collection = Collection.objects.get(slug=SLUG)
    for day in range(1, 7):
        for label, shift in (("extractive", 0.03 * day), ("llm answers", 0.1 - 0.015 * day)):
            make_answer_run(
                collection.tenant,
                collection,
                label,
                questions(shift, with_recall=label != "extractive"),
                created_at=timezone.now() - timedelta(days=day),
            )
    page.goto(f"{base}/trends/?metric=score")
    page.wait_for_selector("#trends-chart .main-svg", timeout=15_000)
    assert page.locator("select[name=metric] optgroup[label='answer runs'] option").count() == 8
    screenshot(page, "ans-07-trends")
    assert_clean(page, urls, "trends")
    assert parse_qs(urlsplit(page.url).query)["metric"] == ["score"]
    assert extractive.pk != judged.pk

    # 7. The launcher for answer evaluations, a tab beside the retrieval one.
    page.click("header nav.main-nav >> text=Launch")
    page.wait_for_url(f"{base}/launch/")
    page.click("nav.tabs >> text=Answers")
    page.wait_for_url(f"{base}/launch/answers/")
    assert page.locator("table.answer-configs tbody tr").count() == 4
    assert page.locator("select[name=configs-2-groundedness]").input_value() == "Medium"
    screenshot(page, "ans-08-launch")
    assert_clean(page, urls, "launch answers")


def test_answer_pages_fit_a_narrow_screen(live_server, browser, screenshot, answer_runs):
    with open_page(browser, PHONE) as page:
        urls = watch_requests(page)
        base = live_server.url
        log_in(page, base, USERNAME, PASSWORD)
        judged = answer_runs[1]
        pages = {
            "run": f"{base}/runs/{judged.pk}/",
            "question": f"{base}/runs/{judged.pk}/questions/1/",
        }
        overflowing: dict[str, dict] = {}
        for name, url in pages.items():
            page.goto(url)
            width = overflow(page)
            screenshot(page, f"ans-narrow-{name}", max_height=2400)
            if width["scroll"] > width["inner"] + 1:
                overflowing[name] = width
            assert_clean(page, urls, f"narrow {name}")
        # On a phone the passages follow the answer.
        answer, passages = (
            page.locator(".answer-pane").bounding_box(),
            page.locator(".passages-pane").bounding_box(),
        )
        assert answer and passages and passages["y"] >= answer["y"] + answer["height"]
        assert overflowing == {}, f"pages wider than the screen: {overflowing}"
