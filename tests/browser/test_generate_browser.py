"""Golden-set generation end to end in a real browser (Playwright's Python client, Debian's Chromium, pytest-django's
live server): sign in, open a collection, submit the "Generate questions" form, follow the job's page until it
reloads into its report (a real `manage.py qcluster` worker runs the job with the offline template writer, as no
chat endpoint is configured), see the discard chart drawn, then work through the review queue: accept one
entry, reject one, edit one and save it as reviewed. Every write is audited as the signed-in user.

Every page must load without a JavaScript error and without a request to any host but the live server.
Screenshots go to test-artifacts/screenshots/ (not committed).
"""

from __future__ import annotations

import re

import pytest
from django.utils import timezone

from evalsite.audit.models import AuditEvent
from evalsite.jobs.models import Job, JobStatus
from evalsite.tenancy.services import tenant_get_or_create
from evaluation.models import EvaluationJobKind
from goldenset import services
from goldenset.generation import DISCARD_REASONS
from goldenset.models import Collection, GoldenEntry, GoldenJobKind, Origin
from tests.browser.pages import assert_clean, log_in, watch_requests
from tests.conftest import add_documents
from tests.support import member_of

CLUSTER, TENANT, SLUG = "acme", "search", "science"
USERNAME, PASSWORD = "alice", "alice-generate-secret"
ACTOR = f"user:{USERNAME}"
COUNT, SEED = 5, 11

# Pages the offline template writer can question (each with a clear sentence: goldenset.clear_sentences), one
# near-duplicate pair, so that the gate both keeps and discards, and one page without a clear sentence.
DOCUMENTS = {
    "solar": "Solar panels are used to convert sunlight into electricity with photovoltaic cells made of silicon. "
    "A typical residential installation produces between four and eight kilowatts of peak power. "
    "Panels lose roughly half a percent of their efficiency every year of operation.",
    "tides": "Ocean tides are caused mainly by the gravitational pull of the moon on the rotating earth. "
    "Most coastal places see two high tides and two low tides every lunar day.\n\n"
    "Spring tides happen when the sun and the moon line up during new and full moons.",
    "bees": "The waggle dance of honey bees consists of a figure-eight run performed inside the hive. "
    "The angle of the dance relative to vertical encodes the direction of the food source.",
    "glaciers": "A glacier is a persistent body of dense ice that moves slowly downhill under its own enormous "
    "weight. Ice covers land. It melts in summer and grows in winter.",
    "glaciers-copy": "A glacier is a persistent body of dense ice that moves slowly downhill under its own "
    "enormous weight. Ice covers land. It melts in summer and grows in winter.",
    "volcanoes": "Volcanic eruptions are driven by molten rock, ash and gases from chambers deep beneath the crust. "
    "Shield volcanoes such as those of Hawaii build gentle slopes from runny basaltic lava flows.",
    "inventory": "inventory " + " ".join(f"item{i} widget{i} gadget{i}" for i in range(30)),
}

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def member():
    """alice, a member of tenant acme/search, which has the collection "science" with documents and no entries."""
    tenant = tenant_get_or_create(cluster_slug=CLUSTER, tenant_slug=TENANT)
    user = member_of(tenant, USERNAME, password=PASSWORD)
    collection = services.collection_create(tenant=tenant, slug=SLUG, name="Science", actor="test")
    add_documents(collection, DOCUMENTS)
    return user


def wider_than_screen(page) -> list[str]:
    """Elements reaching past the right edge of the viewport (tables scroll inside their wrapper: not counted)."""
    return page.evaluate(
        "Array.from(document.querySelectorAll('body *')).filter(e => {"
        "  const r = e.getBoundingClientRect(); return r.right > window.innerWidth + 1 && !e.closest('.table-wrap');"
        "}).slice(0, 5).map(e => e.tagName + (e.className ? '.' + e.className : ''))"
    )


def pending_count(page) -> int:
    return int(page.locator("[data-review-pending]").get_attribute("data-review-pending"))


def test_a_user_generates_questions_and_reviews_them_in_the_browser(
    live_server, page, screenshot, member, qcluster
):
    base = live_server.url
    urls = watch_requests(page)
    log_in(page, base, USERNAME, PASSWORD)

    # 1. The collection page: no entries yet, so the generate form is open; it names the offline writer.
    page.goto(f"{base}/collections/{SLUG}/")
    generate = page.locator("details.generate")
    assert generate.get_attribute("open") is not None
    assert "offline template writer" in generate.inner_text()
    assert page.locator("input[name=model]").get_attribute("placeholder") == "template (offline)"
    assert page.locator(".review-notice").count() == 0
    page.fill("input[name=count]", str(COUNT))
    page.fill("input[name=seed]", str(SEED))
    screenshot(page, "gen-01-collection")
    assert_clean(page, urls, "collection")

    # 2. A model needs a chat endpoint, and none is configured: the form comes back with the error on the model.
    page.fill("input[name=model]", "gpt-4o")
    page.click("form.generate-form button[type=submit]")
    page.wait_for_url(f"{base}/collections/{SLUG}/golden/generate/")
    error = page.locator(".field.has-error small.error")
    assert error.count() == 1 and "needs a chat endpoint" in error.inner_text()
    assert page.locator(".field.has-error input").get_attribute("name") == "model"
    assert page.locator("input[name=seed]").input_value() == str(SEED)  # what was typed stays
    screenshot(page, "gen-01b-generate-error")
    assert not Job.objects.exclude(
        kind=EvaluationJobKind.INDEX_BUILD
    ).exists()  # (the upload queued its index build)
    # Chromium logs the form's 400 answer as a failed load; that one is expected, nothing else may be there.
    assert page.errors == ["Failed to load resource: the server responded with a status of 400 (Bad Request)"]
    page.errors.clear()
    assert_clean(page, urls, "generate form error")

    # 3. Submit without a model: the job's page follows the worker, then reloads into the report with the chart.
    page.fill("input[name=model]", "")
    page.click("form.generate-form button[type=submit]")
    page.wait_for_url(re.compile(r"/jobs/[0-9a-f-]+/$"))
    job_url = page.url
    job = Job.objects.get(kind=GoldenJobKind.GENERATE)  # (the upload queued its index build too)
    assert job.kind == GoldenJobKind.GENERATE and job.input["seed"] == SEED and job.input["count"] == COUNT
    assert page.locator("h1").inner_text() == f"Question generation of {SLUG}"
    page.wait_for_selector("#discard-chart .main-svg", timeout=90_000)
    assert page.url == job_url
    job.refresh_from_db()
    assert job.status == JobStatus.COMPLETED, qcluster.log.read_text()[-4000:]
    result = job.result
    assert page.locator("#job [data-job-status]").inner_text() == "Completed"
    assert page.locator("[data-seed]").inner_text() == str(SEED)
    assert "run again with this seed to reproduce" in page.locator("dl.generate-facts").inner_text()
    assert page.locator("[data-accepted]").inner_text() == str(result["accepted"])
    assert page.locator("[data-discarded]").inner_text() == str(result["discarded"])
    assert result["accepted"] >= 3 and result["discarded"] >= 1
    assert page.locator("[data-no-clear-sentence]").inner_text() == str(result["no_clear_sentence"])
    assert result["no_clear_sentence"] <= 1  # the inventory page, when the sample reached it
    bars = page.evaluate(
        "(() => { const t = document.getElementById('discard-chart').data[0];"
        " return {type: t.type, orientation: t.orientation, y: t.y, x: t.x}; })()"
    )
    assert bars["type"] == "bar" and bars["orientation"] == "h"
    assert bars["y"] == [reason.replace("_", " ") for reason in DISCARD_REASONS]
    assert bars["x"] == [result["discards"][reason] for reason in DISCARD_REASONS]
    assert page.locator("#discard-chart .barlayer .point").count() == len(DISCARD_REASONS)
    assert any(u.endswith("/static/plotly/plotly.min.js") for u in urls)
    screenshot(page, "gen-02-job-report")
    assert_clean(page, urls, "job report")

    # 4. The review queue of this job: every accepted entry, its page text behind a <details>.
    page.click(f"a:has-text('Review the {result['accepted']} generated questions')")
    page.wait_for_url(re.compile(rf"/collections/{SLUG}/golden/review/\?job={job.pk}$"))
    items = page.locator("li.review-item")
    assert items.count() == result["accepted"] == pending_count(page)
    first = items.first
    source = first.locator("details.source")
    assert not source.evaluate("d => d.open")
    source.locator("summary").click()
    assert source.locator(".page-text").is_visible()
    screenshot(page, "gen-03-review")
    assert_clean(page, urls, "review queue")

    # 5. Accept the first, reject the next: each returns to the queue with one entry fewer.
    entries = list(GoldenEntry.objects.filter(job=job).order_by("created_at", "id"))
    accepted, rejected, edited = entries[0], entries[1], entries[2]
    page.locator(f"#review-{accepted.pk} button[value=accept]").click()
    page.wait_for_selector(".messages .message.success")
    assert "Accepted" in page.locator(".messages").inner_text()
    assert re.search(rf"\?job={job.pk}$", page.url)
    assert page.locator(f"#review-{accepted.pk}").count() == 0
    assert pending_count(page) == result["accepted"] - 1
    page.locator(f"#review-{rejected.pk} button[value=reject]").click()
    page.locator("button[value=reject-confirmed]").click()  # the confirmation page
    page.wait_for_selector(".messages .message.success")
    assert "Rejected" in page.locator(".messages").inner_text()
    assert page.locator(f"#review-{rejected.pk}").count() == 0
    assert pending_count(page) == result["accepted"] - 2
    screenshot(page, "gen-04-review-after-actions")
    assert_clean(page, urls, "review actions")

    # 6. Edit the next one and save it as reviewed: back to the queue, without it.
    page.locator(f"#review-{edited.pk} a:has-text('Edit')").click()
    page.wait_for_url(re.compile(rf"/golden/{edited.pk}/\?next="))
    assert "Written from page" in page.locator("details.source summary").inner_text()
    new_question = "Which material are photovoltaic cells usually made of?"
    page.fill("textarea[name=question]", new_question)
    screenshot(page, "gen-05-edit")
    page.click("button[name=mark_reviewed]")
    page.wait_for_url(re.compile(rf"/golden/review/\?job={job.pk}$"))
    assert "Saved" in page.locator(".messages").inner_text()
    assert page.locator(f"#review-{edited.pk}").count() == 0
    assert pending_count(page) == result["accepted"] - 3
    assert_clean(page, urls, "edit")

    # 7. The collection page links to the queue while entries wait.
    page.goto(f"{base}/collections/{SLUG}/")
    notice = page.locator(".review-notice")
    assert notice.locator("strong").inner_text() == str(result["accepted"] - 3)
    assert page.locator("details.generate").get_attribute("open") is None  # entries now: folded away
    screenshot(page, "gen-06-collection-after", max_height=1400)
    assert_clean(page, urls, "collection after review")

    accepted.refresh_from_db()
    edited.refresh_from_db()
    assert accepted.reviewed and accepted.origin == Origin.GENERATED
    assert edited.reviewed and edited.question == new_question
    assert not GoldenEntry.objects.filter(pk=rejected.pk).exists()
    events = {
        (e.object_id, e.action): e
        for e in AuditEvent.objects.filter(actor=ACTOR, object_id__in=[str(e.pk) for e in entries[:3]])
    }
    assert events[(str(accepted.pk), "update")].changes == {"reviewed": [False, True]}
    assert events[(str(rejected.pk), "delete")].changes["question"] == rejected.question
    assert events[(str(edited.pk), "update")].changes["reviewed"] == [False, True]

    # 8. The report and the queue on a phone-sized screen: nothing wider than the screen.
    page.set_viewport_size({"width": 390, "height": 844})
    overflowing = {}
    for name, url in (("job", job_url), ("review", f"{base}/collections/{SLUG}/golden/review/")):
        page.goto(url)
        if name == "job":
            page.wait_for_selector("#discard-chart .main-svg")
            page.wait_for_timeout(300)  # plotly's responsive resize
        screenshot(page, f"gen-narrow-{name}", max_height=2400)
        wide = wider_than_screen(page)
        if wide:
            overflowing[name] = wide
        assert_clean(page, urls, f"narrow {name}")
    assert overflowing == {}, overflowing
    assert Collection.objects.get(slug=SLUG).golden_entries.filter(reviewed=False).count() == (
        result["accepted"] - 3
    )


def test_the_job_page_reloads_into_its_report_when_the_job_ends(live_server, page, screenshot, member):
    """No worker here: the test plays one, so that the page is sure to be open while the job runs."""
    base = live_server.url
    urls = watch_requests(page)
    collection = Collection.objects.get(slug=SLUG)
    job = Job.objects.create(
        tenant=collection.tenant,
        kind=GoldenJobKind.GENERATE,
        collection=collection,
        input={"count": 3, "model": "template", "backend": "template", "seed": 5, "actor": ACTOR},
    )
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING, progress_done=1, progress_total=6, heartbeat_at=timezone.now()
    )
    log_in(page, base, USERNAME, PASSWORD)
    page.goto(f"{base}/jobs/{job.pk}/")
    assert page.locator("#job").get_attribute("data-finished") == "false"
    assert page.locator("[data-job-count]").inner_text() == "1 of 6 pages checked"
    assert page.locator("header nav.main-nav a[aria-current=page]").inner_text() == "Home"
    Job.objects.filter(pk=job.pk).update(progress_done=4)
    page.wait_for_function(
        "() => document.querySelector('[data-job-count]').textContent.startsWith('4 of 6 pages checked')",
        timeout=10_000,
    )
    screenshot(page, "gen-07-job-running")
    discards = dict.fromkeys(DISCARD_REASONS, 0) | {"too_short": 2, "passage_dependent": 1}
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.COMPLETED,
        finished_at=timezone.now(),
        progress_done=6,
        result={
            "seed": 5,
            "model": "template",
            "backend": "template",
            "requested": 3,
            "pages_available": 7,
            "pages_already_done": 0,
            "pages_sampled": 6,
            "accepted": 3,
            "discarded": 3,
            "discards": discards,
            "warnings": ["A warning the job reported."],
            "stopped": None,
            "calls": 0,
            "cache_hits": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "call_latency_ms": 0.0,
            "elapsed_s": 0.5,
        },
    )
    page.wait_for_selector("#discard-chart .main-svg", timeout=15_000)  # the page reloaded into the report
    assert page.url == f"{base}/jobs/{job.pk}/"
    assert page.locator("#job").get_attribute("data-finished") == "true"
    assert page.locator(".warning li").all_inner_texts() == ["A warning the job reported."]
    assert page.evaluate("document.getElementById('discard-chart').data[0].x") == [
        discards[r] for r in DISCARD_REASONS
    ]
    assert_clean(page, urls, "job reloaded")
