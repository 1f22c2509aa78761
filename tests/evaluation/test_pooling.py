"""evaluation.judgments.pooling: depth-k pools of the documents runs found that nobody judged, most promising
first. Pure Python: no database."""

from __future__ import annotations

import random

import pytest

from evaluation.judgments.pooling import AdaptiveOrder, PoolCandidate, pool_candidates

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


# --- the adaptive order (MaxMean) ---------------------------------------------------------------------------


def two_runs_one_question() -> list:
    run_a = {"q": ["a1", "a2", "a3"]}
    run_b = {"q": ["b1", "b2", "b3"]}
    return pool_candidates([run_a, run_b], judged={}, depth=3)


def test_adaptive_order_starts_with_the_fixed_order_then_follows_the_run_that_finds_relevant_documents():
    items = two_runs_one_question()
    assert [c.document_id for c in items] == ["a1", "b1", "a2", "b2", "a3", "b3"]  # fixed: rank, then id
    assert items[0].ranks == ((0, 1),) and items[1].ranks == ((1, 1),)
    order = AdaptiveOrder(items)
    given = []
    for relevant in (False, True, True):
        index = order.next()
        given.append(items[index].document_id)
        order.record(index, relevant)
    # a1 not relevant: run A falls to 1/3; b1 relevant: B at 2/3, so b2 before a2, although a2 comes first in
    # the fixed order
    assert given == ["a1", "b1", "b2"]
    assert items[order.next()].document_id == "b3"
    order.record(items.index(next(c for c in items if c.document_id == "b3")), False)
    # B: 2 relevant of 3, (2 + 1) / (3 + 2) = 0.6; A: 0 of 1, 1/3: A's a2 only when B has nothing left
    assert [items[order.next()].document_id] == ["a2"]


def test_an_item_wanted_by_more_raters_counts_once_and_stays_offered():
    items = two_runs_one_question()
    order = AdaptiveOrder(items)
    order.record(0, True, finished=False)
    order.record(0, True, finished=False)  # counted once
    assert order.stats["q"][0] == [1, 1]
    assert order.next() == 0  # still wanted: offered again, run A leading at 2/3
    assert order.next(unavailable={0}) == 2  # a rater who has it gets A's next one


def test_the_fast_path_and_a_raters_scan_agree_step_by_step():
    rng = random.Random(3)
    for _ in range(20):
        runs = [{f"q{q}": rng.sample([f"d{i}" for i in range(12)], 8) for q in range(5)} for _ in range(4)]
        items = pool_candidates(runs, judged={}, depth=6)
        fast, scan = AdaptiveOrder(items), AdaptiveOrder(items)
        while (index := fast.next()) is not None:
            assert scan.next(unavailable={-1}) == index  # a non-empty set: the scan
            relevant = rng.random() < 0.3
            fast.record(index, relevant)
            scan.record(index, relevant)
        assert scan.next(unavailable={-1}) is None and len(fast.done) == len(items)


def test_ranked_gives_the_next_items_in_turn_leaving_out_what_is_unavailable():
    items = two_runs_one_question()
    order = AdaptiveOrder(items)
    order.record(0, False)  # a1 not relevant: run B leads
    assert [items[i].document_id for i in order.ranked(set(), 3)] == ["b1", "b2", "b3"]
    assert [items[i].document_id for i in order.ranked({1}, 10)] == ["b2", "b3", "a2", "a3"]
    assert order.ranked(set(range(len(items))), 5) == []
