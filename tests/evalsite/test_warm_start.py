"""A freshly started server answers its first searches from indexes warmed before its web processes forked
(evaluation.warmup, run by gunicorn's master): no process loads an index, imports its views or compiles its
templates on a user's request. `manage.py serve` as users run it, DEBUG off, two web processes."""

from __future__ import annotations

import re
import threading

import httpx
import pytest

from evaluation.retrieval import indexes
from tests.worker_support import Serve

pytestmark = pytest.mark.django_db(transaction=True)


def first_searches(serve: Serve, key: str, count: int) -> list[dict]:
    found: list[dict] = []
    lock = threading.Lock()

    def one(i: int) -> None:
        body = {"collection_id": "handbook", "query": f"refund card {i}", "search_type": "FullText"}
        response = httpx.post(
            f"{serve.url}/lmkit/v1/search", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=60
        )
        assert response.status_code == 200, response.text
        with lock:
            found.append(response.json()["index"])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return found


@pytest.mark.parametrize("warm", [True, False])
def test_the_first_searches_of_every_web_process_find_the_index_already_in_memory(
    world, manage_env, tmp_path, warm
):
    indexes.get_index(world.collection, build=True)  # saved where the server reads it (sync mode built it)
    env = {**manage_env, "EVALSITE_WARM_COLLECTIONS": "20" if warm else "0", "EVALSITE_WORKER_CLUSTERS": "0"}
    serve = Serve(env, tmp_path / "serve.log", processes=2, threads=2)
    try:
        serve.start(healthy=False)
        found = first_searches(serve, world.key, 8)
    finally:
        serve.close()
    loaded = sum(index["loaded"] for index in found)
    assert all(index["built"] == 0 for index in found)
    if warm:
        assert loaded == 0, found  # every process had it from the master
        assert re.search(r"warmed [1-9]\d* collection index", (tmp_path / "serve.log").read_text())
    else:
        assert loaded >= 1, found  # the check above can fail: without warming a process loads it itself
