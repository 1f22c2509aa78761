"""A saved preset launched in a real browser: /launch/?preset=NAME (a study's "Launch it") opens with the preset's
row chosen and ticked alone; Start evaluates it (one configuration: its run's page opens, named after the preset);
nothing off the server, no console error, nothing sticking out at 800 px."""

from __future__ import annotations

import re

import pytest

from evalsite.tenancy.services import tenant_get_or_create
from evaluation.models import ConfigPreset, EvaluationRun
from goldenset.models import Collection
from tests.browser.conftest import HANDBOOK_PASSWORD, HANDBOOK_USER
from tests.browser.pages import CLIPPED, assert_clean, log_in, watch_requests
from tests.support import handbook_entries

pytestmark = pytest.mark.django_db(transaction=True)

TUNED = {"search_type": "FullText", "bm25_variant": "okapi", "bm25_k1": 1.6, "bm25_b": 0.4}


def test_a_saved_preset_is_launched_from_its_link(live_server, page, screenshot, handbook_member):
    tenant = tenant_get_or_create(cluster_slug="acme", tenant_slug="search")
    handbook_entries(Collection.objects.get(tenant=tenant, slug="handbook"))
    ConfigPreset.objects.create(tenant=tenant, name="tuned bm25", config=TUNED)
    base = live_server.url
    urls = watch_requests(page)
    log_in(page, base, HANDBOOK_USER, HANDBOOK_PASSWORD)
    page.goto(f"{base}/launch/?preset=tuned%20bm25")
    assert page.input_value("select[name=configs-0-preset]") == "tuned bm25"
    assert page.is_checked("input[name=configs-0-enabled]")
    assert not page.is_checked("input[name=configs-1-enabled]")
    page.set_viewport_size({"width": 800, "height": 900})
    assert page.evaluate(CLIPPED) == []
    screenshot(page, "launch-preset-800", max_height=2400)
    assert_clean(page, urls, "launch")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.click("button:has-text('Start evaluation')")
    page.wait_for_url(re.compile(r"/runs/[0-9a-f-]+/$"), timeout=60_000)
    run = EvaluationRun.objects.get()
    assert run.label == "tuned bm25" and run.config["bm25_k1"] == 1.6
    assert "tuned bm25" in page.inner_text("h1")
