"""A run as every reader sees it: one presenter for the REST API, the CLI, jobs' results and the dashboard's
downloads.

- `run_summary(run)`: what POST /search/evaluate (and /answers), an Evaluate job's result and `manage.py
  evaluate` report of a run; `RunSummaryOut` / `AnswerRunSummaryOut` document it;
- `run_detail(run)`: the stored run with its per-question results, as GET /search/evaluate/runs/{id} answers it
  and the dashboard's JSON download writes it (`RunDetailOut`); `run_rows(runs)`: the list (`RunOut`).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

from evaluation.answers import verdicts
from evaluation.configs import MAX_COLLECTIONS_PER_CALL
from evaluation.judgments.calibration import run_calibration
from evaluation.models import EvaluationRun, LabelLevel, RunKind, RunStatus
from evaluation.reports.diagnosis import RETRIEVAL_DIAGNOSES, retrieval_diagnosis
from evaluation.reports.shapes import (
    ANSWER_RUN_CONFIG,
    EXCLUSIONS,
    JUDGE_CONFIDENCE_HELP,
    JUDGE_METHODS,
    RETRIEVAL_CONFIG,
    RUN_MODES,
    AnswerMetricsOut,
    AnswerTargetRunConfigOut,
    CallUsageOut,
    CitationOut,
    LatencyOut,
    PassageOut,
    RefusalOut,
    RunConfigOut,
    RunFileConfigOut,
    SlicesOut,
    StoredRunIndexOut,
    TargetConfigOut,
    counts,
    stored,
)
from evaluation.runs.selectors import content_changed_since
from goldenset.vocabulary.metric_names import JUDGED_METRICS


class RunSummaryOut(serializers.Serializer):
    """A retrieval run as /search/evaluate answers it (services.run_summary)."""

    run_id = serializers.UUIDField()
    label = serializers.CharField()  # type: ignore[assignment]
    config = stored(RETRIEVAL_CONFIG)
    ks = serializers.ListField(child=serializers.IntegerField())
    metrics = serializers.DictField(
        child=serializers.FloatField(), help_text='{"recall@10": 0.71, "mrr": ...}; {} for a failed run'
    )
    status = serializers.ChoiceField(
        choices=RunStatus.values,
        help_text="partial: some questions failed and are left out of the means; failed: more than max_error_rate.",
    )
    question_count = serializers.IntegerField()
    duration_ms = serializers.FloatField()
    latency_ms = LatencyOut(allow_null=True)
    failed_questions = serializers.IntegerField(
        allow_null=True, help_text="Failed questions (targets); null otherwise."
    )
    unjudged = serializers.DictField(
        child=serializers.IntegerField(),
        help_text='Targets: retrieved ids the collection lacks, over all questions, {"unjudged@10": 3}; {} otherwise.',
    )
    warnings = serializers.ListField(child=serializers.CharField())
    index = stored(StoredRunIndexOut())
    slices = stored(SlicesOut())


class EvaluateOut(serializers.Serializer):
    """A retrieval evaluation: one run per configuration, of one batch (also an Evaluate job's result)."""

    batch_id = serializers.UUIDField()
    runs = RunSummaryOut(many=True)


class AnswerRunSummaryOut(serializers.Serializer):
    """An answer run as an EvaluateAnswers job's result and the CLI report it (evaluation.runs.store.run_summary)."""

    run_id = serializers.UUIDField()
    label = serializers.CharField()  # type: ignore[assignment]
    kind = serializers.ChoiceField(choices=RunKind.choices)
    config = stored(ANSWER_RUN_CONFIG)
    status = serializers.ChoiceField(
        choices=RunStatus.values,
        help_text="An answering target's run: partial when some calls failed, failed above max_error_rate.",
    )
    mode = serializers.ChoiceField(choices=RUN_MODES)
    score = serializers.FloatField(allow_null=True, help_text="0-100; null when no question could be scored.")
    metrics = AnswerMetricsOut()
    metric_methods = serializers.DictField(child=serializers.CharField())
    refusal = stored(RefusalOut(), allow_null=True)
    excluded = stored(
        serializers.DictField(child=counts()), allow_null=True, help_text="{metric: {reason: questions}}"
    )
    diagnosis = stored(counts(), allow_null=True, help_text="{retrieval|generation|pass|error: questions}")
    passed = serializers.IntegerField(allow_null=True)
    failed = serializers.IntegerField(allow_null=True)
    question_count = serializers.IntegerField()
    judge_confidence = stored(
        serializers.DictField(child=serializers.FloatField()),
        allow_null=True,
        help_text=JUDGE_CONFIDENCE_HELP,
    )
    usage = stored(CallUsageOut(), allow_null=True)
    latency_ms = LatencyOut(allow_null=True, help_text="Per-question answer calls (model or target).")
    duration_ms = serializers.FloatField()
    warnings = serializers.ListField(child=serializers.CharField())
    slices = stored(SlicesOut())


class AnswerEvaluationOut(serializers.Serializer):
    """An answer evaluation: one run per configuration, of one batch (an EvaluateAnswers job's result)."""

    batch_id = serializers.UUIDField()
    runs = AnswerRunSummaryOut(many=True)


class RunStatsOut(serializers.Serializer):
    """An answer run's summary (verdicts.RunSummary with the calls' usage); a retrieval run's latency, and a
    target run's failed questions and unjudged ids."""

    metrics = serializers.DictField(child=serializers.FloatField(allow_null=True), required=False)
    methods = serializers.DictField(child=serializers.CharField(allow_blank=True), required=False)
    mode = serializers.ChoiceField(choices=RUN_MODES, required=False)
    score = serializers.FloatField(allow_null=True, required=False)
    excluded = serializers.DictField(child=counts(), required=False)
    fallbacks = counts(required=False)
    judge_confidence = serializers.DictField(
        child=serializers.FloatField(), required=False, help_text=JUDGE_CONFIDENCE_HELP
    )
    refusal = RefusalOut(required=False)
    diagnosis = counts(required=False)
    passed = serializers.IntegerField(required=False)
    failed = serializers.IntegerField(required=False)
    warnings = serializers.ListField(child=serializers.CharField(), required=False)
    usage = CallUsageOut(required=False)
    latency_ms = LatencyOut(
        required=False, allow_null=True, help_text="Retrieval runs: per-question latency."
    )
    failed_questions = serializers.IntegerField(required=False, help_text="Target runs: failed questions.")
    unjudged = serializers.DictField(child=serializers.IntegerField(), required=False)


class RunOut(serializers.Serializer):
    run_id = serializers.UUIDField(source="id")
    batch_id = serializers.UUIDField()
    kind = serializers.ChoiceField(choices=RunKind.choices)
    label = serializers.CharField()  # type: ignore[assignment]
    collection_ids = serializers.ListField(child=serializers.CharField(), max_length=MAX_COLLECTIONS_PER_CALL)
    config = stored(
        PolymorphicProxySerializer(
            component_name="StoredRunConfig",
            serializers=[RunConfigOut, TargetConfigOut, RunFileConfigOut, AnswerTargetRunConfigOut],
            resource_type_field_name=None,
        )
    )
    ks = serializers.ListField(child=serializers.IntegerField())
    metrics = serializers.DictField(child=serializers.FloatField())
    metric_methods = serializers.DictField(child=serializers.CharField())
    status = serializers.ChoiceField(choices=RunStatus.values)
    mode = serializers.ChoiceField(
        choices=RUN_MODES, allow_blank=True, help_text='Answer runs; "" for retrieval.'
    )
    question_count = serializers.IntegerField()
    duration_ms = serializers.FloatField()
    warnings = serializers.ListField(child=serializers.CharField())
    golden_fingerprint = serializers.CharField()
    index = stored(StoredRunIndexOut(), source="index_info")
    summary = stored(
        RunStatsOut(),
        help_text="Answer runs: score, excluded counts per metric, fallbacks, refusal both ways, diagnosis counts, "
        "usage; retrieval runs: latency_ms (and errors, unjudged for a target).",
    )
    job_id = serializers.UUIDField(allow_null=True)
    created_at = serializers.DateTimeField()


class RankedDocumentOut(serializers.Serializer):
    rank = serializers.IntegerField()
    document_id = serializers.CharField()
    score = serializers.FloatField()
    relevant = serializers.BooleanField(help_text="Judged relevant in the golden entry.")


class JudgementOut(serializers.Serializer):
    value = serializers.FloatField(allow_null=True, help_text="0..1; null: excluded from this metric.")
    method = serializers.ChoiceField(choices=JUDGE_METHODS)
    detail = serializers.DictField(help_text="What the judge found (statements, verdicts, reasons).")
    excluded = serializers.ChoiceField(choices=EXCLUSIONS, allow_null=True)
    fallback = serializers.CharField(allow_null=True, help_text="Why the heuristic stood in for the judge.")


class QuestionResultOut(serializers.Serializer):
    position = serializers.IntegerField()
    entry_id = serializers.UUIDField()
    entry_key = serializers.CharField()
    collection_id = serializers.CharField()
    question = serializers.CharField()
    expected = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="Each judged document's grade, as the run read the golden set: above 0 expected (relevant), "
        "0 judged not relevant.",
    )
    ranked = serializers.SerializerMethodField()
    first_relevant_rank = serializers.IntegerField(allow_null=True)
    missing_document_ids = serializers.ListField(child=serializers.CharField())
    metrics = serializers.DictField(
        child=serializers.FloatField(), help_text="{} for a question that failed."
    )
    latency_ms = serializers.FloatField(allow_null=True, help_text="Its search (or target call).")
    error = serializers.CharField(
        help_text='Why it could not be scored (a target\'s failed call); "" otherwise.'
    )
    unjudged = serializers.DictField(
        child=serializers.IntegerField(), help_text='Targets: {"unjudged@10": 1}.'
    )
    diagnosis = serializers.SerializerMethodField(
        help_text="Answer runs: pass, retrieval, generation or error (the verdict's). Retrieval runs: pass, "
        "partial, miss or error, decided when read by the same rule as the dashboard, the CSV and JUnit files "
        "and the CLI (evaluation.reports.diagnosis)."
    )
    warnings = serializers.ListField(child=serializers.CharField())
    # Answer runs (empty or null for retrieval runs):
    reasons = serializers.ListField(
        child=serializers.CharField(),
        help_text='Why the question failed, e.g. "retrieval: expected document missed: d3" or "generation: '
        'unfaithful (faithfulness 0.40 < 0.6)"; [] when it passed. Runs stored before this field carry them '
        "at the end of warnings.",
    )
    answer = serializers.CharField()
    citations = stored(CitationOut(many=True))
    passages = stored(
        PassageOut(many=True),
        source="context",
        help_text="The numbered passages the answer was written from.",
    )
    judgements = stored(serializers.DictField(child=JudgementOut()), help_text="{metric: judgement}")
    answerable = serializers.BooleanField()
    refused = serializers.BooleanField(allow_null=True)
    passed = serializers.BooleanField(allow_null=True)
    tags = serializers.ListField(
        child=serializers.CharField(), help_text="The entry's tags when the run read it."
    )
    origin = serializers.CharField(
        help_text="The entry's origin then; \"\" for a request's unanswerable question."
    )

    @extend_schema_field(serializers.ChoiceField(choices=sorted({*verdicts.DIAGNOSES, *RETRIEVAL_DIAGNOSES})))
    def get_diagnosis(self, result) -> str:
        return retrieval_diagnosis(
            result.diagnosis, result.first_relevant_rank, result.missing_document_ids, result.error
        )

    @extend_schema_field(RankedDocumentOut(many=True))
    def get_ranked(self, result) -> list[dict]:
        return [
            {"rank": rank, "document_id": doc, "score": score, "relevant": result.expected.get(doc, 0) > 0}
            for rank, (doc, score) in enumerate(result.ranked, start=1)
        ]


class MetricCalibrationOut(serializers.Serializer):
    judge = serializers.CharField(help_text='"heuristic" or "llm-judge:<model>".')
    level = serializers.ChoiceField(choices=LabelLevel.values)
    auc = serializers.FloatField()
    n = serializers.IntegerField(help_text="Human-labelled items it was measured on.")


class RunDetailOut(RunOut):
    slices = stored(SlicesOut())
    results = QuestionResultOut(many=True)
    content_changed_since = serializers.SerializerMethodField(
        help_text="A collection of the run changed after it (its content version now is newer than the one the "
        "run recorded); null for a run stored before runs recorded it."
    )
    calibration = serializers.SerializerMethodField(
        help_text="Answer runs: each judged metric's judge against the collection's human labels, where it has "
        "some (GET /search/evaluate/calibration has the whole report)."
    )

    @extend_schema_field(serializers.DictField(child=MetricCalibrationOut()))
    def get_calibration(self, run) -> dict:
        return run_calibration(run)

    @extend_schema_field(serializers.BooleanField(allow_null=True))
    def get_content_changed_since(self, run) -> bool | None:
        return content_changed_since(run)


def run_summary(run: EvaluationRun) -> dict[str, Any]:
    """A run as the evaluate endpoints, the CLI and a job's result report it."""
    if run.kind == RunKind.ANSWERS:
        return _answer_run_summary(run)
    return {
        "run_id": str(run.pk),
        "label": run.label,
        "config": run.config,
        "ks": run.ks,
        "metrics": run.metrics,
        "status": run.status,
        "question_count": run.question_count,
        "duration_ms": run.duration_ms,
        "latency_ms": run.summary.get("latency_ms"),
        "failed_questions": run.summary.get("failed_questions"),
        "unjudged": run.summary.get("unjudged", {}),
        "warnings": run.warnings,
        "index": run.index_info,
        "slices": run.slices,
    }


def _answer_run_summary(run: EvaluationRun) -> dict[str, Any]:
    return {
        "run_id": str(run.pk),
        "label": run.label,
        "kind": run.kind,
        "config": run.config,
        "status": run.status,
        "mode": run.mode,
        "score": run.summary.get("score"),
        "metrics": {name: run.summary.get("metrics", {}).get(name) for name in JUDGED_METRICS},
        "metric_methods": run.metric_methods,
        "refusal": run.summary.get("refusal"),
        "excluded": run.summary.get("excluded"),
        "diagnosis": run.summary.get("diagnosis"),
        "passed": run.summary.get("passed"),
        "failed": run.summary.get("failed"),
        "question_count": run.question_count,
        "judge_confidence": run.summary.get("judge_confidence"),
        "usage": run.summary.get("usage"),
        "latency_ms": run.summary.get("latency_ms"),
        "duration_ms": run.duration_ms,
        "warnings": run.warnings,
        "slices": run.slices,
    }


def batch_result(batch_id, runs) -> dict[str, Any]:
    """A batch of runs as POST /search/evaluate (and /answers) and an evaluation job's result report it."""
    return {"batch_id": str(batch_id), "runs": [run_summary(run) for run in runs]}


def run_detail(run: EvaluationRun) -> dict[str, Any]:
    """The stored run with its per-question results (`run` read with them: selectors.run_get(with_results=True))."""
    return RunDetailOut(run).data


def run_rows(runs) -> list[dict[str, Any]]:
    """Runs as the list answers them, without their questions."""
    return list(RunOut(runs, many=True).data)


class RetrievalGateOut(serializers.Serializer):
    """`manage.py evaluate --format json`: the runs as /search/evaluate answers them, and the gate."""

    batch_id = serializers.UUIDField()
    metric = serializers.CharField(help_text="The gated metric.")
    fail_under = serializers.FloatField(allow_null=True, help_text="The bar; null: none (report only).")
    passed = serializers.BooleanField(help_text="Every configuration cleared the bar.")
    runs = RunSummaryOut(many=True)


class AnswerGateOut(serializers.Serializer):
    """`manage.py evaluate --answers --format json`: the runs as an EvaluateAnswers job's result, and the gate."""

    batch_id = serializers.UUIDField()
    fail_under = serializers.FloatField(
        allow_null=True, help_text="The bar on the score (0-100); null: none."
    )
    passed = serializers.BooleanField()
    runs = AnswerRunSummaryOut(many=True)
