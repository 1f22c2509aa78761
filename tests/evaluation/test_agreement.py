"""evaluation.judgments.agreement against hand-computed values and published worked examples."""

from __future__ import annotations

import pytest

from evaluation.judgments import agreement
from evaluation.judgments.agreement import (
    best_threshold,
    cohen_kappa,
    confusion,
    fleiss_kappa,
    krippendorff_alpha,
    reliability_bins,
    roc_auc,
    weighted_kappa,
)


def test_auc_counts_ties_as_half_and_is_undefined_for_one_class():
    assert roc_auc([0.1, 0.4, 0.35, 0.8], [False, False, True, True]) == 0.75
    # pos 0.5 ties both negatives (1/2 each), pos 0.9 beats both: 3 of 4 pairs
    assert roc_auc([0.5, 0.5, 0.5, 0.9], [False, True, False, True]) == 0.75
    assert roc_auc([1, 2, 3], [True, True, True]) is None
    with pytest.raises(ValueError):
        roc_auc([1.0, float("nan")], [True, False])


def test_confusion_and_balanced_accuracy_at_a_threshold():
    c = confusion([0.2, 0.6, 0.7, 0.4, 0.9], [False, False, True, True, True], 0.5)
    assert (c.tp, c.fp, c.tn, c.fn) == (2, 1, 1, 1)
    assert c.precision == 2 / 3 and c.recall == 2 / 3 and c.balanced_accuracy == (2 / 3 + 1 / 2) / 2


def test_cohen_kappa_by_hand():
    # observed 4/5; chance 3/5 * 2/5 + 2/5 * 3/5 = 0.48
    assert cohen_kappa([1, 1, 0, 0, 1], [1, 0, 0, 0, 1]) == pytest.approx((0.8 - 0.48) / 0.52, abs=1e-12)
    assert cohen_kappa([1, 1], [1, 1]) is None


def test_fleiss_kappa_on_the_worked_example_of_fleiss_1971():
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]  # fmt: skip
    assert fleiss_kappa(table) == pytest.approx(0.20993, abs=5e-5)


def test_krippendorff_alpha_on_his_nominal_reliability_example():
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": 4 observers, 12 units, nominal 0.743
    a = [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None]
    b = [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3]
    c = [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None]
    d = [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]
    units = list(zip(a, b, c, d, strict=True))
    assert krippendorff_alpha(units) == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha([[1, 1], [1, 1]]) is None


def test_reliability_bins_and_the_best_threshold():
    bins = reliability_bins([0.05, 0.15, 0.12, 0.95, 1.0], [False, True, False, True, True], bins=10)
    assert (bins[0].count, bins[1].count, bins[9].count) == (1, 2, 2)
    assert bins[1].pass_rate == 0.5 and bins[1].mean_score == pytest.approx(0.135)
    assert bins[9].pass_rate == 1.0 and bins[4].count == 0 and bins[4].pass_rate is None
    best = best_threshold([0.1, 0.2, 0.7, 0.8], [False, False, True, True], resamples=200)
    assert best.value == pytest.approx(0.45) and best.balanced_accuracy == 1.0
    assert best.low <= best.value <= best.high
    assert best_threshold([0.1, 0.2], [True, True]) is None


def test_the_best_cut_equals_a_brute_force_search():
    import numpy as np

    from evaluation.judgments.agreement import balanced_accuracy

    rng = np.random.default_rng(7)
    for _ in range(20):
        scores = np.round(rng.random(60), 1).tolist()  # many ties
        labels = (rng.random(60) < np.asarray(scores)).tolist()
        if all(labels) or not any(labels):
            continue
        best = best_threshold(scores, labels, resamples=0)
        brute = max(balanced_accuracy(scores, labels, t) for t in [*sorted(set(scores)), 2.0])
        assert best.balanced_accuracy == pytest.approx(brute, abs=1e-12)
        assert balanced_accuracy(scores, labels, best.value) == pytest.approx(brute, abs=1e-12)


def test_roc_points_move_tied_items_together_and_run_from_corner_to_corner():
    # scores 0.9 (pass), 0.7 (fail), 0.7 (pass), 0.2 (fail): 2 passing, 2 failing
    points = agreement.roc_points([0.9, 0.7, 0.7, 0.2], [True, False, True, False])
    assert points == [(0.0, 0.0), (0.0, 0.5), (0.5, 1.0), (1.0, 1.0)]
    assert agreement.roc_points([0.5, 0.6], [True, True]) == []


def test_judge_agreement_reports_the_verdict_at_the_threshold_beside_the_auc():
    scores = [1.0, 1.0, 0.0, 0.0, 0.0]
    labels = [True, True, True, False, False]
    found = agreement.judge_agreement(scores, labels, 0.6)
    # AUC: of the 3 x 2 pairs, the two 1.0 passes beat both fails (4), the 0.0 pass ties both (2 x 0.5)
    assert found["auc"] == round(5 / 6, 4)
    assert found["confusion"] == {"tp": 2, "fp": 0, "tn": 2, "fn": 1}
    assert (found["precision"], found["recall"]) == (1.0, round(2 / 3, 4))
    assert found["balanced_accuracy"] == round((2 / 3 + 1) / 2, 4)
    # kappa of verdicts [T, T, F, F, F] with labels [T, T, T, F, F]: p_o = 0.8, p_e = 0.4 * 0.6 + 0.6 * 0.4
    assert found["cohen_kappa"] == round((0.8 - 0.48) / (1 - 0.48), 4)
    assert found["n"] == 5 and found["positives"] == 3
    assert found["best_threshold"]["value"] == 0.5 and found["roc"][-1] == [1.0, 1.0]
    assert [b["count"] for b in found["reliability"]] == [3, 0, 0, 0, 0, 0, 0, 0, 0, 2]


def test_rater_agreement_gives_fleiss_only_when_every_item_has_as_many_raters():
    same = agreement.rater_agreement([["pass", "pass"], ["fail", "fail"], ["pass", "fail"]])
    assert same["items_rated_twice"] == 3 and same["fleiss_kappa"] is not None
    assert same["krippendorff_alpha"] == round(agreement.krippendorff_alpha([["pass", "pass"], ["fail", "fail"], ["pass", "fail"]]), 4)  # fmt: skip
    uneven = agreement.rater_agreement(
        [["pass", "pass", "pass"], ["fail", "fail", None], ["pass", None, None]]
    )
    assert uneven["fleiss_kappa"] is None and uneven["items_rated_twice"] == 2 and uneven["items"] == 3


def test_krippendorff_alpha_interval_and_ordinal_on_his_example():
    # The same example's published figures: interval 0.849, ordinal 0.815 (nominal 0.743 above).
    a = [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None]
    b = [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3]
    c = [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None]
    d = [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]
    units = list(zip(a, b, c, d, strict=True))
    assert krippendorff_alpha(units, metric="interval") == pytest.approx(0.849, abs=5e-4)
    assert krippendorff_alpha(units, metric="ordinal") == pytest.approx(0.815, abs=5e-4)
    with pytest.raises(ValueError, match="unknown metric"):
        krippendorff_alpha(units, metric="ratio")


def test_weighted_kappa_by_hand():
    grades = [0, 1, 2, 3]
    assert weighted_kappa([0, 1, 2, 3], [0, 1, 2, 3], grades) == 1.0
    assert weighted_kappa([0, 0], [0, 0], grades) is None  # no disagreement to expect
    # Two raters, four items: (0,0) (1,2) (2,2) (3,1). Observed weighted disagreement: (1 + 4) / 9 / 4 = 5/36.
    # Marginals: first 0,1,2,3 once each; second 0 once, 1 once, 2 twice. Expected: sum over cells of
    # p(i) q(j) (i - j)^2 / 9 = (1/4) * (1/4 * 0 + 1/4 * 1 + 1/2 * 4 + ... ) summed for each i.
    first, second = [0, 1, 2, 3], [0, 2, 2, 1]
    q = {0: 0.25, 1: 0.25, 2: 0.5}
    chance = sum(0.25 * q[j] * (i - j) ** 2 / 9 for i in grades for j in q)
    assert weighted_kappa(first, second, grades) == pytest.approx(1 - (5 / 36) / chance, abs=1e-12)
    # A grade one apart costs a ninth of one three apart: near misses are near agreement.
    assert weighted_kappa([0, 1, 2, 3], [1, 1, 2, 3], grades) > weighted_kappa(
        [0, 1, 2, 3], [3, 1, 2, 3], grades
    )
