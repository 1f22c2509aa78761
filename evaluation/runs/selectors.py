"""Reads of evaluation data: runs (always scoped to one tenant), the golden questions an evaluation asks, and
the machine assessors whose grades were written into them (evaluation.judgments.apply writes them)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from django.db.models import Prefetch, QuerySet

from evalsite.errors import EvalsiteError, NotFound
from evalsite.jobs.models import Job
from evalsite.tenancy.models import Tenant
from evaluation.models import PEOPLE, EvaluationRun, PoolApplication, QuestionResult
from evaluation.runs.slices import EVERY, Subset
from goldenset import selectors as golden_selectors
from goldenset.models import Collection, GoldenEntry
from goldenset.vocabulary.chunks import chunks


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
    """The tenant's runs newest first (API and dashboard); dates are whole UTC days, date_to included. Each
    run's per-slice breakdown is left unread: no list shows it, and it grows with the golden set's tags."""
    runs = EvaluationRun.objects.filter(tenant=tenant).defer("slices")
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


def job_collections(job: Job) -> list[Collection]:
    """An evaluation job's collections in the order the request named them (the job stores their pks)."""
    pks = job.input["collection_pks"]
    collections = list(Collection.objects.filter(pk__in=pks))
    if len(collections) != len(pks):
        raise EvalsiteError("collection-gone", "A collection was deleted before the evaluation ran.")
    order = {pk: i for i, pk in enumerate(pks)}
    return sorted(collections, key=lambda c: order[c.pk])


# --- the golden questions an evaluation asks -------------------------------------------------------------------


@dataclass(frozen=True)
class GoldenQuestion:
    entry_id: str | None  # None for a request's unanswerable question (answer evaluation)
    key: str
    collection_id: str
    question: str
    qrels: dict[str, int]  # expected document key -> grade (qualified "collection/id" across collections)
    document_ids: tuple[str, ...] = ()  # the expected documents' ids in their collection
    reference: str = ""  # the reference answer of an answerable entry
    answerable: bool = True
    tags: tuple[str, ...] = ()  # the entry's, snapshotted with its results (slices)
    origin: str = ""  # Manual | Imported | Generated; "" for a request's unanswerable question
    reviewed: bool = False


def golden_questions(collections: Sequence[Collection]) -> list[GoldenQuestion]:
    """Every golden entry of the collections, in order (a collection's entries oldest first)."""
    multi = len(collections) > 1
    return [
        GoldenQuestion(
            entry_id=str(entry.pk),
            key=entry.key,
            collection_id=collection.slug,
            question=entry.question,
            qrels={(f"{collection.slug}/{d}" if multi else d): grade for d, grade in entry.qrels().items()},
            document_ids=tuple(entry.expected_document_ids),
            reference=entry.reference_answer if entry.answerable else "",
            answerable=entry.answerable,
            tags=tuple(entry.tags or ()),
            origin=entry.origin,
            reviewed=entry.reviewed,
        )
        for collection in collections
        for entry in GoldenEntry.objects.filter(collection=collection).order_by("created_at", "id")
    ]


def machine_judged_entries(collections) -> dict[str, list[dict]]:
    """Per golden entry id, the machine sources whose grades an application still in force wrote into it, each
    {rater, versions}: what an evaluation records of the judgments it read that no person gave."""
    out: dict[str, list[dict]] = {}
    applications = PoolApplication.objects.filter(
        pool__collection__in=collections, reverted_at__isnull=True
    ).exclude(source=PEOPLE)
    for source, versions, changes in applications.values_list("source", "source_detail", "changes"):
        for change in changes:
            given = out.setdefault(change["entry_id"], [])
            if not any(g["rater"] == source for g in given):
                given.append({"rater": source, "versions": versions})
    return out


def documents_present(collection: Collection, document_ids: Iterable[str]) -> set[str]:
    """Which of these document ids the collection holds (read in chunks: a collection may hold millions)."""
    present: set[str] = set()
    for chunk in chunks(sorted(set(document_ids))):
        present.update(
            collection.documents.filter(external_id__in=chunk).values_list("external_id", flat=True)
        )
    return present


def count_golden_questions(collections: Sequence[Collection], subset: Subset = EVERY) -> int:
    """The golden entries a retrieval evaluation scores (those with expected documents, in the subset)."""
    entries = GoldenEntry.objects.filter(collection__in=collections).exclude(expected_document_ids=[])
    if not subset:
        return entries.count()
    return count_in_subset(entries, subset)


def count_in_subset(entries: QuerySet[GoldenEntry], subset: Subset) -> int:
    """How many of these entries the subset admits: three small columns read (in chunks), the rule applied
    in Python (evaluation.runs.slices), so counting and asking can never disagree."""
    return sum(
        subset.admits(tags or (), origin, reviewed)
        for tags, origin, reviewed in entries.order_by()
        .values_list("tags", "origin", "reviewed")
        .iterator(2000)
    )


def count_answer_questions(collections: Sequence[Collection], subset: Subset = EVERY) -> int:
    """The golden entries an answer evaluation asks (every entry in the subset)."""
    return count_in_subset(GoldenEntry.objects.filter(collection__in=collections), subset)


def content_changed_since(run: EvaluationRun) -> bool | None:
    """Whether a collection of the run changed after it: its content version now is newer than the one the run
    recorded (index_info["content_versions"], evaluation.runs.store.run_store); None when it recorded none."""
    recorded = (run.index_info or {}).get("content_versions") or {}
    if not recorded:
        return None
    current = dict(run.collections.values_list("slug", "content_version"))
    return any(current.get(slug, version) > version for slug, version in recorded.items())
