"""A pool's judgments into the golden set, shown first, written all or nothing, and taken back on request.

`pool_apply` reads the pool's combined grades on the collection's scale (the people's,
evaluation.judgments.grades.combine, or a curator's settling grade; or one machine rater's, named), and for each stored retrieval run of the collection (the pool's runs first, then the
newest others, RUNS_SHOWN in all) scores its stored rankings twice: under the golden set as it is, and as it would
be with the grades written. With `dry_run` that is all it does; otherwise, in one transaction under the
collection's lock, a grade above 0 makes the document expected with that grade and grade 0 records it judged
not relevant (evaluation.retrieval.metrics reads both), every entry changed is audited, and a PoolApplication
keeps each entry's before and after so that `application_revert` can restore them while nobody changed those
entries since. A document the golden set has judged since the pool was made keeps that judgment: the pool never
overwrites one.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from evalsite.audit.models import AuditAction, AuditEvent
from evalsite.audit.services import audit_record
from evalsite.errors import EvalsiteError, NotFound
from evaluation.judgments.grades import (
    MACHINE_PREFIXES,
    combine,
    grade_on,
    is_machine,
    is_settlement,
    split_at,
)
from evaluation.models import (
    PEOPLE,
    EvaluationAuditObject,
    EvaluationRun,
    JudgmentPool,
    PoolApplication,
    QuestionResult,
    RelevanceJudgment,
    RunKind,
)
from evaluation.retrieval import metrics
from goldenset.models import GoldenEntry
from goldenset.services.audit import _audit, entry_snapshot
from goldenset.services.content import lock_collection
from goldenset.services.scales import collection_scale
from goldenset.vocabulary.chunks import CHUNK, chunks

RUNS_SHOWN = 20  # stored runs scored before and after: the pool's own, then the newest others


@dataclass(frozen=True)
class Grade:
    entry_id: str
    document_id: str
    grade: int
    raters: int  # the grades combined (1 for a machine rater)
    split: bool  # the people disagreed by two grades or more: flagged for review


def pool_grades(pool: JudgmentPool, source: str = PEOPLE) -> tuple[list[Grade], int]:
    """The grade of each item someone graded, in the pool's order, and how many items have none yet: from the
    people's judgments combined, or from one machine rater's (its name as `source`). A machine's grade is never
    taken for an item a person graded: that item is the people's to apply, so it counts as ungraded here.

    Every grade is taken on the collection's scale (grades.grade_on: converted from the scale it was given on;
    machines judge on 0-3), and a curator's settling grade of an item (evaluation.judgments.settle) is the
    people's grade of it, whatever the raters gave."""
    scale = collection_scale(pool.collection)
    by_item: dict[tuple[str, str], list[int | None]] = {}
    by_people: set[tuple[str, str]] = set()
    settled: dict[tuple[str, str], int] = {}
    rows = RelevanceJudgment.objects.filter(pool=pool).order_by("updated_at", "id")
    for entry_id, document_id, rater, grade, detail in rows.values_list(
        "entry_id", "document_id", "rater", "grade", "detail"
    ):
        pair, machine = (str(entry_id), document_id), is_machine(rater)
        grade = grade_on(grade, detail, scale)  # on the collection's scale, whatever it was given on
        if not machine and grade is not None:
            by_people.add(pair)
        if is_settlement(detail):
            if grade is not None:  # the latest settlement of the item, when several curators settled it
                settled[pair] = grade
        elif (source == PEOPLE and not machine) or rater == source:
            by_item.setdefault(pair, []).append(grade)
    if source != PEOPLE:
        by_item = {pair: grades for pair, grades in by_item.items() if pair not in by_people}
    found: list[Grade] = []
    ungraded = 0
    for entry_id, document_id in pool.items.order_by("position").values_list("entry_id", "document_id"):
        pair = (str(entry_id), document_id)
        combined = combine(by_item.get(pair, []), split_at(scale))
        if source == PEOPLE and pair in settled:  # a curator settled the raters' split: their grade holds
            found.append(Grade(*pair, settled[pair], combined.raters, False))
            continue
        if combined.grade is None:
            ungraded += 1
            continue
        found.append(Grade(*pair, combined.grade, combined.raters, combined.split))
    return found, ungraded


def _source_checked(pool: JudgmentPool, source: str) -> str:
    if source == PEOPLE:
        return source
    if not is_machine(source):
        raise EvalsiteError(
            "validation-error",
            f'source: {source!r} is neither "people" nor a machine rater ({", ".join(MACHINE_PREFIXES)}...).',
            details={"field": "source"},
        )
    if not RelevanceJudgment.objects.filter(pool=pool, rater=source).exists():
        raise EvalsiteError(
            "validation-error",
            f"source: {source!r} has judged nothing in this pool.",
            details={"field": "source"},
        )
    return source


def _qrels_after(entries: dict[str, GoldenEntry], grades: Sequence[Grade]) -> tuple[dict, list[Grade], int]:
    """Per entry id, its golden state with the grades written ({expected_document_ids, grades}); the grades
    written; and how many were left because the golden set has judged the document since."""
    after: dict[str, dict] = {}
    written: list[Grade] = []
    judged_since = 0
    for g in grades:
        entry = entries.get(g.entry_id)
        if entry is None:  # deleted since: nothing to write to
            continue
        state = after.setdefault(
            g.entry_id,
            {"expected_document_ids": list(entry.expected_document_ids), "grades": dict(entry.grades)},
        )
        if g.document_id in entry.qrels():
            judged_since += 1
            continue
        if g.grade > 0:
            state["expected_document_ids"].append(g.document_id)
            if g.grade != 1:  # 1 is an expected document's grade unless said otherwise
                state["grades"][g.document_id] = g.grade
        else:
            state["grades"][g.document_id] = 0
        written.append(g)
    return {e: s for e, s in after.items() if s != _state(entries[e])}, written, judged_since


def _state(entry: GoldenEntry) -> dict:
    return {"expected_document_ids": list(entry.expected_document_ids), "grades": dict(entry.grades)}


def _qrels(state: dict) -> dict[str, int]:
    return GoldenEntry(expected_document_ids=state["expected_document_ids"], grades=state["grades"]).qrels()


def runs_before_after(pool: JudgmentPool, after: dict[str, dict]) -> dict:
    """Each shown run's metrics over its stored rankings under the golden set now and with `after` written; the
    means are over the questions with a relevant document in each state (a question can gain its first)."""
    now_qrels = {
        str(pk): _qrels({"expected_document_ids": expected, "grades": grades})
        for pk, expected, grades in GoldenEntry.objects.filter(collection=pool.collection)
        .values_list("pk", "expected_document_ids", "grades")
        .iterator(CHUNK)
    }
    own = list(pool.runs.order_by("-created_at"))
    others = (
        EvaluationRun.objects.filter(tenant=pool.tenant, kind=RunKind.RETRIEVAL, collections=pool.collection)
        .exclude(pk__in=[r.pk for r in own])
        .exclude(metrics={})
        .order_by("-created_at")
    )
    shown = own + list(others[: max(0, RUNS_SHOWN - len(own))])
    total_others = others.count()
    rows = []
    for run in shown:
        if len(run.collection_ids) != 1:
            continue
        before_values, after_values = [], []
        results = QuestionResult.objects.filter(run=run, error="").values_list("entry_id", "ranked_ids")
        for entry_id, ranked_ids in results.iterator(CHUNK):
            now = now_qrels.get(str(entry_id))
            if now is None:  # the entry was deleted since the run
                continue
            ranking = ranked_ids.split("\n") if ranked_ids else []
            then = _qrels(after[str(entry_id)]) if str(entry_id) in after else now
            if any(grade > 0 for grade in now.values()):
                before_values.append(metrics.evaluate_query(ranking, now, run.ks))
            if any(grade > 0 for grade in then.values()):
                after_values.append(metrics.evaluate_query(ranking, then, run.ks))
        rows.append(
            {
                "run_id": str(run.pk),
                "label": run.label,
                "created_at": run.created_at.isoformat(),
                "in_pool": run in own,
                "questions_before": len(before_values),
                "questions_after": len(after_values),
                "before": metrics.mean_metrics(before_values),
                "after": metrics.mean_metrics(after_values),
            }
        )
    return {"runs": rows, "runs_not_shown": max(0, total_others - (len(shown) - len(own)))}


def _entries(pool: JudgmentPool, grades: Sequence[Grade]) -> dict[str, GoldenEntry]:
    ids = sorted({g.entry_id for g in grades})
    found: dict[str, GoldenEntry] = {}
    for chunk in chunks(ids):
        found.update(
            (str(e.pk), e) for e in GoldenEntry.objects.filter(collection=pool.collection, pk__in=chunk)
        )
    return found


def pool_apply(*, pool: JudgmentPool, actor: str, dry_run: bool, source: str = PEOPLE) -> dict:
    """What writing the pool's grades would change (dry_run), or the change written; see the module docstring."""
    source = _source_checked(pool, source)
    with transaction.atomic():
        if not dry_run:
            lock_collection(pool.collection)
        grades, ungraded = pool_grades(pool, source)
        entries = _entries(pool, grades)
        after, written, judged_since = _qrels_after(entries, grades)
        comparison = runs_before_after(pool, after)
        summary = {
            "pool_id": str(pool.pk),
            "source": source,
            "dry_run": dry_run,
            "judgments": len(written),
            "relevant": sum(1 for g in written if g.grade > 0),
            "not_relevant": sum(1 for g in written if g.grade == 0),
            "splits": [
                {"question_id": entries[g.entry_id].key or g.entry_id, "document_id": g.document_id}
                for g in written
                if g.split
            ],
            "entries": len(after),
            "ungraded": ungraded,
            "judged_since": judged_since,
            **comparison,
            "application_id": None,
        }
        if dry_run or not written:
            return summary
        application = _write(pool, entries, after, written, source, actor)
        summary["application_id"] = str(application.pk)
    return summary


def _write(pool, entries, after, written, source, actor) -> PoolApplication:
    now = timezone.now()
    changed, events, changes = [], [], []
    for entry_id, state in after.items():
        entry = entries[entry_id]
        before = entry_snapshot(entry)
        changes.append({"entry_id": entry_id, "before": _state(entry), "after": state})
        entry.expected_document_ids, entry.grades, entry.updated_at = (
            state["expected_document_ids"],
            state["grades"],
            now,
        )
        diff = {k: [before[k], v] for k, v in entry_snapshot(entry).items() if before[k] != v}
        events.append(_audit(entry, AuditAction.UPDATE, actor, {**diff, "pool": [None, str(pool.pk)]}))
        changed.append(entry)
    GoldenEntry.objects.bulk_update(
        changed, ["expected_document_ids", "grades", "updated_at"], batch_size=CHUNK
    )
    AuditEvent.objects.bulk_create(events, batch_size=CHUNK)
    application = PoolApplication.objects.create(
        pool=pool, source=source, judgments=len(written), changes=changes, created_by=actor,
        source_detail=_versions(pool, source),
    )  # fmt: skip
    audit_record(
        tenant=pool.tenant, action=AuditAction.UPDATE, object_type=EvaluationAuditObject.POOL, object_id=pool.pk,
        actor=actor, collection=pool.collection,
        changes={"applied": str(application.pk), "source": source, "judgments": len(written),
                 "entries": len(changes)},
    )  # fmt: skip
    return application


PROVENANCE_KEYS = ("prompt_version", "prompt_sha256", "version", "model")


def _versions(pool: JudgmentPool, source: str) -> list[dict]:
    """The distinct versions a machine source's judgments in the pool record (its prompt's version and hash, its
    own version, its click model); [] for people."""
    if source == PEOPLE:
        return []
    found: dict[tuple, dict] = {}
    for detail in RelevanceJudgment.objects.filter(pool=pool, rater=source).values_list("detail", flat=True):
        kept = {k: detail[k] for k in PROVENANCE_KEYS if isinstance(detail, dict) and k in detail}
        found.setdefault(tuple(sorted(kept.items())), kept)
    return list(found.values())


def application_revert(*, pool: JudgmentPool, application_id: str, actor: str) -> PoolApplication:
    """Restore every entry an application changed to what it held before, all or nothing: a 409 naming the
    entries changed since (by anyone), and nothing written, when they no longer hold what it wrote."""
    try:
        pk = uuid.UUID(str(application_id))
    except ValueError:
        raise NotFound("Application", application_id) from None
    with transaction.atomic():
        lock_collection(pool.collection)
        application = PoolApplication.objects.select_for_update().filter(pool=pool, pk=pk).first()
        if application is None:
            raise NotFound("Application", application_id)
        if application.reverted_at is not None:
            raise EvalsiteError(
                "already-reverted",
                f"application {application.pk} was taken back by {application.reverted_by} at "
                f"{application.reverted_at.isoformat()}.",
                details={"application_id": str(application.pk)},
                status=409,
            )
        ids = [c["entry_id"] for c in application.changes]
        entries: dict[str, GoldenEntry] = {}
        for chunk in chunks(ids):
            entries.update(
                (str(e.pk), e) for e in GoldenEntry.objects.filter(collection=pool.collection, pk__in=chunk)
            )
        moved = [
            c["entry_id"]
            for c in application.changes
            if c["entry_id"] not in entries or _state(entries[c["entry_id"]]) != c["after"]
        ]
        if moved:
            raise EvalsiteError(
                "changed-since",
                f"{len(moved)} of the entries this application changed were changed or deleted since "
                f"(first: {moved[0]}); nothing was taken back.",
                details={"entry_ids": moved[:50], "count": len(moved)},
                status=409,
            )
        now = timezone.now()
        events = []
        for change in application.changes:
            entry = entries[change["entry_id"]]
            before = entry_snapshot(entry)
            entry.expected_document_ids = change["before"]["expected_document_ids"]
            entry.grades = change["before"]["grades"]
            entry.updated_at = now
            diff = {k: [before[k], v] for k, v in entry_snapshot(entry).items() if before[k] != v}
            events.append(_audit(entry, AuditAction.UPDATE, actor, {**diff, "pool": [str(pool.pk), None]}))
        GoldenEntry.objects.bulk_update(
            list(entries.values()), ["expected_document_ids", "grades", "updated_at"], batch_size=CHUNK
        )
        AuditEvent.objects.bulk_create(events, batch_size=CHUNK)
        application.reverted_at, application.reverted_by = now, actor
        application.save(update_fields=["reverted_at", "reverted_by"])
        audit_record(
            tenant=pool.tenant, action=AuditAction.UPDATE, object_type=EvaluationAuditObject.POOL,
            object_id=pool.pk, actor=actor, collection=pool.collection,
            changes={"reverted": str(application.pk), "entries": len(events)},
        )  # fmt: skip
    return application
