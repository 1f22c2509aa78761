"""The runs pages' reads: the runs list, one run's questions and a question's documents, and a run's downloads
(JSON, CSV, TREC run)."""

from __future__ import annotations

import csv
import io
import json
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import QuerySet

from evalsite.tenancy.models import Tenant
from evaluation.answers.verdicts import PASS
from evaluation.dashboard.common_reads import headline_metrics, ordered_metrics
from evaluation.models import EvaluationRun, QuestionResult, RunKind
from evaluation.reports.diagnosis import retrieval_diagnosis
from evaluation.reports.presenter import run_detail
from evaluation.runs import selectors
from goldenset.formats import text_cell
from goldenset.models import Collection, Document

RUNS_PER_PAGE = 50
RUN_QUESTIONS_PER_PAGE = 100  # a retrieval run's questions, as ANSWER_QUESTIONS_PER_PAGE an answer run's
LABELS_LIMIT = 500

# --- runs --------------------------------------------------------------------------------------------------


def runs_filtered(
    *,
    tenant: Tenant,
    collection: Collection | None = None,
    label: str | None = None,
    kind: str | None = None,
    date_from: date | None = None,
    date_to: date | None = None,
) -> QuerySet[EvaluationRun]:
    """The runs table's rows: the one runs selector, with the heavy columns left out."""
    runs = selectors.runs_list(
        tenant=tenant, collection=collection, label=label, kind=kind, date_from=date_from, date_to=date_to
    )
    return runs.defer("index_info", "warnings", "metric_methods", "golden_fingerprint")


def run_labels(*, tenant: Tenant) -> list[str]:
    """The tenant's distinct run labels (for filters), read from the (tenant, label, ...) index."""
    return list(
        EvaluationRun.objects.filter(tenant=tenant)
        .order_by("label")
        .values_list("label", flat=True)
        .distinct()[:LABELS_LIMIT]
    )


def format_duration(ms: float) -> str:
    if ms >= 60_000:
        return f"{ms / 60_000:.1f} min"
    if ms >= 1000:
        return f"{ms / 1000:.1f} s"
    return f"{ms:.0f} ms"


@dataclass
class RunRow:
    run: EvaluationRun
    metrics: list[tuple[str, float | None]]
    duration: str
    color: str


def run_rows(runs: Iterable[EvaluationRun], colors: Mapping[str, str]) -> list[RunRow]:
    return [
        RunRow(
            run,
            headline_metrics(run.kind, run.ks, run.metrics),
            format_duration(run.duration_ms),
            colors[run.label],
        )
        for run in runs
    ]


def batch_runs(*, tenant: Tenant, batch_id: uuid.UUID) -> list[EvaluationRun]:
    return list(EvaluationRun.objects.filter(tenant=tenant, batch_id=batch_id).order_by("created_at", "id"))


# --- one run -----------------------------------------------------------------------------------------------


question_diagnosis = retrieval_diagnosis  # the one rule, shared with the reports and the REST detail


@dataclass
class QuestionRow:
    position: int
    key: str
    question: str
    first_relevant_rank: int | None
    recall: float | None
    ndcg: float | None
    mrr: float | None
    diagnosis: str
    missing_count: int
    error: str = ""


def run_depth_k(run: EvaluationRun) -> int:
    return max(run.ks, default=10)


def run_questions(*, run: EvaluationRun, failures_only: bool = False) -> list[QuestionRow]:
    """The run's questions for its table (ranked lists are not read: only the question page needs one)."""
    k = run_depth_k(run)
    rows = []
    values = (
        QuestionResult.objects.filter(run=run)
        .order_by("position")
        .values_list(
            "position",
            "entry_key",
            "question",
            "first_relevant_rank",
            "metrics",
            "diagnosis",
            "missing_document_ids",
            "error",
        )
    )
    for position, key, question, first, metrics, stored, missing, error in values:
        diagnosis = question_diagnosis(stored, first, missing, error)
        if failures_only and diagnosis == PASS:
            continue
        rows.append(
            QuestionRow(
                position,
                key,
                question,
                first,
                metrics.get(f"recall@{k}"),
                metrics.get(f"ndcg@{k}"),
                metrics.get("mrr"),
                diagnosis,
                len(missing),
                error,
            )
        )
    return rows


def question_result(*, run: EvaluationRun, position: int) -> QuestionResult | None:
    return QuestionResult.objects.filter(run=run, position=position).first()


def neighbour_positions(*, run: EvaluationRun, position: int) -> tuple[int | None, int | None]:
    previous = (
        QuestionResult.objects.filter(run=run, position__lt=position)
        .order_by("-position")
        .values_list("position", flat=True)
        .first()
    )
    following = (
        QuestionResult.objects.filter(run=run, position__gt=position)
        .order_by("position")
        .values_list("position", flat=True)
        .first()
    )
    return previous, following


@dataclass
class RankedDoc:
    rank: int | None
    document_id: str  # as the run names it ("collection/id" in runs over several collections)
    collection_slug: str
    external_id: str
    title: str
    score: float | None
    grade: int | None  # the expected grade when the document is relevant
    exists: bool


def _split_id(run: EvaluationRun, document_id: str, fallback_slug: str) -> tuple[str, str]:
    if len(run.collection_ids) > 1 and "/" in document_id:
        slug, _, external = document_id.partition("/")
        return slug, external
    return fallback_slug, document_id


def question_documents(
    *, tenant: Tenant, run: EvaluationRun, result: QuestionResult
) -> tuple[list[RankedDoc], list[RankedDoc]]:
    """The ranked list (relevant ones marked) and the expected documents not retrieved, with titles."""
    ranked = result.ranked
    fallback = result.collection_id
    ids = [doc for doc, _ in ranked] + list(result.missing_document_ids)
    wanted: dict[str, set[str]] = {}
    for doc in ids:
        slug, external = _split_id(run, doc, fallback)
        wanted.setdefault(slug, set()).add(external)
    titles: dict[tuple[str, str], str] = {}
    for slug, externals in wanted.items():
        rows = Document.objects.filter(
            collection__tenant=tenant, collection__slug=slug, external_id__in=sorted(externals)
        ).values_list("external_id", "title")
        titles.update({(slug, external): title for external, title in rows})

    def ranked_doc(rank: int | None, document_id: str, score: float | None) -> RankedDoc:
        slug, external = _split_id(run, document_id, fallback)
        grade = result.expected.get(document_id)
        return RankedDoc(
            rank,
            document_id,
            slug,
            external,
            titles.get((slug, external), ""),
            score,
            grade if grade and grade > 0 else None,
            (slug, external) in titles,
        )

    listed = [ranked_doc(rank, d, score) for rank, (d, score) in enumerate(ranked, start=1)]
    missing = [ranked_doc(None, d, None) for d in result.missing_document_ids]
    return listed, missing


# --- run downloads -----------------------------------------------------------------------------------------


def run_json(run: EvaluationRun) -> str:
    """The run as GET /search/evaluate/runs/{id} answers it."""
    return json.dumps(run_detail(run), cls=DjangoJSONEncoder, indent=2, ensure_ascii=False) + "\n"


def run_csv(run: EvaluationRun) -> str:
    """One row per question: its ids, first relevant rank, diagnosis and every metric of the run (a metric
    without a value is an empty cell, never 0); an answer run's rows add whether the question was answerable,
    refused and passed, and the answer. The entry key and collection id are text: one that pandas or a
    spreadsheet would read as a number (6412345678901234567) is a JSON string, in double quotes (text_cell)."""
    results = list(run.results.order_by("position"))
    names = ordered_metrics(name for r in results for name in r.metrics) or ordered_metrics(run.metrics)
    answers = run.kind == RunKind.ANSWERS
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(
        [
            "position",
            "entry_id",
            "entry_key",
            "collection_id",
            "question",
            "first_relevant_rank",
            "diagnosis",
            *(["answerable", "refused", "passed"] if answers else []),
            *names,
            "expected_document_ids",
            "missing_document_ids",
            "retrieved_document_ids",
            *(["answer"] if answers else []),
        ]
    )
    for r in results:
        writer.writerow(
            [
                r.position,
                r.entry_id,
                text_cell(r.entry_key),
                text_cell(r.collection_id),
                r.question,
                "" if r.first_relevant_rank is None else r.first_relevant_rank,
                question_diagnosis(r.diagnosis, r.first_relevant_rank, r.missing_document_ids, r.error),
                *([_flag(r.answerable), _flag(r.refused), _flag(r.passed)] if answers else []),
                *[r.metrics.get(name, "") for name in names],
                json.dumps(r.relevant_ids, ensure_ascii=False),
                json.dumps(r.missing_document_ids, ensure_ascii=False),
                json.dumps([doc for doc, _ in r.ranked], ensure_ascii=False),
                *([r.answer] if answers else []),
            ]
        )
    return out.getvalue()


def _flag(value: bool | None) -> str:
    return "" if value is None else "true" if value else "false"


_WHITESPACE = re.compile(r"\s+")


def trec_tag(label: str) -> str:
    """A run tag is one whitespace-free token."""
    return _WHITESPACE.sub("_", label.strip()) or "run"


def run_trec(run: EvaluationRun) -> str:
    """The run in TREC run format, `qid Q0 docno rank score runtag`, qid the entry's key (or its id)."""
    tag = trec_tag(run.label)
    lines = []
    for r in run.results.order_by("position"):
        qid = r.entry_key or str(r.entry_id)
        for rank, (doc, score) in enumerate(r.ranked, start=1):
            lines.append(f"{qid} Q0 {doc} {rank} {score!r} {tag}")
    return "\n".join(lines) + ("\n" if lines else "")


def batch_siblings(*, tenant: Tenant, run: EvaluationRun, colors: Mapping[str, str]) -> list[dict[str, Any]]:
    """The other runs of a run's batch (its configurations side by side), by label, with their colours."""
    siblings = (
        EvaluationRun.objects.filter(tenant=tenant, batch_id=run.batch_id)
        .exclude(pk=run.pk)
        .order_by("label")
        .values_list("pk", "label")
    )
    return [{"pk": pk, "label": label, "color": colors[label]} for pk, label in siblings]


def run_collections_present(*, tenant: Tenant, run: EvaluationRun) -> list[str]:
    """Which of the run's collections still exist (a question's documents link only into those)."""
    return list(
        Collection.objects.filter(tenant=tenant, slug__in=run.collection_ids).values_list("slug", flat=True)
    )
