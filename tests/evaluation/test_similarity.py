"""evaluation.retrieval.similarity: overlap@k, Jaccard@k and extrapolated rank-biased overlap (Webber et al.
2010), on hand-computed cases and on the properties that define them. Pure Python: no database."""

from __future__ import annotations

import random

import pytest

from evaluation.retrieval.similarity import jaccard_at, overlap_at, rankings_similarity, rbo


def test_overlap_and_jaccard_by_hand():
    first, second = ["a", "b", "c", "d"], ["b", "e", "a", "f"]
    assert overlap_at(first, second, 2) == 1 / 2  # {a, b} and {b, e} share b
    assert overlap_at(first, second, 4) == 2 / 4
    assert jaccard_at(first, second, 4) == 2 / 6
    assert overlap_at(["a"], ["a"], 3) == 1 / 3  # short rankings: the empty places share nothing
    assert jaccard_at([], [], 5) == 1.0 and jaccard_at(["a"], [], 5) == 0.0
    with pytest.raises(ValueError, match="cutoff"):
        overlap_at(first, second, 0)
    with pytest.raises(ValueError, match="more than once"):
        jaccard_at(["a", "a"], second, 2)


def test_rbo_by_hand():
    # [a, b] against [b, a], p = 0.5: X1 = 0, X2 = 2; (1 - p) / p * (0 + 2/2 * p^2) + (2/2) * p^2 = 0.5
    assert rbo(["a", "b"], ["b", "a"], p=0.5) == pytest.approx(0.5, abs=1e-15)
    # [a] against [a, b]: the short one is the long one's prefix, so extrapolated it agrees throughout.
    assert rbo(["a"], ["a", "b"], p=0.5) == pytest.approx(1.0, abs=1e-15)
    # [a, b, c] against [a, c, d], p = 0.9: X = 1, 1, 2 -> 0.1/0.9 * (0.9 + 0.405 + 2/3 * 0.729) + 2/3 * 0.729
    expected = 0.1 / 0.9 * (1 / 1 * 0.9 + 1 / 2 * 0.81 + 2 / 3 * 0.729) + 2 / 3 * 0.729
    assert rbo(["a", "b", "c"], ["a", "c", "d"]) == pytest.approx(expected, abs=1e-15)


def test_rbo_is_one_for_the_same_ranking_zero_for_disjoint_ones_and_symmetric():
    rng = random.Random(4)
    docs = [f"d{i}" for i in range(50)]
    for _ in range(100):
        first, second = rng.sample(docs, rng.randint(1, 30)), rng.sample(docs, rng.randint(1, 30))
        assert rbo(first, first) == pytest.approx(1.0, abs=1e-12)
        assert rbo(first, second) == pytest.approx(rbo(second, first), abs=1e-12)
        assert 0.0 <= rbo(first, second) <= 1.0 + 1e-12
    assert rbo(["a", "b"], ["c", "d", "e"]) == 0.0
    assert rbo([], []) == 1.0 and rbo(["a"], []) == 0.0


def test_rbo_weighs_the_top_more():
    ranking = [f"d{i}" for i in range(10)]
    swapped_top = ["d1", "d0", *ranking[2:]]
    swapped_low = [*ranking[:7], "d8", "d7", "d9"]
    assert rbo(ranking, swapped_top) < rbo(ranking, swapped_low) < 1.0
    with pytest.raises(ValueError, match="persistence"):
        rbo(ranking, ranking, p=1.0)
    with pytest.raises(ValueError, match="more than once"):
        rbo(["a", "a"], ranking)


def test_rankings_similarity_per_question_both_answered():
    first = {"q1": ["a", "b", "c"], "q2": ["x", "y"], "q3": ["m"]}
    second = {"q2": ["y", "x"], "q1": ["a", "b", "c"], "q9": ["z"]}
    rows = rankings_similarity(first, second, k=2, p=0.5)
    assert [r.question for r in rows] == ["q1", "q2"]
    assert (rows[0].overlap, rows[0].jaccard, rows[0].rbo) == (1.0, 1.0, pytest.approx(1.0))
    assert (rows[1].overlap, rows[1].jaccard, rows[1].rbo) == (1.0, 1.0, pytest.approx(0.5))
