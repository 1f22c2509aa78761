"""Retrieval evaluation: every golden question through the search read path (evaluation.services.search), once
per configuration, scored as trec_eval scores it (evaluation.metrics), each configuration stored as one run of a
batch (evaluation.services.runs); and the Evaluate job that does it off the request."""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable, Sequence

from django.db import transaction
from django.utils import timezone

from evaluation import metrics, selectors
from evaluation.configs import RunConfig, parse_configs
from evaluation.models import EvaluationRun, QuestionResult, RunKind
from evaluation.selectors import GoldenQuestion
from evaluation.services.runs import run_store, run_summary
from evaluation.services.search import CollectionSearch, available_rerankers, rerank_warnings
from goldenset.errors import EvalsiteError
from goldenset.jobs import job_create
from goldenset.models import Collection, Job, JobKind, Tenant


def retrieval_questions(collections: Sequence[Collection]) -> tuple[list[GoldenQuestion], list[str]]:
    """The golden questions a retrieval evaluation scores (those with expected documents), and warnings about
    what was left out or looks wrong."""
    warnings: list[str] = []
    questions: list[GoldenQuestion] = []
    everything = selectors.golden_questions(collections)
    skipped = sum(1 for q in everything if not q.document_ids)
    for collection in collections:
        mine = [q for q in everything if q.collection_id == collection.slug and q.document_ids]
        known = selectors.documents_present(collection, (d for q in mine for d in q.document_ids))
        gone = [
            f"{q.key or q.entry_id}: {', '.join(missing)}"
            for q in mine
            if (missing := [d for d in q.document_ids if d not in known])
        ]
        questions.extend(mine)
        if gone:
            warnings.append(
                f"{len(gone)} golden entries of {collection.slug} expect documents that are no longer in the "
                f"collection (they count as relevant and not retrieved): "
                + "; ".join(gone[:5])
                + (" ..." if len(gone) > 5 else "")
            )
    if skipped:
        warnings.append(f"{skipped} golden entries have no expected documents and were not evaluated.")
    return questions, warnings


def fingerprint(questions: Sequence[GoldenQuestion]) -> str:
    """The golden set a retrieval run saw: two runs compare question by question only when theirs agree."""
    digest = hashlib.sha256()
    for q in questions:
        digest.update(json.dumps([q.entry_id, q.question, sorted(q.qrels.items())]).encode())
    return digest.hexdigest()


def evaluate_retrieval(
    *,
    tenant: Tenant,
    collections: Sequence[Collection],
    ks: Sequence[int],
    configs: Sequence[RunConfig],
    job: Job | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[uuid.UUID, list[EvaluationRun]]:
    """Every golden question of the collections through the search read path, once per configuration.

    Each configuration becomes one persisted run of a new batch; the golden set is snapshotted in the runs.
    """
    questions, warnings = retrieval_questions(collections)
    if not questions:
        raise EvalsiteError(
            "empty-golden-set",
            "No golden entries with expected documents in " + ", ".join(c.slug for c in collections) + ".",
            details={"collection_ids": [c.slug for c in collections]},
        )
    search = CollectionSearch(collections)
    depth_default = max(ks)
    multi = len(collections) > 1
    golden_fingerprint = fingerprint(questions)
    # One instant for the whole batch: every question sees the same temporal state (and the visibility mask
    # is computed once); a run without as_of records the instant it replayed.
    now = timezone.now()
    total = len(questions) * len(configs)
    scored = []
    for number, config in enumerate(configs):
        depth = min(config.top_k, depth_default) if config.top_k else depth_default
        started = time.perf_counter()
        per_question = []
        for i, q in enumerate(questions):
            hits = search.rank(q.question, config, depth, at=now)
            ranking = hits.keys(qualified=multi)
            per_question.append((q, hits, ranking, metrics.evaluate_query(ranking, q.qrels, ks)))
            if progress and (i + 1) % 50 == 0:
                progress(number * len(questions) + i + 1, total)
        means = metrics.mean_metrics([m for *_rest, m in per_question])
        scored.append((config, per_question, means, (time.perf_counter() - started) * 1000))
        if progress:
            progress((number + 1) * len(questions), total)
    batch_id = uuid.uuid4()
    index_info = {**search.index_info(), "evaluated_at": now.isoformat().replace("+00:00", "Z")}
    with transaction.atomic():  # a batch is stored whole or not at all
        runs = [
            _persist_run(
                tenant=tenant,
                collections=collections,
                batch_id=batch_id,
                config=config,
                ks=ks,
                means=means,
                per_question=per_question,
                warnings=[*warnings, *rerank_warnings(config.rerank)],
                golden_fingerprint=golden_fingerprint,
                index_info={**index_info, "search_ms": round(search_ms, 1)},
                search_ms=search_ms,
                job=job,
            )
            for config, per_question, means, search_ms in scored
        ]
    return batch_id, runs


def _persist_run(*, tenant, collections, batch_id, config, ks, means, per_question, warnings, golden_fingerprint,
                 index_info, search_ms, job) -> EvaluationRun:  # fmt: skip
    started = time.perf_counter()
    results = [
        QuestionResult(
            position=position,
            entry_id=q.entry_id,
            entry_key=q.key,
            collection_id=q.collection_id,
            question=q.question,
            expected=q.qrels,
            **QuestionResult.ranked_fields(list(zip(ranking, hits.scores, strict=True))),
            first_relevant_rank=metrics.first_relevant_rank(ranking, q.qrels),
            missing_document_ids=metrics.missing_relevant(ranking, q.qrels),
            metrics=values,
        )
        for position, (q, hits, ranking, values) in enumerate(per_question)
    ]
    run = EvaluationRun(
        tenant=tenant,
        batch_id=batch_id,
        kind=RunKind.RETRIEVAL,
        label=config.label,
        config=config.as_dict(),
        ks=list(ks),
        metrics=means,
        metric_methods={name: "trec_eval" for name in means},
        warnings=warnings,
        golden_fingerprint=golden_fingerprint,
        index_info=index_info,
        job=job,
        # The configuration's searches and scoring plus building its results (the insert itself follows).
        duration_ms=round(search_ms + (time.perf_counter() - started) * 1000, 1),
    )
    return run_store(run, collections, results)


# --- the job -------------------------------------------------------------------------------------------------


def evaluation_job_create(
    *,
    tenant: Tenant,
    collections: Sequence[Collection],
    ks: Sequence[int],
    configs: Sequence[RunConfig],
    actor: str,
) -> Job:
    """An Evaluate job for validated collections, ks and configurations (the API's large evaluations and the
    dashboard's launcher both create it here), which evaluate_job runs; its launch is audited as `actor`."""
    return job_create(
        tenant=tenant,
        kind=JobKind.EVALUATE,
        collection=collections[0],
        input={
            "collection_pks": [c.pk for c in collections],
            "ks": list(ks),
            "configs": [c.as_dict() for c in configs],
        },
        actor=actor,
    )


def evaluate_job(job: Job, progress) -> dict:
    """The Evaluate job: the request was validated when the job was created."""
    collections = selectors.job_collections(job)
    configs = parse_configs(job.input["configs"], available_rerankers())
    batch_id, runs = evaluate_retrieval(
        tenant=job.tenant,
        collections=collections,
        ks=job.input["ks"],
        configs=configs,
        job=job,
        progress=progress,
    )
    return {"batch_id": str(batch_id), "runs": [run_summary(r) for r in runs]}
