"""The launcher's presets: a row may evaluate one of the tenant's saved presets (a study's winner), chosen from a
select listing the tenant's retrieval presets only; another tenant's, or an unknown name, is refused on the row's
field, and a study's "Launch it" opens the launcher with its preset preselected."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evalsite.jobs.models import Job
from evaluation.models import ConfigPreset, EvaluationRun
from tests.dashboard import conftest
from tests.dashboard.conftest import text_of
from tests.dashboard.study_support import finished_study

TUNED = {"search_type": "FullText", "bm25_variant": "okapi", "bm25_k1": 1.6, "bm25_b": 0.4}
ANSWER = {"search_type": "FullText", "top_k": 5, "model": "extractive", "groundedness": "Off"}


@pytest.fixture
def presets(world) -> dict[str, ConfigPreset]:
    return {
        "tuned": ConfigPreset.objects.create(tenant=world.tenant, name="tuned bm25", config=TUNED),
        "answer": ConfigPreset.objects.create(tenant=world.tenant, name="answer winner", config=ANSWER),
        "rival": ConfigPreset.objects.create(tenant=world.other_tenant, name="rival secret", config=TUNED),
    }


def _data(rows: list[dict]) -> dict:
    return conftest.launch_data(rows, ("handbook",), ks="1,3")


def test_the_rows_list_the_tenants_retrieval_presets_only(alice, world, golden, presets):
    page = alice.get(reverse("dashboard:launch"))
    assert page.status_code == 200
    choices = dict(page.context["formset"].forms[0].fields["preset"].choices)
    assert choices == {"": "by hand", "tuned bm25": "tuned bm25"}  # no answer preset, no other tenant's
    assert "<th>preset</th>" in page.content.decode()
    assert "rival secret" not in page.content.decode()
    # The answer launcher has no preset field (its rows are answer configurations).
    answers = alice.get(reverse("dashboard:launch-answers"))
    assert "preset" not in answers.context["formset"].forms[0].fields


def test_a_row_with_a_preset_evaluates_the_presets_configuration(
    alice, world, golden, presets, django_capture_on_commit_callbacks
):
    data = _data(
        [{"enabled": True, "preset": "tuned bm25", "label": ""}, {"enabled": True, "label": "plain"}]
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = alice.post(reverse("dashboard:launch"), data)
    assert response.status_code == 302, response.context and response.context["formset"].errors
    job = Job.objects.get(parent=None)  # its two configurations ran as two child jobs
    stored = job.input["configs"][0]
    assert stored["label"] == "tuned bm25"  # the row's own settings (FullText lucene) are not used
    assert {key: stored[key] for key in TUNED} == TUNED
    assert job.input["configs"][1]["label"] == "plain"
    run = EvaluationRun.objects.get(job=job, label="tuned bm25")
    assert {key: run.config[key] for key in TUNED} == TUNED


def test_a_rows_label_renames_its_preset(alice, world, golden, presets):
    data = _data([{"enabled": True, "preset": "tuned bm25", "label": "tuned, again"}])
    assert alice.post(reverse("dashboard:launch"), data).status_code == 302
    assert Job.objects.get().input["configs"][0]["label"] == "tuned, again"


@pytest.mark.parametrize("name", ["rival secret", "no such preset", "answer winner"])
def test_another_tenants_or_an_unknown_preset_is_refused_on_the_field(alice, world, golden, presets, name):
    page = alice.post(reverse("dashboard:launch"), _data([{"enabled": True, "preset": name}]))
    assert page.status_code == 400
    errors = page.context["formset"].forms[0].errors
    assert "No preset named" in str(errors["preset"]) and name in str(errors["preset"])
    assert 'data-field-error="preset"' in page.content.decode()
    assert not Job.objects.exists()


def test_a_preset_in_the_url_is_preselected_alone_and_another_tenants_is_not_found(
    alice, world, golden, presets
):
    page = alice.get(reverse("dashboard:launch") + "?preset=tuned+bm25")
    assert page.status_code == 200
    rows = page.context["formset"].forms
    assert rows[0].initial == {"enabled": True, "preset": "tuned bm25", "label": ""}
    assert not any(f.initial.get("enabled") for f in rows[1:])
    assert 'value="tuned bm25" selected' in page.content.decode()
    for name in ("rival+secret", "nope", "answer+winner"):
        assert alice.get(reverse("dashboard:launch") + f"?preset={name}").status_code == 404


def test_the_study_page_links_a_saved_retrieval_preset_to_the_launcher(alice, world, batch):
    study = finished_study(world.tenant, world.collection, batch.runs[0], batch.runs[2])
    assert (
        alice.post(
            reverse("dashboard:study-save", args=[study.pk]),
            {"name": "tuned bm25", "accept_not_better": "on"},
        ).status_code
        == 302
    )
    page = alice.get(reverse("dashboard:study", args=[study.pk]))
    link = reverse("dashboard:launch") + "?preset=tuned%20bm25"
    assert f'href="{link}"' in page.content.decode() and "Launch it" in text_of(page)
    launcher = alice.get(link)
    assert (
        launcher.status_code == 200 and launcher.context["formset"].forms[0].initial["preset"] == "tuned bm25"
    )


def test_a_tenant_without_presets_sees_no_preset_column(alice, world, golden):
    ConfigPreset.objects.create(tenant=world.other_tenant, name="rival secret", config=TUNED)
    page = alice.get(reverse("dashboard:launch"))
    assert page.status_code == 200 and "<th>preset</th>" not in page.content.decode()
    assert 'name="configs-0-preset"' not in page.content.decode()
