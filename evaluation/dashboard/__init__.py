"""The dashboard's reads (the evaluation launch path it shares with the API is in evaluation.services).

Every read is scoped to one tenant, as the API's selectors are; views stay thin and call these. Pages that
list many runs (runs, trends, home) read EvaluationRun rows only, never their question results; compare reads
the question results' metrics of the selected runs only, as plain values.

By page: `golden` (home, a collection's golden set, question generation and its review queue), `runs` (the runs list, one run, its downloads),
`answer_runs` (what the runs pages, Compare and the question page read of answer runs),
`launch` (the launcher and the job pages), `compare`, `trends`; `common` holds what they share (tenancy, the order
of metrics, whole-day bounds, the cache of finished runs' results). The views use the names below.
"""

from evaluation.dashboard.answer_question import answer_view
from evaluation.dashboard.answer_runs import (
    ANSWER_DIAGNOSES,
    ANSWER_QUESTIONS_PER_PAGE,
    answer_overview,
    answer_question_results,
    answer_question_rows,
    is_answer_run,
    question_counts,
)
from evaluation.dashboard.common import ordered_metrics, tenant_key, tenants_for_user
from evaluation.dashboard.compare import MAX_COMPARE_RUNS, compare_runs, comparison
from evaluation.dashboard.golden import (
    DISCARD_CHART_ID,
    GenerateBackend,
    audit_summary,
    audit_trail,
    generate_backend_info,
    generate_report,
    golden_csv,
    golden_tags,
    home_collections,
    recent_changes,
    review_pending_count,
    review_queue,
    review_rows,
)
from evaluation.dashboard.launch import (
    answer_launch_collections,
    job_error_message,
    job_result_batch,
    launch_collections,
)
from evaluation.dashboard.runs import (
    DIAGNOSES,
    RUN_QUESTIONS_PER_PAGE,
    RUNS_PER_PAGE,
    neighbour_positions,
    question_diagnosis,
    question_documents,
    question_result,
    run_csv,
    run_depth_k,
    run_json,
    run_labels,
    run_questions,
    run_rows,
    run_trec,
    runs_filtered,
)
from evaluation.dashboard.trends import TREND_DAYS, latest_run_collection, trend_report, trend_window

__all__ = [
    "ANSWER_DIAGNOSES",
    "ANSWER_QUESTIONS_PER_PAGE",
    "DIAGNOSES",
    "DISCARD_CHART_ID",
    "GenerateBackend",
    "MAX_COMPARE_RUNS",
    "RUN_QUESTIONS_PER_PAGE",
    "RUNS_PER_PAGE",
    "TREND_DAYS",
    "answer_launch_collections",
    "answer_overview",
    "answer_question_results",
    "answer_question_rows",
    "answer_view",
    "audit_summary",
    "audit_trail",
    "compare_runs",
    "comparison",
    "generate_backend_info",
    "generate_report",
    "golden_csv",
    "golden_tags",
    "home_collections",
    "is_answer_run",
    "job_error_message",
    "job_result_batch",
    "latest_run_collection",
    "launch_collections",
    "neighbour_positions",
    "ordered_metrics",
    "question_counts",
    "question_diagnosis",
    "question_documents",
    "question_result",
    "recent_changes",
    "review_pending_count",
    "review_queue",
    "review_rows",
    "run_csv",
    "run_depth_k",
    "run_json",
    "run_labels",
    "run_questions",
    "run_rows",
    "run_trec",
    "runs_filtered",
    "tenant_key",
    "tenants_for_user",
    "trend_report",
    "trend_window",
]
