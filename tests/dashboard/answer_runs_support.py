"""Answer runs (kind "answers") written straight into the database in the shape the answer pipeline stores
(evaluation.answers.evaluate), for the dashboard and browser tests: they depend on that shape only, not on the pipeline.
In `questions()` a metric no question could be scored on is absent, an unreadable judge answer is an exclusion,
a failed judge call a heuristic fallback, and every diagnosis (pass, retrieval, generation, error) occurs.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from datetime import timedelta

from django.utils import timezone

from evaluation.models import EvaluationRun, QuestionResult, RunKind

JUDGED = ("faithfulness", "context_recall", "answer_relevancy", "citation_precision", "context_relevancy")
PASSAGES = {
    "refunds": ("Refunds", "Customers get a full refund within 30 days of purchase."),
    "shipping": ("Shipping", "Orders ship within two business days. Express shipping arrives the next day."),
    "warranty": ("Warranty", "Every device carries a two-year warranty covering manufacturing defects."),
}


@dataclass
class Q:
    """One question of an answer run, as the pipeline stores it."""

    question: str
    expected: dict[str, int]
    retrieved: list[str]
    diagnosis: str
    passed: bool | None
    answerable: bool = True
    refused: bool | None = False
    answer: str = ""
    judgements: dict[str, dict] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def scored(value: float | None, method: str = "heuristic", *, excluded=None, fallback=None, **detail) -> dict:
    return {"value": value, "method": method, "detail": detail, "excluded": excluded, "fallback": fallback}


def statements(*verdicts: tuple[str, bool]) -> list[dict]:
    return [{"text": text, "supported": ok, "support": 0.9 if ok else 0.1} for text, ok in verdicts]


ENTRY_IDS = [uuid.uuid4() for _ in range(8)]


def questions(shift: float = 0.0, *, judge: str = "heuristic", with_recall: bool = True) -> list[Q]:
    """Eight questions covering every diagnosis. `shift` moves the judged values (a second configuration);
    without `with_recall` no question has a context-recall value (the metric is absent from the run)."""

    def recall(value: float) -> dict:
        if with_recall:
            return scored(value, judge, statements=statements(("Refunds take 30 days.", value > 0.5)))
        return scored(None, judge, excluded="not-applicable", reason="no reference answer")

    return [
        Q(  # 0: pass, every metric scored, an unknown detail key
            "How long is the refund window?",
            {"refunds": 1},
            ["refunds", "shipping"],
            "pass",
            True,
            answer="Refunds are accepted within 30 days [1].\nThey go to the original card [1, 2].",
            judgements={
                "faithfulness": scored(
                    1.0,
                    judge,
                    statements=[
                        {"text": "Refunds are accepted within 30 days.", "supported": True, "passage": 1},
                        {"text": "They go to the original card.", "supported": True, "passage": 1},
                    ],
                ),
                "context_recall": recall(1.0),
                "answer_relevancy": scored(0.9 - shift, judge, question_coverage=0.9, focus=1.0),
                "citation_precision": scored(
                    1.0,
                    judge,
                    citations=[
                        {
                            "citation": 1,
                            "document_id": "refunds",
                            "statement": "within 30 days",
                            "supports": True,
                        },
                        {
                            "citation": 2,
                            "document_id": "shipping",
                            "statement": "original card",
                            "supports": False,
                        },
                    ],
                ),
                "context_relevancy": scored(
                    0.5,
                    judge,
                    passages=[
                        {"number": 1, "document_id": "refunds", "relevant": True, "score": 0.8},
                        {"number": 2, "document_id": "shipping", "relevant": False, "score": 0.1},
                    ],
                ),
            },
        ),
        Q(  # 1: generation, faithfulness below threshold; the judge fell back to the heuristic on it
            "When does express shipping arrive?",
            {"shipping": 1},
            ["shipping", "refunds"],
            "generation",
            False,
            answer="Express shipping arrives within a week [1].",
            judgements={
                "faithfulness": scored(
                    0.4 + shift,
                    "heuristic",
                    fallback="timeout after 30 s",
                    statements=statements(("Express shipping arrives within a week.", False)),
                ),
                "context_recall": recall(0.7),
                "answer_relevancy": scored(0.8, judge),
                "citation_precision": scored(0.0, judge, citations=[]),
                "context_relevancy": scored(0.5 + shift, judge),
            },
            warnings=["faithfulness 0.40 < 0.6"],
        ),
        Q(  # 2: retrieval, the expected document was not retrieved
            "What does the warranty cover?",
            {"warranty": 1},
            ["refunds", "shipping"],
            "retrieval",
            False,
            answer="Refunds are possible within 30 days [1].",
            judgements={
                "faithfulness": scored(1.0, judge),
                "context_recall": recall(0.0),
                "answer_relevancy": scored(0.2 + shift, judge),
                "citation_precision": scored(1.0, judge),
                "context_relevancy": scored(0.0, judge),
            },
            warnings=[
                "golden-set check: the reference answer shares almost no vocabulary with the retrieved context "
                "(0% of its terms); verify the golden record",
                "expected document not retrieved: warranty",
                "nothing retrieved is relevant",
            ],
        ),
        Q(  # 3: unanswerable and declined: pass
            "Do you sell gift cards?",
            {},
            ["refunds"],
            "pass",
            True,
            answerable=False,
            refused=True,
            answer="I cannot answer this from the documents.",
            warnings=[],
        ),
        Q(  # 4: unanswerable and answered: generation
            "Can I pay with bitcoin?",
            {},
            ["shipping"],
            "generation",
            False,
            answerable=False,
            refused=False,
            answer="Yes, bitcoin is accepted [1].",
            warnings=["answered a question the collection cannot answer"],
        ),
        Q(  # 5: error, no answer
            "Is there a student discount?",
            {"refunds": 1},
            ["refunds"],
            "error",
            None,
            refused=None,
            warnings=["no answer: the model endpoint answered 503"],
        ),
        Q(  # 6: a false refusal: generation
            "Where do refunds go?",
            {"refunds": 1},
            ["refunds"],
            "generation",
            False,
            refused=True,
            answer="I cannot answer this from the documents.",
            judgements={
                "faithfulness": scored(None, judge, excluded="not-applicable", reason="the answer declined"),
                "context_recall": recall(0.8),
                "context_relevancy": scored(1.0, judge),
            },
            warnings=["declined an answerable question"],
        ),
        Q(  # 7: pass; the judge's answer on faithfulness could not be read
            "How fast do orders ship?",
            {"shipping": 1},
            ["shipping"],
            "pass",
            True,
            answer="Orders ship within two business days [1].",
            judgements={
                "faithfulness": scored(
                    None, "llm-judge", excluded="unreadable", error="not JSON", answer="Sure! The answer"
                ),
                "context_recall": recall(0.9),
                "answer_relevancy": scored(0.7 + shift, judge),
                "citation_precision": scored(1.0, judge),
                "context_relevancy": scored(1.0, judge),
            },
        ),
    ]


def question_mean(q: Q) -> float | None:
    """The per-question mean the run's score averages (evaluation.answers.verdicts)."""
    if q.diagnosis == "error":
        return None
    if not q.answerable:
        return 1.0 if q.refused else 0.0
    if q.refused:
        return 0.0
    values = [j["value"] for j in q.judgements.values() if j["value"] is not None]
    return sum(values) / len(values) if values else None


def make_answer_run(
    tenant,
    collection,
    label: str,
    rows: list[Q],
    *,
    batch_id: uuid.UUID | None = None,
    mode: str = "heuristic",
    created_at=None,
    score_offset: float = 0.0,
    model: str = "extractive",
    judge_model: str = "heuristic",
) -> EvaluationRun:
    """An answer run and its question results, with the run-level numbers computed from the rows."""
    means, methods, excluded, fallbacks, warnings = {}, {}, {}, {}, []
    for name in JUDGED:
        judged = [q.judgements[name] for q in rows if name in q.judgements]
        values = [j["value"] for j in judged if j["value"] is not None]
        kinds = {j["method"] for j in judged if j["value"] is not None}
        methods[name] = kinds.pop() if len(kinds) == 1 else ("mixed" if kinds else "")
        means[name] = sum(values) / len(values) if values else None
        reasons: dict[str, int] = {}
        for j in judged:
            if j["value"] is None:
                reasons[j["excluded"]] = reasons.get(j["excluded"], 0) + 1
        excluded[name] = reasons
        fallbacks[name] = sum(1 for j in judged if j["fallback"])
        if reasons.get("unreadable"):
            warnings.append(
                f"{name}: {reasons['unreadable']} question(s) excluded: the judge's answer could not be read"
            )
        if fallbacks[name]:
            warnings.append(f"{name}: the judge call failed for {fallbacks[name]} question(s)")
        if judged and not values:
            warnings.append(f"{name}: no question could be scored on this metric")
    unanswerable = [q for q in rows if not q.answerable and q.diagnosis != "error"]
    answerable = [q for q in rows if q.answerable and q.diagnosis != "error"]
    refusal = {
        "unanswerable": len(unanswerable),
        "declined_unanswerable": sum(1 for q in unanswerable if q.refused),
        "refusal_recall": sum(1 for q in unanswerable if q.refused) / len(unanswerable),
        "answerable": len(answerable),
        "declined_answerable": sum(1 for q in answerable if q.refused),
        "false_refusal_rate": sum(1 for q in answerable if q.refused) / len(answerable),
    }
    per_question = [m for q in rows if (m := question_mean(q)) is not None]
    score = 100 * sum(per_question) / len(per_question) + score_offset
    diagnosis: dict[str, int] = {}
    for q in rows:
        diagnosis[q.diagnosis] = diagnosis.get(q.diagnosis, 0) + 1
    metrics = {
        **{k: v for k, v in means.items() if v is not None},
        "refusal_recall": refusal["refusal_recall"],
        "false_refusal_rate": refusal["false_refusal_rate"],
        "score": score,
    }
    usage = {
        "answer_calls": 8,
        "judge_calls": 30,
        "cached_calls": 5,
        "prompt_tokens": 12000,
        "completion_tokens": 3456,
        "call_latency_ms": 4200.0,
    }
    run = EvaluationRun.objects.create(
        tenant=tenant,
        collection_ids=[collection.slug],
        batch_id=batch_id or uuid.uuid4(),
        kind=RunKind.ANSWERS,
        label=label,
        config={
            "search_type": "FullText",
            "fusion": "Rrf",
            "rerank": None,
            "bm25_variant": "lucene",
            "top_k": 2,
            "as_of": None,
            "include_superseded": False,
            "fulltext_weight": 0.5,
            "label": label,
            "model": model,
            "groundedness": "Medium",
            "judge_model": judge_model,
            "thresholds": {"context_relevancy": 0.6, "faithfulness": 0.6, "answer_relevancy": 0.4},
        },
        ks=[2],
        metrics=metrics,
        metric_methods={
            **{k: v for k, v in methods.items() if v},
            "refusal_recall": "count",
            "false_refusal_rate": "count",
            "score": mode,
        },
        mode=mode,
        question_count=len(rows),
        warnings=warnings,
        summary={
            "metrics": means,
            "methods": methods,
            "mode": mode,
            "score": score,
            "excluded": excluded,
            "fallbacks": fallbacks,
            "refusal": refusal,
            "diagnosis": diagnosis,
            "passed": sum(1 for q in rows if q.passed),
            "failed": sum(1 for q in rows if q.passed is False),
            "warnings": warnings,
            "usage": usage,
        },
        duration_ms=1234.5,
    )
    run.collections.set([collection])
    if created_at is not None:
        EvaluationRun.objects.filter(pk=run.pk).update(created_at=created_at)
        run.refresh_from_db()
    QuestionResult.objects.bulk_create(
        [
            QuestionResult(
                run=run,
                position=i,
                entry_id=ENTRY_IDS[i],
                entry_key=f"a{i}",
                collection_id=collection.slug,
                question=q.question,
                expected=q.expected,
                **QuestionResult.ranked_fields([(d, 1.0 / (r + 1)) for r, d in enumerate(q.retrieved)]),
                first_relevant_rank=next((r for r, d in enumerate(q.retrieved, 1) if d in q.expected), None),
                missing_document_ids=[d for d in q.expected if d not in q.retrieved],
                metrics={k: j["value"] for k, j in q.judgements.items() if j["value"] is not None},
                judgements=q.judgements,
                diagnosis=q.diagnosis,
                answer=q.answer,
                citations=[
                    {"number": int(n), "document_id": q.retrieved[int(n) - 1], "statement": "cited statement"}
                    for n in dict.fromkeys(re.findall(r"\d+", " ".join(re.findall(r"\[[\d, ]+\]", q.answer))))
                    if int(n) <= len(q.retrieved)
                ],
                context=[
                    {
                        "number": n,
                        "document_id": d,
                        "page_number": 1,
                        "title": PASSAGES[d][0],
                        "text": PASSAGES[d][1],
                    }
                    for n, d in enumerate(q.retrieved, 1)
                ],
                warnings=q.warnings,
                answerable=q.answerable,
                refused=q.refused,
                passed=q.passed,
            )
            for i, q in enumerate(rows)
        ]
    )
    return run


@dataclass
class AnswerBatch:
    batch_id: uuid.UUID
    heuristic: EvaluationRun  # no context recall at all; one unreadable exclusion, one fallback
    judged: EvaluationRun


def make_answer_batch(tenant, collection) -> AnswerBatch:
    """Two answer runs of one batch over the eight questions of `questions()`: the extractive answers judged by
    the heuristic, and an LLM's answers judged partly by an LLM judge (mode "mixed"), a minute later."""
    batch_id = uuid.uuid4()
    now = timezone.now()
    heuristic = make_answer_run(
        tenant,
        collection,
        "extractive",
        questions(with_recall=False),
        batch_id=batch_id,
        created_at=now - timedelta(minutes=2),
    )
    judged = make_answer_run(
        tenant,
        collection,
        "llm answers",
        questions(0.1, judge="llm-judge"),
        batch_id=batch_id,
        mode="mixed",
        created_at=now - timedelta(minutes=1),
        model="qwen2.5:7b",
        judge_model="llama3.1:8b",
    )
    return AnswerBatch(batch_id, heuristic, judged)
