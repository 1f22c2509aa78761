"""Which deletes reject a generated question (goldenset.services.rejections): a generated entry nobody marked
reviewed, through the API or the admin as through the review queue; never a reviewed, manual or imported one.
The memory belongs to one collection (so to one tenant) and holds one row per rejected question."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evalsite.jobs.models import Job, JobStatus
from goldenset import services
from goldenset.generation import REJECTED_BEFORE
from goldenset.models import Collection, GoldenEntry, GoldenJobKind, Origin, RejectedQuestion
from goldenset.services import EntryInput
from goldenset.services.rejections import rejected_hashes
from goldenset.text import question_hash
from tests.conftest import add_documents
from tests.generation_support import synthetic_corpus

GS = "/lmkit/v1/search/golden-set"
QUESTION = "When was the Handbook refund desk opened?"


def generated(
    collection: Collection, question: str = QUESTION, *, reviewed: bool = False, origin=Origin.GENERATED
):
    [entry], _ = services.golden_entries_add(
        collection=collection,
        entries=[EntryInput(question=question, expected_document_ids=["refunds"])],
        actor="job",
        origin=origin,
        reviewed=reviewed,
    )
    return entry


def test_an_api_delete_of_an_unreviewed_generated_entry_rejects_its_question(world):
    entry = generated(world.collection)
    assert world.client.delete(f"{GS}/{entry.pk}").status_code == 204
    memory = RejectedQuestion.objects.get()
    assert (memory.collection, memory.question) == (world.collection, QUESTION)
    assert memory.question_hash == question_hash("  when WAS the handbook refund desk opened? ")
    assert memory.rejected_by.startswith("api-key:")
    assert rejected_hashes(collection=world.collection) == {question_hash(QUESTION)}


@pytest.mark.parametrize(
    ("origin", "reviewed"), [(Origin.GENERATED, True), (Origin.MANUAL, False), (Origin.IMPORTED, False)]
)
def test_deleting_a_reviewed_manual_or_imported_entry_rejects_nothing(world, origin, reviewed):
    entry = generated(world.collection, origin=origin, reviewed=reviewed)
    assert world.client.delete(f"{GS}/{entry.pk}").status_code == 204
    assert not GoldenEntry.objects.filter(pk=entry.pk).exists()
    assert not RejectedQuestion.objects.exists()


def test_an_edited_entry_rejects_its_question_as_generated_and_as_edited(world):
    entry = generated(world.collection)
    edited = "When did the Handbook refund desk open its doors?"
    assert world.client.patch(f"{GS}/{entry.pk}", {"question": edited}, format="json").status_code == 200
    assert world.client.delete(f"{GS}/{entry.pk}").status_code == 204
    # The writer would write the generated one again; the curator saw (and rejected) the edited one.
    assert set(RejectedQuestion.objects.values_list("question", flat=True)) == {QUESTION, edited}


def test_the_admin_s_delete_rejects_too(world, admin_client):
    entry = generated(world.collection)
    response = admin_client.post(
        reverse("admin:goldenset_goldenentry_delete", args=[entry.pk]), {"post": "yes"}
    )
    assert response.status_code == 302
    assert RejectedQuestion.objects.get().rejected_by == "user:admin"


def test_a_question_rejected_twice_is_one_row_kept_from_its_first_rejection(world):
    for actor in ("user:first", "user:second"):
        services.golden_entries_delete(entries=[generated(world.collection)], actor=actor)
    assert list(RejectedQuestion.objects.values_list("rejected_by", flat=True)) == ["user:first"]


def test_deleting_the_collection_deletes_its_memory(world):
    services.golden_entries_delete(entries=[generated(world.collection)], actor="test")
    services.collection_delete(collection=world.collection, actor="test")
    assert not RejectedQuestion.objects.exists()


def test_a_rejection_binds_one_collection_of_one_tenant(world, django_capture_on_commit_callbacks):
    """The same corpus in both tenants, generated with the same seed: a question one tenant rejected is still
    written for the other."""
    ours = services.collection_create(tenant=world.tenant, slug="companies", actor="test")
    theirs = services.collection_create(tenant=world.other_tenant, slug="companies", actor="test")
    for collection in (ours, theirs):
        add_documents(collection, synthetic_corpus(10))

    def run(client) -> Job:
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(
                f"{GS}/generate", {"collection_id": "companies", "count": 1, "seed": 3}, format="json"
            )
        assert response.status_code == 202, response.json()
        job = Job.objects.get(pk=response.json()["job_id"], kind=GoldenJobKind.GENERATE)
        assert job.status == JobStatus.COMPLETED, job.error
        return job

    [rejected] = GoldenEntry.objects.filter(job=run(world.client))
    assert world.client.delete(f"{GS}/{rejected.pk}").status_code == 204
    again = run(world.client)
    assert again.result["discards"][REJECTED_BEFORE] == 1
    assert GoldenEntry.objects.get(job=again).question != rejected.question

    rival = run(world.other_client)
    assert rival.result["discards"][REJECTED_BEFORE] == 0
    assert GoldenEntry.objects.get(job=rival).question == rejected.question
    assert rejected_hashes(collection=theirs) == frozenset()
