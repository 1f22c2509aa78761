"""A question rejected in the review queue is remembered per collection and never generated again: the next run
with the same seed skips it (counted as "rejected before" in its report and chart) and asks the next pages
instead; the admin lists the remembered questions, and deleting one there un-rejects it. The jobs run inline
with the offline template writer (no chat endpoint is configured), as in test_generate_views."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evalsite.jobs.models import Job, JobStatus
from goldenset import services
from goldenset.generation import DISCARD_REASONS, REJECTED_BEFORE
from goldenset.models import Collection, GoldenEntry, GoldenJobKind, RejectedQuestion
from tests.conftest import add_documents
from tests.dashboard.test_generate_views import (
    ACTOR,
    DOCUMENTS,
    SLUG,
    generate_url,
    generated_entries,
    plotly_data,
    review_url,
)


@pytest.fixture
def science(world) -> Collection:
    collection = services.collection_create(tenant=world.tenant, slug=SLUG, name="Science", actor="test")
    add_documents(collection, DOCUMENTS)
    return collection


@pytest.fixture
def run(alice, science, django_capture_on_commit_callbacks):
    """POST the generate form (count, seed 7) and return its job, run inline once the request commits."""

    def post(count: int) -> Job:
        before = set(Job.objects.values_list("pk", flat=True))
        with django_capture_on_commit_callbacks(execute=True):
            response = alice.post(generate_url(), {"count": str(count), "model": "", "seed": "7"})
        assert response.status_code == 302
        job = Job.objects.exclude(pk__in=before).get(kind=GoldenJobKind.GENERATE)
        assert job.status == JobStatus.COMPLETED, job.error
        return job

    return post


def reject(alice, entry: GoldenEntry) -> None:
    """The review queue's reject, confirmed (its "reject" asks first), as a curator posts it."""
    response = alice.post(
        reverse("dashboard:golden-review-action", args=[SLUG]),
        {"entry": str(entry.pk), "action": "reject-confirmed", "next": review_url()},
    )
    assert response.status_code == 302 and response["Location"] == review_url()
    assert not GoldenEntry.objects.filter(pk=entry.pk).exists()


def test_a_question_rejected_in_the_review_queue_is_not_generated_again(alice, science, run):
    first = run(2)
    kept, rejected = generated_entries(first)
    reject(alice, rejected)

    memory = RejectedQuestion.objects.get()
    assert (memory.collection, memory.question, memory.rejected_by) == (science, rejected.question, ACTOR)
    assert memory.source_page_id == rejected.source_page_id

    again = run(2)  # the same request after a completed run asks for 2 more, from the same sample
    questions = [e.question for e in generated_entries(again)]
    assert rejected.question not in questions and kept.question not in questions
    assert len(questions) == 2  # the page freed by the reject is tried, discarded, and the next one asked
    result = again.result
    assert result["accepted"] == 2 and result["discards"][REJECTED_BEFORE] == 1
    assert result["pages_already_done"] == 1  # the kept entry's page; the rejected one's was tried again
    assert not GoldenEntry.objects.filter(collection=science, question=rejected.question).exists()

    # The job's page shows it beside the gate's reasons, in the chart.
    page = alice.get(reverse("dashboard:job", args=[again.pk]))
    assert ("rejected_before", 1) in page.context["report"].discards
    [trace] = plotly_data(page.content.decode(), "discard-chart")
    assert trace["y"] == [reason.replace("_", " ") for reason in DISCARD_REASONS]
    assert trace["x"][trace["y"].index("rejected before")] == 1


def test_the_confirmations_say_which_deletes_reject(alice, science, run, golden):
    entry = generated_entries(run(1))[0]
    ask = alice.post(
        reverse("dashboard:golden-review-action", args=[SLUG]), {"entry": str(entry.pk), "action": "reject"}
    )
    html = ask.content.decode()
    assert ask.status_code == 200 and "data-rejects" in html
    assert "generation will not write it into this collection again" in html
    # The golden set page's delete of manual entries: no rejection, so no such word.
    world_slug = golden[0].collection.slug
    ask = alice.post(
        reverse("dashboard:golden-action", args=[world_slug]),
        {"action": "delete", "entry": [str(e.pk) for e in golden]},
    )
    assert ask.status_code == 200 and "data-rejects" not in ask.content.decode()
    assert not RejectedQuestion.objects.exists()  # asking deletes nothing


def test_accepting_rejects_nothing(alice, science, run):
    first = run(2)
    entry = generated_entries(first)[0]
    response = alice.post(
        reverse("dashboard:golden-review-action", args=[SLUG]), {"entry": str(entry.pk), "action": "accept"}
    )
    assert response.status_code == 302
    assert not RejectedQuestion.objects.exists()
    assert run(2).result["discards"][REJECTED_BEFORE] == 0


def test_the_admin_lists_rejected_questions_and_deleting_one_un_rejects_it(alice, admin_client, science, run):
    rejected = generated_entries(run(1))[0]
    reject(alice, rejected)
    memory = RejectedQuestion.objects.get()

    listing = admin_client.get(reverse("admin:goldenset_rejectedquestion_changelist"))
    assert listing.status_code == 200 and rejected.question in listing.content.decode()
    assert (
        admin_client.get(reverse("admin:goldenset_rejectedquestion_change", args=[memory.pk])).status_code
        == 200
    )
    assert admin_client.get(reverse("admin:goldenset_rejectedquestion_add")).status_code == 403

    assert rejected.question == "What is a glacier?"  # seed 7 samples the glaciers first
    # Still remembered: "glaciers" and "glaciers-copy" hold the same text, so both of their drafts are skipped.
    assert run(1).result["discards"][REJECTED_BEFORE] == 2
    response = admin_client.post(
        reverse("admin:goldenset_rejectedquestion_delete", args=[memory.pk]), {"post": "yes"}
    )
    assert response.status_code == 302 and not RejectedQuestion.objects.exists()
    back = run(1)
    assert back.result["discards"][REJECTED_BEFORE] == 0
    assert [e.question for e in generated_entries(back)] == [rejected.question]  # first in the sample again
