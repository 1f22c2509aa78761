"""Grading where one looks: a person's grade of a document shown for a golden question, stored in the judgment
store pools use (evaluation.judgments.pools.judgments_record, audited, the rater the person), and taken back;
a question's people's grades applied to its golden entry by a curator; a query typed in added to the golden set
with the documents just judged."""

from __future__ import annotations

from collections.abc import Mapping

from django.db import transaction

from evalsite.audit.models import AuditAction
from evalsite.audit.services import audit_record
from evalsite.errors import EvalsiteError
from evaluation.judgments import pools
from evaluation.models import EvaluationAuditObject, RelevanceJudgment
from evaluation.workbench.question import pending_grades
from goldenset.models import Collection, GoldenEntry
from goldenset.services import EntryInput, golden_entries_add, golden_entry_update
from goldenset.services.scales import collection_scale

NOT_JUDGED = "none"  # an undo step's previous grade when the person had not judged the document before


def grade_error(collection: Collection, grade: object, field: str = "grade") -> EvalsiteError | None:
    """Why `grade` is no grade of the collection's scale (goldenset.services.scales.collection_scale), or None."""
    scale = collection_scale(collection)
    if grade not in scale:
        return EvalsiteError(
            "validation-error",
            f"{field}: {grade!r} is not a grade of the collection's {scale.name} scale: one of "
            f"{', '.join(map(str, scale.grades))}.",
            details={"field": field},
        )
    return None


def grade_record(
    *, collection: Collection, entry: GoldenEntry, document_id: str, grade: int, rater: str, actor: str
) -> int | str | None:
    """The person's grade stored; returns what it replaced (their earlier grade, None for "cannot judge", or
    NOT_JUDGED), which is what an undo restores."""
    if (error := grade_error(collection, grade)) is not None:
        raise error
    if not document_id or len(document_id) > 300:
        raise EvalsiteError(
            "validation-error", "document_id: expected a document's id.", details={"field": "document_id"}
        )
    before = RelevanceJudgment.objects.filter(entry=entry, document_id=document_id, rater=rater).first()
    row = pools.JudgmentRow("judgment", str(entry.pk), document_id, grade, rater, "")
    pools.judgments_record(collection=collection, rows=[row], actor=actor)
    return NOT_JUDGED if before is None else before.grade


def grade_undo(
    *, collection: Collection, entry: GoldenEntry, document_id: str, rater: str, previous, actor: str
) -> None:
    """The person's judgment set back to what it was before their last grade (removed when there was none)."""
    if previous == NOT_JUDGED:
        with transaction.atomic():
            found = RelevanceJudgment.objects.filter(
                entry=entry, document_id=document_id, rater=rater
            ).first()
            if found is None:
                return
            audit_record(
                tenant=collection.tenant_id, action=AuditAction.DELETE, object_type=EvaluationAuditObject.JUDGMENT,
                object_id=found.pk, actor=actor, collection=collection,
                changes={"question_id": str(entry.pk), "document_id": document_id, "rater": rater,
                         "grade": [found.grade, None]},
            )  # fmt: skip
            found.delete()
        return
    row = pools.JudgmentRow("judgment", str(entry.pk), document_id, previous, rater, "")
    pools.judgments_record(collection=collection, rows=[row], actor=actor)


def question_apply(*, entry: GoldenEntry, actor: str) -> int:
    """People's grades of documents the entry has not judged, written into it (a grade above 0 expected with that
    grade, 0 judged not relevant), audited as an edit of the entry; returns how many were written."""
    qrels = entry.qrels()
    pending = pending_grades(entry, qrels)
    if not pending:
        return 0
    expected = list(entry.expected_document_ids)
    grades = dict(entry.grades or {})
    for document_id, grade in sorted(pending.items()):
        if grade > 0:
            expected.append(document_id)
        grades[document_id] = grade
    golden_entry_update(
        entry=entry, changes={"expected_document_ids": expected, "grades": grades}, actor=actor
    )
    return len(pending)


def query_add(
    *, collection: Collection, question: str, grades: Mapping[str, int], rater: str, actor: str
) -> GoldenEntry:
    """A query typed in, added to the golden set with the documents just judged (expected: those graded above 0),
    and those grades stored as the person's judgments, in one transaction."""
    for document_id, grade in grades.items():
        if (error := grade_error(collection, grade, f"grades[{document_id!r}]")) is not None:
            raise error
    if not any(grade > 0 for grade in grades.values()):
        raise EvalsiteError(
            "validation-error",
            "grades: grade at least one document above 0 first: a golden question expects a document.",
            details={"field": "grades"},
        )
    with transaction.atomic():
        (entry,), _ = golden_entries_add(
            collection=collection,
            entries=[
                EntryInput(
                    question=question,
                    expected_document_ids=[d for d, g in grades.items() if g > 0],
                    grades=dict(grades),
                )
            ],
            actor=actor,
        )
        rows = [pools.JudgmentRow("judgment", str(entry.pk), d, g, rater, "") for d, g in grades.items()]
        pools.judgments_record(collection=collection, rows=rows, actor=actor)
    return entry
