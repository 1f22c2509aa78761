"""Grounded answers and their evaluation: the Django side (loading, retrieval, concurrency, persistence).

The answer writer (evaluation.answers.writer), the judge (evaluation.answers.judge) and the verdicts and summaries
(evaluation.answers.verdicts) are pure; this module feeds them and stores what they say.

- `answer_question` is `POST /search/answer`: retrieve with a configuration, answer from those pages only.
- `evaluate_answers` runs every question (the golden entries, answerable or not, plus the request's
  `unanswerable_questions`) through that same path once per configuration, judges each answer, and persists one
  run (kind answers) per configuration. Retrieval runs first, on this thread; answering and judging run on
  EVALSITE_LLM_CONCURRENCY threads (all configurations' questions in one pool), which touch the database only to
  read the call cache; results are written here, in one transaction per batch.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from typing import Any

from django.db import transaction
from django.utils import timezone

from evalsite.errors import EvalsiteError
from evalsite.jobs.models import Job
from evalsite.jobs.services import job_cancelled, job_create
from evalsite.llm.cache import DbCallCache
from evalsite.llm.client import ChatClient
from evalsite.llm.model_choice import resolve_model
from evalsite.tenancy.models import Tenant
from evaluation.answers import judge, judge_llm, judge_votes, verdicts
from evaluation.answers import writer as answer_writer
from evaluation.answers.judge_weights import collection_term_weights
from evaluation.configs import AnswerConfig, parse_answer_configs
from evaluation.judgments.calibration import effective_thresholds, judge_name
from evaluation.models import EvaluationJobKind, EvaluationRun, QuestionResult, RunKind, RunStatus
from evaluation.retrieval.read_path import CollectionSearch, available_rerankers, rerank_warnings
from evaluation.runs import selectors, stats
from evaluation.runs.selectors import GoldenQuestion
from evaluation.runs.slices import EVERY, Subset
from evaluation.runs.store import empty_subset, questions_in, run_slices, run_store, run_summary
from evaluation.targets.callers import TargetClient, TargetError
from evaluation.targets.kinds import ANSWER_KINDS
from evaluation.targets.services import resolve_targets, target_client
from goldenset.generation import PageText
from goldenset.models import Collection, Page
from goldenset.selectors import pages_by_id
from goldenset.vocabulary.chunks import chunks

EXTRACTIVE, HEURISTIC = "extractive", "heuristic"  # the offline answer and judge, as a request names them
MAX_UNANSWERABLE = 1000


def answer_model(requested: str | None, field: str, *, offline: bool = False) -> str | None:
    """The answering model for a configuration; None = the extractive answer."""
    return None if offline else resolve_model(requested, field=field, offline=EXTRACTIVE)


def judge_model_of(requested: str | None, *, offline: bool = False) -> str | None:
    """The judge model; None = the heuristic judge."""
    return None if offline else resolve_model(requested, field="judge_model", offline=HEURISTIC)


# --- retrieval -------------------------------------------------------------------------------------------------


def retrieve(
    engine: CollectionSearch, question: str, config: AnswerConfig, at=None
) -> tuple[list[str], list[float], list[int]]:
    """(document keys, scores, page pks) of the top_k documents, each with its best page."""
    hits = engine.rank(question, config.run, config.top_k, at=at)
    return hits.keys(qualified=len(engine.collections) > 1), hits.scores, engine.page_ids(hits)


def load_passages(
    page_ids: Sequence[int], keys: Sequence[str], pages: Mapping[int, PageText] | None = None
) -> list[answer_writer.Passage]:
    """The retrieved pages as numbered passages (1 = the best), under the same document keys as the ranking;
    `pages` when the caller loaded them already (an evaluation loads every retrieved page at once)."""
    pages = pages_by_id(page_ids) if pages is None else pages
    return [
        answer_writer.Passage(
            number=i,
            document_id=key,
            page_number=pages[pk].number,
            title=pages[pk].title,
            text=pages[pk].text,
        )
        for i, (pk, key) in enumerate(zip(page_ids, keys, strict=True), start=1)
        if pk in pages
    ]


def _client(cache: DbCallCache | None = None) -> ChatClient:
    return ChatClient.from_settings(cache=cache)


def write_answer(
    client: ChatClient | None, model: str | None, question: str, passages, groundedness: str
) -> answer_writer.Answer:
    if model is None or client is None:
        return answer_writer.extractive_answer(question, passages, groundedness)
    return answer_writer.llm_answer(client, model, question, passages, groundedness)


def answer_question(
    *, collections: Sequence[Collection], question: str, config: AnswerConfig, offline: bool = False
) -> dict[str, Any]:
    """POST /search/answer: the grounded answer users get, with its citations and passages."""
    started = time.perf_counter()
    model = answer_model(config.model, "model", offline=offline)
    engine = CollectionSearch(collections)
    keys, scores, page_ids = retrieve(engine, question, config)
    passages = load_passages(page_ids, keys)
    if model is None:
        answer = write_answer(None, None, question, passages, config.groundedness)
    else:
        with _client(DbCallCache()) as client:
            answer = write_answer(client, model, question, passages, config.groundedness)
            client.cache.flush()  # type: ignore[union-attr]
    if answer.error:
        raise EvalsiteError("llm-unavailable", f"The answer could not be written: {answer.error}", status=503)
    return {
        "question": question,
        "answer": answer.text,
        "refused": answer.refused,
        "method": answer.method,
        "model": answer.model,
        "groundedness": config.groundedness,
        "support": answer.support,
        "citations": [_citation(c) for c in answer.citations],
        "passages": [_passage(p, score) for p, score in zip(passages, scores, strict=False)],
        "config": config.as_dict(),
        "usage": {"prompt_tokens": answer.prompt_tokens, "completion_tokens": answer.completion_tokens},
        "took_ms": round((time.perf_counter() - started) * 1000, 1),
    }


def _citation(c: answer_writer.Citation) -> dict:
    return {"number": c.number, "document_id": c.document_id, "statement": c.statement}


def _passage(p: answer_writer.Passage, score: float | None = None) -> dict:
    out = {"number": p.number, "document_id": p.document_id, "page_number": p.page_number, "title": p.title}
    if score is not None:
        out["score"] = score
    return {**out, "text": p.text}


# --- evaluation ------------------------------------------------------------------------------------------------


def answer_questions(
    collections: Sequence[Collection],
    unanswerable: Sequence[str],
    max_questions: int | None,
    *,
    subset: Subset = EVERY,
    golden: Sequence[GoldenQuestion] | None = None,
) -> tuple[list[GoldenQuestion], list[str]]:
    """The golden entries in the subset (in order, up to max_questions) and the request's unanswerable
    questions (always asked: the request names them); `golden` when the caller read the entries already."""
    questions = selectors.golden_questions(collections) if golden is None else list(golden)
    if questions:  # none at all is the caller's empty-golden-set, whatever the subset
        questions = questions_in(questions, subset, collections)
    warnings: list[str] = []
    if max_questions is not None and len(questions) > max_questions:
        warnings.append(
            f"max_questions: {max_questions} of the {len(questions)} golden entries were evaluated."
        )
        questions = questions[:max_questions]
    for text in unanswerable:
        questions.append(GoldenQuestion(None, "", collections[0].slug, text, {}, answerable=False))
    return questions, warnings


@dataclass
class _Pair:
    config_index: int
    question: GoldenQuestion
    keys: list[str]
    scores: list[float]
    passages: list[answer_writer.Passage]
    answer: answer_writer.Answer | None = None
    judged: dict[str, judge.Score] | None = None
    texts_missing: bool = False  # an answering target named passages without their texts: read, then judged


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
) -> tuple[uuid.UUID, list[EvaluationRun]]:
    targets = resolve_targets(tenant, collections, [c.run for c in configs], kinds=ANSWER_KINDS)
    configs = [
        replace(c, run=replace(c.run, target_kind=targets[c.run.target].kind)) if c.run.target else c
        for c in configs
    ]
    models = [
        None if c.run.target else answer_model(c.model, f"configs[{i}].model", offline=offline)
        for i, c in enumerate(configs)
    ]
    judging = judge_model_of(judge_model, offline=offline)
    # The request's thresholds, else the ones calibrated for this judge on the collection, else the defaults.
    thresholds, threshold_sources = effective_thresholds(collections[0], judge_name(judging), thresholds)
    sampling = judge_sampling or judge_votes.JudgeSampling()
    golden = selectors.golden_questions(collections)
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
    now = timezone.now()
    # The built-in engine only for the configurations it answers: an answering target retrieves for itself.
    engine = CollectionSearch(collections) if any(not c.run.target for c in configs) else None
    retrieved = [
        (index, q, [], [], [])
        if config.run.target or engine is None
        else (index, q, *retrieve(engine, q.question, config, at=now))
        for index, config in enumerate(configs)
        for q in asked[config.run.subset][0]
    ]
    pages = pages_by_id(pk for *_, page_ids in retrieved for pk in page_ids)
    pairs = [
        _Pair(index, q, keys, scores, load_passages(page_ids, keys, pages))
        for index, q, keys, scores, page_ids in retrieved
    ]

    # Term rarity in the collections for the heuristic judge (a bounded sample, cached per content version).
    weights = collection_term_weights(collections)
    cache = DbCallCache()
    needs_client = judging is not None or any(m is not None for m in models)
    client = _client(cache) if needs_client else None
    judge_obj = (
        judge_llm.LLMJudge(client, judging, samples=sampling.samples, temperature=sampling.temperature)
        if client is not None and judging is not None
        else None
    )
    started = time.perf_counter()
    total = len(pairs)
    callers = {name: target_client(target) for name, target in targets.items()}
    # At most a target's `concurrency` calls to it at once, whatever the pool's size.
    slots = {name: threading.BoundedSemaphore(target.concurrency) for name, target in targets.items()}

    def judged(pair: _Pair) -> _Pair:
        assert pair.answer is not None
        if pair.answer.error is None and pair.question.answerable:
            pair.judged = judge.judge_question(
                pair.question.question,
                pair.question.reference,
                pair.answer,
                pair.passages,
                judge_obj,
                weights,
            )
        return pair

    def work(pair: _Pair) -> _Pair:
        config = configs[pair.config_index]
        if config.run.target:
            with slots[config.run.target]:
                pair.answer, pair.keys, pair.scores, pair.passages, pair.texts_missing = _target_answer(
                    callers[config.run.target], pair.question, config
                )
            if pair.texts_missing:
                return pair  # judged below, once this thread's pages are read in the caller's
        else:
            pair.answer = write_answer(
                client, models[pair.config_index], pair.question.question, pair.passages, config.groundedness
            )
        return judged(pair)

    concurrency = max([client.concurrency if client else 1, *(t.concurrency for t in targets.values())])
    try:
        _run_all(pairs, work, concurrency, cache, progress, job, total)
        unread = [pair for pair in pairs if pair.texts_missing]
        if unread:  # the pages read here (the database is this thread's), then those answers judged
            texts = _first_page_texts(
                collections[0], {p.document_id for pair in unread for p in pair.passages}
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
    elapsed_ms = (time.perf_counter() - started) * 1000
    batch_id = uuid.uuid4()
    with transaction.atomic():
        runs = [
            _persist(
                tenant=tenant,
                collections=collections,
                batch_id=batch_id,
                config=config,
                model=models[index],
                judge_model=judging,
                judge_sampling=sampling,
                pairs=[p for p in pairs if p.config_index == index],
                thresholds=thresholds,
                threshold_sources=threshold_sources,
                warnings=[*asked[config.run.subset][1], *rerank_warnings(config.run.rerank)],
                fingerprint=answers_fingerprint(asked[config.run.subset][0]),
                elapsed_ms=elapsed_ms / len(configs),
                job=job,
            )
            for index, config in enumerate(configs)
        ]
    return batch_id, runs


def answers_fingerprint(questions: Sequence[GoldenQuestion]) -> str:
    """The questions an answer run asked: two runs compare question by question only when theirs agree."""
    return hashlib.sha256(
        json.dumps(
            [[q.entry_id, q.question, q.reference, sorted(q.qrels), q.answerable] for q in questions]
        ).encode()
    ).hexdigest()


def _target_answer(
    caller: TargetClient, q: GoldenQuestion, config: AnswerConfig
) -> tuple[answer_writer.Answer, list[str], list[float], list[answer_writer.Passage], bool]:
    """(answer, the passages' document ids, their scores (NaN: a target gives none), the passages, whether
    their texts are still to be read) of an answering target, judged as a built-in answer is. Citations are the answer's [n] markers (numbered in
    passage order), else the ids the target says it cites, each attached to the whole answer. Passages
    without mapped texts have text "": the caller reads them from the collection (the document's first
    page). A failed call is the answer's error, so the question is diagnosed `error` and left out of every
    metric."""
    name = caller.spec.name
    try:
        rag = caller.answer(q.question, config.top_k, q.key or str(q.entry_id or ""))
    except TargetError as exc:
        failed = answer_writer.Answer(
            text="", refused=False, citations=(), method="target", model=name, support=-1.0,
            latency_ms=exc.latency_ms or 0.0, error=f"target-failed: {exc.problem}",
        )  # fmt: skip
        return failed, [], [], [], False
    ids = rag.passage_ids
    texts = rag.passage_texts if rag.passage_texts is not None else [""] * len(ids)
    passages = [
        answer_writer.Passage(number=i, document_id=doc, page_number=1, title="", text=text)
        for i, (doc, text) in enumerate(zip(ids, texts, strict=True), start=1)
    ]
    citations = answer_writer.parse_citations(rag.text, passages)
    if not citations and rag.cited_ids:
        statement = answer_writer.strip_markers(rag.text)
        number_of: dict[str, int] = {}
        for p in passages:
            number_of.setdefault(p.document_id, p.number)
        citations = tuple(
            answer_writer.Citation(number_of[doc], doc, statement)
            for doc in dict.fromkeys(rag.cited_ids)
            if doc in number_of
        )
    answer = answer_writer.Answer(
        text=rag.text,
        refused=rag.refused if rag.refused is not None else answer_writer.looks_like_refusal(rag.text),
        citations=citations,
        method="target",
        model=name,
        support=-1.0,
        latency_ms=rag.latency_ms,
        prompt_tokens=rag.prompt_tokens,
        completion_tokens=rag.completion_tokens,
        unknown_citations=answer_writer.unknown_citations(rag.text, passages),
    )
    return answer, ids, [math.nan] * len(ids), passages, rag.passage_texts is None and bool(ids)


def _first_page_texts(collection: Collection, document_ids: set[str]) -> dict[str, str]:
    """Each of these documents' first page text, by document id (an id the collection lacks is absent)."""
    found: dict[str, str] = {}
    for chunk in chunks(sorted(document_ids)):
        pages = (
            Page.objects.filter(document__collection=collection, document__external_id__in=chunk)
            .order_by("document_id", "number")
            .values_list("document__external_id", "text")
        )
        for doc, text in pages:
            found.setdefault(doc, text)
    return found


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


def _persist(*, tenant, collections, batch_id, config: AnswerConfig, model, judge_model, judge_sampling,
             pairs: list[_Pair], thresholds, threshold_sources, warnings, fingerprint, elapsed_ms,
             job) -> EvaluationRun:  # fmt: skip
    outcomes, question_verdicts, results = [], [], []
    usage = {"answer_calls": 0, "judge_calls": 0, "cached_calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
             "call_latency_ms": 0.0}  # fmt: skip
    sanity = 0
    for position, pair in enumerate(pairs):
        answer, q = pair.answer, pair.question
        assert answer is not None
        scores = pair.judged or {}
        outcome = verdicts.QuestionOutcome(
            answerable=q.answerable,
            refused=answer.refused,
            scores=scores,
            expected_ids=list(q.qrels),
            retrieved_ids=pair.keys,
            answer_error=answer.error,
        )
        verdict = verdicts.judge_outcome(outcome, thresholds)
        outcomes.append(outcome)
        question_verdicts.append(verdict)
        question_warnings = []
        if q.answerable and q.reference:
            check = verdicts.sanity_warning(q.reference, [p.text for p in pair.passages])
            if check:
                question_warnings.append(check)
                sanity += 1
        if answer.method == "llm" and pair.passages:  # with nothing retrieved it declines without a call
            usage["answer_calls"] += 1
            usage["cached_calls"] += int(answer.cached)
        usage["prompt_tokens"] += answer.prompt_tokens
        usage["completion_tokens"] += answer.completion_tokens
        usage["call_latency_ms"] += answer.latency_ms
        for score in scores.values():
            usage["judge_calls"] += score.calls
            usage["cached_calls"] += score.cached_calls
            usage["prompt_tokens"] += score.prompt_tokens
            usage["completion_tokens"] += score.completion_tokens
            usage["call_latency_ms"] += score.latency_ms
        results.append(
            QuestionResult(
                position=position,
                entry_id=q.entry_id or uuid.uuid5(uuid.NAMESPACE_URL, f"unanswerable:{q.question}"),
                entry_key=q.key,
                collection_id=q.collection_id,
                question=q.question,
                expected=q.qrels,
                **QuestionResult.ranked_fields(list(zip(pair.keys, pair.scores, strict=True))),
                first_relevant_rank=next((i for i, k in enumerate(pair.keys, 1) if k in q.qrels), None),
                missing_document_ids=[d for d in q.qrels if d not in set(pair.keys)],
                metrics={name: s.value for name, s in scores.items() if s.value is not None},
                judgements={name: s.as_dict() for name, s in scores.items()},
                diagnosis=verdict.diagnosis,
                answer=answer.text,
                citations=[_citation(c) for c in answer.citations],
                context=[_passage(p) for p in pair.passages],
                warnings=question_warnings,
                reasons=list(verdict.reasons if not verdict.passed else ()),
                answerable=q.answerable,
                refused=answer.refused if answer.error is None else None,
                passed=verdict.passed,
                latency_ms=round(answer.latency_ms, 3) if answer.method in ("llm", "target") else None,
                error=answer.error or "",
                tags=list(q.tags),
                origin=q.origin,
            )
        )
    summary = verdicts.summarize(outcomes, question_verdicts)
    sampled = judge_votes.summarize_sampling(
        {name: s.detail for name, s in (p.judged or {}).items() if s.method == judge.LLM_JUDGE} for p in pairs
    )
    judge_config, unused = judge_votes.judge_run_config(judge_model, judge_sampling)
    run_warnings = list(warnings) + summary.warnings + sampled.warnings + unused
    if sanity:
        run_warnings.append(
            f"golden-set check: {sanity} reference answer(s) share almost no vocabulary with the retrieved "
            "context; see those questions' warnings"
        )
    metrics: dict[str, float | None] = {
        **summary.metrics,
        "refusal_recall": summary.refusal["refusal_recall"],
        "false_refusal_rate": summary.refusal["false_refusal_rate"],
        "score": summary.score,
    }
    status = RunStatus.COMPLETE
    failed = [p for p in pairs if p.answer is not None and p.answer.error]
    if config.run.target and failed:  # an answering target's failed calls: max_error_rate decides the run
        share = len(failed) / len(pairs)
        if share > config.run.max_error_rate:
            status, metrics = RunStatus.FAILED, {}
            run_warnings.append(
                f"Run failed: {len(failed)} of {len(pairs)} questions failed ({share:.1%}, above max_error_rate "
                f"{config.run.max_error_rate:.1%}), so no metrics are reported."
            )
        else:
            status = RunStatus.PARTIAL
            run_warnings.append(f"Partial run: {len(failed)} of {len(pairs)} questions failed (left out).")
    latencies = [
        p.answer.latency_ms
        for p in pairs
        if p.answer and not p.answer.error and p.answer.method in ("llm", "target")
    ]
    run = EvaluationRun(
        tenant=tenant,
        batch_id=batch_id,
        kind=RunKind.ANSWERS,
        label=config.label,
        status=status,
        config={
            **config.as_dict(),
            "model": f"target:{config.run.target}" if config.run.target else model or EXTRACTIVE,
            **judge_config,
            "thresholds": thresholds,
            "threshold_sources": threshold_sources,
        },
        ks=[config.top_k],
        metrics={k: v for k, v in metrics.items() if v is not None},
        metric_methods={
            **{k: v for k, v in summary.methods.items() if v},
            "refusal_recall": "count",
            "false_refusal_rate": "count",
            "score": summary.mode,
        },
        mode=summary.mode,
        slices={} if status == RunStatus.FAILED else run_slices(results, [v.mean for v in question_verdicts]),
        warnings=run_warnings,
        golden_fingerprint=fingerprint,
        summary={
            **summary.as_dict(),
            "judge_confidence": sampled.confidence,
            "usage": usage,
            "latency_ms": stats.latency_summary(latencies),
            **({"failed_questions": len(failed)} if config.run.target else {}),
        },
        duration_ms=round(elapsed_ms, 1),
        job=job,
    )
    return run_store(run, collections, results, batch_size=200)


# --- the job -------------------------------------------------------------------------------------------------


def answers_job_create(
    *,
    tenant: Tenant,
    collections: Sequence[Collection],
    configs: Sequence[AnswerConfig],
    judge_model: str | None,
    unanswerable_questions: Sequence[str],
    max_questions: int | None,
    thresholds: dict[str, float],
    actor: str,
    judge_sampling: judge_votes.JudgeSampling | None = None,
) -> Job:
    # Resolve the models and targets now: a request naming one that cannot run is a 400, not a failed job.
    for i, config in enumerate(configs):
        if not config.run.target:
            answer_model(config.model, f"configs[{i}].model")
    resolve_targets(tenant, collections, [c.run for c in configs], kinds=ANSWER_KINDS)
    judge_model_of(judge_model)
    sampling = judge_sampling or judge_votes.JudgeSampling()
    for config in configs:  # a subset that selects nothing is the request's 400 too
        if config.run.subset and not selectors.count_answer_questions(collections, config.run.subset):
            raise empty_subset(config.run.subset, collections)
    return job_create(
        tenant=tenant,
        kind=EvaluationJobKind.EVALUATE_ANSWERS,
        collection=collections[0],
        input={
            "collection_pks": [c.pk for c in collections],
            "configs": [c.request() for c in configs],
            "judge_model": judge_model,
            "judge_samples": sampling.samples,
            "judge_temperature": sampling.temperature,
            "unanswerable_questions": list(unanswerable_questions),
            "max_questions": max_questions,
            "thresholds": thresholds,
        },
        actor=actor,
    )


def evaluate_answers_job(job: Job, progress) -> dict:
    spec = job.input
    collections = selectors.job_collections(job)
    configs = parse_answer_configs(spec["configs"], available_rerankers())
    batch_id, runs = evaluate_answers(
        tenant=job.tenant,
        collections=collections,
        configs=configs,
        judge_model=spec.get("judge_model"),
        judge_sampling=judge_votes.JudgeSampling(  # a job queued before sampling existed: one judgement
            spec.get("judge_samples") or 1,
            spec.get("judge_temperature", judge_votes.DEFAULT_SAMPLING_TEMPERATURE),
        ),
        unanswerable_questions=spec.get("unanswerable_questions") or [],
        max_questions=spec.get("max_questions"),
        thresholds=spec.get("thresholds") or {},
        job=job,
        progress=progress,
    )
    return {"batch_id": str(batch_id), "runs": [run_summary(r) for r in runs]}
