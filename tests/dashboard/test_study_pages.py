"""Studies on the dashboard: the form starts one as the API does (its errors on the field they name), the study's
page and its poll follow it, its cancel and its preset form work, Compare and the collection lead to it, and
another tenant's study, run or poll is a 404."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from evalsite.jobs.models import Job, JobStatus
from evaluation.dashboard import study_reads
from evaluation.dashboard.study_forms import StudyForm, starter_space
from evaluation.models import ConfigPreset, EvaluationJobKind, EvaluationRun, Study
from evaluation.retrieval.read_path import available_rerankers
from evaluation.studies import reads
from evaluation.studies.reads import milestone
from goldenset.services import EntryInput
from tests.dashboard.conftest import text_of
from tests.dashboard.study_support import finished_study
from tests.support import add_entries

QUESTIONS = {
    "refunds": ["How long is the refund window?", "Where do refunds go?", "Can I get my money back?",
                "What is the refund policy after purchase?"],
    "shipping": ["When do orders ship?", "How fast is express shipping?", "How many business days to ship?"],
    "warranty": ["How long is the warranty?", "What does the warranty cover?", "Are defects covered?"],
}  # fmt: skip
FORM = {
    "collection": "handbook", "search_type": "FullText", "fusion": "Rrf", "rerank": "", "bm25_variant": "lucene",
    "low_bm25_k1": "0.5", "high_bm25_k1": "2.5", "step_bm25_k1": "0.5", "vary_bm25_b": "0.3, 0.75",
    "metric": "ndcg@10", "trials": "4", "seed": "1", "confirm_share": "0.5", "sampler": "random",
}  # fmt: skip


@pytest.fixture
def golden_ten(world):
    return add_entries(
        world.collection,
        *(EntryInput(question=q, expected_document_ids=[doc]) for doc, qs in QUESTIONS.items() for q in qs),
    )


@pytest.fixture
def study(world, batch):
    return finished_study(world.tenant, world.collection, batch.runs[0], batch.runs[2])


def test_a_study_started_from_the_form_runs_and_its_page_shows_the_result(
    alice, world, golden_ten, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = alice.post(reverse("dashboard:study-new"), FORM)
    study = Study.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("dashboard:study", args=[study.pk])
    assert study.request["space"] == {
        "bm25_k1": {"low": 0.5, "high": 2.5, "step": 0.5},
        "bm25_b": [0.3, 0.75],
    }
    assert (
        study.request["budget"] == {"trials": 4, "seconds": None, "judge_calls": None}
        and study.request["prune"] is False
    )
    assert study_reads.count_text(study) == "4 of at most 4 trials"
    assert study.job.kind == EvaluationJobKind.STUDY and study.job.status == JobStatus.COMPLETED
    assert study.created_by == "user:alice"
    page = alice.get(response["Location"])
    text = text_of(page)
    assert page.status_code == 200 and "Status: Completed" in text
    assert study.confirmation["verdict"] in text
    for side in ("baseline", "winner"):
        run_id = study.confirmation[side]["run_id"]
        assert reverse("dashboard:run", args=[run_id]) in page.content.decode()
    assert "Compare the two runs" in text and 'id="study-history"' in page.content.decode()
    assert page.content.decode().count('class="best-trial"') == 1
    # The job's page is the study's.
    job_page = alice.get(reverse("dashboard:job", args=[study.job.pk]))
    assert job_page.status_code == 302 and job_page["Location"] == reverse("dashboard:study", args=[study.pk])


def _post_error(client, **fields):
    response = client.post(reverse("dashboard:study-new"), {**FORM, **fields})
    assert response.status_code == 400, response.status_code
    return response.context["form"].errors


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"low_bm25_k1": "3", "high_bm25_k1": "1"}, "vary_bm25_k1", "Low (3) must be below high (1)."),
        ({"high_bm25_k1": "12"}, "vary_bm25_k1", "High 12 is outside 0 to 10."),
        ({"vary_top_k": "10, 20", "low_top_k": "5"}, "vary_top_k", "Give a list of values or a range"),
        ({"vary_top_k": "10, ten"}, "vary_top_k", "“ten” is not a number."),
        ({"vary_rrf_k": "0, 60"}, "vary_rrf_k", "A choice 0 is outside 1 to 10000."),
        ({"low_rrf_k": "20"}, "high_rrf_k", "A range needs low and high."),
        ({"metric": "precision@5"}, "metric", "Expected ndcg@K, recall@K"),
        ({"confirm_share": "0.99"}, "confirm_share", "Expected a share from 0.05 to 0.95."),
        ({"sampler": "grid", "prune": "on"}, "prune", "A grid tries every point on every question."),
        ({"trials": "0"}, "trials", "greater than or equal to 1"),
        ({"collection": "faq"}, "collection", "Select a valid choice"),
        (
            {"vary_fulltext_weight": "0.3, 0.7"},
            "vary_fulltext_weight",
            "Has no effect in any trial: it matters only when search_type is Hybrid and fusion is Weighted",
        ),
    ],
)
def test_a_bad_study_names_the_offending_field_and_starts_nothing(alice, golden_ten, fields, field, message):
    errors = _post_error(alice, **fields)
    assert any(message in e for e in errors.get(field, [])), errors
    assert not Study.objects.exists() and not Job.objects.filter(kind=EvaluationJobKind.STUDY).exists()


def _form(**fields) -> StudyForm:
    form = StudyForm(
        {**FORM, **fields}, collections=[("handbook", "handbook")], rerankers=available_rerankers()
    )
    assert form.is_valid(), form.errors
    return form


def test_an_answer_configurations_fields_show_and_count_only_with_an_answer_metric(alice, golden_ten):
    """groundedness and model are an answer configuration's: with a retrieval metric their rows are hidden and
    what they hold is not sent; with an answer metric they show, and model takes a list of names."""
    page = alice.get(reverse("dashboard:study-new")).content.decode()
    for name in ("groundedness", "model"):
        assert f'<tr id="space-{name}" data-answer-only hidden>' in page
    assert '<tr id="space-bm25_k1">' in page
    assert 'data-answer-metrics="faithfulness,context_recall,answer_relevancy' in page
    assert '<datalist id="study-metrics"><option value="ndcg@10"><option value="recall@10">' in page

    hidden = {"vary_groundedness": ["Off", "High"], "vary_model": "small, large"}
    assert "groundedness" not in _form(**hidden).study_request()["space"]
    response = alice.post(reverse("dashboard:study-new"), {**FORM, **hidden})
    assert response.status_code == 302, response.context["form"].errors  # the hidden rows were not sent
    assert set(Study.objects.get().request["space"]) == {"bm25_k1", "bm25_b"}

    answers = _form(metric="faithfulness", **hidden)
    assert answers.answers() and answers.study_request()["space"]["model"] == ["small", "large"]
    assert answers.study_request()["space"]["groundedness"] == ["Off", "High"]
    shown = alice.post(
        reverse("dashboard:study-new"), {**FORM, **hidden, "metric": "faithfulness", "trials": "0"}
    )
    assert shown.status_code == 400 and '<tr id="space-model" data-answer-only>' in shown.content.decode()


@pytest.mark.parametrize("search_type", ["FullText", "Vector", "Hybrid"])
def test_the_form_opens_with_a_space_every_field_of_which_has_an_effect(alice, golden_ten, search_type):
    starter = {k: v for k, v in FORM.items() if not k.startswith(("low_", "high_", "step_", "vary_"))}
    starter.update(search_type=search_type, **starter_space(search_type))
    response = alice.post(reverse("dashboard:study-new"), starter)
    assert response.status_code == 302, response.context["form"].errors
    notes = [
        n["field"] for n in reads.space_notes(Study.objects.get(), reads.dimensions_of(Study.objects.get()))
    ]
    assert notes == (["space.fulltext_weight"] if search_type == "Hybrid" else [])


def test_nothing_varied_or_a_golden_set_too_small_is_said_on_the_form(alice, world, golden):
    blank = {k: v for k, v in FORM.items() if not k.startswith(("low_", "high_", "step_", "vary_"))}
    errors = _post_error(alice, **{k: "" for k in FORM if k not in blank})
    assert errors["__all__"] == ["Vary at least one field: tick its choices, or give its values or a range."]
    errors = _post_error(alice)  # three questions cannot be split in two parts of two
    assert errors["confirm_share"] == [
        "The golden set cannot be split for a study: 3 questions split 50% / 50% leave a part with fewer than 2."
    ]
    page = alice.post(reverse("dashboard:study-new"), {**FORM, "low_bm25_k1": "9", "high_bm25_k1": "1"})
    assert 'data-field-error="space.bm25_k1"' in page.content.decode()  # shown on the field's row


def test_the_poll_gives_the_state_trials_figures_and_rows(alice, study):
    state = alice.get(reverse("dashboard:study-progress", args=[study.pk])).json()
    assert state["status"] == "Completed" and state["finished"] and state["progress"] == 1.0
    assert state["trials"] == 60 and state["count_text"].startswith(
        "60 of at most 60 trials, 12 pruned, 1 failed"
    )
    assert state["study"]["best"] == study.best and len(state["study"]["trials"]) == 60
    figures = state["figures"]
    assert set(figures) == {"history", "parallel", "heatmap", "importance"}
    assert all("template" not in f["layout"] for f in figures.values())  # the page's charts keep theirs
    history = {t["name"]: t for t in figures["history"]["data"]}
    assert len(history["complete trial"]["x"]) == 47 and len(history["pruned trial"]["x"]) == 12
    assert history["best so far"]["y"][-1] == study.best["tuning_value"]
    assert len(figures["parallel"]["data"][0]["dimensions"]) == 4  # three fields and the value
    assert list(figures["importance"]["data"][0]["y"])[-1] == "bm25_k1"  # the field that matters on top
    assert state["rows_html"].count("<tr") == 60
    chosen = alice.get(
        reverse("dashboard:study-progress", args=[study.pk]) + "?x=bm25_variant&y=bm25_b"
    ).json()
    assert chosen["figures"]["heatmap"]["layout"]["xaxis"]["title"]["text"] == "bm25_variant"


def test_the_page_draws_every_chart_and_orders_the_trials(alice, study):
    page = alice.get(reverse("dashboard:study", args=[study.pk]))
    html = page.content.decode()
    for name in ("history", "parallel", "heatmap", "importance"):
        assert f'id="study-{name}"' in html
    assert "/static/plotly/plotly.min.js" in html and "cdn" not in html.lower()
    numbers = [row["number"] for row in page.context["rows"]]
    assert numbers == sorted(numbers)
    assert 'name="x"' in html  # three fields varied: the heatmap's axes are picked
    assert page.context["axes"] == ("bm25_k1", "bm25_b")  # the two most important
    assert "From 47 trials scored on every tuning question (the best 5 of them against all)." in text_of(page)


def test_the_page_says_when_importance_is_withheld_and_which_fields_matter_in_some_trials_only(alice, study):
    """12 complete trials: no importance chart, and the page says why (the API's note); fusion varied between
    Rrf and Weighted under Hybrid: fulltext_weight is said to matter in the Weighted trials only."""
    request = {
        **study.request, "base": {**study.request["base"], "search_type": "Hybrid"},
        "space": {"fusion": ["Rrf", "Weighted"], "fulltext_weight": {"low": 0.1, "high": 0.9}},
    }  # fmt: skip
    trials = [
        {
            **t,
            "values": {
                "fusion": ["Rrf", "Weighted"][t["number"] % 2],
                "fulltext_weight": t["values"]["bm25_b"],
            },
        }
        for t in study.trials[:16]
    ]  # 12 of them complete
    Study.objects.filter(pk=study.pk).update(
        request=request, trials=trials, best={**study.best, "values": trials[0]["values"]}
    )
    page = alice.get(reverse("dashboard:study", args=[study.pk]))
    html, text = page.content.decode(), text_of(page)
    assert 'id="study-importance"' not in html
    assert (
        "Importance is withheld below 41 trials scored on every tuning question (12 so far): it compares the "
        "best tenth of them with all, and with fewer than 5 in that tenth which field it names is largely chance."
    ) in text
    assert 'data-space-note="space.fulltext_weight"' in html
    assert "fulltext_weight has an effect only when search_type is Hybrid and fusion is Weighted" in text
    poll = alice.get(reverse("dashboard:study-progress", args=[study.pk])).json()
    assert poll["figures"]["importance"] is None and poll["importance_note"].startswith(
        "Importance is withheld"
    )


def test_a_winner_not_shown_better_is_saved_only_past_a_warning(alice, world, study):
    """The fixture's verdict is "Not shown better": the page says what saving it risks, and the save asks for the
    box to be ticked; a winner shown better is saved without either."""
    assert not study.confirmation["significant"]
    url = reverse("dashboard:study-save", args=[study.pk])
    page = alice.get(reverse("dashboard:study", args=[study.pk]))
    html = page.content.decode()
    assert "data-save-warning" in html and 'name="accept_not_better"' in html
    assert "The winner was not shown better than the baseline on the held-out questions (p = " in text_of(
        page
    )
    refused = alice.post(url, {"name": "tuned bm25"})
    assert refused.status_code == 409 and not ConfigPreset.objects.exists()
    assert 'data-field-error="accept_not_better"' in refused.content.decode()
    assert "Tick this to save a winner that was not shown better." in text_of(refused)
    assert alice.post(url, {"name": "tuned bm25", "accept_not_better": "on"}).status_code == 302
    assert ConfigPreset.objects.get(name="tuned bm25").study == study

    Study.objects.filter(pk=study.pk).update(confirmation={**study.confirmation, "significant": True})
    page = alice.get(reverse("dashboard:study", args=[study.pk])).content.decode()
    assert "data-save-warning" not in page and 'name="accept_not_better"' not in page
    assert alice.post(url, {"name": "shown better"}).status_code == 302


def test_the_winner_saved_as_a_preset_and_a_name_in_use_said_on_the_field(alice, study):
    Study.objects.filter(pk=study.pk).update(confirmation={**study.confirmation, "significant": True})
    url = reverse("dashboard:study-save", args=[study.pk])
    saved = alice.post(url, {"name": "tuned bm25"})
    assert saved.status_code == 302
    preset = ConfigPreset.objects.get(name="tuned bm25")
    assert preset.study == study and preset.config["bm25_k1"] == study.best["values"]["bm25_k1"]
    again = alice.post(url, {"name": "tuned bm25"})
    assert again.status_code == 409
    assert 'data-field-error="name"' in again.content.decode()
    assert "A preset named 'tuned bm25' exists already." in text_of(again)
    assert alice.post(url, {"name": "  "}).status_code == 400
    assert "Saved as: tuned bm25" in text_of(alice.get(reverse("dashboard:study", args=[study.pk])))


def test_a_grid_counts_its_points_when_fewer_than_the_budget(alice, world, study):
    Study.objects.filter(pk=study.pk).update(
        request={**study.request, "sampler": "grid", "prune": False, "space": {"bm25_b": [0.3, 0.5, 0.7]}}
    )
    study.refresh_from_db()
    assert study_reads.trials_asked(study) == 3


def test_a_running_studys_importance_is_recomputed_at_milestones_only(alice, world, study):
    counts = (0, 12, 40, 41, 61, 62, 92, 93, 100, 139, 140)
    assert [milestone(n) for n in counts] == [0, 12, 40, 41, 41, 62, 62, 93, 93, 93, 140]
    job = Job.objects.create(tenant=world.tenant, collection=world.collection, kind=EvaluationJobKind.STUDY,
                             input={"study_id": str(study.pk)}, status=JobStatus.RUNNING)  # fmt: skip
    Study.objects.filter(pk=study.pk).update(
        job=job, best=None, confirmation=None, finished_at=None, trials=study.trials[:55]
    )  # 43 complete trials so far
    running = alice.get(reverse("dashboard:study-progress", args=[study.pk])).json()
    title = running["figures"]["importance"]["title"]
    assert "over 41 complete trials" in title  # the last milestone passed
    assert running["study"]["importance"]["trials"] == 41 and running["study"]["importance"]["complete"] == 43
    Job.objects.filter(pk=job.pk).update(status=JobStatus.COMPLETED)
    done = alice.get(reverse("dashboard:study-progress", args=[study.pk])).json()
    assert "over 43 complete trials" in done["figures"]["importance"]["title"]


def test_cancel_stops_a_running_study(alice, world, study):
    job = Job.objects.create(tenant=world.tenant, collection=world.collection, kind=EvaluationJobKind.STUDY,
                             input={"study_id": str(study.pk)}, status=JobStatus.RUNNING)  # fmt: skip
    Study.objects.filter(pk=study.pk).update(job=job, best=None, confirmation=None, finished_at=None)
    page = alice.get(reverse("dashboard:study", args=[study.pk]))
    assert b"data-study-cancel" in page.content and page.context["state"]["finished"] is False
    response = alice.post(reverse("dashboard:study-cancel", args=[study.pk]), follow=True)
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED
    assert "The study was cancelled" in text_of(response) and b"data-study-cancel" not in response.content


def test_another_tenants_study_run_and_poll_are_not_found(alice, world, study, outsider):
    rob = Client()
    rob.force_login(outsider)
    for url in (reverse("dashboard:study", args=[study.pk]), reverse("dashboard:study-new") + f"?run={study.confirmation['winner']['run_id']}"):  # fmt: skip
        assert rob.get(url).status_code == 404
    poll = rob.get(reverse("dashboard:study-progress", args=[study.pk]))
    assert poll.status_code == 404 and poll.json()["error"]["code"] == "not-found"
    assert rob.post(reverse("dashboard:study-cancel", args=[study.pk])).status_code == 404
    assert rob.post(reverse("dashboard:study-save", args=[study.pk]), {"name": "mine"}).status_code == 404
    assert not ConfigPreset.objects.exists()
    assert str(study.pk)[:8] not in rob.get(reverse("dashboard:studies")).content.decode()
    assert rob.get(reverse("dashboard:studies") + "?collection=nowhere").status_code == 404
    assert alice.get(reverse("dashboard:study", args=["not-a-uuid"])).status_code == 404


def test_compare_offers_to_tune_a_run_and_the_form_opens_with_its_configuration(alice, world, batch):
    compare = alice.get(reverse("dashboard:compare") + f"?batch={batch.batch_id}").content.decode()
    hybrid = next(run for run in batch.runs if run.label == "hybrid")
    assert compare.count("Tune this configuration") == 3
    assert f"{reverse('dashboard:study-new')}?run={hybrid.pk}" in compare
    page = alice.get(reverse("dashboard:study-new") + f"?run={hybrid.pk}")
    form = page.context["form"]
    assert form.initial["collection"] == "handbook"
    assert (form.initial["search_type"], form.initial["fusion"]) == ("Hybrid", "Rrf")
    assert form.initial["vary_fusion"] == [
        "Rrf",
        "Weighted",
    ]  # a first space for Hybrid: its fusion and weight
    assert "Tuning the configuration of run" in text_of(page)


def test_the_studies_list_is_newest_first_and_the_collection_leads_to_it(alice, world, batch, study):
    newer = finished_study(world.tenant, world.collection, batch.runs[1], batch.runs[0])
    Study.objects.filter(pk=newer.pk).update(confirmation={**newer.confirmation, "significant": True})
    page = alice.get(reverse("dashboard:studies") + "?collection=handbook")
    assert [row["study"].pk for row in page.context["rows"]] == [newer.pk, study.pk]
    assert [row["verdict"] for row in page.context["rows"]] == ["better", "not shown better"]
    collection = alice.get(reverse("dashboard:collection", args=["handbook"])).content.decode()
    assert f"{reverse('dashboard:studies')}?collection=handbook" in collection
    assert f"{reverse('dashboard:study-new')}?collection=handbook" in collection
    assert EvaluationRun.objects.filter(pk=study.confirmation["winner"]["run_id"]).exists()
