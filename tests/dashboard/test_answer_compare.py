"""Compare of answer runs: per-metric p-values over paired questions, a score that cannot be rebuilt per
question left unpaired, and a comparison mixing retrieval and answer runs saying so."""

from __future__ import annotations

import numpy as np
import pytest
from django.template.defaultfilters import floatformat
from django.urls import reverse

from evaluation.models import EvaluationRun, QuestionResult
from evaluation.runs import stats
from tests.dashboard.answer_runs_support import (
    JUDGED,
    make_answer_run,
    questions,
)
from tests.dashboard.conftest import compare_url, make_runs, text_of

# --- compare -----------------------------------------------------------------------------------------------


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
    assert [metric for metric, _ in pair.by_metric] == ["score", *JUDGED]
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
    # Each paired cell shows its p-value as the page formats it.
    shown = [c for c in pair.cells if c is not None]
    assert len(shown) == len(JUDGED)  # the score and every judged metric but context recall
    for cell in shown:
        p = "p < 0.001" if cell.p_value < 0.001 else f"p = {floatformat(cell.p_value, 3)}"
        assert p in text, cell
    # Run-level numbers: score, mode and refusal both ways with counts.
    levels = {r.name: r for r in context["run_level_rows"]}
    assert levels["llm answers"].mode == "mixed" and levels["extractive"].mode == "heuristic"
    assert "declined 1 of 2 unanswerable" in text and "declined 1 of 5 answerable" in text
    # The chart draws the 0–1 metrics only (the 0–100 score would flatten them), each over its own questions,
    # and no empty slot for context recall, which no question could be paired on.
    chart = context["chart"].replace(", ", ",").replace(": ", ":")
    assert '"x":["faithfulness","answer_relevancy","citation_precision","context_relevancy"]' in chart
    assert "over 3–5 questions" in chart.split("</figcaption>")[0]  # in the title, the figure's caption


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
