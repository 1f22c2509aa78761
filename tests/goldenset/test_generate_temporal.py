"""Generation asks only about documents default search returns: the one temporal rule (goldenset.temporal),
through a Generate job, including its two corner cases (a successor that later expired still supersedes; a
document that names itself in `supersedes` does not hide itself)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from evalsite.jobs.models import Job, JobStatus
from goldenset import services
from goldenset.models import Collection, Document
from tests.conftest import add_documents
from tests.generation_support import synthetic_corpus

URL = "/lmkit/v1/search/golden-set/generate"


@pytest.fixture
def companies(world) -> Collection:
    collection = services.collection_create(tenant=world.tenant, slug="companies", actor="test")
    add_documents(collection, synthetic_corpus(12))
    return collection


def generate_all(world, companies, capture) -> set[str]:
    with capture(execute=True):
        response = world.client.post(
            URL, {"collection_id": "companies", "count": 50, "seed": 3}, format="json"
        )
    job = Job.objects.get(pk=response.json()["job_id"])
    assert job.status == JobStatus.COMPLETED, job.error
    return {e.expected_document_ids[0] for e in companies.golden_entries.all()}


def searchable(world, companies) -> set[str]:
    """Every document default search can return: a page-wide query over the collection at depth 100."""
    found: set[str] = set()
    for word in ("founded", "company", "employees", "headquarters"):
        body = {"collection_id": "companies", "query": word, "search_type": "FullText", "top_k": 100}
        response = world.client.post("/lmkit/v1/search", body, format="json")
        assert response.status_code == 200, response.content
        found |= {r["document_id"] for r in response.json()["results"]}
    return found


def test_a_successor_that_later_expired_still_hides_its_predecessor(
    world, companies, django_capture_on_commit_callbacks
):
    now = timezone.now()
    Document.objects.filter(collection=companies, external_id="company-001").update(
        supersedes=["company-000"], valid_until=now - timedelta(days=1)
    )
    expected = generate_all(world, companies, django_capture_on_commit_callbacks)
    assert "company-000" not in expected  # superseded: search hides it, so a question on it is a certain miss
    assert "company-001" not in expected  # expired: hidden too
    assert len(expected) == 10
    assert expected <= searchable(world, companies)
    assert "company-000" not in searchable(world, companies)


def test_a_document_naming_itself_in_supersedes_is_still_asked_about(
    world, companies, django_capture_on_commit_callbacks
):
    Document.objects.filter(collection=companies, external_id="company-002").update(
        supersedes=["company-002"]
    )
    expected = generate_all(world, companies, django_capture_on_commit_callbacks)
    assert "company-002" in expected  # search returns it, so generation may ask about it
    assert len(expected) == 12
    assert expected <= searchable(world, companies)


def test_documents_not_yet_valid_are_left_out(world, companies, django_capture_on_commit_callbacks):
    Document.objects.filter(collection=companies, external_id="company-003").update(
        valid_from=timezone.now() + timedelta(days=30)
    )
    expected = generate_all(world, companies, django_capture_on_commit_callbacks)
    assert "company-003" not in expected and len(expected) == 11
