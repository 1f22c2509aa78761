"""Schedules and alerts through the API and the tick, on the real database, with a webhook receiver and an SMTP
server started on 127.0.0.1 (allowed by the operator's setting, as tests/conftest.py sets it)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone

from evaluation.models import Alert, AlertState, Delivery, DeliveryState, EvaluationRun, Schedule, ScheduleRun
from evaluation.watch import alerts
from evaluation.watch.schedules import schedules_tick
from tests.support import handbook_entries, refused
from tests.watch_support import SmtpServer, WebhookReceiver

URL = "/lmkit/v1/search/evaluate/schedules"
ALERTS = "/lmkit/v1/alerts"


@pytest.fixture
def golden(world):
    return handbook_entries(world.collection)


@pytest.fixture
def hook():
    receiver = WebhookReceiver()
    yield receiver
    receiver.close()


def body(**extra) -> dict:
    return {"collection_id": "handbook", "name": "nightly", "configs": [{"label": "bm25"}], "ks": [1, 3],
            "cron": "0 3 * * *", "timezone": "Europe/Paris", "gate": {"metric": "ndcg@3", "min": 0.5}, **extra}  # fmt: skip


def run_due(django_capture_on_commit_callbacks, now=None) -> list[ScheduleRun]:
    """One tick, its jobs run inline as the suite runs jobs (on commit)."""
    with django_capture_on_commit_callbacks(execute=True):
        return schedules_tick(now)


def test_a_schedule_is_created_listed_changed_and_deleted(world, golden):
    created = world.client.post(URL, body(), format="json")
    assert created.status_code == 201, created.json()
    schedule = created.json()
    assert schedule["cron"] == "0 3 * * *" and schedule["timezone"] == "Europe/Paris"
    assert schedule["gate"] == {
        "metric": "ndcg@3", "min": 0.5, "max_drop": None, "check_drop": True, "max_drift": None
    }  # fmt: skip
    next_run = Schedule.objects.get().next_run_at
    assert next_run > timezone.now() and next_run.astimezone(timezone.get_current_timezone()).minute == 0
    assert [s["name"] for s in world.client.get(URL, {"collection_id": "handbook"}).json()["results"]] == [
        "nightly"
    ]
    changed = world.client.patch(f"{URL}/{schedule['schedule_id']}", {"every_minutes": 30, "enabled": False},
                                 format="json").json()  # fmt: skip
    assert changed["cron"] is None and changed["every_minutes"] == 30 and changed["next_run_at"] is None
    refused(world.client.post(URL, body(), format="json"), 409, "schedule-exists")
    assert world.other_client.get(f"{URL}/{schedule['schedule_id']}").status_code == 404
    assert world.client.delete(f"{URL}/{schedule['schedule_id']}").status_code == 204
    assert not Schedule.objects.exists()


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"cron": "0 25 * * *"}, "cron"),
        ({"cron": None, "every_minutes": 0}, "every_minutes"),
        ({"timezone": "Nowhere/City"}, "timezone"),
        ({"gate": {"metric": "ndcg@10", "min": 0.5}}, "gate.metric"),
        ({"gate": {"metric": "mrr", "min": 2}}, "gate.min"),
        ({"channels": [{"kind": "pager"}]}, "channels[0].kind"),
        ({"channels": [{"kind": "email", "to": "not an address"}]}, "channels[0].to"),
        ({"channels": [{"kind": "webhook", "url": "http://169.254.169.254/latest"}]}, "channels[0].url"),
        ({"configs": [{"search_type": "Fuzzy"}]}, "configs[0].search_type"),
        ({"configs": [{"target": "nope"}]}, "configs[0].target"),
        ({"frequency": "daily"}, "frequency"),
    ],
)
def test_a_bad_schedule_is_refused_naming_its_field(world, golden, extra, field):
    response = world.client.post(URL, body(**extra), format="json")
    assert 400 <= response.status_code < 500, response.json()
    assert field in response.json()["error"]["message"], response.json()
    assert not Schedule.objects.exists()


def test_roles_a_viewer_lists_an_evaluator_schedules_a_curator_acknowledges(world, golden):
    from tests.conftest import person_client

    viewer = person_client(world, "vic", "viewer")
    assert viewer.get(URL).status_code == 200
    refused(viewer.post(URL, body(), format="json"), 403, "forbidden")
    assert person_client(world, "eve", "evaluator").post(URL, body(), format="json").status_code == 201


@pytest.mark.django_db(transaction=True)
def test_a_tick_runs_once_however_many_workers_and_catches_up_once(world, golden):
    world.client.post(URL, body(every_minutes=60, cron=None), format="json")
    schedule = Schedule.objects.get()
    long_ago = timezone.now() - timedelta(days=3)
    Schedule.objects.filter(pk=schedule.pk).update(
        next_run_at=long_ago
    )  # down for three days: 72 missed ticks
    # Four workers tick at the same moment, each on its own database connection.
    barrier, found, errors = threading.Barrier(4), [], []

    def tick() -> None:
        try:
            barrier.wait()
            found.extend(schedules_tick())
        except Exception as exc:  # noqa: BLE001  (reported below)
            errors.append(exc)
        finally:
            connections.close_all()  # this thread's own connection: closed, not left to the garbage collector

    threads = [threading.Thread(target=tick) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(found) == 1
    assert ScheduleRun.objects.count() == 1 and ScheduleRun.objects.get().tick_at == long_ago
    schedule.refresh_from_db()
    assert schedule.next_run_at > timezone.now()  # caught up once: the next tick is the one to come
    assert schedules_tick() == []


def test_a_failing_gate_fires_once_reminds_then_resolves_told_to_a_webhook(
    world, golden, hook, django_capture_on_commit_callbacks
):
    slack = WebhookReceiver()
    try:
        created = world.client.post(URL, body(
            every_minutes=60, cron=None, gate={"metric": "ndcg@3", "min": 0.99},
            channels=[{"kind": "webhook", "url": hook.url}, {"kind": "webhook", "url": slack.url, "format": "slack"}],
        ), format="json").json()  # fmt: skip
        schedule = Schedule.objects.get(pk=created["schedule_id"])
        # q3 is made unanswerable for the built-in search: the mean nDCG@3 falls below 0.99.
        golden[2].expected_document_ids = ["refunds"]
        golden[2].save()
        for hour in (1, 2):
            Schedule.objects.filter(pk=schedule.pk).update(next_run_at=timezone.now() - timedelta(minutes=1))
            (tick,) = run_due(django_capture_on_commit_callbacks)
            tick.refresh_from_db()
            assert tick.passed is False and tick.batch_id is not None, (hour, tick.verdict)
        runs = EvaluationRun.objects.filter(batch_id=tick.batch_id)
        assert [r.label for r in runs] == ["nightly · bm25"]
        (alert,) = Alert.objects.all()
        assert alert.state == AlertState.FIRING and alert.reasons[0]["reason"] == "below-min"
        assert hook.events() == ["firing"]  # two failing runs, one notification
        assert "nightly on handbook: failing" in slack.bodies[0]["text"]
        fired = hook.bodies[0]
        assert fired["schedule"]["name"] == "nightly" and fired["alert"]["state"] == "firing"
        assert fired["runs"][0]["label"] == "nightly · bm25" and fired["collection_id"] == "handbook"
        # A reminder once remind_after_minutes passed unacknowledged; none after a curator acknowledges it.
        Alert.objects.filter(pk=alert.pk).update(fired_at=timezone.now() - timedelta(days=2))
        assert alerts.reminders_tick() == 1 and alerts.deliver_due() == 2
        assert hook.events() == ["firing", "reminder"]
        acknowledged = world.client.post(f"{ALERTS}/{alert.pk}/acknowledge").json()
        assert acknowledged["acknowledged_by"].startswith("api-key:")
        Alert.objects.filter(pk=alert.pk).update(reminded_at=timezone.now() - timedelta(days=2))
        assert alerts.reminders_tick() == 0
        # The gate relaxed, the next run passes: the alert resolves, told once.
        world.client.patch(f"{URL}/{schedule.pk}", {"gate": {"metric": "ndcg@3", "min": 0.1}}, format="json")
        Schedule.objects.filter(pk=schedule.pk).update(next_run_at=timezone.now() - timedelta(minutes=1))
        run_due(django_capture_on_commit_callbacks)
        alert.refresh_from_db()
        assert alert.state == AlertState.RESOLVED and hook.events() == ["firing", "reminder", "resolved"]
        listed = world.client.get(ALERTS, {"collection_id": "handbook"}).json()["results"]
        assert [a["state"] for a in listed] == ["resolved"] and len(listed[0]["deliveries"]) == 6
        # A webhook's URL is often its credential: the API shows its origin only.
        shown = {d["channel"]["url"] for d in listed[0]["deliveries"]}
        assert shown == {hook.url.rsplit("/", 1)[0] + "/…", slack.url.rsplit("/", 1)[0] + "/…"}
        got = world.client.get(f"{URL}/{schedule.pk}").json()["channels"]
        assert [c["url"] for c in got] == [
            hook.url.rsplit("/", 1)[0] + "/…",
            slack.url.rsplit("/", 1)[0] + "/…",
        ]
        assert world.other_client.get(ALERTS).json()["count"] == 0
    finally:
        slack.close()


def test_a_failed_delivery_is_retried_with_backoff_and_every_attempt_recorded(
    world, golden, django_capture_on_commit_callbacks
):
    flaky = WebhookReceiver(failures=2)
    try:
        world.client.post(URL, body(every_minutes=60, cron=None, gate={"metric": "mrr", "min": 0.9},
                                    channels=[{"kind": "webhook", "url": flaky.url}]), format="json")  # fmt: skip
        Schedule.objects.update(next_run_at=timezone.now() - timedelta(minutes=1))
        golden[0].expected_document_ids = ["warranty"]
        golden[0].save()
        run_due(django_capture_on_commit_callbacks)
        delivery = Delivery.objects.get()
        assert delivery.state == DeliveryState.PENDING and len(delivery.attempts) == 1
        assert delivery.attempts[0]["status"] == 500
        first_wait = delivery.next_attempt_at - timezone.now()
        assert timedelta(seconds=20) < first_wait <= timedelta(seconds=30)
        assert alerts.deliver_due() == 0  # not due yet
        alerts.deliver_due(timezone.now() + timedelta(seconds=31))
        delivery.refresh_from_db()
        assert len(delivery.attempts) == 2 and delivery.next_attempt_at - timezone.now() > timedelta(
            seconds=50
        )
        alerts.deliver_due(timezone.now() + timedelta(minutes=2))
        delivery.refresh_from_db()
        assert delivery.state == DeliveryState.SENT and [a["ok"] for a in delivery.attempts] == [
            False,
            False,
            True,
        ]
        assert flaky.events() == ["firing"]
    finally:
        flaky.close()


def test_an_alert_by_e_mail_goes_through_smtp(world, golden, settings, django_capture_on_commit_callbacks):
    smtp = SmtpServer()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", smtp.port
    try:
        world.client.post(URL, body(every_minutes=60, cron=None, gate={"metric": "ndcg@3", "min": 0.99},
                                    channels=[{"kind": "email", "to": ["search-team@example.org"]}]), format="json")  # fmt: skip
        golden[2].expected_document_ids = ["refunds"]
        golden[2].save()
        Schedule.objects.update(next_run_at=timezone.now() - timedelta(minutes=1))
        run_due(django_capture_on_commit_callbacks)
        ((recipients, message),) = smtp.messages
        assert recipients == ["search-team@example.org"]
        assert message["Subject"] == "[evalsite] nightly on handbook: failing"
        assert "below the minimum 0.99" in message.get_payload()
        assert Delivery.objects.get().state == DeliveryState.SENT
    finally:
        smtp.close()


def test_run_now_answers_202_with_a_job_and_is_labelled(world, golden, django_capture_on_commit_callbacks):
    schedule = world.client.post(URL, body(), format="json").json()
    with django_capture_on_commit_callbacks(execute=True):
        accepted = world.client.post(f"{URL}/{schedule['schedule_id']}/run")
    assert accepted.status_code == 202 and accepted.json()["job_id"]
    job = world.client.get(f"/lmkit/v1/jobs/{accepted.json()['job_id']}").json()
    assert job["status"] == "Completed", job
    tick = ScheduleRun.objects.get()
    assert tick.manual and tick.passed is True
    assert world.client.get(f"{URL}/{schedule['schedule_id']}").json()["last_tick"]["passed"] is True


def test_a_schedule_alerts_when_the_golden_set_drifts_past_its_number(
    world, golden, hook, django_capture_on_commit_callbacks
):
    world.client.post(URL, body(every_minutes=60, cron=None, gate={"metric": "mrr", "min": 0.0, "max_drift": 0},
                                channels=[{"kind": "webhook", "url": hook.url}]), format="json")  # fmt: skip
    Schedule.objects.update(next_run_at=timezone.now() - timedelta(minutes=1))
    (tick,) = run_due(django_capture_on_commit_callbacks)
    tick.refresh_from_db()
    assert tick.passed is True and tick.verdict["baseline"]["drifted"] == 0
    # The warranty is deleted under the entry that expects it: one entry drifted, more than the 0 allowed.
    assert world.client.delete("/lmkit/v1/collections/handbook/documents/warranty").status_code == 204
    Schedule.objects.update(next_run_at=timezone.now() - timedelta(minutes=1))
    (tick,) = run_due(django_capture_on_commit_callbacks)
    tick.refresh_from_db()
    assert tick.passed is False
    assert [r["reason"] for r in tick.verdict["reasons"]] == ["drifted"]
    assert (
        hook.bodies[0]["alert"]["reasons"][0]["message"]
        == "1 golden entries drifted, more than the 0 allowed"
    )
