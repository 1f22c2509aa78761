"""Trends of an answer metric: gaps where a run has no value, and the score on its 0 to 100 scale."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from evaluation.models import EvaluationRun
from tests.dashboard.answer_runs_support import (
    make_answer_run,
    questions,
)
from tests.dashboard.conftest import text_of

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
