"""The OpenAPI schema describes the responses (fuzzing finding 15): real responses and errors validate against
it, and every POST operation documents its error envelope."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from drf_spectacular.generators import SchemaGenerator

from tests.goldenset.conftest import API, DOCS, GS, upload
from tests.support import add_entries

# --- 15. the OpenAPI schema describes the responses -----------------------------------------------------------


@pytest.fixture(scope="module")
def openapi() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)


def _json_schema(node: Any) -> Any:
    """OpenAPI 3.0 to JSON Schema: `nullable: true` becomes a union with null."""
    if isinstance(node, list):
        return [_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _json_schema(v) for k, v in node.items() if k != "nullable"}
    return {"anyOf": [out, {"type": "null"}]} if node.get("nullable") else out


def _validate(openapi: dict, path: str, method: str, status: int, instance: Any) -> None:
    responses = openapi["paths"][path][method]["responses"]
    schema = _json_schema(responses[str(status)]["content"]["application/json"]["schema"])
    jsonschema.validate(instance, {**schema, "components": _json_schema(openapi["components"])})


def test_real_responses_match_the_documented_schema(world, openapi):
    docs = "/lmkit/v1/collections/{collection_id}/documents"
    response = world.client.post(DOCS, {"documents": [{"id": "plain", "text": "No dates."}]}, format="json")
    _validate(openapi, docs, "post", 200, response.json())
    response = upload(world, "corpus.jsonl", '{"_id": "up", "text": "Up."}\n')
    _validate(openapi, docs.replace("documents", "uploads"), "post", 200, response.json())
    _validate(openapi, docs + "/{document_id}", "get", 200, world.client.get(f"{DOCS}/plain").json())
    _validate(openapi, docs, "get", 200, world.client.get(DOCS).json())
    add_entries(world.collection, "Q?", key="k", tags=["t"])
    add_entries(world.collection, "Unanswerable?", answerable=False)
    export = world.client.get(f"{GS}/export", {"collection_id": "handbook"}).json()
    assert isinstance(export, list) and len(export) == 2
    _validate(openapi, "/lmkit/v1/search/golden-set/export", "get", 200, export)


@pytest.mark.parametrize(
    ("path", "statuses"),
    [
        ("/lmkit/v1/collections", {400, 404, 409, 413, 415}),
        ("/lmkit/v1/collections/{collection_id}/documents", {400, 404, 413, 415}),
        ("/lmkit/v1/collections/{collection_id}/uploads", {400, 404, 413, 415}),
        ("/lmkit/v1/search/golden-set", {400, 404, 409, 413, 415}),
        ("/lmkit/v1/search/golden-set/upload", {400, 404, 409, 413, 415}),
        ("/lmkit/v1/jobs/{job_id}/cancel", {404, 409}),
    ],
)
def test_post_operations_document_their_error_envelope(openapi, path, statuses):
    responses = openapi["paths"][path]["post"]["responses"]
    for status in statuses:
        schema = responses[str(status)]["content"]["application/json"]["schema"]
        assert schema == {"$ref": "#/components/schemas/ErrorOut"}


def test_a_real_error_matches_the_documented_envelope(world, openapi):
    response = world.client.post(f"{API}/collections", {"collection_id": "handbook"}, format="json")
    assert response.status_code == 409
    _validate(openapi, "/lmkit/v1/collections", "post", 409, response.json())
