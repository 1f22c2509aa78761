"""A pool judged by a chat model (evaluation.judgments.assessors): every item it has not judged yet, each asked
`samples` times at once (the client's concurrency), the samples' majority stored as the model's judgment beside
the people's, never over them. An item whose every sample is unreadable, or whose calls failed, is counted and
left unjudged: never a silent grade."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from django.db import transaction

from evalsite.audit.models import AuditAction
from evalsite.audit.services import audit_record
from evalsite.errors import EvalsiteError
from evalsite.jobs.models import Job
from evalsite.llm.client import ChatClient
from evaluation.judgments.assessors import (
    PROMPT_SHA,
    PROMPT_VERSION,
    assessor_name,
    majority,
    messages,
    read_grade,
)
from evaluation.judgments.lexical import CUTS, LEXICAL_RATER, LEXICAL_VERSION, grade_of, idf_of, lexical_score
from evaluation.judgments.pools import item_view
from evaluation.models import EvaluationAuditObject, JudgmentPool, PoolItem, RelevanceJudgment

LLM, LEXICAL = "llm", "lexical"  # the assessors a pool can be judged by
SAMPLE_TEMPERATURE = 0.7  # several samples are drawn at this temperature (one sample: 0)


@dataclass(frozen=True)
class Asked:
    item: PoolItem
    samples: tuple[int | None, ...]  # each readable sample's grade, None for an unreadable one
    failed: int  # calls that failed after the client's retries
    gone: bool  # the document left the collection


def _ask(client: ChatClient, model: str, samples: int) -> Callable[[tuple[PoolItem, dict]], Asked]:
    """The calls for one item, whose question and text were read beforehand: the threads that make the calls
    never touch the database."""

    def ask(job: tuple[PoolItem, dict]) -> Asked:
        item, view = job
        if not view["exists"]:
            return Asked(item, (), 0, True)
        grades: list[int | None] = []
        failed = 0
        for seed in range(samples):
            try:
                answer = client.complete(
                    messages(view["question"], view["text"]), model=model,
                    temperature=0.0 if samples == 1 else SAMPLE_TEMPERATURE, seed=seed,
                )  # fmt: skip
            except EvalsiteError:  # the endpoint failed after its retries: counted, never a grade
                failed += 1
                continue
            grades.append(read_grade(answer.text))
        return Asked(item, tuple(grades), failed, False)

    return ask


CHUNK = 20  # items asked, stored and reported at a time: a job stopped midway keeps what it stored


def pool_assess(
    *, pool: JudgmentPool, client: ChatClient, model: str, samples: int, actor: str,
    progress: Callable[[int, int], None] | None = None,
) -> dict:  # fmt: skip
    """The model's judgments of the pool's items it has not judged yet, stored CHUNK items at a time (each
    chunk with its audit event); what happened to each item."""
    if not 1 <= samples <= 9:
        raise EvalsiteError(
            "validation-error", "samples: a whole number from 1 to 9.", details={"field": "samples"}
        )
    rater = assessor_name(model)
    done = set(
        RelevanceJudgment.objects.filter(pool=pool, rater=rater).values_list("entry_id", "document_id")
    )
    todo = [
        i
        for i in pool.items.select_related("entry").order_by("position")
        if (i.entry_id, i.document_id) not in done
    ]
    counts: Counter[str] = Counter()
    grades: Counter[str] = Counter()
    if progress is not None:
        progress(0, len(todo))
    for start in range(0, len(todo), CHUNK):
        chunk = todo[start : start + CHUNK]
        views = [(item, item_view(item)) for item in chunk]  # read here, in this thread and its transaction
        stored = _judgments(pool, rater, client.map_concurrent(_ask(client, model, samples), views), counts)
        grades.update(str(j.grade) for j in stored)
        _store(pool, stored, actor, {"rater": rater, "prompt_version": PROMPT_VERSION, "items": len(chunk)})
        if progress is not None:
            progress(start + len(chunk), len(todo))
    return {
        "rater": rater,
        "prompt_version": PROMPT_VERSION,
        "prompt_sha256": PROMPT_SHA,
        "samples": samples,
        "items": len(todo),
        "judged_before": len(done),
        "judged": sum(grades.values()),
        "unreadable": counts["unreadable"],
        "failed": counts["failed"],
        "gone": counts["gone"],
        "grades": dict(sorted(grades.items())),
    }


def _store(pool: JudgmentPool, stored: list[RelevanceJudgment], actor: str, changes: dict) -> None:
    """A chunk of a machine's judgments, with its audit event, in one transaction."""
    with transaction.atomic():
        RelevanceJudgment.objects.bulk_create(stored, batch_size=500)
        audit_record(
            tenant=pool.tenant_id, action=AuditAction.CREATE, object_type=EvaluationAuditObject.JUDGMENT,
            object_id=pool.pk, actor=actor, collection=pool.collection, changes={**changes, "judged": len(stored)},
        )  # fmt: skip


def _judgments(
    pool: JudgmentPool, rater: str, asked: list[Asked], counts: Counter[str]
) -> list[RelevanceJudgment]:
    stored = []
    for a in asked:
        verdict = majority(a.samples)
        if a.gone:
            counts["gone"] += 1
        elif verdict.grade is None:
            counts["failed" if a.failed and not a.samples else "unreadable"] += 1
        else:
            stored.append(
                RelevanceJudgment(
                    tenant_id=pool.tenant_id,
                    collection_id=pool.collection_id,
                    entry=a.item.entry,
                    document_id=a.item.document_id,
                    grade=verdict.grade,
                    rater=rater,
                    pool=pool,
                    detail={
                        "prompt_version": PROMPT_VERSION,
                        "prompt_sha256": PROMPT_SHA,
                        "samples": list(a.samples),
                        "agreement": round(verdict.agreement, 4),
                        "failed_calls": a.failed,
                    },
                )  # fmt: skip
            )
    return stored


def pool_assess_lexical(
    *, pool: JudgmentPool, actor: str, progress: Callable[[int, int], None] | None = None
) -> dict:
    """The keyless lexical assessor's judgments of the pool's items it has not judged yet (evaluation.judgments
    .lexical): its idf over the texts of every item of the pool, each judgment stored with its score, version and
    cuts, CHUNK items at a time. A labelled weak fallback: see its agreement with people before reading it."""
    done = set(
        RelevanceJudgment.objects.filter(pool=pool, rater=LEXICAL_RATER).values_list(
            "entry_id", "document_id"
        )
    )
    items = list(pool.items.select_related("entry").order_by("position"))
    views = {item.pk: item_view(item) for item in items}
    texts = {v["document_id"]: f"{v['title']}\n{v['text']}" for v in views.values() if v["exists"]}
    idf = idf_of(texts.values())
    todo = [i for i in items if (i.entry_id, i.document_id) not in done]
    grades: Counter[str] = Counter()
    gone = 0
    if progress is not None:
        progress(0, len(todo))
    for start in range(0, len(todo), CHUNK):
        chunk = todo[start : start + CHUNK]
        stored = []
        for item in chunk:
            view = views[item.pk]
            if not view["exists"]:
                gone += 1
                continue
            text = f"{view['title']}\n{view['text']}"  # as benchmarks/lexical_assessor.py scores it
            score = lexical_score(view["question"], view["reference_answer"], text, idf)
            stored.append(
                RelevanceJudgment(
                    tenant_id=pool.tenant_id,
                    collection_id=pool.collection_id,
                    entry=item.entry,
                    document_id=item.document_id,
                    grade=grade_of(score),
                    rater=LEXICAL_RATER,
                    pool=pool,
                    detail={"version": LEXICAL_VERSION, "score": round(score, 4), "cuts": vars(CUTS)},
                )  # fmt: skip
            )
        grades.update(str(j.grade) for j in stored)
        _store(pool, stored, actor, {"rater": LEXICAL_RATER, "version": LEXICAL_VERSION, "items": len(chunk)})
        if progress is not None:
            progress(start + len(chunk), len(todo))
    return {
        "rater": LEXICAL_RATER,
        "prompt_version": LEXICAL_VERSION,
        "prompt_sha256": "",
        "samples": 1,
        "items": len(todo),
        "judged_before": len(done),
        "judged": sum(grades.values()),
        "unreadable": 0,
        "failed": 0,
        "gone": gone,
        "grades": dict(sorted(grades.items())),
    }


def assess_job(job: Job, progress: Callable[[int, int], None]) -> dict:
    """The Assess job: a pool graded by the assessor its input names (job.input: pool_id, and model and samples
    for a chat model, or assessor "lexical")."""
    pool = (
        JudgmentPool.objects.select_related("collection")
        .filter(tenant=job.tenant, pk=job.input["pool_id"])
        .first()
    )
    if pool is None:
        raise EvalsiteError("not-found", "The pool of this job was deleted.", status=404)
    if job.input.get("assessor") == LEXICAL:
        return pool_assess_lexical(pool=pool, actor=job.input.get("actor") or "job", progress=progress)
    with ChatClient.from_settings() as client:
        return pool_assess(
            pool=pool, client=client, model=job.input["model"], samples=job.input["samples"],
            actor=job.input.get("actor") or "job", progress=progress,
        )  # fmt: skip
