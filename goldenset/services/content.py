"""Tenancy, collections, documents and pages."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence, Sized
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, F
from django.utils import timezone

from evalsite.audit.models import AuditAction
from evalsite.audit.services import audit_record, diff
from evalsite.errors import EvalsiteError, NotFound
from evalsite.jobs.models import Job
from evalsite.tenancy.models import Tenant
from goldenset.models import Collection, Document, GoldenAuditObject, GoldenJobKind, Page
from goldenset.services.audit import audit_entries
from goldenset.services.written import Written
from goldenset.text import collection_id_problem, split_pages
from goldenset.vocabulary.chunks import CHUNK, chunks

logger = logging.getLogger(__name__)
ID_SAMPLE = 20  # document ids an ingest event lists per kind of change; the counts are always whole

# --- collections -------------------------------------------------------------------------------------------


def lock_collection(collection: Collection, *, delete: bool = False) -> None:
    """Take the collection's row lock for the rest of the transaction, so its writers run one at a time.

    Concurrent identical writes (the same new document id, the same new question) then see each other's
    rows instead of racing into the unique constraints. Raises NotFound if the collection was deleted while
    waiting. SQLite serializes writers anyway (and Django skips FOR UPDATE there); FOR NO KEY UPDATE does
    not block other tables' rows that merely reference the collection (jobs, runs), a delete takes FOR UPDATE.
    """
    rows = Collection.objects.select_for_update(no_key=_no_key() and not delete).filter(pk=collection.pk)
    if not list(rows.values_list("pk", flat=True)):
        raise NotFound("Collection", collection.slug)


def _no_key() -> bool:
    return connection.features.has_select_for_no_key_update


def _collection_exists(slug: str) -> EvalsiteError:
    return EvalsiteError(
        "collection-exists", f"Collection {slug} already exists.", details={"collection_id": slug}, status=409
    )


def collection_create(*, tenant: Tenant, slug: str, name: str = "", actor: str) -> Collection:
    slug = slug.strip()
    if not slug:
        raise EvalsiteError(
            "validation-error", "collection_id: may not be blank.", details={"field": "collection_id"}
        )
    if problem := collection_id_problem(slug):
        raise EvalsiteError(
            "validation-error", f"collection_id: {problem}.", details={"field": "collection_id"}
        )
    with transaction.atomic():
        # Creators of one tenant's collections take turns: the second of two identical creates sees the first.
        list(Tenant.objects.select_for_update(no_key=_no_key()).filter(pk=tenant.pk).values_list("pk"))
        if Collection.objects.filter(tenant=tenant, slug=slug).exists():
            raise _collection_exists(slug)
        try:
            with transaction.atomic():
                collection = Collection.objects.create(tenant=tenant, slug=slug, name=name or slug)
        except IntegrityError:  # a writer that took no lock (the admin) got there first
            raise _collection_exists(slug) from None
        _audit_collection(collection, AuditAction.CREATE, actor, {"name": collection.name})
        return collection


_COLLECTION_FIELDS = ("tenant_id", "slug", "name")


@transaction.atomic
def collection_save(*, collection: Collection, actor: str) -> Collection:
    """Save a collection the admin's form validated, new or edited in place; audit what changed."""
    before = (
        None
        if collection._state.adding
        else Collection.objects.filter(pk=collection.pk).values(*_COLLECTION_FIELDS).first()
    )
    collection.save()
    if before is None:
        _audit_collection(collection, AuditAction.CREATE, actor, {"name": collection.name})
    elif changes := diff(before, {f: getattr(collection, f) for f in _COLLECTION_FIELDS}):
        _audit_collection(collection, AuditAction.UPDATE, actor, changes)
    return collection


def collection_delete(*, collection: Collection, actor: str) -> None:
    """Delete a collection with its documents and golden entries; the collection's deletion is audited, and
    so is each entry's (an entry's trail ends with its snapshot)."""
    with transaction.atomic():
        lock_collection(collection, delete=True)
        _audit_collection(
            collection,
            AuditAction.DELETE,
            actor,
            {
                "name": collection.name,
                "documents": collection.documents.count(),
                "golden_entries": collection.golden_entries.count(),
            },
        )
        audit_entries(
            entries=collection.golden_entries.select_related("collection"),
            action=AuditAction.DELETE,
            actor=actor,
        )
        collection.delete()


def _audit_collection(collection: Collection, action: str, actor: str, changes: dict[str, Any]) -> None:
    audit_record(
        tenant=collection.tenant_id,
        collection=collection,
        action=action,
        object_type=GoldenAuditObject.COLLECTION,
        object_id=collection.slug,
        actor=actor,
        changes=changes,
    )


# Called with the collection once a change of its content has committed (the evaluation app queues the build of
# its new search index), so this app never imports the ones above it.
content_changed_hooks: list[Callable[[Collection], object]] = []


def collection_touch(*, collection: Collection) -> None:
    """Mark the content changed, so cached search indexes of the old version are not used again; once the
    change commits, the hooks run (a failing hook is logged: the change itself stands)."""
    Collection.objects.filter(pk=collection.pk).update(
        content_version=F("content_version") + 1, updated_at=timezone.now()
    )
    collection.refresh_from_db(fields=["content_version", "updated_at"])
    transaction.on_commit(lambda: _content_changed(collection))


def _content_changed(collection: Collection) -> None:
    for hook in content_changed_hooks:
        try:
            hook(collection)
        except Exception:
            logger.exception("content-changed hook %s failed for collection %s", hook, collection.pk)


# --- documents ---------------------------------------------------------------------------------------------


@dataclass
class DocumentInput:
    """One validated document of an ingest call: text is already split into pages."""

    id: str
    title: str = ""
    pages: list[str] = field(default_factory=list)
    source: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    supersedes: list[str] = field(default_factory=list)
    last_verified: datetime | None = None

    @classmethod
    def from_text(cls, *, text: str, **kwargs: Any) -> DocumentInput:
        return cls(pages=split_pages(text, settings.EVALSITE_PAGE_CHARS), **kwargs)

    def as_job_input(self) -> dict[str, Any]:
        data = {k: getattr(self, k) for k in ("id", "title", "pages", "source", "metadata", "supersedes")}
        for name in ("valid_from", "valid_until", "last_verified"):
            value = getattr(self, name)
            data[name] = value.isoformat() if value else None
        return data

    @classmethod
    def from_job_input(cls, data: dict[str, Any]) -> DocumentInput:
        values = dict(data)
        for name in ("valid_from", "valid_until", "last_verified"):
            values[name] = datetime.fromisoformat(values[name]) if values.get(name) else None
        return cls(**values)


_DOC_FIELDS = ("title", "source", "metadata", "valid_from", "valid_until", "supersedes", "last_verified")


def _update_rows(model, objects: Sequence, field_names: Sequence[str]) -> None:
    """UPDATE many rows with one prepared statement (executemany).

    Django's bulk_update builds a CASE expression per field and row, which takes seconds for ten thousand
    rows; a prepared statement per row is an order of magnitude faster on SQLite and PostgreSQL alike.
    """
    if not objects:
        return
    fields = [model._meta.get_field(name) for name in field_names]
    quote = connection.ops.quote_name
    assignments = ", ".join(f"{quote(f.column)} = %s" for f in fields)
    sql = f"UPDATE {quote(model._meta.db_table)} SET {assignments} WHERE {quote(model._meta.pk.column)} = %s"
    rows = [
        [f.get_db_prep_save(getattr(obj, f.attname), connection) for f in fields] + [obj.pk]
        for obj in objects
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, rows)


DOCUMENT_BATCH = 2000  # documents read, compared and written at a time: what bounds an import's memory


def documents_upsert(
    *,
    collection: Collection,
    documents: Iterable[DocumentInput],
    actor: str,
    source: str = "",
    progress: Callable[[int, int], None] | None = None,
    batch_size: int | None = None,
) -> dict[str, int]:
    """Create or replace documents by id, with their pages, in one transaction.

    A document sent again replaces its fields and pages; one sent again unchanged is not written at all, and
    when nothing changed the collection keeps its content version (so its search index stays valid). Pages are
    updated in place by number, so a page that did not change keeps its id (golden entries point at pages).
    A call that wrote anything is audited as one ingest event (counts, a sample of the ids, and `source`: the
    files of an upload, the job of a large ingest) and bumps the content version once.

    `documents` is read lazily, DOCUMENT_BATCH (or `batch_size`) at a time, and each batch is written before
    the next is read, so a generator over a file of a million documents needs the memory of one batch. The
    transaction is still one: an exception raised by the generator (say at a malformed line) rolls every batch
    back. Ids repeated within one batch: the last wins; repeated in a later batch, the later replaces the
    earlier as an update.
    After each batch `progress(documents done, total)`, total being len(documents) for a sized input and 0
    when unknown (a generator).
    """
    batch_size = batch_size or DOCUMENT_BATCH
    total = len(documents) if isinstance(documents, Sized) else 0
    written = Written()
    now = timezone.now()
    with transaction.atomic():
        lock_collection(collection)
        batch: list[DocumentInput] = []
        for document_input in documents:
            batch.append(document_input)
            if len(batch) >= batch_size:
                _upsert_batch(collection, batch, now, written)
                written.refresh_statistics()
                batch = []
                if progress:
                    progress(written.received, total)
        if batch:
            _upsert_batch(collection, batch, now, written)
        if written.created or written.updated:
            collection_touch(collection=collection)
            audit_record(
                tenant=collection.tenant_id,
                collection=collection,
                action=AuditAction.INGEST,
                object_type=GoldenAuditObject.DOCUMENT,
                object_id=_documents_label(written.created + written.updated),
                actor=actor,
                changes={
                    **written.counts(),
                    "created_ids": written.created_ids,
                    "updated_ids": written.updated_ids,
                    **({"source": source} if source else {}),
                },
            )
    if progress:
        progress(written.received, total or written.received)
    return written.counts()


def _upsert_batch(
    collection: Collection, documents: Sequence[DocumentInput], now: datetime, written: Written
) -> None:
    """Write one batch of documents_upsert (inside its transaction, under its lock) and add to its counts."""
    by_id: dict[str, DocumentInput] = {}
    for document_input in documents:
        by_id[document_input.id] = document_input
    ids = list(by_id)
    existing: dict[str, Document] = {}
    for chunk in chunks(ids):
        existing.update(
            (d.external_id, d) for d in Document.objects.filter(collection=collection, external_id__in=chunk)
        )
    old_pages: dict[int, dict[int, Page]] = {}
    for chunk in chunks([d.pk for d in existing.values()]):
        for page in Page.objects.filter(document_id__in=chunk).only("id", "document_id", "number", "text"):
            old_pages.setdefault(page.document_id, {})[page.number] = page

    to_create = [
        Document(collection=collection, external_id=i, **{f: getattr(by_id[i], f) for f in _DOC_FIELDS})
        for i in ids
        if i not in existing
    ]
    changed_docs: list[Document] = []
    new_pages: list[Page] = []
    changed_pages: list[Page] = []
    stale_pages: list[int] = []
    for external_id, doc in existing.items():
        incoming = by_id[external_id]
        pages = old_pages.get(doc.pk, {})
        fields_changed = any(getattr(doc, f) != getattr(incoming, f) for f in _DOC_FIELDS)
        pages_changed = [pages[n].text for n in sorted(pages)] != incoming.pages
        if not (fields_changed or pages_changed):
            continue
        for f in _DOC_FIELDS:
            setattr(doc, f, getattr(incoming, f))
        doc.updated_at = now
        changed_docs.append(doc)
        for number, text in enumerate(incoming.pages, 1):
            existing_page = pages.get(number)
            if existing_page is None:
                new_pages.append(Page(document=doc, number=number, text=text).prepare())
            elif existing_page.text != text:
                existing_page.text = text
                changed_pages.append(existing_page.prepare())
        stale_pages.extend(p.pk for n, p in pages.items() if n > len(incoming.pages))

    Document.objects.bulk_create(to_create, batch_size=CHUNK)
    _update_rows(Document, changed_docs, [*_DOC_FIELDS, "updated_at"])
    _update_rows(Page, changed_pages, ["text", "content_hash"])
    for chunk in chunks(stale_pages):
        Page.objects.filter(pk__in=chunk).delete()
    for created_doc in to_create:
        new_pages.extend(
            Page(document=created_doc, number=n, text=t).prepare()
            for n, t in enumerate(by_id[created_doc.external_id].pages, 1)
        )
    Page.objects.bulk_create(new_pages, batch_size=CHUNK)

    written.received += len(documents)
    written.created += len(to_create)
    written.updated += len(changed_docs)
    written.unchanged += len(existing) - len(changed_docs)
    written.pages_written += len(new_pages) + len(changed_pages)
    written.pages_deleted += len(stale_pages)
    for sample, docs in ((written.created_ids, to_create), (written.updated_ids, changed_docs)):
        sample.extend(d.external_id for d in docs[: ID_SAMPLE - len(sample)])


def _documents_label(count: int) -> str:
    """An ingest event's object: the documents it wrote, counted (their ids are in its changes)."""
    return f"{count} document" if count == 1 else f"{count} documents"


@dataclass
class IngestOutcome:
    """What documents_ingest did: wrote the documents now (result), or queued an Ingest job (job)."""

    result: dict[str, int] | None = None
    job: Job | None = None


def ingest_as_job(count: int) -> bool:
    """The one rule for every ingest (the JSON body and the file upload of the API): more documents than
    EVALSITE_INGEST_JOB_THRESHOLD_DOCUMENTS run as an Ingest job, fewer are written in the request."""
    return count > settings.EVALSITE_INGEST_JOB_THRESHOLD_DOCUMENTS


def ingest_job_create(*, collection: Collection, input: dict[str, Any], actor: str) -> Job:
    """Queue an Ingest job of validated input (its launch audited now, its writes when it runs)."""
    from evalsite.jobs.services import job_create  # goldenset.jobs audits through this package

    with transaction.atomic():
        return job_create(
            tenant=collection.tenant,
            kind=GoldenJobKind.INGEST,
            collection=collection,
            input={**input, "actor": actor},
            actor=actor,
        )


def documents_ingest(
    *, collection: Collection, documents: Sequence[DocumentInput], actor: str, source: str = ""
) -> IngestOutcome:
    """Add or replace validated documents: now, in this request, or as an Ingest job (ingest_as_job)."""
    if ingest_as_job(len(documents)):
        job_input = {"documents": [d.as_job_input() for d in documents], "source": source}
        return IngestOutcome(job=ingest_job_create(collection=collection, input=job_input, actor=actor))
    return IngestOutcome(
        result=documents_upsert(collection=collection, documents=documents, actor=actor, source=source)
    )


def document_delete(*, document: Document, actor: str) -> None:
    documents_delete(collection=document.collection, documents=[document], actor=actor)


def documents_delete(*, collection: Collection, documents: Sequence[Document], actor: str) -> int:
    """Delete documents of one collection with their pages; each deletion audited with the document's title
    and page count (golden entries that expect it keep the id, and evaluation warns about it)."""
    documents = list(documents)
    if any(d.collection_id != collection.pk for d in documents):
        raise ValueError("documents_delete: every document must be of the collection given")
    ids = [d.pk for d in documents]
    with transaction.atomic():
        lock_collection(collection)  # first, as every writer of the collection does: no lock-order deadlock
        pages: dict[int, int] = {}
        for chunk in chunks(ids):
            pages.update(
                Page.objects.filter(document_id__in=chunk)
                .order_by()
                .values("document_id")
                .annotate(n=Count("pk"))
                .values_list("document_id", "n")
            )
        for document in documents:
            _audit_document(
                collection,
                document,
                AuditAction.DELETE,
                actor,
                {"title": document.title, "source": document.source, "pages": pages.get(document.pk, 0)},
            )
        for chunk in chunks(ids):
            Document.objects.filter(pk__in=chunk).delete()
        if documents:
            collection_touch(collection=collection)
    return len(documents)


@transaction.atomic
def document_touch(
    *, document: Document, actor: str, created: bool, changed_fields: Sequence[str] = (), pages_changed: bool
) -> None:
    """After the admin saved a document and its pages (inside its transaction): the collection's content
    changed (search indexes are keyed on its version), and the audit trail says how."""
    collection = document.collection
    collection_touch(collection=collection)
    if created:
        changes: dict[str, Any] = {"title": document.title, "pages": document.pages.count()}
    else:
        changes = {"fields": list(changed_fields), "pages_changed": pages_changed}
    action = AuditAction.CREATE if created else AuditAction.UPDATE
    _audit_document(collection, document, action, actor, changes)


def _audit_document(
    collection: Collection, document: Document, action: str, actor: str, changes: dict[str, Any]
) -> None:
    audit_record(
        tenant=collection.tenant_id,
        collection=collection,
        action=action,
        object_type=GoldenAuditObject.DOCUMENT,
        object_id=document.external_id,
        actor=actor,
        changes=changes,
    )
