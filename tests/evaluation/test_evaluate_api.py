"""POST /lmkit/v1/search/evaluate and the runs endpoints, on a small collection with a known answer."""

from __future__ import annotations

import pytest

from evaluation.models import EvaluationRun, QuestionResult
from tests.support import SEED_EVALUATE_BODY, handbook_entries

URL = "/lmkit/v1/search/evaluate"


@pytest.fixture
def golden(world):
    return handbook_entries(world.collection, unanswerable=True)


def test_the_seed_shape_evaluates_and_persists_one_run_per_config(world, golden):
    response = world.client.post(URL, SEED_EVALUATE_BODY, format="json")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert [r["label"] for r in body["runs"]] == ["fulltext baseline", "hybrid + rerank"]
    baseline = body["runs"][0]
    assert baseline["ks"] == [1, 3]
    assert baseline["question_count"] == 3
    assert baseline["metrics"] == {
        "recall@1": 1.0, "recall@3": 1.0, "ndcg@1": 1.0, "ndcg@3": 1.0, "mrr": 1.0,
        "judged@1": 1.0, "judged@3": 1 / 3, "ndcg_cond@1": 1.0, "ndcg_cond@3": 1.0, "bpref": 1.0, "map_cond": 1.0,
    }  # fmt: skip
    assert baseline["warnings"] == ["1 golden entries have no expected documents and were not evaluated."]
    assert body["runs"][1]["config"]["rerank"] == "proximity"

    runs = EvaluationRun.objects.filter(batch_id=body["batch_id"]).order_by("created_at")
    assert runs.count() == 2
    run = runs.get(label="fulltext baseline")
    assert list(run.collections.values_list("slug", flat=True)) == ["handbook"]
    results = list(QuestionResult.objects.filter(run=run).order_by("position"))
    assert [r.entry_key for r in results] == ["q1", "q2", "q3"]
    assert results[0].ranked[0][0] == "refunds" and results[0].first_relevant_rank == 1
    assert results[0].missing_document_ids == []


def test_runs_are_listed_newest_first_and_shown_with_their_questions(world, golden):
    for label in ("first", "second"):
        world.client.post(
            URL, {"collection_id": "handbook", "ks": [1], "configs": [{"label": label}]}, format="json"
        )
    listed = world.client.get(f"{URL}/runs").json()
    assert [r["label"] for r in listed["results"]] == ["second", "first"]
    run_id = listed["results"][0]["run_id"]
    detail = world.client.get(f"{URL}/runs/{run_id}").json()
    assert [q["entry_key"] for q in detail["results"]] == ["q1", "q2", "q3"]
    assert detail["results"][0]["ranked"][0] == {
        "rank": 1,
        "document_id": "refunds",
        "score": detail["results"][0]["ranked"][0]["score"],
        "relevant": True,
    }
    assert world.other_client.get(f"{URL}/runs/{run_id}").status_code == 404
    assert world.other_client.get(f"{URL}/runs").json()["count"] == 0


def test_a_run_is_unchanged_after_its_golden_entries_are_edited_or_deleted(world, golden):
    body = world.client.post(URL, {"collection_id": "handbook", "ks": [1]}, format="json").json()
    run_id = body["runs"][0]["run_id"]
    before = world.client.get(f"{URL}/runs/{run_id}").json()
    world.client.patch(f"/lmkit/v1/search/golden-set/{golden[0].pk}", {"question": "Changed?"}, format="json")
    world.client.delete(f"/lmkit/v1/search/golden-set/{golden[1].pk}")
    assert world.client.get(f"{URL}/runs/{run_id}").json() == before
