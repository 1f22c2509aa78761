"""POST /lmkit/v1/search/evaluate above the synchronous limit: 202 with a job, run by a worker (django-q2 in
sync mode in tests), polled at GET /lmkit/v1/jobs/{id}; its runs are listed with their job_id."""

from __future__ import annotations

import pytest
from django.test import override_settings

from evalsite.jobs.models import Job, JobStatus
from evaluation.models import EvaluationJobKind, EvaluationRun, QuestionResult
from tests.support import SEED_EVALUATE_BODY, handbook_entries

API = "/lmkit/v1"
URL = f"{API}/search/evaluate"
PERFECT = {
    "recall@1": 1.0, "recall@3": 1.0, "ndcg@1": 1.0, "ndcg@3": 1.0, "mrr": 1.0,
    # each question's one expected document first; the two after it nobody judged
    "judged@1": 1.0, "judged@3": 1 / 3, "ndcg_cond@1": 1.0, "ndcg_cond@3": 1.0, "bpref": 1.0, "map_cond": 1.0,
}  # fmt: skip


@pytest.fixture
def golden(world):
    return handbook_entries(world.collection, 2)


def start(world, callbacks_fixture, *, execute: bool, body=SEED_EVALUATE_BODY):
    """The evaluate call with a limit of one question x configuration, so it becomes a job."""
    with override_settings(EVALSITE_EVALUATE_SYNC_LIMIT=1), callbacks_fixture(execute=execute) as callbacks:
        response = world.client.post(URL, body, format="json")
    return response, callbacks


def test_a_big_evaluation_answers_202_and_the_job_completes_with_the_runs(
    world, golden, django_capture_on_commit_callbacks
):
    response, callbacks = start(world, django_capture_on_commit_callbacks, execute=True)
    assert response.status_code == 202, response.json()
    job_id = response.json()["job_id"]
    assert response.json() == {"job_id": job_id, "status": "Queued"}
    # enqueued once the request's transaction committed; then its two configurations as two child jobs, then its
    # gather (evalsite.jobs.fan_out)
    assert len(callbacks) == 3
    children = list(Job.objects.filter(parent_id=job_id).order_by("position"))
    assert [c.kind for c in children] == [EvaluationJobKind.EVALUATE_CONFIG] * 2
    assert [c.status for c in children] == [JobStatus.COMPLETED] * 2
    assert [c.progress_total for c in children] == [2, 2]

    job = world.client.get(f"{API}/jobs/{job_id}")
    assert job.status_code == 200
    body = job.json()
    result = body.pop("result")
    for stamp in ("created_at", "started_at", "finished_at"):
        assert body.pop(stamp) is not None
    assert body == {
        "job_id": job_id,
        "kind": EvaluationJobKind.EVALUATE.value,
        "status": "Completed",
        "progress": 1.0,
        "progress_done": 4,
        "progress_total": 4,
        "collection_id": "handbook",
        "error": None,
        "attempts": 2,  # its own work (planned, then spread), then its gather
        "history": [],
        "parent_id": None,
    }
    assert result.keys() == {"batch_id", "runs"}
    assert result["batch_id"] == job_id  # the parent job's id: a gather run twice stores one batch
    assert [r["label"] for r in result["runs"]] == ["fulltext baseline", "hybrid + rerank"]
    assert [r["metrics"] for r in result["runs"]] == [PERFECT, PERFECT]
    assert result["runs"][1]["config"]["rerank"] == "proximity"
    assert all(r["ks"] == [1, 3] and r["question_count"] == 2 for r in result["runs"])

    listed = world.client.get(f"{URL}/runs", {"batch_id": result["batch_id"]}).json()
    assert listed["count"] == 2
    assert {r["run_id"] for r in listed["results"]} == {r["run_id"] for r in result["runs"]}
    for run in listed["results"]:
        assert run["job_id"] == job_id
        assert run["batch_id"] == result["batch_id"]
        assert run["collection_ids"] == ["handbook"]
        summary = next(r for r in result["runs"] if r["run_id"] == run["run_id"])
        assert {k: run[k] for k in ("label", "config", "ks", "metrics", "question_count", "warnings")} == {
            k: summary[k] for k in ("label", "config", "ks", "metrics", "question_count", "warnings")
        }
    detail = world.client.get(f"{URL}/runs/{result['runs'][0]['run_id']}").json()
    assert detail["job_id"] == job_id
    assert [q["entry_key"] for q in detail["results"]] == ["q1", "q2"]
    assert QuestionResult.objects.filter(run__job_id=job_id).count() == 4


def test_the_job_gives_what_the_synchronous_call_gives(world, golden, django_capture_on_commit_callbacks):
    response, _ = start(world, django_capture_on_commit_callbacks, execute=True)
    from_job = Job.objects.get(pk=response.json()["job_id"]).result["runs"]
    inline = world.client.post(URL, SEED_EVALUATE_BODY, format="json")
    assert inline.status_code == 200
    keys = ("label", "config", "ks", "metrics", "question_count", "warnings")
    assert [{k: r[k] for k in keys} for r in from_job] == [
        {k: r[k] for k in keys} for r in inline.json()["runs"]
    ]
    assert EvaluationRun.objects.filter(job__isnull=False).count() == 2
    assert EvaluationRun.objects.filter(job__isnull=True).count() == 2


def test_configs_survive_the_trip_through_the_job(world, golden, django_capture_on_commit_callbacks):
    """What the request said (normalized) is what the worker runs: case, as_of, defaults, labels."""
    body = {
        "collection_id": "handbook",
        "ks": "1,3",
        "configs": [
            {"search_type": "hybrid", "fusion": "weighted", "fulltext_weight": "0.25", "top_k": "2"},
            {"search_type": "FULLTEXT", "as_of": "2030-01-01T10:00:00+02:00", "include_superseded": "true"},
        ],
    }
    response, _ = start(world, django_capture_on_commit_callbacks, execute=True, body=body)
    job = Job.objects.get(pk=response.json()["job_id"])
    assert job.status == JobStatus.COMPLETED, job.error
    configs = [r["config"] for r in job.result["runs"]]
    assert configs == [
        {
            "label": "Hybrid Weighted fulltext_weight:0.25 top_k:2",
            "search_type": "Hybrid",
            "fusion": "Weighted",
            "rerank": False,
            "bm25_variant": "lucene",
            "top_k": 2,
            "as_of": None,
            "include_superseded": False,
            "fulltext_weight": 0.25,
        },
        {
            "label": "FullText as_of:2030-01-01T08:00:00Z include_superseded",
            "search_type": "FullText",
            "fusion": "Rrf",
            "rerank": False,
            "bm25_variant": "lucene",
            "top_k": None,
            "as_of": "2030-01-01T10:00:00+02:00",
            "include_superseded": True,
            "fulltext_weight": 0.5,
        },
    ]
    assert [r["ks"] for r in job.result["runs"]] == [[1, 3], [1, 3]]


def test_nothing_runs_in_the_request_itself(world, golden, django_capture_on_commit_callbacks):
    response, callbacks = start(world, django_capture_on_commit_callbacks, execute=False)
    assert response.status_code == 202
    job = Job.objects.get(pk=response.json()["job_id"])
    assert (job.status, job.kind, job.tenant, job.collection) == (
        JobStatus.QUEUED,
        EvaluationJobKind.EVALUATE,
        world.tenant,
        world.collection,
    )
    assert not EvaluationRun.objects.exists()
    assert world.client.get(f"{API}/jobs/{job.pk}").json()["status"] == "Queued"
    # the worker picks it up later (and the child jobs it spreads its configurations over, queued as it commits)
    with django_capture_on_commit_callbacks(execute=True):
        for callback in callbacks:
            callback()
    assert world.client.get(f"{API}/jobs/{job.pk}").json()["status"] == "Completed"
    assert EvaluationRun.objects.filter(job=job).count() == 2


def test_a_job_cancelled_before_it_runs_makes_no_runs(world, golden, django_capture_on_commit_callbacks):
    response, callbacks = start(world, django_capture_on_commit_callbacks, execute=False)
    job_id = response.json()["job_id"]
    cancelled = world.client.post(f"{API}/jobs/{job_id}/cancel", {}, format="json")
    assert cancelled.status_code == 200, cancelled.json()
    for callback in callbacks:
        callback()
    assert world.client.get(f"{API}/jobs/{job_id}").json()["status"] == "Cancelled"
    assert not EvaluationRun.objects.exists()


def test_a_collection_deleted_before_the_job_runs_fails_it_readably(
    world, golden, django_capture_on_commit_callbacks
):
    response, callbacks = start(world, django_capture_on_commit_callbacks, execute=False)
    job_id = response.json()["job_id"]
    assert world.client.delete(f"{API}/collections/handbook").status_code in (200, 204)
    for callback in callbacks:
        callback()
    body = world.client.get(f"{API}/jobs/{job_id}").json()
    assert (body["status"], body["collection_id"], body["result"]) == ("Failed", None, None)
    assert body["error"] == {
        "code": "collection-gone",
        "message": "A collection was deleted before the evaluation ran.",
        "details": {},
    }
    assert not EvaluationRun.objects.exists()


def test_at_the_limit_the_call_is_answered_inline(world, golden):
    with override_settings(EVALSITE_EVALUATE_SYNC_LIMIT=4):
        response = world.client.post(URL, SEED_EVALUATE_BODY, format="json")
    assert response.status_code == 200
    assert not Job.objects.filter(kind=EvaluationJobKind.EVALUATE).exists()
    assert [run.job_id for run in EvaluationRun.objects.all()] == [None, None]  # one run per configuration
