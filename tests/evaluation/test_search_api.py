"""POST /lmkit/v1/search: ranked documents (each with its best page) from one or several collections."""

from __future__ import annotations

import pytest

from goldenset import services
from goldenset.models import Collection
from tests.conftest import add_documents

URL = "/lmkit/v1/search"
REFUNDS = "Customers get a full refund within 30 days of purchase.\n\nRefunds go to the original card."
SHIPPING = "Orders ship within two business days. Express shipping arrives the next day."
WARRANTY = "Every device carries a two-year warranty covering manufacturing defects."
DEFAULT_CONFIG = {
    "label": "FullText",
    "search_type": "FullText",
    "fusion": "Rrf",
    "rerank": False,
    "bm25_variant": "lucene",
    "top_k": None,
    "as_of": None,
    "include_superseded": False,
    "fulltext_weight": 0.5,
}


@pytest.fixture
def policies(world) -> Collection:
    collection = services.collection_create(
        tenant=world.tenant, slug="policies", name="Policies", actor="test"
    )
    add_documents(
        collection,
        {
            "returns": "A refund for returned items needs the receipt. Refund requests take a week.",
            "privacy": "We never sell personal data.",
        },
    )
    return collection


def search(client, **body):
    return client.post(URL, body, format="json")


def result(rank, document_id, text, score, collection_id="handbook", page_number=1, title=None) -> dict:
    return {
        "rank": rank,
        "collection_id": collection_id,
        "document_id": document_id,
        "title": title or document_id.title(),
        "score": score,
        "page_number": page_number,
        "text": text,
    }


def scores_of(body) -> list[float]:
    scores = [r["score"] for r in body["results"]]
    assert all(isinstance(s, float) for s in scores)
    return scores


def test_it_returns_ranked_documents_with_their_best_page(world):
    response = search(
        world.client, cluster_id="acme", tenant_id="search", collection_id="handbook", query="refund"
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    (score,) = scores_of(body)
    assert score > 0
    assert isinstance(body.pop("took_ms"), float)
    index = body.pop("index")
    assert index["content_versions"] == {"handbook": world.collection.content_version}
    assert index.keys() == {
        "built",
        "loaded",
        "cached",
        "build_ms",
        "parts_built",
        "content_versions",
        "stale",
    }
    assert index["stale"] == []
    assert body == {
        "query": "refund",
        "config": DEFAULT_CONFIG,
        "results": [result(1, "refunds", REFUNDS, score)],
        "warnings": [],
    }


def test_every_matching_document_is_ranked_by_score(world):
    body = search(world.client, collection_id="handbook", query="refund shipping warranty").json()
    scores = scores_of(body)
    assert [r["rank"] for r in body["results"]] == [1, 2, 3]
    assert sorted(r["document_id"] for r in body["results"]) == ["refunds", "shipping", "warranty"]
    assert scores == sorted(scores, reverse=True)
    texts = {"refunds": REFUNDS, "shipping": SHIPPING, "warranty": WARRANTY}
    assert body["results"] == [
        result(i, r["document_id"], texts[r["document_id"]], r["score"])
        for i, r in enumerate(body["results"], 1)
    ]


def test_top_k_is_respected(world):
    everything = search(world.client, collection_id="handbook", query="refund shipping warranty").json()
    top_two = search(
        world.client, collection_id="handbook", query="refund shipping warranty", top_k="2"
    ).json()
    assert top_two["results"] == everything["results"][:2]
    assert top_two["config"] == {**DEFAULT_CONFIG, "top_k": 2, "label": "FullText top_k:2"}
    vector = search(
        world.client, collection_id="handbook", query="refund", search_type="Vector", top_k=1
    ).json()
    assert len(vector["results"]) == 1


def test_a_document_is_found_by_its_best_page(world):
    services.documents_upsert(
        collection=world.collection,
        documents=[
            services.DocumentInput(
                id="fees",
                title="Fees",
                pages=["An introduction with nothing in particular.", "The cancellation fee is forty euros."],
            )
        ],
        actor="test",
    )
    body = search(world.client, collection_id="handbook", query="cancellation fee").json()
    assert body["results"] == [
        result(1, "fees", "The cancellation fee is forty euros.", body["results"][0]["score"], page_number=2)
    ]


def test_a_query_matching_nothing_returns_no_results(world):
    body = search(world.client, collection_id="handbook", query="xylophone").json()
    assert body["results"] == []


def test_collection_ids_search_several_collections_as_one(world, policies):
    response = search(world.client, collection_ids=["handbook", "policies"], query="refund")
    assert response.status_code == 200, response.json()
    body = response.json()
    scores = scores_of(body)
    assert scores == sorted(scores, reverse=True)
    assert sorted((r["collection_id"], r["document_id"]) for r in body["results"]) == [
        ("handbook", "refunds"),
        ("policies", "returns"),
    ]
    assert [r["rank"] for r in body["results"]] == [1, 2]
    assert body["index"]["content_versions"] == {"handbook": 1, "policies": 1}
    # collection_id and collection_ids together name each collection once
    both = search(
        world.client, collection_id="policies", collection_ids=["handbook", "policies"], query="refund"
    )
    assert both.json()["results"] == body["results"]
    assert both.json()["index"]["content_versions"] == {"policies": 1, "handbook": 1}


def test_one_collection_of_several_reports_its_own_id(world, policies):
    body = search(world.client, collection_ids=["policies"], query="refund").json()
    assert [(r["collection_id"], r["document_id"], r["title"]) for r in body["results"]] == [
        ("policies", "returns", "Returns")
    ]


@pytest.mark.parametrize(
    ("options", "config"),
    [
        ({"search_type": "FullText"}, {}),
        (
            {"search_type": "fulltext", "bm25_variant": "okapi"},
            {"bm25_variant": "okapi", "label": "FullText okapi"},
        ),
        ({"search_type": "Vector"}, {"search_type": "Vector", "label": "Vector"}),
        ({"search_type": "Hybrid"}, {"search_type": "Hybrid", "label": "Hybrid Rrf"}),
        (
            {"search_type": "HYBRID", "fusion": "weighted", "fulltext_weight": 0.7},
            {"search_type": "Hybrid", "fusion": "Weighted", "fulltext_weight": 0.7},
        ),
        ({"rerank": True}, {"rerank": "proximity", "label": "FullText rerank:proximity"}),
        (
            {"search_type": "Hybrid", "rerank": "proximity"},
            {"search_type": "Hybrid", "rerank": "proximity", "label": "Hybrid Rrf rerank:proximity"},
        ),
        (
            dict.fromkeys(
                [
                    "search_type",
                    "fusion",
                    "rerank",
                    "bm25_variant",
                    "top_k",
                    "as_of",
                    "include_superseded",
                    "fulltext_weight",
                ]
            ),
            {},
        ),  # null: the default
    ],
)
def test_every_search_type_and_rerank_answers(world, options, config):
    response = search(world.client, collection_id="handbook", query="refund window", **options)
    assert response.status_code == 200, response.json()
    body = response.json()
    expected = {**DEFAULT_CONFIG, **config}
    if "label" not in config and expected["search_type"] == "Hybrid":
        expected["label"] = f"Hybrid {expected['fusion']} fulltext_weight:{expected['fulltext_weight']:g}"
    assert body["config"] == expected
    assert body["results"][0]["document_id"] == "refunds"
    assert [r["rank"] for r in body["results"]] == list(range(1, len(body["results"]) + 1))


def test_it_sees_documents_added_since_the_last_search(world):
    assert search(world.client, collection_id="handbook", query="voucher").json()["results"] == []
    add_documents(world.collection, {"vouchers": "A voucher never expires."})
    body = search(world.client, collection_id="handbook", query="voucher").json()
    assert [r["document_id"] for r in body["results"]] == ["vouchers"]


def test_the_rival_searches_only_its_own_same_named_collection(world):
    body = search(world.other_client, collection_id="handbook", query="refunds").json()
    assert [(r["document_id"], r["text"]) for r in body["results"]] == [
        ("refunds", "Rival refunds policy: no refunds.")
    ]


@pytest.mark.parametrize(
    ("client", "body", "resource", "object_id"),
    [
        ("other_client", {"collection_id": "policies"}, "Collection", "policies"),
        ("other_client", {"collection_ids": ["handbook", "policies"]}, "Collection", "policies"),
        ("other_client", {"tenant_id": "search", "collection_id": "handbook"}, "Tenant", "search"),
        ("client", {"collection_id": "rival-only"}, "Collection", "rival-only"),
        ("client", {"collection_id": "nope"}, "Collection", "nope"),
        ("client", {"cluster_id": "elsewhere", "collection_id": "handbook"}, "Cluster", "elsewhere"),
    ],
)
def test_another_tenants_collection_is_not_found(world, policies, client, body, resource, object_id):
    services.collection_create(tenant=world.other_tenant, slug="rival-only", actor="test")
    response = search(getattr(world, client), query="refund", **body)
    assert response.status_code == 404
    assert response.json() == {
        "error": {
            "code": "not-found",
            "message": f"{resource} {object_id} not found.",
            "details": {"resource": resource, "id": object_id},
        }
    }


@pytest.mark.parametrize(
    ("body", "code", "message", "details"),
    [
        (
            {"collection_id": "handbook", "query": "refund", "search_type": "Semantic"},
            "unknown-search-type",
            "search_type: expected one of FullText, Vector, Hybrid, got 'Semantic'.",
            {"field": "search_type", "allowed": ["FullText", "Vector", "Hybrid"]},
        ),
        (
            {"collection_id": "handbook", "query": "refund", "search_type": "Hybrid", "fusion": "Max"},
            "unknown-fusion",
            "fusion: expected one of Rrf, Weighted, got 'Max'.",
            {"field": "fusion", "allowed": ["Rrf", "Weighted"]},
        ),
        (
            {"collection_id": "handbook", "query": "refund", "rerank": "cross-encoder"},
            "reranker-unavailable",
            "rerank: reranker 'cross-encoder' is not available here; available: proximity.",
            {"field": "rerank", "available": ["proximity"]},
        ),
        (
            {"collection_id": "handbook", "query": "refund", "top_k": 0},
            "invalid-number",
            "top_k: expected an integer from 1 to 1000, got 0.",
            {"field": "top_k"},
        ),
        (
            {"collection_id": "handbook", "query": "refund", "as_of": "soon"},
            "invalid-date",
            "as_of: expected an ISO 8601 date or datetime, got 'soon'.",
            {"field": "as_of"},
        ),
        (
            {"query": "refund"},
            "validation-error",
            "collection_id: name a collection (collection_id or collection_ids).",
            {"field": "collection_id"},
        ),
        (
            {"collection_id": "handbook"},
            "validation-error",
            "query: This field is required.",
            {"fields": {"query": ["This field is required."]}},
        ),
        (
            {"collection_id": "handbook", "query": "  "},
            "validation-error",
            "query: This field may not be blank.",
            {"fields": {"query": ["This field may not be blank."]}},
        ),
        (
            # a misspelt option must not quietly search with the default
            {"collection_id": "handbook", "query": "refund", "serach_type": "Vector"},
            "validation-error",
            "serach_type: unknown field.",
            {
                "field": "serach_type",
                "allowed": [
                    "as_of",
                    "bm25_b",
                    "bm25_k1",
                    "bm25_variant",
                    "cluster_id",
                    "collection_id",
                    "collection_ids",
                    "fulltext_weight",
                    "fusion",
                    "include_superseded",
                    "query",
                    "rerank",
                    "rrf_k",
                    "search_type",
                    "tenant_id",
                    "top_k",
                ],
            },
        ),
    ],
)
def test_bad_input_answers_400_naming_the_field(world, body, code, message, details):
    response = search(world.client, **body)
    assert response.status_code == 400
    assert response.json() == {"error": {"code": code, "message": message, "details": details}}


def test_more_than_50_collections_in_one_call_is_a_400_naming_the_field(world):
    response = search(world.client, collection_ids=[f"c{i}" for i in range(51)], query="refund")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "validation-error" and error["message"].startswith("collection_ids:")
    assert "50" in error["message"]
