"""Bad input on POST /lmkit/v1/search/evaluate: each answers its 4xx in the one envelope, naming the offending
field, never a 500, and creates no run, no result and no job."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.test import override_settings

from evaluation.configs import CONFIG_KEYS, MAX_CONFIGS
from evaluation.models import EvaluationRun, QuestionResult
from goldenset import services
from tests.conftest import add_documents
from tests.support import add_entries, db_state, handbook_entries

URL = "/lmkit/v1/search/evaluate"


@pytest.fixture
def golden(world):
    """handbook: two answerable entries; empty: documents, no entries; notes: only an entry without answers;
    the rival: a collection of its own."""
    created = handbook_entries(world.collection, 2)
    empty = services.collection_create(tenant=world.tenant, slug="empty", actor="test")
    add_documents(empty, {"note": "Nothing to ask about."})
    notes = services.collection_create(tenant=world.tenant, slug="notes", actor="test")
    add_documents(notes, {"memo": "A memo."})
    add_entries(notes, "Who wrote the memo?")
    services.collection_create(tenant=world.other_tenant, slug="rival-only", actor="test")
    return created


@dataclass
class Bad:
    body: Any
    status: int
    code: str
    message: str
    details: dict
    client: str = "client"


def config(**fields) -> dict:
    return {"collection_id": "handbook", "ks": [1, 5], "configs": [{"label": "a"}, {"label": "b", **fields}]}


def ks(value) -> dict:
    return {"collection_id": "handbook", "ks": value}


def invalid_ks(field: str, message: str) -> tuple[str, str, dict]:
    return "invalid-ks", f"{field}: {message}", {"field": field}


SEARCH_TYPES = ["FullText", "Vector", "Hybrid"]
CONFIG_KEYS_SORTED = sorted(CONFIG_KEYS)
TOP_LEVEL_KEYS = [
    "cluster_id", "collection_id", "collection_ids", "configs", "ks", "origin", "reviewed_only",
    "skip_unreviewed_generated", "tags", "tenant_id",
]  # fmt: skip

CASES = {
    # --- configurations: each bad value by its code and field ----------------------------------------------
    "unknown-search-type": Bad(
        config(search_type="Semantic"),
        400,
        "unknown-search-type",
        "configs[1].search_type: expected one of FullText, Vector, Hybrid, got 'Semantic'.",
        {"field": "configs[1].search_type", "allowed": SEARCH_TYPES},
    ),
    "search-type-a-number": Bad(
        config(search_type=1),
        400,
        "unknown-search-type",
        "configs[1].search_type: expected one of FullText, Vector, Hybrid, got 1.",
        {"field": "configs[1].search_type", "allowed": SEARCH_TYPES},
    ),
    "unknown-fusion": Bad(
        config(search_type="Hybrid", fusion="CombSUM"),
        400,
        "unknown-fusion",
        "configs[1].fusion: expected one of Rrf, Weighted, got 'CombSUM'.",
        {"field": "configs[1].fusion", "allowed": ["Rrf", "Weighted"]},
    ),
    "unknown-variant": Bad(
        config(bm25_variant="bm25l"),
        400,
        "unknown-variant",
        "configs[1].bm25_variant: expected one of lucene, okapi, got 'bm25l'.",
        {"field": "configs[1].bm25_variant", "allowed": ["lucene", "okapi"]},
    ),
    "as-of-not-a-date": Bad(
        config(as_of="last Tuesday"),
        400,
        "invalid-date",
        "configs[1].as_of: expected an ISO 8601 date or datetime, got 'last Tuesday'.",
        {"field": "configs[1].as_of"},
    ),
    "as-of-impossible-date": Bad(
        config(as_of="2024-02-30"),
        400,
        "invalid-date",
        "configs[1].as_of: expected an ISO 8601 date or datetime, got '2024-02-30'.",
        {"field": "configs[1].as_of"},
    ),
    "as-of-a-number": Bad(
        config(as_of=20240101),
        400,
        "invalid-date",
        "configs[1].as_of: expected an ISO 8601 date or datetime, got 20240101.",
        {"field": "configs[1].as_of"},
    ),
    "rerank-unavailable": Bad(
        config(rerank="cross-encoder"),
        400,
        "reranker-unavailable",
        "configs[1].rerank: reranker 'cross-encoder' is not available here; available: proximity.",
        {"field": "configs[1].rerank", "available": ["proximity"]},
    ),
    "rerank-a-number": Bad(
        config(rerank=1),
        400,
        "reranker-unavailable",
        "configs[1].rerank: reranker 1 is not available here; available: proximity.",
        {"field": "configs[1].rerank", "available": ["proximity"]},
    ),
    "unknown-config-key": Bad(
        config(rerank_model="bge"),
        400,
        "validation-error",
        "configs[1].rerank_model: unknown field.",
        {"field": "configs[1].rerank_model", "allowed": CONFIG_KEYS_SORTED},
    ),
    "top-k-zero": Bad(
        config(top_k=0),
        400,
        "invalid-number",
        "configs[1].top_k: expected an integer from 1 to 1000, got 0.",
        {"field": "configs[1].top_k"},
    ),
    "include-superseded-maybe": Bad(
        config(include_superseded="maybe"),
        400,
        "validation-error",
        "configs[1].include_superseded: expected true or false, got 'maybe'.",
        {"field": "configs[1].include_superseded"},
    ),
    "fulltext-weight-above-one": Bad(
        config(search_type="Hybrid", fusion="Weighted", fulltext_weight=2),
        400,
        "validation-error",
        "configs[1].fulltext_weight: expected a number from 0 to 1.",
        {"field": "configs[1].fulltext_weight"},
    ),
    "label-a-number": Bad(
        config(label=2),
        400,
        "validation-error",
        "configs[1].label: expected a string of at most 200 characters.",
        {"field": "configs[1].label"},
    ),
    "config-not-an-object": Bad(
        {"collection_id": "handbook", "configs": [{"label": "a"}, "Hybrid"]},
        400,
        "validation-error",
        "configs[1]: expected an object.",
        {"field": "configs[1]"},
    ),
    "configs-a-string": Bad(
        {"collection_id": "handbook", "configs": "FullText"},
        400,
        "validation-error",
        "configs: expected a non-empty list of configurations.",
        {"field": "configs"},
    ),
    "configs-an-object": Bad(
        {"collection_id": "handbook", "configs": {"search_type": "FullText"}},
        400,
        "validation-error",
        "configs: expected a non-empty list of configurations.",
        {"field": "configs"},
    ),
    "configs-empty": Bad(
        {"collection_id": "handbook", "configs": []},
        400,
        "validation-error",
        "configs: expected a non-empty list of configurations.",
        {"field": "configs"},
    ),
    "too-many-configs": Bad(
        {"collection_id": "handbook", "configs": [{"label": f"c{i}"} for i in range(MAX_CONFIGS + 1)]},
        400,
        "too-many-configs",
        f"configs: at most {MAX_CONFIGS} configurations per call.",
        {"field": "configs"},
    ),
    "duplicate-labels": Bad(
        {
            "collection_id": "handbook",
            "configs": [{"label": "x"}, {"label": "y"}, {"label": "x", "rerank": True}],
        },
        400,
        "duplicate-label",
        "configs[2].label: label 'x' repeats configs[0]; labels name runs, so each must differ.",
        {"field": "configs[2].label"},
    ),
    "duplicate-default-labels": Bad(
        {"collection_id": "handbook", "configs": [{"search_type": "Vector"}, {"search_type": "vector"}]},
        400,
        "duplicate-label",
        "configs[1].label: label 'Vector' repeats configs[0]; labels name runs, so each must differ.",
        {"field": "configs[1].label"},
    ),
    # --- ks ------------------------------------------------------------------------------------------------
    "ks-zero": Bad(ks([1, 0]), 400, *invalid_ks("ks[1]", "expected an integer from 1 to 1000, got 0.")),
    "ks-x": Bad(ks(["x"]), 400, *invalid_ks("ks[0]", "expected a positive integer, got 'x'.")),
    "ks-string-x": Bad(ks("5,x"), 400, *invalid_ks("ks[1]", "expected a positive integer, got 'x'.")),
    "ks-empty": Bad(ks([]), 400, *invalid_ks("ks", "expected a non-empty list of positive integers.")),
    "ks-negative": Bad(ks([-3]), 400, *invalid_ks("ks[0]", "expected an integer from 1 to 1000, got -3.")),
    "ks-negative-string": Bad(
        ks(["-3"]), 400, *invalid_ks("ks[0]", "expected a positive integer, got '-3'.")
    ),
    "ks-fraction": Bad(ks([2.5]), 400, *invalid_ks("ks[0]", "expected an integer from 1 to 1000, got 2.5.")),
    "ks-true": Bad(ks([True]), 400, *invalid_ks("ks[0]", "expected a positive integer, got True.")),
    "ks-a-number": Bad(ks(10), 400, *invalid_ks("ks", "expected a non-empty list of positive integers.")),
    "ks-too-deep": Bad(
        ks([1001]), 400, *invalid_ks("ks[0]", "expected an integer from 1 to 1000, got 1001.")
    ),
    "ks-superscript": Bad(ks(["²"]), 400, *invalid_ks("ks[0]", "expected a positive integer, got '²'.")),
    # --- collections and the body --------------------------------------------------------------------------
    "empty-golden-set": Bad(
        {"collection_id": "empty"},
        400,
        "empty-golden-set",
        "No golden entries with expected documents in empty.",
        {"collection_ids": ["empty"]},
    ),
    "golden-set-without-expected-documents": Bad(
        {"collection_ids": ["notes", "empty"]},
        400,
        "empty-golden-set",
        "No golden entries with expected documents in notes, empty.",
        {"collection_ids": ["notes", "empty"]},
    ),
    "another-tenants-collection": Bad(
        {"collection_id": "rival-only"},
        404,
        "not-found",
        "Collection rival-only not found.",
        {"resource": "Collection", "id": "rival-only"},
    ),
    "one-of-the-collections-another-tenants": Bad(
        {"collection_ids": ["handbook", "rival-only"]},
        404,
        "not-found",
        "Collection rival-only not found.",
        {"resource": "Collection", "id": "rival-only"},
    ),
    "unknown-collection": Bad(
        {"collection_id": "nope"},
        404,
        "not-found",
        "Collection nope not found.",
        {"resource": "Collection", "id": "nope"},
    ),
    "the-rival-names-this-tenants-collection": Bad(
        {"collection_id": "empty"},
        404,
        "not-found",
        "Collection empty not found.",
        {"resource": "Collection", "id": "empty"},
        client="other_client",
    ),
    "the-rival-names-this-tenant": Bad(
        {"tenant_id": "search", "collection_id": "handbook"},
        404,
        "not-found",
        "Tenant search not found.",
        {"resource": "Tenant", "id": "search"},
        client="other_client",
    ),
    "no-collection": Bad(
        {"ks": [1]},
        400,
        "validation-error",
        "collection_id: name a collection (collection_id or collection_ids).",
        {"field": "collection_id"},
    ),
    "blank-collection": Bad(
        {"collection_id": "", "collection_ids": []},
        400,
        "validation-error",
        "collection_id: name a collection (collection_id or collection_ids).",
        {"field": "collection_id"},
    ),
    "collection-ids-a-string": Bad(
        {"collection_ids": "handbook"},
        400,
        "validation-error",
        'collection_ids: Expected a list of items but got type "str".',
        {"fields": {"collection_ids": ['Expected a list of items but got type "str".']}},
    ),
    "unknown-top-level-field": Bad(
        {"collection_id": "handbook", "config": [{"search_type": "Vector"}]},
        400,
        "validation-error",
        "config: unknown field.",
        {"field": "config", "allowed": TOP_LEVEL_KEYS},
    ),
    "body-a-list": Bad(
        [{"collection_id": "handbook"}],
        400,
        "validation-error",
        "non_field_errors: Invalid data. Expected a dictionary, but got list.",
        {"fields": {"non_field_errors": ["Invalid data. Expected a dictionary, but got list."]}},
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_it_rejects_bad_input_with_the_envelope_and_creates_nothing(world, golden, case):
    bad = CASES[case]
    before = db_state()
    response = getattr(world, bad.client).post(URL, bad.body, format="json")
    assert response.status_code == bad.status, response.content
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"error": {"code": bad.code, "message": bad.message, "details": bad.details}}
    assert db_state() == before
    assert not EvaluationRun.objects.exists() and not QuestionResult.objects.exists()


def test_the_same_bad_input_is_refused_before_a_job_is_made(world, golden):
    """Above the synchronous limit the call becomes a job, but only once the request has been read."""
    before = db_state()
    with override_settings(EVALSITE_EVALUATE_SYNC_LIMIT=1):
        response = world.client.post(URL, config(search_type="Semantic"), format="json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "unknown-search-type"
    assert db_state() == before


def test_null_ks_and_configs_mean_the_defaults(world, golden):
    response = world.client.post(
        URL, {"collection_id": "handbook", "ks": None, "configs": None}, format="json"
    )
    assert response.status_code == 200, response.json()
    (run,) = response.json()["runs"]
    assert (run["label"], run["ks"]) == ("FullText", [1, 5, 10])


def test_a_golden_entry_naming_a_deleted_document_is_a_warning_not_a_crash(world, golden):
    services.document_delete(document=world.collection.documents.get(external_id="shipping"), actor="test")
    response = world.client.post(URL, {"collection_id": "handbook", "ks": [1, 3]}, format="json")
    assert response.status_code == 200, response.json()
    (run,) = response.json()["runs"]
    warning = (
        "1 golden entries of handbook expect documents that are no longer in the collection "
        "(they count as relevant and not retrieved): q2: shipping"
    )
    assert run["warnings"] == [warning]
    assert run["question_count"] == 2
    assert run["metrics"] == {
        "recall@1": 0.5, "recall@3": 0.5, "ndcg@1": 0.5, "ndcg@3": 0.5, "mrr": 0.5,
        # q1's top 1 is judged (its expected document), q2's top 3 hold nothing judged (its document is gone).
        "judged@1": 0.5, "judged@3": 1 / 6, "ndcg_cond@1": 0.5, "ndcg_cond@3": 0.5, "bpref": 0.5, "map_cond": 0.5,
    }  # fmt: skip

    detail = world.client.get(f"{URL}/runs/{run['run_id']}").json()
    assert detail["warnings"] == [warning]
    by_key = {q["entry_key"]: q for q in detail["results"]}
    assert by_key["q2"]["missing_document_ids"] == ["shipping"]
    assert by_key["q2"]["first_relevant_rank"] is None
    assert "shipping" not in [r["document_id"] for r in by_key["q2"]["ranked"]]
    assert by_key["q1"]["first_relevant_rank"] == 1
