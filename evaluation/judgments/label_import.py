"""Human labels imported into a collection: each row matched to its golden entry (by key or question) and,
when it names one, to the stored run it judged; every problem in the file reported, and nothing written unless
all rows are good (`POST /search/evaluate/labels`, `manage.py import_labels`, the Calibration tab)."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone

from evalsite.audit.models import AuditAction
from evalsite.audit.services import audit_record
from evalsite.tenancy.models import Tenant
from evaluation.judgments.labels import LabelRow
from evaluation.models import (
    EvaluationAuditObject,
    EvaluationRun,
    HumanLabel,
    QuestionResult,
    RunKind,
)
from goldenset.formats import Problems, fail
from goldenset.models import Collection, GoldenEntry
from goldenset.selectors import golden_entries_named


def _entries(collection: Collection, rows: Sequence[LabelRow], problems: Problems) -> dict[str, GoldenEntry]:
    found = golden_entries_named(collection=collection, names=(r.question_id for r in rows))
    for row in rows:
        if row.question_id not in found:
            with problems.row():
                raise fail(
                    row.where,
                    f"question_id: {row.question_id!r} is no golden entry of {collection.slug} (a key or an id).",
                    field="question_id",
                )
    return found


def _runs(tenant: Tenant, collection: Collection, rows: Sequence[LabelRow], entries, problems: Problems):
    wanted: dict[str, uuid.UUID | None] = {}
    for row in rows:
        if row.run_id:
            try:
                wanted[row.run_id] = uuid.UUID(row.run_id)
            except ValueError:
                wanted[row.run_id] = None
    runs = {
        str(r.pk): r
        for r in EvaluationRun.objects.filter(
            tenant=tenant, kind=RunKind.ANSWERS, pk__in=[v for v in wanted.values() if v]
        )
    }
    answered = set(QuestionResult.objects.filter(run_id__in=list(runs)).values_list("run_id", "entry_id"))
    for row in rows:
        if not row.run_id or row.question_id not in entries:
            continue
        with problems.row():
            run = runs.get(str(wanted[row.run_id])) if wanted[row.run_id] else None
            if run is None or collection.slug not in run.collection_ids:
                raise fail(row.where, f"run_id: {row.run_id!r} is no answer run of {collection.slug}.",
                           field="run_id")  # fmt: skip
            if (run.pk, entries[row.question_id].pk) not in answered:
                raise fail(row.where, f"run_id: run {row.run_id} did not answer {row.question_id!r}.",
                           field="run_id")  # fmt: skip
    return runs


def labels_import(
    *, tenant: Tenant, collection: Collection, rows: Sequence[LabelRow], actor: str, dry_run: bool = False
) -> dict[str, Any]:
    """Store the labels (a rater's new label of an item replaces their old one), or refuse them all naming
    every bad row. Returns counts: labels, created, updated, raters, per metric."""
    problems = Problems()
    entries = _entries(collection, rows, problems)
    runs = _runs(tenant, collection, rows, entries, problems)
    problems.check()
    built: dict[tuple[str, str], HumanLabel] = {}
    for row in rows:
        entry = entries[row.question_id]
        run = runs.get(str(uuid.UUID(row.run_id))) if row.run_id else None
        key = row.item_key(str(entry.pk))
        built[(key, row.rater)] = HumanLabel(
            tenant=tenant,
            collection=collection,
            entry=entry,
            entry_key=entry.key,
            question=entry.question,
            run=run,
            answer=row.answer,
            passages=[{"document_id": p.document_id, "title": p.title, "text": p.text} for p in row.passages],
            metric=row.metric,
            level=row.level,
            statement=row.statement,
            rater=row.rater,
            value=row.value,
            passed=row.passed,
            verdict=row.verdict,
            item_key=key,
        )
    existing = {
        (label.item_key, label.rater): label
        for label in HumanLabel.objects.filter(
            collection=collection, item_key__in={k for k, _ in built}
        ).only("pk", "item_key", "rater")
    }
    updates, creates = [], []
    for pair, label in built.items():
        if pair in existing:
            label.pk = existing[pair].pk
            updates.append(label)
        else:
            creates.append(label)
    per_metric: dict[str, int] = defaultdict(int)
    for label in built.values():
        per_metric[label.metric] += 1
    summary = {
        "labels": len(built),
        "created": len(creates),
        "updated": len(updates),
        "raters": sorted({label.rater for label in built.values()}),
        "metrics": dict(sorted(per_metric.items())),
        "dry_run": dry_run,
    }
    if dry_run:
        return summary
    with transaction.atomic():
        HumanLabel.objects.bulk_create(creates, batch_size=500)
        fields = ["answer", "passages", "value", "passed", "verdict", "run", "entry", "updated_at"]
        now = timezone.now()
        for label in updates:
            label.updated_at = now
        HumanLabel.objects.bulk_update(updates, fields, batch_size=500)
        audit_record(
            tenant=tenant, action=AuditAction.CREATE, object_type=EvaluationAuditObject.LABELS, object_id=collection.slug, actor=actor,
            collection=collection, changes={k: v for k, v in summary.items() if k != "dry_run"},
        )  # fmt: skip
    return summary
