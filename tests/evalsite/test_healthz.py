"""/healthz and the dashboard's status line: the database, the broker and the workers' heartbeats; 503 naming
the part that is down. Anyone reads the status names and timings; a signed-in staff user also reads the details
(engine, counts, messages, the exception text that names hosts and ports)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from django_q.conf import Conf

from evalsite import health
from evalsite.jobs.models import Worker
from evalsite.tenancy.services import tenant_get_or_create
from tests.support import member_of


@pytest.fixture
def real_queue(monkeypatch):
    """Jobs go to a broker and need workers (the test settings run them inline)."""
    monkeypatch.setattr(Conf, "SYNC", False)
    monkeypatch.setattr(health, "_cache", {})


@pytest.fixture
def staff(django_user_model) -> Client:
    client = Client()
    client.force_login(django_user_model.objects.create_user("op", password="pw-123456789", is_staff=True))
    return client


def beat(name: str, seconds_ago: float) -> Worker:
    at = timezone.now() - timedelta(seconds=seconds_ago)
    return Worker.objects.create(name=name, host="h", pid=1, started_at=at, beat_at=at)


def test_it_is_ok_when_database_broker_and_workers_are(db, real_queue, settings, staff):
    settings.EVALSITE_JOB_HEARTBEAT_SECONDS = 10
    beat("h:1:1", 4)
    beat("h:2:1", 25)
    beat("h:3:1", 300)  # gone long ago: not counted
    response = staff.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok" and body["failing"] == []
    checks = body["checks"]
    assert checks["database"]["status"] == "ok" and checks["database"]["engine"] in ("sqlite", "postgresql")
    assert checks["broker"]["status"] == "ok" and checks["broker"]["kind"] in ("database", "redis")
    assert checks["workers"]["status"] == "ok" and checks["workers"]["alive"] == 2
    assert 3.5 <= checks["workers"]["last_beat_age_s"] < 10
    assert response["Cache-Control"] == "no-store"


def test_no_worker_beat_is_a_503_naming_the_workers(db, real_queue, settings, staff):
    settings.EVALSITE_JOB_HEARTBEAT_SECONDS = 10
    beat("h:1:1", 95)
    response = staff.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "down" and body["failing"] == ["workers"]
    message = body["checks"]["workers"]["message"]
    # 95 s when written; a second or two later when read on a busy machine
    assert re.search(r"no worker beat in the last 30 s; the last beat was 9[5-9] s ago", message), message
    assert "manage.py worker" in message


def test_an_unreachable_broker_is_a_503_naming_the_broker(db, real_queue, settings, staff):
    beat("h:1:1", 1)
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "redis": "redis://127.0.0.1:9/0"}  # nothing listens there
    response = staff.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["failing"] == ["broker"]
    broker = body["checks"]["broker"]
    assert broker["status"] == "down" and broker["error"].startswith("ConnectionError: ")
    assert "127.0.0.1:9" in broker["error"]
    assert body["checks"]["workers"]["status"] == "ok"


def test_anyone_but_staff_reads_the_status_names_and_timings_only(
    db, real_queue, settings, django_user_model
):
    """The same broken broker: the public answer says which part is down, not where it is or what it said."""
    beat("h:1:1", 1)
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "redis": "redis://127.0.0.1:9/0"}
    member = Client()
    member.force_login(django_user_model.objects.create_user("ann", password="pw-123456789"))
    for client in (Client(), member):  # signed out; signed in but not staff
        response = client.get("/healthz")
        assert response.status_code == 503
        body = response.json()
        assert body["status"] == "down" and body["failing"] == ["broker"]
        assert {name: set(part) for name, part in body["checks"].items()} == {
            name: {"status", "ms"} for name in ("database", "broker", "workers")
        }
        assert [part["status"] for part in body["checks"].values()] == ["ok", "down", "ok"]
        assert "127.0.0.1" not in response.content.decode()
        assert response["Cache-Control"] == "no-store" and "Cookie" in response["Vary"]


def test_inline_jobs_need_no_worker(db, staff):
    body = staff.get("/healthz").json()
    assert body["status"] == "ok" and body["checks"]["workers"]["message"] == "jobs run inline (sync mode)"


def test_the_dashboard_shows_the_same_status_line(db, real_queue, settings):
    settings.EVALSITE_JOB_HEARTBEAT_SECONDS = 10
    user = member_of(tenant_get_or_create(cluster_slug="c", tenant_slug="t"), "ann", password="pw-123456789")
    client = Client()
    client.force_login(user)
    html = client.get("/").content.decode()
    assert "data-system-status" in html
    assert '<span class="part ok" data-part="database">Database ok</span>' in html
    assert 'data-part="workers">Workers down: no worker beat in the last 30 s' in html

    beat("h:1:1", 2)
    health._cache.clear()
    html = client.get("/").content.decode()
    assert 'data-part="workers">Workers: 1 alive, last beat 2 s ago</span>' in html
    assert Client().get("/accounts/login/").content.decode().count("data-system-status") == 0  # signed out


def test_the_status_line_shows_a_check_s_exception_text_to_staff_only(db, real_queue, settings):
    beat("h:1:1", 1)
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "redis": "redis://127.0.0.1:9/0"}
    tenant = tenant_get_or_create(cluster_slug="c", tenant_slug="t")
    pages = {}
    for name, is_staff in (("ann", False), ("op", True)):
        user = member_of(tenant, name, password="pw-123456789", is_staff=is_staff)
        client = Client()
        client.force_login(user)
        pages[name] = client.get("/").content.decode()
    assert '<span class="part down" data-part="broker">Broker down</span>' in pages["ann"]
    assert "127.0.0.1" not in pages["ann"]
    assert (
        'data-part="broker">Broker down: ConnectionError: Error 111 connecting to 127.0.0.1:9'
        in (pages["op"])
    )
