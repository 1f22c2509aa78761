"""Rejected generated questions, remembered per collection so that generation never writes them again.

The rule: deleting a generated entry that nobody marked reviewed is a rejection, whichever door it goes through
(the review queue's reject, the golden set page's delete, the API's DELETE, the admin); `golden_entries_delete`
calls `remember_rejections` in its transaction. Deleting a reviewed entry, or a manual or imported one, is not:
a curator accepted it once (or wrote it), so its removal says nothing against the question. Deleting a
collection deletes its memory with it.

What is remembered is the question's normalised form (goldenset.text.question_hash, the one duplicate detection
uses): the question as it was deleted and, when an edit changed it, the question as generated (read from the
entry's create event), since that is what the writer would write again. One or two rows per rejected entry, so
the table grows no faster than a tenant can create entries. Deleting a row (the admin) un-rejects a question.
"""

from __future__ import annotations

from collections.abc import Sequence

from evalsite.audit.models import AuditAction, AuditEvent
from goldenset.models import Collection, GoldenAuditObject, GoldenEntry, Origin, RejectedQuestion
from goldenset.text import question_hash
from goldenset.vocabulary.chunks import CHUNK, chunks


def is_rejection(entry: GoldenEntry) -> bool:
    """Whether deleting this entry rejects its question (the module's rule)."""
    return entry.origin == Origin.GENERATED and not entry.reviewed


def _generated_questions(entries: Sequence[GoldenEntry]) -> dict[str, str]:
    """Entry id -> the question its create event recorded (what the writer wrote, before any edit)."""
    found: dict[str, str] = {}
    for chunk in chunks([str(e.pk) for e in entries]):
        events = AuditEvent.objects.filter(
            object_type=GoldenAuditObject.GOLDEN_ENTRY, action=AuditAction.CREATE, object_id__in=chunk
        ).values_list("object_id", "changes")
        for object_id, changes in events:
            question = changes.get("question") if isinstance(changes, dict) else None
            if isinstance(question, str):
                found[object_id] = question
    return found


def remember_rejections(*, entries: Sequence[GoldenEntry], actor: str) -> int:
    """Remember the questions of the entries whose delete is a rejection (call it inside the delete's
    transaction, before the rows go). Returns how many entries were rejections."""
    rejected = [e for e in entries if is_rejection(e)]
    if not rejected:
        return 0
    generated = _generated_questions(rejected)
    rows: dict[tuple[int, str], RejectedQuestion] = {}
    for entry in rejected:
        for question in (entry.question, generated.get(str(entry.pk), "")):
            digest = question_hash(question)
            if question.strip() and (entry.collection_id, digest) not in rows:
                rows[(entry.collection_id, digest)] = RejectedQuestion(
                    collection_id=entry.collection_id,
                    question=question.strip(),
                    question_hash=digest,
                    source_page_id=entry.source_page_id,
                    rejected_by=actor,
                )
    # A question rejected before keeps its first row (who rejected it first, and when).
    RejectedQuestion.objects.bulk_create(list(rows.values()), batch_size=CHUNK, ignore_conflicts=True)
    return len(rejected)


def rejected_hashes(*, collection: Collection) -> frozenset[str]:
    """The normalised forms (question_hash) of the collection's rejected questions, for generation to skip."""
    return frozenset(
        RejectedQuestion.objects.filter(collection=collection).values_list("question_hash", flat=True)
    )
