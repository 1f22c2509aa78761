"""The schedules and alerts pages as each role uses them: a viewer reads, an evaluator runs a schedule now, a
curator acknowledges an alert, a rater may not; another tenant's are not found."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from evaluation.models import Alert, Schedule, ScheduleRun
from tests.support import handbook_entries, member_of


def _person(world, name: str, role: str) -> Client:
    client = Client()
    client.force_login(member_of(world.tenant, name, role=role))
    return client


@pytest.fixture
def alert(world) -> Alert:
    handbook_entries(world.collection)
    schedule = Schedule.objects.create(
        tenant=world.tenant, collection=world.collection, name="nightly", configs=[{"label": "bm25"}], ks=[3],
        every_minutes=60, gate={"metric": "mrr", "min": 0.99}, next_run_at=timezone.now(),
    )  # fmt: skip
    tick = ScheduleRun.objects.create(schedule=schedule, tick_at=timezone.now(), passed=False)
    return Alert.objects.create(tenant=world.tenant, collection=world.collection, schedule=schedule, fired_by=tick,
                                reasons=[{"reason": "below-min", "message": "mrr 0.5 is below the minimum 0.99"}])  # fmt: skip


def test_a_viewer_reads_schedules_and_alerts(world, alert):
    viewer = _person(world, "vic", "viewer")
    page = viewer.get("/schedules/")
    assert page.status_code == 200 and b"nightly" in page.content and b"every 60 minutes" in page.content
    assert b"Run now" not in page.content
    alerts = viewer.get("/alerts/", {"state": "firing"})
    assert b"mrr 0.5 is below the minimum 0.99" in alerts.content and b"Acknowledge" not in alerts.content
    assert viewer.post(f"/alerts/{alert.pk}/acknowledge/").status_code == 403


def test_a_curator_acknowledges_and_an_evaluator_s_run_now_resolves_it(
    world, alert, django_capture_on_commit_callbacks
):
    curator = _person(world, "cora", "curator")
    assert b"Acknowledge" in curator.get("/alerts/").content
    done = curator.post(f"/alerts/{alert.pk}/acknowledge/", {"next": "/alerts/?state=firing"})
    assert done.status_code == 302 and done["Location"] == "/alerts/?state=firing"
    alert.refresh_from_db()
    assert alert.acknowledged_by == "user:cora"
    with django_capture_on_commit_callbacks(execute=True):  # every question is answered first: mrr 1.0 passes
        ran = _person(world, "eve", "evaluator").post(f"/schedules/{alert.schedule_id}/run/")
    assert ran.status_code == 302 and "/jobs/" in ran["Location"]
    assert ScheduleRun.objects.get(manual=True).passed is True
    alert.refresh_from_db()
    assert alert.state == "resolved" and b"resolved" in curator.get("/alerts/").content


def test_another_tenant_s_schedules_and_alerts_are_not_found(world, alert):
    stranger = Client()
    stranger.force_login(member_of(world.other_tenant, "rob"))
    assert b"nightly" not in stranger.get("/schedules/").content
    assert stranger.get("/alerts/").context["alerts"] == []
    assert stranger.post(f"/alerts/{alert.pk}/acknowledge/").status_code == 404
    assert stranger.post(f"/schedules/{alert.schedule_id}/run/").status_code == 404


def test_an_evaluator_creates_a_schedule_from_the_form_and_a_bad_field_is_named_on_it(world):
    handbook_entries(world.collection)
    evaluator = _person(world, "eve", "evaluator")
    form = {"collection": "handbook", "name": "nightly", "configs": '[{"label": "bm25"}]', "cron": "0 3 * * *",
            "timezone": "Europe/Paris", "metric": "mrr", "minimum": "0.5", "max_drift": "3",
            "webhook": "http://127.0.0.1:9/hook", "emails": "a@example.org, b@example.org", "enabled": "on"}  # fmt: skip
    assert evaluator.get("/schedules/new/?collection=handbook").status_code == 200
    bad = evaluator.post("/schedules/new/", {**form, "cron": "0 25 * * *"})
    assert bad.status_code == 200 and "cron hour: 25 is outside 0-23" in str(
        bad.context["form"].errors["cron"]
    )
    refused_url = evaluator.post("/schedules/new/", {**form, "webhook": "http://169.254.169.254/"})
    assert "webhook" in refused_url.context["form"].errors
    assert not Schedule.objects.exists()
    created = evaluator.post("/schedules/new/", form)
    assert created.status_code == 302
    schedule = Schedule.objects.get()
    assert schedule.gate == {
        "metric": "mrr",
        "min": 0.5,
        "max_drop": None,
        "check_drop": True,
        "max_drift": 3,
    }
    assert [c["kind"] for c in schedule.channels] == ["webhook", "email"]
    assert schedule.channels[1]["to"] == ["a@example.org", "b@example.org"]
    assert schedule.timezone == "Europe/Paris" and schedule.next_run_at is not None
    assert _person(world, "vic", "viewer").get("/schedules/new/").status_code == 403
    assert evaluator.post(f"/schedules/{schedule.pk}/delete/").status_code == 302
    assert not Schedule.objects.exists()
