"""The production command as users run it (DEBUG off, gunicorn with several processes and threads, a worker
cluster): 30 first Hybrid searches at once on a fresh collection, then SIGTERM to its process group while a
job runs. (benchmarks/load_bench.py measures the same server under load.)"""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest

from evalsite.jobs.models import Job, JobStatus
from evaluation.models import EvaluationJobKind
from goldenset import services
from tests.conftest import add_documents
from tests.generation_support import scripted_writer, synthetic_corpus
from tests.llm_server import llm_server_fixture  # noqa: F401
from tests.worker_support import Serve, group_members

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def server(manage_env, llm_server, tmp_path):
    """`manage.py serve` on the test database: 2 web processes x 4 threads and one worker cluster."""
    llm_server.reply(r"Passage:", scripted_writer)
    llm_server.latency = 0.3
    env = {
        **manage_env,
        "EVALSITE_WORKERS": "1",
        "EVALSITE_JOB_HEARTBEAT_SECONDS": "1",
        "EVALSITE_LLM_BASE_URL": llm_server.url,
        "EVALSITE_LLM_MODEL": "scripted",
        "EVALSITE_LLM_CONCURRENCY": "1",
    }
    serve = Serve(env, tmp_path / "serve.log")
    try:
        yield serve.start()
    finally:
        serve.close()


def test_thirty_first_hybrid_searches_at_once_never_build_in_a_request_and_all_answer_once_it_is_built(
    world, server
):
    add_documents(world.collection, synthetic_corpus(200))  # its build job (BM25) ran here: sync mode
    world.collection.refresh_from_db()
    headers = {"Authorization": f"Bearer {world.key}"}
    barrier = threading.Barrier(30)
    first: list[tuple[int, dict, str | None]] = []
    final: list[tuple[int, dict]] = []
    lock = threading.Lock()

    def one(i: int) -> None:
        body = {
            "collection_id": "handbook",
            "query": f"manufacturer founded {1850 + i}",
            "search_type": "Hybrid",
        }
        with httpx.Client(base_url=server.url, headers=headers, timeout=120) as client:
            barrier.wait()
            response = client.post("/lmkit/v1/search", json=body)
            with lock:
                first.append((response.status_code, response.json(), response.headers.get("Retry-After")))
            deadline = time.monotonic() + 90
            while response.status_code == 503 and time.monotonic() < deadline:
                time.sleep(min(float(response.headers["Retry-After"]), 1.0))
                response = client.post("/lmkit/v1/search", json=body)
        with lock:
            final.append((response.status_code, response.json()))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(30)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # No request builds: the vectors Hybrid reads are not there yet, so the first searches answer 503
    # index-building with a Retry-After and the job that builds them (a search may come after the job finished).
    waiting = [(body, retry) for code, body, retry in first if code != 200]
    assert all(code in (200, 503) for code, _, _ in first), first[:3]
    assert waiting, "the first searches came before the vectors were built"
    assert all(body["error"]["code"] == "index-building" and retry == "5" for body, retry in waiting), (
        waiting[:3]
    )
    assert [code for code, _ in final] == [200] * 30, [b for c, b in final if c != 200][:3]
    infos = [body["index"] for _, body in final]
    assert sum(i["built"] for i in infos) == 0 and sum(i["parts_built"] for i in infos) == 0
    assert all(len(body["results"]) == 10 for _, body in final)
    # The worker built the vectors once, however many searches asked (a second job, if two searches queued one
    # at the same instant, finds them built).
    builds = Job.objects.filter(
        collection=world.collection,
        kind=EvaluationJobKind.INDEX_BUILD,
        input__content_version=world.collection.content_version,
    )
    assert {job.status for job in builds} == {JobStatus.COMPLETED}
    assert sum(job.result["parts_built"] for job in builds) == 2  # BM25 here, the vectors in the worker
    assert {str(job.pk) for job in builds} >= {body["error"]["details"]["job_id"] for body, _ in waiting}
    assert "Traceback" not in server.log.read_text()


def test_sigterm_to_the_process_group_stops_everything_within_10_s_and_requeues_the_job(world, server):
    collection = services.collection_create(tenant=world.tenant, slug="companies", actor="test")
    add_documents(collection, synthetic_corpus(30))
    headers = {"Authorization": f"Bearer {world.key}"}
    response = httpx.post(
        f"{server.url}/lmkit/v1/search/golden-set/generate",
        json={"collection_id": "companies", "count": 20, "seed": 3},
        headers=headers,
        timeout=30,
    )
    assert response.status_code == 202, response.text
    job_id = response.json()["job_id"]
    deadline = time.monotonic() + 60
    while Job.objects.get(pk=job_id).progress_done < 2:
        assert time.monotonic() < deadline, server.log.read_text()
        time.sleep(0.2)
    assert len(group_members(server.pid)) >= 1

    started = time.monotonic()
    os.killpg(server.pid, signal.SIGTERM)  # what a container stop or a supervisor sends
    server.process.wait(timeout=15)
    everything = [pid for pid in _descendant_groups(server) if group_members(pid)]
    took = time.monotonic() - started
    assert took < 10 and everything == [], (took, everything, server.log.read_text())
    assert server.process.returncode == 0
    job = Job.objects.get(pk=job_id)
    assert job.status == JobStatus.QUEUED, (job.status, server.log.read_text())
    assert [e["event"] for e in job.history] == ["interrupted"]
    log = server.log.read_text()
    assert "evalsite serve: SIGTERM; stopping" in log and "did not stop" not in log


def _raw(server, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """One request written as bytes (httpx refuses to send what is malformed), its answer read to the close."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, *fields = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (f.partition(":") for f in fields)}
    return int(status_line.split()[1]), headers, body


def test_what_the_http_server_refuses_before_any_view_is_answered_in_the_error_envelope(world, server):
    too_long = b"GET /lmkit/v1/search/golden-set?text=" + b"a" * 8200 + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    many = b"".join(b"X-F%d: 1\r\n" % i for i in range(120))
    cases = {
        "uri-too-long": (414, too_long),
        "headers-too-large": (431, b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n"),
        "bad-request": (400, b"GET /healthz HTTP/1.1\r\nHost: x\r\nBad Name: 1\r\n\r\n"),
    }
    for code, (status, request) in cases.items():
        got, headers, body = _raw(server, request)
        assert (got, headers["content-type"]) == (status, "application/json"), (code, got, headers, body)
        error = json.loads(body)["error"]
        assert error["code"] == code and error["message"] and "reason" in error["details"], error
        assert int(headers["content-length"]) == len(body)
    # A garbled request line too; and the server goes on answering.
    assert _raw(server, b"\x16\x03\x01 nonsense\r\n\r\n")[0] == 400
    answer = httpx.get(
        f"{server.url}/lmkit/v1/search/golden-set",
        params={"text": "a" * 8000},
        headers={"Authorization": f"Bearer {world.key}"},
    )
    assert answer.status_code == 200, answer.text
    assert "Traceback" not in server.log.read_text()


def _descendant_groups(server) -> list[int]:
    """The process groups of every process started with this server's PORT (serve's children lead groups of
    their own): none may be left once serve exits."""
    groups = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                environ = (entry / "environ").read_bytes()
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if f"PORT={server.port}\0".encode() in environ:
                groups.add(int(stat[stat.rindex(")") + 2 :].split()[2]))
    return sorted(groups)
