"""Answer runs (kind "answers") on the dashboard: the runs list, a run's header and questions, one question's
answer beside its passages, Compare of answer runs, Trends of an answer metric, and tenancy.

The runs are written straight into the database in the shape the answer pipeline stores (evaluation.answers),
so these tests depend on that shape only, not on the pipeline: a metric no question could be scored on is
absent, an unreadable judge answer is an exclusion, a failed judge call a heuristic fallback, and every
diagnosis (pass, retrieval, generation, error) occurs.
"""

from __future__ import annotations

import csv
import io
import re
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from html import unescape

import numpy as np
import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from evaluation import dashboard, stats
from evaluation.dashboard import answer_question
from evaluation.models import EvaluationRun, QuestionResult, RunKind
from goldenset.models import GoldenEntry, Job, JobKind, JobStatus
from tests.dashboard.conftest import make_runs

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
    """The per-question mean the run's score averages (evaluation.answer_scoring)."""
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


@pytest.fixture
def answer_batch(world) -> AnswerBatch:
    batch_id = uuid.uuid4()
    now = timezone.now()
    heuristic = make_answer_run(
        world.tenant,
        world.collection,
        "extractive",
        questions(with_recall=False),
        batch_id=batch_id,
        created_at=now - timedelta(minutes=2),
    )
    judged = make_answer_run(
        world.tenant,
        world.collection,
        "llm answers",
        questions(0.1, judge="llm-judge"),
        batch_id=batch_id,
        mode="mixed",
        created_at=now - timedelta(minutes=1),
        model="qwen2.5:7b",
        judge_model="llama3.1:8b",
    )
    return AnswerBatch(batch_id, heuristic, judged)


def run_url(run: EvaluationRun, query: str = "") -> str:
    return reverse("dashboard:run", args=[run.pk]) + query


def text_of(response) -> str:
    """The page's text with tags removed and whitespace collapsed, to assert on what a reader sees."""
    html = response.content.decode()
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html))).strip()


# --- the runs list -----------------------------------------------------------------------------------------


def test_answer_runs_are_listed_with_their_kind_score_and_mode(alice, world, answer_batch):
    make_runs(
        world.tenant, world.collection, 1, labels=("fulltext",), start=timezone.now() - timedelta(days=1)
    )
    page = alice.get(reverse("dashboard:runs"))
    rows = {row.run.label: row for row in page.context["rows"]}
    judged = rows["llm answers"]
    assert [name for name, _ in judged.metrics] == ["score", "faithfulness", "answer_relevancy"]
    assert dict(judged.metrics)["score"] == pytest.approx(answer_batch.judged.metrics["score"])
    assert [name for name, _ in rows["fulltext"].metrics] == ["ndcg@10", "recall@10", "mrr"]
    text = text_of(page)
    assert f"score {answer_batch.judged.metrics['score']:.1f} " in text
    assert "mixed" in text and "heuristic" in text
    assert b'<span class="kind answers">answers</span>' in page.content

    only_answers = alice.get(reverse("dashboard:runs") + "?kind=answers")
    assert {r.run.label for r in only_answers.context["rows"]} == {"extractive", "llm answers"}
    only_retrieval = alice.get(reverse("dashboard:runs") + "?kind=retrieval")
    assert [r.run.label for r in only_retrieval.context["rows"]] == ["fulltext"]


def test_an_answer_run_without_a_score_shows_a_dash_not_a_zero(alice, world, answer_batch):
    run = answer_batch.heuristic
    EvaluationRun.objects.filter(pk=run.pk).update(
        metrics={k: v for k, v in run.metrics.items() if k != "score"}, summary={}
    )
    page = alice.get(reverse("dashboard:runs") + "?kind=answers")
    row = next(r for r in page.context["rows"] if r.run.pk == run.pk)
    assert row.metrics[0] == ("score", None)
    assert "score — " in text_of(page)
    detail = alice.get(run_url(run))
    assert detail.status_code == 200
    assert detail.context["overview"].score is None
    assert b"data-score>\xe2\x80\x94<" in detail.content  # "—"


def test_home_shows_an_answer_runs_score(alice, world, answer_batch):
    page = alice.get(reverse("home"))
    (summary,) = page.context["summaries"]
    latest = {r.label: r for r in summary.latest_runs}
    assert latest["llm answers"].mode == "mixed"
    assert latest["llm answers"].metrics[0] == ("score", answer_batch.judged.metrics["score"])


# --- one run -----------------------------------------------------------------------------------------------


def test_an_answer_runs_header_shows_score_mode_metrics_refusal_diagnoses_usage_and_config(
    alice, world, answer_batch
):
    run = answer_batch.judged
    page = alice.get(run_url(run))
    assert page.status_code == 200
    assert [t.name for t in page.templates][0] == "dashboard/answer_run.html"
    overview = page.context["overview"]
    assert overview.score == pytest.approx(run.metrics["score"])
    assert overview.mode == "mixed"
    metrics = {m.name: m for m in overview.metrics}
    assert list(metrics) == list(JUDGED)
    faithfulness = metrics["faithfulness"]
    assert faithfulness.method == "mixed"  # LLM-judged, but one question fell back to the heuristic
    assert faithfulness.excluded_text == "1 excluded: not applicable; 1 excluded: unreadable"
    assert faithfulness.fallbacks == 1
    assert (
        metrics["context_recall"].method == "llm-judge"
        and metrics["context_recall"].method_text == "LLM judge"
    )

    text = text_of(page)
    assert f"score {run.metrics['score']:.1f} / 100" in text
    assert "1 excluded: unreadable" in text
    assert "1 judge fallback to the heuristic" in text
    # Refusal both ways, each with its counts, side by side.
    assert "refusal recall 0.500 declined 1 of 2 unanswerable" in text
    assert "false-refusal rate 0.200 declined 1 of 5 answerable" in text
    for name, n in [("pass", 3), ("retrieval", 1), ("generation", 3), ("error", 1)]:
        assert f'data-diagnosis-count="{name}">{n}<'.encode() in page.content
    assert "tokens 15456 (12000 prompt + 3456 completion)" in text
    assert "answer calls 8" in text and "judge calls 30" in text and "cached 5" in text
    config = dict(overview.config)
    assert config == {
        "model": "qwen2.5:7b",
        "judge": "llama3.1:8b",
        "groundedness": "Medium",
        "passages (top k)": 2,
        "search type": "FullText",
        "rerank": None,
        "BM25": "lucene",
    }
    assert "faithfulness ≥ 0.6" in text
    assert "faithfulness: 1 question(s) excluded: the judge's answer could not be read" in text


def test_a_metric_no_question_could_be_scored_on_is_a_dash_with_the_reason(alice, world, answer_batch):
    run = answer_batch.heuristic
    assert "context_recall" not in run.metrics
    page = alice.get(run_url(run))
    recall = next(m for m in page.context["overview"].metrics if m.name == "context_recall")
    assert recall.value is None
    assert recall.reasons == ["no question could be scored on this metric"]
    assert recall.excluded_text == "5 excluded: not applicable"
    tile = re.search(
        rb'<div class="tile missing" data-metric="context_recall">(.*?)</div>', page.content, re.S
    )
    assert tile is not None
    assert b'<span class="value">\xe2\x80\x94</span>' in tile.group(1)
    assert b"no question could be scored on this metric" in tile.group(1)
    assert b"0.000" not in tile.group(1)


def test_the_questions_table_shows_each_question_with_its_values_and_verdicts(alice, world, answer_batch):
    run = answer_batch.judged
    page = alice.get(run_url(run))
    rows = page.context["questions"]
    assert [q.position for q in rows] == list(range(8))
    assert [q.diagnosis for q in rows] == [
        "pass",
        "generation",
        "retrieval",
        "pass",
        "generation",
        "error",
        "generation",
        "pass",
    ]
    assert [q.answerable for q in rows] == [True, True, True, False, False, True, True, True]
    assert [q.refused for q in rows] == [False, False, False, True, False, None, True, False]
    assert [q.passed for q in rows] == [True, False, False, True, False, None, False, True]
    first = rows[0]
    assert [c.value for c in first.cells] == pytest.approx([1.0, 1.0, 0.8, 1.0, 0.5])
    # Question 7: faithfulness unreadable is a dash saying why; question 1: the heuristic stood in for the judge.
    unreadable = rows[7].cells[0]
    assert unreadable.value is None and unreadable.note == "excluded: unreadable"
    fallback = rows[1].cells[0]
    assert fallback.fallback and "timeout after 30 s" in fallback.note
    assert [(q.position, i) for q in rows for i, c in enumerate(q.cells) if c.fallback] == [(1, 0)]
    assert [
        (q.position, i) for q in rows for i, c in enumerate(q.cells) if c.note.startswith("excluded")
    ] == [
        (6, 0),
        (7, 0),
    ]
    assert b'title="excluded: unreadable"><span class="muted">\xe2\x80\x94</span>' in page.content
    assert page.content.count(b'<sup class="fallback"') == 1
    assert b'<span class="outcome passed">passed</span>' in page.content
    assert b'<span class="outcome failed">failed</span>' in page.content


@pytest.mark.parametrize(
    ("query", "positions"),
    [
        ("?diagnosis=retrieval", [2]),
        ("?diagnosis=generation", [1, 4, 6]),
        ("?diagnosis=pass", [0, 3, 7]),
        ("?diagnosis=error", [5]),
        ("?outcome=failed", [1, 2, 4, 6]),
        ("?outcome=passed", [0, 3, 7]),
        ("?diagnosis=generation&outcome=passed", []),
        ("?failures=1", [1, 2, 4, 6]),  # the retrieval page's link, kept working
        ("?diagnosis=nonsense", list(range(8))),  # not understood: every question
    ],
)
def test_the_questions_filter_by_diagnosis_and_outcome(alice, world, answer_batch, query, positions):
    page = alice.get(run_url(answer_batch.judged, query))
    assert page.status_code == 200
    assert [q.position for q in page.context["questions"]] == positions
    if not positions:
        assert b"No question matches these filters" in page.content


def test_the_questions_are_paginated_keeping_the_filter(alice, world, answer_batch, monkeypatch):
    monkeypatch.setattr(dashboard, "ANSWER_QUESTIONS_PER_PAGE", 2)
    run = answer_batch.judged
    first = alice.get(run_url(run, "?outcome=failed"))
    assert [q.position for q in first.context["questions"]] == [1, 2]
    assert first.context["page"].paginator.num_pages == 2
    assert b'href="?outcome=failed&amp;page=2"' in first.content
    second = alice.get(run_url(run, "?outcome=failed&page=2"))
    assert [q.position for q in second.context["questions"]] == [4, 6]
    assert "4 of 8 questions" in text_of(second)


def test_the_csv_of_an_answer_run_has_its_verdicts_and_leaves_missing_values_empty(
    alice, world, answer_batch
):
    response = alice.get(reverse("dashboard:run-csv", args=[answer_batch.judged.pk]))
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert len(rows) == 8
    assert [r["diagnosis"] for r in rows][:3] == ["pass", "generation", "retrieval"]
    assert (rows[3]["answerable"], rows[3]["refused"], rows[3]["passed"]) == ("false", "true", "true")
    assert (rows[5]["refused"], rows[5]["passed"]) == ("", "")
    assert rows[7]["faithfulness"] == "" and rows[0]["faithfulness"] == "1.0"
    assert rows[0]["answer"].startswith("Refunds are accepted within 30 days [1].")


def test_a_retrieval_run_keeps_its_own_page(alice, world, batch):
    page = alice.get(run_url(batch.runs[0]))
    names = [t.name for t in page.templates]
    assert "dashboard/run.html" in names and "dashboard/answer_run.html" not in names


def test_an_answer_run_page_costs_a_fixed_number_of_queries(
    alice, world, answer_batch, django_assert_max_num_queries
):
    alice.get(reverse("home"))
    with django_assert_max_num_queries(8):
        alice.get(run_url(answer_batch.judged, "?diagnosis=generation"))
    with django_assert_max_num_queries(10):
        alice.get(reverse("dashboard:run-question", args=[answer_batch.judged.pk, 1]))


# --- one question ------------------------------------------------------------------------------------------


def question_url(run: EvaluationRun, position: int) -> str:
    return reverse("dashboard:run-question", args=[run.pk, position + 1])  # URLs count from 1


def test_a_question_shows_the_answer_beside_its_passages_with_citations_linked(alice, world, answer_batch):
    page = alice.get(question_url(answer_batch.judged, 0))
    assert page.status_code == 200
    assert [t.name for t in page.templates][0] == "dashboard/answer_question.html"
    view = page.context["view"]
    assert view.segments == [
        ("Refunds are accepted within 30 days [", None),
        ("1", 1),
        ("].\nThey go to the original card [", None),
        ("1", 1),
        (", ", None),
        ("2", 2),
        ("].", None),
    ]
    html = page.content.decode()
    layout = html.index('class="answer-layout"')
    answer_at, passages_at = html.index('class="card answer-pane"'), html.index('class="passages-pane"')
    assert layout < answer_at < passages_at  # one grid: the answer, then the passages beside it
    assert html.count('class="cite" href="#passage-1" data-cite="1"') == 2
    assert 'class="cite" href="#passage-2" data-cite="2"' in html
    assert 'id="passage-1"' in html and 'id="passage-2"' in html
    passages = {p.number: p for p in view.passages}
    assert passages[1].cited and passages[1].expected and passages[1].relevant is True
    assert passages[2].cited and not passages[2].expected and passages[2].relevant is False
    assert passages[1].title == "Refunds" and passages[1].exists
    assert reverse("dashboard:document", args=["handbook", "refunds"]) in html
    assert [(c.number, c.supported) for c in view.citations] == [(1, True), (2, False)]


def test_answer_segments_link_only_known_passages_and_keep_the_text(db):
    segments = answer_question.answer_segments("A [1]. B [2, 7]. C [x] [3]", [1, 2, 3])
    assert "".join(piece for piece, _ in segments) == "A [1]. B [2, 7]. C [x] [3]"
    assert [(piece, n) for piece, n in segments if n] == [("1", 1), ("2", 2), ("3", 3)]
    assert answer_question.answer_segments("", [1]) == []
    assert answer_question.answer_segments("<b>[1]</b>", [1]) == [("<b>[", None), ("1", 1), ("]</b>", None)]


def test_the_answer_text_is_escaped(alice, world, answer_batch):
    QuestionResult.objects.filter(run=answer_batch.judged, position=0).update(
        answer="<script>alert(1)</script> Refunds [1]."
    )
    page = alice.get(question_url(answer_batch.judged, 0))
    assert b"<script>alert(1)</script>" not in page.content
    assert b"&lt;script&gt;alert(1)&lt;/script&gt;" in page.content


def test_a_question_shows_statement_verdicts_and_each_metrics_method_and_notes(alice, world, answer_batch):
    page = alice.get(question_url(answer_batch.judged, 0))
    judgements = {j.name: j for j in page.context["view"].judgements}
    assert list(judgements) == list(JUDGED)
    faithfulness = judgements["faithfulness"]
    assert [(s.text, s.verdict, s.number) for s in faithfulness.statements] == [
        ("Refunds are accepted within 30 days.", True, 1),
        ("They go to the original card.", True, 1),
    ]
    assert judgements["context_recall"].statements[0].verdict is True
    assert judgements["answer_relevancy"].other == [("focus", "1.0"), ("question_coverage", "0.9")]
    assert judgements["answer_relevancy"].method_text == "LLM judge"
    text = text_of(page)
    assert "Faithfulness · 2 of 2 statements supported" in text
    assert "supported Refunds are accepted within 30 days." in text
    assert "question_coverage 0.9" in text  # a detail key the page does not know, as a key/value list

    failed = alice.get(question_url(answer_batch.judged, 1))
    text = text_of(failed)
    assert "judge failed (timeout after 30 s): scored by the heuristic" in text
    assert "not supported Express shipping arrives within a week." in text
    assert "Why it failed faithfulness 0.40 < 0.6" in text

    unreadable = alice.get(question_url(answer_batch.judged, 7))
    row = {j.name: j for j in unreadable.context["view"].judgements}["faithfulness"]
    assert row.value is None and row.excluded == "unreadable" and row.method == "llm-judge"
    assert ("error", "not JSON") in row.other
    assert "faithfulness — LLM judge excluded: unreadable" in text_of(unreadable)


def test_a_retrieval_failure_shows_the_missing_document_reasons_and_warnings(alice, world, answer_batch):
    page = alice.get(question_url(answer_batch.judged, 2))
    assert page.context["diagnosis"] == "retrieval"
    view = page.context["view"]
    assert view.reasons == ["expected document not retrieved: warranty", "nothing retrieved is relevant"]
    assert len(view.warnings) == 1 and view.warnings[0].startswith("golden-set check:")
    text = text_of(page)
    assert "missing warranty — Warranty" in text
    assert "Why it failed expected document not retrieved: warranty" in text
    assert "verify the golden record" in text
    hit = alice.get(question_url(answer_batch.judged, 0))
    assert "retrieved at rank 1 refunds — Refunds" in text_of(hit)


def test_unanswerable_error_and_refused_questions_render(alice, world, answer_batch):
    run = answer_batch.judged
    declined = alice.get(question_url(run, 3))
    assert declined.status_code == 200
    assert "the question is unanswerable from the collection" in text_of(declined)
    assert "refused declined to answer" in text_of(declined)
    error = alice.get(question_url(run, 5))
    assert error.status_code == 200 and error.context["diagnosis"] == "error"
    assert "no answer: the model endpoint answered 503" in text_of(error)
    assert "No answer was written." in text_of(error)


def test_a_question_with_odd_details_still_renders(alice, world, answer_batch):
    """Details are read defensively: wrong types, missing keys and unknown keys never break the page."""
    QuestionResult.objects.filter(run=answer_batch.judged, position=0).update(
        judgements={
            "faithfulness": {"value": 0.5, "detail": {"statements": "not a list", "extra": [1, 2]}},
            "citation_precision": {"value": 1.0, "method": "llm-judge", "detail": {"citations": [{}, 3]}},
            "context_relevancy": {"detail": {"passages": [{"number": "2", "relevant": "yes"}]}},
            "answer_relevancy": "broken",
            "novel_metric": {"value": 0.25, "method": "heuristic", "detail": {"why": {"nested": True}}},
        },
        context=[{"text": "A passage without a number"}, "not a passage"],
        citations=[{"statement": "no number"}],
    )
    page = alice.get(question_url(answer_batch.judged, 0))
    assert page.status_code == 200
    judgements = {j.name: j for j in page.context["view"].judgements}
    assert judgements["faithfulness"].statements == []
    assert judgements["faithfulness"].other == [("extra", "[1, 2]")]
    assert judgements["citation_precision"].citations[0].number is None
    assert judgements["context_relevancy"].passages[0].number == 2
    assert judgements["context_relevancy"].passages[0].verdict is None
    assert judgements["novel_metric"].value == 0.25
    assert ("why", '{"nested": true}') in judgements["novel_metric"].other
    assert [p.anchor for p in page.context["view"].passages] == ["passage-x1"]


# --- compare -----------------------------------------------------------------------------------------------


def compare_url(*runs) -> str:
    return reverse("dashboard:compare") + "?" + "&".join(f"run={r.pk}" for r in runs)


def per_question(run: EvaluationRun, metric: str) -> dict[str, float | None]:
    return {str(r.entry_id): r.metrics.get(metric) for r in QuestionResult.objects.filter(run=run)}


def test_two_answer_runs_compare_with_p_values_per_metric(alice, world, answer_batch):
    page = alice.get(reverse("dashboard:compare") + f"?batch={answer_batch.batch_id}")
    assert page.status_code == 200
    context = page.context
    assert context["answers"]
    assert context["metric_names"] == ["score", *JUDGED]
    (pair,) = context["pair_rows"]
    assert (pair.name_a, pair.name_b) == ("extractive", "llm answers")
    runs = [answer_batch.heuristic, answer_batch.judged]
    for metric, cell in pair.by_metric:
        if metric == "context_recall":  # the first run scored no question on it: nothing to pair
            assert cell is None
            continue
        if metric == "score":
            continue
        aligned = stats.align_by_question([per_question(run, metric) for run in runs])
        assert cell.p_value == stats.paired_randomization_test(*aligned.matrix, permutations=10000)
        assert cell.difference == pytest.approx(np.mean(aligned.matrix[0]) - np.mean(aligned.matrix[1]))
    paired = dict(zip(context["metric_names"], context["paired"], strict=True))
    # Faithfulness: question 7 is unreadable in both runs, question 6 declined, 3-5 have no judgement.
    assert paired["faithfulness"] == 3 and paired["context_recall"] == 0
    assert paired["score"] == 7  # every question but the error
    # The score is paired question by question, on 0–100.
    score = pair.cells[0]
    assert score is not None and 0 < score.p_value <= 1
    assert score.mean_a == pytest.approx(answer_batch.heuristic.metrics["score"])
    assert score.mean_b == pytest.approx(answer_batch.judged.metrics["score"])
    text = text_of(page)
    assert "p = " in text or "p < 0.001" in text
    # Run-level numbers: score, mode and refusal both ways with counts.
    levels = {r.name: r for r in context["run_level_rows"]}
    assert levels["llm answers"].mode == "mixed" and levels["extractive"].mode == "heuristic"
    assert "declined 1 of 2 unanswerable" in text and "declined 1 of 5 answerable" in text
    # The chart draws the 0–1 metrics only (the 0–100 score would flatten them), each over its own questions,
    # and no empty slot for context recall, which no question could be paired on.
    chart = context["chart"].replace(", ", ",").replace(": ", ":")
    assert '"x":["faithfulness","answer_relevancy","citation_precision","context_relevancy"]' in chart
    assert "over 3\\u20135 questions" in chart


def test_a_score_that_cannot_be_rebuilt_per_question_is_not_paired(alice, world):
    runs = [
        make_answer_run(world.tenant, world.collection, "a", questions(), score_offset=5.0),
        make_answer_run(world.tenant, world.collection, "b", questions(0.1)),
    ]
    page = alice.get(compare_url(*runs))
    assert page.status_code == 200
    assert "score" not in page.context["metric_names"]
    assert page.context["unpaired_score"] == [str(runs[0].pk)]
    assert "the score is not tested question by question" in text_of(page)


def test_a_comparison_mixing_retrieval_and_answer_runs_says_so(alice, world, answer_batch):
    (retrieval,) = make_runs(world.tenant, world.collection, 1, labels=("fulltext",), questions=8)
    page = alice.get(compare_url(retrieval, answer_batch.judged))
    assert page.status_code == 400
    assert "mixes retrieval runs and answer runs" in page.context["problem"]
    assert "answers runs: llm answers" in page.context["problem"]
    assert "retrieval runs: fulltext" in page.context["problem"]
    assert b"These runs cannot be compared" in page.content
    assert b"and one kind" in page.content


# --- trends ------------------------------------------------------------------------------------------------


def test_trends_draw_an_answer_metric_with_gaps_for_missing_values(alice, world, answer_batch):
    now = timezone.now()
    older = make_answer_run(
        world.tenant, world.collection, "llm answers", questions(0.2), created_at=now - timedelta(days=2)
    )
    page = alice.get(reverse("dashboard:trends") + "?metric=context_recall")
    assert page.status_code == 200
    context = page.context
    assert context["metric"] == "context_recall"
    groups = dict(context["metric_groups"])
    assert groups["answers"] == [
        "score",
        "faithfulness",
        "context_recall",
        "answer_relevancy",
        "citation_precision",
        "context_relevancy",
        "refusal_recall",
        "false_refusal_rate",
    ]
    labels = {label.label: label for label in context["labels"]}
    # "extractive" has no context recall at all: no line; "llm answers" has two points.
    assert labels["extractive"].latest_value is None
    assert labels["llm answers"].latest_run == answer_batch.judged.pk
    assert context["points"] == 2
    assert str(older.pk).encode() in page.content  # a marker's customdata (plotly escapes its slashes)
    assert b'<optgroup label="answer runs">' in page.content

    # A run of the label without the metric is a gap in its line (null), never a zero.
    EvaluationRun.objects.filter(pk=answer_batch.judged.pk).update(
        metrics={k: v for k, v in answer_batch.judged.metrics.items() if k != "context_recall"}
    )
    gap = alice.get(reverse("dashboard:trends") + "?metric=context_recall")
    assert gap.context["points"] == 1
    assert b'"connectgaps":false' in gap.content.replace(b", ", b",").replace(b": ", b":")
    assert re.search(rb'"y":\[[0-9.]+,null\]', gap.content.replace(b", ", b",").replace(b": ", b":"))


def test_trends_of_the_score_use_its_0_to_100_scale(alice, world, answer_batch):
    page = alice.get(reverse("dashboard:trends") + "?metric=score")
    assert page.context["metric"] == "score" and page.context["scale"] == 100.0
    assert page.context["points"] == 2
    assert '"text":"score (0\\u2013100)"' in page.content.decode().replace(": ", ":")
    assert '"range":[0,105.0]' in page.content.decode().replace(", ", ",").replace(": ", ":")
    latest = {label.label: label.latest_value for label in page.context["labels"]}
    assert latest["llm answers"] == pytest.approx(answer_batch.judged.metrics["score"])
    assert f"{answer_batch.judged.metrics['score']:.1f}" in text_of(page)


# --- the job -----------------------------------------------------------------------------------------------


def test_a_finished_answer_evaluation_job_opens_its_comparison(alice, world, answer_batch):
    job = Job.objects.create(
        tenant=world.tenant,
        kind=JobKind.EVALUATE_ANSWERS,
        collection=world.collection,
        status=JobStatus.COMPLETED,
        result={"batch_id": str(answer_batch.batch_id), "runs": []},
    )
    response = alice.get(reverse("dashboard:job", args=[job.pk]))
    assert response.status_code == 302
    assert response["Location"] == reverse("dashboard:compare") + f"?batch={answer_batch.batch_id}"
    progress = alice.get(reverse("dashboard:job-progress", args=[job.pk])).json()
    assert progress["result_url"] == response["Location"]
    running = Job.objects.create(
        tenant=world.tenant, kind=JobKind.EVALUATE_ANSWERS, collection=world.collection
    )
    page = alice.get(reverse("dashboard:job", args=[running.pk]))
    assert b"Answer evaluation of handbook" in page.content


# --- tenancy -----------------------------------------------------------------------------------------------


def test_another_tenants_answer_runs_are_a_404(world, outsider, answer_batch):
    client = Client()
    client.force_login(outsider)
    run = answer_batch.judged
    for url in [
        run_url(run),
        run_url(run, "?diagnosis=retrieval"),
        question_url(run, 0),
        reverse("dashboard:run-csv", args=[run.pk]),
        reverse("dashboard:compare") + f"?batch={answer_batch.batch_id}",
        compare_url(answer_batch.heuristic, run),
    ]:
        assert client.get(url).status_code == 404, url
    listed = client.get(reverse("dashboard:runs") + "?kind=answers")
    assert listed.context["rows"] == []


def test_every_answer_page_renders_for_a_member_and_is_a_404_under_another_tenant(alice, world, answer_batch):
    run = answer_batch.judged
    urls = [
        run_url(run),
        run_url(run, "?diagnosis=generation&outcome=failed"),
        *(question_url(run, p) for p in range(8)),
        question_url(answer_batch.heuristic, 7),
        reverse("dashboard:run-json", args=[run.pk]),
        reverse("dashboard:run-csv", args=[run.pk]),
        reverse("dashboard:compare") + f"?batch={answer_batch.batch_id}",
        reverse("dashboard:trends") + "?metric=faithfulness",
        reverse("dashboard:trends") + "?metric=score",
        reverse("dashboard:launch-answers"),
        reverse("dashboard:runs") + "?kind=answers",
    ]
    for url in urls:
        assert alice.get(url).status_code == 200, url
        joiner = "&" if "?" in url else "?"
        assert alice.get(f"{url}{joiner}tenant=acme/rival").status_code == 404, url


# --- launching an answer evaluation ------------------------------------------------------------------------


def answer_launch_data(configs: list[dict], collections=("handbook",), **fields) -> dict:
    data: dict = {
        "collections": list(collections),
        "judge_model": "",
        "max_questions": "",
        "unanswerable_questions": "",
        "configs-TOTAL_FORMS": str(len(configs)),
        "configs-INITIAL_FORMS": str(len(configs)),
        "configs-MIN_NUM_FORMS": "0",
        "configs-MAX_NUM_FORMS": "20",
        **fields,
    }
    for i, config in enumerate(configs):
        row = {
            "search_type": "FullText",
            "fusion": "Rrf",
            "bm25_variant": "lucene",
            "rerank": "",
            "label": "",
            "top_k": "3",
            "model": "",
            "groundedness": "Off",
            **config,
        }
        for name, value in row.items():
            if name == "enabled":
                if value:
                    data[f"configs-{i}-enabled"] = "on"
            else:
                data[f"configs-{i}-{name}"] = value
    return data


def test_the_answer_launcher_offers_configurations_and_links_the_retrieval_one(alice, world, golden):
    page = alice.get(reverse("dashboard:launch-answers"))
    assert page.status_code == 200
    formset = page.context["formset"]
    assert [f.initial["label"] for f in formset.forms][:2] == ["fulltext", "hybrid rrf"]
    assert {f.initial.get("groundedness", "Off") for f in formset.forms} == {"Off", "Medium"}
    assert "handbook (3 golden questions)" in str(page.context["form"]["collections"])
    assert b"No chat endpoint is configured" in page.content
    assert b'placeholder="extractive"' in page.content and b'placeholder="heuristic"' in page.content
    retrieval = alice.get(reverse("dashboard:launch"))
    assert reverse("dashboard:launch-answers").encode() in retrieval.content
    assert b'aria-current="page">Launch<' in page.content  # the header's section


def test_launching_an_answer_evaluation_runs_it_and_opens_the_comparison(
    alice, world, golden, django_capture_on_commit_callbacks
):
    data = answer_launch_data(
        [
            {"enabled": True, "label": "fulltext extractive"},
            {"enabled": True, "label": "grounded", "groundedness": "High", "top_k": "2"},
            {"enabled": False, "label": "not run"},
        ],
        unanswerable_questions="Do you sell gift cards?\nCan I pay with bitcoin?",
        max_questions="2",
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = alice.post(reverse("dashboard:launch-answers"), data)
    job = Job.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("dashboard:job", args=[job.pk])
    assert job.kind == JobKind.EVALUATE_ANSWERS and job.tenant == world.tenant
    assert job.input["collection_pks"] == [world.collection.pk]
    assert [c["label"] for c in job.input["configs"]] == ["fulltext extractive", "grounded"]
    assert job.input["configs"][1]["groundedness"] == "High" and job.input["configs"][1]["top_k"] == 2
    assert job.input["unanswerable_questions"] == ["Do you sell gift cards?", "Can I pay with bitcoin?"]
    assert job.input["max_questions"] == 2 and job.input["judge_model"] is None
    job.refresh_from_db()
    assert job.status == JobStatus.COMPLETED, job.error  # django-q2 sync mode ran it at commit
    batch_id = job.result["batch_id"]
    runs = EvaluationRun.objects.filter(batch_id=batch_id)
    assert sorted(runs.values_list("label", flat=True)) == ["fulltext extractive", "grounded"]
    assert set(runs.values_list("kind", flat=True)) == {"answers"}
    assert set(runs.values_list("question_count", flat=True)) == {4}  # 2 golden + 2 unanswerable
    opened = alice.get(reverse("dashboard:job", args=[job.pk]))
    assert opened.status_code == 302
    assert opened["Location"] == reverse("dashboard:compare") + f"?batch={batch_id}"
    compare = alice.get(opened["Location"])
    assert compare.status_code == 200 and compare.context["answers"]
    for run in runs:
        assert alice.get(run_url(run)).status_code == 200
        assert alice.get(question_url(run, 0)).status_code == 200


def test_the_answer_launcher_puts_errors_where_they_belong(alice, world, golden):
    nothing = alice.post(reverse("dashboard:launch-answers"), answer_launch_data([{"enabled": False}]))
    assert nothing.status_code == 400
    assert "Tick “run” on at least one configuration." in nothing.context["form"].non_field_errors()
    model = alice.post(
        reverse("dashboard:launch-answers"),
        answer_launch_data([{"enabled": True, "label": "gpt", "model": "gpt-4o"}]),
    )
    assert model.status_code == 400
    assert "needs a chat endpoint" in " ".join(model.context["formset"].forms[0].errors["model"])
    judge = alice.post(
        reverse("dashboard:launch-answers"),
        answer_launch_data([{"enabled": True, "label": "x"}], judge_model="llama3"),
    )
    assert judge.status_code == 400
    assert "needs a chat endpoint" in " ".join(judge.context["form"].errors["judge_model"])
    duplicate = alice.post(
        reverse("dashboard:launch-answers"),
        answer_launch_data([{"enabled": True, "label": "same"}, {"enabled": True, "label": "same"}]),
    )
    assert duplicate.status_code == 400
    assert "repeats" in " ".join(duplicate.context["formset"].forms[1].errors["label"])
    assert Job.objects.count() == 0


def test_an_empty_collection_cannot_be_launched_without_questions(alice, world, other_collection):
    GoldenEntry.objects.filter(collection=other_collection).delete()
    response = alice.post(
        reverse("dashboard:launch-answers"), answer_launch_data([{"enabled": True}], collections=("faq",))
    )
    assert response.status_code == 400
    assert "no golden questions yet" in " ".join(response.context["form"].errors["collections"])
