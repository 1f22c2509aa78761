"""An answer configuration's questions judged pass or fail (evaluation.answers.verdicts), summed up and stored
as one run (kind answers), with what the answers and judgements cost and why a run failed or is partial."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from evalsite.jobs.models import Job
from evaluation.answers import judge, judge_identity, judge_votes, verdicts
from evaluation.answers import writer as answer_writer
from evaluation.answers.answering import EXTRACTIVE, citation_row, passage_row
from evaluation.answers.batch import AnswerBatch, AnswerPair, answers_fingerprint
from evaluation.answers.configs import AnswerConfig
from evaluation.models import EvaluationRun, QuestionResult, RunKind, RunStatus
from evaluation.retrieval.read_path import rerank_warnings
from evaluation.runs import stats
from evaluation.runs.store import run_slices, run_store


@dataclass
class _Judged:
    """A configuration's questions judged: their stored rows, outcomes and verdicts, and what they cost."""

    results: list[QuestionResult] = field(default_factory=list)
    outcomes: list[verdicts.QuestionOutcome] = field(default_factory=list)
    verdicts: list[verdicts.Verdict] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=lambda: {
        "answer_calls": 0, "judge_calls": 0, "cached_calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
        "call_latency_ms": 0.0,
    })  # fmt: skip
    sanity: int = 0  # reference answers sharing almost no vocabulary with their context


def _judge_questions(pairs: list[AnswerPair], thresholds: dict[str, float]) -> _Judged:
    judged = _Judged()
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
        judged.outcomes.append(outcome)
        judged.verdicts.append(verdict)
        question_warnings = []
        if q.answerable and q.reference:
            check = verdicts.sanity_warning(q.reference, [p.text for p in pair.passages])
            if check:
                question_warnings.append(check)
                judged.sanity += 1
        _count_usage(judged.usage, answer, scores, called=answer.method == "llm" and bool(pair.passages))
        judged.results.append(_question_row(position, pair, scores, verdict, question_warnings))
    return judged


def _count_usage(usage: dict[str, Any], answer: answer_writer.Answer, scores, *, called: bool) -> None:
    if called:  # with nothing retrieved the writer declines without a call
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


def _question_row(
    position: int, pair: AnswerPair, scores, verdict: verdicts.Verdict, warnings: list[str]
) -> QuestionResult:
    answer, q = pair.answer, pair.question
    assert answer is not None
    return QuestionResult(
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
        citations=[citation_row(c) for c in answer.citations],
        context=[passage_row(p) for p in pair.passages],
        warnings=warnings,
        reasons=list(verdict.reasons if not verdict.passed else ()),
        answerable=q.answerable,
        refused=answer.refused if answer.error is None else None,
        passed=verdict.passed,
        latency_ms=round(answer.latency_ms, 3) if answer.method in ("llm", "target") else None,
        error=answer.error or "",
        tags=list(q.tags),
        origin=q.origin,
    )


def _run_status(config: AnswerConfig, pairs: list[AnswerPair], warnings: list[str]) -> str:
    """An answering target's failed calls decide the run by max_error_rate (its warnings say so)."""
    failed = [p for p in pairs if p.answer is not None and p.answer.error]
    if not (config.run.target and failed):
        return RunStatus.COMPLETE
    share = len(failed) / len(pairs)
    if share > config.run.max_error_rate:
        warnings.append(
            f"Run failed: {len(failed)} of {len(pairs)} questions failed ({share:.1%}, above max_error_rate "
            f"{config.run.max_error_rate:.1%}), so no metrics are reported."
        )
        return RunStatus.FAILED
    warnings.append(f"Partial run: {len(failed)} of {len(pairs)} questions failed (left out).")
    return RunStatus.PARTIAL


def answer_run_store(
    batch: AnswerBatch, index: int, batch_id: uuid.UUID, job: Job | None, actor: str = ""
) -> EvaluationRun:
    config, pairs = batch.configs[index], batch.pairs_of(index)
    judged = _judge_questions(pairs, batch.thresholds)
    summary = verdicts.summarize(judged.outcomes, judged.verdicts)
    sampled = judge_votes.summarize_sampling(
        {name: s.detail for name, s in (p.judged or {}).items() if s.method == judge.LLM_JUDGE} for p in pairs
    )
    judge_config, unused = judge_votes.judge_run_config(batch.judging, batch.sampling)
    judge_config |= judge_identity.recorded(batch.judging)
    questions, asked_warnings = batch.asked[config.run.subset]
    warnings = [
        *asked_warnings,
        *rerank_warnings(config.run.rerank),
        *summary.warnings,
        *sampled.warnings,
        *unused,
    ]
    if judged.sanity:
        warnings.append(
            f"golden-set check: {judged.sanity} reference answer(s) share almost no vocabulary with the retrieved "
            "context; see those questions' warnings"
        )
    status = _run_status(config, pairs, warnings)
    metrics: dict[str, float | None] = {} if status == RunStatus.FAILED else {
        **summary.metrics,
        "refusal_recall": summary.refusal["refusal_recall"],
        "false_refusal_rate": summary.refusal["false_refusal_rate"],
        "score": summary.score,
    }  # fmt: skip
    failed = sum(1 for p in pairs if p.answer is not None and p.answer.error)
    latencies = [p.answer.latency_ms for p in pairs if p.answer and not p.answer.error and p.answer.method in ("llm", "target")]  # fmt: skip
    model = batch.models[index]
    run = EvaluationRun(
        tenant=batch.tenant,
        batch_id=batch_id,
        kind=RunKind.ANSWERS,
        created_by=actor,
        label=config.label,
        status=status,
        config={
            **config.as_dict(),
            "model": f"target:{config.run.target}" if config.run.target else model or EXTRACTIVE,
            **judge_config,
            "thresholds": batch.thresholds,
            "threshold_sources": batch.threshold_sources,
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
        slices={}
        if status == RunStatus.FAILED
        else run_slices(judged.results, [v.mean for v in judged.verdicts]),
        warnings=warnings,
        golden_fingerprint=answers_fingerprint(questions),
        summary={
            **summary.as_dict(),
            "judge_confidence": sampled.confidence,
            "usage": judged.usage,
            "latency_ms": stats.latency_summary(latencies),
            **({"failed_questions": failed} if config.run.target else {}),
        },
        duration_ms=round(batch.elapsed_ms / len(batch.configs), 1),
        job=job,
    )
    return run_store(run, batch.collections, judged.results, batch_size=200)
