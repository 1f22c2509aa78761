"""Launching an answer evaluation from the dashboard: the launcher's configurations and errors, the run, and a
finished job opening its comparison."""

from __future__ import annotations

from django.urls import reverse

from evalsite.jobs.models import Job, JobStatus
from evaluation.models import EvaluationJobKind, EvaluationRun
from goldenset.models import GoldenEntry
from tests.dashboard.conftest import answer_launch_data, question_url, run_url

# --- launching an answer evaluation ------------------------------------------------------------------------


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
    assert job.kind == EvaluationJobKind.EVALUATE_ANSWERS and job.tenant == world.tenant
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


# --- the job -----------------------------------------------------------------------------------------------


def test_a_finished_answer_evaluation_job_opens_its_comparison(alice, world, answer_batch):
    job = Job.objects.create(
        tenant=world.tenant,
        kind=EvaluationJobKind.EVALUATE_ANSWERS,
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
        tenant=world.tenant, kind=EvaluationJobKind.EVALUATE_ANSWERS, collection=world.collection
    )
    page = alice.get(reverse("dashboard:job", args=[running.pk]))
    assert b"Answer evaluation of handbook" in page.content
