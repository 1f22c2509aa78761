"""evaluation.retrieval.completeness: when runs' judged@k differ enough that the standard measures mislead."""

from __future__ import annotations

import pytest

from evaluation.retrieval.completeness import JUDGED_GAP, judged_gap


def means(**shares: float) -> dict[str, dict[str, float]]:
    """Runs whose nDCG@10 rises with their judged@10 and whose condensed nDCG@10 falls with it."""
    return {
        name: {"ndcg@10": share, "judged@5": 1.0, "judged@10": share, "ndcg_cond@10": 1 - share, "bpref": 0.4}
        for name, share in shares.items()
    }


def test_a_gap_at_the_threshold_is_named_with_every_runs_share_and_what_to_read_instead():
    gap = judged_gap(means(bm25=0.9, dense=0.9 - JUDGED_GAP, hybrid=0.85))
    assert gap is not None
    assert gap.metric == "judged@10"  # the largest k every run carries, not judged@5 where they agree
    assert gap.shares == {"bm25": 0.9, "dense": 0.9 - JUDGED_GAP, "hybrid": 0.85}
    assert gap.gap == pytest.approx(JUDGED_GAP) and (gap.most, gap.least) == ("bm25", "dense")
    assert gap.read_instead == "ndcg_cond@10"
    # nDCG@10 puts the most judged run first, condensed nDCG@10 the least judged: they disagree
    assert gap.agrees is False
    same_way = {
        name: {**values, "ndcg_cond@10": values["ndcg@10"] / 2}
        for name, values in means(a=0.9, b=0.5).items()
    }
    assert judged_gap(same_way).agrees is True


def test_close_shares_a_single_run_and_runs_without_judged_at_k_give_no_warning():
    assert judged_gap(means(bm25=0.9, dense=0.85)) is None
    assert judged_gap(means(bm25=0.9)) is None
    assert judged_gap({"old": {"ndcg@10": 0.5}, "new": {"ndcg@10": 0.4, "judged@10": 0.2}}) is None


def test_the_largest_common_k_is_read_and_only_a_measure_every_run_has_is_offered():
    runs = {"a": {"judged@5": 1.0, "judged@20": 0.3, "ndcg@5": 0.5}, "b": {"judged@5": 0.5, "ndcg@5": 0.6}}
    gap = judged_gap(runs)
    assert gap is not None and gap.metric == "judged@5" and gap.gap == 0.5
    assert gap.read_instead is None and gap.agrees is None  # ndcg_cond@5 is carried by neither
