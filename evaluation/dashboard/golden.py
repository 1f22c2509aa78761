"""The collection pages' reads: the home page's collection summaries, and a golden set's tags, CSV export
and audit trail."""

from __future__ import annotations

import csv
import io
import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Max, QuerySet

from evaluation.dashboard.common import headline_metric_names
from evaluation.models import EvaluationRun
from goldenset.models import AuditEvent, Collection, GoldenEntry, Page, Tenant
from goldenset.selectors import collections_list, count_of

TAGS_LIMIT = 200
AUDIT_TRAIL_LENGTH = 20

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
