"""Term rarity in the collection for the heuristic judge: a bounded sample of pages, cached per content version
(evaluation/answers/judge_weights.py), and what it changes in a support score."""

from __future__ import annotations

import pytest

from evaluation.answers import judge, judge_weights
from evaluation.answers.judge_support import claim_terms
from evaluation.answers.judge_weights import collection_term_weights
from evaluation.answers.writer import Passage
from tests.conftest import add_documents


@pytest.fixture(autouse=True)
def _empty_cache():
    judge_weights._cache.clear()
    yield
    judge_weights._cache.clear()


def test_document_frequencies_come_from_the_collections_pages(world):
    weights = collection_term_weights([world.collection])
    assert weights is not None and weights.n == 3  # the three pages of the handbook
    (refund,) = claim_terms("refund")
    assert weights.df[refund] == 1  # only the refunds page says "refund"
    assert weights.df["2"] == 2  # "two business days", "two-year warranty": a spelled number is a digit


def test_the_sample_is_computed_once_per_content_version(world, django_assert_num_queries):
    first = collection_term_weights([world.collection])
    with django_assert_num_queries(0):
        assert collection_term_weights([world.collection]) is first
    add_documents(
        world.collection, {"returns": "Returns are accepted within 14 days."}
    )  # a new content version
    second = collection_term_weights([world.collection])
    assert second is not first and second is not None and second.n == 4


def test_the_sample_is_bounded(world, monkeypatch):
    monkeypatch.setattr(judge_weights, "SAMPLE_DOCUMENTS", 2)
    weights = collection_term_weights([world.collection])
    assert weights is not None and weights.n == 2  # the first two by external id: refunds, shipping


def test_a_collection_without_pages_gives_no_weights(world):
    from goldenset import services

    empty = services.collection_create(tenant=world.tenant, slug="empty", actor="test")
    assert collection_term_weights([empty]) is None
    assert collection_term_weights([]) is None


def test_collection_rarity_changes_the_support_score(world):
    """Over one passage every term weighs the same; in the collection, the missing "Canada" (on no page) is
    rarer than the common "two" and "days" the passage holds, so missing it costs more."""
    weights = collection_term_weights([world.collection])
    passage = [Passage(1, "shipping", 1, "Shipping", "Orders ship within two business days.")]
    statement = "Orders ship within two business days to Canada."
    in_collection = judge.statement_support(statement, passage, weights)
    over_the_passage = judge.statement_support(statement, passage)
    assert in_collection["coverage"] == over_the_passage["coverage"] == pytest.approx(5 / 6, abs=1e-4)
    assert in_collection["support"] < over_the_passage["support"]


def test_an_answer_evaluation_judges_with_the_collections_rarity(world, django_capture_on_commit_callbacks):
    """The stored per-statement support of a run is the support with the collection's term rarity: with one
    retrieved passage (top_k 1) rarity over the passages at hand would weigh every term alike."""
    from evalsite.jobs.models import Job, JobStatus
    from evaluation.answers.writer import Passage as P
    from evaluation.models import EvaluationRun
    from goldenset import services
    from tests.support import add_entries

    add_entries(
        world.collection,
        services.EntryInput(
            question="How quickly do orders ship?",
            expected_document_ids=["shipping"],
            reference_answer="Orders ship within two business days from the Denver warehouse.",
        ),
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = world.client.post(
            "/lmkit/v1/search/evaluate/answers",
            {"collection_id": "handbook", "configs": [{"search_type": "FullText", "top_k": 1}]},
            format="json",
        )
    assert response.status_code == 202, response.json()
    job = Job.objects.get(pk=response.json()["job_id"])
    assert job.status == JobStatus.COMPLETED, job.error
    run = EvaluationRun.objects.get(pk=job.result["runs"][0]["run_id"])
    (result,) = run.results.all()
    passages = [P(c["number"], c["document_id"], 1, c["title"], c["text"]) for c in result.context]
    assert [p.document_id for p in passages] == ["shipping"]
    (stored,) = result.judgements["context_recall"]["detail"]["statements"]
    weights = collection_term_weights([world.collection])
    with_collection = judge.statement_support(stored["text"], passages, weights)
    over_the_passage = judge.statement_support(stored["text"], passages)
    assert stored["support"] == with_collection["support"] != over_the_passage["support"]
