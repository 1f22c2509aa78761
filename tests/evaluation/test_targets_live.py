"""An `lmkit` target pointed at a second evalsite process (`manage.py serve`, DEBUG off, on this test database)
scores exactly as the built-in FullText configuration does, in one batch beside it."""

from __future__ import annotations

import pytest

from evaluation.models import EvaluationRun
from goldenset.services import EntryInput, golden_entries_add
from tests.conftest import add_documents
from tests.generation_support import _CITIES, _PRODUCTS, synthetic_corpus
from tests.worker_support import Serve

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_lmkit_target_on_a_second_evalsite_equals_the_builtin_fulltext(world, manage_env, tmp_path):
    add_documents(world.collection, synthetic_corpus(200))
    # Questions that several companies answer (same product, same city): rankings with ties and misses.
    questions = {
        f"Which maker of {_PRODUCTS[i % len(_PRODUCTS)]} is in {_CITIES[i % len(_CITIES)]}?": i
        for i in reversed(range(0, 200, 3))
    }
    golden_entries_add(
        collection=world.collection,
        entries=[
            EntryInput(question=q, expected_document_ids=[f"company-{i:03d}"], key=f"c{i}")
            for q, i in questions.items()
        ],
        actor="test",
    )
    serve = Serve(manage_env, tmp_path / "serve.log", processes=1, threads=4).start()
    try:
        created = world.client.post(
            "/lmkit/v1/targets",
            {
                "name": "evalsite-b",
                "kind": "lmkit",
                "base_url": serve.url,
                "secret_headers": {"Authorization": f"Bearer {world.key}"},
                "concurrency": 4,
                "options": {"collection_id": "handbook", "cluster_id": "acme", "tenant_id": "search"},
            },
            format="json",
        )
        assert created.status_code == 201, created.json()
        response = world.client.post(
            "/lmkit/v1/search/evaluate",
            {
                "collection_id": "handbook",
                "ks": [1, 5, 10, 20],
                "configs": [
                    {"label": "builtin", "search_type": "FullText"},
                    {"label": "remote", "target": "evalsite-b"},
                ],
            },
            format="json",
        )
    finally:
        serve.close()
    assert response.status_code == 200, response.json()
    builtin, remote = response.json()["runs"]
    assert (
        remote["status"] == "complete"
        and remote["failed_questions"] == 0
        and remote["config"]["target_kind"] == "lmkit"
    )
    assert remote["metrics"].keys() == builtin["metrics"].keys()
    for name, value in builtin["metrics"].items():
        assert remote["metrics"][name] == pytest.approx(value, abs=1e-9), name
    assert 0 < builtin["metrics"]["mrr"] < 1  # rankings that are neither trivial nor empty
    runs = {r.label: r for r in EvaluationRun.objects.filter(batch_id=response.json()["batch_id"])}
    for mine, theirs in zip(
        runs["builtin"].results.order_by("position"), runs["remote"].results.order_by("position"), strict=True
    ):
        assert [d for d, _ in theirs.ranked] == [d for d, _ in mine.ranked]
        assert [s for _, s in theirs.ranked] == pytest.approx([s for _, s in mine.ranked], abs=1e-9)
        assert theirs.latency_ms > 0
