"""Writes: tenancy, collections, documents and pages, golden entries and their audit trail.

Every function is keyword-only, takes model instances already scoped to a tenant (selectors do the scoping),
and raises goldenset.errors.EvalsiteError with a stable code on bad input, leaving the database unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from goldenset.errors import EvalsiteError
from goldenset.models import (
    ApiKey,
    AuditAction,
    AuditEvent,
    Cluster,
    Collection,
    Document,
    GoldenEntry,
    Job,
    Origin,
    Page,
    Tenant,
    hash_api_key,
)
from goldenset.text import normalize_question, split_pages

_CHUNK = 500  # ids per IN (...) query: well under SQLite's parameter limit


def _chunks(items: Sequence, size: int = _CHUNK) -> Iterable[Sequence]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# --- tenancy -----------------------------------------------------------------------------------------------


@transaction.atomic
def tenant_get_or_create(*, cluster_slug: str, tenant_slug: str) -> Tenant:
    cluster, _ = Cluster.objects.get_or_create(slug=cluster_slug)
    tenant, _ = Tenant.objects.get_or_create(cluster=cluster, slug=tenant_slug)
    return tenant


def api_key_create(*, tenant: Tenant, name: str = "") -> tuple[ApiKey, str]:
    """A new key; the secret is returned once and only its hash is stored."""
    secret = ApiKey.new_secret()
    key = ApiKey.objects.create(
        tenant=tenant, name=name, prefix=secret[: ApiKey.PREFIX_LENGTH], key_hash=hash_api_key(secret)
    )
    return key, secret


def api_key_revoke(*, key: ApiKey) -> None:
    ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())


# --- collections -------------------------------------------------------------------------------------------


def collection_create(*, tenant: Tenant, slug: str, name: str = "") -> Collection:
    slug = slug.strip()
    if not slug:
        raise EvalsiteError(
            "validation-error", "collection_id: may not be blank.", details={"field": "collection_id"}
        )
    with transaction.atomic():
        if Collection.objects.filter(tenant=tenant, slug=slug).exists():
            raise EvalsiteError(
                "collection-exists",
                f"Collection {slug} already exists.",
                details={"collection_id": slug},
                status=409,
            )
        return Collection.objects.create(tenant=tenant, slug=slug, name=name or slug)


def collection_delete(*, collection: Collection, actor: str) -> None:
    """Delete a collection with its documents and golden entries; each entry's deletion is audited."""
    with transaction.atomic():
        audit_entries(
            entries=collection.golden_entries.select_related("collection"),
            action=AuditAction.DELETE,
            actor=actor,
        )
        collection.delete()


def collection_touch(*, collection: Collection) -> None:
    """Mark the content changed, so cached search indexes of the old version are not used again."""
    Collection.objects.filter(pk=collection.pk).update(
        content_version=F("content_version") + 1, updated_at=timezone.now()
    )
    collection.refresh_from_db(fields=["content_version", "updated_at"])


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


def documents_upsert(
    *, collection: Collection, documents: Sequence[DocumentInput], progress=None
) -> dict[str, int]:
    """Create or replace documents by id, with their pages, in one transaction.

    A document sent again replaces its fields and pages; one sent again unchanged is not written at all, and
    when nothing changed the collection keeps its content version (so its search index stays valid). Pages are
    updated in place by number, so a page that did not change keeps its id (golden entries point at pages).
    Ids repeated within one call: the last wins.
    """
    by_id: dict[str, DocumentInput] = {}
    for doc in documents:
        by_id[doc.id] = doc
    ids = list(by_id)
    now = timezone.now()
    with transaction.atomic():
        existing: dict[str, Document] = {}
        for chunk in _chunks(ids):
            existing.update(
                (d.external_id, d)
                for d in Document.objects.filter(collection=collection, external_id__in=chunk)
            )
        old_pages: dict[int, dict[int, Page]] = {}
        for chunk in _chunks([d.pk for d in existing.values()]):
            for page in Page.objects.filter(document_id__in=chunk).only(
                "id", "document_id", "number", "text"
            ):
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
        updated = 0
        for external_id, doc in existing.items():
            incoming = by_id[external_id]
            pages = old_pages.get(doc.pk, {})
            fields_changed = any(getattr(doc, f) != getattr(incoming, f) for f in _DOC_FIELDS)
            pages_changed = [pages[n].text for n in sorted(pages)] != incoming.pages
            if not (fields_changed or pages_changed):
                continue
            updated += 1
            for f in _DOC_FIELDS:
                setattr(doc, f, getattr(incoming, f))
            doc.updated_at = now
            changed_docs.append(doc)
            for number, text in enumerate(incoming.pages, 1):
                page = pages.get(number)
                if page is None:
                    new_pages.append(Page(document=doc, number=number, text=text))
                elif page.text != text:
                    page.text = text
                    changed_pages.append(page)
            stale_pages.extend(p.pk for n, p in pages.items() if n > len(incoming.pages))

        Document.objects.bulk_create(to_create, batch_size=_CHUNK)
        _update_rows(Document, changed_docs, [*_DOC_FIELDS, "updated_at"])
        _update_rows(Page, changed_pages, ["text"])
        for chunk in _chunks(stale_pages):
            Page.objects.filter(pk__in=chunk).delete()
        for doc in to_create:
            new_pages.extend(
                Page(document=doc, number=n, text=t) for n, t in enumerate(by_id[doc.external_id].pages, 1)
            )
        for start in range(0, len(new_pages), 2000):
            batch = new_pages[start : start + 2000]
            Page.objects.bulk_create(batch, batch_size=_CHUNK)
            if progress:  # documents done, estimated from the share of pages written
                progress(len(ids) * (start + len(batch)) // len(new_pages), len(ids))
        if to_create or changed_docs:
            collection_touch(collection=collection)
    if progress:
        progress(len(ids), len(ids))
    return {
        "received": len(documents),
        "created": len(to_create),
        "updated": updated,
        "unchanged": len(existing) - updated,
        "pages_written": len(new_pages) + len(changed_pages),
        "pages_deleted": len(stale_pages),
    }


def documents_ingest_job(job: Job, progress) -> dict[str, int]:
    """The Ingest job: the documents were validated when the job was created; write them now."""
    if job.collection is None:
        raise EvalsiteError("collection-gone", "The collection was deleted before the import ran.")
    documents = [DocumentInput.from_job_input(d) for d in job.input["documents"]]
    return documents_upsert(collection=job.collection, documents=documents, progress=progress)


def document_delete(*, document: Document) -> None:
    with transaction.atomic():
        collection = document.collection
        document.delete()
        collection_touch(collection=collection)


# --- audit -------------------------------------------------------------------------------------------------

AUDITED_FIELDS = (
    "key",
    "question",
    "expected_document_ids",
    "grades",
    "reference_answer",
    "tags",
    "answerable",
    "origin",
    "reviewed",
)


def entry_snapshot(entry: GoldenEntry) -> dict[str, Any]:
    return {f: getattr(entry, f) for f in AUDITED_FIELDS}


def _audit(entry: GoldenEntry, action: str, actor: str, changes: dict[str, Any]) -> AuditEvent:
    return AuditEvent(
        tenant_id=entry.collection.tenant_id,
        collection_slug=entry.collection.slug,
        object_id=str(entry.pk),
        action=action,
        actor=actor,
        changes=changes,
    )


def audit_entries(*, entries: Iterable[GoldenEntry], action: str, actor: str, changes=None) -> None:
    """One audit event per entry; changes defaults to each entry's snapshot."""
    AuditEvent.objects.bulk_create(
        [_audit(e, action, actor, changes if changes is not None else entry_snapshot(e)) for e in entries],
        batch_size=_CHUNK,
    )


# --- golden entries ----------------------------------------------------------------------------------------


@dataclass
class EntryInput:
    question: str
    expected_document_ids: list[str] = field(default_factory=list)
    reference_answer: str = ""
    key: str = ""
    tags: list[str] = field(default_factory=list)
    answerable: bool = True
    grades: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, entry: GoldenEntry) -> EntryInput:
        return cls(**{name: getattr(entry, name) for name in _ENTRY_INPUT_FIELDS})


_ENTRY_INPUT_FIELDS = (
    "question",
    "expected_document_ids",
    "reference_answer",
    "key",
    "tags",
    "answerable",
    "grades",
)


def _check_entries(
    *,
    collection: Collection,
    entries: Sequence[EntryInput],
    upsert_by_key: bool,
    replacing: GoldenEntry | None = None,
) -> dict[str, GoldenEntry]:
    """Validate a batch against itself and the collection; errors name the entry's index.

    Returns the existing entries each input replaces, by key: with upsert_by_key an input whose key exists
    replaces that entry (imports); `replacing` is the one entry a single-entry update rewrites.
    """
    if not entries:
        raise EvalsiteError(
            "validation-error", "entries: at least one entry is required.", details={"field": "entries"}
        )
    keys = [e.key for e in entries if e.key]
    by_key: dict[str, GoldenEntry] = {}
    for chunk in _chunks(keys):
        by_key.update({g.key: g for g in collection.golden_entries.filter(key__in=chunk)})
    norms = [normalize_question(e.question) for e in entries]
    by_norm: dict[str, str] = {}
    for chunk in _chunks(norms):
        by_norm.update(
            (norm, str(pk))
            for pk, norm in collection.golden_entries.filter(question_norm__in=chunk).values_list(
                "pk", "question_norm"
            )
        )
    replaces: dict[str, GoldenEntry] = {}
    seen_norms: dict[str, int] = {}
    seen_keys: dict[str, int] = {}
    for index, (entry, norm) in enumerate(zip(entries, norms, strict=True)):
        if not norm:
            raise EvalsiteError(
                "empty-question",
                f"entries[{index}].question: the question is empty.",
                details={"index": index, "field": "question"},
            )
        own = replacing
        if entry.key:
            if entry.key in seen_keys:
                raise EvalsiteError(
                    "duplicate-key",
                    f"entries[{index}]: key {entry.key!r} repeats entries[{seen_keys[entry.key]}].",
                    details={"index": index, "key": entry.key, "first_index": seen_keys[entry.key]},
                    status=409,
                )
            seen_keys[entry.key] = index
            holder = by_key.get(entry.key)
            if holder is not None and upsert_by_key:
                own = replaces[entry.key] = holder
            elif holder is not None and (replacing is None or holder.pk != replacing.pk):
                raise EvalsiteError(
                    "duplicate-key",
                    f"entries[{index}]: key {entry.key!r} already exists in collection {collection.slug}.",
                    details={"index": index, "key": entry.key, "existing_entry_id": str(holder.pk)},
                    status=409,
                )
        if norm in seen_norms:
            raise EvalsiteError(
                "duplicate-question",
                f"entries[{index}]: the question repeats entries[{seen_norms[norm]}].",
                details={"index": index, "first_index": seen_norms[norm], "question": entry.question},
                status=409,
            )
        seen_norms[norm] = index
        holder_pk = by_norm.get(norm)
        if holder_pk and (own is None or str(own.pk) != holder_pk):
            raise EvalsiteError(
                "duplicate-question",
                f"entries[{index}]: the question already exists in collection {collection.slug} (entry {holder_pk}).",
                details={"index": index, "question": entry.question, "existing_entry_id": holder_pk},
                status=409,
            )
        unknown_grades = sorted(set(entry.grades) - set(entry.expected_document_ids))
        if unknown_grades:
            raise EvalsiteError(
                "validation-error",
                f"entries[{index}].grades: graded documents not in expected_document_ids: {', '.join(unknown_grades)}",
                details={"index": index, "field": "grades", "document_ids": unknown_grades},
            )
    referenced = sorted({d for e in entries for d in e.expected_document_ids})
    known: set[str] = set()
    for chunk in _chunks(referenced):
        known.update(collection.documents.filter(external_id__in=chunk).values_list("external_id", flat=True))
    for index, entry in enumerate(entries):
        unknown = [d for d in entry.expected_document_ids if d not in known]
        if unknown:
            raise EvalsiteError(
                "unknown-documents",
                f"entries[{index}].expected_document_ids: {len(unknown)} unknown in collection {collection.slug}: "
                + ", ".join(unknown[:5]),
                details={"index": index, "field": "expected_document_ids", "unknown_document_ids": unknown},
            )
    return replaces


def golden_entries_add(
    *,
    collection: Collection,
    entries: Sequence[EntryInput],
    actor: str,
    origin: str = Origin.MANUAL,
    upsert_by_key: bool = False,
) -> tuple[list[GoldenEntry], list[GoldenEntry]]:
    """Add entries atomically: all of them or none. Returns (created, updated).

    With upsert_by_key (imports), an entry whose key already exists replaces that entry's content.
    """
    with transaction.atomic():
        existing_by_key = _check_entries(collection=collection, entries=entries, upsert_by_key=upsert_by_key)
        created: list[GoldenEntry] = []
        updated: list[GoldenEntry] = []
        update_events: list[AuditEvent] = []
        for entry in entries:
            values = {
                "question": entry.question.strip(),
                "expected_document_ids": list(dict.fromkeys(entry.expected_document_ids)),
                "grades": {k: int(v) for k, v in entry.grades.items()},
                "reference_answer": entry.reference_answer,
                "tags": list(dict.fromkeys(entry.tags)),
                "answerable": entry.answerable,
            }
            current = existing_by_key.get(entry.key) if entry.key else None
            if current is None:
                obj = GoldenEntry(collection=collection, key=entry.key, origin=origin, **values)
                obj.prepare()
                created.append(obj)
                continue
            before = entry_snapshot(current)
            for name, value in values.items():
                setattr(current, name, value)
            current.prepare()
            current.updated_at = timezone.now()
            changes = {k: [before[k], v] for k, v in entry_snapshot(current).items() if before[k] != v}
            if changes:
                updated.append(current)
                update_events.append(_audit(current, AuditAction.UPDATE, actor, changes))
        GoldenEntry.objects.bulk_create(created, batch_size=_CHUNK)
        if updated:
            GoldenEntry.objects.bulk_update(
                updated, [*values.keys(), "question_norm", "tags_index", "updated_at"], batch_size=_CHUNK
            )
        audit_entries(entries=created, action=AuditAction.CREATE, actor=actor)
        AuditEvent.objects.bulk_create(update_events, batch_size=_CHUNK)
    return created, updated


def golden_entry_check(*, entry: GoldenEntry) -> None:
    """Validate one entry, new or edited in place, exactly as an add would (raises EvalsiteError)."""
    _check_entries(
        collection=entry.collection,
        entries=[EntryInput.of(entry)],
        upsert_by_key=False,
        replacing=None if entry._state.adding else entry,
    )


def golden_entry_save(*, entry: GoldenEntry, actor: str) -> GoldenEntry:
    """Validate and save one entry, new or edited in place (API and admin alike); audit what changed."""
    with transaction.atomic():
        adding = entry._state.adding
        before = None if adding else entry_snapshot(GoldenEntry.objects.get(pk=entry.pk))
        golden_entry_check(entry=entry)
        entry.save()
        if before is None:
            audit_entries(entries=[entry], action=AuditAction.CREATE, actor=actor)
        else:
            diff = {k: [before[k], v] for k, v in entry_snapshot(entry).items() if before[k] != v}
            if diff:
                audit_entries(entries=[entry], action=AuditAction.UPDATE, actor=actor, changes=diff)
    return entry


def golden_entry_update(*, entry: GoldenEntry, changes: dict[str, Any], actor: str) -> GoldenEntry:
    """Apply a partial update of the audited fields, validated like an add."""
    unknown = set(changes) - set(AUDITED_FIELDS)
    if unknown:
        raise ValueError(f"not editable: {sorted(unknown)}")
    for name, value in changes.items():
        setattr(entry, name, value)
    return golden_entry_save(entry=entry, actor=actor)


def golden_entries_mark_reviewed(*, entries: Iterable[GoldenEntry], reviewed: bool, actor: str) -> int:
    with transaction.atomic():
        changed = [e for e in entries if e.reviewed != reviewed]
        GoldenEntry.objects.filter(pk__in=[e.pk for e in changed]).update(
            reviewed=reviewed, updated_at=timezone.now()
        )
        for e in changed:
            e.reviewed = reviewed
        audit_entries(
            entries=changed,
            action=AuditAction.UPDATE,
            actor=actor,
            changes={"reviewed": [not reviewed, reviewed]},
        )
    return len(changed)


def golden_entries_delete(*, entries: Iterable[GoldenEntry], actor: str) -> int:
    entries = list(entries)
    with transaction.atomic():
        audit_entries(entries=entries, action=AuditAction.DELETE, actor=actor)
        GoldenEntry.objects.filter(pk__in=[e.pk for e in entries]).delete()
    return len(entries)
