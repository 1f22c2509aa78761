"""The dashboard end to end in a real browser: Playwright's Python client drives Debian's Chromium against
pytest-django's live server.

One user's whole session: sign in through the login form, import a collection (the product's own
`import_beir` command, since the dashboard has no upload page), launch an evaluation of two configurations from
/launch/ and follow its progress bar (a real `manage.py qcluster` worker runs the job, so the bar really moves)
to the comparison, then trends, runs, a run and one of its questions, and the golden set's inline edit. A second
test looks at the main pages on a phone-sized screen.

Every page must load without a JavaScript error and without a request to any host but the live server
(plotly.js comes from /static/plotly/). Screenshots go to test-artifacts/screenshots/ (not committed).
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core.management import call_command

from evalsite.audit.models import AuditEvent
from evalsite.jobs.models import Job, JobStatus
from evalsite.tenancy.services import tenant_get_or_create
from evaluation.configs import parse_configs
from evaluation.dashboard.runs_reads import RUN_QUESTIONS_PER_PAGE
from evaluation.models import EvaluationJobKind, EvaluationRun
from evaluation.retrieval.evaluate import evaluate_retrieval
from evaluation.retrieval.read_path import available_rerankers
from goldenset.models import Collection, GoldenEntry
from tests.browser.pages import PHONE, assert_clean, is_local, log_in, open_page, overflow, watch_requests
from tests.support import member_of

ROOT = Path(__file__).resolve().parents[2]
CLAPNQ = ROOT / "demo" / "clapnq"  # shipped with the repository: 597 passages, 600 questions (300 answerable)
CLAPNQ_DOCUMENTS, CLAPNQ_PAGES, CLAPNQ_ENTRIES, CLAPNQ_ANSWERABLE = 597, 632, 600, 300
CLUSTER, TENANT = "acme", "search"
USERNAME, PASSWORD = "alice", "alice-browser-secret"
LABELS = ["fulltext", "hybrid rrf"]

pytestmark = pytest.mark.django_db(transaction=True)


# --- fixtures and helpers ----------------------------------------------------------------------------------


@pytest.fixture
def member():
    """alice, a member of tenant acme/search (which has no collection yet)."""
    tenant = tenant_get_or_create(cluster_slug=CLUSTER, tenant_slug=TENANT)
    user = member_of(tenant, USERNAME, password=PASSWORD)
    return user


@pytest.fixture
def qcluster(fresh_indexes, qcluster):
    """The shared worker (tests/conftest.py), started after this test's own index directory is in place.

    The test settings run django-q2 in sync mode, and the live server's thread then runs the job inline at
    enqueue time: the POST to /launch/ only answers once the evaluation is over and /jobs/<id>/ redirects straight
    to the results, so no progress bar is ever shown. With a worker, the browser sees the bar move."""
    return qcluster


# Reports every change of the job page's progress bar to the test (page.expose_function("recordBar")).
BAR_OBSERVER = """
document.addEventListener("DOMContentLoaded", () => {
  const bar = document.querySelector("#job [data-job-bar]");
  const status = document.querySelector("#job [data-job-status]");
  if (!bar) { return; }
  new MutationObserver(() => window.recordBar(bar.value, status.textContent))
    .observe(bar, {attributes: true, attributeFilter: ["value"]});
});
"""


def plotly_chart(page, div_id: str) -> list[dict]:
    """Wait for the chart's SVG and return its traces (type and name) as plotly drew them."""
    page.wait_for_selector(f"#{div_id} .main-svg", timeout=15_000)
    return page.evaluate(
        f"Array.from(document.getElementById('{div_id}').data, t => ({{type: t.type, name: t.name}}))"
    )


def assert_plotly_local(urls: list[str]) -> None:
    plotly = [u for u in urls if u.endswith("plotly.min.js")]
    assert plotly and all(is_local(u) and urlsplit(u).path == "/static/plotly/plotly.min.js" for u in plotly)


def column_values(page, table: str, index: int) -> list[str]:
    """The sort keys of one column of a table, top to bottom, as dashboard.js reads them."""
    return page.evaluate(
        """([table, index]) => Array.from(document.querySelector(table).tBodies[0].rows, row => {
             const cell = row.cells[index];
             return cell.dataset.value !== undefined ? cell.dataset.value : cell.textContent.trim();
           })""",
        [table, index],
    )


# --- the whole flow ----------------------------------------------------------------------------------------


def test_a_user_imports_evaluates_compares_and_curates_in_the_browser(
    live_server, page, screenshot, member, qcluster
):
    from playwright.sync_api import Error as PlaywrightError  # imported late, as the conftest does

    base = live_server.url
    urls = watch_requests(page)

    # 1. Sign in through the real login form; the tenant has no collection yet.
    log_in(page, base, USERNAME, PASSWORD, screenshot)
    assert page.locator("section.empty h2").inner_text() == "No collections yet"
    assert_clean(page, urls, "login")

    # 2. Import a collection as a user would without an upload page: the import_beir command.
    call_command(
        "import_beir", str(CLAPNQ), cluster=CLUSTER, tenant=TENANT, collection="clapnq", name="ClapNQ"
    )
    page.reload()
    card = page.locator("section.collection-card")
    assert card.count() == 1
    assert card.locator("h2 a").inner_text() == "ClapNQ"
    counts = dict(
        zip(
            card.locator("dl.counts dt").all_text_contents(),
            card.locator("dl.counts dd").all_text_contents(),
            strict=True,
        )
    )
    assert counts == {
        "documents": str(CLAPNQ_DOCUMENTS),
        "pages": str(CLAPNQ_PAGES),
        "golden entries": str(CLAPNQ_ENTRIES),
    }
    assert "No runs yet" in card.inner_text()
    screenshot(page, "02-home")
    assert_clean(page, urls, "home")

    # 3. Launch two configurations (FullText and Hybrid RRF) with ks from the form; follow the progress bar.
    page.click("text=Launch an evaluation")
    page.wait_for_url(f"{base}/launch/")
    collection_box = page.locator("input[name=collections][value=clapnq]")
    collection_box.check()
    assert (
        f"clapnq ({CLAPNQ_ANSWERABLE} questions with expected documents)"
        in page.get_by_role("group", name="Collections").inner_text()
    )
    page.fill("input[name=ks]", "1,5,10")
    rows = page.locator("table.configs tbody tr")
    for i in range(rows.count()):
        page.locator(f"input[name=configs-{i}-enabled]").set_checked(i < 2)
    page.fill("input[name=configs-0-label]", LABELS[0])
    page.select_option("select[name=configs-0-search_type]", "FullText")
    page.select_option("select[name=configs-0-bm25_variant]", "lucene")
    page.select_option("select[name=configs-0-rerank]", "")
    page.fill("input[name=configs-1-label]", LABELS[1])
    page.select_option("select[name=configs-1-search_type]", "Hybrid")
    page.select_option("select[name=configs-1-fusion]", "Rrf")
    page.select_option("select[name=configs-1-bm25_variant]", "lucene")
    page.select_option("select[name=configs-1-rerank]", "")
    screenshot(page, "03-launch")
    assert_clean(page, urls, "launch")

    # What the progress page reads (each poll's JSON) and what it shows (the bar's value, the status).
    polls: list[dict] = []

    def record_poll(route):
        response = route.fetch()
        polls.append(response.json())
        route.fulfill(response=response)

    page.route("**/progress.json", record_poll)
    bar: list[tuple[float, str]] = []
    page.expose_function("recordBar", lambda value, status: bar.append((float(value), status)))
    page.add_init_script(BAR_OBSERVER)
    page.click("button:has-text('Start evaluation')")
    page.wait_for_url(re.compile(r"/jobs/[0-9a-f-]+/$"))
    job_div = page.locator("#job[data-progress-url]")
    assert job_div.get_attribute("data-finished") == "false"
    assert page.locator("#job progress[data-job-bar]").count() == 1
    job = Job.objects.get(kind=EvaluationJobKind.EVALUATE)  # (the import queued its index build too)
    assert job.input["ks"] == [1, 5, 10]
    assert [c["label"] for c in job.input["configs"]] == LABELS
    screenshot(page, "04-job")
    try:  # a picture of the bar part way, unless the job finishes between two polls
        page.wait_for_function(
            "() => document.querySelector('#job [data-job-bar]').value > 0", timeout=60_000, polling=100
        )
        screenshot(page, "04-job-running")
    except PlaywrightError:
        pass
    try:
        page.wait_for_url(re.compile(r"/compare/\?batch="), timeout=120_000)
    except PlaywrightError:
        job.refresh_from_db()
        pytest.fail(
            f"job {job.status}, polls {polls[-3:]}; qcluster log:\n{qcluster.log.read_text()[-4000:]}"
        )
    job.refresh_from_db()
    assert job.status == JobStatus.COMPLETED, qcluster.log.read_text()
    assert polls, "the progress page never polled progress.json"
    assert polls[-1]["status"] == "Completed" and polls[-1]["progress"] == 1.0
    progress = [p["progress"] for p in polls]
    assert progress == sorted(progress), progress  # progress only moves forward
    assert bar and bar[-1] == (1.0, "Completed"), bar  # and the bar showed it, up to full
    assert [value for value, _ in bar] == sorted(value for value, _ in bar), bar
    assert polls[-1]["result_url"] == urlsplit(page.url).path + "?" + urlsplit(page.url).query
    batch = parse_qs(urlsplit(page.url).query)["batch"][0]
    runs = list(EvaluationRun.objects.filter(batch_id=batch).order_by("created_at"))
    assert [r.label for r in runs] == LABELS
    assert all(r.question_count == CLAPNQ_ANSWERABLE for r in runs)

    # 4. Compare: grouped bars, one trace per configuration; one pair in the p-value table.
    traces = plotly_chart(page, "compare-chart")
    assert page.evaluate("document.getElementById('compare-chart').data.length") == len(LABELS)
    assert [t["type"] for t in traces] == ["bar"] * len(LABELS)
    assert sorted(t["name"] for t in traces) == sorted(LABELS)
    assert page.locator("table.compare-means tbody tr").count() == len(LABELS)
    pairs = page.locator("table.compare-pairs tbody tr")
    assert pairs.count() == 1
    assert pairs.first.locator("td.pair").inner_text().split(" vs ") in (LABELS, LABELS[::-1])
    metrics = page.locator("table.compare-pairs thead th.num").all_text_contents()
    assert metrics == ["recall@1", "recall@5", "recall@10", "ndcg@1", "ndcg@5", "ndcg@10", "mrr"] + [
        "judged@1", "judged@5", "judged@10", "ndcg_cond@1", "ndcg_cond@5", "ndcg_cond@10", "bpref", "map_cond",
    ]  # fmt: skip
    assert pairs.first.locator("div.p").count() == len(metrics)  # a p-value per metric
    screenshot(page, "05-compare")
    assert_plotly_local(urls)
    assert_clean(page, urls, "compare")

    # 5. Trends: a line per label; a click on a marker opens its run.
    page.click("header nav.main-nav >> text=Trends")
    page.wait_for_url(re.compile(r"/trends/"))
    traces = plotly_chart(page, "trends-chart")
    table_labels = page.locator("table.data tbody td.label a").all_inner_texts()
    assert sorted(table_labels) == sorted(LABELS)
    assert len(traces) == len(table_labels)
    assert sorted(t["name"] for t in traces) == sorted(LABELS)
    assert all(t["type"] == "scatter" for t in traces)
    screenshot(page, "06-trends")
    assert_clean(page, urls, "trends")
    marker = page.locator("#trends-chart .scatterlayer .trace .points path.point").first
    box = marker.bounding_box()
    assert box is not None
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.click(x, y)
    page.wait_for_url(re.compile(r"/runs/[0-9a-f-]+/$"), timeout=10_000)
    opened = urlsplit(page.url).path.split("/")[2]
    assert opened in {str(r.pk) for r in runs}
    assert page.locator("h1").inner_text().strip() in LABELS
    assert_clean(page, urls, "run opened from trends")

    # 6. Runs: both listed; tick both and compare them.
    page.click("header nav.main-nav >> text=Runs")
    page.wait_for_url(f"{base}/runs/")
    form = page.locator("#compare-form")
    boxes = form.locator("input[name=run]")
    assert boxes.count() == len(LABELS)
    assert sorted(form.locator("td.label a").all_inner_texts()) == sorted(LABELS)
    button = form.locator("[data-compare-button]")
    assert button.is_disabled()
    boxes.nth(0).check()
    assert button.is_disabled()
    boxes.nth(1).check()
    assert button.is_enabled()
    assert form.locator("[data-selected-count]").inner_text() == "2 selected"
    screenshot(page, "07-runs")
    assert_clean(page, urls, "runs")
    button.click()
    page.wait_for_url(re.compile(r"/compare/\?run="))
    assert sorted(parse_qs(urlsplit(page.url).query)["run"]) == sorted(str(r.pk) for r in runs)
    assert len(plotly_chart(page, "compare-chart")) == len(LABELS)
    assert page.locator("table.compare-pairs tbody tr").count() == 1
    screenshot(page, "08-compare-selected")
    assert_clean(page, urls, "compare of selected runs")

    # 7. A run: sort its questions, filter to failures, open a question's ranked list.
    fulltext = runs[0]
    page.goto(f"{base}/runs/{fulltext.pk}/")
    table = "table.sortable.questions"
    assert page.locator(f"{table} tbody tr").count() == RUN_QUESTIONS_PER_PAGE  # the first page of 300
    header = page.locator(f"{table} thead th", has_text="first relevant")
    header.click()
    assert header.get_attribute("aria-sort") == "ascending"
    ranks = [float(v) for v in column_values(page, table, 2)]
    assert ranks == sorted(ranks) and ranks[0] == 1
    header.click()
    assert header.get_attribute("aria-sort") == "descending"
    ranks = [float(v) for v in column_values(page, table, 2)]
    assert ranks == sorted(ranks, reverse=True)
    header.click()  # ascending again: the first row found its expected document first
    hit_link = page.locator(f"{table} tbody tr").first.locator("td a").first
    hit_href = hit_link.get_attribute("href")
    screenshot(page, "09-run-sorted", max_height=1600)
    assert_clean(page, urls, "run")

    page.click("a:has-text('Failures only')")
    page.wait_for_url(re.compile(r"\?failures=1$"))
    diagnoses = page.locator(f"{table} tbody td.diag .diagnosis").all_inner_texts()
    assert diagnoses and all(d != "pass" for d in diagnoses)
    assert len(diagnoses) < CLAPNQ_ANSWERABLE
    summary = page.locator(".toolbar .muted").first.inner_text()
    assert summary.startswith(f"{len(diagnoses)} of {CLAPNQ_ANSWERABLE} questions not passed"), summary
    screenshot(page, "10-run-failures")
    assert_clean(page, urls, "run failures")

    miss = page.locator(f"{table} tbody tr").first
    question = miss.locator("td a").first.inner_text()
    miss.locator("td a").first.click()
    page.wait_for_url(re.compile(r"/questions/\d+/$"))
    assert page.locator("h1.question-title").inner_text().startswith(question.removesuffix("…"))
    assert page.locator("dl.facts .diagnosis").inner_text() == "miss"
    assert page.locator("table.ranked tbody tr").count() == 10  # the search depth, max(ks)
    assert page.locator("table.ranked tbody tr.relevant").count() == 0
    not_retrieved = page.locator("h2:has-text('Expected documents not retrieved') + ul.plain-list li")
    assert not_retrieved.count() == 1  # ClapNQ judges one passage per question
    assert not_retrieved.first.locator("a").count() == 1  # linked to the document
    screenshot(page, "11-question-miss")
    assert_clean(page, urls, "question (miss)")

    page.goto(base + hit_href)
    relevant = page.locator("table.ranked tbody tr.relevant")
    assert relevant.count() == 1
    assert relevant.locator("td").first.inner_text() == "1"
    assert "✓ relevant" in relevant.locator(".badge.ok").inner_text()
    assert page.locator("dl.facts .diagnosis").inner_text() == "pass"
    assert "None: every expected document is in the ranked list." in page.locator("main").inner_text()
    screenshot(page, "12-question-hit")
    assert_clean(page, urls, "question (hit)")

    # 8. The golden set: edit a question inline and mark it reviewed; both are audited as user:alice.
    page.goto(f"{base}/collections/clapnq/")
    first_row = page.locator("table.golden tbody tr[id^=entry-]").first
    entry_id = first_row.get_attribute("id").removeprefix("entry-")
    entry = GoldenEntry.objects.get(pk=entry_id)
    assert not entry.reviewed
    edit_row = page.locator(f"#edit-row-{entry_id}")
    assert edit_row.is_hidden()
    first_row.locator("a[data-inline-edit]").click()
    assert edit_row.is_visible()
    assert page.url == f"{base}/collections/clapnq/"  # the row opened in place, no navigation
    new_question = "Who edited this question in the browser test?"
    edit_row.locator("textarea[name=question]").fill(new_question)
    screenshot(page, "13-collection-inline-edit", max_height=1400)
    edit_row.locator("button:has-text('Save')").click()
    page.wait_for_selector(".messages .message.success")
    assert "Saved" in page.locator(".messages").inner_text()
    row = page.locator(f"#entry-{entry_id}")
    assert row.locator("td.question a").first.inner_text() == new_question
    row.locator(f"button[name=single][value='{entry_id}:reviewed']").click()
    page.wait_for_selector(".messages .message.success")
    assert "Marked 1 entry reviewed" in page.locator(".messages").inner_text()
    assert page.locator(f"#entry-{entry_id} .badge.ok").inner_text() == "reviewed"
    screenshot(page, "14-collection", max_height=1400)
    # Filtered to reviewed entries: only this one, and the recent changes name who made them.
    page.select_option("select[name=reviewed]", "yes")
    page.click("form.filters button[type=submit]")
    page.wait_for_url(re.compile(r"reviewed=yes"))
    assert page.locator("table.golden tbody tr[id^=entry-]").count() == 1
    assert page.locator(f"#entry-{entry_id}").count() == 1
    recent = page.locator("section.recent tbody tr")
    assert [row.locator("td").nth(1).inner_text() for row in recent.all()[:2]] == [f"user:{USERNAME}"] * 2
    screenshot(page, "15-collection-reviewed")
    assert_clean(page, urls, "collection")

    entry.refresh_from_db()
    assert entry.question == new_question and entry.reviewed
    events = AuditEvent.objects.filter(object_id=str(entry.pk), actor=f"user:{USERNAME}")
    changes = [e.changes for e in events.order_by("at", "id")]
    assert len(changes) == 2
    assert changes[0]["question"][1] == new_question
    assert changes[1] == {"reviewed": [False, True]}


# --- a phone-sized screen ----------------------------------------------------------------------------------


@pytest.fixture
def evaluated(member) -> list[EvaluationRun]:
    """ClapNQ imported and evaluated (FullText and Hybrid RRF) in this process, without the launcher."""
    call_command("import_beir", str(CLAPNQ), cluster=CLUSTER, tenant=TENANT, collection="clapnq")
    collection = Collection.objects.get(slug="clapnq")
    configs = [
        {"label": LABELS[0], "search_type": "FullText"},
        {"label": LABELS[1], "search_type": "Hybrid", "fusion": "Rrf"},
    ]
    _, runs = evaluate_retrieval(
        tenant=collection.tenant,
        collections=[collection],
        ks=[1, 5, 10],
        configs=parse_configs(configs, available_rerankers()),
    )
    return runs


def test_the_main_pages_fit_a_narrow_screen(live_server, browser, screenshot, evaluated):
    with open_page(browser, PHONE) as page:
        urls = watch_requests(page)
        base = live_server.url
        log_in(page, base, USERNAME, PASSWORD)
        batch = evaluated[0].batch_id
        pages = {
            "home": f"{base}/",
            "compare": f"{base}/compare/?batch={batch}",
            "run": f"{base}/runs/{evaluated[0].pk}/",
        }
        overflowing: dict[str, dict] = {}
        for name, url in pages.items():
            page.goto(url)
            if name == "compare":
                assert len(plotly_chart(page, "compare-chart")) == len(LABELS)
                page.wait_for_timeout(300)  # plotly's responsive resize
            width = overflow(page)
            screenshot(page, f"narrow-{name}", max_height=2400)
            if width["scroll"] > width["inner"] + 1:
                overflowing[name] = width
            assert_clean(page, urls, f"narrow {name}")
        # Every page is looked at (and photographed) before this fails, so one report names them all.
        assert overflowing == {}, f"pages wider than the screen: {overflowing}"
