"""Retrieval evaluation: every golden question through the search read path (evaluation.retrieval.read_path), once
per configuration, scored as trec_eval scores it (evaluation.retrieval.metrics), each configuration stored as one run of a
batch (evaluation.runs.store). The request its Evaluate job carries is evaluation.retrieval.request."""

from __future__ import annotations

import hashlib
import json
import math
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from evalsite.errors import EvalsiteError
from evalsite.jobs.models import Job
from evalsite.tenancy.models import Tenant
from evaluation.configs import RunConfig
from evaluation.models import EvaluationRun, QuestionResult, RunKind, RunStatus, Target
from evaluation.retrieval import metrics
from evaluation.retrieval.read_path import CollectionSearch, rerank_warnings
from evaluation.retrieval.run_files import RunFile
from evaluation.runs import selectors, stats
from evaluation.runs.selectors import GoldenQuestion
from evaluation.runs.store import questions_in, run_slices, run_store
from evaluation.targets.callers import Hits, TargetError
from evaluation.targets.services import resolve_targets, target_client
from goldenset.models import Collection


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


@dataclass
class RetrievalBatch:
    """One retrieval evaluation, from its plan to its stored runs: the questions each configuration asks (its
    subset's), the targets it calls, the built-in engine when a configuration searches it, and one instant for
    the whole batch (every question sees the same temporal state; a run without as_of records the instant it
    replayed)."""

    tenant: Tenant
    collections: Sequence[Collection]
    ks: Sequence[int]
    configs: list[RunConfig]
    asked: list[list[GoldenQuestion]]
    targets: dict[str, Target]
    warnings: list[str]
    search: CollectionSearch | None
    now: datetime
    # entry id -> the machine assessors whose grades were written into it (by evaluation.judgments.apply)
    machine: dict[str, list[dict]] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(len(questions) for questions in self.asked)


def evaluate_retrieval(
    *,
    tenant: Tenant,
    collections: Sequence[Collection],
    ks: Sequence[int],
    configs: Sequence[RunConfig],
    job: Job | None = None,
    progress: Callable[[int, int], None] | None = None,
    only: frozenset[str] | None = None,
    actor: str = "",
    batch_id: uuid.UUID | None = None,
) -> tuple[uuid.UUID, list[EvaluationRun]]:
    """Every golden question of the collections (or those whose entry ids are `only`: a study's confirmation
    part) through the search read path, once per configuration.

    Each configuration becomes one persisted run of a new batch; the golden set is snapshotted in the runs.
    A configuration's subset (evaluation.runs.slices) picks the questions it asks: checked for every configuration
    before any search, so a subset that selects nothing fails the call, not its last run. `batch_id`: the batch's
    id when the caller names it (a schedule's tick, which then finds its batch stored whole or not at all).
    """
    batch = plan_batch(tenant=tenant, collections=collections, ks=ks, configs=configs, only=only)
    scored = []
    before = 0  # questions of the configurations before this one (progress)
    for position in range(len(batch.configs)):
        scored.append(score_config(batch, position, progress, before))
        before += len(batch.asked[position])
    return store_batch(batch, scored, job, actor, batch_id)


def score_config(batch: RetrievalBatch, position: int, progress, before: int = 0) -> tuple:
    """The batch's configuration at `position` scored: (config, per question, search ms, the golden fingerprint
    of its questions, setup ms), what store_batch stores; `progress(done, total)` counts the batch's questions
    (`before`: those of the configurations scored before it)."""
    config, questions = batch.configs[position], batch.asked[position]

    def step(done: int) -> None:
        if progress and (done % 50 == 0 or done == len(questions)):
            progress(before + done, batch.total)

    started = time.perf_counter()
    per_question, setup_ms = _score(batch, config, questions, step)
    search_ms = (time.perf_counter() - started) * 1000
    return config, per_question, search_ms, fingerprint(questions), setup_ms


def plan_batch(*, tenant, collections, ks, configs, only=None, now: datetime | None = None) -> RetrievalBatch:
    """The questions, targets and engine of an evaluation, all checked before any question is asked (`now`: the
    batch's instant, when a part of it is planned again elsewhere: evaluation.retrieval.config_jobs)."""
    everything, warnings = retrieval_questions(collections)
    if only is not None:
        everything = [q for q in everything if q.entry_id in only]
    if not everything:
        raise EvalsiteError(
            "empty-golden-set",
            "No golden entries with expected documents in " + ", ".join(c.slug for c in collections) + ".",
            details={"collection_ids": [c.slug for c in collections]},
        )
    asked = [questions_in(everything, c.subset, collections) for c in configs]
    targets = resolve_targets(tenant, collections, configs)
    configs = [replace(c, target_kind=targets[c.target].kind) if c.target else c for c in configs]
    return RetrievalBatch(
        tenant=tenant,
        collections=collections,
        ks=ks,
        configs=configs,
        asked=asked,
        targets=targets,
        warnings=warnings,
        # The built-in engine's indexes, only when a configuration searches them (a target needs none).
        search=CollectionSearch(collections) if any(not c.target for c in configs) else None,
        now=now or timezone.now(),
        machine=selectors.machine_judged_entries(collections),
    )


def _score(batch: RetrievalBatch, config: RunConfig, questions, step) -> tuple[list[Scored], float | None]:
    """A configuration's questions asked (of the built-in engine or its target) and scored as trec_eval does; and
    for the built-in engine, the one-off milliseconds before its first question (indexes, reranker, compiled
    kernels), kept out of every question's latency."""
    depth = min(config.top_k, max(batch.ks)) if config.top_k else max(batch.ks)
    if config.target:
        answered = _target_questions(
            batch.targets[config.target],
            batch.collections[0],
            questions,
            depth,
            batch.ks,
            step,
            dict(config.params),
        )
        return answered, None
    assert batch.search is not None
    setup_ms = batch.search.prepare(config, depth, questions[0].question if questions else "", at=batch.now)
    per_question = []
    for i, q in enumerate(questions):
        began = time.perf_counter()
        hits = batch.search.rank(q.question, config, depth, at=batch.now)
        latency_ms = (time.perf_counter() - began) * 1000
        ranking = hits.keys(qualified=len(batch.collections) > 1)
        values = metrics.evaluate_query(ranking, q.qrels, batch.ks)
        per_question.append(Scored(q, ranking, hits.scores, values, latency_ms))
        step(i + 1)
    return per_question, setup_ms


def store_batch(
    batch: RetrievalBatch,
    scored,
    job: Job | None,
    actor: str = "",
    batch_id: uuid.UUID | None = None,
    index: dict | None = None,
) -> tuple[uuid.UUID, list[EvaluationRun]]:
    """One run per configuration (score_config's), all in one transaction under one batch id (`index`: the
    engine's index_info, when the batch scored its configurations elsewhere)."""
    batch_id = batch_id or uuid.uuid4()
    evaluated_at = batch.now.isoformat().replace("+00:00", "Z")
    index = index if index is not None else batch.search.index_info() if batch.search else {}
    index_info = {**index, "evaluated_at": evaluated_at}
    with transaction.atomic():  # a batch is stored whole or not at all
        runs = [
            _persist_run(
                tenant=batch.tenant,
                collections=batch.collections,
                batch_id=batch_id,
                config=config,
                ks=batch.ks,
                per_question=per_question,
                warnings=[*batch.warnings, *rerank_warnings(config.rerank)],
                golden_fingerprint=golden_fingerprint,
                index_info=(
                    {"evaluated_at": evaluated_at}
                    if config.target
                    else {
                        **index_info,
                        "search_ms": round(search_ms, 1),
                        "setup_ms": round(setup_ms or 0.0, 1),
                    }
                ),
                search_ms=search_ms,
                job=job,
                created_by=actor,
                machine=batch.machine,
            )
            for config, per_question, search_ms, golden_fingerprint, setup_ms in scored
        ]
    return batch_id, runs


@dataclass
class Scored:
    """One question of a run: its ranking and scores, trec_eval's measures of it, how long the search (or the
    target's call) took, and, for an external target, why it failed and how many ids the collection lacks."""

    q: GoldenQuestion
    ranking: list[str]
    scores: list[float]
    metrics: dict[str, float]
    latency_ms: float | None
    error: str = ""
    unjudged: dict[str, int] = field(default_factory=dict)


def _target_questions(target: Target, collection: Collection, questions, depth, ks, step, params) -> list:
    """Every question through an external target, `concurrency` calls at once; a failed call is that
    question's error (it is left out of the means), never a ranking of nothing."""
    answers: list[Hits | TargetError | None] = [None] * len(questions)
    with target_client(target, params) as client:

        def call(q: GoldenQuestion) -> Hits | TargetError:
            try:
                return client.search(q.question, depth, q.key or str(q.entry_id))
            except TargetError as exc:
                return exc

        # Progress is reported from this thread only: it writes the job's row, which the pool's threads must not.
        # A progress report that stops the job (cancelled) drops the calls not yet started.
        pool = ThreadPoolExecutor(max_workers=max(1, min(target.concurrency, len(questions))))
        try:
            futures = {pool.submit(call, q): i for i, q in enumerate(questions)}
            for done, future in enumerate(as_completed(futures), start=1):
                answers[futures[future]] = future.result()
                step(done)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    scored: list[tuple[list[str], list[float] | None, float | None] | TargetError] = []
    for answer in answers:
        assert answer is not None  # every future completed
        scored.append(
            answer if isinstance(answer, TargetError) else (answer.ids, answer.scores, answer.latency_ms)
        )
    return _score_external(collection, questions, scored, ks)


def _score_external(collection: Collection, questions, answers, ks) -> list[Scored]:
    """Rankings evalsite did not search (a target's, a run file's) scored: `answers` holds, per question,
    (ids best first, their scores or None, latency ms or None) or the TargetError of a failed call. Ids the
    collection lacks are counted per k (unjudged@k); they count as not relevant, as trec_eval counts them."""
    known = selectors.documents_present(
        collection, (d for a in answers if not isinstance(a, TargetError) for d in a[0])
    )
    out = []
    for q, answer in zip(questions, answers, strict=True):
        if isinstance(answer, TargetError):
            out.append(Scored(q, [], [], {}, answer.latency_ms, error=answer.problem))
            continue
        ids, scores, latency_ms = answer
        # No scores (a target that gives none): NaN is stored, never a made-up score; the order is its own.
        scores = scores if scores is not None else [math.nan] * len(ids)
        unjudged = {f"unjudged@{k}": sum(d not in known for d in ids[:k]) for k in ks}
        values = metrics.evaluate_query(ids, q.qrels, ks)
        out.append(Scored(q, ids, scores, values, latency_ms, unjudged=unjudged))
    return out


def evaluate_run_file(
    *,
    tenant: Tenant,
    collection: Collection,
    ks: Sequence[int],
    run_file: RunFile,
    filename: str,
    actor: str = "",
) -> tuple[uuid.UUID, list[EvaluationRun]]:
    """Each tag of an uploaded run file scored as a configuration would be, one run each of a new batch.

    Query ids are golden entry keys (or entry ids). Each query's documents are ranked as trec_eval ranks a
    run (score descending as 32-bit floats, ties by document id descending) and cut at the largest k, as a
    configuration's searches are. A golden question the run has no line for retrieved nothing (it counts,
    scoring 0, as with trec_eval -c); query ids that are no golden question are reported and left out."""
    questions, warnings = retrieval_questions([collection])
    if not questions:
        raise EvalsiteError(
            "empty-golden-set",
            f"No golden entries with expected documents in {collection.slug}.",
            details={"collection_ids": [collection.slug]},
        )
    depth = max(ks)
    by_id = {**{str(q.entry_id): q for q in questions}, **{q.key: q for q in questions if q.key}}
    golden_fingerprint = fingerprint(questions)
    evaluated_at = timezone.now().isoformat().replace("+00:00", "Z")
    scored = []
    for tag, per_query in run_file.runs.items():
        started = time.perf_counter()
        run_warnings = list(warnings)
        unknown = [qid for qid in per_query if qid not in by_id]
        if unknown:
            run_warnings.append(
                f"{len(unknown)} query ids of run {tag!r} are no golden question of {collection.slug} (matched "
                f"on entry keys, then entry ids) and were left out: " + ", ".join(unknown[:5])
                + (" ..." if len(unknown) > 5 else "")
            )  # fmt: skip
        listed = {id(by_id[qid]) for qid in per_query if qid in by_id}
        absent = [q for q in questions if id(q) not in listed]
        if absent:
            run_warnings.append(
                f"{len(absent)} golden questions have no line in run {tag!r}: they retrieved nothing and score 0 "
                f"(as with trec_eval -c): " + ", ".join(q.key or str(q.entry_id) for q in absent[:5])
                + (" ..." if len(absent) > 5 else "")
            )  # fmt: skip
        answers = []
        for q in questions:
            documents = per_query.get(q.key, {}) if q.key else {}
            documents = documents or per_query.get(str(q.entry_id), {})
            ranking = metrics.rank_run(documents)[:depth]
            answers.append((ranking, [documents[d] for d in ranking], None))
        config = RunConfig(label=tag, run_file=filename)
        per_question = _score_external(collection, questions, answers, ks)
        scored.append((config, per_question, run_warnings, (time.perf_counter() - started) * 1000))
    batch_id = uuid.uuid4()
    machine = selectors.machine_judged_entries([collection])
    with transaction.atomic():
        runs = [
            _persist_run(
                tenant=tenant,
                collections=[collection],
                batch_id=batch_id,
                config=config,
                ks=ks,
                per_question=per_question,
                warnings=run_warnings,
                golden_fingerprint=golden_fingerprint,
                index_info={"evaluated_at": evaluated_at},
                search_ms=ms,
                job=None,
                machine=machine,
                created_by=actor,
            )
            for config, per_question, run_warnings, ms in scored
        ]
    return batch_id, runs


def _run_status(config: RunConfig, per_question: Sequence[Scored]) -> tuple[str, list[str], dict]:
    """(status, warnings, summary) of a run: latency, and for a target the failed questions and the ids the
    collection does not have."""
    latencies = [s.latency_ms for s in per_question if not s.error and s.latency_ms is not None]
    summary: dict = {"latency_ms": stats.latency_summary(latencies)}
    warnings: list[str] = []
    if not (config.target or config.run_file):
        return RunStatus.COMPLETE, warnings, summary
    totals: dict[str, int] = {}
    for s in per_question:
        for name, count in s.unjudged.items():
            totals[name] = totals.get(name, 0) + count
    failed = [s for s in per_question if s.error]
    summary.update(unjudged=totals, failed_questions=len(failed))
    deepest = max(totals, key=lambda n: int(n.split("@")[1]), default=None)
    if deepest and totals[deepest]:
        affected = sum(1 for s in per_question if s.unjudged.get(deepest))
        warnings.append(
            f"{totals[deepest]} ids in the top {deepest.split('@')[1]} of {affected} questions are not documents "
            f"of the collection (unjudged: counted as not relevant; see each question's unjudged@k)."
        )
    if not failed:
        return RunStatus.COMPLETE, warnings, summary
    share = len(failed) / len(per_question)
    sample = "; ".join(f"{s.q.key or s.q.entry_id}: {s.error}" for s in failed[:3])
    if share > config.max_error_rate:
        warnings.append(
            f"Run failed: {len(failed)} of {len(per_question)} questions failed ({share:.1%}, above "
            f"max_error_rate {config.max_error_rate:.1%}), so no metrics are reported. {sample}"
        )
        return RunStatus.FAILED, warnings, summary
    warnings.append(
        f"Partial run: {len(failed)} of {len(per_question)} questions failed and are left out of every mean. "
        f"{sample}"
    )
    return RunStatus.PARTIAL, warnings, summary


def machine_provenance(
    per_question: Sequence[Scored], machine: Mapping[str, list[dict]]
) -> tuple[list, list]:
    """The machine assessors whose grades the run's questions read, each with its versions and how many questions,
    and a warning per assessor: a score on machine judgments is never shown as if people had judged."""
    used: dict[str, dict] = {}
    for s in per_question:
        for source in machine.get(str(s.q.entry_id), ()):
            used.setdefault(source["rater"], {**source, "questions": 0})["questions"] += 1
    warnings = [
        f"{u['questions']} of its questions read judgments written by {u['rater']} "
        f"({', '.join(str(v) for v in u['versions']) or 'no version recorded'}), a machine assessor, not people."
        for u in used.values()
    ]
    return list(used.values()), warnings


def _persist_run(*, tenant, collections, batch_id, config, ks, per_question, warnings, golden_fingerprint,
                 index_info, search_ms, job, machine=None, created_by="") -> EvaluationRun:  # fmt: skip
    started = time.perf_counter()
    status, run_warnings, summary = _run_status(config, per_question)
    machine_judgments, machine_warnings = machine_provenance(per_question, machine or {})
    if machine_judgments:
        summary = {**summary, "machine_judgments": machine_judgments}
        run_warnings = [*run_warnings, *machine_warnings]
    scored = [s.metrics for s in per_question if not s.error]
    means = {} if status == RunStatus.FAILED else metrics.mean_metrics(scored)
    results = [
        QuestionResult(
            position=position,
            entry_id=s.q.entry_id,
            entry_key=s.q.key,
            collection_id=s.q.collection_id,
            question=s.q.question,
            expected=s.q.qrels,
            **QuestionResult.ranked_fields(list(zip(s.ranking, s.scores, strict=True))),
            first_relevant_rank=None if s.error else metrics.first_relevant_rank(s.ranking, s.q.qrels),
            missing_document_ids=[] if s.error else metrics.missing_relevant(s.ranking, s.q.qrels),
            metrics=s.metrics,
            latency_ms=None if s.latency_ms is None else round(s.latency_ms, 3),
            error=s.error,
            unjudged=s.unjudged,
            tags=list(s.q.tags),
            origin=s.q.origin,
        )
        for position, s in enumerate(per_question)
    ]
    run = EvaluationRun(
        tenant=tenant,
        batch_id=batch_id,
        kind=RunKind.RETRIEVAL,
        label=config.label,
        config=config.as_dict(),
        ks=list(ks),
        metrics=means,
        metric_methods={name: metrics.method_of(name) for name in means},
        slices={} if status == RunStatus.FAILED else run_slices(results),
        warnings=[*warnings, *run_warnings],
        golden_fingerprint=golden_fingerprint,
        index_info=index_info,
        status=status,
        summary=summary,
        job=job,
        created_by=created_by,
        # The configuration's searches and scoring plus building its results (the insert itself follows).
        duration_ms=round(search_ms + (time.perf_counter() - started) * 1000, 1),
    )
    return run_store(run, collections, results)
