"""Answer evaluation: every question (the golden entries, answerable or not, plus the request's
`unanswerable_questions`) answered once per configuration through the path of `POST /search/answer`
(evaluation.answers.answering), each answer judged, and one run (kind answers) stored per configuration.

An evaluation is one `AnswerBatch`, carried through three steps:
- plan (`_plan`): the targets, models, judge and thresholds resolved, the questions each configuration's subset
  asks, and retrieval for the built-in configurations (on this thread: it reads the indexes and the pages);
- answer (`_answer_and_judge`): answering and judging on EVALSITE_LLM_CONCURRENCY threads (all configurations'
  questions in one pool), which touch the database only to read the call cache;
- store (`_store`): each configuration's questions judged pass or fail (evaluation.answers.verdicts), summed up,
  and written with its run, all in one transaction.
The writer, the judge and the verdicts are pure; this module feeds them and stores what they say.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from django.db import transaction
from django.utils import timezone

from evalsite.errors import EvalsiteError
from evalsite.jobs.models import Job
from evalsite.jobs.services import job_cancelled
from evalsite.llm.cache import DbCallCache
from evalsite.tenancy.models import Tenant
from evaluation.answers import judge, judge_llm, judge_votes, verdicts
from evaluation.answers.answer_runs import answer_run_store
from evaluation.answers.answering import (
    answer_model,
    chat_client,
    first_page_texts,
    judge_model_of,
    load_passages,
    retrieve,
    target_answer,
    write_answer,
)
from evaluation.answers.batch import AnswerBatch, AnswerPair, answer_questions
from evaluation.answers.configs import AnswerConfig, parse_answer_configs
from evaluation.answers.judge_identity import judge_name
from evaluation.answers.judge_weights import collection_term_weights
from evaluation.models import EvaluationJobKind, EvaluationRun, JudgeThreshold
from evaluation.retrieval.read_path import CollectionSearch, available_rerankers
from evaluation.runs import selectors
from evaluation.runs.selectors import GoldenQuestion
from evaluation.runs.slices import Subset
from evaluation.runs.store import empty_subset
from evaluation.targets.kinds import ANSWER_KINDS
from evaluation.targets.services import resolve_targets, target_client
from goldenset.models import Collection
from goldenset.selectors import pages_by_id


def evaluate_answers(
    *,
    tenant: Tenant,
    collections: Sequence[Collection],
    configs: Sequence[AnswerConfig],
    judge_model: str | None = None,
    judge_sampling: judge_votes.JudgeSampling | None = None,
    unanswerable_questions: Sequence[str] = (),
    max_questions: int | None = None,
    thresholds: dict[str, float] | None = None,
    offline: bool = False,
    job: Job | None = None,
    progress: Callable[[int, int], None] | None = None,
    only: frozenset[str] | None = None,
    actor: str = "",
) -> tuple[uuid.UUID, list[EvaluationRun]]:
    """`only`: the golden entries asked, by id (a study's confirmation part); None: every one. `actor`: who
    asked (the audit trail's name), kept on each run."""
    golden = (
        None if only is None else [q for q in selectors.golden_questions(collections) if q.entry_id in only]
    )
    batch = _plan(
        tenant=tenant, collections=collections, configs=configs, judge_model=judge_model,
        judge_sampling=judge_sampling, unanswerable_questions=unanswerable_questions,
        max_questions=max_questions, thresholds=thresholds, offline=offline, golden=golden,
    )  # fmt: skip
    _answer_and_judge(batch, job=job, progress=progress)
    return _store(batch, job=job, actor=actor)


def _plan(*, tenant, collections, configs, judge_model, judge_sampling, unanswerable_questions, max_questions,
          thresholds, offline, golden=None) -> AnswerBatch:  # fmt: skip
    """Everything resolved and checked before any question is answered, and the built-in retrieval done."""
    targets = resolve_targets(tenant, collections, [c.run for c in configs], kinds=ANSWER_KINDS)
    configs = [
        replace(c, run=replace(c.run, target_kind=targets[c.run.target].kind)) if c.run.target else c
        for c in configs
    ]
    judging = judge_model_of(judge_model, offline=offline)
    # The request's thresholds, else the ones calibrated for this judge on the collection, else the defaults.
    chosen, sources = effective_thresholds(collections[0], judge_name(judging), thresholds)
    golden = selectors.golden_questions(collections) if golden is None else list(golden)
    if not golden and not unanswerable_questions:
        raise EvalsiteError(
            "empty-golden-set",
            "No golden entries (and no unanswerable_questions) in "
            + ", ".join(c.slug for c in collections)
            + ".",
            details={"collection_ids": [c.slug for c in collections]},
        )
    # Each configuration's subset picks its questions (checked for all before any is answered).
    asked: dict[Subset, tuple[list[GoldenQuestion], list[str]]] = {}
    for config in configs:
        if config.run.subset not in asked:
            asked[config.run.subset] = answer_questions(
                collections, unanswerable_questions, max_questions, subset=config.run.subset, golden=golden
            )
    batch = AnswerBatch(
        tenant=tenant,
        collections=collections,
        configs=configs,
        models=[
            None if c.run.target else answer_model(c.model, f"configs[{i}].model", offline=offline)
            for i, c in enumerate(configs)
        ],
        judging=judging,
        sampling=judge_sampling or judge_votes.JudgeSampling(),
        thresholds=chosen,
        threshold_sources=sources,
        asked=asked,
        targets=targets,
    )
    batch.pairs = _retrieved(batch)
    return batch


def effective_thresholds(
    collection: Collection, judge_key: str, requested: dict[str, float] | None
) -> tuple[dict[str, float], dict[str, Any]]:
    """(thresholds, where each came from) for an answer evaluation: the request's, else the collection's
    calibrated one for this judge (applied by evaluation.judgments.calibration), else the default."""
    requested = requested or {}
    calibrated = {t.metric: t for t in JudgeThreshold.objects.filter(collection=collection, judge=judge_key)}
    values, sources = {}, {}
    for metric in sorted({*verdicts.DEFAULT_THRESHOLDS, *requested}):
        if metric in requested:
            values[metric], sources[metric] = requested[metric], {"source": "request"}
        elif metric in calibrated:
            found = calibrated[metric]
            values[metric] = found.value
            sources[metric] = {"source": "calibrated", "judge": judge_key, **found.source}
        else:
            values[metric], sources[metric] = verdicts.DEFAULT_THRESHOLDS[metric], {"source": "default"}
    return values, sources


def answer_scores(
    *, tenant: Tenant, collection: Collection, config: AnswerConfig, questions: Sequence[GoldenQuestion],
    judge_model: str | None,
) -> list[dict[str, judge.Score] | None]:  # fmt: skip
    """A study's trial: each question answered with `config` and judged as an evaluation judges it (its five
    metrics), in order; None for a question whose answer failed. Nothing is stored."""
    batch = _plan(
        tenant=tenant, collections=[collection], configs=[config], judge_model=judge_model, judge_sampling=None,
        unanswerable_questions=(), max_questions=None, thresholds=None, offline=False, golden=questions,
    )  # fmt: skip
    _answer_and_judge(batch, job=None, progress=None)
    return [
        pair.judged if pair.answer is not None and pair.answer.error is None else None for pair in batch.pairs
    ]


def _retrieved(batch: AnswerBatch) -> list[AnswerPair]:
    """A pair per configuration and question, with the built-in engine's passages (an answering target
    retrieves for itself, so its pairs start empty)."""
    now = timezone.now()
    builtin = any(not c.run.target for c in batch.configs)
    engine = CollectionSearch(batch.collections) if builtin else None
    retrieved = [
        (index, q, [], [], [])
        if config.run.target or engine is None
        else (index, q, *retrieve(engine, q.question, config, at=now))
        for index, config in enumerate(batch.configs)
        for q in batch.asked[config.run.subset][0]
    ]
    pages = pages_by_id(pk for *_, page_ids in retrieved for pk in page_ids)
    return [
        AnswerPair(index, q, keys, scores, load_passages(page_ids, keys, pages))
        for index, q, keys, scores, page_ids in retrieved
    ]


def _answer_and_judge(batch: AnswerBatch, *, job: Job | None, progress) -> None:
    """Every pair answered (by the writer or its target) and judged, concurrently; the batch's elapsed time."""
    weights = collection_term_weights(batch.collections)  # term rarity for the heuristic judge
    cache = DbCallCache()
    needs_client = batch.judging is not None or any(m is not None for m in batch.models)
    client = chat_client(cache) if needs_client else None
    judge_obj = (
        judge_llm.LLMJudge(client, batch.judging, samples=batch.sampling.samples, temperature=batch.sampling.temperature)
        if client is not None and batch.judging is not None
        else None
    )  # fmt: skip
    started = time.perf_counter()
    callers = {name: target_client(target) for name, target in batch.targets.items()}
    # At most a target's `concurrency` calls to it at once, whatever the pool's size.
    slots = {name: threading.BoundedSemaphore(t.concurrency) for name, t in batch.targets.items()}

    def judged(pair: AnswerPair) -> AnswerPair:
        assert pair.answer is not None
        if pair.answer.error is None and pair.question.answerable:
            q = pair.question
            pair.judged = judge.judge_question(
                q.question, q.reference, pair.answer, pair.passages, judge_obj, weights
            )
        return pair

    def work(pair: AnswerPair) -> AnswerPair:
        config = batch.configs[pair.config_index]
        if config.run.target:
            with slots[config.run.target]:
                pair.answer, pair.keys, pair.scores, pair.passages, pair.texts_missing = target_answer(
                    callers[config.run.target], pair.question, config
                )
            if pair.texts_missing:
                return pair  # judged below, once this thread's pages are read in the caller's
        else:
            model = batch.models[pair.config_index]
            pair.answer = write_answer(
                client, model, pair.question.question, pair.passages, config.groundedness
            )
        return judged(pair)

    concurrency = max([client.concurrency if client else 1, *(t.concurrency for t in batch.targets.values())])
    try:
        _run_all(batch.pairs, work, concurrency, cache, progress, job, len(batch.pairs))
        unread = [pair for pair in batch.pairs if pair.texts_missing]
        if unread:  # the pages read here (the database is this thread's), then those answers judged
            texts = first_page_texts(
                batch.collections[0], {p.document_id for pair in unread for p in pair.passages}
            )
            for pair in unread:
                pair.passages = [replace(p, text=texts.get(p.document_id, "")) for p in pair.passages]
            _run_all(unread, judged, concurrency, cache, None, job, len(unread))
    finally:
        cache.flush()
        if client is not None:
            client.close()
        for caller in callers.values():
            caller.close()
    batch.elapsed_ms = (time.perf_counter() - started) * 1000


def _store(batch: AnswerBatch, *, job: Job | None, actor: str = "") -> tuple[uuid.UUID, list[EvaluationRun]]:
    """One run per configuration, all in one transaction under one batch id."""
    batch_id = uuid.uuid4()
    with transaction.atomic():
        runs = [answer_run_store(batch, index, batch_id, job, actor) for index in range(len(batch.configs))]
    return batch_id, runs


def _run_all(pairs, work, concurrency: int, cache: DbCallCache, progress, job, total: int) -> None:
    """Answer and judge every pair, `concurrency` at a time; progress, cache writes and cancel checks here."""
    done = 0
    if concurrency <= 1:
        for pair in pairs:
            work(pair)
            done += 1
            if progress and (done % 20 == 0 or done == total):
                progress(done, total)
        return
    checked = time.monotonic()
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="answers") as pool:
        pending: set[Future] = {pool.submit(work, pair) for pair in pairs}
        while pending:
            finished, pending = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
            for future in finished:
                future.result()  # a bug in the pure code must surface, not vanish
            done += len(finished)
            cache.flush()
            if progress and finished:
                progress(done, total)
            if job is not None and time.monotonic() - checked > 1.0:
                checked = time.monotonic()
                if job_cancelled(job.pk):
                    for future in pending:
                        future.cancel()
                    raise EvalsiteError("job-cancelled", "The evaluation was cancelled.")


# --- the request, as its job carries it (evaluation.reports.batch_jobs) ---------------------------------------


@dataclass(frozen=True)
class AnswerRequest:
    """An answer evaluation's configurations, judge, extra questions, cap and thresholds, validated."""

    configs: Sequence[AnswerConfig]
    judge_model: str | None = None
    judge_sampling: judge_votes.JudgeSampling = field(default_factory=judge_votes.JudgeSampling)
    unanswerable_questions: Sequence[str] = ()
    max_questions: int | None = None
    thresholds: dict[str, float] = field(default_factory=dict)
    job_kind: ClassVar[str] = EvaluationJobKind.EVALUATE_ANSWERS

    def check(self, tenant: Tenant, collections: Sequence[Collection]) -> None:
        """A model, target or judge that cannot run, or a subset that selects nothing, is the request's 400."""
        for i, config in enumerate(self.configs):
            if not config.run.target:
                answer_model(config.model, f"configs[{i}].model")
        resolve_targets(tenant, collections, [c.run for c in self.configs], kinds=ANSWER_KINDS)
        judge_model_of(self.judge_model)
        for config in self.configs:
            if config.run.subset and not selectors.count_answer_questions(collections, config.run.subset):
                raise empty_subset(config.run.subset, collections)

    def job_input(self) -> dict[str, Any]:
        return {
            "configs": [c.request() for c in self.configs],
            "judge_model": self.judge_model,
            "judge_samples": self.judge_sampling.samples,
            "judge_temperature": self.judge_sampling.temperature,
            "unanswerable_questions": list(self.unanswerable_questions),
            "max_questions": self.max_questions,
            "thresholds": self.thresholds,
        }

    @classmethod
    def from_job_input(cls, spec: Mapping[str, Any]) -> AnswerRequest:
        return cls(
            configs=parse_answer_configs(spec["configs"], available_rerankers()),
            judge_model=spec.get("judge_model"),
            judge_sampling=judge_votes.JudgeSampling(  # a job queued before sampling existed: one judgement
                spec.get("judge_samples") or 1,
                spec.get("judge_temperature", judge_votes.DEFAULT_SAMPLING_TEMPERATURE),
            ),
            unanswerable_questions=spec.get("unanswerable_questions") or [],
            max_questions=spec.get("max_questions"),
            thresholds=spec.get("thresholds") or {},
        )

    def evaluate(
        self, *, tenant, collections, job=None, progress=None, actor=""
    ) -> tuple[uuid.UUID, list[EvaluationRun]]:
        return evaluate_answers(
            tenant=tenant,
            collections=collections,
            configs=self.configs,
            judge_model=self.judge_model,
            judge_sampling=self.judge_sampling,
            unanswerable_questions=self.unanswerable_questions,
            max_questions=self.max_questions,
            thresholds=self.thresholds,
            job=job,
            progress=progress,
            actor=actor,
        )
