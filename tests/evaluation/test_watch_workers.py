"""Schedules with real worker clusters (`manage.py worker`) on the suite's database and broker: two clusters tick
the same due schedule and it runs once; a cluster killed while it evaluates a tick leaves the job to another,
which stores the tick's batch once."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from evaluation.models import EvaluationRun, Schedule, ScheduleRun
from tests.conftest import add_documents
from tests.generation_support import synthetic_corpus
from tests.support import add_entries
from tests.worker_support import SLOW_SEARCH, Clusters, fast_workers, job_ended, job_until, until


@pytest.fixture
def env(manage_env, monkeypatch, settings, transactional_db):
    return fast_workers(manage_env, settings, monkeypatch)


@pytest.fixture
def clusters(env, tmp_path):
    started = Clusters(env, tmp_path)
    yield started
    started.close()


def _schedule(world, **gate) -> Schedule:
    add_documents(world.collection, synthetic_corpus(30))
    add_entries(world.collection, *[f"Which company makes product {i}?" for i in range(16)],
                expected_document_ids=["company-000"])  # fmt: skip
    created = world.client.post("/lmkit/v1/search/evaluate/schedules", {
        "collection_id": "handbook", "name": "hourly", "configs": [{"label": "bm25"}], "every_minutes": 60,
        "gate": {"metric": "mrr", **gate}}, format="json")  # fmt: skip
    assert created.status_code == 201, created.json()
    return Schedule.objects.get()


def test_two_clusters_tick_one_due_schedule_and_it_runs_once(world, clusters):
    schedule = _schedule(world, min=0.0)
    first, second = clusters.start("first"), clusters.start("second")
    due = timezone.now() - timedelta(seconds=1)
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=due)
    until(lambda: ScheduleRun.objects.filter(passed__isnull=False).exists())
    time.sleep(3)  # three more heartbeats of each cluster: nothing more may be queued for that tick
    (tick,) = ScheduleRun.objects.all()
    assert tick.tick_at == due and tick.passed is True
    assert EvaluationRun.objects.filter(batch_id=tick.batch_id).count() == 1
    assert EvaluationRun.objects.count() == 1
    schedule.refresh_from_db()
    assert schedule.next_run_at > timezone.now() + timedelta(minutes=55)
    for cluster in (first, second):
        assert "Traceback" not in cluster.log.read_text()


def test_a_cluster_killed_during_a_tick_leaves_it_to_another_which_stores_it_once(world, clusters):
    schedule = _schedule(world, min=0.0)
    Schedule.objects.filter(pk=schedule.pk).update(configs=[{"label": "slow", "target": "slow"}])
    created = world.client.post(
        "/lmkit/v1/targets",
        {
            "name": "slow",
            "kind": "python",
            "concurrency": 1,
            "options": {"callable": SLOW_SEARCH},
        },
        format="json",
    )
    assert created.status_code == 201, created.json()
    first = clusters.start("first")
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=timezone.now() - timedelta(seconds=1))
    until(lambda: ScheduleRun.objects.filter(job__isnull=False).exists())
    tick = ScheduleRun.objects.get()
    job_until(world.client, str(tick.job_id), lambda b: b["status"] == "Running", worker=first)
    time.sleep(1.5)  # a few of its 16 slow questions asked (progress is reported at the end of so few)
    assert ScheduleRun.objects.get().batch_id is None
    clusters.kill(first)
    second = clusters.start("second")
    body = job_until(world.client, str(tick.job_id), job_ended, worker=second)
    assert body["status"] == "Completed", body
    assert body["attempts"] == 2
    tick.refresh_from_db()
    assert tick.passed is True and EvaluationRun.objects.filter(batch_id=tick.batch_id).count() == 1
    assert EvaluationRun.objects.count() == 1 and ScheduleRun.objects.count() == 1
