"""A study in a real browser, on the demo's ClapNQ sample with a real worker: started from the collection's page
(Tune; the answer configuration's rows shown only while an answer metric is typed), its page followed while the
trials arrive (the charts redrawn, the rows added) until Completed, every chart drawn with data (importance withheld
from so few trials, and said), the verdict and both runs shown, the winner saved as a preset (past its warning when
not shown better; the same name again refused on its field); nothing off the server, no console error, nothing sticking out at 800 and 1366 px.

Screenshots go to test-artifacts/screenshots/study-*.png (not committed): look at them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evalsite.tenancy.services import tenant_get_or_create
from evaluation.models import ConfigPreset, Study
from goldenset.beir_import import beir_import
from tests.browser.pages import CLIPPED, assert_clean, log_in, watch_requests
from tests.support import member_of

pytestmark = pytest.mark.django_db(transaction=True)

CLAPNQ = Path(__file__).resolve().parents[2] / "demo" / "clapnq"
USERNAME, PASSWORD = "alice", "alice-studies-secret"
CHARTS = ("history", "parallel", "heatmap", "importance")
TRIALS = 30


@pytest.fixture
def qcluster(fresh_indexes, qcluster):
    """The shared worker (tests/conftest.py), started after this test's own index directory is in place, so the
    page sees the study Queued, then Running, then Completed (sync mode would run it within the POST)."""
    return qcluster


@pytest.fixture
def clapnq_member():
    tenant = tenant_get_or_create(cluster_slug="acme", tenant_slug="search")
    beir_import(folder=CLAPNQ, tenant=tenant, collection_id="clapnq", actor="test")
    return member_of(tenant, USERNAME, password=PASSWORD)


def drawn(page, name: str) -> int:
    """How many traces the chart holds, with points in them, once plotly has drawn it."""
    page.wait_for_selector(f"#study-{name} .main-svg", timeout=15_000)
    return page.evaluate(
        """id => (document.getElementById(id).data || []).filter(t =>
             (t.x && t.x.length) || (t.z && t.z.length) || (t.dimensions && t.dimensions[0].values.length)).length""",
        f"study-{name}",
    )


def fits(page, width: int) -> list[str]:
    page.set_viewport_size({"width": width, "height": 900})
    page.wait_for_timeout(300)  # plotly's responsive charts resize on the window's resize
    return page.evaluate(CLIPPED)


def test_a_user_tunes_a_collection_and_follows_the_study_to_its_verdict(
    live_server, page, screenshot, clapnq_member, qcluster
):
    base = live_server.url
    urls = watch_requests(page)
    log_in(page, base, USERNAME, PASSWORD)
    page.goto(f"{base}/collections/clapnq/")
    page.click("a:has-text('Tune')")
    page.wait_for_url(re.compile(r"/studies/new/\?collection=clapnq$"))
    # The form opens ready to run: FullText with BM25's k1 and b as ranges. Add the BM25 formula, a budget, a seed.
    assert page.input_value("input[name=low_bm25_k1]") == "0.3"
    # An answer configuration's rows show only while the metric is an answer metric, without a reload.
    answer_rows = ("#space-groundedness", "#space-model")
    assert not any(page.is_visible(row) for row in answer_rows)
    page.fill("input[name=metric]", "faithfulness")
    assert all(page.is_visible(row) for row in answer_rows)
    page.fill("input[name=metric]", "ndcg@10")
    assert not any(page.is_visible(row) for row in answer_rows)
    page.check("input[name=vary_bm25_variant][value=lucene]")
    page.check("input[name=vary_bm25_variant][value=okapi]")
    page.fill("input[name=trials]", str(TRIALS))
    page.fill("input[name=seed]", "3")
    page.set_viewport_size({"width": 800, "height": 900})
    assert page.evaluate(CLIPPED) == []
    screenshot(page, "study-new-800", max_height=2400)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.click("button:has-text('Start the study')")
    page.wait_for_url(re.compile(r"/studies/[0-9a-f-]+/$"))
    study = Study.objects.get()
    assert study.request["budget"]["trials"] == TRIALS and set(study.request["space"]) == {
        "bm25_k1", "bm25_b", "bm25_variant"
    }  # fmt: skip

    # While it runs: the rows and the charts follow the trials, without a reload.
    page.wait_for_function(
        "() => document.querySelectorAll('table.study-trials tbody tr:not(.no-trials)').length >= 3",
        timeout=120_000,
    )
    if page.get_attribute("#study", "data-finished") == "false":
        assert page.inner_text("[data-study-status]") in ("Queued", "Running")
        screenshot(page, "study-running-1366")
        page.set_viewport_size({"width": 800, "height": 900})
        screenshot(page, "study-running-800", max_height=3000)
        page.set_viewport_size({"width": 1280, "height": 900})
        assert drawn(page, "history") >= 1

    # Done: the page reloads itself with the result.
    page.wait_for_selector("#study[data-finished=true]", timeout=180_000)
    assert page.inner_text("[data-study-status]") == "Completed", page.inner_text("#study")
    study.refresh_from_db()
    assert len(study.trials) == TRIALS and study.confirmation is not None
    rows = page.locator("table.study-trials tbody tr")
    assert rows.count() == TRIALS
    assert (
        page.locator("table.study-trials tr.best-trial td")
        .first.inner_text()
        .startswith(str(study.best["number"]))
    )
    for name in CHARTS[:3]:
        assert drawn(page, name) >= 1, name
    # Importance from fewer than 41 complete trials is withheld, and the page says why.
    assert page.locator("#study-importance").count() == 0
    assert "Importance is withheld below 41 trials" in page.inner_text("[data-importance-note]")
    assert page.inner_text("[data-verdict]") == study.confirmation["verdict"]
    for side in ("baseline", "winner"):
        assert page.locator(f"a[href='/runs/{study.confirmation[side]['run_id']}/']").count() == 1
    assert page.locator("a[data-compare-runs]").count() == 1
    for width in (1366, 800):
        assert fits(page, width) == [], width
        screenshot(page, f"study-done-{width}", max_height=4000)
    page.set_viewport_size({"width": 1280, "height": 900})

    # The heatmap's fields are picked: the page comes back with the pair asked for.
    page.select_option("select[name=x]", "bm25_variant")
    page.wait_for_url(re.compile(r"\?x=bm25_variant&y="))
    assert drawn(page, "heatmap") == 1
    assert "bm25_variant" in page.evaluate("document.getElementById('study-heatmap').layout.xaxis.title.text")

    # The winner saved as a preset (one not shown better past its warning); the same name again is said on the
    # field.
    page.fill("#preset-name", "tuned clapnq")
    if not study.confirmation["significant"]:
        assert "was not shown better than the baseline" in page.inner_text("[data-save-warning]")
        page.click("button:has-text('Save preset')")
        page.wait_for_selector("[data-field-error=accept_not_better]")
        assert not ConfigPreset.objects.exists()
        page.check("#accept-not-better")
        page.click("button:has-text('Save preset')")
    page.wait_for_selector(".message.success")
    assert ConfigPreset.objects.get(name="tuned clapnq").study_id == study.pk
    page.fill("#preset-name", "tuned clapnq")
    if not study.confirmation["significant"]:
        page.check("#accept-not-better")
    page.click("button:has-text('Save preset')")
    page.wait_for_selector("[data-field-error=name]")
    assert "exists already" in page.inner_text("[data-field-error=name]")
    conflicts = 1 if study.confirmation["significant"] else 2
    assert (
        page.errors
        == ["Failed to load resource: the server responded with a status of 409 (Conflict)"] * conflicts
    )
    page.errors.clear()

    # The studies list leads back to it.
    page.goto(f"{base}/studies/?collection=clapnq")
    assert page.locator("table.studies tbody tr").count() == 1
    assert study.metric in page.inner_text("table.studies tbody tr")
    assert_clean(page, urls, "study")
