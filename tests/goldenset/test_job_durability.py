"""No job stays Queued or Running without a live owner: real qcluster processes killed with SIGKILL and stopped
with SIGTERM, a broker that goes down and comes back empty, a worker whose database connection is cut.

Each test runs on the suite's broker (the database on SQLite; Redis when the suite runs with it) unless it
needs a broker it can stop: then it starts a redis-server of its own.
"""

from __future__ import annotations

import time

import pytest
from django.db import connection
from django_q.brokers import get_broker
from django_q.conf import Conf

from evalsite.jobs.brokers import job_ids_in_broker
from evalsite.jobs.models import Job, JobStatus
from evalsite.jobs.services import jobs_recover
from evaluation.models import EvaluationJobKind
from goldenset import services
from goldenset.models import Collection, GoldenEntry
from tests.conftest import add_documents
from tests.generation_support import scripted_writer, synthetic_corpus
from tests.llm_server import llm_server_fixture  # noqa: F401
from tests.worker_support import Clusters, PrivateRedis, group_members, job_ended, job_until

URL = "/lmkit/v1/search/golden-set/generate"
FAST = {  # seconds: quick beats, staleness and leases, so the tests take seconds, not minutes
    "EVALSITE_JOB_HEARTBEAT_SECONDS": "1",
    "EVALSITE_JOB_STALE_SECONDS": "4",
    "EVALSITE_TASK_LEASE_SECONDS": "3",
    "EVALSITE_WORKERS": "1",
}


@pytest.fixture
def env(manage_env, llm_server, monkeypatch, settings, transactional_db):
    """The scripted model (slow enough that a job is caught mid-way) and fast durability settings, for the test
    process and the workers alike; django-q2 in the test process enqueues for real."""
    llm_server.reply(r"Passage:", scripted_writer)
    llm_server.latency = 0.3
    values = {
        **FAST,
        "EVALSITE_LLM_BASE_URL": llm_server.url,
        "EVALSITE_LLM_MODEL": "scripted",
        "EVALSITE_LLM_CONCURRENCY": "1",
    }
    for name, value in values.items():
        setattr(settings, name, int(value) if value.isdigit() else value)  # pytest-django restores them
    monkeypatch.setattr(Conf, "SYNC", False)
    return {**manage_env, **values}


@pytest.fixture
def clusters(env, tmp_path):
    started = Clusters(env, tmp_path)
    yield started
    started.close()


def corpus(world, slug: str, size: int) -> Collection:
    collection = services.collection_create(tenant=world.tenant, slug=slug, actor="test")
    add_documents(collection, synthetic_corpus(size))
    return collection


def generate(world, slug: str, count: int, seed: int):
    return world.client.post(URL, {"collection_id": slug, "count": count, "seed": seed}, format="json")


def test_a_killed_cluster_loses_neither_its_running_job_nor_the_task_it_had_taken(
    world, clusters, llm_server
):
    """SIGKILL the whole cluster while it runs one job and holds the next one's task (prefetched): the running
    job is re-queued (its worker is gone) and continues where it stopped, asking only for the rest; the taken
    task's lease runs out and a fresh cluster runs it."""
    # Slower calls than the module's: the running job must outlast the pusher taking the next task, which a
    # busy machine delays by seconds (at 0.8 s a call, 20 calls, it finished first once in a full PostgreSQL run
    # on a machine at load 6-9, and the taken task then ran).
    llm_server.latency = 1.5
    corpus(world, "companies", 30)
    corpus(world, "others", 8)
    first = clusters.start("first")
    running = generate(world, "companies", 20, 8).json()["job_id"]
    taken = generate(world, "others", 4, 3).json()["job_id"]
    job_until(
        world.client, running, lambda b: b["status"] == "Running" and b["progress_done"] >= 3, worker=first
    )
    # The cluster's pusher takes the next task while its one worker is busy: within seconds, however loaded
    # the machine (a fixed one-second wait failed when the machine was busy; 15 s once, on PostgreSQL with two
    # test suites at once on the machine).
    deadline = time.monotonic() + 40
    while get_broker().queue_size() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert Job.objects.get(pk=taken).status == JobStatus.QUEUED
    assert get_broker().queue_size() == 0  # taken out of the queue: held by the cluster, leased
    assert taken in job_ids_in_broker()

    clusters.kill(first)
    done = GoldenEntry.objects.filter(job_id=running).count()
    assert 3 <= done < 20
    body = job_until(
        world.client, running, lambda b: b["status"] == "Queued"
    )  # this host sees the worker is gone
    assert [e["event"] for e in body["history"]] == ["worker-lost"]

    llm_server.latency = 0.2  # the slow calls were for the first cluster's pusher; the rest need not wait
    second = clusters.start("second")
    for job_id in (running, taken):
        body = job_until(world.client, job_id, job_ended, worker=second)
        assert body["status"] == "Completed", body
    body = world.client.get(f"/lmkit/v1/jobs/{running}").json()
    assert body["attempts"] == 2
    assert body["result"]["accepted_before"] == done and body["result"]["asked"] == 20 - done
    assert GoldenEntry.objects.filter(job_id=running).count() == 20  # not 20 + done
    assert len(set(GoldenEntry.objects.filter(job_id=running).values_list("source_page_id", flat=True))) == 20
    assert GoldenEntry.objects.filter(job_id=taken).count() == 4


def test_sigterm_stops_a_cluster_within_seconds_and_puts_its_job_back(world, clusters):
    corpus(world, "companies", 30)
    first = clusters.start("first")
    job_id = generate(world, "companies", 20, 5).json()["job_id"]
    job_until(
        world.client, job_id, lambda b: b["status"] == "Running" and b["progress_done"] >= 2, worker=first
    )

    took = clusters.terminate(first)
    assert not group_members(first.pid), first.log.read_text()
    assert took < 10, took
    job = Job.objects.get(pk=job_id)
    assert job.status == JobStatus.QUEUED, (job.status, first.log.read_text())
    assert [e["event"] for e in job.history] == ["interrupted"] and job.retries == 0
    kept = GoldenEntry.objects.filter(job=job).count()

    second = clusters.start("second")
    body = job_until(world.client, job_id, job_ended, worker=second)
    assert body["status"] == "Completed", body
    assert body["result"]["accepted_before"] == kept
    assert GoldenEntry.objects.filter(job=job).count() == 20


def test_an_idle_cluster_stops_at_once_on_sigterm(world, clusters):
    cluster = clusters.start("idle")
    time.sleep(2.5)  # started, its worker beating
    took = clusters.terminate(cluster)
    assert not group_members(cluster.pid) and took < 5, (took, cluster.log.read_text())


def test_a_broker_down_at_enqueue_is_a_503_and_a_restart_that_empties_it_loses_no_job(
    world, clusters, tmp_path, monkeypatch, env
):
    """Redis down: the call answers 503 broker-unavailable and leaves a Failed job, not a Queued orphan.
    Redis back (empty, as a restart without persistence leaves it) while a job is running and another waits in
    it: the waiting one's task is gone, and recovery queues it again."""
    redis = PrivateRedis(tmp_path)
    redis.start()
    monkeypatch.setattr(Conf, "REDIS", redis.url)
    monkeypatch.setattr(Conf, "BROKER_CLASS", "evalsite.jobs.brokers.LeasedRedis")
    broker_env = {"EVALSITE_REDIS_URL": redis.url}
    try:
        corpus(world, "companies", 30)
        slugs = [f"small-{i}" for i in range(4)]
        for slug in slugs:
            corpus(world, slug, 6)
        redis.stop()
        response = generate(world, "companies", 5, 1)
        assert response.status_code == 503, response.json()
        assert response["Retry-After"] == "5"
        error = response.json()["error"]
        assert error["code"] == "broker-unavailable"
        orphan = Job.objects.get(pk=error["details"]["job_id"])
        assert orphan.status == JobStatus.FAILED and orphan.error["code"] == "broker-unavailable"
        # (the builds of the new collections' search indexes wait in the queue too: no worker yet)
        assert (
            not Job.objects.filter(status=JobStatus.QUEUED)
            .exclude(kind=EvaluationJobKind.INDEX_BUILD)
            .exists()
        )

        redis.start()
        cluster = clusters.start("worker", **broker_env)
        running = generate(world, "companies", 12, 2).json()["job_id"]
        job_until(world.client, running, lambda b: b["status"] == "Running", worker=cluster)
        waiting = [generate(world, slug, 3, 4).json()["job_id"] for slug in slugs]
        broker = get_broker()
        builds = {
            str(pk)
            for pk in Job.objects.filter(kind=EvaluationJobKind.INDEX_BUILD).values_list("pk", flat=True)
        }
        # The cluster takes some of them (prefetch) while its worker runs the first; the others wait in Redis.
        # How soon it takes one depends on the machine's load: waited for, up to 15 s.
        deadline = time.monotonic() + 15
        while True:
            in_queue = {
                str(_load(p)["args"][0]) for p in broker.connection.lrange(broker.list_key, 0, -1)
            } - builds
            if (in_queue and in_queue < set(waiting)) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert in_queue and in_queue < set(waiting), in_queue
        redis.stop()
        redis.start()  # back, empty: the tasks that waited in it are gone
        for job_id in (running, *waiting):
            body = job_until(world.client, job_id, job_ended, timeout=90, worker=cluster)
            assert body["status"] == "Completed", (body, cluster.log.read_text())
        for job_id in waiting:
            events = [e["event"] for e in Job.objects.get(pk=job_id).history]
            # Those that waited in Redis were queued again. One the cluster had taken runs from its memory, but
            # its lease vanished with the restart too, so recovery may queue it again as well: the second
            # delivery then finds it taken and does nothing (one run, its 3 questions, not 6).
            assert events == ["task-lost"] if job_id in in_queue else events in ([], ["task-lost"]), events
            assert GoldenEntry.objects.filter(job_id=job_id).count() == 3
    finally:
        redis.stop()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="cuts connections with pg_terminate_backend")
def test_a_worker_whose_database_connection_is_cut_reports_it_and_retries(world, clusters):
    corpus(world, "companies", 30)
    cluster = clusters.start("first")
    job_id = generate(world, "companies", 20, 6).json()["job_id"]
    job_until(
        world.client, job_id, lambda b: b["status"] == "Running" and b["progress_done"] >= 2, worker=cluster
    )
    with connection.cursor() as cursor:  # every connection to the test database but the test's own
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        assert cursor.fetchone()[0] >= 1
    body = job_until(world.client, job_id, job_ended, timeout=90, worker=cluster)
    assert body["status"] == "Completed", (body, cluster.log.read_text())
    events = [e["event"] for e in body["history"]]
    assert "database-error" in events and "worker-lost" not in events, body["history"]
    assert GoldenEntry.objects.filter(job_id=job_id).count() == 20


def test_recovery_requeues_a_queued_job_whose_task_is_in_no_broker(world, settings, monkeypatch, env):
    """No worker at all: a Queued job whose task vanished is put back in the broker once, and one whose task is
    there is left alone."""
    corpus(world, "companies", 10)
    lost = Job.objects.get(pk=generate(world, "companies", 2, 1).json()["job_id"])
    kept = Job.objects.get(pk=generate(world, "companies", 3, 1).json()["job_id"])
    assert {str(lost.pk), str(kept.pk)} <= job_ids_in_broker()
    broker = get_broker()
    for payload in broker.payloads():  # take the first job's task out, as a broker restart would
        if str(lost.pk) in str(_load(payload).get("args")):
            _remove(broker, payload)
    assert str(lost.pk) not in job_ids_in_broker()
    Job.objects.filter(pk__in=[lost.pk, kept.pk]).update(queued_at=lost.queued_at.replace(year=2020))

    assert jobs_recover(inspect_broker=True) == {"requeued": 1, "failed": 0}
    lost.refresh_from_db()
    kept.refresh_from_db()
    assert lost.status == JobStatus.QUEUED and lost.retries == 1
    assert [e["event"] for e in lost.history] == ["task-lost"] and kept.history == []
    assert {str(lost.pk), str(kept.pk)} <= job_ids_in_broker()
    assert jobs_recover(inspect_broker=True) == {"requeued": 0, "failed": 0}  # nothing more to do
    broker.purge_queue()


def _load(payload):
    from django_q.signing import SignedPackage

    return SignedPackage.loads(payload)


def _remove(broker, payload) -> None:
    if hasattr(broker.connection, "lrem"):
        broker.connection.lrem(broker.list_key, 1, payload)
    else:
        broker.get_connection().filter(payload=payload).delete()
