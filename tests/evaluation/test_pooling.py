"""evaluation.judgments.pooling: depth-k pools of the documents runs found that nobody judged, most promising
first. Pure Python: no database."""

from __future__ import annotations

import random

import pytest

from evaluation.judgments.pooling import PoolCandidate, pool_candidates

RUN_A = {"q1": ["a", "b", "c", "d"], "q2": ["x", "y"]}
RUN_B = {"q1": ["b", "e", "a"], "q2": ["z"]}


def test_the_pool_holds_each_unjudged_document_within_the_depth_once():
    pool = pool_candidates([RUN_A, RUN_B], judged={"q1": {"c"}}, depth=3)
    assert {(c.question, c.document_id) for c in pool} == {
        ("q1", "a"),
        ("q1", "b"),
        ("q1", "e"),  # c is judged; d is below the depth
        ("q2", "x"),
        ("q2", "y"),
        ("q2", "z"),
    }


def test_a_document_judged_non_relevant_is_judged_and_stays_out():
    pool = pool_candidates([RUN_A], judged={"q1": ["a", "b", "c", "d"]}, depth=10)  # grade 0 or 3 alike
    assert [c.question for c in pool] == ["q2", "q2"]


def test_documents_many_runs_rank_highly_come_first_with_their_votes():
    pool = pool_candidates([RUN_A, RUN_B], judged={}, depth=3)
    assert pool[:3] == [
        PoolCandidate("q1", "b", 1 / 1 + 1 / 2, runs=2, best_rank=1),
        PoolCandidate("q1", "a", 1 / 1 + 1 / 3, runs=2, best_rank=1),
        PoolCandidate("q2", "x", 1.0, runs=1, best_rank=1),  # a tie with z: the question order, then the id
    ]
    assert [(c.question, c.document_id) for c in pool[3:]] == [
        ("q2", "z"),
        ("q1", "e"),
        ("q2", "y"),
        ("q1", "c"),
    ]
    assert [c.priority for c in pool] == sorted((c.priority for c in pool), reverse=True)


def test_the_pool_is_the_same_whatever_order_the_runs_come_in():
    rng = random.Random(3)
    docs = [f"d{i}" for i in range(30)]
    runs = [{f"q{q}": rng.sample(docs, 15) for q in range(20)} for _ in range(6)]
    judged = {f"q{q}": set(rng.sample(docs, 5)) for q in range(20)}
    pool = pool_candidates(runs, judged, depth=10)
    for _ in range(5):
        rng.shuffle(runs)
        assert pool_candidates(runs, judged, depth=10) == pool
    # Exactly the union of every run's top 10 less what is judged.
    expected = {
        (q, d) for run in runs for q, ranking in run.items() for d in ranking[:10] if d not in judged[q]
    }
    assert {(c.question, c.document_id) for c in pool} == expected and len(pool) == len(expected)


def test_questions_chosen_and_ordered_by_the_caller():
    pool = pool_candidates([RUN_A, RUN_B], judged={}, depth=1, questions=["q2", "q9"])
    assert [(c.question, c.document_id) for c in pool] == [("q2", "x"), ("q2", "z")]  # q9: no run ranked it
    assert pool_candidates([RUN_A], judged={}, depth=1, questions=[]) == []


def test_a_run_listing_a_document_twice_votes_once_at_its_best_rank():
    (candidate,) = pool_candidates([{"q": ["a", "a"]}], judged={}, depth=2)
    assert (candidate.priority, candidate.runs, candidate.best_rank) == (1.0, 1, 1)


@pytest.mark.parametrize("depth", [0, -3])
def test_the_depth_is_a_positive_integer(depth):
    with pytest.raises(ValueError, match="depth"):
        pool_candidates([RUN_A], judged={}, depth=depth)
