"""Click logs into relevance judgments (evaluation.judgments.clicks does the reading and the click model): each
log query matched to the golden entry that has its question, each judgment stored as rater clicks:coec beside
people's, all or none, audited, and its agreement with the golden set's own judgments reported."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction

from evalsite.audit.models import AuditAction
from evalsite.audit.services import audit_record
from evaluation.judgments.clicks import (
    CLICKS_RATER,
    COEC_CUTS,
    ClickJudgment,
    Observation,
    coec_judgments,
    grade_counts,
)
from evaluation.judgments.grades import GRADES
from evaluation.judgments.rater_agreement import machine_agreement
from evaluation.models import EvaluationAuditObject, RelevanceJudgment
from goldenset.models import Collection, GoldenEntry
from goldenset.text import question_hash
from goldenset.vocabulary.chunks import chunks

SHOWN_UNMATCHED = 20


def _entries_and_documents(
    collection: Collection, counted
) -> tuple[dict[str, str], dict[str, GoldenEntry], set]:
    """Each judged query's question hash, the collection's entries with those questions, the documents it holds."""
    hashes = {j.query: question_hash(j.query) for j in counted.judgments}
    entries: dict[str, GoldenEntry] = {}
    for chunk in chunks(sorted(set(hashes.values()))):
        entries.update(
            (e.question_hash, e)
            for e in GoldenEntry.objects.filter(collection=collection, question_hash__in=chunk)
        )
    known: set[str] = set()
    for chunk in chunks(sorted({j.document_id for j in counted.judgments})):
        known.update(collection.documents.filter(external_id__in=chunk).values_list("external_id", flat=True))
    return hashes, entries, known


def _row(
    collection: Collection, entry: GoldenEntry, j: ClickJudgment, min_impressions: int
) -> RelevanceJudgment:
    return RelevanceJudgment(
        tenant_id=collection.tenant_id, collection=collection, entry=entry, document_id=j.document_id,
        grade=j.grade, rater=CLICKS_RATER,
        detail={"model": "coec", "coec": round(j.coec, 4), "clicks": j.clicks, "impressions": j.impressions,
                "position": j.position, "expected_ctr": round(j.expected_ctr, 6), "cuts": list(COEC_CUTS),
                "min_impressions": min_impressions},
    )  # fmt: skip


def _store(collection: Collection, rows: list[RelevanceJudgment], actor: str, impressions: int) -> None:
    """The rows, all or none; a new log replaces the click model's judgments of the same pairs (a rater's new
    grade replaces its old), never the others'."""
    with transaction.atomic():
        fresh = {(r.entry.pk, r.document_id) for r in rows}
        existing = RelevanceJudgment.objects.filter(collection=collection, rater=CLICKS_RATER)
        replaced = [
            pk
            for pk, entry_id, doc in existing.values_list("pk", "entry_id", "document_id")
            if (entry_id, doc) in fresh
        ]
        for chunk in chunks(replaced):
            RelevanceJudgment.objects.filter(pk__in=chunk).delete()
        RelevanceJudgment.objects.bulk_create(rows, batch_size=500)
        audit_record(
            tenant=collection.tenant, action=AuditAction.CREATE, object_type=EvaluationAuditObject.JUDGMENT,
            object_id=collection.pk, actor=actor, collection=collection,
            changes={"rater": CLICKS_RATER, "judged": len(rows), "impressions": impressions},
        )  # fmt: skip


def clicks_import(
    *, collection: Collection, observations: Sequence[Observation], min_impressions: int, actor: str,
    skipped: dict[str, int] | None = None,
) -> dict:  # fmt: skip
    """Judge the log's (query, document) pairs by COEC and store those of the collection's golden questions."""
    counted = coec_judgments(observations, min_impressions)
    hashes, entries, known = _entries_and_documents(collection, counted)
    matched = [j for j in counted.judgments if hashes[j.query] in entries and j.document_id in known]
    unmatched = sorted({j.query for j in counted.judgments if hashes[j.query] not in entries})
    rows = [_row(collection, entries[hashes[j.query]], j, min_impressions) for j in matched]
    impressions = sum(o.impressions for o in observations)
    _store(collection, rows, actor, impressions)
    people = [(entries[hashes[j.query]].qrels().get(j.document_id), j.grade) for j in matched]
    agreement = machine_agreement(
        CLICKS_RATER, [(min(p, max(GRADES)), m) for p, m in people if p is not None]
    )
    return {
        "rater": CLICKS_RATER,
        "model": "coec",
        "cuts": list(COEC_CUTS),
        "min_impressions": min_impressions,
        "impressions": impressions,
        "clicks": sum(o.clicks for o in observations),
        "pairs": len(counted.judgments) + counted.too_few_impressions,
        "too_few_impressions": counted.too_few_impressions,
        "judged": len(rows),
        "grades": grade_counts(matched),
        "unmatched_queries": len(unmatched),
        "unmatched_examples": unmatched[:SHOWN_UNMATCHED],
        "unknown_documents": sum(
            1 for j in counted.judgments if hashes[j.query] in entries and j.document_id not in known
        ),
        "skipped": skipped or {},
        "rank_ctr": {str(p): round(v, 6) for p, v in counted.rank_ctr.items()},
        "agreement_with_golden_set": agreement,
    }
