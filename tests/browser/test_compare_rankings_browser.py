"""Rankings side by side in a real browser: from Compare's pairwise table to two runs' rankings question by
question, the chart of how alike they are drawn (plotly from the server, nothing off it)."""

from __future__ import annotations

import pytest

from tests.browser.pages import assert_clean, log_in, watch_requests

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_user_opens_the_rankings_of_a_pair_from_compare(live_server, page, screenshot, policies_batch):
    urls = watch_requests(page)
    log_in(page, live_server.url, "alice", "alice-judges-pools")
    page.goto(f"{live_server.url}/compare/?batch={policies_batch}")
    page.click("a.rankings-link")
    page.wait_for_selector("#rbo-chart .main-svg")
    assert page.locator("#least-alike tbody tr").count() == 4  # the four questions
    assert "rank-biased overlap" in page.inner_text(".summary")
    screenshot(page, "rankings-01", max_height=1600)
    assert_clean(page, urls, "rankings side by side")
