"""Answer runs in the runs list and on the home page: their kind, score and mode; a run without a score shows a
dash, never a zero."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from evaluation.models import EvaluationRun
from tests.dashboard.conftest import make_runs, run_url, text_of

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
