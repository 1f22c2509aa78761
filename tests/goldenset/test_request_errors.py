"""Malformed requests on the lmkit API (fuzzing findings 1, 6c, 7 and 14, numbered as in its report): an upload
without a body, Django's request limits, NUL in a path or query, unmatched API paths, disallowed hosts and broken
multipart bodies each answer a 4xx in the one JSON envelope, never an HTML page or a 500."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import RequestFactory, override_settings
from rest_framework.test import APIClient

from evalsite import views as site_views
from evalsite.api.errors import envelope
from tests.goldenset.conftest import API, DOCS, GOLDEN_UPLOAD, GS, UPLOADS
from tests.support import db_state, refused, uploaded

# --- 1. an upload without a body ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "fields"),
    [
        (UPLOADS, {"file": ["This list may not be empty."]}),
        (
            GOLDEN_UPLOAD,
            {"collection_id": ["This field is required."], "file": ["This field may not be null."]},
        ),
    ],
    ids=["documents", "golden-set"],
)
def test_an_upload_without_a_body_is_a_validation_error(world, url, fields):
    before = db_state()
    response = world.client.post(url)
    error = refused(response, 400, "validation-error")
    assert error["details"] == {"fields": fields}
    assert db_state() == before


# --- 6c. Django's request limits -----------------------------------------------------------------------------------


def test_too_many_query_parameters_is_a_bad_request(world):
    query = "&".join(f"p{i}=1" for i in range(1001))
    error = refused(world.client.get(f"{GS}?{query}"), 400, "bad-request")
    assert "DATA_UPLOAD_MAX_NUMBER_FIELDS" in error["message"]


def test_too_many_form_fields_or_files_is_a_bad_request(world):
    before = db_state()
    fields: dict[str, Any] = {f"f{i}": "1" for i in range(1001)}
    refused(world.client.post(UPLOADS, fields, format="multipart"), 400, "bad-request")
    files = [uploaded(f"d{i}.txt", "x") for i in range(101)]
    error = refused(world.client.post(UPLOADS, {"file": files}, format="multipart"), 400, "bad-request")
    assert "DATA_UPLOAD_MAX_NUMBER_FILES" in error["message"]
    assert db_state() == before


def test_a_form_field_over_the_memory_limit_is_payload_too_large(world):
    before = db_state()
    with override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1000):
        response = world.client.post(
            GOLDEN_UPLOAD,
            {"collection_id": "x" * 2000, "file": uploaded("golden.json", "[]")},
            format="multipart",
        )
    refused(response, 413, "payload-too-large")
    assert db_state() == before


# --- 7. NUL in the path or the query -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "url", "name"),
    [
        ("get", f"{API}/collections/%00", "collection_id"),
        ("delete", f"{API}/collections/hand%00book", "collection_id"),
        ("get", f"{DOCS}/a%00b", "document_id"),
        ("delete", f"{DOCS}/a%00b", "document_id"),
        ("get", f"{DOCS}?text=%00", "text"),
        ("get", f"{GS}/export?collection_id=%00", "collection_id"),
        ("get", f"{GS}?text=a%00&tag=x", "text"),
        ("get", f"{GS}?tag=%00", "tag"),
        ("get", f"{API}/collections?cluster_id=%00", "cluster_id"),
        ("post", f"{API}/collections/%00/documents", "collection_id"),
        ("get", f"{API}/search/evaluate/runs/%00", "run_id"),
        ("get", f"{API}/jobs/%00", "job_id"),
    ],
)
def test_nul_in_a_path_id_or_a_query_value_is_a_validation_error(world, method, url, name):
    before = db_state()
    response = getattr(world.client, method)(
        url, *([{"documents": [{"id": "a"}]}] if method == "post" else []), format="json"
    )
    error = refused(response, 400, "validation-error")
    assert (
        error
        == envelope(
            "validation-error",
            f"{name}: NUL characters are not allowed.",
            {"fields": {name: ["NUL characters are not allowed."]}},
        )["error"]
    )
    assert db_state() == before


def test_nul_in_the_path_still_needs_a_key(world):
    refused(APIClient().get(f"{API}/collections/%00"), 401, "unauthenticated")


# --- 14. HTML pages and codes on API paths -------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["get", "post", "put", "delete"])
@pytest.mark.parametrize(
    "path",
    [
        "/lmkit/",
        "/lmkit/v1",
        "/lmkit/v1/collections/",
        "/lmkit/v2/collections",
        "/lmkit/v1/search/golden-set/a/b",
    ],
)
def test_an_unmatched_api_path_is_the_json_404_with_debug_on(world, method, path):
    client = APIClient(enforce_csrf_checks=True)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {world.key}")
    with override_settings(DEBUG=True):
        response = getattr(client, method)(path)
    assert response.status_code == 404
    assert response.json() == envelope("not-found", f"No API endpoint at {path}.")


def test_a_disallowed_host_is_the_json_400_on_api_paths_with_debug_off(world):
    with override_settings(DEBUG=False, ALLOWED_HOSTS=["good.example"]):
        response = world.client.get(f"{API}/collections", HTTP_HOST="evil.example")
        assert response.status_code == 400
        assert response.json() == envelope("bad-request", "Bad request.")
        page = world.client.get("/", HTTP_HOST="evil.example")
        assert page.status_code == 400 and page["Content-Type"].startswith("text/html")


def test_permission_denied_outside_a_view_is_the_json_403_on_api_paths():
    response = site_views.permission_denied(RequestFactory().get("/lmkit/v1/collections"))
    assert response.status_code == 403
    assert json.loads(response.content) == envelope("permission-denied", "Permission denied.")
    assert site_views.permission_denied(RequestFactory().get("/")).status_code == 403


def test_a_malformed_multipart_body_is_invalid_body(world):
    before = db_state()
    response = world.client.post(UPLOADS, b"no boundary", content_type="multipart/form-data")
    error = refused(response, 400, "invalid-body")
    assert error["message"] == "Multipart form parse error - Invalid boundary in multipart: None"
    assert db_state() == before
