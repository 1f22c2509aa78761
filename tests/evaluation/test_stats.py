"""evaluation.runs.stats: bootstrap CIs and the paired randomization test, checked against exact enumeration and scipy.

Pure numpy: no database.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.stats

from evaluation.runs import stats
from evaluation.runs.stats import (
    Aligned,
    PairwiseResult,
    align_by_question,
    bootstrap_ci,
    bootstrap_cis,
    paired_randomization_test,
    paired_randomization_tests,
    pairwise_comparisons,
)


def exact_randomization_p(a: np.ndarray, b: np.ndarray) -> float:
    """The exact two-sided p-value: every one of the 2^n sign assignments of the paired differences."""
    differences = a - b
    observed = abs(differences.mean())
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=differences.size)))
    permuted = np.abs(signs @ differences) / differences.size
    return float(np.mean(permuted >= observed - 1e-12))


# --- paired randomization test ---------------------------------------------------------------------------------


def test_identical_runs_give_p_one() -> None:
    scores = np.random.default_rng(3).uniform(size=50)
    assert paired_randomization_test(scores, scores) == 1.0
    assert paired_randomization_test([0.5, 0.5, 1.0], [0.5, 0.5, 1.0], permutations=10) == 1.0


def test_clear_difference_on_50_questions_is_significant() -> None:
    rng = np.random.default_rng(11)
    baseline = rng.uniform(0.2, 0.7, size=50)
    better = np.clip(baseline + 0.2 + rng.normal(0, 0.05, size=50), 0, 1)
    p_value = paired_randomization_test(better, baseline)
    assert p_value < 0.01
    assert p_value == pytest.approx(1 / 10001)  # no permutation reaches it: the smallest p the test can give
    assert paired_randomization_test(baseline, better) == p_value  # two-sided: symmetric in its arguments


def test_noise_only_difference_is_not_significant() -> None:
    rng = np.random.default_rng(5)
    a = rng.uniform(size=50)
    b = a + rng.normal(0, 0.1, size=50)  # differences are pure noise, centred on zero
    assert paired_randomization_test(a, b) > 0.05


def test_false_positive_rate_is_about_alpha_under_the_null() -> None:
    """Calibration: with no real difference, p < 0.05 in about 5% of experiments (binomial 200, 0.05: sd 1.5%)."""
    rng = np.random.default_rng(2024)
    p_values = []
    for experiment in range(200):
        a = rng.uniform(size=30)
        b = a + rng.normal(0, 0.1, size=30)
        p_values.append(paired_randomization_test(a, b, permutations=1000, seed=experiment))
    rate = float(np.mean(np.array(p_values) < 0.05))
    assert 0.01 <= rate <= 0.10


@pytest.mark.parametrize("data_seed", [0, 1, 7, 42])
def test_matches_exact_enumeration_of_all_sign_flips(data_seed: int) -> None:
    rng = np.random.default_rng(data_seed)
    a = rng.uniform(size=10)
    b = a - rng.normal(0.08, 0.12, size=10)  # a modest shift: p-values spread over (0, 1)
    exact = exact_randomization_p(a, b)
    assert paired_randomization_test(a, b, permutations=20000, seed=data_seed) == pytest.approx(
        exact, abs=0.02
    )


def test_exact_enumeration_agrees_when_work_is_split_into_many_blocks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(stats, "_BLOCK_CELLS", 1000)  # 100 permutations of 10 questions per block
    rng = np.random.default_rng(9)
    a, b = rng.uniform(size=10), rng.uniform(size=10)
    exact = exact_randomization_p(a, b)
    assert paired_randomization_test(a, b, permutations=20000) == pytest.approx(exact, abs=0.02)


def test_ties_with_the_observed_mean_count_as_extreme() -> None:
    # Differences all of size 0.1: every sign flip whose mean has the same size ties the observed value.
    a = np.array([0.6, 0.6, 0.4, 0.4])
    b = np.array([0.5, 0.5, 0.5, 0.5])  # differences +0.1, +0.1, -0.1, -0.1: observed mean 0
    assert paired_randomization_test(a, b, permutations=500) == 1.0


def test_randomization_test_is_deterministic_given_the_seed() -> None:
    rng = np.random.default_rng(1)
    a, b = rng.uniform(size=40), rng.uniform(size=40)
    first = paired_randomization_test(a, b, permutations=2000, seed=123)
    assert paired_randomization_test(a, b, permutations=2000, seed=123) == first
    p_values = {paired_randomization_test(a, b, permutations=2000, seed=seed) for seed in range(5)}
    assert len(p_values) > 1  # the seed does drive the draws


def test_randomization_test_validation() -> None:
    with pytest.raises(ValueError, match="length"):
        paired_randomization_test([0.1, 0.2], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="empty"):
        paired_randomization_test([], [])
    with pytest.raises(ValueError, match="NaN"):
        paired_randomization_test([0.1, math.nan], [0.1, 0.2])
    with pytest.raises(ValueError, match="permutations"):
        paired_randomization_test([0.1], [0.2], permutations=0)


# --- bootstrap CI ----------------------------------------------------------------------------------------------


def test_bootstrap_ci_matches_scipy_percentile_bootstrap() -> None:
    sample = np.random.default_rng(8).uniform(size=40)
    ours = bootstrap_ci(sample, resamples=20000, seed=1)
    theirs = scipy.stats.bootstrap(
        (sample,), np.mean, method="percentile", n_resamples=20000, rng=np.random.default_rng(2)
    ).confidence_interval
    assert ours[0] == pytest.approx(theirs.low, abs=0.005)
    assert ours[1] == pytest.approx(theirs.high, abs=0.005)


def test_bootstrap_ci_at_another_confidence_matches_scipy() -> None:
    sample = np.random.default_rng(4).binomial(1, 0.7, size=60).astype(float)  # a 0/1 metric such as recall@1
    ours = bootstrap_ci(sample, confidence=0.9, resamples=20000, seed=3)
    theirs = scipy.stats.bootstrap(
        (sample,),
        np.mean,
        method="percentile",
        confidence_level=0.9,
        n_resamples=20000,
        rng=np.random.default_rng(4),
    ).confidence_interval
    assert ours == pytest.approx((theirs.low, theirs.high), abs=0.01)


def test_bootstrap_ci_in_blocks_still_matches_scipy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stats, "_BLOCK_CELLS", 4000)  # 100 resamples of 40 questions per block
    sample = np.random.default_rng(8).uniform(size=40)
    ours = bootstrap_ci(sample, resamples=20000, seed=1)
    theirs = scipy.stats.bootstrap(
        (sample,), np.mean, method="percentile", n_resamples=20000, rng=np.random.default_rng(2)
    ).confidence_interval
    assert ours == pytest.approx((theirs.low, theirs.high), abs=0.005)


def test_bootstrap_ci_contains_the_mean_and_narrows_with_more_questions() -> None:
    rng = np.random.default_rng(0)
    small, large = rng.uniform(size=20), rng.uniform(size=2000)
    small_low, small_high = bootstrap_ci(small)
    large_low, large_high = bootstrap_ci(large)
    assert small_low < small.mean() < small_high
    assert large_low < large.mean() < large_high
    assert (large_high - large_low) < (small_high - small_low) / 5  # width shrinks like 1 / sqrt(n)


def test_bootstrap_ci_single_value_and_constant_values() -> None:
    assert bootstrap_ci([0.7]) == (0.7, 0.7)
    assert bootstrap_ci([1.0, 1.0, 1.0]) == (1.0, 1.0)
    low, high = bootstrap_ci([0.0, 1.0])
    assert 0.0 <= low <= high <= 1.0


def test_bootstrap_ci_is_deterministic_given_the_seed() -> None:
    sample = np.random.default_rng(2).uniform(size=30)
    assert bootstrap_ci(sample, seed=5) == bootstrap_ci(sample, seed=5)
    assert bootstrap_ci(sample, seed=5) != bootstrap_ci(sample, seed=6)
    assert all(isinstance(bound, float) for bound in bootstrap_ci(sample))


def test_bootstrap_ci_validation() -> None:
    with pytest.raises(ValueError, match="empty"):
        bootstrap_ci([])
    with pytest.raises(ValueError, match="NaN"):
        bootstrap_ci([0.5, math.nan])
    with pytest.raises(ValueError, match="flat"):
        bootstrap_ci([[0.5, 0.2]])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_ci([0.5, 0.2], confidence=1.0)
    with pytest.raises(ValueError, match="resamples"):
        bootstrap_ci([0.5, 0.2], resamples=0)


# --- batches: every row of a matrix at once -------------------------------------------------------------------


def score_matrix(n: int) -> np.ndarray:
    """Three runs over n questions: uniform scores, a 0/1 metric, and scores bunched near zero."""
    rng = np.random.default_rng(n)
    return np.vstack([rng.random(n), (rng.random(n) > 0.4).astype(float), rng.random(n) ** 3])


@pytest.mark.parametrize("n", [1, 2, 7, 200, 1500])
def test_batched_statistics_are_the_single_call_functions_row_by_row(n: int) -> None:
    """Compare computes every run's interval and every pair's test in one pass; each row's numbers are the
    ones the single-row functions give it, with the same seed."""
    matrix = score_matrix(n)
    cis = bootstrap_cis(matrix, confidence=0.95, resamples=2000)
    assert len(cis) == len(matrix)
    for row, ci in zip(matrix, cis, strict=True):
        assert ci == pytest.approx(bootstrap_ci(row, confidence=0.95, resamples=2000), abs=1e-12)
    pairs = [(0, 1), (0, 2), (1, 2), (0, 0)]
    p_values = paired_randomization_tests(
        np.array([matrix[a] - matrix[b] for a, b in pairs]), permutations=3000
    )
    assert p_values == [paired_randomization_test(matrix[a], matrix[b], permutations=3000) for a, b in pairs]
    assert p_values[-1] == 1.0


def test_batched_statistics_match_row_by_row_across_many_blocks_and_seeds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(stats, "_BLOCK_CELLS", 1000)  # 25 draws of 40 questions per block
    matrix = score_matrix(40)
    for seed in (0, 9):
        cis = bootstrap_cis(matrix, confidence=0.9, resamples=700, seed=seed)
        for row, ci in zip(matrix, cis, strict=True):
            assert ci == pytest.approx(bootstrap_ci(row, confidence=0.9, resamples=700, seed=seed), abs=1e-12)
        differences = np.array([matrix[0] - matrix[1], matrix[2] - matrix[1]])
        assert paired_randomization_tests(differences, permutations=900, seed=seed) == [
            paired_randomization_test(matrix[0], matrix[1], permutations=900, seed=seed),
            paired_randomization_test(matrix[2], matrix[1], permutations=900, seed=seed),
        ]


def test_batched_statistics_of_no_rows_and_validation() -> None:
    assert bootstrap_cis(np.zeros((0, 5))) == []
    assert paired_randomization_tests(np.zeros((0, 5))) == []
    for function in (bootstrap_cis, paired_randomization_tests):
        with pytest.raises(ValueError, match="matrix"):
            function(np.array([0.1, 0.2]))  # one flat series: use the single-row function
        with pytest.raises(ValueError, match="empty"):
            function(np.zeros((2, 0)))
        with pytest.raises(ValueError, match="NaN"):
            function(np.array([[0.1, math.inf]]))
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_cis(np.ones((1, 2)), confidence=0.0)
    with pytest.raises(ValueError, match="resamples"):
        bootstrap_cis(np.ones((1, 2)), resamples=0)
    with pytest.raises(ValueError, match="permutations"):
        paired_randomization_tests(np.ones((1, 2)), permutations=0)


# --- pairwise comparisons --------------------------------------------------------------------------------------


def test_pairwise_comparisons_cover_every_pair_in_input_order() -> None:
    rng = np.random.default_rng(6)
    base = rng.uniform(0.2, 0.6, size=50)
    per_label = {
        "bm25": base.tolist(),
        "hybrid": np.clip(base + 0.3, 0, 1).tolist(),
        "bm25-again": (base + rng.normal(0, 0.01, size=50)).tolist(),
    }
    results = pairwise_comparisons(per_label, permutations=2000)
    assert [(r.label_a, r.label_b) for r in results] == [
        ("bm25", "hybrid"),
        ("bm25", "bm25-again"),
        ("hybrid", "bm25-again"),
    ]
    first = results[0]
    assert isinstance(first, PairwiseResult)
    assert first.mean_a == pytest.approx(np.mean(per_label["bm25"]))
    assert first.mean_b == pytest.approx(np.mean(per_label["hybrid"]))
    assert first.difference == pytest.approx(first.mean_a - first.mean_b)
    assert first.difference < 0
    assert first.p_value == paired_randomization_test(
        per_label["bm25"], per_label["hybrid"], permutations=2000
    )
    assert [r.significant for r in results] == [True, False, True]
    assert all(r.significant == (r.p_value < 0.05) for r in results)


def test_pairwise_comparisons_alpha_and_edge_cases() -> None:
    per_label = {"a": [0.1, 0.9, 0.5, 0.7], "b": [0.2, 0.8, 0.5, 0.6]}
    (result,) = pairwise_comparisons(per_label, alpha=0.999, permutations=100)
    assert result.significant == (result.p_value < 0.999)
    assert pairwise_comparisons({}) == []
    assert pairwise_comparisons({"only": [0.5]}) == []
    with pytest.raises(ValueError, match="length"):
        pairwise_comparisons({"a": [0.1, 0.2], "b": [0.1]})
    with pytest.raises(ValueError, match="alpha"):
        pairwise_comparisons(per_label, alpha=0.0)


# --- alignment by question -------------------------------------------------------------------------------------


def test_align_by_question_keeps_the_common_questions_sorted() -> None:
    runs: list[dict[str, float | None]] = [
        {"q3": 0.3, "q1": 0.1, "q2": 0.2, "q9": 0.9},
        {"q2": 1.2, "q3": 1.3, "q1": 1.1},
        {"q1": 2.1, "q3": 2.3, "q2": None, "q4": 2.4},  # q2 unreadable here: not scored
    ]
    aligned = align_by_question(runs)
    assert isinstance(aligned, Aligned)
    keys, matrix, dropped = aligned
    assert keys == ["q1", "q3"]
    assert matrix.shape == (3, 2)
    np.testing.assert_array_equal(matrix, [[0.1, 0.3], [1.1, 1.3], [2.1, 2.3]])
    assert dropped == 3  # q2, q4 and q9 were scored by some runs but not all


def test_align_by_question_treats_nan_as_missing_and_accepts_int_keys() -> None:
    aligned = align_by_question([{3: 0.5, 1: math.nan, 2: 0.1}, {1: 0.4, 2: 0.2, 3: 0.6}])
    assert aligned.keys == [2, 3]
    np.testing.assert_array_equal(aligned.matrix, [[0.1, 0.5], [0.2, 0.6]])
    assert aligned.dropped == 1


def test_align_by_question_edge_cases() -> None:
    empty = align_by_question([])
    assert (empty.keys, empty.matrix.shape, empty.dropped) == ([], (0, 0), 0)
    disjoint = align_by_question([{"a": 1.0}, {"b": 0.0}])
    assert (disjoint.keys, disjoint.matrix.shape, disjoint.dropped) == ([], (2, 0), 2)
    single = align_by_question([{"b": 0.5, "a": 0.25}])
    assert single.keys == ["a", "b"] and single.dropped == 0


def test_aligned_rows_feed_the_paired_test() -> None:
    runs = [{"q1": 0.9, "q2": 0.8, "q3": 0.7, "extra": 0.0}, {"q1": 0.9, "q2": 0.8, "q3": 0.7}]
    aligned = align_by_question(runs)
    assert paired_randomization_test(aligned.matrix[0], aligned.matrix[1]) == 1.0


def test_latency_summary_is_numpys_percentiles_of_the_calls():
    from evaluation.runs.stats import latency_summary

    values = [5.0, 1.0, 3.0, 2.0, 4.0, 100.0]
    summary = latency_summary(values)
    p50, p95, p99 = np.percentile(values, [50, 95, 99])
    assert summary == {
        "p50": round(p50, 3), "p95": round(p95, 3), "p99": round(p99, 3),
        "mean": round(sum(values) / 6, 3), "max": 100.0, "count": 6,
    }  # fmt: skip
    assert summary["p50"] == 3.5 and summary["p95"] == 76.25
    assert latency_summary([]) is None
    assert latency_summary([0.0004])["p50"] == 0.0  # rounded to the microsecond
