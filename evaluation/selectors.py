"""Reads of evaluation data, always scoped to one tenant."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, time, timedelta

from django.db.models import Prefetch, QuerySet

from evaluation.models import EvaluationRun, QuestionResult
from goldenset import selectors as golden_selectors
from goldenset.errors import EvalsiteError, NotFound
from goldenset.models import Collection, Tenant


def collections_named(
    *, tenant: Tenant, collection_id: str | None, collection_ids: list[str] | None
) -> list[Collection]:
    """collection_id and collection_ids together, in order, without repeats; each must be the tenant's."""
    names = list(dict.fromkeys([n for n in [collection_id, *(collection_ids or [])] if n]))
    if not names:
        raise EvalsiteError(
            "validation-error",
            "collection_id: name a collection (collection_id or collection_ids).",
            details={"field": "collection_id"},
        )
    return [golden_selectors.collection_get(tenant=tenant, collection_id=name) for name in names]


def runs_list(
    *,
    tenant: Tenant,
    collection_id: str | None = None,
    collection: Collection | None = None,
    label: str | None = None,
    batch_id: uuid.UUID | None = None,
    kind: str | None = None,
    date_from: date | None = None,
    date_to: date | None = None,
) -> QuerySet[EvaluationRun]:
    """The tenant's runs newest first (API and dashboard); dates are whole UTC days, date_to included."""
    runs = EvaluationRun.objects.filter(tenant=tenant)
    if collection_id:
        # As the golden-set list: a collection that is not the tenant's is a 404, not an empty page.
        collection = golden_selectors.collection_get(tenant=tenant, collection_id=collection_id)
    if collection is not None:
        runs = runs.filter(collections=collection)
    if label:
        runs = runs.filter(label=label)
    if batch_id:
        runs = runs.filter(batch_id=batch_id)
    if kind:
        runs = runs.filter(kind=kind)
    if date_from:
        runs = runs.filter(created_at__gte=datetime.combine(date_from, time.min, tzinfo=UTC))
    if date_to:
        runs = runs.filter(created_at__lt=datetime.combine(date_to + timedelta(days=1), time.min, tzinfo=UTC))
    return runs.order_by("-created_at", "-id")


def run_get(*, tenant: Tenant, run_id: str, with_results: bool = False) -> EvaluationRun:
    try:
        pk = uuid.UUID(str(run_id))
    except ValueError:
        raise NotFound("Run", run_id) from None
    runs = EvaluationRun.objects.filter(tenant=tenant, pk=pk)
    if with_results:
        runs = runs.prefetch_related(Prefetch("results", QuestionResult.objects.order_by("position")))
    run = runs.first()
    if run is None:
        raise NotFound("Run", run_id)
    return run
