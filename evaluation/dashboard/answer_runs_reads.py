"""The reads of answer runs (kind "answers"): a run's header (score, mode, each metric with its method and what
was left out of it, refusal both ways, diagnoses, usage), its questions table, one question's answer beside the
passages it was written from with the judge's verdicts, and the per-question values Compare pairs.

What an answer run stores is read defensively: any metric may be absent (no question could be scored on it:
shown "—" with the reason from the run's warnings, never 0), and a judgement's detail may carry keys this page
does not know (shown as a small key/value list), or lack keys it expects.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Count, Func, JSONField, QuerySet
from django.db.models.sql.compiler import SQLCompiler

from evaluation.answers.verdicts import DIAGNOSES, DIAGNOSIS_MEANING
from evaluation.dashboard.common_reads import config_value, ordered_metrics
from evaluation.judgments.calibration import run_calibration
from evaluation.models import EvaluationRun, LabelLevel, QuestionResult, RunKind
from goldenset.vocabulary.metric_names import ANSWER_SCORE, JUDGED_METRICS, REFUSAL_METRICS

ANSWERS = RunKind.ANSWERS.value
ANSWER_QUESTIONS_PER_PAGE = 100


METHOD_TEXT = {"heuristic": "heuristic", "llm-judge": "LLM judge", "mixed": "mixed", "count": "count"}
EXCLUSION_TEXT = {"not-applicable": "not applicable", "unreadable": "unreadable"}
METRIC_TEXT = {
    "faithfulness": "Faithfulness",
    "context_recall": "Context recall",
    "answer_relevancy": "Answer relevancy",
    "citation_precision": "Citation precision",
    "context_relevancy": "Context relevancy",
    "refusal_recall": "Refusal recall",
    "false_refusal_rate": "False-refusal rate",
    "score": "Score",
}
METRIC_HELP = {
    "faithfulness": "share of the answer's statements the passages support",
    "context_recall": "share of the reference answer's statements the passages support",
    "answer_relevancy": "how well the answer addresses the question",
    "citation_precision": "share of citations whose passage supports the cited statement",
    "context_relevancy": "share of the passages relevant to the question",
}


def is_answer_run(run: EvaluationRun) -> bool:
    return run.kind == ANSWERS


def stored_int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def stored_number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return None if math.isnan(value) else float(value)


def stored_mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


# --- a run's header ------------------------------------------------------------------------------------------


@dataclass
class MetricSummary:
    name: str
    title: str
    value: float | None
    method: str  # heuristic | llm-judge | mixed | count | ""
    method_text: str
    excluded: list[tuple[int, str]]  # (questions, reason text)
    fallbacks: int
    reasons: list[str]  # the run's warnings about this metric
    help: str = ""
    calibration: str = ""  # how far its judge agrees with people here: "AUC 0.86 against 1,200 human labels"
    confidence: float | None = None  # the judge's mean confidence, when it sampled several judgements

    @property
    def excluded_text(self) -> str:
        return "; ".join(f"{n} excluded: {reason}" for n, reason in self.excluded)


@dataclass
class Refusal:
    """Refusal both ways: always shown together, each with the counts it was computed from."""

    recall: float | None
    unanswerable: int
    declined_unanswerable: int
    false_rate: float | None
    answerable: int
    declined_answerable: int


@dataclass
class AnswerOverview:
    score: float | None
    mode: str
    metrics: list[MetricSummary]
    refusal: Refusal
    diagnosis: list[tuple[str, int, str]]  # (diagnosis, questions, what it means)
    passed: int | None
    failed: int | None
    usage: dict[str, Any]
    config: list[tuple[str, Any]]
    thresholds: list[tuple[str, float, str]]  # (metric, threshold, where it came from)
    other_config: list[tuple[str, Any]]


def _metric_reasons(name: str, warnings: Iterable[str]) -> list[str]:
    prefix = f"{name}:"
    return [w.split(":", 1)[1].strip() for w in warnings if isinstance(w, str) and w.startswith(prefix)]


def _calibration_text(found: Mapping[str, Any] | None) -> str:
    if not found:
        return ""
    level = " statement" if found["level"] == LabelLevel.STATEMENT else ""
    return f"AUC {found['auc']:.2f} against {found['n']:,} human{level} labels"


def metric_summaries(run: EvaluationRun) -> list[MetricSummary]:
    """Each judged metric of the run: its mean (None when no question could be scored), method, the judge's
    mean confidence (sampled judgements only), exclusions by reason, judge fallbacks, the run's warnings about
    it, and its judge's calibration where the collection has human labels."""
    calibrated = run_calibration(run)
    summary = stored_mapping(run.summary)
    excluded = stored_mapping(summary.get("excluded"))
    fallbacks = stored_mapping(summary.get("fallbacks"))
    confidence = stored_mapping(summary.get("judge_confidence"))
    methods = {**stored_mapping(summary.get("methods")), **stored_mapping(run.metric_methods)}
    extra = [
        name
        for name in ordered_metrics(run.metrics)
        if name not in JUDGED_METRICS and name not in (ANSWER_SCORE, *REFUSAL_METRICS)
    ]
    out = []
    for name in (*JUDGED_METRICS, *extra):
        value = stored_number(run.metrics.get(name))
        method = str(methods.get(name) or "")
        reasons = _metric_reasons(name, run.warnings or [])
        if value is None and not reasons:
            reasons = ["no question could be scored on this metric"]
        out.append(
            MetricSummary(
                name=name,
                title=METRIC_TEXT.get(name, name),
                value=value,
                method=method,
                method_text=METHOD_TEXT.get(method, method),
                excluded=[
                    (n, EXCLUSION_TEXT.get(reason, reason.replace("-", " ")))
                    for reason, n in sorted(stored_mapping(excluded.get(name)).items())
                    if stored_int(n)
                ],
                fallbacks=stored_int(fallbacks.get(name)),
                reasons=reasons,
                help=METRIC_HELP.get(name, ""),
                calibration=_calibration_text(calibrated.get(name)),
                confidence=stored_number(confidence.get(name)),
            )
        )
    return out


def run_refusal(run: EvaluationRun) -> Refusal:
    refusal = stored_mapping(stored_mapping(run.summary).get("refusal"))
    recall = stored_number(run.metrics.get("refusal_recall"))
    false_rate = stored_number(run.metrics.get("false_refusal_rate"))
    return Refusal(
        recall=recall if recall is not None else stored_number(refusal.get("refusal_recall")),
        unanswerable=stored_int(refusal.get("unanswerable")),
        declined_unanswerable=stored_int(refusal.get("declined_unanswerable")),
        false_rate=false_rate if false_rate is not None else stored_number(refusal.get("false_refusal_rate")),
        answerable=stored_int(refusal.get("answerable")),
        declined_answerable=stored_int(refusal.get("declined_answerable")),
    )


def run_score(run: EvaluationRun) -> float | None:
    score = stored_number(run.metrics.get(ANSWER_SCORE))
    return score if score is not None else stored_number(stored_mapping(run.summary).get("score"))


CONFIG_SHOWN = {
    "model": "model",
    "judge_model": "judge",
    "groundedness": "groundedness",
    "top_k": "passages (top k)",
    "search_type": "search type",
    "fusion": "fusion",
    "rerank": "rerank",
    "bm25_variant": "BM25",
}


def answer_overview(run: EvaluationRun, counts: Mapping[str, int] | None = None) -> AnswerOverview:
    """The run's header. `counts` (diagnosis -> questions, from the questions themselves) stands in for the
    summary's when the summary has none."""
    summary = stored_mapping(run.summary)
    stored = {k: stored_int(v) for k, v in stored_mapping(summary.get("diagnosis")).items()}
    diagnosis_counts = stored or dict(counts or {})
    names = [*DIAGNOSES, *sorted(set(diagnosis_counts) - set(DIAGNOSES))]
    config = run.config if isinstance(run.config, Mapping) else {}
    thresholds = stored_mapping(config.get("thresholds"))
    usage = {
        key: stored_number(value) if key == "call_latency_ms" else stored_int(value)
        for key, value in stored_mapping(summary.get("usage")).items()
    }
    if usage:
        usage["tokens"] = stored_int(usage.get("prompt_tokens")) + stored_int(usage.get("completion_tokens"))
    return AnswerOverview(
        score=run_score(run),
        mode=run.mode or str(summary.get("mode") or ""),
        metrics=metric_summaries(run),
        refusal=run_refusal(run),
        diagnosis=[(d, diagnosis_counts.get(d, 0), DIAGNOSIS_MEANING.get(d, "")) for d in names],
        passed=stored_int(summary["passed"]) if "passed" in summary else None,
        failed=stored_int(summary["failed"]) if "failed" in summary else None,
        usage=usage,
        config=[
            (title, config_value(key, config.get(key)))
            for key, title in CONFIG_SHOWN.items()
            if key in config and not (key == "fusion" and config.get("search_type") != "Hybrid")
        ],
        thresholds=sorted(
            (
                k,
                v,
                str(
                    stored_mapping(stored_mapping(config.get("threshold_sources")).get(k)).get("source") or ""
                ),
            )
            for k, v in thresholds.items()
            if stored_number(v) is not None
        ),
        other_config=sorted(
            (k, config_value(k, v))
            for k, v in config.items()
            if k not in CONFIG_SHOWN and k not in ("label", "thresholds", "threshold_sources", "subset")
        ),
    )


# --- a run's questions -------------------------------------------------------------------------------------


@dataclass
class QuestionCounts:
    """A run's questions counted by diagnosis and outcome, in one query: per diagnosis, passed / failed / not
    judged, and how many a filter of the table keeps (its pages, without counting them again)."""

    rows: list[tuple[str, bool | None, int]]  # (diagnosis as stored, passed, questions)

    @property
    def diagnoses(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for diagnosis, _, n in self.rows:
            out[diagnosis or "pass"] = out.get(diagnosis or "pass", 0) + n
        return out

    @property
    def outcomes(self) -> dict[str, int]:
        out = {"passed": 0, "failed": 0, "unjudged": 0}
        for _, passed, n in self.rows:
            out["passed" if passed else "failed" if passed is False else "unjudged"] += n
        return out

    def kept(self, diagnosis: str | None = None, outcome: str | None = None) -> int:
        """How many questions answer_question_results keeps with these filters."""
        wanted = {"passed": True, "failed": False}.get(outcome or "")
        return sum(
            n
            for stored, passed, n in self.rows
            if (not diagnosis or stored == diagnosis) and (wanted is None or passed is wanted)
        )


def question_counts(run: EvaluationRun) -> QuestionCounts:
    rows = (
        QuestionResult.objects.filter(run=run)
        .order_by()
        .values_list("diagnosis", "passed")
        .annotate(n=Count("id"))
    )
    return QuestionCounts([(diagnosis, passed, n) for diagnosis, passed, n in rows])


class JudgementFlags(Func):
    """{metric: [excluded, fallback]} out of a question's judgements (a JSON object of metric -> judgement),
    the column read once. A key transform per metric and flag read it once each: on PostgreSQL every read of
    the (compressed, out-of-line) jsonb value decompresses it again, ten times a row for five metrics. And
    PostgreSQL computed those cheap-looking transforms for every question of the run before sorting them and
    keeping a page of 100, whenever it had no statistics on the table (until its first ANALYZE: it takes the
    run for a few rows): 19 ms of the database's time for a 600-question run, against 4 ms now. This subquery
    is costed as expensive, so PostgreSQL evaluates it after ORDER BY and LIMIT, for the page's rows only.
    Judgements that are no object read as NULL, a metric's judgement that is no object as null."""

    output_field = JSONField()
    # The judgements column (a plain column reference: its SQL is read twice, its params repeated).
    SQLITE = (
        "(CASE WHEN json_type({0}) = 'object' THEN (SELECT json_group_object(key, CASE WHEN type = 'object' "
        "THEN json_array(json_extract(value, '$.excluded'), json_extract(value, '$.fallback')) END) "
        "FROM json_each({0})) END)"
    )
    POSTGRESQL = (
        "(CASE WHEN jsonb_typeof({0}) = 'object' THEN (SELECT jsonb_object_agg(key, "
        "jsonb_build_array(value -> 'excluded', value -> 'fallback')) FROM jsonb_each({0})) END)"
    )

    def as_sql(
        self,
        compiler: SQLCompiler,
        connection: BaseDatabaseWrapper,
        function: str | None = None,
        template: str | None = None,
        arg_joiner: str | None = None,
        **extra_context: Any,
    ) -> tuple[str, tuple[Any, ...]]:
        column, params = compiler.compile(self.source_expressions[0])
        form = self.POSTGRESQL if connection.vendor == "postgresql" else self.SQLITE
        return form.format(column), (*params, *params)


def answer_question_results(
    *, run: EvaluationRun, diagnosis: str | None = None, outcome: str | None = None
) -> QuerySet[Any, Any]:  # rows of values
    """The run's questions in order, filtered by diagnosis and by passed / failed (QuestionCounts.kept counts
    them), reading only what the table shows: each metric's exclusion and fallback come out of the judgements
    (JudgementFlags), never their details."""
    results = QuestionResult.objects.filter(run=run)
    if diagnosis:
        results = results.filter(diagnosis=diagnosis)
    if outcome == "passed":
        results = results.filter(passed=True)
    elif outcome == "failed":
        results = results.filter(passed=False)
    return (
        results.order_by("position")
        .annotate(flags=JudgementFlags("judgements"))
        .values(
            "position",
            "entry_key",
            "question",
            "answerable",
            "refused",
            "passed",
            "diagnosis",
            "metrics",
            "flags",
        )
    )


@dataclass
class Cell:
    value: float | None
    note: str  # why there is no value, or that the judge fell back to the heuristic
    fallback: bool


@dataclass
class AnswerQuestionRow:
    position: int
    key: str
    question: str
    answerable: bool
    refused: bool | None
    passed: bool | None
    diagnosis: str
    cells: list[Cell]


def _json_text(value: Any) -> str | None:
    """A flag out of a judgement (JSON): its text, None when absent or null."""
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value)


def answer_question_rows(values: Iterable[Mapping[str, Any]]) -> list[AnswerQuestionRow]:
    rows = []
    for v in values:
        metrics = stored_mapping(v.get("metrics"))
        flags = stored_mapping(v.get("flags"))
        cells = []
        for name in JUDGED_METRICS:
            value = stored_number(metrics.get(name))
            pair = flags.get(name)
            excluded, fallback = (
                (_json_text(x) for x in pair) if isinstance(pair, list) and len(pair) == 2 else (None, None)
            )
            if value is None:
                note = f"excluded: {EXCLUSION_TEXT.get(excluded, excluded)}" if excluded else "not scored"
            else:
                note = f"judge failed ({fallback}): scored by the heuristic" if fallback else ""
            cells.append(Cell(value, note, bool(fallback) and value is not None))
        rows.append(
            AnswerQuestionRow(
                position=v["position"],
                key=v.get("entry_key") or "",
                question=v.get("question") or "",
                answerable=bool(v.get("answerable")),
                refused=v.get("refused"),
                passed=v.get("passed"),
                diagnosis=v.get("diagnosis") or "",
                cells=cells,
            )
        )
    return rows
