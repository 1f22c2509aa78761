"""Several machines as docs/operations.md prints them: two `manage.py serve` on one PostgreSQL and one Redis, each with
its own data and index directories, the second web-only (EVALSITE_WORKER_CLUSTERS=0). Searches answer on both
soon after the first document, a document added through either is searchable through both within seconds, and
each collection version is built once, by the one worker, whoever asks."""

from __future__ import annotations

import os
import time

import httpx
import pytest
from django.db import connection

from evalsite.jobs.models import Job
from evaluation.models import EvaluationJobKind
from tests.worker_support import Serve

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql" or not os.environ.get("EVALSITE_REDIS_URL"),
        reason="several machines share PostgreSQL and Redis",
    ),
]

DOCUMENTS = {
    "refunds": "Customers get a full refund within 30 days of purchase. Refunds go to the original card.",
    "shipping": "Orders ship within two business days. Express shipping arrives the next day.",
    "warranty": "Every device carries a two-year warranty covering manufacturing defects.",
}


def _until(deadline_s: float, check) -> tuple[bool, float]:
    started = time.monotonic()
    while True:
        if check():
            return True, time.monotonic() - started
        if time.monotonic() - started > deadline_s:
            return False, time.monotonic() - started
        time.sleep(0.1)


def test_two_machines_serve_every_collection_and_build_each_version_once(world, manage_env, tmp_path):
    machines: list[Serve] = []
    clients: list[httpx.Client] = []
    for name, clusters in (("one", "1"), ("two", "0")):
        (tmp_path / name).mkdir()
        env = {
            **manage_env,
            "EVALSITE_DATA_DIR": str(tmp_path / name),
            "EVALSITE_INDEX_DIR": str(tmp_path / name / "indexes"),
            "EVALSITE_WORKER_CLUSTERS": clusters,
            "EVALSITE_WORKERS": "1",
            "EVALSITE_JOB_HEARTBEAT_SECONDS": "1",
        }
        machines.append(Serve(env, tmp_path / f"{name}.log", processes=1, threads=4))
    try:
        for machine in machines:
            machine.start()
        clients.extend(
            httpx.Client(
                base_url=m.url + "/lmkit/v1", headers={"Authorization": f"Bearer {world.key}"}, timeout=30
            )
            for m in machines
        )
        one, two = clients

        def finds(client: httpx.Client, query: str, document: str) -> bool:
            body = {"collection_id": "fresh", "query": query, "search_type": "FullText"}
            response = client.post("/search", json=body)
            assert response.status_code in (200, 503), response.text
            if response.status_code == 503:
                assert response.json()["error"]["code"] == "index-building"
                return False
            return any(r["document_id"] == document for r in response.json()["results"])

        # A new collection and its first documents, through the web-only machine: both answer within 30 s.
        assert two.post("/collections", json={"collection_id": "fresh"}).status_code == 201
        created = two.post(
            "/collections/fresh/documents",
            json={"documents": [{"id": k, "text": v} for k, v in DOCUMENTS.items()]},
        )
        assert created.status_code in (200, 201, 202), created.text
        for client in (two, one):
            ok, took = _until(30, lambda c=client: finds(c, "refund original card", "refunds"))
            assert ok, f"not searchable after {took:.1f} s"

        # A document added through either machine is searchable through both within 5 s.
        for n, (adder, _) in enumerate(((two, one), (one, two))):
            doc = f"returns-{n}"
            text = f"Returned parcels number {n} reach the depot{n} and are refunded in full."
            added = adder.post(
                "/collections/fresh/documents", json={"documents": [{"id": doc, "text": text}]}
            )
            assert added.status_code in (200, 201), added.text
            for client in (one, two):
                ok, took = _until(5, lambda c=client, d=doc, q=f"depot{n}": finds(c, q, d))
                assert ok, f"{doc} not searchable after {took:.1f} s"

        versions = list(
            Job.objects.filter(collection__slug="fresh", kind=EvaluationJobKind.INDEX_BUILD).values_list(
                "input__content_version", flat=True
            )
        )
        assert len(versions) == len(set(versions)), f"a version built more than once: {sorted(versions)}"
        assert len(versions) <= 3
    finally:
        for client in clients:
            client.close()
        for machine in machines:
            machine.close()
    for name in ("one", "two"):
        log = (tmp_path / f"{name}.log").read_text()
        assert "Traceback" not in log, log[-3000:]
