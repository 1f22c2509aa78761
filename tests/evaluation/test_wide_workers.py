"""Work spread over the workers (evalsite.jobs.fan_out), with real worker clusters (`manage.py worker`) on the
suite's database and broker: an evaluation of several configurations runs one child job per configuration on two
workers at once and is stored as one batch, also when a worker is killed under a child; a study's trials run on
two workers at once through Optuna's storage (PostgreSQL only), its grid giving the trials a serial study gives,
and a killed worker's trial is run again and counted once. And, inline: the spread batch holds the figures of
the serial one; a cancel reaches the children; a failed child fails its parent."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from django.db import connection

from evalsite.jobs.fan_out import children_ended
from evalsite.jobs.models import Job, JobStatus, Worker
from evalsite.jobs.services import job_cancel, job_run
from evaluation.models import EvaluationJobKind, EvaluationRun, Study
from evaluation.reports.batch_jobs import batch_job_create
from evaluation.retrieval.request import RetrievalRequest
from evaluation.studies.services import study_create, study_execute
from goldenset.beir_import import beir_import
from tests.conftest import add_documents
from tests.generation_support import synthetic_corpus
from tests.support import (
    LUCENE_AND_OKAPI,
    SEED_EVALUATE_BODY,
    add_entries,
    handbook_entries,
    lucene_and_okapi_runs,
)
from tests.worker_support import (
    SLOW_SEARCH,
    Clusters,
    fast_workers,
    group_members,
    job_ended,
    job_until,
    until,
)

CLAPNQ = Path(__file__).resolve().parents[2] / "demo" / "clapnq"
STUDIES = "/lmkit/v1/search/evaluate/studies"
postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="a study spreads its trials on PostgreSQL only (SQLite: one worker)",
)


@pytest.fixture
def env(manage_env, monkeypatch, settings, transactional_db):
    settings.EVALSITE_EVALUATE_SYNC_LIMIT = 1
    return fast_workers(manage_env, settings, monkeypatch)


@pytest.fixture
def clusters(env, tmp_path):
    started = Clusters(env, tmp_path)
    yield started
    started.close()


def _slow_evaluation(world, configs: int) -> str:
    add_documents(world.collection, synthetic_corpus(30))
    add_entries(world.collection, *[f"Which company makes product {i}?" for i in range(12)],
                expected_document_ids=["company-000"])  # fmt: skip
    created = world.client.post("/lmkit/v1/targets", {"name": "slow", "kind": "python", "concurrency": 1,
                                "options": {"callable": SLOW_SEARCH}}, format="json")  # fmt: skip
    assert created.status_code == 201, created.json()
    body = {"collection_id": "handbook", "ks": [1, 3],
            "configs": [{"label": f"slow {i}", "target": "slow"} for i in range(configs)]}  # fmt: skip
    response = world.client.post("/lmkit/v1/search/evaluate", body, format="json")
    assert response.status_code == 202, response.json()
    return response.json()["job_id"]


def test_an_evaluation_runs_its_configurations_on_two_workers_and_survives_one_killed(world, clusters):
    first, second = clusters.start("first"), clusters.start("second")
    job_id = _slow_evaluation(world, configs=4)
    children = Job.objects.filter(parent_id=job_id)
    running = children.filter(status=JobStatus.RUNNING)
    until(lambda: running.count() == 2, "two children running at once", clusters=clusters)
    assert len(set(running.values_list("owner", flat=True))) == 2  # on two workers
    body = world.client.get(f"/lmkit/v1/jobs/{job_id}").json()
    assert body["status"] == "Running" and body["progress_total"] == 4 * 12  # the children's, summed
    killed = running.get(owner__contains=f":{_worker_pid(first)}:")
    clusters.kill(first)
    clusters.start("third")
    body = job_until(world.client, job_id, job_ended, worker=second, timeout=120)
    assert body["status"] == "Completed", body
    assert body["progress_done"] == body["progress_total"] == 4 * 12
    killed.refresh_from_db()
    assert killed.status == JobStatus.COMPLETED and killed.attempts == 2  # run again elsewhere
    assert [e["event"] for e in killed.history] == ["worker-lost"]
    runs = EvaluationRun.objects.filter(job_id=job_id)
    assert runs.count() == 4 and {r.batch_id for r in runs} == {Job.objects.get(pk=job_id).pk}
    assert sorted(r["label"] for r in body["result"]["runs"]) == [f"slow {i}" for i in range(4)]
    assert {r.metrics["mrr"] for r in runs} == {1.0}
    assert all(len(r.results.all()) == 12 for r in runs)
    assert EvaluationRun.objects.count() == 4  # stored once, whole


def _worker_pid(cluster) -> int:
    """The pid of the one worker process of a cluster (EVALSITE_WORKERS=1), from the Worker table."""

    def beating():  # the cluster spawns its worker process after it starts
        return Worker.objects.filter(pid__in=group_members(cluster.pid)).values_list("pid", flat=True).first()

    until(lambda: beating() is not None, "the cluster's worker to beat")
    return beating()


def test_a_spread_batch_holds_the_figures_of_the_serial_one(world, django_capture_on_commit_callbacks):
    """Inline (django-q2's sync mode): the two configurations as two child jobs, gathered, give the runs a
    serial evaluation of the same request gives, question by question."""
    handbook_entries(world.collection, 3)
    serial = {r.label: r for r in lucene_and_okapi_runs(world)}
    request = RetrievalRequest.from_job_input({"ks": [1, 3], "configs": LUCENE_AND_OKAPI})
    with django_capture_on_commit_callbacks(execute=True):
        job = batch_job_create(
            tenant=world.tenant, collections=[world.collection], request=request, actor="t"
        )
    job.refresh_from_db()
    assert job.status == JobStatus.COMPLETED, job.error
    assert Job.objects.filter(parent=job, kind=EvaluationJobKind.EVALUATE_CONFIG).count() == 2
    for run in EvaluationRun.objects.filter(job=job):
        twin = serial[run.label]
        assert (run.metrics, run.slices, run.golden_fingerprint) == (
            twin.metrics,
            twin.slices,
            twin.golden_fingerprint,
        )
        mine = list(run.results.order_by("position").values("entry_id", "metrics", "ranked_ids"))
        assert mine == list(twin.results.order_by("position").values("entry_id", "metrics", "ranked_ids"))


def test_a_cancel_reaches_the_children_and_a_failed_child_fails_its_parent(
    world, django_capture_on_commit_callbacks
):
    handbook_entries(world.collection, 2)
    request = RetrievalRequest.from_job_input(SEED_EVALUATE_BODY)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        job = batch_job_create(
            tenant=world.tenant, collections=[world.collection], request=request, actor="t"
        )
    with django_capture_on_commit_callbacks(execute=False) as spread:
        for callback in queued:
            callback()  # the parent runs: it plans and spreads, its children queued (not yet run)
    job.refresh_from_db()
    assert (job.status, job.stage, job.progress_total) == (JobStatus.RUNNING, "children", 4)
    assert job_cancel(job=job)
    assert set(Job.objects.filter(parent=job).values_list("status", flat=True)) == {JobStatus.CANCELLED}
    for callback in spread:
        callback()  # a child's task delivered after the cancel runs nothing
    assert not EvaluationRun.objects.exists()

    again = batch_job_create(tenant=world.tenant, collections=[world.collection], request=request, actor="t")
    with django_capture_on_commit_callbacks(execute=False) as spread:
        job_run(str(again.pk))
    first = Job.objects.filter(parent=again).order_by("position").first()
    failure = {"code": "internal-error", "message": "boom", "details": {}}
    Job.objects.filter(pk=first.pk).update(status=JobStatus.FAILED, error=failure)
    assert children_ended(again.pk) == JobStatus.FAILED
    again.refresh_from_db()
    assert again.status == JobStatus.FAILED and again.error["details"] == {"child_job_id": str(first.pk)}
    assert Job.objects.filter(parent=again, status=JobStatus.CANCELLED).count() == 1


def _running_trial_of(pid: int) -> bool:
    """Whether a trial of the study is running in that worker process (Optuna's tables: the trial's owner)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM optuna.trials t JOIN optuna.trial_user_attributes a USING (trial_id)"
            " WHERE t.state = 'RUNNING' AND a.key = 'owner' AND a.value_json LIKE %s",
            [f"%:{pid}:%"],
        )
        return cursor.fetchone() is not None


def _study_body(**extra) -> dict:
    return {
        "collection_id": "clapnq", "base": {"search_type": "FullText"},
        "space": {"bm25_k1": {"low": 0.4, "high": 2.0, "step": 0.4}, "bm25_b": {"low": 0.2, "high": 1.0, "step": 0.2}},
        "budget": {"trials": 16}, "seed": 7, "sampler": "grid", **extra,
    }  # fmt: skip


def _trials(study: Study) -> list[tuple]:
    return [(t["number"], t["values"], t["value"], t["pruned"]) for t in study.trials]


@postgres_only
def test_two_workers_run_one_studys_grid_at_once_with_the_serial_trials(world, clusters):
    beir_import(folder=CLAPNQ, tenant=world.tenant, collection_id="clapnq", actor="test")
    first, second = clusters.start("first"), clusters.start("second")
    _worker_pid(first), _worker_pid(second)  # both beat: the study spreads over two
    done = world.client.post(STUDIES, _study_body(), format="json").json()
    body = job_until(world.client, done["job_id"], job_ended, worker=first, timeout=180)
    assert body["status"] == "Completed", body
    children = list(Job.objects.filter(parent_id=done["job_id"]).order_by("position"))
    assert [c.kind for c in children] == [EvaluationJobKind.STUDY_TRIALS] * 2
    assert all(
        c.status == JobStatus.COMPLETED and c.result["trials"] >= 1 for c in children
    )  # both ran trials
    assert (
        children[0].started_at < children[1].finished_at and children[1].started_at < children[0].finished_at
    )
    assert len({c.owner for c in children}) == 2
    spread = Study.objects.get(pk=done["study_id"])

    raw = {k: v for k, v in _study_body().items() if k != "collection_id"}
    serial = study_create(tenant=world.tenant, collection=spread.collection, raw=raw, actor="t", queue=False)
    study_execute(serial, lambda done, total: None)
    serial.refresh_from_db()
    assert len(spread.trials) == 16 and _trials(spread) == _trials(serial)
    assert spread.best == serial.best
    assert spread.confirmation["winner"]["value"] == serial.confirmation["winner"]["value"]


@postgres_only
def test_a_killed_workers_trial_is_run_again_and_counted_once(world, clusters):
    beir_import(folder=CLAPNQ, tenant=world.tenant, collection_id="clapnq", actor="test")
    first, second = clusters.start("first"), clusters.start("second")
    _worker_pid(first), _worker_pid(second)
    # reranked trials: each takes long enough to be caught running
    body = _study_body(sampler="random", budget={"trials": 24}, space={"bm25_k1": {"low": 0.3, "high": 3.0}},
                       base={"search_type": "FullText", "rerank": "proximity"})  # fmt: skip
    done = world.client.post(STUDIES, body, format="json").json()
    children = Job.objects.filter(parent_id=done["job_id"])
    study = Study.objects.filter(pk=done["study_id"])
    until(lambda: children.filter(status=JobStatus.RUNNING).count() == 2 and len(study.get().trials) >= 4,
           "both workers running trials", clusters=clusters)  # fmt: skip
    pid = _worker_pid(first)
    until(lambda: _running_trial_of(pid), "a trial running in the first worker", clusters=clusters)
    clusters.kill(first)
    clusters.start("third")
    result = job_until(world.client, done["job_id"], job_ended, worker=second, timeout=180)
    assert result["status"] == "Completed", result
    trials = study.get().trials
    assert len(trials) == 24 and len({t["number"] for t in trials}) == 24  # the budget, each trial once
    assert result["result"]["retried"] == 1  # the killed worker's trial, failed as stale and run again
    assert sorted(c.attempts for c in children) == [1, 2]


@postgres_only
def test_a_cancel_stops_a_spread_study_on_every_worker(world, clusters):
    beir_import(folder=CLAPNQ, tenant=world.tenant, collection_id="clapnq", actor="test")
    first, second = clusters.start("first"), clusters.start("second")
    _worker_pid(first), _worker_pid(second)
    body = _study_body(
        sampler="random", budget={"trials": 2000}, space={"bm25_k1": {"low": 0.3, "high": 3.0}}
    )
    done = world.client.post(STUDIES, body, format="json").json()
    children = Job.objects.filter(parent_id=done["job_id"])
    study = Study.objects.filter(pk=done["study_id"])
    until(lambda: children.filter(status=JobStatus.RUNNING).count() == 2 and len(study.get().trials) >= 4,
           "both workers running trials", clusters=clusters)  # fmt: skip
    assert world.client.post(f"/lmkit/v1/jobs/{done['job_id']}/cancel").status_code == 200
    at_cancel = len(study.get().trials)
    assert set(children.values_list("status", flat=True)) == {JobStatus.CANCELLED}
    until(lambda: not Job.objects.filter(kind=EvaluationJobKind.STUDY_TRIALS, owner__gt="", status="Running")
           .exists() and _no_trial_running(), "both workers to stop", clusters=clusters)  # fmt: skip
    time.sleep(1.5)
    stopped = study.get()
    assert len(stopped.trials) == at_cancel < 2000  # not one trial written once the cancel was recorded
    assert stopped.best is None and stopped.confirmation is None
    assert Job.objects.get(pk=done["job_id"]).status == JobStatus.CANCELLED
    assert not EvaluationRun.objects.filter(job_id=done["job_id"]).exists()

    # the next study to spread removes the cancelled one's trials from Optuna's storage (the Study keeps them)
    small = world.client.post(STUDIES, _study_body(budget={"trials": 4}), format="json").json()
    assert (
        job_until(world.client, small["job_id"], job_ended, worker=second, timeout=120)["status"]
        == "Completed"
    )
    with connection.cursor() as cursor:
        cursor.execute("SELECT study_name FROM optuna.studies")
        assert cursor.fetchall() == []  # the small one removed as it ended, the cancelled one by its spread


def _no_trial_running() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM optuna.trials WHERE state = 'RUNNING'")
        return cursor.fetchone()[0] == 0
