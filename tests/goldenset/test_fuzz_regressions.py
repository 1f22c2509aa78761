"""Regressions of the fuzzing run against the lmkit API (one section per finding, numbered as in its report).

Every bad input answers a 4xx in the one envelope naming the offending field, record or line, never a 500, and
changes nothing; these run on SQLite and (with DATABASE_URL=postgres://...) on PostgreSQL, where several of them
were database errors.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from django.apps import apps
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import RequestFactory, override_settings
from django.urls import reverse
from django.utils.http import content_disposition_header
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from evalsite import views as site_views
from evalsite.api.errors import envelope
from goldenset import importers, services
from goldenset.beir import read_corpus, read_qrels, read_queries
from goldenset.errors import EvalsiteError
from goldenset.golden_files import GoldenFileError, parse_golden
from goldenset.models import Collection, Document, GoldenEntry
from goldenset.text import (
    JsonValueError,
    collection_id_problem,
    document_id_problem,
    find_lone_surrogate,
    json_loads,
    key_problem,
    tag_problem,
)

API = "/lmkit/v1"
DOCS = f"{API}/collections/handbook/documents"
UPLOADS = f"{API}/collections/handbook/uploads"
GS = f"{API}/search/golden-set"
GOLDEN_UPLOAD = f"{GS}/upload"


def db_state() -> dict[str, list]:
    """Every row of the project's tables and the task queue (an API key's last-use stamp aside)."""
    state = {}
    for label in ("goldenset", "evaluation", "django_q"):
        for model in apps.get_app_config(label).get_models():
            fields = [f.attname for f in model._meta.concrete_fields if f.attname != "last_used_at"]
            state[model._meta.label] = sorted(model.objects.values_list(*fields), key=repr)
    return state


def _file(name: str, content: str | bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content.encode() if isinstance(content, str) else content)


def _error(response, status: int, code: str) -> dict:
    """The envelope of a refused request: its status, its code; returns message and details."""
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json", response.content[:300]
    body = response.json()
    assert body.keys() == {"error"} and body["error"].keys() == {"code", "message", "details"}
    assert body["error"]["code"] == code, body
    return body["error"]


def _add(world, *questions: str, **fields: Any) -> list[GoldenEntry]:
    created, _ = services.golden_entries_add(
        collection=world.collection,
        entries=[services.EntryInput(question=q, **fields) for q in questions],
        actor="test",
    )
    return created


def _upload(world, name: str, content: str | bytes):
    return world.client.post(UPLOADS, {"file": _file(name, content)}, format="multipart")


def _golden_upload(world, content: str | bytes, collection_id: str = "handbook"):
    return world.client.post(
        GOLDEN_UPLOAD,
        {"collection_id": collection_id, "file": _file("golden.json", content)},
        format="multipart",
    )


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
    error = _error(response, 400, "validation-error")
    assert error["details"] == {"fields": fields}
    assert db_state() == before


# --- 2. a .jsonl row whose metadata is not an object ----------------------------------------------------------


@pytest.mark.parametrize(
    ("metadata", "kind"),
    [('"draft"', "a string"), ('["a", "b"]', "a list"), ("7", "a number"), ("true", "a boolean")],
)
def test_a_jsonl_row_whose_metadata_is_not_an_object_is_refused_at_its_line(world, metadata, kind):
    corpus = '{"_id": "a", "text": "A."}\n{"_id": "b", "text": "B.", "metadata": ' + metadata + "}\n"
    before = db_state()
    error = _error(_upload(world, "corpus.jsonl", corpus), 400, "beir-invalid")
    assert error == {
        "code": "beir-invalid",
        "message": f'corpus.jsonl line 2: field "metadata" must be an object, not {kind}',
        "details": {"file": "corpus.jsonl", "line": 2, "field": "metadata"},
    }
    assert db_state() == before


def test_a_jsonl_metadata_object_or_null_is_accepted_and_reads_back(world):
    corpus = (
        '{"_id": "m1", "text": "One.", "metadata": {"lang": "en"}}\n'
        '{"_id": "m2", "text": "Two.", "metadata": null, "lang": "de"}\n'
    )
    assert _upload(world, "corpus.jsonl", corpus).status_code == 200
    assert world.client.get(f"{DOCS}/m1").json()["metadata"] == {"lang": "en"}
    assert world.client.get(f"{DOCS}/m2").json()["metadata"] == {"lang": "de"}
    assert world.client.get(DOCS).status_code == 200


# --- 3 and 11. ids that would break a header or a URL -----------------------------------------------------------


@pytest.mark.parametrize("slug", ['team "a"', "café", "a;b=c", "x'y"])
def test_the_export_filename_is_a_well_formed_header_for_any_collection_id(world, slug):
    created = world.client.post(f"{API}/collections", {"collection_id": slug}, format="json")
    assert created.status_code == 201, created.json()
    response = world.client.get(f"{GS}/export", {"collection_id": slug})
    assert response.status_code == 200
    assert response["Content-Disposition"] == content_disposition_header(True, f"{slug}-golden.json")
    assert response.json() == []


def test_the_export_of_a_collection_stored_with_a_newline_in_its_id_still_has_a_valid_header(world):
    # Stored before ids were checked: the header percent-encodes what a quoted filename cannot hold.
    Collection.objects.create(tenant=world.tenant, slug='bad\r\n"id')
    response = world.client.get(f"{GS}/export", {"collection_id": 'bad\r\n"id'})
    assert response.status_code == 200
    assert response["Content-Disposition"] == "attachment; filename*=utf-8''bad%0D%0A%22id-golden.json"


@pytest.mark.parametrize(
    ("slug", "problem"),
    [
        (".", 'may not be "."'),
        ("..", 'may not be ".."'),
        ("a\nb", "may not contain control characters (U+000A at position 2)"),
        ("a\rb", "may not contain control characters (U+000D at position 2)"),
        ("tab\there", "may not contain control characters (U+0009 at position 4)"),
        ("bell\x07", "may not contain control characters (U+0007 at position 5)"),
        ("c\x85d", "may not contain control characters (U+0085 at position 2)"),
    ],
)
def test_unusable_collection_ids_are_refused(world, slug, problem):
    before = db_state()
    response = world.client.post(f"{API}/collections", {"collection_id": slug}, format="json")
    error = _error(response, 400, "validation-error")
    assert error["details"] == {"fields": {"collection_id": [f"A collection id {problem}."]}}
    assert db_state() == before


@pytest.mark.parametrize(
    ("document_id", "problem"),
    [
        ("a/../b", 'may not have "." or ".." as a path segment'),
        ("..", 'may not have "." or ".." as a path segment'),
        ("./a", 'may not have "." or ".." as a path segment'),
        ("a/.", 'may not have "." or ".." as a path segment'),
        ("/a", 'may not start or end with "/"'),
        ("a/", 'may not start or end with "/"'),
        ("a\nb", "may not contain control characters (U+000A at position 2)"),
        ("a\x7fb", "may not contain control characters (U+007F at position 2)"),
    ],
)
def test_unusable_document_ids_are_refused_by_the_api_and_the_jsonl_upload(world, document_id, problem):
    before = db_state()
    response = world.client.post(DOCS, {"documents": [{"id": document_id, "text": "T."}]}, format="json")
    error = _error(response, 400, "validation-error")
    assert error["details"] == {"fields": {"documents[0].id": [f"A document id {problem}."]}}
    row = json.dumps({"_id": document_id, "text": "T."})
    error = _error(
        _upload(world, "corpus.jsonl", '{"_id": "ok", "text": "x"}\n' + row + "\n"), 400, "beir-invalid"
    )
    assert error["message"] == f'corpus.jsonl line 2: field "_id" {problem}'
    assert error["details"] == {"file": "corpus.jsonl", "line": 2, "field": "_id"}
    assert db_state() == before


@pytest.mark.parametrize("document_id", ["a/b", "https://example.com/page", "a..b", ".hidden", "v1.2"])
def test_ids_with_slashes_and_dots_that_stay_reachable_are_accepted(world, document_id):
    response = world.client.post(DOCS, {"documents": [{"id": document_id, "text": "T."}]}, format="json")
    assert response.status_code == 200, response.json()
    assert world.client.get(f"{DOCS}/{document_id}").json()["id"] == document_id


def test_a_markdown_file_whose_name_is_no_usable_document_id_is_refused(world):
    before = db_state()
    error = _error(_upload(world, "...md", "# Dots"), 400, "invalid-file")
    assert error["details"] == {"file": "...md", "field": "id"}
    assert "'..'" in error["message"]
    assert db_state() == before
    # Django cuts an uploaded file's name to 255 characters; a direct caller may pass a longer one.
    with pytest.raises(EvalsiteError, match="at most 300 characters"):
        importers.documents_from_upload("x" * 301 + ".md", b"# Long")


@pytest.mark.parametrize("key", ["k\n1", "k\x1b", "k\x85k"])
def test_golden_keys_with_control_characters_are_refused(world, key):
    before = db_state()
    response = world.client.post(
        GS, {"collection_id": "handbook", "entries": [{"question": "Q?", "key": key}]}, format="json"
    )
    assert "entries[0].key" in _error(response, 400, "validation-error")["details"]["fields"]
    golden = json.dumps([{"id": key, "question": "Q?"}])
    error = _error(_golden_upload(world, golden), 400, "golden-schema")
    assert error["details"]["field"] == "id"
    assert "control characters" in error["message"]
    assert db_state() == before


def test_the_service_refuses_bad_keys_and_tags_from_any_writer(world):
    with pytest.raises(EvalsiteError) as raised:
        _add(world, "Q?", key="a\tb")
    assert raised.value.details == {"index": 0, "field": "key"}
    with pytest.raises(EvalsiteError) as raised:
        _add(world, "Q?", tags=["ok", "a|b"])
    assert raised.value.message == 'entries[0].tags[1]: may not contain "|".'
    assert not GoldenEntry.objects.exists()


# --- 4. lone surrogates ----------------------------------------------------------------------------------------


def test_a_lone_surrogate_in_a_json_body_is_refused_at_its_line_and_column(world):
    before = db_state()
    body = '{"documents": [\n  {"id": "a", "text": "x", "metadata": {"k": "ok \\ud800"}}]}'
    response = world.client.post(DOCS, body, content_type="application/json")
    error = _error(response, 400, "invalid-json")
    assert error == {
        "code": "invalid-json",
        "message": "Lone surrogate at line 2, column 50: not valid Unicode.",
        "details": {"line": 2, "column": 50},
    }
    for body in (
        '{"collection_id": "handbook", "entries": [{"question": "\\udc00?"}]}',
        '{"collection_id": "handbook", "entries": [{"question": "Q?", "tags": ["\\uD83D"]}]}',
        '{"collection_id": "handbook", "entries": [{"question": "Q?", "\\ud800": 1}]}',
    ):
        _error(world.client.post(GS, body, content_type="application/json"), 400, "invalid-json")
    assert db_state() == before


def test_a_surrogate_pair_is_one_character_and_accepted(world):
    body = '{"documents": [{"id": "emoji", "text": "x", "metadata": {"k": "\\ud83d\\ude00 \\\\ud800"}}]}'
    assert world.client.post(DOCS, body, content_type="application/json").status_code == 200
    assert world.client.get(f"{DOCS}/emoji").json()["metadata"] == {"k": "\U0001f600 \\ud800"}


def test_a_lone_surrogate_in_golden_json_is_golden_invalid_at_its_position(world):
    before = db_state()
    golden = '[\n  {"question": "Refund \\ud83d window?"}\n]'
    error = _error(_golden_upload(world, golden), 400, "golden-invalid")
    assert error == {
        "code": "golden-invalid",
        "message": "golden.json line 2, column 24: lone surrogates are not valid Unicode",
        "details": {"line": 2, "column": 24},
    }
    with pytest.raises(GoldenFileError) as raised:  # a str may hold one literally
        parse_golden('[{"question": "Q\ud800?"}]')
    assert raised.value.details == {"line": 1, "column": 17}
    assert db_state() == before


def test_a_lone_surrogate_in_a_jsonl_row_is_beir_invalid_at_its_position(world):
    before = db_state()
    corpus = '{"_id": "a", "text": "A."}\n{"_id": "b", "title": "\\udfff", "text": "B."}\n'
    error = _error(_upload(world, "corpus.jsonl", corpus), 400, "beir-invalid")
    assert error == {
        "code": "beir-invalid",
        "message": "corpus.jsonl line 2, column 24: lone surrogates are not valid Unicode",
        "details": {"file": "corpus.jsonl", "line": 2, "column": 24},
    }
    assert db_state() == before
    with pytest.raises(EvalsiteError, match="line 1, column 10: lone surrogates"):
        list(read_queries(['{"_id": "\ud800", "text": "Q?"}']))
    with pytest.raises(EvalsiteError, match="qrels.tsv line 2: lone surrogates"):
        read_qrels(["q\td\t1\n", "q\t\udc00\t1\n"])


@pytest.mark.parametrize("name", ["notes.md", "notes.txt"])
def test_surrogates_encoded_in_a_text_upload_are_not_utf8(world, name):
    before = db_state()
    error = _error(_upload(world, name, b"# Title\n\xed\xa0\x80"), 400, "invalid-file")
    assert error["message"] == f"{name}: not UTF-8 (byte 8)."
    assert db_state() == before


@pytest.mark.parametrize(
    ("text", "at"),
    [
        ('"\\ud800"', (1, 2)),
        ('"\\uDBFF\\u0041"', (1, 2)),
        ('"\\ude00"', (1, 2)),
        ('"\\ud83d\\ud83d\\ude00"', (1, 2)),
        ('"ok",\n "\\\\\\udc00"', (2, 5)),
        ("x\n\ud800", (2, 1)),
        ('"\\ud83d\\ude00"', None),
        ('"\\\\ud800"', None),
        ('"\\\\\\\\ud800"', None),
        ('"\\u0041\\ud7ff\\ue000"', None),
    ],
)
def test_find_lone_surrogate(text, at):
    assert find_lone_surrogate(text) == at


# --- 5. numbers that are not JSON or overflow to infinity --------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message", "column"),
    [
        # column 46 is where the value after {"x": starts
        ('{"documents": [{"id": "a", "metadata": {"x": 1e400}}]}', "the number 1e400 is out of range", 46),
        (
            '{"documents": [{"id": "a", "metadata": {"x": -2E+999}}]}',
            "the number -2E+999 is out of range",
            46,
        ),
        ('{"documents": [{"id": "a", "metadata": {"x": [1, Infinity]}}]}', "Infinity is not valid JSON", 50),
        (
            '{"documents": [{"id": "a", "metadata": {"x": ' + "9" * 5000 + "}}]}",
            "an integer of 5000 digits is too long",
            46,
        ),
    ],
)
def test_non_finite_and_oversized_numbers_in_a_body_are_invalid_json_at_their_position(
    world, body, message, column
):
    before = db_state()
    error = _error(world.client.post(DOCS, body, content_type="application/json"), 400, "invalid-json")
    assert error == {
        "code": "invalid-json",
        "message": f"Malformed JSON at line 1, column {column}: {message}.",
        "details": {"line": 1, "column": column},
    }
    assert db_state() == before


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("NaN", "NaN is not valid JSON"),
        ("-Infinity", "-Infinity is not valid JSON"),
        ("1e400", "the number 1e400 is out of range"),
    ],
)
def test_non_finite_numbers_in_a_jsonl_row_are_beir_invalid(world, value, message):
    before = db_state()
    corpus = '{"_id": "a", "text": "A."}\n{"_id": "b", "text": "B.", "score": ' + value + "}\n"
    error = _error(_upload(world, "corpus.jsonl", corpus), 400, "beir-invalid")
    assert error == {
        "code": "beir-invalid",
        "message": f"corpus.jsonl line 2, column 37: {message}",
        "details": {"file": "corpus.jsonl", "line": 2, "column": 37},
    }
    assert db_state() == before


def test_json_loads_keeps_finite_numbers_and_strings_that_look_like_numbers():
    assert json_loads('{"a": "1e400", "b": 1e300, "c": -0.5, "NaN": [12, "Infinity"]}') == {
        "a": "1e400",
        "b": 1e300,
        "c": -0.5,
        "NaN": [12, "Infinity"],
    }
    with pytest.raises(JsonValueError) as raised:
        json_loads('["1e400", "x\\"1e999",\n  {"k": 1.5e999}]')
    assert (raised.value.line, raised.value.column, raised.value.message) == (
        2,
        9,
        "the number 1.5e999 is out of range",
    )


# --- 6. datetimes that leave years 1..9999 in UTC --------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("valid_from", "0001-01-01T00:00:00+05:00"),
        ("valid_until", "9999-12-31T23:59:59-05:00"),
        ("last_verified", "0001-01-01T04:59:59.999999+05:00"),
    ],
)
def test_a_datetime_that_overflows_in_utc_is_invalid(world, field, value):
    before = db_state()
    response = world.client.post(
        DOCS, {"documents": [{"id": "t", "text": "T.", field: value}]}, format="json"
    )
    error = _error(response, 400, "validation-error")
    assert error["details"] == {
        "fields": {f"documents[0].{field}": [f"Expected an ISO 8601 date or datetime, got {value!r}."]}
    }
    assert db_state() == before


def test_datetimes_at_the_edges_are_stored_as_utc_instants(world):
    documents = [
        {"id": "first", "text": "T.", "valid_from": "0001-01-01T05:00:00+05:00", "valid_until": "9999-12-31"},
        {
            "id": "last",
            "text": "T.",
            "valid_until": "9999-12-31T18:59:59-05:00",
            "last_verified": "0001-01-01",
        },
    ]
    assert world.client.post(DOCS, {"documents": documents}, format="json").status_code == 200
    first = world.client.get(f"{DOCS}/first").json()
    assert (first["valid_from"], first["valid_until"]) == (
        "0001-01-01T00:00:00Z",
        "9999-12-31T23:59:59.999999Z",
    )
    last = world.client.get(f"{DOCS}/last").json()
    assert (last["valid_until"], last["last_verified"]) == ("9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z")
    assert world.client.get(DOCS).status_code == 200


# --- 6b. a .jsonl row nested too deeply --------------------------------------------------------------------------


def test_a_deeply_nested_jsonl_row_is_beir_invalid_at_its_line(world):
    before = db_state()
    row = '{"_id": "deep", "text": "x", "m": ' + "[" * 100_000 + "]" * 100_000 + "}"
    error = _error(
        _upload(world, "corpus.jsonl", '{"_id": "a", "text": "A."}\n' + row + "\n"), 400, "beir-invalid"
    )
    assert error == {
        "code": "beir-invalid",
        "message": "corpus.jsonl line 2: JSON is nested too deeply",
        "details": {"file": "corpus.jsonl", "line": 2},
    }
    assert db_state() == before


# --- 6c. Django's request limits -----------------------------------------------------------------------------------


def test_too_many_query_parameters_is_a_bad_request(world):
    query = "&".join(f"p{i}=1" for i in range(1001))
    error = _error(world.client.get(f"{GS}?{query}"), 400, "bad-request")
    assert "DATA_UPLOAD_MAX_NUMBER_FIELDS" in error["message"]


def test_too_many_form_fields_or_files_is_a_bad_request(world):
    before = db_state()
    fields: dict[str, Any] = {f"f{i}": "1" for i in range(1001)}
    _error(world.client.post(UPLOADS, fields, format="multipart"), 400, "bad-request")
    files = [_file(f"d{i}.txt", "x") for i in range(101)]
    error = _error(world.client.post(UPLOADS, {"file": files}, format="multipart"), 400, "bad-request")
    assert "DATA_UPLOAD_MAX_NUMBER_FILES" in error["message"]
    assert db_state() == before


def test_a_form_field_over_the_memory_limit_is_payload_too_large(world):
    before = db_state()
    with override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1000):
        response = world.client.post(
            GOLDEN_UPLOAD,
            {"collection_id": "x" * 2000, "file": _file("golden.json", "[]")},
            format="multipart",
        )
    _error(response, 413, "payload-too-large")
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
    error = _error(response, 400, "validation-error")
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
    _error(APIClient().get(f"{API}/collections/%00"), 401, "unauthenticated")


# --- 8. lengths the API enforces, enforced by the importers too --------------------------------------------------


def test_an_over_long_jsonl_id_is_beir_invalid_at_its_line(world):
    before = db_state()
    corpus = '{"_id": "a", "text": "A."}\n' + json.dumps({"_id": "d" * 301, "text": "x"}) + "\n"
    error = _error(_upload(world, "corpus.jsonl", corpus), 400, "beir-invalid")
    assert error["message"] == 'corpus.jsonl line 2: field "_id" may have at most 300 characters (it has 301)'
    assert db_state() == before
    assert [row.id for row in read_corpus(['{"_id": "' + "d" * 300 + '"}'])] == ["d" * 300]


def test_import_beir_refuses_over_long_ids_and_collection_ids(world, tmp_path):
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "text": "One."}\n')
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q" * 301, "text": "Q?"}) + "\n")
    (tmp_path / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n")
    before = db_state()
    with pytest.raises(EvalsiteError) as raised:
        importers.beir_import(folder=tmp_path, tenant=world.tenant, collection_id="new", actor="t")
    assert (
        raised.value.message
        == 'queries.jsonl line 1: field "_id" may have at most 300 characters (it has 301)'
    )
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "Q?"}\n')
    for collection_id, problem in (
        ("c" * 201, "may have at most 200 characters (it has 201)"),
        ("..", 'may not be ".."'),
    ):
        with pytest.raises(EvalsiteError) as raised:
            importers.beir_import(
                folder=tmp_path, tenant=world.tenant, collection_id=collection_id, actor="t"
            )
        assert raised.value.message == f"collection_id: {problem}."
    assert db_state() == before
    call_command(
        "import_beir", str(tmp_path), "--cluster", "acme", "--tenant", "search", "--collection", "c" * 200
    )
    assert Collection.objects.filter(slug="c" * 200).exists()


@pytest.mark.parametrize(
    ("record", "field", "problem"),
    [
        (
            {"id": "k" * 301, "question": "Q?"},
            "id",
            'field "id" may have at most 300 characters (it has 301)',
        ),
        (
            {"question": "Q?", "tags": ["ok", "t" * 101]},
            "tags",
            'field "tags" item 1 may have at most 100 characters (it has 101)',
        ),
        ({"question": "Q?", "tags": ["a|b"]}, "tags", 'field "tags" item 0 may not contain "|"'),
    ],
)
def test_golden_json_ids_and_tags_get_the_api_limits(world, record, field, problem):
    before = db_state()
    golden = json.dumps([{"question": "Fine?"}, record], indent=1)
    error = _error(_golden_upload(world, golden), 400, "golden-schema")
    assert error["details"]["field"] == field
    assert error["details"]["index"] == 1
    assert error["message"].endswith(f"line 5: {problem}"), error["message"]
    assert db_state() == before


def test_golden_json_ids_and_tags_at_the_limits_are_accepted(world):
    golden = json.dumps([{"id": "k" * 300, "question": "Q?", "tags": ["t" * 100]}])
    assert _golden_upload(world, golden).status_code == 201
    assert GoldenEntry.objects.get(key="k" * 300).tags == ["t" * 100]


# --- 10. PATCH changes only what it names ----------------------------------------------------------------------


def _entry_json(world, entry: GoldenEntry) -> dict:
    return world.client.get(f"{GS}/{entry.pk}").json()


@pytest.mark.parametrize(
    "change",
    [
        {"reviewed": True},
        {"answerable": False},
        {"reference_answer": "New."},
        {"key": "k-new"},
        {"question": "Other?"},
    ],
)
def test_a_patch_keeps_every_field_it_does_not_name(world, change):
    (entry,) = _add(
        world,
        "How long do refunds take?",
        expected_document_ids=["refunds", "shipping"],
        grades={"refunds": 3, "shipping": 1},
        tags=["billing", "faq"],
        reference_answer="Thirty days.",
        key="q-1",
    )
    before = _entry_json(world, entry)
    response = world.client.patch(f"{GS}/{entry.pk}", change, format="json")
    assert response.status_code == 200, response.json()
    after = _entry_json(world, entry)
    assert response.json() == after
    unchanged = {k: v for k, v in before.items() if k not in (*change, "updated_at")}
    assert {k: after[k] for k in unchanged} == unchanged
    assert json.dumps({k: after[k] for k in unchanged}) == json.dumps(unchanged)  # byte-identical
    assert {k: after[k] for k in change} == change


def test_a_patch_of_one_list_leaves_the_other_lists_alone(world):
    (entry,) = _add(world, "Q?", expected_document_ids=["refunds"], tags=["a"], grades={"refunds": 2})
    response = world.client.patch(f"{GS}/{entry.pk}", {"tags": ["b"]}, format="json")
    assert response.status_code == 200, response.json()
    assert (response.json()["expected_document_ids"], response.json()["grades"]) == (
        ["refunds"],
        {"refunds": 2},
    )
    response = world.client.patch(
        f"{GS}/{entry.pk}", {"expected_document_ids": ["refunds", "warranty"]}, format="json"
    )
    assert response.json()["tags"] == ["b"]


# --- 12. entries that expect deleted documents; export and import back ------------------------------------------


def test_an_entry_expecting_a_deleted_document_can_still_be_edited(world):
    (entry,) = _add(world, "Refunds?", expected_document_ids=["refunds", "shipping"], grades={"refunds": 2})
    assert world.client.delete(f"{DOCS}/refunds").status_code == 204
    response = world.client.patch(f"{GS}/{entry.pk}", {"reviewed": True}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["expected_document_ids"] == ["refunds", "shipping"]
    # Keeping the deleted id while adding a known one is fine; adding an unknown one is not.
    ids = ["refunds", "shipping", "warranty"]
    response = world.client.patch(f"{GS}/{entry.pk}", {"expected_document_ids": ids}, format="json")
    assert response.status_code == 200, response.json()
    before = db_state()
    response = world.client.patch(
        f"{GS}/{entry.pk}", {"expected_document_ids": [*ids, "ghost"]}, format="json"
    )
    error = _error(response, 400, "unknown-documents")
    assert error["details"]["unknown_document_ids"] == ["ghost"]
    assert db_state() == before


def test_an_export_imports_back_into_its_own_collection_unchanged(world):
    _add(world, "Refund window?", "Shipping time?", expected_document_ids=["shipping"], tags=["ops"])
    services.golden_entries_add(
        collection=world.collection,
        entries=[
            services.EntryInput(
                question="Warranty?", key="w", expected_document_ids=["warranty"], grades={"warranty": 3}
            )
        ],
        actor="test",
    )
    world.client.delete(f"{DOCS}/shipping")
    exported = world.client.get(f"{GS}/export", {"collection_id": "handbook"}).content
    before = db_state()
    response = _golden_upload(world, exported)
    assert response.status_code == 200, response.json()  # nothing created
    assert response.json() == {"records": 3, "created": 0, "updated": 0, "unchanged": 3}
    assert db_state() == before  # grades too: golden.json has none, so the entries keep theirs


def test_an_import_without_ids_updates_the_entries_with_the_same_question(world):
    (entry,) = _add(world, "Refund window?", expected_document_ids=["refunds"], grades={"refunds": 2})
    golden = json.dumps(
        [
            {
                "question": "refund   WINDOW?",
                "expected_answer": "30 days.",
                "must_cite": ["refunds", "warranty"],
            },
            {"question": "Brand new?"},
        ]
    )
    response = _golden_upload(world, golden)
    assert response.json() == {"records": 2, "created": 1, "updated": 1, "unchanged": 0}
    entry.refresh_from_db()
    assert (entry.question, entry.reference_answer) == ("refund   WINDOW?", "30 days.")
    assert (entry.expected_document_ids, entry.grades) == (["refunds", "warranty"], {"refunds": 2})


def test_an_import_may_not_name_one_entry_twice(world):
    (entry,) = _add(world, "Refund window?", key="r")
    before = db_state()
    golden = json.dumps([{"id": "r", "question": "Renamed?"}, {"question": "Refund window?"}])
    error = _error(_golden_upload(world, golden), 409, "duplicate-question")
    assert error["details"]["existing_entry_id"] == str(entry.pk)
    assert db_state() == before


# --- 13. "|" in tags ----------------------------------------------------------------------------------------------


def test_a_tag_with_a_pipe_is_refused_by_post_and_patch(world):
    (entry,) = _add(world, "Q?", tags=["a"])
    before = db_state()
    body = {"collection_id": "handbook", "entries": [{"question": "Other?", "tags": ["ok", "a|b"]}]}
    error = _error(world.client.post(GS, body, format="json"), 400, "validation-error")
    assert error["details"] == {"fields": {"entries[0].tags[1]": ['A tag may not contain "|".']}}
    error = _error(
        world.client.patch(f"{GS}/{entry.pk}", {"tags": "|"}, format="json"), 400, "validation-error"
    )
    assert error["details"] == {"fields": {"tags[0]": ['A tag may not contain "|".']}}
    assert db_state() == before


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
    error = _error(response, 400, "invalid-body")
    assert error["message"] == "Multipart form parse error - Invalid boundary in multipart: None"
    assert db_state() == before


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
    response = _upload(world, "corpus.jsonl", '{"_id": "up", "text": "Up."}\n')
    _validate(openapi, docs.replace("documents", "uploads"), "post", 200, response.json())
    _validate(openapi, docs + "/{document_id}", "get", 200, world.client.get(f"{DOCS}/plain").json())
    _validate(openapi, docs, "get", 200, world.client.get(DOCS).json())
    _add(world, "Q?", key="k", tags=["t"])
    _add(world, "Unanswerable?", answerable=False)
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


# --- the pure rules ----------------------------------------------------------------------------------------------


def test_the_identifier_rules():
    assert collection_id_problem("handbook") is None
    assert collection_id_problem("a/b") == 'may not contain "/"'
    assert document_id_problem("a/b/c.txt") is None
    assert document_id_problem("d" * 301) == "may have at most 300 characters (it has 301)"
    assert key_problem("q-1") is None and key_problem("q\x00") is not None
    assert tag_problem("billing") is None and tag_problem("a|b") == 'may not contain "|"'


# --- the admin reads JSON and ids by the same rules -----------------------------------------------------------


def _document_form(document: Document, **overrides: str) -> dict[str, str]:
    pages = list(document.pages.order_by("number"))
    data = {
        "external_id": document.external_id,
        "title": document.title,
        "source": document.source,
        "metadata": "{}",
        "initial-metadata": "{}",
        "supersedes": "",
        "pages-TOTAL_FORMS": str(len(pages)),
        "pages-INITIAL_FORMS": str(len(pages)),
        "pages-MIN_NUM_FORMS": "0",
        "pages-MAX_NUM_FORMS": "1000",
        "_save": "Save",
    }
    for i, page in enumerate(pages):
        data |= {
            f"pages-{i}-id": str(page.pk),
            f"pages-{i}-document": str(document.pk),
            f"pages-{i}-number": str(page.number),
            f"pages-{i}-text": page.text,
        }
    return data | overrides


@pytest.mark.parametrize(
    ("metadata", "error"),
    [
        ('{"k": "\\ud800"}', "Line 1, column 8: lone surrogates are not valid Unicode."),
        ('{"k": "\\u0000"}', "Line 1, column 8: NUL characters are not allowed."),
        ('{"k": NaN}', "Line 1, column 7: NaN is not valid JSON."),
        ('{"k": 1e400}', "Line 1, column 7: the number 1e400 is out of range."),
        ('{"k": ' + "1" * 5000 + "}", "Line 1, column 7: an integer of 5000 digits is too long."),
        ('{"k": ' + "[" * 100_000 + "]" * 100_000 + "}", "JSON is nested too deeply."),
    ],
    ids=["surrogate", "nul", "nan", "overflow", "long-int", "deep"],
)
def test_the_admin_refuses_json_the_database_cannot_hold(admin_client, world, metadata, error):
    document = Document.objects.get(collection=world.collection, external_id="refunds")
    url = reverse("admin:goldenset_document_change", args=[document.pk])
    before = db_state()
    response = admin_client.post(url, _document_form(document, metadata=metadata))
    assert response.status_code == 200  # the form again, with the error
    assert response.context["adminform"].form.errors == {"metadata": [error]}
    assert db_state() == before


def test_the_admin_refuses_unusable_document_ids(admin_client, world):
    document = Document.objects.get(collection=world.collection, external_id="refunds")
    url = reverse("admin:goldenset_document_change", args=[document.pk])
    before = db_state()
    response = admin_client.post(url, _document_form(document, external_id="a/../b"))
    assert response.context["adminform"].form.errors == {
        "external_id": ['A document id may not have "." or ".." as a path segment.']
    }
    assert db_state() == before


@pytest.mark.parametrize(("slug", "problem"), [("..", 'may not be ".."'), ("a/b", 'may not contain "/"')])
def test_the_admin_refuses_unusable_collection_ids(admin_client, world, slug, problem):
    before = db_state()
    response = admin_client.post(
        reverse("admin:goldenset_collection_add"), {"tenant": world.tenant.pk, "slug": slug, "name": "N"}
    )
    assert response.context["adminform"].form.errors == {"slug": [f"A collection id {problem}."]}
    assert db_state() == before
    response = admin_client.post(
        reverse("admin:goldenset_collection_add"), {"tenant": world.tenant.pk, "slug": "fine", "name": "N"}
    )
    assert response.status_code == 302
    assert Collection.objects.filter(tenant=world.tenant, slug="fine").exists()
