"""Every page of the dashboard's tour at 800 and 1366 px wide, in a real browser: nothing sticks out of its card
or container sideways (a wide table scrolls inside its own box, one with overflow-x: auto, which is meant; a
clipped or protruding one is not), the page itself is no wider than the window, and no console error.
In the 800 px visit, axe-core (tests/browser/accessibility.py) checks each page against WCAG 2.1 A and AA (and the
sign-in page, the admin's and the API docs besides), and every chart must have a caption and a text alternative
(its figures in a table). At 390 px, a few pages' tables keep the column that names their rows in view.

The data is the browser tests' own: the handbook collection with golden entries, a real retrieval batch, the
answer batch of tests/dashboard/answer_runs_support.py, human labels, a target, a running job, a pool and a
finished study (tests/dashboard/study_support.py).
Screenshots go to test-artifacts/screenshots/ as tour-<page>-<width>.png (not committed): look at them.
"""

from __future__ import annotations

import json
import os
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.utils import timezone

from evalsite.jobs.models import Job, JobStatus
from evaluation.configs import parse_configs
from evaluation.judgments.label_import import labels_import
from evaluation.judgments.labels import read_labels
from evaluation.judgments.pools import pool_create
from evaluation.models import Alert, Delivery, EvaluationJobKind, Schedule, ScheduleRun
from evaluation.retrieval.evaluate import evaluate_retrieval
from evaluation.retrieval.read_path import available_rerankers
from evaluation.runs.slices import Subset
from evaluation.targets.services import target_create
from goldenset import services
from goldenset.models import Collection
from tests.browser.accessibility import BLOCKING, axe_missing, axe_violations, blocking
from tests.browser.conftest import HANDBOOK, HANDBOOK_PASSWORD, HANDBOOK_USER, SCREENSHOTS
from tests.browser.pages import CLIPPED, PHONE, assert_clean, log_in, open_page, watch_requests
from tests.dashboard.answer_runs_support import make_answer_batch
from tests.dashboard.study_support import finished_study
from tests.support import add_entries

pytestmark = pytest.mark.django_db(transaction=True)

WIDTHS = (800, 1366)
# Pages axe checks besides the tour's (not laid out by the dashboard's stylesheet, so not measured): the admin's,
# and the API docs, whose Swagger UI is vendored (drf-spectacular-sidecar): on it only critical violations fail.
AXE_ONLY = {"admin": "/admin/", "admin-entries": "/admin/goldenset/goldenentry/", "admin-jobs": "/admin/jobs/job/",
            "api-docs": "/api/docs"}  # fmt: skip
VENDORED = {"api-docs"}
# axe runs once per page, in the narrower window (more tables scroll there); its findings go to AXE_REPORT.
AXE_WIDTH = 800
AXE_REPORT = SCREENSHOTS.parent / "axe-tour.json"
# Tables a laptop's window shows whole, without scrolling sideways: (page, the table's scroller).
FIT_AT_1366 = {"runs": ".table-wrap:has(table.runs)", "launch": ".table-wrap:has(table.configs)",
               "launch-answers": ".table-wrap:has(table.answer-configs)",
               "study-new": ".table-wrap:has(table.space-editor)", "study": ".table-wrap:has(table.study-trials)"}  # fmt: skip

# A scroller whose content is wider than it says so: a faded edge on the side there is more (class more-right or
# more-left), gone once scrolled to that end. [scrollers that overflow, those not marked at the start, those
# still marked at the end]
SCROLL_CUES = """() => {
  const wide = [...document.querySelectorAll('main .table-wrap')].filter(w => w.scrollWidth > w.clientWidth + 1);
  const unmarked = wide.filter(w => !w.classList.contains('more-right') || w.classList.contains('more-left'));
  wide.forEach(w => { w.scrollLeft = w.scrollWidth; w.dispatchEvent(new Event('scroll')); });
  const stuck = wide.filter(w => w.classList.contains('more-right') || !w.classList.contains('more-left'));
  wide.forEach(w => { w.scrollLeft = 0; w.dispatchEvent(new Event('scroll')); });
  return [wide.length, unmarked.length, stuck.length];
}"""
# Every chart has a caption (its title) and a text alternative: a table of its figures in a <details>, or a note
# naming the page's table that holds them. [plots without]
CHART_ALTERNATIVES = """() => [...document.querySelectorAll('main .plotly-graph-div')].map(plot => {
  const figure = plot.closest('figure.plot');
  if (!figure) return plot.id + ': not in a figure';
  if (!(figure.querySelector('figcaption') || {textContent: ''}).textContent.trim()) return plot.id + ': no caption';
  if (figure.querySelector('details.plot-data tbody tr, details.plot-data p')) return null;
  const note = figure.querySelector('[data-table]');
  const table = note && document.getElementById(note.dataset.table);
  return table && table.querySelector('tbody tr') ? null : plot.id + ': no text alternative';
}).filter(Boolean)"""
TEXT = "Customers get a full refund within 30 days of purchase."


@pytest.fixture
def tour(handbook_member) -> dict[str, str]:
    """The tour's pages (name -> path), with data on each."""
    collection = Collection.objects.get(slug=HANDBOOK)
    tenant = collection.tenant
    entries = add_entries(
        collection,
        *(
            services.EntryInput(question=q, expected_document_ids=[d], key=d, tags=["policy"])
            for d, q in {
                "refunds": "How long do customers have to get a full refund?",
                "shipping": "When does express shipping arrive?",
                "warranty": "What does the two-year warranty cover?",
            }.items()
        ),
    )
    configs = parse_configs(
        [
            {"label": "fulltext lucene with a rather long label", "search_type": "FullText"},
            {"label": "okapi", "bm25_variant": "okapi"},
            {"label": "hybrid rrf", "search_type": "Hybrid", "fusion": "Rrf"},
        ],
        available_rerankers(),
    )
    batch_id, runs = evaluate_retrieval(
        tenant=tenant, collections=[collection], ks=[1, 5, 10], configs=configs
    )
    answers = make_answer_batch(tenant, collection)
    rows = [
        {"question_id": f"r{i}", "rater": rater, "metric": "faithfulness", "label": label,
         "answer": (TEXT if label == "pass" else "Orders ship overnight.") + " " * i,
         "passages": [{"document_id": "refunds", "title": "Refunds", "text": TEXT}]}
        for i, label in enumerate(["pass", "pass", "pass", "fail", "fail", "pass"])
        for rater in ("ann", "bob")
    ] + [  # statement labels, as the demo's: no Apply, and the section says why
        {"question_id": f"r{i}", "rater": "ann", "metric": "faithfulness", "label": label, "statement": statement,
         "answer": TEXT + " Orders ship overnight.", "passages": [{"document_id": "refunds", "title": "Refunds",
         "text": TEXT}]}
        for i, (label, statement) in enumerate((("supported", TEXT), ("not supported", "Orders ship overnight.")))
    ]  # fmt: skip
    add_entries(
        collection, *(services.EntryInput(question=f"Refund question {i}?", key=f"r{i}") for i in range(6))
    )
    labels_import(
        tenant=tenant, collection=collection, rows=read_labels(json.dumps(rows).encode()), actor="test"
    )
    target_create(
        tenant=tenant,
        data={"name": "prod-search", "kind": "http", "base_url": "https://search.example.com/retrieve",
              "options": {"request_template": {"q": "{{query}}"}, "response_mapping": {"ids": "hits[].id"}}},
        actor="test",
    )  # fmt: skip
    job = Job.objects.create(tenant=tenant, collection=collection, kind=EvaluationJobKind.EVALUATE, input={})
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING, started_at=timezone.now(), heartbeat_at=timezone.now() + timedelta(hours=1)
    )
    pool = pool_create(
        tenant=tenant, collection=collection, run_ids=[str(r.pk) for r in runs], depth=10,
        raters_per_item=1, subset=Subset(), actor="test",
    )  # fmt: skip
    study = finished_study(tenant, collection, runs[0], runs[1])
    run, answer = runs[0], answers.judged
    # A schedule with a failing tick and its alert (told to a webhook that answered 500 once, then 204).
    schedule = Schedule.objects.create(
        tenant=tenant, collection=collection, name="nightly regression watch", configs=[{"label": "bm25"}],
        ks=[10], cron="0 3 * * *", timezone="Europe/Paris", gate={"metric": "ndcg@10", "min": 0.9},
        next_run_at=timezone.now() + timedelta(hours=5),
    )  # fmt: skip
    tick = ScheduleRun.objects.create(
        schedule=schedule, tick_at=timezone.now(), batch_id=batch_id, passed=False
    )
    alert = Alert.objects.create(
        tenant=tenant, collection=collection, schedule=schedule, fired_by=tick,
        reasons=[{"reason": "below-min", "label": "nightly regression watch · bm25",
                  "message": "ndcg@10 0.6131 is below the minimum 0.9"}],
    )  # fmt: skip
    Delivery.objects.create(alert=alert, event="firing", channel={"kind": "webhook", "url": "https://hooks.example.com/x"},
                            state="sent", attempts=[{"ok": False, "status": 500}, {"ok": True, "status": 204}])  # fmt: skip
    # The warranty rewritten and expired after the runs: the drift page lists its entry, the run page says so.
    services.documents_upsert(
        collection=collection,
        documents=[
            services.DocumentInput(
                id="warranty", title="Warranty", pages=["A three-year warranty now."],
                valid_until=timezone.now() - timedelta(days=1),
            )
        ],
        actor="test",
    )  # fmt: skip
    # alice is staff too, with the golden sets' and the jobs' admin: the admin's pages are checked by axe.
    handbook_member.is_staff = True
    handbook_member.save(update_fields=["is_staff"])
    handbook_member.user_permissions.set(
        Permission.objects.filter(content_type__app_label__in=["goldenset", "jobs"])
    )
    return {
        "home": "/",
        "collection": f"/collections/{HANDBOOK}/",
        "golden-entry": f"/collections/{HANDBOOK}/golden/{entries[0].pk}/",
        "documents": f"/collections/{HANDBOOK}/documents/",
        "document": f"/collections/{HANDBOOK}/documents/refunds",
        "generate": f"/collections/{HANDBOOK}/golden/generate/",
        "review": f"/collections/{HANDBOOK}/golden/review/",
        "activity": f"/collections/{HANDBOOK}/activity/",
        "drift": f"/collections/{HANDBOOK}/drift/",
        "calibration": f"/collections/{HANDBOOK}/calibration/",
        "launch": "/launch/",
        "launch-answers": "/launch/answers/",
        "runs": "/runs/",
        "run": f"/runs/{run.pk}/",
        "run-question": f"/runs/{run.pk}/questions/1/",
        "compare": f"/compare/?batch={batch_id}",
        "compare-rankings": f"/compare/rankings/?a={runs[0].pk}&b={runs[1].pk}",
        "trends": "/trends/",
        "answer-run": f"/runs/{answer.pk}/",
        "answer-question": f"/runs/{answer.pk}/questions/1/",
        "answer-compare": f"/compare/?batch={answers.batch_id}",
        "targets": "/targets/",
        "target-new": "/targets/new/",
        "target": "/targets/prod-search/",
        "job": f"/jobs/{job.pk}/",
        "pool": f"/pools/{pool.pk}/",
        "judge": f"/pools/{pool.pk}/judge/",
        "studies": "/studies/",
        "study-new": f"/studies/new/?run={runs[2].pk}",
        "study": f"/studies/{study.pk}/",
        "team": "/team/",  # alice is the tenant's admin: its members and keys (the tests' two keys among them)
        "workbench": f"/collections/{HANDBOOK}/workbench/",
        "workbench-question": f"/collections/{HANDBOOK}/workbench/question/?entry={entries[0].pk}&explain=1",
        "schedules": "/schedules/",
        "schedule-new": "/schedules/new/",
        "alerts": "/alerts/",
    }


@pytest.mark.parametrize("width", WIDTHS)
def test_every_page_of_the_tour_fits_its_boxes(live_server, browser, screenshot, tour, width):
    """At AXE_WIDTH the same visit also runs axe on every page (and on the sign-in page before it): nothing
    critical or serious against WCAG 2.1 A and AA; and every chart has a caption and a text alternative."""
    missing = axe_missing() if width == AXE_WIDTH else None
    if missing:  # as a missing browser (tests/browser/conftest.py): CI fails, a machine without npm skips
        if os.environ.get("EVALSITE_REQUIRE_BROWSER") == "1":
            pytest.fail(f"EVALSITE_REQUIRE_BROWSER=1 but {missing}")
        pytest.skip(missing)
    with open_page(browser, {"width": width, "height": 900}) as page:
        urls = watch_requests(page)
        page.on("response", lambda r: print("BAD", r.status, r.url) if r.status >= 400 else None)
        found_axe: dict[str, list[dict]] = {}
        if width == AXE_WIDTH:
            page.goto(live_server.url + "/accounts/login/")
            found_axe["login"] = axe_violations(page)
        log_in(page, live_server.url, HANDBOOK_USER, HANDBOOK_PASSWORD)
        clipped: dict[str, list[str]] = {}
        for name, path in tour.items():
            response = page.goto(live_server.url + path)
            assert response is not None and response.ok, (name, response and response.status)
            page.wait_for_load_state("load")
            if page.locator(".plotly-graph-div").count():
                page.wait_for_selector(".plotly-graph-div .main-svg", timeout=15_000)
            screenshot(page, f"tour-{name}-{width}", max_height=2400)
            found = page.evaluate(CLIPPED)
            wide, unmarked, stuck = page.evaluate(SCROLL_CUES)
            if unmarked or stuck:
                found.append(f"{wide} tables scroll: {unmarked} without a cue, {stuck} cued at their end")
            if width == 1366 and name in FIT_AT_1366:
                scroll, client = page.eval_on_selector(
                    FIT_AT_1366[name], "w => [w.scrollWidth, w.clientWidth]"
                )
                if scroll > client + 1:
                    found.append(f"{FIT_AT_1366[name]} scrolls at 1366 px: {scroll} > {client}")
            if width == AXE_WIDTH:
                found_axe[name] = axe_violations(page)
                found += page.evaluate(CHART_ALTERNATIVES)
            if found:
                clipped[name] = found
            assert_clean(page, urls, f"{name} at {width} px")
        for name, path in AXE_ONLY.items() if width == AXE_WIDTH else ():
            response = page.goto(live_server.url + path)
            assert response is not None and response.ok, (name, response and response.status)
            if name in VENDORED:
                page.wait_for_selector(".swagger-ui .opblock")  # drawn by its script
            found_axe[name] = axe_violations(page, ("critical",) if name in VENDORED else BLOCKING)
            assert_clean(page, urls, name)
        if found_axe:  # all of them, for the record; the critical and serious ones fail the test
            AXE_REPORT.parent.mkdir(parents=True, exist_ok=True)
            AXE_REPORT.write_text(json.dumps(found_axe, indent=1))
        assert clipped == {}, json.dumps(clipped, indent=1)
        failing = {
            name: [v for v in blocking(found) if name not in VENDORED or v["impact"] == "critical"]
            for name, found in found_axe.items()
        }
        failing = {name: found for name, found in failing.items() if found}
        assert failing == {}, json.dumps(failing, indent=1)


# On a phone, per page: the tables whose naming column is pinned (class pin), and whether one of a metric's columns
# must show beside it before any scrolling. [(the table, a metric in view at once)]
PHONE_TABLES = {
    "home": [("table.latest-runs", True)],
    "run": [("table.questions", True), ("table.run-slices", True)],
    "answer-run": [("table.answer-questions", False)],
    "compare": [("table.compare-means", True), ("table.compare-pairs", True)],
}
# [what is wrong with each table]: its pinned cells out of view once scrolled to its end, or no metric in view.
PINNED = """([selector, metricAtOnce]) => {
  const table = document.querySelector(selector);
  if (!table) return [selector + ': missing'];
  const wrap = table.closest('.table-wrap'), problems = [];
  const inView = e => { const r = e.getBoundingClientRect(), w = wrap.getBoundingClientRect();
                        return r.width > 0 && r.left >= w.left - 1 && r.right <= w.right + 1; };
  const metric = /recall|ndcg|mrr|metric|score|faithful/i;  // a metric's column, 3rem of it or more in view
  const shows = th => { const r = th.getBoundingClientRect(), w = wrap.getBoundingClientRect();
                        return r.left >= w.left - 1 && r.left < w.right - 48; };
  if (metricAtOnce && ![...table.tHead.rows[0].cells].some(th => metric.test(th.textContent) && shows(th)))
    problems.push(selector + ': no metric in view');
  wrap.scrollLeft = wrap.scrollWidth;
  const pins = [...table.querySelectorAll('td.pin, th.pin')];
  if (!pins.length || wrap.scrollWidth <= wrap.clientWidth) problems.push(selector + ': nothing pinned or no scroll');
  else if (!pins.every(inView)) problems.push(selector + ': its naming column scrolls out of view');
  wrap.scrollLeft = 0;
  return problems;
}"""
# The chart's caption whole (not cut, one line or more) and apart from plotly's toolbar, shown while hovered.
TOOLBAR = """(id) => {
  const caption = document.getElementById(id + '-title'), bar = document.querySelector('#' + id + ' .modebar');
  if (!caption) return {caption: 'none: the title is drawn in the plot', shown: getComputedStyle(bar).opacity};
  const c = caption.getBoundingClientRect(), b = bar.getBoundingClientRect();
  const overlap = b.width > 0 && c.left < b.right && b.left < c.right && c.top < b.bottom && b.top < c.bottom;
  return {overlap, cut: caption.scrollWidth > caption.clientWidth + 1, shown: getComputedStyle(bar).opacity};
}"""


@pytest.fixture
def phone_pages(handbook_member) -> dict[str, str]:
    collection = Collection.objects.get(slug=HANDBOOK)
    add_entries(
        collection,
        *(
            services.EntryInput(question=q, expected_document_ids=[d], key=d, tags=["policy"])
            for d, q in {
                "refunds": "How long do customers have to get a full refund?",
                "shipping": "When does express shipping arrive?",
            }.items()
        ),
    )
    configs = parse_configs(
        [{"label": "fulltext lucene with a rather long label"}, {"label": "okapi", "bm25_variant": "okapi"}],
        available_rerankers(),
    )
    batch_id, runs = evaluate_retrieval(
        tenant=collection.tenant, collections=[collection], ks=[1, 5, 10], configs=configs
    )
    answers = make_answer_batch(collection.tenant, collection)
    return {
        "home": "/",
        "run": f"/runs/{runs[0].pk}/",
        "answer-run": f"/runs/{answers.judged.pk}/",
        "compare": f"/compare/?batch={batch_id}",
    }


def test_on_a_phone_the_naming_column_stays_in_view_and_the_toolbar_leaves_the_title(
    live_server, browser, screenshot, phone_pages
):
    """At 390 px: a run's and the home page's tables show a metric beside the column that names their rows, which
    stays in view as the table scrolls sideways (so do Compare's); Compare's chart title is whole and plotly's
    toolbar, shown by a touch, does not cover it."""
    with open_page(browser, PHONE) as page:
        log_in(page, live_server.url, HANDBOOK_USER, HANDBOOK_PASSWORD)
        problems: list[str] = []
        for name, path in phone_pages.items():
            page.goto(live_server.url + path)
            page.wait_for_load_state("load")
            screenshot(page, f"phone-{name}", max_height=2400)
            for table in PHONE_TABLES[name]:
                problems += page.evaluate(PINNED, list(table))
        page.goto(live_server.url + phone_pages["compare"])
        page.wait_for_selector("#compare-chart .main-svg")
        page.hover("#compare-chart .nsewdrag")  # a tap on a phone: the toolbar shows
        page.wait_for_timeout(300)
        toolbar = page.evaluate(TOOLBAR, "compare-chart")
        assert toolbar["shown"] == "1", toolbar
        if toolbar.get("caption") or toolbar["overlap"] or toolbar["cut"]:
            problems.append(f"compare chart title: {toolbar}")
        screenshot(page, "phone-compare-toolbar", max_height=900)
        assert problems == [], problems
        assert page.errors == []
