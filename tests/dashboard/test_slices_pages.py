"""Slices and subsets in the dashboard: a run's page shows every metric per slice, Compare shows one metric per
slice across the runs (table and chart), and both launchers restrict an evaluation to a subset."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from evalsite.jobs.models import Job, JobStatus
from evaluation.configs import parse_configs
from evaluation.models import EvaluationRun
from evaluation.retrieval.evaluate import evaluate_retrieval
from evaluation.runs.slices import Subset
from goldenset.models import GoldenEntry, Origin
from tests.dashboard.conftest import answer_launch_data, compare_url, launch_data, run_url, text_of


def slice_rows(response, table_class: str) -> list[list[str]]:
    """The body rows of the page's table of that class, each cell's text."""
    html = response.content.decode()
    table = re.search(rf'<table class="data {table_class}"[^>]*>(.*?)</table>', html, flags=re.S)
    assert table, f"no {table_class} table"
    rows = re.findall(r"<tr>(.*?)</tr>", table.group(1).split("<tbody>")[1], flags=re.S)
    return [
        [
            re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", cell)).strip()
            for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        ]
        for row in rows
    ]


def mean_over(run: EvaluationRun, metric: str, tag: str) -> float:
    """The metric's mean over the run's questions carrying the tag, from the stored question results."""
    values = [r.metrics[metric] for r in run.results.all() if tag in r.tags]
    return sum(values) / len(values)


# --- a run's page -------------------------------------------------------------------------------------------------


def test_a_retrieval_runs_page_shows_every_metric_per_tag_and_origin(alice, batch):
    run = batch.runs[0]
    page = alice.get(run_url(run))
    assert page.status_code == 200
    rows = slice_rows(page, "run-slices")
    header = ["recall@1", "recall@3", "ndcg@1", "ndcg@3", "mrr"]
    holes = ["judged@1", "judged@3", "ndcg_cond@1", "ndcg_cond@3", "bpref", "map_cond"]
    assert page.context["slices"].metric_names == header + holes
    assert [row[:2] for row in rows] == [
        ["tag money", "1"],
        ["tag policy", "2"],
        ["tag shipping", "1"],
        ["origin Manual", "3"],
    ]
    policy = rows[1][2:]
    assert policy == [f"{mean_over(run, metric, 'policy'):.3f}" for metric in header + holes]
    assert policy == [f"{run.slices['tag']['policy'][metric]:.3f}" for metric in header + holes]


def test_a_restricted_runs_page_says_its_subset(alice, world, golden, django_capture_on_commit_callbacks):
    data = launch_data([{"enabled": True, "label": "policy only"}], ks="1,3", tags="policy, money")
    with django_capture_on_commit_callbacks(execute=True):
        response = alice.post(reverse("dashboard:launch"), data)
    assert response.status_code == 302
    job = Job.objects.get()
    assert job.status == JobStatus.COMPLETED, job.error
    assert job.input["configs"][0]["tags"] == ["policy", "money"]
    run = EvaluationRun.objects.get()
    assert run.question_count == 2 and run.config["subset"]["tags"] == ["policy", "money"]
    page = alice.get(run_url(run))
    assert "subset tags policy, money" in text_of(page)
    assert [row[:2] for row in slice_rows(page, "run-slices")] == [
        ["tag money", "1"],
        ["tag policy", "2"],
        ["origin Manual", "2"],
    ]


def test_a_run_without_slices_shows_no_table(alice, batch):
    run = batch.runs[0]
    EvaluationRun.objects.filter(pk=run.pk).update(slices={})  # a run stored before slices were
    page = alice.get(run_url(run))
    assert page.status_code == 200 and b"run-slices" not in page.content and "By slice" not in text_of(page)


def test_an_answer_runs_page_has_answerable_slices(alice, world, golden, django_capture_on_commit_callbacks):
    data = answer_launch_data(
        [{"enabled": True, "label": "extractive"}],
        unanswerable_questions="Can I pay in bitcoin?",
        reviewed_only="",
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert alice.post(reverse("dashboard:launch-answers"), data).status_code == 302
    run = EvaluationRun.objects.get()
    rows = slice_rows(alice.get(run_url(run)), "run-slices")
    names = [row[0] for row in rows]
    assert names[-2:] == ["answerable false", "answerable true"] and "tag policy" in names
    assert rows[-2][1] == "1" and rows[-1][1] == "3"
    assert rows[-1][2] == f"{run.slices['answerable']['true']['score']:.1f}"  # the score, 0-100


def test_another_tenants_run_page_is_a_404(batch, outsider):
    client = Client()
    client.force_login(outsider)
    assert client.get(run_url(batch.runs[0])).status_code == 404


# --- compare ------------------------------------------------------------------------------------------------------


def test_compare_shows_one_metric_per_slice_across_the_runs_and_a_chart(alice, batch):
    fulltext, vector, hybrid = batch.runs
    page = alice.get(compare_url(fulltext, vector, hybrid))
    assert page.status_code == 200
    assert page.context["slices"].metric == "mrr"  # ndcg@10 and recall@10 are not computed at ks 1, 3
    rows = slice_rows(page, "compare-slices")
    assert [row[0] for row in rows] == ["tag money", "tag policy", "tag shipping", "origin Manual"]
    assert rows[1][1:] == [f"{r.slices['tag']['policy']['mrr']:.3f} 2 questions" for r in batch.runs]
    assert 'id="slices-chart"' in page.content.decode()

    picked = alice.get(compare_url(fulltext, vector, hybrid) + "&slice_metric=ndcg@3")
    assert picked.context["slices"].metric == "ndcg@3"
    assert (
        slice_rows(picked, "compare-slices")[3][1]
        == f"{fulltext.slices['origin']['Manual']['ndcg@3']:.3f} 3 questions"
    )
    unknown = alice.get(compare_url(fulltext, vector) + "&slice_metric=nonsense")
    assert unknown.status_code == 200 and unknown.context["slices"].metric == "mrr"


def test_compare_marks_a_slice_a_run_lacks(alice, world, golden, batch):
    GoldenEntry.objects.filter(key="q-ship").update(origin=Origin.GENERATED, reviewed=False)
    _, (skipping,) = evaluate_retrieval(
        tenant=world.tenant,
        collections=[world.collection],
        ks=[1, 3],
        configs=parse_configs([{"label": "reviewed"}], [], Subset(skip_unreviewed_generated=True)),
    )
    rows = slice_rows(alice.get(compare_url(batch.runs[0], skipping)), "compare-slices")
    assert [row[0] for row in rows] == ["tag money", "tag policy", "tag shipping", "origin Manual"]
    assert rows[2][2] == "—"  # the shipping question was left out of the second run: no such slice


# --- the launchers --------------------------------------------------------------------------------------------------


def test_the_launchers_offer_the_subset_fields(alice, golden):
    for name in ("dashboard:launch", "dashboard:launch-answers"):
        page = alice.get(reverse(name))
        form = page.context["form"]
        assert {"tags", "origin", "reviewed_only", "skip_unreviewed_generated"} <= set(form.fields)
        assert [value for value, _ in form.fields["origin"].choices] == ["Manual", "Imported", "Generated"]
        assert 'name="skip_unreviewed_generated"' in page.content.decode()


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"tags": "nobody-has-this"}, "tags", "the subset (tags nobody-has-this) selects no golden entry"),
        ({"origin": "Imported"}, "origin", "the subset (origin Imported) selects no golden entry"),
        ({"origin": "Robot"}, "origin", "Select a valid choice. Robot is not one of the available choices."),
    ],
)
def test_a_launch_whose_subset_selects_nothing_is_refused_on_its_field(alice, golden, fields, field, message):
    response = alice.post(reverse("dashboard:launch"), launch_data([{"enabled": True}], ks="1", **fields))
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert any(message.lower() in e.lower() for e in errors[field]), errors
    assert not Job.objects.exists() and not EvaluationRun.objects.exists()


def test_the_answer_launcher_restricts_to_reviewed_entries(
    alice, world, golden, django_capture_on_commit_callbacks
):
    GoldenEntry.objects.filter(key="q-refund").update(reviewed=True)
    data = answer_launch_data([{"enabled": True, "label": "reviewed"}], reviewed_only="on")
    with django_capture_on_commit_callbacks(execute=True):
        assert alice.post(reverse("dashboard:launch-answers"), data).status_code == 302
    run = EvaluationRun.objects.get()
    assert run.config["subset"]["reviewed_only"] is True
    assert list(run.results.values_list("entry_key", flat=True)) == ["q-refund"]
