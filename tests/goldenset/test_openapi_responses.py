"""The OpenAPI schema describes the responses (fuzzing finding 15): real responses and errors validate against
it, and every POST operation documents its error envelope."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
import yaml

from goldenset.formats import FORMATS
from tests.goldenset.conftest import API, DOCS, GS, upload
from tests.schema_support import served_schema, to_json_schema
from tests.support import add_entries

# --- 15. the OpenAPI schema describes the responses -----------------------------------------------------------


@pytest.fixture(scope="module")
def openapi() -> dict:
    return served_schema()


def _validate(openapi: dict, path: str, method: str, status: int, instance: Any) -> None:
    responses = openapi["paths"][path][method]["responses"]
    schema = to_json_schema(responses[str(status)]["content"]["application/json"]["schema"])
    jsonschema.validate(instance, {**schema, "components": to_json_schema(openapi["components"])})


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


def test_every_export_format_answers_a_content_type_and_body_its_schema_documents(world, openapi):
    """The export answers a file by format: JSON and YAML ones are what clients (and schema checkers) parse, so
    the schema describes their records; the others are text. Each answer's content type is one documented."""
    add_entries(world.collection, "Q?", key="k", tags=["t"], expected_document_ids=["refunds"])
    add_entries(world.collection, "Unanswerable?", answerable=False)
    export = "/lmkit/v1/search/golden-set/export"
    content = openapi["paths"][export]["get"]["responses"]["200"]["content"]
    components = to_json_schema(openapi["components"])
    seen = set()
    for fmt in FORMATS:
        for part in ("topics", "qrels") if fmt == "trec" else ("",):
            query = {"collection_id": "handbook", "format": fmt, **({"part": part} if part else {})}
            response = world.client.get(f"{GS}/export", query)
            assert response.status_code == 200, response.content
            media_type = response["Content-Type"].split(";")[0]
            assert media_type in content, (fmt, media_type, sorted(content))
            seen.add(media_type)
            schema = {**to_json_schema(content[media_type]["schema"]), "components": components}
            text = response.content.decode()
            parsed = {"application/json": json.loads, "application/yaml": yaml.safe_load}.get(media_type)
            instance = parsed(text) if parsed else text
            jsonschema.validate(instance, schema)
            if parsed:
                assert isinstance(instance, list) and len(instance) == 2, (fmt, instance)
    assert seen == set(content)  # no content type is documented that no format answers
