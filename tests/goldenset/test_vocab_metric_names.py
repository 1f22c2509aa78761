"""goldenset.vocabulary.metric_names: the metric names every producer and reader shares, in display order."""

from __future__ import annotations

from evaluation.answers import judge
from evaluation.dashboard.common_reads import ordered_metrics
from evaluation.retrieval.metrics import evaluate_query
from goldenset.vocabulary.metric_names import (
    ANSWER_METRICS,
    ANSWER_SCORE,
    INCOMPLETE_METRICS,
    JUDGED_METRICS,
    REFUSAL_METRICS,
    RETRIEVAL_METRICS,
    at_k,
)


def test_the_names_stored_runs_and_the_api_carry() -> None:
    assert RETRIEVAL_METRICS == ("recall", "ndcg", "mrr", "judged", "ndcg_cond", "bpref", "map_cond")
    assert RETRIEVAL_METRICS[3:] == INCOMPLETE_METRICS
    assert JUDGED_METRICS == (
        "faithfulness", "context_recall", "answer_relevancy", "citation_precision", "context_relevancy",
    )  # fmt: skip
    assert REFUSAL_METRICS == ("refusal_recall", "false_refusal_rate")
    assert ANSWER_SCORE == "score"
    assert ANSWER_METRICS[0] == ANSWER_SCORE
    assert ANSWER_METRICS[1:] == JUDGED_METRICS + REFUSAL_METRICS
    assert at_k("ndcg", 10) == "ndcg@10"


def test_the_judge_scores_the_judged_metrics_in_their_order() -> None:
    assert judge.METRICS is JUDGED_METRICS


def test_a_query_is_scored_under_the_retrieval_names_in_display_order() -> None:
    metrics = evaluate_query(["a", "b", "c"], {"b": 1}, [1, 3])
    assert list(metrics) == ["recall@1", "recall@3", "ndcg@1", "ndcg@3", "mrr"] + [
        "judged@1", "judged@3", "ndcg_cond@1", "ndcg_cond@3", "bpref", "map_cond",
    ]  # fmt: skip
    assert list(metrics) == ordered_metrics(metrics)


def test_the_dashboard_orders_retrieval_then_answer_metrics_then_anything_else() -> None:
    names = ["zeta", "mrr", *reversed(ANSWER_METRICS), "ndcg@10", "recall@10", "recall@5"]
    assert ordered_metrics(names) == ["recall@5", "recall@10", "ndcg@10", "mrr", *ANSWER_METRICS, "zeta"]
