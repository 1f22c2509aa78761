"""One rule for NUL, on every database: PostgreSQL cannot store the character (a 500 there) and SQLite would store
it, so every text a tenant sends (a path, a query parameter, a form field, a JSON body, an uploaded file) is
refused with a 400 naming where it was, before anything reads it. Walked over every route, so a new page or
endpoint cannot miss it."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve

from tests.support import member_of, refused


def _routes(patterns=None, prefix: str = "") -> list[str]:
    """Every route of the site as a path, each parameter filled with a plausible value."""
    out = []
    for pattern in patterns if patterns is not None else get_resolver().url_patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            out += _routes(pattern.url_patterns, route)
        elif isinstance(pattern, URLPattern):
            out.append("/" + re.sub(r"<(?:\w+:)?(\w+)>", "1", route).lstrip("^").rstrip("$"))
    return sorted({r for r in out if "(?P" not in r and "\\" not in r})


def test_every_page_refuses_a_form_field_or_a_query_value_with_nul(world):
    alice = Client()
    alice.force_login(member_of(world.tenant, "alice"))
    pages = [r for r in _routes() if not r.startswith("/lmkit/")]
    assert len(pages) > 40
    for path in pages:
        posted = alice.post(path, {"name": "a\x00b"})
        assert posted.status_code == 400, path
        assert posted.content == b"name: NUL characters are not allowed.", path
        asked = alice.get(path, {"q": "\x00"})
        assert asked.status_code == 400 and asked.content == b"q: NUL characters are not allowed.", path


def test_every_endpoint_refuses_a_query_value_or_a_path_with_nul(world):
    # the API's operations (its last route, the JSON 404 of a path no operation has, takes nothing)
    endpoints = [r for r in _routes() if r.startswith("/lmkit/") and hasattr(resolve(r).func, "cls")]
    assert len(endpoints) > 30
    for path in endpoints:
        error = refused(world.client.get(path, {"collection_id": "hand\x00book"}), 400, "validation-error")
        assert error["message"] == "collection_id: NUL characters are not allowed.", path
    error = refused(world.client.get("/lmkit/v1/collections/hand%00book"), 400, "validation-error")
    assert error["message"] == "collection_id: NUL characters are not allowed."


@pytest.mark.parametrize(
    ("upload", "named"),
    [
        ("/lmkit/v1/search/golden-set/upload", "line 2: NUL characters are not allowed."),
        ("/lmkit/v1/search/evaluate/labels", "line 2: NUL characters are not allowed."),
    ],
)
def test_an_uploaded_file_with_nul_is_refused_naming_its_line(world, upload, named):
    from django.core.files.uploadedfile import SimpleUploadedFile

    data = b"question_id,rater,metric,label\nq1,al\x00ice,faithfulness,pass\n"
    if "golden-set" in upload:
        data = b"key,question\nk1,How long is the refund\x00 window?\n"
    response = world.client.post(
        upload, {"collection_id": "handbook", "file": SimpleUploadedFile("f.csv", data)}, format="multipart"
    )
    assert response.status_code == 400, response.content
    assert named in response.json()["error"]["message"]
