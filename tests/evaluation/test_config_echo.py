"""How a configuration's `rerank` is echoed: false when no reranker ran (as a client turns it off), never null;
runs stored with null before keep reading back as they were stored."""

from __future__ import annotations

import pytest

from evaluation.models import EvaluationRun
from goldenset.services import EntryInput, golden_entries_add

EVALUATE = "/lmkit/v1/search/evaluate"
TENANT = {"cluster_id": "acme", "tenant_id": "search", "collection_id": "handbook"}


@pytest.fixture
def golden(world):
    golden_entries_add(
        collection=world.collection,
        entries=[EntryInput(question="How long is the refund window?", expected_document_ids=["refunds"])],
        actor="test",
    )


@pytest.mark.parametrize("sent", [False, "false", None, "absent"])
def test_evaluate_echoes_rerank_off_as_false(world, golden, sent):
    """`rerank: false` (or null, or no rerank at all) comes back as false, in the response and the stored run."""
    config = {"label": "plain", "search_type": "FullText"}
    if sent != "absent":
        config["rerank"] = sent
    response = world.client.post(EVALUATE, {**TENANT, "ks": [1], "configs": [config]}, format="json")
    assert response.status_code == 200, response.json()
    (run,) = response.json()["runs"]
    assert run["config"]["rerank"] is False
    assert EvaluationRun.objects.get(pk=run["run_id"]).config["rerank"] is False
    detail = world.client.get(f"{EVALUATE}/runs/{run['run_id']}").json()
    assert detail["config"]["rerank"] is False


def test_evaluate_echoes_the_reranker_that_ran(world, golden):
    config = {"label": "reranked", "search_type": "FullText", "rerank": True}
    response = world.client.post(EVALUATE, {**TENANT, "ks": [1], "configs": [config]}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["runs"][0]["config"]["rerank"] == "proximity"


def test_search_echoes_rerank_off_as_false(world):
    response = world.client.post(
        "/lmkit/v1/search", {**TENANT, "query": "refund", "rerank": False}, format="json"
    )
    assert response.status_code == 200, response.json()
    assert response.json()["config"]["rerank"] is False


def test_a_run_stored_with_rerank_null_still_reads(world, golden):
    """Runs written before kept null: the API and the run's page read them unchanged."""
    response = world.client.post(
        EVALUATE, {**TENANT, "ks": [1], "configs": [{"label": "old"}]}, format="json"
    )
    run_id = response.json()["runs"][0]["run_id"]
    run = EvaluationRun.objects.get(pk=run_id)
    run.config = {**run.config, "rerank": None}
    run.save(update_fields=["config"])
    detail = world.client.get(f"{EVALUATE}/runs/{run_id}")
    assert detail.status_code == 200
    assert detail.json()["config"]["rerank"] is None
