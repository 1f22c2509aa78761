"""Golden entries: validated adds, edits and deletes, each one audited."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from evalsite.audit.models import AuditAction, AuditEvent
from evalsite.errors import EvalsiteError
from evalsite.jobs.models import Job
from goldenset.formats import Problems
from goldenset.models import Collection, GoldenEntry, Origin
from goldenset.services.audit import AUDITED_FIELDS, _audit, audit_entries, entry_snapshot
from goldenset.services.content import lock_collection
from goldenset.services.drift import remember
from goldenset.services.rejections import remember_rejections
from goldenset.services.scales import scale_checked
from goldenset.text import (
    expected_documents_problem,
    grades_problem,
    id_parts,
    joined_ids_hint,
    key_problem,
    normalize_question,
    question_hash,
    question_problem,
    reference_answer_problem,
    stray_grades,
    tag_problem,
    tags_problem,
)
from goldenset.vocabulary import golden_fields
from goldenset.vocabulary.chunks import CHUNK, chunks

# --- golden entries ----------------------------------------------------------------------------------------


@dataclass
class EntryInput:
    question: str
    expected_document_ids: list[str] = field(default_factory=list)
    reference_answer: str = ""
    key: str = ""
    tags: list[str] = field(default_factory=list)
    answerable: bool = True
    # None (imports of golden.json, which has no grades): keep the replaced entry's grades.
    grades: dict[str, int] | None = field(default_factory=dict)

    @classmethod
    def of(cls, entry: GoldenEntry) -> EntryInput:
        return cls(**{name: getattr(entry, name) for name in ENTRY_INPUT_FIELDS})


ENTRY_INPUT_FIELDS = golden_fields.ENTRY_INPUT_FIELDS


def _check_entries(
    *,
    collection: Collection,
    entries: Sequence[EntryInput],
    upsert_by_key: bool,
    match_questions: bool = False,
    replacing: GoldenEntry | None = None,
    replacing_had: Sequence[str] = (),
) -> list[GoldenEntry | None]:
    """Validate a batch against itself and the collection; errors name the entry's index.

    Returns, for each input, the existing entry it replaces (None: it is new). With upsert_by_key an input
    whose key exists replaces that entry (imports); with match_questions an input no key matched replaces the
    entry that has its question (which keeps its own key), so an exported golden set imports back into its
    collection and a file written elsewhere with keys of its own updates the entries it asks again; `replacing` is
    the one entry a single-entry update rewrites, `replacing_had` the expected ids it has in the database.

    An expected document must exist, unless the entry it replaces already expected it: documents deleted
    since stay (evaluation reports them as a warning) instead of making the entry uneditable.
    """
    if not entries:
        raise EvalsiteError(
            "validation-error", "entries: at least one entry is required.", details={"field": "entries"}
        )
    hashes = [question_hash(e.question) for e in entries]
    by_key, by_hash = _existing(collection, entries, hashes)
    targets: list[GoldenEntry | None] = []
    targeted: dict[str, int] = {}  # existing entry id -> the input that replaces it
    seen_hashes: dict[str, int] = {}
    seen_keys: dict[str, int] = {}
    problems = Problems(EvalsiteError, code=None)  # every entry's problem, of every kind, at once
    failed: set[int] = set()  # inputs with a problem already: their documents are not looked at
    for index, (entry, digest) in enumerate(zip(entries, hashes, strict=True)):
        targets.append(None)
        failed.add(index)
        with problems.row():
            own = _check_entry(collection, index, entry, digest, by_key, by_hash, seen_keys, seen_hashes,
                               match_questions=match_questions, upsert_by_key=upsert_by_key,
                               replacing=replacing)  # fmt: skip
            if own is not None and own is not replacing:
                first = targeted.setdefault(str(own.pk), index)
                if first != index:  # one by its key, the other by its question
                    raise EvalsiteError(
                        "duplicate-question",
                        f"entries[{index}]: replaces the same entry as entries[{first}] (entry {own.pk}).",
                        details={"index": index, "first_index": first, "existing_entry_id": str(own.pk)},
                        status=409,
                    )
            targets[-1] = own if own is not replacing else None
            failed.discard(index)
    _check_documents(collection, entries, targets, replacing, replacing_had, problems, failed)
    problems.check()
    return targets


def _check_entry(collection, index, entry, digest, by_key, by_hash, seen_keys, seen_hashes, *,
                 match_questions, upsert_by_key, replacing) -> GoldenEntry | None:  # fmt: skip
    """One input's checks (its fields, key, question and grades); the entry it replaces."""
    if not normalize_question(entry.question):
        raise EvalsiteError(
            "empty-question",
            f"entries[{index}].question: the question is empty.",
            details={"index": index, "field": "question"},
        )
    _check_fields(index, entry)
    own = replacing
    if entry.key:
        own = _by_key(collection, index, entry, by_key, seen_keys, upsert_by_key, replacing)
    if digest in seen_hashes:
        raise EvalsiteError(
            "duplicate-question",
            f"entries[{index}]: the question repeats entries[{seen_hashes[digest]}].",
            details={"index": index, "first_index": seen_hashes[digest], "question": entry.question},
            status=409,
        )
    seen_hashes[digest] = index
    own = _by_question(collection, index, entry, by_hash.get(digest), own, match_questions)
    _check_grades(index, entry)
    return own


def _existing(collection: Collection, entries: Sequence[EntryInput], hashes: Sequence[str]):
    """The collection's entries that have one of the batch's keys, and those that have one of its questions."""
    keys = [e.key for e in entries if e.key]
    by_key: dict[str, GoldenEntry] = {}
    for chunk in chunks(keys):
        by_key.update({g.key: g for g in collection.golden_entries.filter(key__in=chunk)})
    by_hash: dict[str, GoldenEntry] = {}
    for chunk in chunks(list(hashes)):
        by_hash.update(
            (g.question_hash, g) for g in collection.golden_entries.filter(question_hash__in=chunk)
        )
    return by_key, by_hash


def _by_key(collection, index, entry, by_key, seen_keys, upsert_by_key, replacing) -> GoldenEntry | None:
    """The entry an input's key replaces (with upsert_by_key), else `replacing`; a key repeated in the batch, or
    held by another entry, is a 409."""
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
        return holder
    if holder is not None and (replacing is None or holder.pk != replacing.pk):
        raise EvalsiteError(
            "duplicate-key",
            f"entries[{index}]: key {entry.key!r} already exists in collection {collection.slug}.",
            details={"index": index, "key": entry.key, "existing_entry_id": str(holder.pk)},
            status=409,
        )
    return replacing


def _by_question(collection, index, entry, same_question, own, match_questions) -> GoldenEntry | None:
    """The entry an input replaces once its question is looked at: with match_questions (imports), an input
    that no key matched (a keyless one, or one whose key no entry holds) takes the entry that has its question,
    which keeps its own key; an input whose question another entry has is a 409."""
    if same_question is not None and own is None and match_questions:
        own = same_question
    if same_question is not None and (own is None or own.pk != same_question.pk):
        raise EvalsiteError(
            "duplicate-question",
            f"entries[{index}]: the question already exists in collection {collection.slug} "
            f"(entry {same_question.pk}).",
            details={
                "index": index,
                "question": entry.question,
                "existing_entry_id": str(same_question.pk),
            },
            status=409,
        )
    return own


def _check_grades(index: int, entry: EntryInput) -> None:
    if entry.grades is None or not (problem := grades_problem(entry.grades, entry.expected_document_ids)):
        return
    details: dict[str, Any] = {"index": index, "field": "grades"}
    if isinstance(entry.grades, dict) and (stray := stray_grades(entry.grades, entry.expected_document_ids)):
        details["document_ids"] = sorted(stray)
    raise EvalsiteError("validation-error", f"entries[{index}].grades: {problem}.", details=details)


def _check_documents(
    collection, entries, targets, replacing, replacing_had, problems: Problems, failed
) -> None:
    """Every expected document exists, unless the entry replaced already expected it."""
    referenced = {d for e in entries for d in e.expected_document_ids}
    known = _known_documents(collection, referenced)
    # The parts of ids that may be several joined by a wrong separator ("p1;p2"), to say so.
    parts = {p for d in referenced - known for _, split in id_parts(d) for p in split}
    known_parts = _known_documents(collection, parts - referenced) | (parts & known)
    for index, (entry, target) in enumerate(zip(entries, targets, strict=True)):
        had = set(replacing_had if replacing is not None else target.expected_document_ids if target else ())
        unknown = [d for d in entry.expected_document_ids if d not in known and d not in had]
        if unknown and index not in failed:
            hints = [hint for d in unknown[:5] if (hint := joined_ids_hint(d, known_parts))]
            with problems.row():
                raise EvalsiteError(
                    "unknown-documents",
                    f"entries[{index}].expected_document_ids: {len(unknown)} unknown in collection "
                    f"{collection.slug}: " + ", ".join(unknown[:5]) + "".join(f"; {h}" for h in hints[:1]),
                    details={
                        "index": index,
                        "field": "expected_document_ids",
                        "unknown_document_ids": unknown,
                    },
                )


def _known_documents(collection, ids: set[str]) -> set[str]:
    known: set[str] = set()
    for chunk in chunks(sorted(ids)):
        known.update(collection.documents.filter(external_id__in=chunk).values_list("external_id", flat=True))
    return known


def _check_fields(index: int, entry: EntryInput) -> None:
    """The rules for keys and tags and the sizes of an entry, for every writer, on every database (the
    API's serializers and the file readers report them first)."""
    problems = [
        ("question", question_problem(entry.question)),
        ("reference_answer", reference_answer_problem(entry.reference_answer)),
        ("expected_document_ids", expected_documents_problem(entry.expected_document_ids)),
        ("tags", tags_problem(entry.tags)),
    ]
    problems += [("key", key_problem(entry.key))] if entry.key else []
    problems += [(f"tags[{i}]", tag_problem(tag)) for i, tag in enumerate(entry.tags)]
    for name, problem in problems:
        if problem:
            raise EvalsiteError(
                "validation-error",
                f"entries[{index}].{name}: {problem}.",
                details={"index": index, "field": name.split("[")[0]},
            )


def golden_entries_add(
    *,
    collection: Collection,
    entries: Sequence[EntryInput],
    actor: str,
    origin: str = Origin.MANUAL,
    upsert_by_key: bool = False,
    match_questions: bool = False,
    source_page_id: int | None = None,
    job: Job | None = None,
    reviewed: bool = False,
) -> tuple[list[GoldenEntry], list[GoldenEntry]]:
    """Add entries atomically: all of them or none. Returns (created, updated).

    With upsert_by_key (imports), an entry whose key already exists replaces that entry's content; with
    match_questions, so does an entry no key matched whose question exists (the entry keeps its own key). An input without grades (None)
    keeps the replaced entry's grades of the documents it still expects. Generation records the page and the
    job an entry came from (source_page_id, job). `reviewed` marks the entries it creates reviewed (a
    curator's "add and mark reviewed": one transaction, one create event that says so).
    """
    with transaction.atomic():
        lock_collection(collection)
        targets = _check_entries(
            collection=collection,
            entries=entries,
            upsert_by_key=upsert_by_key,
            match_questions=match_questions,
        )
        # Imports set an unjudged collection's scale from their grades; every writer's grades are on it.
        scale_checked(collection, entries, set_from_data=origin == Origin.IMPORTED, actor=actor)
        created: list[GoldenEntry] = []
        updated: list[GoldenEntry] = []
        update_events: list[AuditEvent] = []
        looked_at: list[GoldenEntry] = []  # what they expect changed: they remember their documents again
        for entry, current in zip(entries, targets, strict=True):
            values = _written_values(entry, current)
            expected = values["expected_document_ids"]
            if current is None:
                obj = GoldenEntry(
                    collection=collection,
                    key=entry.key,
                    origin=origin,
                    source_page_id=source_page_id,
                    job=job,
                    reviewed=reviewed,
                    **values,
                )
                obj.prepare()
                created.append(obj)
                continue
            before = entry_snapshot(current)
            if list(current.expected_document_ids) != expected:
                looked_at.append(current)
            for name, value in values.items():
                setattr(current, name, value)
            current.prepare()
            current.updated_at = timezone.now()
            changes = {k: [before[k], v] for k, v in entry_snapshot(current).items() if before[k] != v}
            if changes:
                updated.append(current)
                update_events.append(_audit(current, AuditAction.UPDATE, actor, changes))
        remember(collection, [*created, *looked_at])
        GoldenEntry.objects.bulk_create(created, batch_size=CHUNK)
        if updated:
            GoldenEntry.objects.bulk_update(
                updated,
                [*_WRITTEN_FIELDS, "question_hash", "tags_index", "updated_at", *_REMEMBERED],
                batch_size=CHUNK,
            )
        audit_entries(entries=created, action=AuditAction.CREATE, actor=actor)
        AuditEvent.objects.bulk_create(update_events, batch_size=CHUNK)
    return created, updated


_WRITTEN_FIELDS = golden_fields.WRITTEN_FIELDS


def _written_values(entry: EntryInput, current: GoldenEntry | None) -> dict[str, Any]:
    """The fields an add writes from an input; an input without grades (None) keeps those of the documents the
    replaced entry still expects, and those judged not relevant (0)."""
    expected = list(dict.fromkeys(entry.expected_document_ids))
    if entry.grades is not None:
        grades = {k: int(v) for k, v in entry.grades.items()}
    else:
        kept = current.grades if current is not None else {}
        grades = {k: v for k, v in kept.items() if k in expected or v == 0}
    return {
        "question": entry.question.strip(),
        "expected_document_ids": expected,
        "grades": grades,
        "reference_answer": entry.reference_answer,
        "tags": list(dict.fromkeys(entry.tags)),
        "answerable": entry.answerable,
    }


_REMEMBERED = ("reviewed_hashes", "reviewed_at")  # goldenset.services.drift.remember


def golden_entry_check(*, entry: GoldenEntry) -> None:
    """Validate one entry, new or edited in place, exactly as an add would (raises EvalsiteError).

    An edit may keep expected documents that were deleted since; only ids it adds must exist.
    """
    stored: Sequence[str] = ()
    if not entry._state.adding:
        stored = (
            GoldenEntry.objects.filter(pk=entry.pk).values_list("expected_document_ids", flat=True).first()
            or ()
        )
    _check_entries(
        collection=entry.collection,
        entries=[EntryInput.of(entry)],
        upsert_by_key=False,
        replacing=None if entry._state.adding else entry,
        replacing_had=stored,
    )
    scale_checked(entry.collection, [EntryInput.of(entry)], set_from_data=False, actor="")


def golden_entry_save(*, entry: GoldenEntry, actor: str) -> GoldenEntry:
    """Validate and save one entry, new or edited in place (API and admin alike); audit what changed."""
    with transaction.atomic():
        lock_collection(entry.collection)
        adding = entry._state.adding
        before = None if adding else entry_snapshot(GoldenEntry.objects.get(pk=entry.pk))
        golden_entry_check(entry=entry)
        if before is None or list(before["expected_document_ids"]) != list(entry.expected_document_ids):
            remember(entry.collection, [entry])
        entry.save()
        if before is None:
            audit_entries(entries=[entry], action=AuditAction.CREATE, actor=actor)
        else:
            diff = {k: [before[k], v] for k, v in entry_snapshot(entry).items() if before[k] != v}
            if diff:
                audit_entries(entries=[entry], action=AuditAction.UPDATE, actor=actor, changes=diff)
    return entry


def golden_entry_update(*, entry: GoldenEntry, changes: dict[str, Any], actor: str) -> GoldenEntry:
    """Apply a partial update of the audited fields, validated like an add: fields not in changes keep
    their values."""
    unknown = set(changes) - set(AUDITED_FIELDS)
    if unknown:
        raise ValueError(f"not editable: {sorted(unknown)}")
    for name, value in changes.items():
        setattr(entry, name, value)
    return golden_entry_save(entry=entry, actor=actor)


def golden_entries_mark_reviewed(*, entries: Iterable[GoldenEntry], reviewed: bool, actor: str) -> int:
    """Mark entries reviewed (or not); returns how many changed. Marked reviewed, every entry given remembers
    its expected documents as they are now (goldenset.services.drift), one already reviewed too: a curator
    reviewing a drifted entry again clears its `changed`; that re-review is audited when what it remembers
    changed."""
    entries = list(entries)
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
        if reviewed:
            newly = {e.pk for e in changed}
            _remember_reviewed(entries, [e for e in entries if e.pk not in newly], actor)
    return len(changed)


def _remember_reviewed(entries: list[GoldenEntry], again: list[GoldenEntry], actor: str) -> None:
    """The entries marked reviewed remember their documents now; those reviewed before whose remembered
    hashes changed (a drifted entry reviewed again) are audited as such."""
    by_collection: dict[int, list[GoldenEntry]] = {}
    for entry in entries:
        by_collection.setdefault(entry.collection_id, []).append(entry)
    before = {e.pk: dict(e.reviewed_hashes or {}) for e in again}
    for group in by_collection.values():
        remember(group[0].collection, group)
    GoldenEntry.objects.bulk_update(entries, list(_REMEMBERED), batch_size=CHUNK)
    for entry in again:
        if before[entry.pk] != entry.reviewed_hashes:
            again_ids = sorted(set(before[entry.pk]) | set(entry.reviewed_hashes))
            changes = {"reviewed_again": ", ".join(again_ids)}
            audit_entries(entries=[entry], action=AuditAction.UPDATE, actor=actor, changes=changes)


def golden_entries_delete(*, entries: Iterable[GoldenEntry], actor: str) -> int:
    """Delete entries, audited. Deleting a generated entry nobody marked reviewed rejects its question: generation
    never writes it into the collection again (goldenset.services.rejections)."""
    entries = list(entries)
    with transaction.atomic():
        audit_entries(entries=entries, action=AuditAction.DELETE, actor=actor)
        remember_rejections(entries=entries, actor=actor)
        GoldenEntry.objects.filter(pk__in=[e.pk for e in entries]).delete()
    return len(entries)
