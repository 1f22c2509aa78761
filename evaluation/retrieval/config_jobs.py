"""A retrieval evaluation of several configurations spread over the workers: one child job per configuration
(evalsite.jobs.fan_out), gathered into one batch.

- `spread_batch` (the Evaluate job's handler, through RetrievalRequest.spread): the batch planned and checked as
  evaluate_retrieval plans it (its instant fixed), then a child job of kind EvaluateConfig per configuration;
- `config_job` (each child's handler): the batch planned again at that instant and its one configuration scored
  exactly as evaluate_retrieval scores it (score_config); the scores are the child's result, not yet a run;
- `gather_batch` (once every child completed): the children's scores stored as the batch's runs, in one
  transaction under one batch id (the parent job's id), as evaluate_retrieval stores them (store_batch). A gather
  run again (its worker died after the commit) finds the batch stored and stores nothing twice.
So the runs, their figures and the batch are those of one job scoring every configuration in turn; the
configurations only ran at once. A child sees a cancel at its next checkpoint (every 50 questions).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import asdict, replace
from datetime import datetime
from typing import Any

from django.db import transaction

from evalsite.errors import EvalsiteError
from evalsite.jobs.kinds import Child, FanOut
from evalsite.jobs.models import Job
from evalsite.jobs.services import job_cancelled
from evalsite.tenancy.models import Tenant
from evaluation.configs import RunConfig, parse_configs
from evaluation.models import EvaluationJobKind, EvaluationRun
from evaluation.retrieval.evaluate import RetrievalBatch, Scored, plan_batch, score_config, store_batch
from evaluation.retrieval.read_path import available_rerankers
from evaluation.runs.selectors import GoldenQuestion, job_collections
from goldenset.models import Collection


def spread_batch(
    *, tenant: Tenant, collections: Sequence[Collection], ks, configs: Sequence[RunConfig], actor: str
) -> FanOut:
    """The batch planned (its errors raised now, before any child), then one child job per configuration."""
    batch = plan_batch(tenant=tenant, collections=collections, ks=ks, configs=configs)
    common = {"collection_pks": [c.pk for c in collections], "ks": list(ks), "now": batch.now.isoformat()}
    return FanOut(
        tuple(
            Child(
                EvaluationJobKind.EVALUATE_CONFIG,
                {**common, "config": config.request(), "actor": actor},
                total=len(questions),
            )
            for config, questions in zip(configs, batch.asked, strict=True)
        )
    )


def config_job(job: Job, progress) -> dict[str, Any]:
    """A child: its configuration of the batch scored (see the module's doc)."""
    spec = job.input
    collections = job_collections(job)
    configs = parse_configs([spec["config"]], available_rerankers())
    batch = plan_batch(
        tenant=job.tenant,
        collections=collections,
        ks=spec["ks"],
        configs=configs,
        now=datetime.fromisoformat(spec["now"]),
    )

    def checkpoint(done: int, total: int) -> None:
        if job_cancelled(job.pk):
            raise EvalsiteError("job-cancelled", "The evaluation was cancelled.")
        progress(done, total)

    config, per_question, search_ms, golden_fingerprint, setup_ms = score_config(batch, 0, checkpoint)
    return {
        "target_kind": config.target_kind,
        "search_ms": search_ms,
        "setup_ms": setup_ms,
        "fingerprint": golden_fingerprint,
        "warnings": batch.warnings,
        "index_info": batch.search.index_info() if batch.search else None,
        "machine": {
            s.q.entry_id: batch.machine[s.q.entry_id] for s in per_question if s.q.entry_id in batch.machine
        },
        "questions": [_encoded(s) for s in per_question],
    }


def gather_batch(
    *,
    tenant: Tenant,
    collections: Sequence[Collection],
    ks,
    configs: Sequence[RunConfig],
    job: Job,
    children: list[Job],
    actor: str,
) -> tuple[uuid.UUID, list[EvaluationRun]]:
    """The children's scores stored as one batch (see the module's doc)."""
    results = [child.result or {} for child in children]
    configs = [
        replace(config, target_kind=result["target_kind"]) if result.get("target_kind") else config
        for config, result in zip(configs, results, strict=True)
    ]
    machine: dict[str, list[dict]] = {}
    for result in results:
        machine.update(result["machine"])
    batch = RetrievalBatch(
        tenant=tenant,
        collections=collections,
        ks=ks,
        configs=configs,
        asked=[],
        targets={},
        warnings=results[0]["warnings"],
        search=None,
        now=datetime.fromisoformat(children[0].input["now"]),
        machine=machine,
    )
    scored = [
        (config, [_decoded(q) for q in r["questions"]], r["search_ms"], r["fingerprint"], r["setup_ms"])
        for config, r in zip(configs, results, strict=True)
    ]
    index: dict = next((r["index_info"] for r in results if r.get("index_info") is not None), {})
    with transaction.atomic():
        Job.objects.select_for_update().filter(pk=job.pk).values_list("pk", flat=True).first()
        stored = list(EvaluationRun.objects.filter(batch_id=job.pk).order_by("created_at", "pk"))
        if stored:  # a gather run again after its commit: the batch is there, whole
            return job.pk, stored
        return store_batch(batch, scored, job, actor, job.pk, index=index)


def _number(value: float) -> float | None:
    """JSON (PostgreSQL's jsonb) holds no NaN: a target's missing score is stored as null."""
    return None if isinstance(value, float) and math.isnan(value) else value


def _encoded(s: Scored) -> dict[str, Any]:
    return {
        "q": {**asdict(s.q), "document_ids": list(s.q.document_ids), "tags": list(s.q.tags)},
        "ranking": s.ranking,
        "scores": [_number(v) for v in s.scores],
        "metrics": s.metrics,
        "latency_ms": s.latency_ms,
        "error": s.error,
        "unjudged": s.unjudged,
    }


def _decoded(data: dict[str, Any]) -> Scored:
    q = data["q"]
    question = GoldenQuestion(**{**q, "document_ids": tuple(q["document_ids"]), "tags": tuple(q["tags"])})
    scores = [math.nan if v is None else v for v in data["scores"]]
    return Scored(
        question,
        data["ranking"],
        scores,
        data["metrics"],
        data["latency_ms"],
        data["error"],
        data["unjudged"],
    )
