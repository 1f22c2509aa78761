"""One answer run's page: its header (score, mode, metrics, refusals, diagnoses, usage, configuration), the
questions table with its filters and pages, its CSV, and the fixed number of queries it costs."""

from __future__ import annotations

import csv
import io
import re
import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evaluation.dashboard import runs_views
from evaluation.models import EvaluationRun, QuestionResult
from tests.dashboard.answer_runs_support import (
    JUDGED,
    make_answer_run,
    questions,
)
from tests.dashboard.conftest import run_url, text_of

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
        "passages (top k)": "2",
        "search type": "FullText",
        "rerank": "off",
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
    monkeypatch.setattr(runs_views, "ANSWER_QUESTIONS_PER_PAGE", 2)
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
    with django_assert_max_num_queries(9):  # of them: whether the collection has human labels; label colours
        alice.get(run_url(answer_batch.judged, "?diagnosis=generation"))
    with django_assert_max_num_queries(11):  # +1: the tenant's label colours
        alice.get(reverse("dashboard:run-question", args=[answer_batch.judged.pk, 1]))


@pytest.fixture
def long_answer_run(world):
    """An answer run of 240 questions (the eight of `questions()`, 30 times): more than a page of them."""
    run = make_answer_run(world.tenant, world.collection, "many", questions())
    eight = list(QuestionResult.objects.filter(run=run).order_by("position"))
    fields = [f.attname for f in QuestionResult._meta.concrete_fields if f.attname != "id"]
    QuestionResult.objects.bulk_create(
        QuestionResult(
            **{
                **{name: getattr(eight[position % 8], name) for name in fields},
                "position": position,
                "entry_id": uuid.uuid4(),
            }
        )
        for position in range(8, 240)
    )
    return run


def test_an_answer_run_page_reads_each_shown_questions_judgements_in_one_expression(
    alice, world, long_answer_run
):
    """The table's exclusion and fallback of every metric come out of the judgements in one expression, not
    one key transform per metric and flag: on PostgreSQL each of those decompressed the (out-of-line) jsonb
    value again, ten times a question."""
    with CaptureQueriesContext(connection) as queries:
        page = alice.get(run_url(long_answer_run, "?page=2"))
    assert [q.position for q in page.context["questions"]] == list(range(100, 200))
    reading = [q["sql"] for q in queries.captured_queries if "judgements" in q["sql"]]
    assert len(reading) == 1
    assert reading[0].count("judgements") <= 2  # its type, then its metrics
    # The same cells as the first eight questions' (see the table test above): the flags survive the read.
    notes = [
        (q.position % 8, i, c.note)
        for q in page.context["questions"]
        for i, c in enumerate(q.cells)
        if c.note
    ]
    assert (1, 0, "judge failed (timeout after 30 s): scored by the heuristic") in notes
    assert (7, 0, "excluded: unreadable") in notes


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the plan PostgreSQL chooses")
def test_an_answer_run_page_reads_the_judgements_of_its_own_page_only(alice, world, long_answer_run):
    """On a table the planner has no statistics for (a test database, as a fresh one in production until its
    first ANALYZE), the flags were read out of every question's judgements before the sort kept 100: now the
    judgements of the page's rows only are decompressed (the subquery runs after ORDER BY and LIMIT)."""
    with CaptureQueriesContext(connection) as queries:
        alice.get(run_url(long_answer_run))
    [reading] = [q["sql"] for q in queries.captured_queries if "judgements" in q["sql"]]
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + reading)
        plan = cursor.fetchone()[0][0]["Plan"]

    def nodes(node):
        yield node
        for child in node.get("Plans", []):
            yield from nodes(child)

    # The judgements are decompressed where their flags are read out (a subplan per row): for a page of rows.
    reads = [n for n in nodes(plan) if n.get("Parent Relationship") == "SubPlan"]
    assert reads
    assert all(n["Actual Loops"] <= 100 for n in reads), reads


def test_configuration_values_read_as_words_on_answer_and_retrieval_run_pages(
    alice, world, answer_batch, batch
):
    """A flag is "on" or "off", never Python's True or False; a run without a reranker says "rerank off"."""
    run = answer_batch.judged
    config = {**run.config, "rerank": False, "unanswerable_in_golden_set": True, "tags": ["policy", "faq"]}
    EvaluationRun.objects.filter(pk=run.pk).update(config=config)
    answer_page = text_of(alice.get(run_url(run)))
    assert "rerank off" in answer_page and "unanswerable_in_golden_set on" in answer_page
    assert "tags policy, faq" in answer_page
    retrieval = batch.runs[0]
    EvaluationRun.objects.filter(pk=retrieval.pk).update(
        config={**retrieval.config, "rerank": None, "x": False}
    )
    retrieval_page = text_of(alice.get(run_url(retrieval)))
    assert "rerank off" in retrieval_page and "x off" in retrieval_page
    for text in (answer_page, retrieval_page):
        assert not re.search(r"\b(True|False|None)\b", text), text
