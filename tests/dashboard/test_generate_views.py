"""Golden-set generation in the dashboard: the form on a collection's page creates a Generate job (run inline
here: django-q2's sync mode, the offline template writer since no chat endpoint is configured), the job's page
reports what the quality gate kept and discarded, and the review queue accepts, edits or rejects the generated
entries, every write audited as the signed-in user through the golden-set services."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from evalsite.audit.models import AuditEvent
from evalsite.jobs.models import Job, JobStatus
from evaluation.dashboard import charts, count_charts
from evaluation.dashboard.golden_views import REVIEW_PER_PAGE
from evaluation.models import EvaluationJobKind
from goldenset import services
from goldenset.generation import DISCARD_REASONS, TEMPLATE_MODEL
from goldenset.models import Collection, GoldenEntry, GoldenJobKind, Origin
from goldenset.services import EntryInput
from tests.conftest import add_documents

ACTOR = "user:alice"
SLUG = "science"

# Pages the offline template writer can question: each has a clear sentence (goldenset.clear_sentences). Two
# documents say the same thing (the second question is a near duplicate of the first: the gate discards it), and
# one page is a single 90-word run-on list with no clear sentence to ask about (counted apart, not discarded).
DOCUMENTS = {
    "solar": "Solar panels are used to convert sunlight into electricity with photovoltaic cells made of silicon. "
    "A typical residential installation produces between four and eight kilowatts of peak power.",
    "tides": "Ocean tides are caused mainly by the gravitational pull of the moon on the rotating earth. "
    "Most coastal places see two high tides and two low tides every lunar day.",
    "bees": "The waggle dance of honey bees consists of a figure-eight run performed inside the hive. "
    "Worker bees live for about six weeks during the busy summer season.",
    "glaciers": "A glacier is a persistent body of dense ice that moves slowly downhill under its own enormous "
    "weight. Ice covers land. It melts in summer and grows in winter.",
    "glaciers-copy": "A glacier is a persistent body of dense ice that moves slowly downhill under its own "
    "enormous weight. Ice covers land. It melts in summer and grows in winter.",
    "inventory": "inventory " + " ".join(f"item{i} widget{i} gadget{i}" for i in range(30)),
}
ELIGIBLE = len(DOCUMENTS)  # every page is long enough to be sampled
ACCEPTED = 4  # all but the near duplicate and the page without a clear sentence
NO_CLEAR_SENTENCE = 1


@pytest.fixture
def science(world) -> Collection:
    collection = services.collection_create(tenant=world.tenant, slug=SLUG, name="Science", actor="test")
    add_documents(collection, DOCUMENTS)
    return collection


def generate_url(slug: str = SLUG) -> str:
    return reverse("dashboard:golden-generate", args=[slug])


def review_url(slug: str = SLUG, query: str = "") -> str:
    return reverse("dashboard:golden-review", args=[slug]) + query


def generate(client: Client, capture, **data):
    """POST the generate form, running the job as a worker would once the request's transaction commits."""
    with capture(execute=True):
        response = client.post(generate_url(), {"count": "10", "model": "", "seed": "", **data})
    return response


@pytest.fixture
def generated(alice, science, django_capture_on_commit_callbacks) -> Job:
    response = generate(alice, django_capture_on_commit_callbacks, seed="7")
    job = Job.objects.get(kind=GoldenJobKind.GENERATE)
    assert response.status_code == 302 and response["Location"] == reverse("dashboard:job", args=[job.pk])
    return job


def generated_entries(job: Job) -> list[GoldenEntry]:
    return list(GoldenEntry.objects.filter(job=job).order_by("created_at", "id"))


def plotly_data(html: str, div_id: str) -> list[dict]:
    """The traces plotly.js is given for a chart of the page (the JSON script beside its plot)."""
    match = re.search(
        r'<script type="application/json" id="' + div_id + r'-data">(.*?)</script>', html, re.DOTALL
    )
    assert match, f"no chart {div_id}"
    return json.loads(match.group(1))["data"]


# --- the form ----------------------------------------------------------------------------------------------


def test_the_collection_page_offers_the_form_and_names_the_offline_writer(alice, science):
    page = alice.get(reverse("dashboard:collection", args=[SLUG]))
    assert page.status_code == 200
    html = page.content.decode()
    assert f'action="{generate_url()}"' in html
    assert 'name="csrfmiddlewaretoken"' in html
    form = page.context["generate_form"]
    assert list(form.fields) == ["count", "model", "seed"]
    assert form.fields["model"].widget.attrs["placeholder"] == "template (offline)"
    assert "offline <strong>template</strong> writer" in html
    assert "only from pages with a clear sentence" in html and "real generation needs a chat model" in html
    assert page.context["review_pending"] == 0
    assert review_url() not in html  # nothing to review yet


def test_with_an_endpoint_the_form_names_its_model_but_never_the_key(alice, science, settings):
    settings.EVALSITE_LLM_BASE_URL = "https://llm.example.com:8443/v1"
    settings.EVALSITE_LLM_MODEL = "qwen-test"
    settings.EVALSITE_LLM_API_KEY = "sk-very-secret"
    for url in (reverse("dashboard:collection", args=[SLUG]), generate_url()):
        page = alice.get(url)
        html = page.content.decode()
        assert page.context["generate_form"].fields["model"].widget.attrs["placeholder"] == "qwen-test"
        assert "llm.example.com:8443" in html and "qwen-test" in html
        assert "sk-very-secret" not in html


def test_the_generate_page_prefills_a_run_again(alice, science):
    page = alice.get(generate_url() + "?count=5&seed=42")
    assert page.status_code == 200
    assert page.context["generate_form"].initial == {"count": "5", "seed": "42"}
    assert 'value="42"' in page.content.decode()


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"count": "0"}, "count", "at least 1 question"),
        ({"count": "abc"}, "count", "whole number"),
        ({"count": ""}, "count", "required"),
        ({"count": "1001"}, "count", "At most 1000 questions"),
        ({"seed": "-1"}, "seed", "greater than or equal to 0"),
        ({"seed": "x"}, "seed", "whole number"),
        ({"seed": str(2**63)}, "seed", "at most"),
    ],
)
def test_bad_numbers_are_field_errors(alice, science, settings, data, field, message):
    settings.EVALSITE_GENERATE_MAX_COUNT = 1000
    page = alice.post(generate_url(), {"count": "10", "model": "", "seed": "", **data})
    # A form error, as every dashboard form answers it: the page again, the error on its field (not a 500).
    assert page.status_code == 400
    errors = page.context["generate_form"].errors
    assert list(errors) == [field]
    assert message in str(errors[field])
    assert message in page.content.decode().replace("&#x27;", "'")
    assert not Job.objects.exists()


def test_a_model_without_an_endpoint_is_an_error_on_the_model(alice, science):
    page = alice.post(generate_url(), {"count": "5", "model": "gpt-4o", "seed": ""})
    assert page.status_code == 400
    errors = page.context["generate_form"].errors
    assert list(errors) == ["model"]
    assert errors["model"] == [
        "“gpt-4o” needs a chat endpoint, and none is configured (EVALSITE_LLM_BASE_URL): leave the model blank, "
        "or enter “template”, for the offline writer."
    ]
    assert "needs a chat endpoint" in page.content.decode()
    assert not Job.objects.exists()


def test_generate_is_post_only_with_csrf(science, member):
    client = Client(enforce_csrf_checks=True)
    client.force_login(member)
    assert client.post(generate_url(), {"count": "3"}).status_code == 403
    assert not Job.objects.exists()


# --- the job and its report --------------------------------------------------------------------------------


def test_generating_adds_unreviewed_entries_and_the_job_page_reports(alice, generated):
    job = generated
    job.refresh_from_db()
    assert job.status == JobStatus.COMPLETED and job.collection.slug == SLUG
    assert job.input == {
        "count": 10,
        "model": TEMPLATE_MODEL,
        "backend": "template",
        "seed": 7,
        "actor": ACTOR,
        "continues": [],
    }
    result = job.result
    assert (result["seed"], result["backend"], result["requested"]) == (7, "template", 10)
    assert result["pages_available"] == ELIGIBLE and result["pages_sampled"] == ELIGIBLE
    assert result["accepted"] == ACCEPTED
    discarded = ELIGIBLE - ACCEPTED - NO_CLEAR_SENTENCE
    assert (
        result["discarded"]
        == discarded
        == sum(result["discards"].values())
        == result["discards"]["near_duplicate"]
    )
    assert result["no_clear_sentence"] == NO_CLEAR_SENTENCE  # the run-on list: not a gate discard

    entries = generated_entries(job)
    assert len(entries) == ACCEPTED
    for entry in entries:
        assert entry.origin == Origin.GENERATED and not entry.reviewed
        assert entry.source_page is not None
        assert entry.expected_document_ids == [entry.source_page.document.external_id]
        assert entry.reference_answer
    creates = AuditEvent.objects.filter(action="create", object_id__in=[str(e.pk) for e in entries])
    assert creates.count() == ACCEPTED and {e.actor for e in creates} == {ACTOR}

    # The job page stays (it is the report), and shows the summary and the discard chart.
    page = alice.get(reverse("dashboard:job", args=[job.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    report = page.context["report"]
    assert report.entries == report.pending == ACCEPTED
    assert '<span class="mono" data-seed>7</span>' in html
    assert "run again with this seed to reproduce" in html
    assert f"{generate_url()}?count=10&amp;seed=7" in html
    assert f"data-accepted>{ACCEPTED}<" in html and f"data-discarded>{discarded}<" in html
    assert f"data-no-clear-sentence>{NO_CLEAR_SENTENCE}<" in html
    assert "offline template writer" in html
    assert f"{ELIGIBLE} sampled of {ELIGIBLE} eligible; {NO_CLEAR_SENTENCE} offered no clear sentence" in html
    for warning in result["warnings"]:
        assert warning in html.replace("&#x27;", "'")
    assert 'id="discard-chart"' in html and "/static/plotly/plotly.min.js" in html
    [trace] = plotly_data(html, "discard-chart")
    assert trace["type"] == "bar" and trace["orientation"] == "h"
    assert trace["y"] == [reason.replace("_", " ") for reason in DISCARD_REASONS]  # zeros included
    assert trace["x"] == [result["discards"][reason] for reason in DISCARD_REASONS]
    assert f'href="{review_url(query=f"?job={job.pk}")}"' in html
    assert f"Review the {ACCEPTED} generated questions" in html

    # The poll points a finished Generate job at its own page (the progress page reloads into the report).
    state = alice.get(reverse("dashboard:job-progress", args=[job.pk])).json()
    assert state["status"] == "Completed" and state["kind"] == "Generate"
    assert state["result_url"] == reverse("dashboard:job", args=[job.pk])


def test_the_same_seed_samples_the_same_pages(alice, science, generated, django_capture_on_commit_callbacks):
    first = generated_entries(generated)
    GoldenEntry.objects.filter(job=generated).delete()
    generate(alice, django_capture_on_commit_callbacks, seed="7")
    again = Job.objects.filter(kind=GoldenJobKind.GENERATE).exclude(pk=generated.pk).get()
    assert [(e.question, e.source_page_id) for e in generated_entries(again)] == [
        (e.question, e.source_page_id) for e in first
    ]


def test_a_running_generate_job_polls_and_counts_pages(alice, science):
    job = Job.objects.create(
        tenant=science.tenant,
        kind=GoldenJobKind.GENERATE,
        collection=science,
        status=JobStatus.RUNNING,
        progress_done=2,
        progress_total=8,
        heartbeat_at=timezone.now(),
    )
    page = alice.get(reverse("dashboard:job", args=[job.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-finished="false"' in html and 'data-reload-when-finished="true"' in html
    assert "2 of 8 pages checked" in html
    assert 'id="discard-chart"' not in html  # no result yet
    assert "Open the results" not in html


def test_a_job_whose_worker_died_too_often_is_failed_with_its_message_and_keeps_its_entries(
    alice, science, settings
):
    settings.EVALSITE_JOB_MAX_RETRIES = 1
    job = Job.objects.create(tenant=science.tenant, kind=GoldenJobKind.GENERATE, collection=science)
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING,
        heartbeat_at=timezone.now() - timedelta(days=1),
        progress_total=9,
        owner="elsewhere:42:7",
        retries=1,
    )
    services.golden_entries_add(
        collection=science,
        entries=[EntryInput(question="What do solar panels convert?", expected_document_ids=["solar"])],
        actor="job",
        origin=Origin.GENERATED,
        job=job,
    )
    state = alice.get(reverse("dashboard:job-progress", args=[job.pk])).json()
    assert state["status"] == "Failed" and state["finished"]
    assert state["error"].startswith("Its worker (elsewhere:42:7) stopped beating")
    assert "giving up" in state["error"]
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and job.error["code"] == "job-stale"
    page = alice.get(reverse("dashboard:job", args=[job.pk]))
    html = page.content.decode()
    assert "Its worker (elsewhere:42:7) stopped beating" in html
    assert "worker-lost: Its worker" in html  # the history
    assert 'id="discard-chart"' not in html
    assert f'href="{review_url(query=f"?job={job.pk}")}"' in html  # what it committed can be reviewed


def test_the_job_page_itself_puts_a_stale_job_back_in_the_queue_and_says_so(alice, science):
    job = Job.objects.create(tenant=science.tenant, kind=GoldenJobKind.GENERATE, collection=science)
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING, heartbeat_at=timezone.now() - timedelta(days=1), owner="elsewhere:42:7"
    )
    page = alice.get(reverse("dashboard:job", args=[job.pk]))
    assert page.context["state"]["status"] == "Queued"
    html = page.content.decode()
    assert "data-job-history" in html and "worker-lost: Its worker (elsewhere:42:7) stopped beating" in html
    job.refresh_from_db()
    assert job.retries == 1 and job.status == JobStatus.QUEUED


def test_the_discard_figure_shows_every_reason_in_order():
    figure = count_charts.discard_figure(
        {"near_duplicate": 2, "too_short": 1, "document_deleted": 1}, DISCARD_REASONS
    )
    [bar] = figure.data
    assert bar.orientation == "h"
    assert list(bar.y) == [r.replace("_", " ") for r in DISCARD_REASONS] + ["document deleted"]
    expected = [{"near_duplicate": 2, "too_short": 1}.get(r, 0) for r in DISCARD_REASONS] + [1]
    assert list(bar.x) == expected
    assert list(bar.text) == [str(n) for n in expected]  # a zero reads as 0
    assert figure.layout.yaxis.autorange == "reversed"  # the gate's first reason on top
    assert "Discarded drafts by reason (4 in all)" in figure.layout.title.text
    html = charts.figure_html(figure, "discard-chart")
    assert 'id="discard-chart"' in html and "cdn" not in html.lower()


# --- the review queue --------------------------------------------------------------------------------------


def test_the_review_queue_shows_each_entry_with_its_page(alice, world, golden, generated):
    entries = generated_entries(generated)
    page = alice.get(review_url())
    assert page.status_code == 200
    assert [row.entry.pk for row in page.context["rows"]] == [e.pk for e in entries]
    assert page.context["pending"] == ACCEPTED
    html = page.content.decode()
    assert f"<strong>{ACCEPTED}</strong> generated entries of {SLUG} await review" in html
    for entry in entries:
        source = entry.source_page
        assert entry.question in html and entry.reference_answer in html
        document = source.document.external_id
        assert f'href="{reverse("dashboard:document", args=[SLUG, document])}"' in html
        assert f'Source: page {source.number} of <span class="mono">{document}</span>' in html
    assert html.count('<details class="source">') == ACCEPTED
    assert DOCUMENTS["solar"].split(". ")[1] in html  # the page text, inside its <details>
    assert html.count('name="csrfmiddlewaretoken"') >= ACCEPTED
    # Only generated, unreviewed entries of this collection: not the world's manual ones.
    assert not {e.pk for e in golden} & {row.entry.pk for row in page.context["rows"]}


def test_the_review_queue_filters_by_job_and_pages(alice, science, generated):
    other = Job.objects.create(tenant=science.tenant, kind=GoldenJobKind.GENERATE, collection=science)
    services.golden_entries_add(
        collection=science,
        entries=[
            EntryInput(question=f"Generated question number {i}?", expected_document_ids=["bees"])
            for i in range(REVIEW_PER_PAGE + 3)
        ],
        actor="job",
        origin=Origin.GENERATED,
        job=other,
    )
    everything = alice.get(review_url())
    assert everything.context["page"].paginator.count == ACCEPTED + REVIEW_PER_PAGE + 3
    assert len(everything.context["rows"]) == REVIEW_PER_PAGE
    by_job = alice.get(review_url(query=f"?job={generated.pk}"))
    assert [r.entry.pk for r in by_job.context["rows"]] == [e.pk for e in generated_entries(generated)]
    assert by_job.context["job"] == generated
    assert "Show those of every job" in by_job.content.decode()
    second = alice.get(review_url(query=f"?job={other.pk}&page=2"))
    assert len(second.context["rows"]) == 3
    assert f"?job={other.pk}&amp;page=1" in second.content.decode()  # the pagination keeps the filter
    row = second.context["rows"][0]
    assert row.source_page is None and "is gone" in second.content.decode()


def test_the_collection_page_links_to_the_queue_while_entries_wait(alice, generated):
    collection_url = reverse("dashboard:collection", args=[SLUG])
    page = alice.get(collection_url)
    assert page.context["review_pending"] == ACCEPTED
    assert f'href="{review_url()}"' in page.content.decode()
    assert f"{ACCEPTED}</strong> generated entries await review" in page.content.decode()
    services.golden_entries_mark_reviewed(entries=generated_entries(generated), reviewed=True, actor="test")
    page = alice.get(collection_url)
    assert page.context["review_pending"] == 0 and f'href="{review_url()}"' not in page.content.decode()


def test_accept_marks_reviewed_audited_and_returns_to_the_queue(alice, generated):
    entry = generated_entries(generated)[1]
    back = review_url(query=f"?job={generated.pk}&page=1")
    response = alice.post(
        reverse("dashboard:golden-review-action", args=[SLUG]),
        {"entry": str(entry.pk), "action": "accept", "next": back},
    )
    assert response.status_code == 302 and response["Location"] == back
    entry.refresh_from_db()
    assert entry.reviewed
    event = AuditEvent.objects.get(object_id=str(entry.pk), action="update")
    assert event.actor == ACTOR and event.changes == {"reviewed": [False, True]}
    queue = alice.get(back)
    assert entry.pk not in [r.entry.pk for r in queue.context["rows"]]
    assert queue.context["pending"] == ACCEPTED - 1
    assert "Accepted “" in queue.content.decode()


def test_reject_deletes_audited_and_returns_to_the_queue(alice, generated):
    entry = generated_entries(generated)[0]
    back = review_url(query=f"?job={generated.pk}")
    response = alice.post(
        reverse("dashboard:golden-review-action", args=[SLUG]),
        {"entry": str(entry.pk), "action": "reject-confirmed", "next": back},  # "reject" asks first
    )
    assert response.status_code == 302 and response["Location"] == back
    assert not GoldenEntry.objects.filter(pk=entry.pk).exists()
    event = AuditEvent.objects.get(object_id=str(entry.pk), action="delete")
    assert event.actor == ACTOR and event.changes["question"] == entry.question
    assert "Rejected “" in alice.get(back).content.decode()


def test_review_actions_need_post_csrf_and_a_known_action(alice, generated, member):
    entry = generated_entries(generated)[0]
    url = reverse("dashboard:golden-review-action", args=[SLUG])
    assert alice.get(url).status_code == 405
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(member)
    assert strict.post(url, {"entry": str(entry.pk), "action": "reject"}).status_code == 403
    unknown = alice.post(url, {"entry": str(entry.pk), "action": "shred"})
    assert unknown.status_code == 302 and unknown["Location"] == review_url()
    assert GoldenEntry.objects.filter(pk=entry.pk, reviewed=False).exists()
    assert alice.post(url, {"entry": "not-a-uuid", "action": "accept"}).status_code == 404
    # A next that leaves the site falls back to the queue.
    away = alice.post(url, {"entry": str(entry.pk), "action": "accept", "next": "https://evil.example/"})
    assert away["Location"] == review_url()


def test_edit_from_the_queue_saves_and_marks_reviewed(alice, generated):
    entry = generated_entries(generated)[0]
    back = review_url(query=f"?job={generated.pk}")
    queue = alice.get(back).content.decode()
    edit_url = reverse("dashboard:golden-entry", args=[SLUG, entry.pk])
    link = f"{edit_url}?next={back.replace('?', '%3F').replace('=', '%3D')}"
    assert f'href="{link}"' in queue
    page = alice.get(link)
    html = page.content.decode()
    assert page.status_code == 200
    assert 'name="mark_reviewed"' in html  # "Save and mark reviewed"
    assert f"Written from page {entry.source_page.number}" in html  # the page, to edit against
    assert reverse("dashboard:job", args=[generated.pk]) in html
    new_question = "Which material are photovoltaic cells usually made of?"
    response = alice.post(
        edit_url,
        {
            "question": new_question,
            "key": "",
            "expected_document_ids": "\n".join(entry.expected_document_ids),
            "reference_answer": entry.reference_answer,
            "tags": "",
            "answerable": "on",
            "mark_reviewed": "1",
            "next": back,
        },
    )
    assert response.status_code == 302 and response["Location"] == back
    entry.refresh_from_db()
    assert entry.question == new_question and entry.reviewed
    event = AuditEvent.objects.get(object_id=str(entry.pk), action="update")
    assert event.actor == ACTOR
    assert event.changes["reviewed"] == [False, True] and event.changes["question"][1] == new_question
    # Reviewed now: no "Save and mark reviewed" any more.
    assert 'name="mark_reviewed"' not in alice.get(edit_url).content.decode()


def test_the_review_queue_and_the_report_are_bounded(
    alice, science, generated, django_assert_max_num_queries
):
    services.golden_entries_add(
        collection=science,
        entries=[
            EntryInput(question=f"Generated question number {i}?", expected_document_ids=["bees", "tides"])
            for i in range(2 * REVIEW_PER_PAGE)
        ],
        actor="job",
        origin=Origin.GENERATED,
        job=generated,
        source_page_id=science.documents.get(external_id="bees").pages.get().pk,
    )
    alice.get(reverse("home"))  # the session holds the tenant from now on
    for url in (
        review_url(),
        review_url(query="?page=2"),
        review_url(query=f"?job={generated.pk}&page=3"),
        reverse("dashboard:job", args=[generated.pk]),
    ):
        with django_assert_max_num_queries(9):
            response = alice.get(url)
        assert response.status_code == 200, url
    assert len(response.context["report"].discards) == len(DISCARD_REASONS)


# --- tenancy -----------------------------------------------------------------------------------------------


def test_another_tenant_sees_none_of_it(world, outsider, generated):
    """rob belongs to the rival tenant, which has a "handbook" collection too but no "science"."""
    client = Client()
    client.force_login(outsider)
    entry = generated_entries(generated)[0]
    for url in [
        generate_url(),
        review_url(),
        reverse("dashboard:job", args=[generated.pk]),
        reverse("dashboard:job-progress", args=[generated.pk]),
        reverse("dashboard:golden-entry", args=[SLUG, entry.pk]),
        # His own "handbook" with alice's job in the filter.
        review_url("handbook", f"?job={generated.pk}"),
    ]:
        assert client.get(url).status_code == 404, url
    assert client.post(generate_url(), {"count": "3"}).status_code == 404
    for action in ("accept", "reject"):
        for slug in (SLUG, "handbook"):
            response = client.post(
                reverse("dashboard:golden-review-action", args=[slug]),
                {"entry": str(entry.pk), "action": action},
            )
            assert response.status_code == 404, (slug, action)
    assert Job.objects.count() == 1
    entry.refresh_from_db()
    assert not entry.reviewed
    assert not AuditEvent.objects.filter(object_id=str(entry.pk), action__in=["update", "delete"]).exists()


def test_a_member_cannot_switch_to_another_tenant_on_these_pages(alice, generated):
    for url in (generate_url(), review_url(), reverse("dashboard:job", args=[generated.pk])):
        assert alice.get(f"{url}?tenant=acme/rival").status_code == 404, url


def test_the_queue_refuses_a_job_of_another_collection(alice, world, science, generated):
    # A Generate job of the same tenant but of handbook: not this collection's.
    other = Job.objects.create(tenant=world.tenant, kind=GoldenJobKind.GENERATE, collection=world.collection)
    assert alice.get(review_url(query=f"?job={other.pk}")).status_code == 404
    assert alice.get(review_url("handbook", f"?job={generated.pk}")).status_code == 404
    evaluate = Job.objects.create(tenant=world.tenant, kind=EvaluationJobKind.EVALUATE, collection=science)
    assert alice.get(review_url(query=f"?job={evaluate.pk}")).status_code == 404
    assert alice.get(review_url(query="?job=nonsense")).status_code == 404


@pytest.fixture
def drafted(world) -> GoldenEntry:
    """A generated, unreviewed entry waiting in handbook's review queue."""
    (entry,), _ = services.golden_entries_add(
        collection=world.collection,
        entries=[EntryInput(question="What does the warranty cover?", expected_document_ids=["warranty"])],
        actor="job",
        origin=Origin.GENERATED,
    )
    return entry


def test_reject_asks_for_confirmation_before_deleting(alice, drafted):
    review = reverse("dashboard:golden-review", args=["handbook"])
    action = reverse("dashboard:golden-review-action", args=["handbook"])
    response = alice.post(action, {"entry": str(drafted.pk), "action": "reject", "next": review + "?page=1"})
    assert response.status_code == 200
    assert GoldenEntry.objects.filter(pk=drafted.pk).exists()
    assert not AuditEvent.objects.filter(object_id=str(drafted.pk), action="delete").exists()
    html = response.content.decode()
    assert "Reject 1 golden entry?" in html and drafted.question in html
    assert "› <span>reject</span></nav>" in html
    # The confirmation posts the same entry back as reject-confirmed, and Cancel returns to the queue.
    assert f'<form method="post" action="{action}" class="buttons">' in html
    assert f'<input type="hidden" name="entry" value="{drafted.pk}">' in html
    assert 'value="reject-confirmed" class="danger">Yes, reject</button>' in html
    assert f'<a href="{review}?page=1">Cancel</a>' in html

    confirmed = alice.post(
        action, {"entry": str(drafted.pk), "action": "reject-confirmed", "next": review + "?page=1"}
    )
    assert confirmed.status_code == 302 and confirmed["Location"] == review + "?page=1"
    assert not GoldenEntry.objects.filter(pk=drafted.pk).exists()
    assert AuditEvent.objects.filter(object_id=str(drafted.pk), action="delete").exists()


def test_the_golden_set_delete_confirmation_is_unchanged(alice, drafted):
    response = alice.post(
        reverse("dashboard:golden-action", args=["handbook"]), {"entry": str(drafted.pk), "action": "delete"}
    )
    html = response.content.decode()
    assert response.status_code == 200 and "Delete 1 golden entry?" in html
    assert f'action="{reverse("dashboard:golden-action", args=["handbook"])}"' in html
    assert 'value="delete-confirmed" class="danger">Yes, delete</button>' in html
