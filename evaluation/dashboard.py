"""The dashboard's reads, and the one evaluation launch path it shares with the API.

Every read is scoped to one tenant, as the API's selectors are; views stay thin and call these. Pages that
list many runs (runs, trends, home) read EvaluationRun rows only, never their question results; compare reads
the question results' metrics of the selected runs only, as plain values.
"""

from __future__ import annotations

import csv
import hashlib
import io
import itertools
import json
import re
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any

import numpy as np
from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import Count, F, FloatField, IntegerField, Max, OuterRef, QuerySet, Subquery, Window
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast, Coalesce, RowNumber
from django.utils import timezone

from evaluation import charts, stats
from evaluation.configs import RunConfig
from evaluation.models import EvaluationRun, QuestionResult
from goldenset.errors import EvalsiteError
from goldenset.jobs import job_create
from goldenset.models import (
    AuditEvent,
    Collection,
    Document,
    GoldenEntry,
    Job,
    JobKind,
    Page,
    Tenant,
)
from goldenset.selectors import collections_list, count_of

RUNS_PER_PAGE = 50
TREND_DAYS = 90
TREND_POINTS_PER_LABEL = 500  # the latest runs of each label within the range
MAX_COMPARE_RUNS = 20
LABELS_LIMIT = 500
TAGS_LIMIT = 200
AUDIT_TRAIL_LENGTH = 20

# --- tenancy -----------------------------------------------------------------------------------------------


def tenants_for_user(user) -> list[Tenant]:
    """The tenants a dashboard user may see: their memberships', or every tenant for a superuser."""
    if not user.is_authenticated:
        return []
    tenants = Tenant.objects.select_related("cluster").order_by("cluster__slug", "slug")
    if not user.is_superuser:
        tenants = tenants.filter(memberships__user=user)
    return list(tenants)


def tenant_key(tenant: Tenant) -> str:
    """How the dashboard names a tenant in a URL or a form: cluster/tenant."""
    return f"{tenant.cluster.slug}/{tenant.slug}"


# --- metrics -----------------------------------------------------------------------------------------------

_METRIC = re.compile(r"^(?P<name>[a-z_]+)@(?P<k>\d+)$")
_METRIC_ORDER = {"recall": 0, "ndcg": 1, "mrr": 2}


def metric_sort_key(name: str) -> tuple[int, str, int]:
    """recall@k (by k), then ndcg@k, then mrr, then anything else alphabetically."""
    match = _METRIC.match(name)
    base, k = (match["name"], int(match["k"])) if match else (name, 0)
    return (_METRIC_ORDER.get(base, 3), base, k)


def ordered_metrics(names: Iterable[str]) -> list[str]:
    return sorted(set(names), key=metric_sort_key)


def headline_metric_names(ks: Sequence[int], available: Iterable[str]) -> list[str]:
    """The few metrics a run's row shows: nDCG and recall at 10 (or the largest k), and MRR."""
    available = list(available)
    k = 10 if 10 in ks else max(ks, default=10)
    wanted = [name for name in (f"ndcg@{k}", f"recall@{k}", "mrr") if name in available]
    return wanted or ordered_metrics(available)[:3]


def default_metric(names: Sequence[str]) -> str | None:
    for preferred in ("ndcg@10", "recall@10", "mrr"):
        if preferred in names:
            return preferred
    return names[0] if names else None


# --- home --------------------------------------------------------------------------------------------------


@dataclass
class LatestRun:
    run_id: uuid.UUID
    label: str
    kind: str
    created_at: datetime
    question_count: int
    metrics: list[tuple[str, float]]


@dataclass
class CollectionSummary:
    collection: Collection
    document_count: int
    page_count: int
    golden_entry_count: int
    latest_runs: list[LatestRun] = field(default_factory=list)


def home_collections(*, tenant: Tenant) -> list[CollectionSummary]:
    """The tenant's collections with their counts and the latest run of each label: three queries."""
    collections = list(
        collections_list(tenant=tenant).annotate(page_count=count_of(Page, "document__collection"))
    )
    summaries = {
        c.pk: CollectionSummary(c, c.document_count, c.page_count, c.golden_entry_count)  # type: ignore[attr-defined]
        for c in collections
    }
    if not summaries:
        return []
    latest = (
        EvaluationRun.objects.filter(tenant=tenant, collections__in=list(summaries))
        .order_by()
        .values("collections", "label")
        .annotate(last=Max("created_at"))
    )
    wanted = {(row["collections"], row["label"]): row["last"] for row in latest}
    if wanted:
        rows = (
            EvaluationRun.objects.filter(
                tenant=tenant,
                collections__in=list(summaries),
                created_at__in={last for last in wanted.values()},
                label__in={label for _, label in wanted},
            )
            .order_by("-created_at")
            .values("pk", "label", "kind", "created_at", "question_count", "ks", "metrics", "collections")
        )
        seen: set[tuple[int, str]] = set()
        for row in rows:
            key = (row["collections"], row["label"])
            if wanted.get(key) != row["created_at"] or key in seen:
                continue
            seen.add(key)
            names = headline_metric_names(row["ks"], row["metrics"])
            summaries[row["collections"]].latest_runs.append(
                LatestRun(
                    row["pk"],
                    row["label"],
                    row["kind"],
                    row["created_at"],
                    row["question_count"],
                    [(name, row["metrics"][name]) for name in names],
                )
            )
    for summary in summaries.values():
        summary.latest_runs.sort(key=lambda r: r.label)
    return list(summaries.values())


# --- runs --------------------------------------------------------------------------------------------------


def day_start(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


def runs_filtered(
    *,
    tenant: Tenant,
    collection: Collection | None = None,
    label: str | None = None,
    kind: str | None = None,
    date_from: date | None = None,
    date_to: date | None = None,
) -> QuerySet[EvaluationRun]:
    """Runs newest first; dates are whole days (date_to included). Heavy columns are left out."""
    runs = EvaluationRun.objects.filter(tenant=tenant)
    if collection is not None:
        runs = runs.filter(collections=collection)
    if label:
        runs = runs.filter(label=label)
    if kind:
        runs = runs.filter(kind=kind)
    if date_from:
        runs = runs.filter(created_at__gte=day_start(date_from))
    if date_to:
        runs = runs.filter(created_at__lt=day_start(date_to + timedelta(days=1)))
    return runs.defer("index_info", "warnings", "metric_methods", "golden_fingerprint").order_by(
        "-created_at", "-id"
    )


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
    metrics: list[tuple[str, float]]
    duration: str
    color: str


def run_rows(runs: Iterable[EvaluationRun]) -> list[RunRow]:
    return [
        RunRow(
            run,
            [(name, run.metrics[name]) for name in headline_metric_names(run.ks, run.metrics)],
            format_duration(run.duration_ms),
            charts.label_color(run.label),
        )
        for run in runs
    ]


def batch_runs(*, tenant: Tenant, batch_id: uuid.UUID) -> list[EvaluationRun]:
    return list(EvaluationRun.objects.filter(tenant=tenant, batch_id=batch_id).order_by("created_at", "id"))


# --- one run -----------------------------------------------------------------------------------------------


def question_diagnosis(stored: str, first_relevant_rank: int | None, missing: Sequence[str]) -> str:
    """The run's own diagnosis when it made one (answer runs); for retrieval: miss, partial or pass."""
    if stored:
        return stored
    if first_relevant_rank is None:
        return "miss"
    return "partial" if missing else "pass"


DIAGNOSES = {
    "miss": "no expected document was retrieved",
    "partial": "some expected documents were not retrieved",
    "pass": "every expected document was retrieved",
    "retrieval": "the retrieval missed what the answer needed",
    "generation": "the documents were retrieved, the answer fell short",
}


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
        )
    )
    for position, key, question, first, metrics, stored, missing in values:
        diagnosis = question_diagnosis(stored, first, missing)
        if failures_only and diagnosis == "pass":
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
    from evaluation.api.serializers import RunDetailOut

    return json.dumps(RunDetailOut(run).data, cls=DjangoJSONEncoder, indent=2, ensure_ascii=False) + "\n"


def run_csv(run: EvaluationRun) -> str:
    """One row per question: its ids, first relevant rank, diagnosis and every metric of the run."""
    results = list(run.results.order_by("position"))
    names = ordered_metrics(name for r in results for name in r.metrics) or ordered_metrics(run.metrics)
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
            *names,
            "expected_document_ids",
            "missing_document_ids",
            "retrieved_document_ids",
        ]
    )
    for r in results:
        writer.writerow(
            [
                r.position,
                r.entry_id,
                r.entry_key,
                r.collection_id,
                r.question,
                "" if r.first_relevant_rank is None else r.first_relevant_rank,
                question_diagnosis(r.diagnosis, r.first_relevant_rank, r.missing_document_ids),
                *[r.metrics.get(name, "") for name in names],
                json.dumps(sorted(r.expected), ensure_ascii=False),
                json.dumps(r.missing_document_ids, ensure_ascii=False),
                json.dumps([doc for doc, _ in r.ranked], ensure_ascii=False),
            ]
        )
    return out.getvalue()


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


# --- golden set --------------------------------------------------------------------------------------------


def golden_tags(*, collection: Collection) -> list[str]:
    """The collection's tags, from its distinct tag combinations (few next to entries)."""
    combos = (
        collection.golden_entries.exclude(tags_index="")
        .order_by()
        .values_list("tags_index", flat=True)
        .distinct()
    )
    return sorted({tag for combo in combos for tag in combo.split("|") if tag})[:TAGS_LIMIT]


GOLDEN_CSV_COLUMNS = (
    "id",
    "key",
    "question",
    "expected_document_ids",
    "reference_answer",
    "tags",
    "answerable",
    "origin",
    "reviewed",
    "created_at",
    "updated_at",
)


def golden_csv(entries: QuerySet[GoldenEntry]) -> str:
    """Entries as CSV, oldest first; list columns (expected ids, tags) hold JSON arrays, unambiguous whatever
    the ids contain."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(GOLDEN_CSV_COLUMNS)
    for e in entries.order_by("created_at", "id").iterator():
        writer.writerow(
            [
                e.pk,
                e.key,
                e.question,
                json.dumps(e.expected_document_ids, ensure_ascii=False),
                e.reference_answer,
                json.dumps(e.tags, ensure_ascii=False),
                "true" if e.answerable else "false",
                e.origin,
                "true" if e.reviewed else "false",
                e.created_at.isoformat(),
                e.updated_at.isoformat(),
            ]
        )
    return out.getvalue()


def audit_trail(*, tenant: Tenant, entry_id: Any, limit: int = AUDIT_TRAIL_LENGTH) -> list[AuditEvent]:
    return list(
        AuditEvent.objects.filter(
            tenant=tenant, object_type="golden-entry", object_id=str(entry_id)
        ).order_by("-at", "-id")[:limit]
    )


def recent_changes(*, collection: Collection, limit: int = 10) -> list[AuditEvent]:
    return list(
        AuditEvent.objects.filter(tenant_id=collection.tenant_id, collection_slug=collection.slug).order_by(
            "-at", "-id"
        )[:limit]
    )


def audit_summary(event: AuditEvent) -> str:
    """Update events list the changed fields; create and delete events carry a snapshot (its question)."""
    if event.action == "update" and isinstance(event.changes, dict):
        parts = []
        for name, pair in event.changes.items():
            if isinstance(pair, list) and len(pair) == 2:
                parts.append(f"{name}: {_short(pair[0])} → {_short(pair[1])}")
            else:
                parts.append(f"{name}: {_short(pair)}")
        return "; ".join(parts)
    return _short(event.changes.get("question", ""), 120) if isinstance(event.changes, dict) else ""


def _short(value: Any, length: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= length else text[: length - 1] + "…"


# --- launching an evaluation -------------------------------------------------------------------------------


def launch_collections(*, tenant: Tenant) -> list[tuple[str, int]]:
    """(slug, questions an evaluation would ask) per collection: entries with expected documents."""
    evaluable = (
        GoldenEntry.objects.filter(collection=OuterRef("pk"))
        .exclude(expected_document_ids=[])
        .order_by()
        .values("collection")
        .annotate(n=Count("*"))
        .values("n")[:1]
    )
    return list(
        Collection.objects.filter(tenant=tenant)
        .annotate(questions=Coalesce(Subquery(evaluable, output_field=IntegerField()), 0))
        .order_by("slug")
        .values_list("slug", "questions")
    )


def evaluation_job_create(
    *, tenant: Tenant, collections: Sequence[Collection], ks: Sequence[int], configs: Sequence[RunConfig]
) -> Job:
    """An Evaluate job for validated collections, ks and configurations: the input EvaluateApi gives its
    job, so evaluation.services.evaluate_job runs both the same way."""
    return job_create(
        tenant=tenant,
        kind=JobKind.EVALUATE,
        collection=collections[0],
        input={
            "collection_pks": [c.pk for c in collections],
            "ks": list(ks),
            "configs": [c.as_dict() for c in configs],
        },
    )


def job_result_batch(job: Job) -> str | None:
    """The batch an Evaluate job produced, once it has."""
    if isinstance(job.result, dict) and isinstance(job.result.get("batch_id"), str):
        return job.result["batch_id"]
    return None


def job_error_message(job: Job) -> str:
    if isinstance(job.error, dict):
        return str(job.error.get("message") or job.error.get("code") or "The job failed.")
    return "The job failed." if job.error is None else str(job.error)


# --- compare -----------------------------------------------------------------------------------------------


def compare_runs(
    *, tenant: Tenant, run_ids: Sequence[str] = (), batch_id: str | None = None
) -> list[EvaluationRun]:
    """The runs to compare, oldest first: a batch, or runs picked by id; all of one collection (or one set of
    collections), since only runs over the same questions can be compared question by question."""
    if batch_id:
        try:
            batch = uuid.UUID(str(batch_id))
        except ValueError:
            raise EvalsiteError("bad-request", f"{batch_id!r} is not a batch id.") from None
        runs = batch_runs(tenant=tenant, batch_id=batch)
        if not runs:
            raise EvalsiteError("not-found", f"Batch {batch_id} not found.", status=404)
    else:
        ids = []
        for value in dict.fromkeys(run_ids):
            try:
                ids.append(uuid.UUID(str(value)))
            except ValueError:
                raise EvalsiteError("bad-request", f"{value!r} is not a run id.") from None
        if len(ids) > MAX_COMPARE_RUNS:
            raise EvalsiteError("too-many-runs", f"Select at most {MAX_COMPARE_RUNS} runs to compare.")
        runs = list(EvaluationRun.objects.filter(tenant=tenant, pk__in=ids).order_by("created_at", "id"))
        if len(runs) != len(ids):
            raise EvalsiteError("not-found", "Some selected runs were not found.", status=404)
    if len(runs) < 2:
        raise EvalsiteError("too-few-runs", "Select at least two runs to compare.")
    collection_sets = {tuple(sorted(run.collection_ids)) for run in runs}
    if len(collection_sets) > 1:
        names = sorted(", ".join(ids) for ids in collection_sets)
        raise EvalsiteError(
            "mixed-collections",
            "The selected runs belong to different collections ("
            + "; ".join(names)
            + "): compare runs of one collection, which answer the same questions.",
        )
    return runs


def compare_question_metrics(runs: Sequence[EvaluationRun]) -> dict[uuid.UUID, dict[str, dict[str, float]]]:
    """run id -> question (entry id) -> metric -> value, read as plain values in one query."""
    out: dict[uuid.UUID, dict[str, dict[str, float]]] = {run.pk: {} for run in runs}
    rows = QuestionResult.objects.filter(run__in=[run.pk for run in runs]).values_list(
        "run_id", "entry_id", "metrics"
    )
    for run_id, entry_id, values in rows:
        out[run_id][str(entry_id)] = values
    return out


def series_names(runs: Sequence[EvaluationRun]) -> list[str]:
    """A name per run: its label, and when labels repeat, the label with the run's time (and id) added."""
    counts: dict[str, int] = {}
    for run in runs:
        counts[run.label] = counts.get(run.label, 0) + 1
    names = []
    for run in runs:
        if counts[run.label] == 1:
            names.append(run.label)
        else:
            names.append(
                f"{run.label} ({timezone.localtime(run.created_at):%Y-%m-%d %H:%M}, {str(run.pk)[:6]})"
            )
    return names


def trend_window(date_from: date | None, date_to: date | None) -> tuple[date, date]:
    today = timezone.localdate()
    date_to = date_to or today
    date_from = date_from or (date_to - timedelta(days=TREND_DAYS))
    return date_from, date_to


PERMUTATIONS = 10000
RESAMPLES = 2000


def bootstrap_cis(
    matrix: np.ndarray, *, confidence: float = 0.95, resamples: int = 2000, seed: int = 0
) -> list[tuple[float, float]]:
    """stats.bootstrap_ci of every row of `matrix` (one row per run, one column per shared question) at once.

    The same seed draws the same resamples of question indexes that stats.bootstrap_ci draws for each row (in
    the same blocks), so the intervals are stats' own (to 1e-15: the means are summed as a product with the
    resample counts); one matrix product per block instead of a pass per row keeps Compare fast."""
    runs, n = matrix.shape
    if n == 1:
        return [(float(v), float(v)) for v in matrix[:, 0]]
    rng = np.random.default_rng(seed)
    blocks = []
    for rows in stats._blocks(resamples, n):
        picks = rng.integers(0, n, size=(rows, n))
        counts = np.bincount((np.arange(rows)[:, None] * n + picks).ravel(), minlength=rows * n).reshape(
            rows, n
        )
        blocks.append(matrix @ counts.T / n)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(np.concatenate(blocks, axis=1), [tail, 100.0 - tail], axis=1)
    return [(float(lo), float(hi)) for lo, hi in zip(low, high, strict=True)]


def randomization_p_values(
    differences: np.ndarray, *, permutations: int = 10000, seed: int = 0
) -> list[float]:
    """stats.paired_randomization_test for every row of per-question differences (a - b) at once.

    Every pair sees the sign flips stats draws with the same seed (in the same blocks), so each p-value is the
    one stats.paired_randomization_test(a, b) gives; the flips are drawn once for all pairs, not once per pair."""
    pairs, n = differences.shape
    if pairs == 0:
        return []
    observed = np.abs(differences.mean(axis=1))
    totals = differences.sum(axis=1)
    rng = np.random.default_rng(seed)
    extreme = np.zeros(pairs, dtype=np.int64)
    for rows in stats._blocks(permutations, n):
        flips = np.unpackbits(
            rng.integers(0, 256, size=(rows, (n + 7) // 8), dtype=np.uint8), axis=1, count=n
        )
        permuted = np.abs(totals[None, :] - 2.0 * (flips.astype(float) @ differences.T)) / n
        extreme += np.count_nonzero(permuted >= observed[None, :] - stats._TIE_TOLERANCE, axis=0)
    return [float((1 + e) / (1 + permutations)) for e in extreme]


CONFIDENCE = 0.95
ALPHA = 0.05


@dataclass
class SeriesRow:
    run: EvaluationRun
    name: str
    color: str
    cells: list[tuple[str, float | None, tuple[float, float] | None, bool]]  # metric, mean, CI, best


@dataclass
class PairRow:
    name_a: str
    name_b: str
    color_a: str
    color_b: str
    cells: list[stats.PairwiseResult | None]


@dataclass(frozen=True)
class CompareStats:
    metric_names: list[str]
    means: dict[str, dict[str, float]]
    intervals: dict[str, dict[str, tuple[float, float]]]
    pair_results: dict[tuple[str, str], dict[str, stats.PairwiseResult]]
    questions: int
    dropped: int
    chart: str


class _Memo:
    """A small in-process LRU of results computed from immutable inputs (finished runs): an optimisation
    only, so nothing depends on it being shared or kept."""

    def __init__(self, size: int):
        self.size = size
        self.items: OrderedDict[str, Any] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: str) -> Any:
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
        return None

    def put(self, key: str, value: Any) -> None:
        with self.lock:
            self.items[key] = value
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)


# Runs never change once written, so a comparison of the same runs (or a trend over the same points) is the
# same page: a repeat view skips the statistics and the chart (a figure of 2,500 points is ~700 kB of HTML).
_COMPARISONS = _Memo(32)
_TREND_CHARTS = _Memo(16)


def _compare_stats(runs: Sequence[EvaluationRun], names: list[str]) -> CompareStats:
    per_run = compare_question_metrics(runs)
    metric_names = ordered_metrics(set.intersection(*(set(run.metrics) for run in runs)))
    means: dict[str, dict[str, float]] = {name: {} for name in names}
    intervals: dict[str, dict[str, tuple[float, float]]] = {name: {} for name in names}
    pair_results: dict[tuple[str, str], dict[str, stats.PairwiseResult]] = {}
    questions = 0
    dropped = 0
    # Metrics scored on the same questions (usually all of them) are computed together: one set of resamples
    # and one set of sign flips serves every run, pair and metric of the group.
    groups: dict[tuple[str, ...], list[tuple[str, np.ndarray]]] = {}
    for metric in metric_names:
        aligned = stats.align_by_question(
            [{question: values.get(metric) for question, values in per_run[run.pk].items()} for run in runs]
        )
        if aligned.keys:
            groups.setdefault(tuple(aligned.keys), []).append((metric, aligned.matrix))
            questions = max(questions, len(aligned.keys))
            dropped = max(dropped, aligned.dropped)
    pairs = list(itertools.combinations(range(len(names)), 2))
    for group in groups.values():
        stacked = np.vstack([matrix for _, matrix in group])  # metric-major: row m * runs + i
        cis = bootstrap_cis(stacked, confidence=CONFIDENCE, resamples=RESAMPLES)
        row_means = stacked.mean(axis=1)
        differences = np.array([matrix[a] - matrix[b] for _, matrix in group for a, b in pairs])
        p_values = randomization_p_values(
            differences.reshape(len(group) * len(pairs), stacked.shape[1]), permutations=PERMUTATIONS
        )
        for m, (metric, _) in enumerate(group):
            base = m * len(names)
            for i, name in enumerate(names):
                means[name][metric] = float(row_means[base + i])
                intervals[name][metric] = cis[base + i]
            for j, (a, b) in enumerate(pairs):
                mean_a, mean_b = means[names[a]][metric], means[names[b]][metric]
                p_value = p_values[m * len(pairs) + j]
                pair_results.setdefault((names[a], names[b]), {})[metric] = stats.PairwiseResult(
                    names[a], names[b], mean_a, mean_b, mean_a - mean_b, p_value, p_value < ALPHA
                )
    series = [charts.CompareSeries(name, means[name], intervals[name], questions) for name in names]
    figure = charts.compare_figure(series, metric_names)
    _recolor_by_label(figure, [run.label for run in runs])
    return CompareStats(
        metric_names,
        means,
        intervals,
        pair_results,
        questions,
        dropped,
        charts.figure_html(figure, "compare-chart"),
    )


def comparison(runs: Sequence[EvaluationRun]) -> dict[str, Any]:
    """Means with bootstrap intervals per run and metric, and a paired randomization test per pair of runs and
    metric, all over the questions every run scored (a question one run lacks would unpair the test)."""
    names = series_names(runs)
    key = "|".join(f"{run.pk}={name}" for run, name in zip(runs, names, strict=True))
    computed: CompareStats | None = _COMPARISONS.get(key)
    if computed is None:
        computed = _compare_stats(runs, names)
        _COMPARISONS.put(key, computed)
    metric_names, means, intervals = computed.metric_names, computed.means, computed.intervals
    pair_results, questions, dropped = computed.pair_results, computed.questions, computed.dropped
    colors = [charts.label_color(run.label) for run in runs]
    best = {
        metric: max((means[name][metric] for name in names if metric in means[name]), default=None)
        for metric in metric_names
    }
    series_rows = [
        SeriesRow(
            run,
            name,
            color,
            [
                (
                    metric,
                    means[name].get(metric),
                    intervals[name].get(metric),
                    best[metric] is not None and means[name].get(metric) == best[metric],
                )
                for metric in metric_names
            ],
        )
        for run, name, color in zip(runs, names, colors, strict=True)
    ]
    color_of = dict(zip(names, colors, strict=True))
    pair_rows = [
        PairRow(a, b, color_of[a], color_of[b], [results.get(metric) for metric in metric_names])
        for (a, b), results in pair_results.items()
    ]
    return {
        "runs": runs,
        "collection_ids": runs[0].collection_ids,
        "metric_names": metric_names,
        "series_rows": series_rows,
        "pair_rows": pair_rows,
        "questions": questions,
        "dropped": dropped,
        "chart": computed.chart,
        "alpha": ALPHA,
        "confidence": round(CONFIDENCE * 100),
        "permutations_text": f"{PERMUTATIONS:,}",
        "resamples_text": f"{RESAMPLES:,}",
        "same_batch": len({run.batch_id for run in runs}) == 1,
    }


def _recolor_by_label(figure: Any, labels: Sequence[str]) -> None:
    """Series names may carry a date (repeated labels); colour each trace by its run's label all the same, so
    a configuration keeps its colour across pages. Repeats of a colour get a bar pattern to tell them apart."""
    seen: dict[str, int] = {}
    for trace, label in zip(figure.data, labels, strict=True):
        color = charts.label_color(label)
        clash = seen.get(color, 0)
        seen[color] = clash + 1
        trace.marker.color = color
        trace.marker.pattern.shape = charts._PATTERNS[clash % len(charts._PATTERNS)]


# --- trends ------------------------------------------------------------------------------------------------


def latest_run_collection(*, tenant: Tenant, among: Sequence[str]) -> str:
    """The collection of the tenant's latest run (the trends page's default), else the first collection."""
    latest = (
        EvaluationRun.objects.filter(tenant=tenant)
        .order_by("-created_at", "-id")
        .values_list("collection_ids", flat=True)
        .first()
    )
    for slug in latest or []:
        if slug in among:
            return slug
    return among[0]


@dataclass
class TrendLabel:
    label: str
    color: str
    points: int
    latest_value: float | None
    latest_run: uuid.UUID | None
    capped: bool


def _trend_chart(points: list[charts.TrendPoint], metric: str) -> str:
    digest = hashlib.sha256(
        repr(
            (metric, [(p.run_id, p.label, p.value, p.created_at.isoformat(), p.url) for p in points])
        ).encode()
    ).hexdigest()
    html: str | None = _TREND_CHARTS.get(digest)
    if html is None:
        html = charts.figure_html(charts.trends_figure(points, metric), "trends-chart")
        _TREND_CHARTS.put(digest, html)
    return html


METRIC_NAMES_FROM = 200  # the metric choices come from the latest runs in the range


def _in_range(
    *, tenant: Tenant, collection: Collection, date_from: date, date_to: date
) -> QuerySet[EvaluationRun]:
    return EvaluationRun.objects.filter(
        tenant=tenant,
        collections=collection,
        created_at__gte=day_start(date_from),
        created_at__lt=day_start(date_to + timedelta(days=1)),
    )


def trend_metric_names(
    *, tenant: Tenant, collection: Collection, date_from: date, date_to: date
) -> list[str]:
    """The metrics the latest runs of the range carry (retrieval and answer runs carry different ones)."""
    latest = (
        _in_range(tenant=tenant, collection=collection, date_from=date_from, date_to=date_to)
        .order_by("-created_at", "-id")
        .values_list("metrics", flat=True)[:METRIC_NAMES_FROM]
    )
    return ordered_metrics(name for metrics in latest for name in metrics)


def trend_rows(
    *,
    tenant: Tenant,
    collection: Collection,
    date_from: date,
    date_to: date,
    metric: str,
    per_label: int = TREND_POINTS_PER_LABEL,
) -> list[tuple[uuid.UUID, str, datetime, float | None]]:
    """(run id, label, created, value of `metric` or None) of the collection's runs in the range, the latest
    `per_label` of each label, oldest first. One query: a window function ranks each label's runs, and only
    the one metric is read out of each run's JSON. (A label's runs carry the same metrics: its configuration.)"""
    rows = (
        _in_range(tenant=tenant, collection=collection, date_from=date_from, date_to=date_to)
        .annotate(value=Cast(KeyTextTransform(metric, "metrics"), FloatField()))
        .annotate(
            newest=Window(
                RowNumber(), partition_by=[F("label")], order_by=[F("created_at").desc(), F("id").desc()]
            )
        )
        .filter(newest__lte=per_label)
        .order_by("created_at", "id")
        .values_list("pk", "label", "created_at", "value")
    )
    return list(rows)


def trends(
    *,
    tenant: Tenant,
    collection: Collection,
    date_from: date,
    date_to: date,
    metric: str | None,
    run_url: Callable[[uuid.UUID], str],
) -> dict[str, Any]:
    names = trend_metric_names(tenant=tenant, collection=collection, date_from=date_from, date_to=date_to)
    chosen = metric if metric in names else default_metric(names)
    rows = (
        trend_rows(tenant=tenant, collection=collection, date_from=date_from, date_to=date_to, metric=chosen)
        if chosen
        else []
    )
    points = []
    labels: dict[str, TrendLabel] = {}
    for pk, label, created_at, value in rows:
        summary = labels.setdefault(label, TrendLabel(label, charts.label_color(label), 0, None, None, False))
        summary.points += 1
        if value is None:
            continue
        summary.latest_value, summary.latest_run = value, pk
        points.append(charts.TrendPoint(label, created_at, value, str(pk), run_url(pk)))
    for summary in labels.values():
        summary.capped = summary.points >= TREND_POINTS_PER_LABEL
    return {
        "metric_names": names,
        "metric": chosen,
        "points": len(points),
        "labels": sorted(labels.values(), key=lambda s: s.label),
        "chart": _trend_chart(points, chosen) if points and chosen else "",
        "cap": TREND_POINTS_PER_LABEL,
    }
