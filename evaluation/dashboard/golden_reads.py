"""The collection pages' reads: the home page's collection summaries, a golden set's tags, CSV export and audit
trail, and question generation (the backend the form will use, a Generate job's report, the review queue of
the entries it wrote)."""

from __future__ import annotations

import csv
import io
import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db.models import Count, Max, Q, QuerySet

from evalsite.audit.models import AuditEvent
from evalsite.errors import EvalsiteError, NotFound
from evalsite.jobs.models import Job
from evalsite.tenancy.models import Tenant
from evaluation.dashboard import charts, count_charts
from evaluation.dashboard.common_reads import headline_metrics
from evaluation.dashboard.label_colors import tenant_label_colors
from evaluation.models import EvaluationRun
from goldenset import generation
from goldenset.formats import text_cell
from goldenset.models import Collection, GoldenAuditObject, GoldenEntry, GoldenJobKind, Origin, Page
from goldenset.selectors import collections_list, count_of, golden_entries_list, golden_entry_get
from goldenset.services.generate import generate_backend
from goldenset.vocabulary.golden_fields import GOLDEN_CSV_COLUMNS

TAGS_LIMIT = 200
HOME_LABELS = (
    8  # a collection card's latest runs: the most recently run labels (fewer than the palette's colours)
)
AUDIT_TRAIL_LENGTH = 20

# --- home --------------------------------------------------------------------------------------------------


@dataclass
class LatestRun:
    run_id: uuid.UUID
    label: str
    kind: str
    created_at: datetime
    question_count: int
    metrics: list[tuple[str, float | None]]
    mode: str = ""
    color: str = ""


@dataclass
class CollectionSummary:
    collection: Collection
    document_count: int
    page_count: int
    golden_entry_count: int
    latest_runs: list[LatestRun] = field(default_factory=list)
    more_labels: int = 0  # labels run on the collection beyond the latest_runs shown


def home_collections(*, tenant: Tenant) -> list[CollectionSummary]:
    """The tenant's collections with their counts and the latest run of each label: four queries. A card shows
    the HOME_LABELS most recently run labels, newest first, each in its colour on every page (label_colors)."""
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
            .values(
                "pk", "label", "kind", "mode", "created_at", "question_count", "ks", "metrics", "collections"
            )
        )
        seen: set[tuple[int, str]] = set()
        for row in rows:
            key = (row["collections"], row["label"])
            if wanted.get(key) != row["created_at"] or key in seen:
                continue
            seen.add(key)
            summaries[row["collections"]].latest_runs.append(
                LatestRun(
                    row["pk"],
                    row["label"],
                    row["kind"],
                    row["created_at"],
                    row["question_count"],
                    headline_metrics(row["kind"], row["ks"], row["metrics"]),
                    row["mode"],
                )
            )
    for summary in summaries.values():
        summary.latest_runs.sort(key=lambda r: (r.created_at, r.label), reverse=True)
        summary.more_labels = max(0, len(summary.latest_runs) - HOME_LABELS)
        del summary.latest_runs[HOME_LABELS:]
    colors = tenant_label_colors(tenant)
    for summary in summaries.values():
        for run in summary.latest_runs:
            run.color = colors[run.label]
    return list(summaries.values())


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


def golden_csv(entries: QuerySet[GoldenEntry]) -> str:
    """Entries as CSV, oldest first; list columns (expected ids, tags) hold JSON arrays, unambiguous whatever
    the ids contain, and a key that readers would take for a number is a JSON string (text_cell)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(GOLDEN_CSV_COLUMNS)
    for e in entries.order_by("created_at", "id").iterator():
        writer.writerow(
            [
                e.pk,
                text_cell(e.key),
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
            tenant=tenant, object_type=GoldenAuditObject.GOLDEN_ENTRY, object_id=str(entry_id)
        ).order_by("-at", "-id")[:limit]
    )


def audit_summary(event: AuditEvent) -> str:
    return event.summary()


# --- question generation -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class GenerateBackend:
    """What a generation with no model named would use, as the form describes it (never the API key)."""

    backend: str  # "llm" (a chat endpoint) or "template" (the offline writer)
    model: str  # "" when an endpoint is configured without a default model
    endpoint: str  # the endpoint's host[:port], "" offline

    @property
    def placeholder(self) -> str:
        if self.backend == "template":
            return f"{generation.TEMPLATE_MODEL} (offline)"
        return self.model or "model name"


def generate_backend_info() -> GenerateBackend:
    try:
        backend, model = generate_backend(None)
    except EvalsiteError:  # an endpoint without EVALSITE_LLM_MODEL: the form must name a model
        backend, model = "llm", ""
    endpoint = ""
    if backend == "llm":
        parts = urlsplit(settings.EVALSITE_LLM_BASE_URL)
        endpoint = parts.hostname or ""
        if parts.port:
            endpoint += f":{parts.port}"
    return GenerateBackend(backend, model, endpoint)


def review_pending_count(*, collection: Collection) -> int:
    """Generated entries nobody has reviewed yet."""
    return collection.golden_entries.filter(origin=Origin.GENERATED, reviewed=False).count()


def review_queue(*, tenant: Tenant, collection: Collection, job: Job | None = None) -> QuerySet[GoldenEntry]:
    """The collection's generated entries awaiting review (those of one job, when given), oldest first."""
    entries = golden_entries_list(
        tenant=tenant, collection=collection, origin=Origin.GENERATED, reviewed=False
    )
    if job is not None:
        entries = entries.filter(job=job)
    return entries.select_related("source_page__document")


@dataclass
class ReviewRow:
    entry: GoldenEntry
    expected: list[tuple[str, str | None]]  # (document id, its title; None: not in the collection any more)
    source_page: Page | None


def review_rows(*, collection: Collection, entries: list[GoldenEntry]) -> list[ReviewRow]:
    """A page of the review queue with its expected documents' titles (one query)."""
    ids = {d for e in entries for d in e.expected_document_ids}
    titles = dict(collection.documents.filter(external_id__in=ids).values_list("external_id", "title"))
    return [
        ReviewRow(e, [(d, titles.get(d)) for d in e.expected_document_ids], e.source_page) for e in entries
    ]


@dataclass
class GenerateReport:
    """A Generate job's result as its page shows it, with what became of the entries it wrote."""

    result: dict[str, Any]  # the job's result ({} until it completes)
    discards: list[tuple[str, int]]  # every reason, in the gate's order
    chart: str  # the discard chart's HTML ("" without a result)
    entries: int  # the job's entries still in the golden set
    pending: int  # of those, not reviewed yet

    @property
    def tokens(self) -> int:
        return int(self.result.get("prompt_tokens") or 0) + int(self.result.get("completion_tokens") or 0)


DISCARD_CHART_ID = "discard-chart"


def generate_report(job: Job) -> GenerateReport | None:
    """What a Generate job did: its result (when it completed), the discard chart, and its entries now."""
    if job.kind != GoldenJobKind.GENERATE:
        return None
    counts = GoldenEntry.objects.filter(job=job).aggregate(
        total=Count("pk"), pending=Count("pk", filter=Q(reviewed=False))
    )
    result = job.result if isinstance(job.result, dict) else {}
    discards = result.get("discards") if isinstance(result.get("discards"), dict) else None
    rows: list[tuple[str, int]] = []
    chart = ""
    if discards is not None:
        reasons = list(generation.DISCARD_REASONS) + [
            r for r in discards if r not in generation.DISCARD_REASONS
        ]
        rows = [(reason, int(discards.get(reason) or 0)) for reason in reasons]
        chart = charts.figure_html(
            count_charts.discard_figure(discards, generation.DISCARD_REASONS), DISCARD_CHART_ID
        )
    return GenerateReport(result, rows, chart, counts["total"], counts["pending"])


def collection_entry(tenant: Tenant, collection: Collection, entry_id: str) -> GoldenEntry:
    """A golden entry of this collection (another tenant's, or another collection's, is a 404)."""
    entry = golden_entry_get(tenant=tenant, entry_id=entry_id)
    if entry.collection_id != collection.pk:
        raise NotFound("Golden entry", entry_id)
    return entry
