"""Pools of documents to judge, and the relevance judgments raters give them.

A pool is made from stored retrieval runs of one collection (evaluation.judgments.pooling chooses and orders its
documents); `pool_next` gives a rater the next item nobody has given them, to no more raters than the pool asks
for; `judgments_record` stores raters' grades (0-3, or cannot judge), a rater's new grade of a pair replacing
the old one. Every write is audited.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction

from evalsite.audit.models import AuditAction
from evalsite.audit.services import audit_record
from evalsite.errors import EvalsiteError, NotFound
from evalsite.tenancy.models import Tenant
from evaluation.judgments.agreement import krippendorff_alpha, rounded
from evaluation.judgments.grades import (
    IMPORTED_PREFIX,
    LEGACY_SCALE,
    MACHINE_PREFIXES,
    NOTE_MAX_LENGTH,
    PERSON_PREFIX,
    SETTLES,
    combine,
    is_imported,
    is_machine,
    is_settlement,
    live_rater,
    rater_error,
    split_at,
)
from evaluation.judgments.pooling import pool_candidates
from evaluation.judgments.rater_agreement import machine_agreement, others_grade, pair_agreement
from evaluation.models import (
    EvaluationAuditObject,
    EvaluationRun,
    JudgmentPool,
    PoolAssignment,
    PoolItem,
    QuestionResult,
    RelevanceJudgment,
    RunKind,
)
from evaluation.runs.slices import Subset
from goldenset.formats import Problems
from goldenset.models import Collection, Document, GoldenEntry
from goldenset.selectors import golden_entries_named
from goldenset.services.scales import collection_scale
from goldenset.vocabulary.grade_scales import SCALES, Scale

MAX_POOL_RUNS = 50
MAX_DEPTH = 100
MAX_RATERS_PER_ITEM = 10
MAX_JUDGMENTS_PER_CALL = 1000
TEXT_LIMIT = 20_000  # characters of a document's text a rater is shown


# --- pools -------------------------------------------------------------------------------------------------


def _runs_of(tenant: Tenant, collection: Collection, run_ids: Sequence[str]) -> list[EvaluationRun]:
    """The runs named, each the tenant's (404 otherwise, as for any object of another tenant) and a retrieval
    run of this collection alone (400 naming it otherwise)."""
    runs = []
    for i, run_id in enumerate(dict.fromkeys(run_ids)):  # a run named twice votes once
        try:
            pk = uuid.UUID(str(run_id))
        except ValueError:
            raise NotFound("Run", run_id) from None
        run = EvaluationRun.objects.filter(tenant=tenant, pk=pk).prefetch_related("collections").first()
        if run is None:
            raise NotFound("Run", run_id)
        slugs = sorted(c.slug for c in run.collections.all())
        if run.kind != RunKind.RETRIEVAL or slugs != [collection.slug]:
            what = "an answer run" if run.kind != RunKind.RETRIEVAL else f"a run of {', '.join(slugs)}"
            raise EvalsiteError(
                "validation-error",
                f"run_ids[{i}]: {run_id} is {what}; a pool takes retrieval runs of {collection.slug} alone.",
                details={"field": f"run_ids[{i}]"},
            )
        runs.append(run)
    return runs


def judged_documents(collection: Collection, entries: Sequence[GoldenEntry]) -> dict[str, set[str]]:
    """Per entry id, the documents that have a judgment: those its qrels hold (expected, or judged not relevant)
    and every grade a rater gave."""
    judged = {str(e.pk): set(e.qrels()) for e in entries}
    rows = RelevanceJudgment.objects.filter(collection=collection, grade__isnull=False)
    for entry_id, document_id in rows.values_list("entry_id", "document_id"):
        if str(entry_id) in judged:  # read by collection, not by a list of entries that may run to thousands
            judged[str(entry_id)].add(document_id)
    return judged


def pool_create(
    *,
    tenant: Tenant,
    collection: Collection,
    run_ids: Sequence[str],
    depth: int,
    raters_per_item: int,
    subset: Subset,
    actor: str,
    adaptive: bool = True,
) -> JudgmentPool:
    """A pool of the documents the runs rank within `depth` for the subset's questions that nobody judged, given
    to raters in MaxMean's adaptive order (`adaptive`) or in the fixed order of their priority."""
    runs = _runs_of(tenant, collection, run_ids)
    entries = [
        e
        for e in GoldenEntry.objects.filter(collection=collection).order_by("created_at", "id")
        if subset.admits(e.tags or (), e.origin, e.reviewed)
    ]
    wanted = {str(e.pk): e for e in entries}
    rankings: list[dict[str, list[str]]] = [{} for _ in runs]
    place = {run.pk: n for n, run in enumerate(runs)}
    results = QuestionResult.objects.filter(run__in=runs, error="")
    for run_id, entry_id, ranked_ids in results.values_list("run_id", "entry_id", "ranked_ids"):
        if str(entry_id) in wanted:  # the subset's questions; filtered here, not by a long IN list
            rankings[place[run_id]][str(entry_id)] = ranked_ids.split("\n")[:depth] if ranked_ids else []
    judged = judged_documents(collection, entries)
    candidates = pool_candidates(rankings, judged, depth, questions=list(wanted))
    within = {(q, d) for ranking in rankings for q, docs in ranking.items() for d in docs}
    already = sum(1 for q, d in within if d in judged[q])
    if not candidates:
        raise EvalsiteError(
            "empty-pool",
            f"run_ids: the runs rank no unjudged document within depth {depth} for the questions asked "
            f"({already} found, all judged already).",
            details={"field": "run_ids", "judged_already": already},
        )
    with transaction.atomic():
        pool = JudgmentPool.objects.create(
            tenant=tenant, collection=collection, depth=depth, raters_per_item=raters_per_item,
            subset=subset.as_dict(), judged_already=already, created_by=actor, adaptive=adaptive,
        )  # fmt: skip
        pool.runs.set(runs)
        PoolItem.objects.bulk_create(
            [
                PoolItem(
                    pool=pool,
                    position=n,
                    entry=wanted[c.question],
                    document_id=c.document_id,
                    priority=c.priority,
                    run_count=c.runs,
                    best_rank=c.best_rank,
                    ranks=[list(pair) for pair in c.ranks],
                )  # fmt: skip
                for n, c in enumerate(candidates)
            ],
            batch_size=1000,
        )
        audit_record(
            tenant=tenant, action=AuditAction.CREATE, object_type=EvaluationAuditObject.POOL, object_id=pool.pk,
            actor=actor, collection=collection,
            changes={"runs": [str(r.pk) for r in runs], "depth": depth, "items": len(candidates),
                     "raters_per_item": raters_per_item, "judged_already": already,
                     "order": "adaptive" if adaptive else "fixed"},
        )  # fmt: skip
    return pool


def pool_get(*, tenant: Tenant, pool_id: str) -> JudgmentPool:
    try:
        pk = uuid.UUID(str(pool_id))
    except ValueError:
        raise NotFound("Pool", pool_id) from None
    pool = JudgmentPool.objects.select_related("collection").filter(tenant=tenant, pk=pk).first()
    if pool is None:
        raise NotFound("Pool", pool_id)
    return pool


@dataclass(frozen=True)
class PoolProgress:
    items: int
    judgments_needed: int  # items x raters per item
    judgments: int  # grades and "cannot judge" given to the pool's items
    items_done: int  # items with as many judgments as the pool asks for
    raters: dict[str, int]  # rater -> judgments given
    given: dict[str, int]  # rater -> items the pool gave them (skipped ones included: still theirs)


def pool_progress(pool: JudgmentPool) -> PoolProgress:
    people = RelevanceJudgment.objects.filter(pool=pool)
    for prefix in (*MACHINE_PREFIXES, IMPORTED_PREFIX):  # the pool's live raters only
        people = people.exclude(rater__startswith=prefix)
    judgments = [  # a machine's are not the raters' work, nor is a curator's settling grade
        (e, d, r) for e, d, r, detail in people.values_list("entry_id", "document_id", "rater", "detail")
        if not is_settlement(detail)
    ]  # fmt: skip
    given = Counter(PoolAssignment.objects.filter(item__pool=pool).values_list("rater", flat=True))
    per_item = Counter((entry_id, document_id) for entry_id, document_id, _ in judgments)
    items = pool.items.count()
    return PoolProgress(
        items=items,
        judgments_needed=items * pool.raters_per_item,
        judgments=len(judgments),
        items_done=sum(1 for n in per_item.values() if n >= pool.raters_per_item),
        raters=dict(sorted(Counter(rater for _, _, rater in judgments).items())),
        given=dict(sorted(given.items())),
    )


def pool_agreement(pool: JudgmentPool) -> dict:
    """How far the pool's raters agree, on the items two or more of them graded ("cannot judge" is no grade).

    Among people: Krippendorff's alpha over all (ordinal: grades are ranked), Cohen's kappa with quadratic
    weights per pair and per rater (against the others' combined grade), and the items' combined grades
    (evaluation.judgments.grades.combine) with the splits flagged for review. A machine assessor's grades are
    never combined with people's: each machine is paired with each person instead, its agreement with people."""
    by_item: dict[tuple, dict[str, int | None]] = {}
    for entry_id, document_id, rater, grade, detail in RelevanceJudgment.objects.filter(
        pool=pool
    ).values_list("entry_id", "document_id", "rater", "grade", "detail"):
        if not is_settlement(detail):  # a curator's settling grade is no rater's
            by_item.setdefault((entry_id, document_id), {})[rater] = grade
    raters = sorted({r for grades in by_item.values() for r in grades})
    people = [r for r in raters if not is_machine(r)]
    machines = [r for r in raters if is_machine(r)]
    pairs = [
        pair_agreement(first, second, [(g.get(first), g.get(second)) for g in by_item.values()])
        for n, first in enumerate(people)
        for second in [*people[n + 1 :], *machines]
    ]
    per_rater = [
        pair_agreement(
            rater, "the others", [(g.get(rater), others_grade(g, rater, people)) for g in by_item.values()]
        )
        for rater in people
    ]
    split = split_at(collection_scale(pool.collection))
    combined = [combine([g.get(r) for r in people], split) for g in by_item.values()]
    against_people = [
        machine_agreement(
            machine, [(c.grade, g.get(machine)) for c, g in zip(combined, by_item.values(), strict=True)]
        )
        for machine in machines
    ]
    return {
        "raters": raters,
        "items_graded_twice": sum(1 for c in combined if c.raters >= 2),
        "krippendorff_alpha": rounded(
            krippendorff_alpha([[g.get(r) for r in people] for g in by_item.values()], metric="ordinal")
        ),
        "pairs": [p for p in pairs if p["items"]],
        "per_rater": [p for p in per_rater if p["items"]],
        "splits": sum(1 for c in combined if c.split),
        "combined_grades": dict(
            sorted(Counter(str(c.grade) for c in combined if c.grade is not None).items())
        ),
        "machines": [m for m in against_people if m["items"]],
    }


def person_rater_error(rater: str) -> str | None:
    """Why `rater` cannot name a person judging, or None: a machine assessor's names are its own."""
    if is_machine(rater):
        return f"{rater.split(':')[0]}:... names a machine assessor (manage.py judge), not a person"
    return rater_error(rater)


def item_view(item: PoolItem) -> dict:
    """What a rater sees of an item: never the runs that found it or their ranks."""
    entry = item.entry
    document = Document.objects.filter(
        collection_id=entry.collection_id, external_id=item.document_id
    ).first()
    parts: list[str] = []
    if document is not None:  # pages read until the limit is passed, not a whole long document
        for page in document.pages.order_by("number").values_list("text", flat=True).iterator(chunk_size=20):
            parts.append(page)
            if sum(map(len, parts)) + 2 * len(parts) > TEXT_LIMIT:
                break
    text = "\n\n".join(parts)
    return {
        "position": item.position,
        "question_id": entry.key or str(entry.pk),
        "question": entry.question,
        "reference_answer": entry.reference_answer,
        "document_id": item.document_id,
        "title": document.title if document is not None else "",
        "text": text[:TEXT_LIMIT],
        "truncated": len(text) > TEXT_LIMIT,
        "exists": document is not None,
    }


def rater_items(*, pool: JudgmentPool, rater: str) -> list[PoolItem]:
    """The items this rater was given, in the pool's order."""
    return list(pool.items.filter(assignments__rater=rater).select_related("entry").order_by("position"))


def judgment_of(*, pool: JudgmentPool, item: PoolItem, rater: str) -> RelevanceJudgment | None:
    return RelevanceJudgment.objects.filter(
        pool=pool, entry_id=item.entry_id, document_id=item.document_id, rater=rater
    ).first()


def judgment_undo(*, pool: JudgmentPool, rater: str, actor: str) -> PoolItem | None:
    """The rater's latest judgment in the pool taken back (deleted, audited); its item, which stays theirs to
    judge again, or None when they have judged nothing."""
    with transaction.atomic():
        latest = (
            RelevanceJudgment.objects.select_for_update()
            .filter(pool=pool, rater=rater)
            .order_by("-updated_at", "-id")
            .first()
        )
        if latest is None:
            return None
        item = PoolItem.objects.get(pool=pool, entry_id=latest.entry_id, document_id=latest.document_id)
        audit_record(
            tenant=pool.tenant_id, action=AuditAction.DELETE, object_type=EvaluationAuditObject.JUDGMENT,
            object_id=latest.pk, actor=actor, collection=pool.collection,
            changes={"document_id": latest.document_id, "rater": rater, "grade": [latest.grade, None],
                     "pool": str(pool.pk)},
        )  # fmt: skip
        latest.delete()
    return item


# --- judgments ---------------------------------------------------------------------------------------------


def _invalid(where: str, message: str, *, field: str) -> EvalsiteError:
    return EvalsiteError("validation-error", f"{where}: {message}", details={"field": field})


@dataclass(frozen=True)
class JudgmentRow:
    where: str  # "judgments[3]"
    question_id: str
    document_id: str
    grade: int | None
    rater: str
    note: str


def judgment_rows(
    raw: Sequence[object], *, live: str | None = None, scale: Scale = SCALES[LEGACY_SCALE]
) -> list[JudgmentRow]:
    """Judgments as a client sends them, checked field by field; every bad one is named (up to 50).

    live: the caller's own rater name (grades.live_rater) when these are live judgments: a person judges as
    themselves, so each one's rater is theirs. A `rater` naming anyone else is refused, naming the field; leaving
    it out, or naming the caller (any case, with or without "user:"), is the same. A grade is one of `scale`'s
    (the collection's: goldenset.services.scales.collection_scale)."""
    if len(raw) > MAX_JUDGMENTS_PER_CALL:
        raise EvalsiteError(
            "validation-error",
            f"judgments: at most {MAX_JUDGMENTS_PER_CALL} a call, got {len(raw)}.",
            details={"field": "judgments"},
        )
    problems = Problems(EvalsiteError, "validation-error")
    rows = []
    for i, item in enumerate(raw):
        where = f"judgments[{i}]"
        with problems.row():
            if not isinstance(item, dict):
                raise _invalid(where, "a judgment is an object.", field=where)
            if live is not None:
                item = {**item, "rater": _live(item.get("rater"), live, where)}
            unknown = sorted(set(item) - {"question_id", "document_id", "grade", "rater", "note"})
            if unknown:
                raise _invalid(where, f"{unknown[0]}: unknown field.", field=f"{where}.{unknown[0]}")
            for name in ("question_id", "document_id", "rater"):
                value = item.get(name)
                if not isinstance(value, str) or not value.strip() or len(value) > 300:
                    raise _invalid(
                        where,
                        f"{name}: a non-empty string of at most 300 characters.",
                        field=f"{where}.{name}",
                    )
            if (error := person_rater_error(item["rater"])) is not None:
                raise _invalid(where, f"rater: {error}.", field=f"{where}.rater")
            grade = item.get("grade")
            if grade is not None and grade not in scale:
                raise _invalid(
                    where,
                    f"grade: {grade!r} is not a grade of the collection's {scale.name} scale: one of "
                    f"{', '.join(map(str, scale.grades))} (or null: cannot judge).",
                    field=f"{where}.grade",
                )
            note = item.get("note", "") or ""
            if not isinstance(note, str) or len(note) > NOTE_MAX_LENGTH:
                raise _invalid(
                    where, f"note: a string of at most {NOTE_MAX_LENGTH} characters.", field=f"{where}.note"
                )
            rows.append(
                JudgmentRow(where, item["question_id"], item["document_id"], grade, item["rater"], note)
            )
    problems.check()
    return rows


def _live(given: object, live: str, where: str) -> str:
    if given is None or (isinstance(given, str) and live_rater(given.removeprefix(PERSON_PREFIX)) == live):
        return live
    raise _invalid(
        where,
        f"rater: a live judgment's rater is the caller ({live}); leave it out. Other raters' judgments are "
        "imported as a file, by a curator.",
        field=f"{where}.rater",
    )


def judgments_record(
    *,
    collection: Collection,
    rows: Sequence[JudgmentRow],
    actor: str,
    pool: JudgmentPool | None = None,
    settles: bool = False,
) -> dict:
    """Store the judgments, all or none: each names an entry of the collection (by key or id) and, in a pool,
    one of its items. A rater's new judgment of a pair replaces the old one. Each keeps the collection's scale
    it was given on (detail "scale"); `settles`: a curator's grade settling the raters' split (detail
    "settles"), which the pool's apply takes over theirs (evaluation.judgments.settle)."""
    problems = Problems(EvalsiteError, "validation-error")
    entries = golden_entries_named(collection=collection, names=(r.question_id for r in rows))
    items: dict[tuple, int] = {}  # (entry id, document id) -> the pool item's id, read once for every row
    if pool is not None:
        items = {(e, d): pk for pk, e, d in pool.items.values_list("pk", "entry_id", "document_id")}
    for row in rows:
        with problems.row():
            entry = entries.get(row.question_id)
            if entry is None:
                raise _invalid(
                    row.where,
                    f"question_id: {row.question_id!r} is no golden entry of {collection.slug} (a key or an id).",
                    field=f"{row.where}.question_id",
                )
            if pool is not None and (entry.pk, row.document_id) not in items:
                raise _invalid(
                    row.where, f"document_id: {row.document_id!r} is not in this pool for that question.",
                    field=f"{row.where}.document_id",
                )  # fmt: skip
    problems.check()
    created = updated = 0
    detail = {"scale": collection.grade_scale, **({SETTLES: True} if settles else {})}
    with transaction.atomic():
        for row in rows:
            entry = entries[row.question_id]
            judgment, made = RelevanceJudgment.objects.select_for_update().get_or_create(
                entry=entry, document_id=row.document_id, rater=row.rater,
                defaults={"tenant_id": collection.tenant_id, "collection": collection, "grade": row.grade,
                          "note": row.note, "pool": pool, "detail": detail},
            )  # fmt: skip
            before = {"grade": judgment.grade, "note": judgment.note}
            if not made:
                judgment.grade, judgment.note, judgment.detail = row.grade, row.note, detail
                judgment.pool = pool or judgment.pool
                judgment.save(update_fields=["grade", "note", "pool", "detail", "updated_at"])
            if pool is not None and not is_imported(row.rater) and not settles:  # no live rater's item
                PoolAssignment.objects.get_or_create(
                    item_id=items[(entry.pk, row.document_id)], rater=row.rater
                )
            created += made
            updated += not made
            audit_record(
                tenant=collection.tenant_id, action=AuditAction.CREATE if made else AuditAction.UPDATE,
                object_type=EvaluationAuditObject.JUDGMENT, object_id=judgment.pk, actor=actor,
                collection=collection,
                changes={"question_id": row.question_id, "document_id": row.document_id, "rater": row.rater,
                         "grade": [None if made else before["grade"], row.grade], "scale": detail["scale"],
                         **({"pool": str(pool.pk)} if pool is not None else {}), **({SETTLES: True} if settles else {})},
            )  # fmt: skip
    return {"judgments": len(rows), "created": created, "updated": updated}
