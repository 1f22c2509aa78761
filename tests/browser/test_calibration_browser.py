"""Calibration in a real browser: upload a label file, read the raters' agreement and the judges' figures,
see the ROC and reliability charts drawn (plotly from the server, nothing off it), apply the best threshold."""

from __future__ import annotations

import json

import pytest

from evaluation.models import JudgeThreshold
from goldenset import services
from goldenset.models import Collection
from tests.browser.conftest import HANDBOOK, HANDBOOK_PASSWORD, HANDBOOK_USER
from tests.browser.pages import assert_clean, log_in, watch_requests
from tests.support import add_entries

pytestmark = pytest.mark.django_db(transaction=True)

TEXT = "Customers get a full refund within 30 days of purchase."
ANSWERS = {"pass": TEXT, "fail": "Orders ship by express courier overnight."}


def test_a_user_uploads_labels_reads_the_calibration_and_applies_a_threshold(
    live_server, page, screenshot, handbook_member, tmp_path
):
    collection = Collection.objects.get(slug=HANDBOOK)
    add_entries(
        collection, *(services.EntryInput(question=f"Refund question {i}?", key=f"r{i}") for i in range(8))
    )
    rows = [
        {"question_id": f"r{i}", "rater": rater, "metric": "faithfulness",
         "label": label if (rater, i) != ("bob", 3) else "fail", "answer": ANSWERS[label] + " " * i,
         "passages": [{"document_id": "refunds", "title": "Refunds", "text": TEXT}]}
        for i, label in enumerate(["pass", "pass", "pass", "pass", "fail", "fail", "fail", "pass"])
        for rater in ("ann", "bob")
    ]  # fmt: skip
    path = tmp_path / "labels.json"
    path.write_text(json.dumps(rows))
    urls = watch_requests(page)
    log_in(page, live_server.url, HANDBOOK_USER, HANDBOOK_PASSWORD)
    page.goto(f"{live_server.url}/collections/{HANDBOOK}/")
    page.click("nav.tabs a:has-text('Calibration')")
    assert "No labels yet" in page.inner_text("body")
    page.set_input_files("input[name=file]", str(path))
    page.click("button:has-text('Upload labels')")
    page.wait_for_selector("#rater-agreement")
    assert "Imported labels.json: 16 labels created" in page.inner_text("body")
    page.wait_for_selector("#roc-faithfulness-question .main-svg")
    page.wait_for_selector("#reliability-faithfulness-question .main-svg")
    # Each chart fits its half of the row (plotly sizes a chart once, when its script runs).
    fits = page.evaluate(
        """() => [...document.querySelectorAll('.chart-pair .chart')].map(
            c => c.querySelector('.main-svg').getBoundingClientRect().width <= c.getBoundingClientRect().width)"""
    )
    assert fits == [True, True]
    screenshot(page, "calibration-01-report")
    row = page.inner_text("#calibration-faithfulness-question tbody tr")
    assert row.startswith("heuristic") and "default" in row
    page.click("#calibration-faithfulness-question .threshold-actions button:has-text('Apply')")
    page.wait_for_selector("text=now passes at")
    screenshot(page, "calibration-02-applied", max_height=900)
    assert JudgeThreshold.objects.get(collection=collection).metric == "faithfulness"
    assert "calibrated" in page.inner_text("#calibration-faithfulness-question tbody tr")
    assert "passes at 0.500 in this collection (calibrated)" in page.inner_text(
        "#calibration-faithfulness-question"
    )
    assert_clean(page, urls, "calibration")
