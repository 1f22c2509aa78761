"""A second, web-only `manage.py serve` (EVALSITE_WORKER_CLUSTERS=0) on the same database with an index directory
of its own and the local index store (SQLite's default): it can never read what the first one's worker builds.
It says so (503 index-not-shared, naming EVALSITE_INDEX_STORE) instead of answering index-building ("retry
shortly") for ever, and its requests queue no further builds (they used to queue one each: 75 for one
collection). The first machine answers all along; with the database index store, what the error advises, the
second serves what the first one's worker built. Runs on the suite's backend (SQLite, or PostgreSQL + Redis)."""

from __future__ import annotations

import contextlib
import time

import httpx
import pytest

from evalsite.jobs.models import Job, JobStatus
from evaluation.models import EvaluationJobKind
from tests.worker_support import Serve

pytestmark = pytest.mark.django_db(transaction=True)

DOCUMENTS = {
    "refunds": "Customers get a full refund within 30 days of purchase. Refunds go to the original card.",
    "shipping": "Orders ship within two business days. Express shipping arrives the next day.",
}
SEARCH = {"collection_id": "fresh", "query": "refund original card", "search_type": "FullText"}


@contextlib.contextmanager
def two_machines(manage_env, tmp_path, world, store: str):
    """Two `serve`s on the test database, each its own data and index directory: "one" with a worker cluster,
    "two" web-only; their API clients, once both are healthy. Their logs must hold no traceback."""
    machines: list[Serve] = []
    for name, clusters in (("one", "1"), ("two", "0")):
        (tmp_path / name).mkdir()
        env = {
            **manage_env,
            "EVALSITE_DATA_DIR": str(tmp_path / name),
            "EVALSITE_INDEX_DIR": str(tmp_path / name / "indexes"),
            "EVALSITE_INDEX_STORE": store,
            "EVALSITE_WORKER_CLUSTERS": clusters,
            "EVALSITE_WORKERS": "1",
            "EVALSITE_JOB_HEARTBEAT_SECONDS": "1",
        }
        machines.append(Serve(env, tmp_path / f"{name}.log", processes=1, threads=4))
    headers = {"Authorization": f"Bearer {world.key}"}
    clients = []
    try:
        for machine in machines:
            machine.start()
        clients = [httpx.Client(base_url=m.url + "/lmkit/v1", headers=headers, timeout=30) for m in machines]
        yield clients
    finally:
        for client in clients:
            client.close()
        for machine in machines:
            machine.close()
    for name in ("one", "two"):
        log = (tmp_path / f"{name}.log").read_text()
        assert "Traceback" not in log, log[-3000:]


def _add_and_wait(one: httpx.Client, two: httpx.Client) -> None:
    """A collection and its documents added through the web-only machine; the first machine's worker builds
    its index (the job is done: saved, and published with the database store), and the first machine answers
    from it."""
    assert two.post("/collections", json={"collection_id": "fresh"}).status_code == 201
    added = two.post(
        "/collections/fresh/documents",
        json={"documents": [{"id": k, "text": v} for k, v in DOCUMENTS.items()]},
    )
    assert added.status_code in (200, 201, 202), added.text
    deadline = time.monotonic() + 60
    while (answer := one.post("/search", json=SEARCH)).status_code != 200:
        assert answer.status_code == 503, answer.text
        assert time.monotonic() < deadline, answer.text
        time.sleep(0.2)
    assert answer.json()["results"][0]["document_id"] == "refunds"
    done = Job.objects.filter(
        collection__slug="fresh", kind=EvaluationJobKind.INDEX_BUILD, status=JobStatus.COMPLETED
    )
    while not done.exists():  # the first machine reads the saved file before its job has ended
        assert time.monotonic() < deadline, _builds()
        time.sleep(0.2)


def _builds() -> list[int]:
    return list(
        Job.objects.filter(collection__slug="fresh", kind=EvaluationJobKind.INDEX_BUILD).values_list(
            "input__content_version", flat=True
        )
    )


def test_a_web_only_machine_that_cannot_see_the_built_index_says_why_and_queues_no_more_builds(
    world, manage_env, tmp_path
):
    with two_machines(manage_env, tmp_path, world, "local") as (one, two):
        _add_and_wait(one, two)
        # The web-only machine: the build is done, but in a directory it does not read.
        answers = [two.post("/search", json=SEARCH) for _ in range(30)]
        time.sleep(2)  # a build queued by those requests would have been taken by the worker by now
        answers += [two.post("/search", json=SEARCH) for _ in range(10)]
        errors = [a.json()["error"] for a in answers]
        assert {a.status_code for a in answers} == {503}, [a.text for a in answers[:3]]
        assert {e["code"] for e in errors} == {"index-not-shared"}, errors[-1]
        assert "EVALSITE_INDEX_STORE" in errors[-1]["message"], errors[-1]
        assert not any("Retry-After" in a.headers for a in answers)  # retrying will not help
        versions = _builds()
        assert len(versions) == len(set(versions)) == 1, f"builds queued: {sorted(versions)}"
        assert one.post("/search", json=SEARCH).status_code == 200
    assert "EVALSITE_INDEX_STORE" in (tmp_path / "two.log").read_text()  # the operator reads it too


def test_with_the_database_index_store_the_web_only_machine_serves_what_the_worker_built(
    world, manage_env, tmp_path
):
    """What the error advises, on this suite's backend (SQLite included: servers sharing its file)."""
    with two_machines(manage_env, tmp_path, world, "database") as (one, two):
        _add_and_wait(one, two)
        answered = two.post("/search", json=SEARCH)  # fetched, then mapped
        assert answered.status_code == 200, answered.text
        assert answered.json()["results"][0]["document_id"] == "refunds"
        assert answered.json()["index"]["built"] == 0
        assert len(_builds()) == 1
