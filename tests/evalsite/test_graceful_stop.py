"""A graceful stop under load, as a client sees it: `manage.py serve` (DEBUG off) stopped with SIGTERM while 30
clients send request after request on kept-alive connections. Every request either gets its answer or finds the
server gone (connection refused); none is reset after it was sent (a ReadError), as 43-45 of 50 clients saw before
the web workers took in their backlog and closed their listening socket at once (evalsite/gunicorn_worker.py)."""

from __future__ import annotations

import collections
import os
import signal
import threading
import time

import httpx
import pytest

from tests.worker_support import Serve

pytestmark = pytest.mark.django_db(transaction=True)


def test_clients_of_a_stopping_server_get_their_answer_or_a_refusal_never_a_reset(
    world, manage_env, tmp_path
):
    serve = Serve(manage_env, tmp_path / "serve.log", processes=2, threads=2).start()
    outcomes: collections.Counter[str] = collections.Counter()
    stopping = threading.Event()
    lock = threading.Lock()

    def client() -> None:
        headers = {"Authorization": f"Bearer {world.key}"}
        with httpx.Client(base_url=serve.url, headers=headers, timeout=20) as session:
            deadline = time.monotonic() + 40
            while time.monotonic() < deadline:
                try:
                    response = session.get("/lmkit/v1/collections")
                    outcome = f"HTTP {response.status_code}"
                except httpx.ConnectError:
                    outcome = "refused"
                except httpx.TransportError as exc:
                    outcome = type(exc).__name__
                if stopping.is_set():
                    with lock:
                        outcomes[outcome] += 1
                    if outcome != "HTTP 200":
                        return
                time.sleep(0.02)

    threads = [threading.Thread(target=client) for _ in range(30)]
    try:
        for thread in threads:
            thread.start()
        time.sleep(2)
        stopping.set()
        os.kill(serve.pid, signal.SIGTERM)
        for thread in threads:
            thread.join(60)
        assert serve.process is not None
        assert serve.process.wait(timeout=20) == 0
    finally:
        serve.close()
    assert set(outcomes) <= {"HTTP 200", "refused"}, dict(outcomes)
    assert outcomes["refused"] == 30  # every client saw the server go, cleanly
