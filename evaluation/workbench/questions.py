"""A collection's golden questions with their scores under a stored run or a configuration, worst first (Quepid's
case: the queries listed with their scores), filtered by tag, diagnosis and judged@k, and each question's change
since another run.

A configuration is scored live, each question exactly as a retrieval evaluation scores it (the read path, the
depth, evaluation.retrieval.metrics), nothing stored; a stored run's figures are read as it stored them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.utils import timezone

from evalsite.errors import EvalsiteError
from evaluation.configs import RunConfig
from evaluation.models import EvaluationRun, QuestionResult, RunKind
from evaluation.reports.diagnosis import retrieval_diagnosis
from evaluation.retrieval import metrics
from evaluation.retrieval.evaluate import retrieval_questions
from evaluation.retrieval.read_path import CollectionSearch
from evaluation.workbench.question import depth_of
from goldenset.models import Collection

# Questions a configuration is scored over live, on one page's request: beyond it, evaluate and read the run.
MAX_LIVE_QUESTIONS = 5000


@dataclass(frozen=True)
class ScoredQuestion:
    entry_id: str
    key: str
    question: str
    tags: tuple[str, ...]
    metrics: dict[str, float]
    diagnosis: str
    changed: float | None = None  # the metric's change since the other run (None: not in it, or none asked)

    def value(self, metric: str) -> float | None:
        return self.metrics.get(metric)


def scored_by_run(run: EvaluationRun) -> list[ScoredQuestion]:
    """A stored retrieval run's questions, as it scored them."""
    if run.kind != RunKind.RETRIEVAL:
        raise EvalsiteError(
            "validation-error", "run: a retrieval run is listed here.", details={"field": "run"}
        )
    rows = QuestionResult.objects.filter(run=run).order_by("position")
    fields = ("entry_id", "entry_key", "question", "tags", "metrics", "diagnosis", "first_relevant_rank",
              "missing_document_ids", "error")  # fmt: skip
    return [
        ScoredQuestion(
            str(entry_id),
            key,
            question,
            tuple(tags or ()),
            values or {},
            retrieval_diagnosis(diagnosis, first, missing, error),
        )  # fmt: skip
        for entry_id, key, question, tags, values, diagnosis, first, missing, error in rows.values_list(
            *fields
        )
    ]


def scored_live(collection: Collection, config: RunConfig, ks: Sequence[int]) -> list[ScoredQuestion]:
    """Every golden question with an expected document searched under the configuration now and scored."""
    questions, _ = retrieval_questions([collection])
    if len(questions) > MAX_LIVE_QUESTIONS:
        raise EvalsiteError(
            "validation-error",
            f"config: {len(questions)} questions are more than {MAX_LIVE_QUESTIONS} to score on one page; "
            "evaluate the configuration and list its run.",
            details={"field": "config"},
        )
    engine = CollectionSearch([collection])
    depth, now = depth_of(config, ks), timezone.now()
    out = []
    for q in questions:
        ranking = engine.rank(q.question, config, depth, at=now).document_ids
        missing = metrics.missing_relevant(ranking, q.qrels)
        first = metrics.first_relevant_rank(ranking, q.qrels)
        out.append(
            ScoredQuestion(
                str(q.entry_id),
                q.key,
                q.question,
                q.tags,
                metrics.evaluate_query(ranking, q.qrels, ks),
                retrieval_diagnosis("", first, missing),
            )  # fmt: skip
        )
    return out


def with_changes(
    rows: list[ScoredQuestion], since: list[ScoredQuestion], metric: str
) -> list[ScoredQuestion]:
    """Each question with its metric's change since the other scoring (matched by golden entry)."""
    before = {row.entry_id: row.value(metric) for row in since}
    out = []
    for row in rows:
        now, then = row.value(metric), before.get(row.entry_id)
        changed = None if now is None or then is None else now - then
        out.append(
            ScoredQuestion(row.entry_id, row.key, row.question, row.tags, row.metrics, row.diagnosis, changed)
        )
    return out


@dataclass(frozen=True)
class Filters:
    tag: str = ""
    diagnosis: str = ""
    judged_metric: str = ""  # "judged@k" read for judged_below
    judged_below: float | None = None


def _judged_below(row: ScoredQuestion, filters: Filters) -> bool:
    judged = row.value(filters.judged_metric)
    return filters.judged_below is None or (judged is not None and judged < filters.judged_below)


def worst_first(rows: list[ScoredQuestion], metric: str, filters: Filters) -> list[ScoredQuestion]:
    """The rows the filters keep, lowest metric first (a question without the metric, an error, last), ties in
    the golden set's order."""
    kept = [
        row
        for row in rows
        if (not filters.tag or filters.tag in row.tags)
        and (not filters.diagnosis or row.diagnosis == filters.diagnosis)
        and _judged_below(row, filters)
    ]
    return sorted(kept, key=lambda row: (row.value(metric) is None, row.value(metric) or 0.0))
