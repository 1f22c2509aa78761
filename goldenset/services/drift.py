"""Drift of golden entries: what their expected documents look like now against what the entries remember
(goldenset.drift decides why an entry drifted; this reads the collection, a chunk at a time).

`remember` is how an entry remembers: the writers of entries call it when an entry is created, when what it
expects changes, and when it is marked reviewed (goldenset.services.golden). `drifted_entries` and
`drift_count` are what a page, the API or a schedule's alert read.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.utils import timezone

from goldenset.drift import Reason, document_hash, entry_reasons
from goldenset.models import Collection, Document, GoldenEntry, Page
from goldenset.temporal import EXPIRED, SUPERSEDED, Validity, statuses
from goldenset.vocabulary.chunks import CHUNK, chunks

ENTRY_CHUNK = 2000  # entries read and decided at a time: what bounds a drift listing's memory


def document_hashes(collection: Collection, external_ids: Iterable[str]) -> dict[str, str]:
    """The hash (goldenset.drift.document_hash) of each of these documents still in the collection, by id;
    a document no longer there is absent."""
    out: dict[str, str] = {}
    for chunk in chunks(sorted(set(external_ids))):
        documents = dict(
            Document.objects.filter(collection=collection, external_id__in=chunk).values_list(
                "pk", "external_id"
            )
        )
        pages: dict[int, list[str]] = defaultdict(list)
        for pks in chunks(list(documents)):
            rows = (
                Page.objects.filter(document_id__in=pks)
                .order_by("document_id", "number")
                .values_list("document_id", "content_hash")
            )
            for document_id, content_hash in rows:
                pages[document_id].append(content_hash)
        out.update((external_id, document_hash(pages[pk])) for pk, external_id in documents.items())
    return out


def remember(collection: Collection, entries: Sequence[GoldenEntry], *, at: datetime | None = None) -> None:
    """Set each entry's reviewed_hashes (its expected documents as they are now) and reviewed_at, in memory:
    the caller saves them."""
    hashes = document_hashes(collection, {d for e in entries for d in e.expected_document_ids or ()})
    at = at or timezone.now()
    for entry in entries:
        entry.reviewed_hashes = {d: hashes[d] for d in entry.expected_document_ids or () if d in hashes}
        entry.reviewed_at = at


def successors_of(collection: Collection) -> list[Validity]:
    """The collection's documents that supersede others (few, in practice): what may end another's validity."""
    return [
        Validity(i, start, end, tuple(names or ()))
        for i, start, end, names in Document.objects.filter(collection=collection)
        .exclude(supersedes=[])
        .values_list("external_id", "valid_from", "valid_until", "supersedes")
        .iterator(chunk_size=CHUNK)
    ]


def ended_documents(
    collection: Collection,
    external_ids: Iterable[str],
    at: datetime,
    successors: Sequence[Validity] | None = None,
) -> set[str]:
    """Those of these documents whose validity ended at `at`: expired, or superseded by a document in force
    (`successors`: successors_of(collection), read here when not given)."""
    if successors is None:
        successors = successors_of(collection)
    ended: set[str] = set()
    for chunk in chunks(sorted(set(external_ids))):
        documents = [
            Validity(i, start, end, tuple(names or ()))
            for i, start, end, names in Document.objects.filter(
                collection=collection, external_id__in=chunk
            ).values_list("external_id", "valid_from", "valid_until", "supersedes")
        ]
        found = statuses(documents, at, successors)
        ended.update(
            d.document_id for d, s in zip(documents, found, strict=True) if s in (EXPIRED, SUPERSEDED)
        )
    return ended


@dataclass
class DriftedEntry:
    entry_id: str
    key: str
    question: str
    reasons: list[Reason] = field(default_factory=list)
    reviewed_at: datetime | None = None


def _entry_chunks(collection: Collection) -> Iterator[list[tuple]]:
    rows = (
        GoldenEntry.objects.filter(collection=collection)
        .order_by("created_at", "id")
        .values_list("id", "key", "question", "expected_document_ids", "reviewed_hashes", "reviewed_at")
    )
    chunk: list[tuple] = []
    for row in rows.iterator(chunk_size=ENTRY_CHUNK):
        chunk.append(row)
        if len(chunk) >= ENTRY_CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def drifted_entries(collection: Collection, *, at: datetime | None = None) -> list[DriftedEntry]:
    """The collection's entries that drifted (goldenset.drift), oldest entry first, each with its reasons.

    Entries are read ENTRY_CHUNK at a time and only their expected documents' pages are read (their hashes,
    never their text), each document once however many entries expect it.
    """
    at = at or timezone.now()
    hashes: dict[str, str] = {}
    ended: set[str] = set()
    looked_at: set[str] = set()
    successors = successors_of(collection)
    out: list[DriftedEntry] = []
    for chunk in _entry_chunks(collection):
        wanted = {d for row in chunk for d in row[3] or ()} - looked_at
        hashes.update(document_hashes(collection, wanted))
        ended |= ended_documents(collection, wanted, at, successors)
        looked_at |= wanted
        for entry_id, key, question, expected, remembered, reviewed_at in chunk:
            reasons = entry_reasons(expected or (), remembered or {}, hashes, ended)
            if reasons:
                out.append(DriftedEntry(str(entry_id), key, question, reasons, reviewed_at))
    return out


def drift_count(collection: Collection, *, at: datetime | None = None) -> int:
    """How many of the collection's entries drifted: what a schedule compares with its alert's number."""
    return len(drifted_entries(collection, at=at))
