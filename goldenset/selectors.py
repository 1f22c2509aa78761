"""Reads, always scoped to one tenant: another tenant's objects are not found, exactly like missing ones."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime

from django.db.models import Count, IntegerField, Model, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from evalsite.audit.models import AuditEvent
from evalsite.errors import NotFound
from evalsite.jobs.models import Job
from evalsite.tenancy.models import Tenant
from goldenset.generation import PageText
from goldenset.models import Collection, Document, GoldenEntry, Page
from goldenset.temporal import CURRENT, Validity, statuses
from goldenset.vocabulary.chunks import chunks


def collection_get(*, tenant: Tenant, collection_id: str) -> Collection:
    try:
        return Collection.objects.select_related("tenant__cluster").get(tenant=tenant, slug=collection_id)
    except Collection.DoesNotExist:
        raise NotFound("Collection", collection_id) from None


def count_of(model: type[Model], fk: str) -> Coalesce:
    """COUNT(*) of model rows pointing at the outer row, as a subquery.

    Two Count() joins on one query multiply each other's rows (documents x entries per collection);
    a correlated subquery per count keeps each one linear.
    """
    rows = model._default_manager.filter(**{fk: OuterRef("pk")}).order_by().values(fk).annotate(n=Count("*"))
    return Coalesce(Subquery(rows.values("n")[:1], output_field=IntegerField()), 0)


def collections_list(*, tenant: Tenant) -> QuerySet[Collection]:
    return Collection.objects.filter(tenant=tenant).annotate(
        document_count=count_of(Document, "collection"),
        golden_entry_count=count_of(GoldenEntry, "collection"),
    )


def document_get(*, collection: Collection, document_id: str) -> Document:
    try:
        return collection.documents.get(external_id=document_id)
    except Document.DoesNotExist:
        raise NotFound("Document", document_id) from None


def documents_list(*, collection: Collection, text: str | None = None) -> QuerySet[Document]:
    qs = collection.documents.annotate(page_count=Count("pages")).order_by("external_id")
    if text:
        qs = qs.filter(Q(external_id__icontains=text) | Q(title__icontains=text))
    return qs


def documents_in_force(*, collection: Collection, at: datetime) -> set[int]:
    """The pks of the collection's documents that default search returns at `at` (goldenset.temporal's rule:
    not expired, not yet valid or superseded; a successor that later expired still supersedes)."""
    rows = list(
        Document.objects.filter(collection=collection).values_list(
            "pk", "external_id", "valid_from", "valid_until", "supersedes"
        )
    )
    validity = [
        Validity(ext, start, end, tuple(str(n) for n in names or ())) for _pk, ext, start, end, names in rows
    ]
    return {row[0] for row, status in zip(rows, statuses(validity, at), strict=True) if status == CURRENT}


def uuid_or_not_found(value: str, what: str) -> uuid.UUID:
    """The id a client sent as a UUID; NotFound (a 404, as for a missing object) when it is none."""
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise NotFound(what, value) from None


def golden_entry_get(*, tenant: Tenant, entry_id: str) -> GoldenEntry:
    try:
        return GoldenEntry.objects.select_related("collection__tenant").get(
            pk=uuid_or_not_found(entry_id, "Golden entry"), collection__tenant=tenant
        )
    except GoldenEntry.DoesNotExist:
        raise NotFound("Golden entry", entry_id) from None


def golden_entries_named(*, collection: Collection, names: Iterable[str]) -> dict[str, GoldenEntry]:
    """The collection's entries a client names, by key or (when none has that key) by id: name -> entry, for
    the names that match one (the caller reports the others)."""
    names = set(names)
    found = {e.key: e for e in GoldenEntry.objects.filter(collection=collection, key__in=names)}
    ids = {}
    for name in names - set(found):
        try:
            ids[uuid.UUID(name)] = name
        except ValueError:
            continue
    for entry in GoldenEntry.objects.filter(collection=collection, pk__in=list(ids)):
        found[ids[entry.pk]] = entry
    return found


def golden_entries_list(
    *,
    tenant: Tenant,
    collection: Collection | None = None,
    tag: str | None = None,
    origin: str | None = None,
    reviewed: bool | None = None,
    answerable: bool | None = None,
    text: str | None = None,
) -> QuerySet[GoldenEntry]:
    qs = GoldenEntry.objects.filter(collection__tenant=tenant).select_related("collection")
    if collection is not None:
        qs = qs.filter(collection=collection)
    if tag:
        qs = qs.filter(tags_index__contains=f"|{tag}|")
    if origin:
        qs = qs.filter(origin=origin)
    if reviewed is not None:
        qs = qs.filter(reviewed=reviewed)
    if answerable is not None:
        qs = qs.filter(answerable=answerable)
    if text:
        qs = qs.filter(
            Q(question__icontains=text) | Q(reference_answer__icontains=text) | Q(key__icontains=text)
        )
    return qs.order_by("created_at", "id")


def job_get(*, tenant: Tenant, job_id: str) -> Job:
    try:
        return Job.objects.get(pk=uuid_or_not_found(job_id, "Job"), tenant=tenant)
    except Job.DoesNotExist:
        raise NotFound("Job", job_id) from None


def first_pages(collection: Collection, document_ids: Iterable[str]) -> dict[str, PageText]:
    """Each of these documents' first page (its lowest number), by document id; an id the collection lacks is
    absent. Read in chunks: the ids may be a target's, any number of them."""
    found: dict[str, PageText] = {}
    for chunk in chunks(sorted(set(document_ids))):
        rows = (
            Page.objects.filter(document__collection=collection, document__external_id__in=chunk)
            .order_by("document_id", "number")
            .values_list("pk", "document__external_id", "number", "document__title", "text")
        )
        for pk, document, number, title, text in rows:
            found.setdefault(document, PageText(pk, document, number, title, text))
    return found


def pages_by_id(page_ids: Iterable[int]) -> dict[int, PageText]:
    """Pages with their document's id and title, to show, answer from or write a question about: plain rows
    (building model instances cost a search call as much as the search itself), read in chunks."""
    pages: dict[int, PageText] = {}
    for chunk in chunks(sorted(set(page_ids))):
        rows = (
            Page.objects.filter(pk__in=chunk)
            .order_by()  # into a dict: the model's ordering would only cost a sort (and its SQL compiling)
            .values_list("pk", "document__external_id", "number", "document__title", "text")
        )
        pages.update(
            {pk: PageText(pk, document, number, title, text) for pk, document, number, title, text in rows}
        )
    return pages


def audit_events_list(*, tenant: Tenant, collection: Collection | None = None) -> QuerySet[AuditEvent]:
    """The tenant's audit trail, newest first; with a collection, the writes to it, its documents and its
    golden entries (by the collection's uid: a collection created again under a deleted one's slug starts
    a trail of its own)."""
    events = AuditEvent.objects.filter(tenant=tenant)
    if collection is not None:
        events = events.filter(collection_uid=collection.uid)
    return events.order_by("-at", "-id")
