"""Term rarity in the collection for the heuristic judge: a bounded sample of pages, cached per content version
(evaluation/services/judge_weights.py), and what it changes in a support score."""

from __future__ import annotations

import pytest

from evaluation import judge
from evaluation.answer_writer import Passage
from evaluation.judge_support import claim_terms
from evaluation.services import judge_weights
from evaluation.services.judge_weights import collection_term_weights
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
