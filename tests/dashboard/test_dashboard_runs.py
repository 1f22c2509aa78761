"""Runs: the list (newest first, filtered, paginated), a run's questions (a page at a time, numbered from 1 in their
URLs), one question's ranking, downloads."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import timedelta

from django.template.defaultfilters import floatformat
from django.urls import reverse
from django.utils import timezone

from evaluation.dashboard.runs_reads import RUN_QUESTIONS_PER_PAGE, run_questions
from evaluation.models import QuestionResult
from tests.dashboard.conftest import make_runs


def test_runs_are_listed_newest_first_with_their_metrics(alice, world, batch):
    older = make_runs(world.tenant, world.collection, 2, start=timezone.now() - timedelta(days=3))
    page = alice.get(reverse("dashboard:runs"))
    listed = [row.run.pk for row in page.context["rows"]]
    assert listed[-2:] == [r.pk for r in older]
    assert set(listed[:3]) == {r.pk for r in batch.runs}
    first = page.context["rows"][0]
    assert [name for name, _ in first.metrics] == ["ndcg@3", "recall@3", "mrr"]
    assert first.color.startswith("#")
    assert b"Compare selected" in page.content


def test_runs_filter_by_collection_label_kind_and_date(alice, world, batch, other_collection):
    faq = make_runs(
        world.tenant,
        other_collection,
        2,
        labels=("faq-run",),
        start=timezone.now() - timedelta(days=10),
        step=timedelta(days=1),
    )
    url = reverse("dashboard:runs")
    by_collection = alice.get(f"{url}?collection=faq")
    assert [r.run.pk for r in by_collection.context["rows"]] == [r.pk for r in faq]
    by_label = alice.get(f"{url}?label=vector")
    assert [r.run.label for r in by_label.context["rows"]] == ["vector"]
    assert alice.get(f"{url}?kind=answers").context["rows"] == []
    day = (timezone.now() - timedelta(days=10)).date().isoformat()
    by_date = alice.get(f"{url}?date_from={day}&date_to={day}")
    assert [r.run.pk for r in by_date.context["rows"]] == [faq[0].pk]
    backwards = alice.get(f"{url}?date_from=2030-01-02&date_to=2030-01-01")
    assert "date_to" in backwards.context["form"].errors


def test_runs_are_paginated_by_fifty(alice, world):
    make_runs(world.tenant, world.collection, 60)
    first = alice.get(reverse("dashboard:runs"))
    assert len(first.context["rows"]) == 50 and first.context["page"].paginator.num_pages == 2
    second = alice.get(reverse("dashboard:runs") + "?page=2")
    assert len(second.context["rows"]) == 10


def test_no_runs_says_how_to_make_one(alice, world):
    page = alice.get(reverse("dashboard:runs"))
    assert b"No runs yet" in page.content and reverse("dashboard:launch").encode() in page.content


def test_run_detail_lists_every_question_and_filters_to_failures(alice, world, batch):
    run = batch.runs[0]
    questions = run_questions(run=run)
    assert [q.question for q in questions] == [
        "How long is the refund window?",
        "When does express shipping arrive?",
        "What does the warranty cover?",
    ]
    stored = {r.position: r for r in QuestionResult.objects.filter(run=run)}
    for q in questions:
        result = stored[q.position]
        assert q.first_relevant_rank == result.first_relevant_rank
        assert q.recall == result.metrics["recall@3"] and q.ndcg == result.metrics["ndcg@3"]
        expected = (
            "pass"
            if not result.missing_document_ids
            else ("miss" if result.first_relevant_rank is None else "partial")
        )
        assert q.diagnosis == expected
    page = alice.get(reverse("dashboard:run", args=[run.pk]))
    assert shown_positions(page) == [q.position for q in questions]
    html = page.content.decode()
    for q in questions:
        assert (
            f'href="{reverse("dashboard:run-question", args=[run.pk, q.position + 1])}">{q.question}</a>'
            in html
        )
        assert f'<td class="num">{floatformat(q.recall, 3)}</td>' in html
    failures = alice.get(reverse("dashboard:run", args=[run.pk]) + "?failures=1")
    assert shown_positions(failures) == [q.position for q in questions if q.diagnosis != "pass"]
    assert b'class="data sortable questions"' in page.content


def shown_positions(page) -> list[int]:
    """The positions of the question rows a run page shows (their first cell's data-value)."""
    cells = re.findall(r'<tr>\s*<td class="num" data-value="(\d+)">', page.content.decode())
    return [int(p) for p in cells]


def test_a_question_shows_its_ranking_with_relevant_documents_marked(alice, world, batch):
    run = batch.runs[0]
    result = QuestionResult.objects.get(run=run, position=2)  # expects warranty and refunds
    page = alice.get(reverse("dashboard:run-question", args=[run.pk, 3]))  # numbered from 1
    ranked = page.context["ranked"]
    assert [(d.rank, d.document_id) for d in ranked] == [
        (i, doc) for i, (doc, _) in enumerate(result.ranked, 1)
    ]
    assert {d.document_id for d in ranked if d.grade} == {d for d, _ in result.ranked if d in result.expected}
    assert {d.document_id: d.title for d in ranked}.get("warranty", "Warranty") == "Warranty"
    assert [d.document_id for d in page.context["missing"]] == result.missing_document_ids
    assert alice.get(reverse("dashboard:run-question", args=[run.pk, 99])).status_code == 404


def test_a_question_lists_expected_documents_that_were_not_retrieved(alice, world):
    (run,) = make_runs(world.tenant, world.collection, 1, questions=3)
    missed = QuestionResult.objects.get(run=run, position=0)  # (q + r) % 3 == 0: nothing found
    assert missed.missing_document_ids == ["doc0"]
    page = alice.get(reverse("dashboard:run-question", args=[run.pk, 1]))
    assert page.context["diagnosis"] == "miss"
    assert [(d.document_id, d.exists) for d in page.context["missing"]] == [("doc0", False)]
    assert b"no longer in the collection" in page.content


def test_the_trec_download_is_a_run_file(alice, world, batch):
    run = batch.runs[0]
    response = alice.get(reverse("dashboard:run-trec", args=[run.pk]))
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith('attachment; filename="run-fulltext-')
    lines = response.content.decode().splitlines()
    expected = []
    for result in QuestionResult.objects.filter(run=run).order_by("position"):
        qid = result.entry_key or str(result.entry_id)
        expected += [
            f"{qid} Q0 {doc} {rank} {score!r} fulltext" for rank, (doc, score) in enumerate(result.ranked, 1)
        ]
    assert lines == expected
    fields = lines[0].split()
    assert len(fields) == 6 and fields[0] == "q-refund" and fields[1] == "Q0" and fields[3] == "1"
    # The entry without a key is named by its id.
    assert any(line.split()[0] == str(batch.runs[0].results.get(position=2).entry_id) for line in lines)


def test_the_csv_download_has_a_row_per_question(alice, world, batch):
    run = batch.runs[1]
    response = alice.get(reverse("dashboard:run-csv", args=[run.pk]))
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert list(rows[0])[:7] == [
        "position",
        "entry_id",
        "entry_key",
        "collection_id",
        "question",
        "first_relevant_rank",
        "diagnosis",
    ]
    assert {"recall@1", "recall@3", "ndcg@1", "ndcg@3", "mrr"} <= set(rows[0])
    assert [r["question"] for r in rows] == [r.question for r in run.results.order_by("position")]
    assert json.loads(rows[0]["expected_document_ids"]) == ["refunds"]


def test_the_json_download_is_the_apis_run(alice, world, batch):
    run = batch.runs[2]
    response = alice.get(reverse("dashboard:run-json", args=[run.pk]))
    data = json.loads(response.content)
    api = world.client.get(f"/lmkit/v1/search/evaluate/runs/{run.pk}").json()
    assert data == api
    assert data["label"] == "hybrid" and len(data["results"]) == 3


def test_three_places_writes_what_floatformat_writes():
    import random

    from django.template.defaultfilters import floatformat

    from evaluation.dashboard.runs_views import three_places

    rng = random.Random(7)
    values = [0.0, 1.0, 0.5, 0.0005, 0.0015, 0.9995, 1e-7, 1 / 3, 2 / 3]
    values += [rng.random() for _ in range(5000)] + [round(rng.random(), 4) for _ in range(5000)]
    assert [three_places(v) for v in values] == [floatformat(v, 3) for v in values]
    assert three_places(None) == ""


def test_a_run_page_is_rendered_from_its_cached_table_the_second_time(
    alice, world, django_assert_max_num_queries
):
    from django.core.cache import cache

    from tests.dashboard.conftest import make_runs

    (run,) = make_runs(world.tenant, world.collection, 1, questions=30)
    cache.clear()
    first = alice.get(reverse("dashboard:run", args=[run.pk])).content.decode()
    with django_assert_max_num_queries(6):
        second = alice.get(reverse("dashboard:run", args=[run.pk])).content.decode()
    table = re.compile(r'<table class="data sortable questions">.*?</table>', re.DOTALL)
    assert table.search(second)[0] == table.search(first)[0]
    assert table.search(first)[0].count("<tr>") == 31  # the header row and 30 questions
    failures = alice.get(reverse("dashboard:run", args=[run.pk]) + "?failures=1").content.decode()
    assert failures != first  # its own cached table


def test_a_retrieval_questions_diagnosis_is_the_same_over_rest_as_on_its_page(world):
    """One rule (evaluation.reports.diagnosis) for every face of a run: the page's rows and the REST
    detail."""
    (run,) = make_runs(world.tenant, world.collection, 1, questions=3)
    shown = {q.position: q.diagnosis for q in run_questions(run=run)}
    detail = world.client.get(f"/lmkit/v1/search/evaluate/runs/{run.pk}")
    assert detail.status_code == 200, detail.json()
    answered = {q["position"]: q["diagnosis"] for q in detail.json()["results"]}
    assert answered == shown and "miss" in answered.values(), (answered, shown)


def test_question_urls_count_from_one_like_the_page(alice, batch):
    """Question 1 of the table is /questions/1/, its page says "question 1", and its neighbours link 1-based."""
    run = batch.runs[0]
    table = alice.get(reverse("dashboard:run", args=[run.pk])).content.decode()
    first = reverse("dashboard:run-question", args=[run.pk, 1])
    assert first.endswith("/questions/1/")
    assert '<td class="num" data-value="0">1</td>' in table
    assert f'<a href="{first}">' in table
    page = alice.get(first)
    assert page.status_code == 200
    assert page.context["result"].position == 0
    html = page.content.decode()
    assert "<span>question 1</span>" in html
    assert page.context["previous"] is None and page.context["following"] == 2
    assert f'href="{reverse("dashboard:run-question", args=[run.pk, 2])}" rel="next"' in html
    second = alice.get(reverse("dashboard:run-question", args=[run.pk, 2]))
    assert second.context["result"].position == 1 and "<span>question 2</span>" in second.content.decode()
    assert second.context["previous"] == 1


def test_question_zero_and_past_the_last_are_404(alice, batch):
    run = batch.runs[0]
    count = run.results.count()
    assert alice.get(reverse("dashboard:run-question", args=[run.pk, 0])).status_code == 404
    assert alice.get(reverse("dashboard:run-question", args=[run.pk, count])).status_code == 200
    assert alice.get(reverse("dashboard:run-question", args=[run.pk, count + 1])).status_code == 404


def numbers_shown(response) -> list[int]:
    """The question numbers (as shown, from 1) of the page's question rows."""
    return [
        int(n)
        for n in re.findall(r'<tr>\s*<td class="num" data-value="\d+">(\d+)</td>', response.content.decode())
    ]


def test_a_retrieval_runs_questions_are_paged_like_an_answer_runs(alice, world):
    (run,) = make_runs(world.tenant, world.collection, 1, questions=250)
    url = reverse("dashboard:run", args=[run.pk])
    first = alice.get(url)
    assert first.context["question_total"] == 250
    assert numbers_shown(first) == list(range(1, RUN_QUESTIONS_PER_PAGE + 1))
    html = first.content.decode()
    assert "page 1 of 3" in html and '<a href="?page=2" rel="next">' in html
    last = alice.get(url + "?page=3")
    assert numbers_shown(last) == list(range(2 * RUN_QUESTIONS_PER_PAGE + 1, 251))
    # Each number links its own question; past the last page is the last page, as everywhere.
    assert f'href="{reverse("dashboard:run-question", args=[run.pk, 250])}"' in last.content.decode()
    assert numbers_shown(alice.get(url + "?page=9")) == numbers_shown(last)
    assert numbers_shown(alice.get(url + "?page=x")) == numbers_shown(first)


def test_the_failures_filter_pages_and_keeps_its_filter(alice, world):
    (run,) = make_runs(world.tenant, world.collection, 1, questions=450)
    response = alice.get(reverse("dashboard:run", args=[run.pk]) + "?failures=1")
    failures = response.context["failures"]
    assert failures > RUN_QUESTIONS_PER_PAGE  # enough failures for more than one page
    assert len(numbers_shown(response)) == RUN_QUESTIONS_PER_PAGE
    assert '<a href="?failures=1&amp;page=2" rel="next">' in response.content.decode()
    pages = -(-failures // RUN_QUESTIONS_PER_PAGE)
    tail = alice.get(reverse("dashboard:run", args=[run.pk]) + f"?failures=1&page={pages}")
    assert len(numbers_shown(tail)) == failures - (pages - 1) * RUN_QUESTIONS_PER_PAGE


def test_a_short_run_has_no_page_links(alice, batch):
    response = alice.get(reverse("dashboard:run", args=[batch.runs[0].pk]))
    assert numbers_shown(response) == list(range(1, batch.runs[0].question_count + 1))
    assert 'class="pagination"' not in response.content.decode()
