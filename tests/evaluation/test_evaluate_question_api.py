"""POST /lmkit/v1/search/evaluate/question: one question under up to three configurations side by side. For a
golden question its ranking and metrics are the question's result in a stored run of the same configuration."""

from __future__ import annotations

import math
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from evalsite.tenancy.services import api_key_create
from evaluation.configs import parse_configs
from evaluation.judgments import pools
from evaluation.judgments.grades import live_rater
from evaluation.models import EvaluationRun, QuestionResult
from evaluation.retrieval.evaluate import evaluate_retrieval
from evaluation.retrieval.read_path import available_rerankers
from goldenset.models import Collection
from goldenset.services import EntryInput
from tests.conftest import api_client
from tests.schema_support import conforms, served_schema
from tests.support import add_entries, handbook_entries, refused

URL = "/lmkit/v1/search/evaluate/question"
EVALUATE = "/lmkit/v1/search/evaluate"
DATASETS = Path(__file__).resolve().parents[3] / "shared" / "datasets"
THREE = [
    {"label": "bm25"},
    {"label": "hybrid", "search_type": "Hybrid", "fusion": "Weighted", "fulltext_weight": 0.7},
    {"label": "reranked", "rerank": "proximity", "bm25_k1": 0.9, "bm25_b": 0.4},
]


@pytest.fixture
def golden(world):
    return handbook_entries(world.collection, unanswerable=True)


def _equal_to_run(asked: dict, result: QuestionResult) -> None:
    """A column of the workbench and a stored run's question: the same documents in the same order, the same
    scores, the same metrics to 1e-9."""
    ranked = [(r["document_id"], r["score"]) for r in asked["results"]]
    assert [doc for doc, _ in ranked] == [doc for doc, _ in result.ranked]
    assert all(math.isclose(a, b, abs_tol=1e-9) for (_, a), (_, b) in zip(ranked, result.ranked, strict=True))
    assert asked["metrics"].keys() == result.metrics.keys()
    for name, value in result.metrics.items():
        assert asked["metrics"][name] == pytest.approx(value, abs=1e-9), name


def test_every_question_of_a_stored_run_answers_as_the_run_did(world, golden):
    body = world.client.post(
        EVALUATE, {"collection_id": "handbook", "ks": [1, 3], "configs": THREE}, format="json"
    )
    assert body.status_code == 200, body.json()
    for run in EvaluationRun.objects.filter(batch_id=body.json()["batch_id"]):
        for result in QuestionResult.objects.filter(run=run).order_by("position"):
            response = world.client.post(
                URL,
                {"collection_id": "handbook", "entry_id": result.entry_key, "ks": [1, 3],
                 "configs": [c for c in THREE if c["label"] == run.label]},
                format="json",
            )  # fmt: skip
            assert response.status_code == 200, response.json()
            (column,) = response.json()["configs"]
            assert column["config"] == run.config
            _equal_to_run(column, result)


def test_three_columns_side_by_side_with_grades_ranks_elsewhere_and_explain(world, golden):
    schema = served_schema()
    response = world.client.post(
        URL, {"collection_id": "handbook", "entry_id": "q1", "configs": THREE, "ks": [3], "explain": True},
        format="json",
    )  # fmt: skip
    body = conforms(schema, response, "/lmkit/v1/search/evaluate/question", "post", 200)
    assert body["question"] == golden[0].question and body["scored"] is True
    bm25, hybrid, reranked = body["configs"]
    top = bm25["results"][0]
    assert top["document_id"] == "refunds" and top["grade"] == 1 and top["title"] is not None
    assert "<mark>" not in top["snippet"] and "refund" in top["snippet"].lower()
    assert set(top["ranks_elsewhere"]) == {"hybrid", "reranked"}
    assert top["ranks_elsewhere"]["hybrid"] == next(
        r["rank"] for r in hybrid["results"] if r["document_id"] == "refunds"
    )
    # FullText's explain: each matched term's contribution, adding up to the score the search gave.
    terms = [t for t in top["explain"]["terms"] if t["matched"]]
    assert terms and sum(t["contribution"] for t in terms) == pytest.approx(top["score"], rel=1e-12)
    assert top["explain"]["method"].startswith("BM25 (lucene")
    # Hybrid's: both first stages with their ranks, the weights, the fused score.
    stages = hybrid["results"][0]["explain"]["stages"]
    assert set(stages) == {"FullText", "Vector"} and stages["FullText"]["weight"] == 0.7
    assert hybrid["results"][0]["explain"]["score"] == pytest.approx(hybrid["results"][0]["score"])
    # A reranked column: the first stage's score and the reranker's, which is the score it ranks by.
    rerank = reranked["results"][0]["explain"]["rerank"]
    assert rerank["reranker"] == "proximity" and rerank["score"] == pytest.approx(
        reranked["results"][0]["score"]
    )
    assert "k1=0.9, b=0.4" in reranked["results"][0]["explain"]["method"]
    assert reranked["warnings"] and bm25["warnings"] == []


def test_a_query_not_in_the_golden_set_has_results_and_no_metrics(world, golden):
    response = world.client.post(
        URL, {"collection_id": "handbook", "question": "express shipping"}, format="json"
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["entry_id"] is None and body["scored"] is False
    (column,) = body["configs"]
    assert column["results"][0]["document_id"] == "shipping" and column["results"][0]["grade"] is None
    assert column["metrics"] is None


def test_people_s_grades_not_yet_applied_are_scored_apart(world, golden):
    """A rater's judgment moves `metrics_with_pending`, never the golden set's `metrics`."""
    add_entries(world.collection, EntryInput(question="refunds, shipping days and the warranty",
                                             expected_document_ids=["warranty"], key="broad"))  # fmt: skip
    before = world.client.post(
        URL, {"collection_id": "handbook", "entry_id": "broad", "ks": [3]}, format="json"
    ).json()
    (column,) = before["configs"]
    unjudged = next(r["document_id"] for r in column["results"] if r["grade"] is None)
    pools.judgments_record(
        collection=world.collection,
        rows=[pools.JudgmentRow(where="judgment", question_id="broad", document_id=unjudged, grade=3,
                                rater=live_rater("rita"), note="")],
        actor="test",
    )  # fmt: skip
    after = world.client.post(
        URL, {"collection_id": "handbook", "entry_id": "broad", "ks": [3]}, format="json"
    ).json()
    (moved,) = after["configs"]
    assert after["pending_judgments"] == 1
    assert moved["metrics"] == column["metrics"]
    assert moved["metrics_with_pending"]["judged@3"] > column["metrics"]["judged@3"]
    assert next(r for r in moved["results"] if r["document_id"] == unjudged)["pending_grade"] == 3


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"collection_id": "handbook"}, "entry_id"),
        ({"collection_id": "handbook", "entry_id": "q1", "question": "both"}, "entry_id"),
        (
            {"collection_id": "handbook", "question": "x", "configs": [{"label": str(i)} for i in range(4)]},
            "configs",
        ),
        ({"collection_id": "handbook", "question": "x", "explain": "maybe"}, "explain"),
        (
            {"collection_id": "handbook", "question": "x", "configs": [{"search_type": "Fuzzy"}]},
            "configs[0].search_type",
        ),
        (
            {"collection_id": "handbook", "question": "x", "configs": [{"preset": "nope"}]},
            "configs[0].preset",
        ),
        ({"collection_id": "handbook", "question": "x", "serach_type": "Vector"}, "serach_type"),
    ],
)
def test_bad_requests_name_the_field(world, golden, body, field):
    response = world.client.post(URL, body, format="json")
    assert 400 <= response.status_code < 500, response.json()
    assert field in response.json()["error"]["message"]


def test_another_tenant_s_collection_and_entries_are_not_found(world, golden):
    refused(world.other_client.post(URL, {"collection_id": "handbook", "entry_id": str(golden[0].pk)},
                                    format="json"), 404, "not-found")  # fmt: skip
    refused(
        world.client.post(URL, {"collection_id": "nope", "question": "x"}, format="json"), 404, "not-found"
    )


@pytest.mark.skipif(not DATASETS.exists(), reason=f"{DATASETS} is not here (it is in CI)")
def test_cranfield_every_question_equals_its_stored_run(db):
    """225 real questions, two configurations: the REST answer of each equals the stored run's question."""
    call_command("import_beir", str(DATASETS / "cranfield"), "--cluster", "ds", "--tenant", "ds",
                 "--collection", "cranfield", stdout=StringIO())  # fmt: skip
    collection = Collection.objects.get(slug="cranfield")
    _, key = api_key_create(tenant=collection.tenant, role="viewer", name="workbench", actor="test")
    client = api_client(key)
    configs = [{"label": "okapi", "bm25_variant": "okapi", "top_k": 20},
               {"label": "hybrid", "search_type": "Hybrid", "rrf_k": 20}]  # fmt: skip
    _, stored = evaluate_retrieval(
        tenant=collection.tenant, collections=[collection], ks=[5, 10],
        configs=parse_configs(configs, available_rerankers()),
    )  # fmt: skip
    runs = {r.label: r for r in stored}
    compared = 0
    for result in QuestionResult.objects.filter(run=runs["okapi"]).order_by("position"):
        response = client.post(
            URL, {"collection_id": "cranfield", "entry_id": result.entry_key, "ks": [5, 10], "configs": configs},
            format="json",
        )  # fmt: skip
        assert response.status_code == 200, response.json()
        okapi, hybrid = response.json()["configs"]
        _equal_to_run(okapi, result)
        _equal_to_run(hybrid, QuestionResult.objects.get(run=runs["hybrid"], entry_id=result.entry_id))
        compared += 1
    assert compared == 225


def reversed_handbook(query: str, top_k: int):
    """A python target: the handbook's documents in reverse id order, and an id the collection lacks."""
    return [("warranty", 3.0), ("shipping", 2.0), ("refunds", 1.0), ("not-ours", 0.5)][:top_k]


def failing(query: str, top_k: int):
    raise RuntimeError("the search cluster is down")


def test_a_target_column_beside_a_built_in_one_and_a_failing_target_named(world, golden, settings):
    module = "tests.evaluation.test_evaluate_question_api"
    settings.EVALSITE_PYTHON_TARGETS = [f"{module}.reversed_handbook", f"{module}.failing"]
    for name, function in (("mine", "reversed_handbook"), ("down", "failing")):
        created = world.client.post(
            "/lmkit/v1/targets", {"name": name, "kind": "python", "options": {"callable": f"{module}.{function}"}},
            format="json",
        )  # fmt: skip
        assert created.status_code == 201, created.json()
    body = world.client.post(
        URL,
        {"collection_id": "handbook", "entry_id": "q1", "ks": [1, 5],
         "configs": [{"label": "bm25"}, {"label": "mine", "target": "mine"}, {"label": "down", "target": "down"}]},
        format="json",
    ).json()  # fmt: skip
    bm25, mine, down = body["configs"]
    assert [r["document_id"] for r in mine["results"]] == ["warranty", "shipping", "refunds", "not-ours"]
    assert mine["results"][2]["grade"] == 1 and mine["results"][2]["ranks_elsewhere"]["bm25"] == 1
    assert (
        mine["results"][3] | {"snippet": ""} == mine["results"][3]
        and mine["results"][3]["in_collection"] is False
    )
    assert mine["results"][3]["title"] is None
    assert mine["metrics"]["mrr"] == pytest.approx(1 / 3) and mine["config"]["target_kind"] == "python"
    assert bm25["results"][0]["ranks_elsewhere"] == {"mine": 3, "down": None}
    assert down["results"] == [] and down["metrics"] is None and "the search cluster is down" in down["error"]
