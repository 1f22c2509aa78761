"""A second, web-only `manage.py serve` (EVALSITE_WORKER_CLUSTERS=0) on the same database with an index directory
of its own and the local index store (SQLite's default): it can never read what the first one's worker builds.
It says so (503 index-not-shared, naming EVALSITE_INDEX_STORE) instead of answering index-building ("retry
shortly") for ever, and its requests queue no further builds (they used to queue one each: 75 for one
collection). The first machine answers all along. Runs on the suite's backend (SQLite, or PostgreSQL + Redis)."""

from __future__ import annotations

import time

import httpx
import pytest

from evalsite.jobs.models import Job
from evaluation.models import EvaluationJobKind
from tests.worker_support import Serve

pytestmark = pytest.mark.django_db(transaction=True)

DOCUMENTS = {
    "refunds": "Customers get a full refund within 30 days of purchase. Refunds go to the original card.",
    "shipping": "Orders ship within two business days. Express shipping arrives the next day.",
}


def test_a_web_only_machine_that_cannot_see_the_built_index_says_why_and_queues_no_more_builds(
    world, manage_env, tmp_path
):
    machines: list[Serve] = []
    for name, clusters in (("one", "1"), ("two", "0")):
        (tmp_path / name).mkdir()
        env = {
            **manage_env,
            "EVALSITE_DATA_DIR": str(tmp_path / name),
            "EVALSITE_INDEX_DIR": str(tmp_path / name / "indexes"),
            "EVALSITE_INDEX_STORE": "local",
            "EVALSITE_WORKER_CLUSTERS": clusters,
            "EVALSITE_WORKERS": "1",
            "EVALSITE_JOB_HEARTBEAT_SECONDS": "1",
        }
        machines.append(Serve(env, tmp_path / f"{name}.log", processes=1, threads=4))
    headers = {"Authorization": f"Bearer {world.key}"}
    try:
        for machine in machines:
            machine.start()
        one, two = (httpx.Client(base_url=m.url + "/lmkit/v1", headers=headers, timeout=30) for m in machines)
        body = {"collection_id": "fresh", "query": "refund original card", "search_type": "FullText"}
        assert two.post("/collections", json={"collection_id": "fresh"}).status_code == 201
        added = two.post(
            "/collections/fresh/documents",
            json={"documents": [{"id": k, "text": v} for k, v in DOCUMENTS.items()]},
        )
        assert added.status_code in (200, 201, 202), added.text

        # The first machine's worker builds it; the first machine answers.
        deadline = time.monotonic() + 60
        while (answer := one.post("/search", json=body)).status_code != 200:
            assert answer.status_code == 503, answer.text
            assert time.monotonic() < deadline, answer.text
            time.sleep(0.2)
        assert answer.json()["results"][0]["document_id"] == "refunds"

        # The web-only machine: the build is done, but in a directory it does not read.
        answers = [two.post("/search", json=body) for _ in range(30)]
        time.sleep(2)  # a build queued by those requests would have been taken by the worker by now
        answers += [two.post("/search", json=body) for _ in range(10)]
        errors = [a.json()["error"] for a in answers]
        assert {a.status_code for a in answers} == {503}, [a.text for a in answers[:3]]
        assert {e["code"] for e in errors} == {"index-not-shared"}, errors[-1]
        assert "EVALSITE_INDEX_STORE" in errors[-1]["message"], errors[-1]
        assert not any("Retry-After" in a.headers for a in answers)  # retrying will not help
        versions = list(
            Job.objects.filter(collection__slug="fresh", kind=EvaluationJobKind.INDEX_BUILD).values_list(
                "input__content_version", flat=True
            )
        )
        assert len(versions) == len(set(versions)) == 1, f"builds queued: {sorted(versions)}"
        assert one.post("/search", json=body).status_code == 200
        one.close()
        two.close()
    finally:
        for machine in machines:
            machine.close()
    for name in ("one", "two"):
        log = (tmp_path / f"{name}.log").read_text()
        assert "Traceback" not in log, log[-3000:]
    assert "EVALSITE_INDEX_STORE" in (tmp_path / "two.log").read_text()  # the operator reads it too
