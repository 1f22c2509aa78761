"""The runs list and Trends, seen in a real browser: an answer run's mode chip stays
inside the runs list at a laptop's width and a narrow one, and Trends on fresh runs spans a readable time range."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from evaluation.models import EvaluationRun
from goldenset.models import Collection
from tests.browser.conftest import HANDBOOK, HANDBOOK_PASSWORD, HANDBOOK_USER
from tests.browser.pages import assert_clean, log_in, open_page, watch_requests
from tests.dashboard.answer_runs_support import make_answer_run, questions
from tests.dashboard.conftest import make_runs

SLUG, USERNAME, PASSWORD = HANDBOOK, HANDBOOK_USER, HANDBOOK_PASSWORD

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def answer_runs(handbook_member) -> list[EvaluationRun]:
    """Two answer runs with long labels, every answer metric and a mode chip."""
    collection = Collection.objects.get(slug=SLUG)
    batch_id, now = uuid.uuid4(), timezone.now()
    return [
        make_answer_run(
            collection.tenant,
            collection,
            label,
            questions(shift, judge="llm-judge"),
            batch_id=batch_id,
            mode="mixed",
            created_at=now - timedelta(seconds=seconds),
        )
        for label, shift, seconds in (
            ("answers hybrid grounded with a long label", 0.0, 2),
            ("answers fulltext", 0.1, 1),
        )
    ]


@pytest.mark.parametrize("width", [1280, 1024])
def test_an_answer_runs_mode_chip_is_inside_the_runs_list(
    live_server, browser, screenshot, answer_runs, width
):
    with open_page(browser, {"width": width, "height": 900}) as page:
        urls = watch_requests(page)
        log_in(page, live_server.url, USERNAME, PASSWORD)
        page.goto(f"{live_server.url}/runs/")
        screenshot(page, f"ux-runs-{width}")
        wrap = page.locator(".table-wrap").bounding_box()
        assert wrap is not None
        chips = page.locator("table.runs td.metrics .mode")
        assert chips.count() == 2
        for index in range(2):
            chip = chips.nth(index).bounding_box()
            assert chip is not None
            # Within the list's visible box, not scrolled or cut off past its right edge.
            assert chip["x"] >= wrap["x"] and chip["x"] + chip["width"] <= wrap["x"] + wrap["width"] - 1, (
                chip,
                wrap,
            )
        if width >= 1280:  # a laptop's width shows every column without scrolling sideways
            scroll, client = page.evaluate(
                "(() => { const w = document.querySelector('.table-wrap'); return [w.scrollWidth, w.clientWidth]; })()"
            )
            assert scroll <= client, (scroll, client)
        assert_clean(page, urls, "runs")


def test_trends_of_fresh_runs_span_a_day_not_milliseconds(live_server, page, screenshot, handbook_member):
    """Three configurations run a second apart (a fresh install): the axis reads in hours, the markers sit in it."""
    collection = Collection.objects.get(slug=SLUG)
    make_runs(collection.tenant, collection, 3, step=timedelta(seconds=1))
    urls = watch_requests(page)
    log_in(page, live_server.url, USERNAME, PASSWORD)
    page.goto(f"{live_server.url}/trends/?collection={SLUG}&metric=ndcg@10")
    page.wait_for_selector("#trends-chart .xtick text")
    ticks = page.locator("#trends-chart .xtick text").all_text_contents()
    screenshot(page, "ux-trends-fresh")
    assert ticks and not [t for t in ticks if re.search(r"\d:\d\d:\d\d|\.\d", t)], ticks
    assert page.locator("#trends-chart .scatterlayer .point").count() == 3
    assert_clean(page, urls, "trends")
