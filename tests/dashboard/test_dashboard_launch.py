"""The run launcher: a POST creates an Evaluate job (the API's input shape), whose progress page and JSON
follow it to Completed and then to the comparison of the new batch."""

from __future__ import annotations

from django.urls import reverse

from evalsite.jobs.models import Job, JobStatus
from evaluation.models import EvaluationJobKind, EvaluationRun
from tests.dashboard import conftest


def launch_data(configs: list[dict], collections=("handbook",), ks="1,3") -> dict:
    return conftest.launch_data(configs, collections, ks=ks)


def test_the_launcher_offers_the_configurations(alice, world, golden):
    page = alice.get(reverse("dashboard:launch"))
    assert page.status_code == 200
    formset = page.context["formset"]
    assert [f.initial["label"] for f in formset.forms][:2] == ["fulltext", "fulltext okapi"]
    assert dict(formset.forms[0].fields["rerank"].choices) == {"": "none", "proximity": "proximity"}
    assert "handbook (3 questions with expected documents)" in str(page.context["form"]["collections"])


def test_launching_creates_a_job_that_runs_to_completed(
    alice, world, golden, django_capture_on_commit_callbacks
):
    data = launch_data(
        [
            {"enabled": True, "label": "bm25"},
            {"enabled": True, "label": "hybrid + rerank", "search_type": "Hybrid", "rerank": "proximity"},
            {"enabled": False, "label": "not run", "search_type": "Vector"},
        ]
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = alice.post(reverse("dashboard:launch"), data)
    job = Job.objects.get(parent=None)  # its two configurations ran as two child jobs
    assert response.status_code == 302
    assert response["Location"] == reverse("dashboard:job", args=[job.pk])
    assert (
        job.kind == EvaluationJobKind.EVALUATE
        and job.tenant == world.tenant
        and job.collection == world.collection
    )
    # The API's job input, so the Evaluate job (evaluation.reports.batch_jobs) runs both alike.
    assert job.input["collection_pks"] == [world.collection.pk]
    assert job.input["ks"] == [1, 3]
    assert [c["label"] for c in job.input["configs"]] == ["bm25", "hybrid + rerank"]
    assert job.input["configs"][1]["rerank"] == "proximity"
    job.refresh_from_db()
    assert job.status == JobStatus.COMPLETED  # django-q2 sync mode ran it at commit
    progress = alice.get(reverse("dashboard:job-progress", args=[job.pk])).json()
    batch_id = job.result["batch_id"]
    assert progress == {
        "count_text": f"{job.progress_total} of {job.progress_total} question searches",
        "job_id": str(job.pk),
        "kind": "Evaluate",
        "status": "Completed",
        "done": job.progress_total,
        "total": job.progress_total,
        "progress": 1.0,
        "finished": True,
        "error": None,
        "result_url": reverse("dashboard:compare") + f"?batch={batch_id}",
    }
    runs = EvaluationRun.objects.filter(batch_id=batch_id)
    assert sorted(runs.values_list("label", flat=True)) == ["bm25", "hybrid + rerank"]
    assert set(runs.values_list("job", flat=True)) == {job.pk}
    # The progress page of a finished job opens the results; with ?stay=1 it shows the finished bar.
    page = alice.get(reverse("dashboard:job", args=[job.pk]))
    assert page.status_code == 302 and page["Location"] == progress["result_url"]
    stay = alice.get(reverse("dashboard:job", args=[job.pk]) + "?stay=1")
    assert stay.status_code == 200 and b"<progress" in stay.content
    assert alice.get(progress["result_url"]).status_code == 200


def test_a_launch_of_one_configuration_opens_its_run_not_a_comparison_of_one(
    alice, world, golden, django_capture_on_commit_callbacks
):
    """Compare needs two runs (one answers 400): the result of a one-run batch is that run's page."""
    with django_capture_on_commit_callbacks(execute=True):
        alice.post(reverse("dashboard:launch"), launch_data([{"enabled": True, "label": "bm25"}]))
    job = Job.objects.get()
    job.refresh_from_db()
    assert job.status == JobStatus.COMPLETED
    run = EvaluationRun.objects.get(job=job)
    progress = alice.get(reverse("dashboard:job-progress", args=[job.pk])).json()
    assert progress["result_url"] == reverse("dashboard:run", args=[run.pk])
    page = alice.get(reverse("dashboard:job", args=[job.pk]))
    assert page.status_code == 302 and page["Location"] == progress["result_url"]
    assert alice.get(progress["result_url"]).status_code == 200


def test_a_queued_job_shows_a_progress_bar_that_polls(alice, world):
    job = Job.objects.create(
        tenant=world.tenant, kind=EvaluationJobKind.EVALUATE, progress_done=3, progress_total=12
    )
    Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING)
    page = alice.get(reverse("dashboard:job", args=[job.pk]))
    assert page.status_code == 200
    assert b'data-progress-url="' + reverse("dashboard:job-progress", args=[job.pk]).encode() in page.content
    assert b'data-poll-ms="500"' in page.content
    state = alice.get(reverse("dashboard:job-progress", args=[job.pk])).json()
    assert (state["status"], state["done"], state["total"], state["progress"]) == ("Running", 3, 12, 0.25)
    assert state["result_url"] is None and not state["finished"]


def test_a_failed_job_shows_its_error(alice, world):
    job = Job.objects.create(
        tenant=world.tenant,
        kind=EvaluationJobKind.EVALUATE,
        status=JobStatus.FAILED,
        error={
            "code": "empty-golden-set",
            "message": "No golden entries with expected documents in handbook.",
            "details": {},
        },
    )
    state = alice.get(reverse("dashboard:job-progress", args=[job.pk])).json()
    assert state["status"] == "Failed" and state["finished"]
    assert state["error"] == "No golden entries with expected documents in handbook."
    page = alice.get(reverse("dashboard:job", args=[job.pk]))
    assert b"No golden entries with expected documents in handbook." in page.content


def test_a_job_can_be_cancelled(alice, world):
    job = Job.objects.create(tenant=world.tenant, kind=EvaluationJobKind.EVALUATE)
    response = alice.post(reverse("dashboard:job-cancel", args=[job.pk]))
    assert response.status_code == 302
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED


def test_configuration_errors_are_shown_on_their_row(alice, world, golden):
    data = launch_data(
        [{"enabled": True, "label": "same"}, {"enabled": True, "label": "same", "search_type": "Vector"}]
    )
    page = alice.post(reverse("dashboard:launch"), data)
    assert page.status_code == 400
    assert "repeats configs[0]" in str(page.context["formset"].forms[1].errors["label"])
    assert not Job.objects.exists()


def test_bad_ks_and_no_configuration_are_form_errors(alice, world, golden):
    bad_ks = alice.post(reverse("dashboard:launch"), launch_data([{"enabled": True}], ks="0,x"))
    assert bad_ks.status_code == 400 and "ks" in bad_ks.context["form"].errors
    none = alice.post(reverse("dashboard:launch"), launch_data([{"enabled": False}]))
    assert none.status_code == 400 and "at least one configuration" in str(
        none.context["form"].non_field_errors()
    )
    assert not Job.objects.exists()


def test_an_empty_golden_set_cannot_be_launched(alice, world):
    page = alice.post(reverse("dashboard:launch"), launch_data([{"enabled": True}]))
    assert page.status_code == 400
    assert "no golden entries" in str(page.context["form"].errors["collections"])
    assert not Job.objects.exists()


def test_another_tenants_collection_cannot_be_chosen(alice, world, golden):
    page = alice.post(reverse("dashboard:launch"), launch_data([{"enabled": True}], collections=("nope",)))
    assert page.status_code == 400 and "collections" in page.context["form"].errors
    assert not Job.objects.exists()


def test_the_job_page_says_what_its_status_says(alice, world):
    """A running job that has not counted its work is starting, never "waiting to start"; the page and its poll
    say the same words, for every status."""
    from django.utils import timezone

    from tests.dashboard.conftest import text_of

    expected = {
        JobStatus.QUEUED: ({}, "Waiting for a worker to start it."),
        JobStatus.RUNNING: ({"heartbeat_at": timezone.now()}, "Started: counting the work."),
        "counted": ({"status": JobStatus.RUNNING, "progress_done": 3, "progress_total": 12,
                     "heartbeat_at": timezone.now()}, "3 of 12 question searches"),
        JobStatus.CANCELLED: ({}, "The job was cancelled."),
    }  # fmt: skip
    for status, (fields, words) in expected.items():
        job = Job.objects.create(tenant=world.tenant, kind=EvaluationJobKind.EVALUATE)
        Job.objects.filter(pk=job.pk).update(**{"status": status, **fields})
        page = text_of(alice.get(reverse("dashboard:job", args=[job.pk])))
        state = alice.get(reverse("dashboard:job-progress", args=[job.pk])).json()
        assert state["count_text"] == words, status
        assert f"Status: {state['status']}" in page and words in page, (status, page[200:600])
        assert "waiting" not in page.lower() or state["status"] == JobStatus.QUEUED, page
