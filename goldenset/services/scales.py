"""A collection's grade scale (goldenset.vocabulary.grade_scales): set from the first graded import, held by
every later write of grades, and changed by a curator with every stored grade converted.

- An import into a collection whose golden set judges no document yet sets the scale from the file's grades:
  all 0/1 (or unstated: an expected document is 1) makes it binary, grades up to 2, 3 or 4 that scale.
- Otherwise grades written into the golden set must be grades of the collection's scale: an entry holding
  another is refused with a 400 naming the entry (the importers name its line or record) and the scale.
- `scale_change` converts every entry's grades (grade_scales.converted) and sets the new scale, in one
  transaction under the collection's lock, each entry changed audited and the collection's change too;
  `scale_change_preview` says first how many grades and entries it changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from evalsite.audit.models import AuditAction, AuditEvent
from evalsite.errors import EvalsiteError
from goldenset.models import Collection, GoldenEntry
from goldenset.services.audit import _audit, entry_snapshot
from goldenset.services.content import _audit_collection, lock_collection
from goldenset.text import DEFAULT_GRADE
from goldenset.vocabulary.chunks import CHUNK
from goldenset.vocabulary.grade_scales import Scale, converted, scale_for_grades, scale_named


def collection_scale(collection: Collection) -> Scale:
    """The collection's scale (the default's for a value no scale has, which the field's choices refuse)."""
    try:
        return scale_named(collection.grade_scale)
    except ValueError:
        return scale_named(Collection._meta.get_field("grade_scale").default)


def entry_grades(expected: Iterable[str], grades: dict | None) -> dict[str, int]:
    """An entry's qrels from its fields: each expected document's grade (1 unless graded) and every 0."""
    grades = grades or {}
    found = {d: int(grades.get(d, DEFAULT_GRADE)) for d in expected}
    for document_id, grade in grades.items():
        found.setdefault(document_id, grade)
    return found


def has_grades(collection: Collection) -> bool:
    """Whether the collection's golden set judges any document (expected, or judged not relevant)."""
    return collection.golden_entries.exclude(expected_document_ids=[], grades={}).exists()


def scale_checked(collection: Collection, entries: Sequence[Any], *, set_from_data: bool, actor: str) -> None:
    """Hold the entries' grades (EntryInput: expected_document_ids, grades or None) to the collection's scale,
    first setting the scale from them when `set_from_data` (an import) and the golden set judges nothing yet.
    Called under the collection's lock, in the writer's transaction: a refused import sets nothing."""
    qrels = [
        entry_grades(e.expected_document_ids, e.grades) if e.grades is not None else {}
        for e in entries
    ]  # fmt: skip
    given = {g for judged in qrels for g in judged.values()}
    if set_from_data and given and not has_grades(collection):
        try:
            found = scale_for_grades(given).name
        except ValueError:
            found = None  # the check below names the entry whose grade no scale holds
        if found is not None and found != collection.grade_scale:
            before = collection.grade_scale
            collection.grade_scale = found
            Collection.objects.filter(pk=collection.pk).update(grade_scale=found)
            _audit_collection(
                collection, AuditAction.UPDATE, actor,
                {"grade_scale": [before, found], "reason": "set from the first graded import"},
            )  # fmt: skip
    scale = collection_scale(collection)
    for index, judged in enumerate(qrels):
        off = sorted((d for d, g in judged.items() if not isinstance(g, int) or g not in scale), key=str)
        if off:
            raise EvalsiteError(
                "validation-error",
                f"entries[{index}].grades: {off[0]} has grade {judged[off[0]]!r}, not a grade of collection "
                f"{collection.slug}'s {scale.name} scale ({', '.join(map(str, scale.grades))}); an expected "
                "document without a grade is 1. Change the collection's scale first (its grades are converted), "
                "or grade on its scale.",
                details={"index": index, "field": "grades", "grade_scale": scale.name, "document_ids": off},
            )


@dataclass(frozen=True)
class ScaleChange:
    source: str
    target: str
    entries: int  # entries whose grades change
    grades: int  # grades that change value (an expected document turned 0 included)
    unchanged: int  # grades that keep their value
    by_grade: dict[str, int]  # "3->1" -> how many


def _converted_entry(entry: GoldenEntry, source: Scale, target: Scale) -> tuple[dict, dict[str, tuple]]:
    """The entry's {expected_document_ids, grades} on the target scale, and each changed grade (before, after).
    A document whose grade becomes 0 is no longer expected: it is judged not relevant."""
    judged = entry.qrels()
    after: dict[str, int] = {}
    moved: dict[str, tuple] = {}
    for document_id, grade in judged.items():
        try:
            after[document_id] = converted(int(grade), source, target)
        except ValueError:
            raise EvalsiteError(
                "validation-error",
                f"grade_scale: entry {entry.key or entry.pk} grades {document_id} {grade}, which is not on the "
                f"{source.name} scale: correct it before changing the scale.",
                details={"field": "grade_scale", "entry_id": str(entry.pk)},
            ) from None
        if after[document_id] != grade:
            moved[document_id] = (grade, after[document_id])
    expected = [d for d in entry.expected_document_ids if after.get(d, DEFAULT_GRADE) > 0]
    grades = {d: g for d, g in after.items() if d in expected or g == 0}
    return {"expected_document_ids": expected, "grades": grades}, moved


def _plan(collection: Collection, target_name: str) -> tuple[Scale, Scale, list, ScaleChange]:
    try:
        target = scale_named(target_name)
    except ValueError as exc:
        raise EvalsiteError(
            "validation-error", f"grade_scale: {exc}.", details={"field": "grade_scale"}
        ) from None
    source = collection_scale(collection)
    changed: list[tuple[GoldenEntry, dict]] = []
    counted: dict[str, int] = {}
    unchanged = 0
    for entry in collection.golden_entries.exclude(expected_document_ids=[], grades={}).iterator(CHUNK):
        entry.collection = collection  # its audit event names it: not read again per entry
        state, moved = _converted_entry(entry, source, target)
        unchanged += len(entry.qrels()) - len(moved)
        for before, after in moved.values():
            counted[f"{before}->{after}"] = counted.get(f"{before}->{after}", 0) + 1
        if moved:
            changed.append((entry, state))
    summary = ScaleChange(
        source.name,
        target.name,
        len(changed),
        sum(counted.values()),
        unchanged,
        dict(sorted(counted.items())),
    )
    return source, target, changed, summary


def scale_change_preview(*, collection: Collection, grade_scale: str) -> ScaleChange:
    """What changing the collection's scale to `grade_scale` would do to its stored grades; nothing written."""
    return _plan(collection, grade_scale)[3]


def scale_change(*, collection: Collection, grade_scale: str, actor: str) -> ScaleChange:
    """Set the collection's scale, every stored grade converted to it, in one audited transaction."""
    with transaction.atomic():
        lock_collection(collection)
        collection.refresh_from_db(fields=["grade_scale"])
        source, target, changed, summary = _plan(collection, grade_scale)
        if source.name == target.name:
            return summary
        now = timezone.now()
        events = []
        for entry, state in changed:
            before = entry_snapshot(entry)
            entry.expected_document_ids, entry.grades, entry.updated_at = (
                state["expected_document_ids"], state["grades"], now
            )  # fmt: skip
            entry.prepare()
            diff = {k: [before[k], v] for k, v in entry_snapshot(entry).items() if before[k] != v}
            events.append(
                _audit(entry, AuditAction.UPDATE, actor, {**diff, "grade_scale": [source.name, target.name]})
            )
        GoldenEntry.objects.bulk_update(
            [e for e, _ in changed], ["expected_document_ids", "grades", "updated_at"], batch_size=CHUNK
        )
        AuditEvent.objects.bulk_create(events, batch_size=CHUNK)
        collection.grade_scale = target.name
        Collection.objects.filter(pk=collection.pk).update(grade_scale=target.name, updated_at=now)
        _audit_collection(
            collection, AuditAction.UPDATE, actor,
            {"grade_scale": [source.name, target.name], "entries": summary.entries, "grades": summary.grades},
        )  # fmt: skip
    return summary
