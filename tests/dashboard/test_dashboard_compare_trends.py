"""Compare (means with bootstrap CIs, paired randomization tests) and Trends (a metric over time per label)."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from django.urls import reverse
from django.utils import timezone

from evaluation.dashboard import trends_reads
from evaluation.dashboard.label_colors import tenant_label_colors
from evaluation.models import EvaluationRun, QuestionResult
from evaluation.runs import stats
from tests.dashboard.conftest import compare_url, make_runs


def test_compare_a_batch_shows_every_metric_with_intervals_and_pairwise_tests(alice, world, batch):
    page = alice.get(reverse("dashboard:compare") + f"?batch={batch.batch_id}")
    assert page.status_code == 200
    context = page.context
    assert context["metric_names"] == ["recall@1", "recall@3", "ndcg@1", "ndcg@3", "mrr"] + [
        "judged@1", "judged@3", "ndcg_cond@1", "ndcg_cond@3", "bpref", "map_cond",
    ]  # fmt: skip
    assert [s.name for s in context["series_rows"]] == ["fulltext", "vector", "hybrid"]
    assert context["questions"] == 3 and context["same_batch"]
    for row, run in zip(context["series_rows"], batch.runs, strict=True):
        values = {
            m: [r.metrics[m] for r in QuestionResult.objects.filter(run=run).order_by("entry_id")]
            for m in context["metric_names"]
        }
        for metric, mean, ci, _ in row.cells:
            assert mean == np.mean(values[metric])  # the run's own mean, over the same questions
            assert ci == pytest.approx(stats.bootstrap_ci(values[metric], confidence=0.95), abs=1e-12)
            assert ci[0] <= mean <= ci[1]
        assert row.color == tenant_label_colors(run.tenant)[run.label]
    pairs = [(p.name_a, p.name_b) for p in context["pair_rows"]]
    assert pairs == [("fulltext", "vector"), ("fulltext", "hybrid"), ("vector", "hybrid")]
    for pair in context["pair_rows"]:
        for cell in pair.cells:
            assert 0 < cell.p_value <= 1 and cell.significant == (cell.p_value < 0.05)
    assert b'id="compare-chart"' in page.content
    assert b"/static/plotly/plotly.min.js" in page.content
    assert b"95% bootstrap CI" in page.content


def test_a_pairwise_p_value_is_the_paired_randomization_tests(alice, world):
    """Two runs over the same 30 questions: the page's p-value is stats' test on the per-question scores."""
    runs = make_runs(world.tenant, world.collection, 2, questions=30)
    page = alice.get(compare_url(*runs))
    (pair,) = page.context["pair_rows"]
    names = page.context["metric_names"]
    ordered = sorted(runs, key=lambda r: r.created_at)
    a, b = (
        [r.metrics["mrr"] for r in QuestionResult.objects.filter(run=run).order_by("entry_id")]
        for run in ordered
    )
    cell = pair.cells[names.index("mrr")]
    assert cell.p_value == stats.paired_randomization_test(a, b, permutations=10000)
    assert cell.difference == np.mean(a) - np.mean(b)


def test_runs_of_two_collections_cannot_be_compared(alice, world, batch, other_collection):
    (faq_run,) = make_runs(world.tenant, other_collection, 1)
    page = alice.get(compare_url(batch.runs[0], faq_run))
    assert page.status_code == 400
    assert "different collections" in page.context["problem"]
    assert b"These runs cannot be compared" in page.content
    assert b"faq" in page.content and b"handbook" in page.content


def test_compare_needs_two_runs_and_says_so(alice, world, batch):
    one = alice.get(compare_url(batch.runs[0]))
    assert one.status_code == 400 and "at least two runs" in one.context["problem"]
    nothing = alice.get(reverse("dashboard:compare"))
    assert nothing.status_code == 200 and nothing.context["latest_batch"] == batch.batch_id
    assert b"Compare the latest batch" in nothing.content
    assert alice.get(reverse("dashboard:compare") + "?run=not-a-uuid").status_code == 400


def test_repeated_labels_get_told_apart(alice, world):
    runs = make_runs(world.tenant, world.collection, 2, labels=("fulltext",), questions=5)
    names = [s.name for s in alice.get(compare_url(*runs)).context["series_rows"]]
    assert len(set(names)) == 2 and all(name.startswith("fulltext (") for name in names)


def test_trends_draw_the_chosen_metric_per_label_with_run_links(alice, world, batch):
    make_runs(world.tenant, world.collection, 6, start=timezone.now() - timedelta(days=1))
    page = alice.get(reverse("dashboard:trends") + "?metric=mrr")
    assert page.status_code == 200
    context = page.context
    assert context["metric"] == "mrr" and context["collection"] == world.collection
    assert [label.label for label in context["labels"]] == ["fulltext", "hybrid", "vector"]
    assert context["points"] == 9
    assert b'id="trends-chart"' in page.content
    assert reverse("dashboard:run", args=[batch.runs[0].pk]).encode() in page.content  # a marker's customdata
    assert "mrr" in context["metric_names"] and "ndcg@10" in context["metric_names"]


def test_trends_default_to_the_last_ninety_days(alice, world):
    make_runs(world.tenant, world.collection, 3, labels=("old",), start=timezone.now() - timedelta(days=120))
    make_runs(world.tenant, world.collection, 2, labels=("new",))
    page = alice.get(reverse("dashboard:trends"))
    assert [label.label for label in page.context["labels"]] == ["new"]
    assert page.context["date_to"] == timezone.localdate()
    assert page.context["date_from"] == timezone.localdate() - timedelta(days=90)
    wide = alice.get(reverse("dashboard:trends") + "?date_from=2000-01-01")
    assert [label.label for label in wide.context["labels"]] == ["new", "old"]


def test_trends_keep_the_latest_points_of_each_label(alice, world, monkeypatch):
    monkeypatch.setattr(trends_reads, "TREND_POINTS_PER_LABEL", 4)
    runs = make_runs(world.tenant, world.collection, 12, labels=("a", "b"))
    rows = trends_reads.trend_rows(
        tenant=world.tenant,
        collection=world.collection,
        date_from=timezone.localdate() - timedelta(days=5),
        date_to=timezone.localdate(),
        metric="mrr",
        per_label=4,
    )
    newest = {label: [r.pk for r in runs if r.label == label][:4] for label in ("a", "b")}
    assert sorted(pk for pk, *_ in rows) == sorted(newest["a"] + newest["b"])
    assert [created for _, _, created, _ in rows] == sorted(created for _, _, created, _ in rows)
    assert {value for *_, value in rows} == {0.4}
    page = alice.get(reverse("dashboard:trends"))
    assert all(label.capped for label in page.context["labels"])


def test_trends_only_draw_runs_that_have_the_metric(alice, world):
    make_runs(world.tenant, world.collection, 2, labels=("retrieval",))
    answers = make_runs(world.tenant, world.collection, 3, labels=("answers",))
    EvaluationRun.objects.filter(pk__in=[r.pk for r in answers]).update(metrics={"faithfulness": 0.8})
    page = alice.get(reverse("dashboard:trends") + "?metric=faithfulness")
    assert page.context["metric"] == "faithfulness" and page.context["points"] == 3
    assert {label.label: label.latest_value for label in page.context["labels"]} == {
        "answers": 0.8,
        "retrieval": None,
    }
    assert "faithfulness" in page.context["metric_names"] and "mrr" in page.context["metric_names"]
    unknown = alice.get(reverse("dashboard:trends") + "?metric=nonsense")
    assert unknown.context["metric"] == "ndcg@10"


def test_trends_without_runs_say_what_to_do(alice, world):
    page = alice.get(reverse("dashboard:trends"))
    assert page.status_code == 200 and page.context["chart"] == ""
    assert b"No runs of handbook in this range" in page.content


def test_home_shows_counts_and_the_latest_run_per_label(alice, world, batch):
    make_runs(world.tenant, world.collection, 3, start=timezone.now() - timedelta(days=2))
    page = alice.get(reverse("home"))
    (summary,) = page.context["summaries"]
    assert (summary.document_count, summary.page_count, summary.golden_entry_count) == (3, 3, 3)
    latest = {r.label: r.run_id for r in summary.latest_runs}
    assert latest == {run.label: run.pk for run in batch.runs}
