"""Bad input on the lmkit API: each answers its 4xx code in the one envelope, naming the offending field or record,
never a 500, and changes nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.test import override_settings
from rest_framework.renderers import JSONRenderer
from rest_framework.test import APIClient

from evalsite.api.errors import envelope
from evalsite.tenancy.models import ApiKey
from evalsite.tenancy.services import api_key_create, api_key_revoke
from goldenset import services
from goldenset.models import GoldenEntry
from tests.support import add_entries, db_state, uploaded

API = "/lmkit/v1"
GS = "search/golden-set"
DOCS = "collections/handbook/documents"
UPLOADS = "collections/handbook/uploads"
ENTRY = "search/golden-set/{entry}"
GOLDEN_UPLOAD = "search/golden-set/upload"


def invalid(**fields: list[str]) -> tuple[str, dict]:
    """The validation-error message and details for these field errors (keyword names use __ for dots)."""
    named = {_path(k): v for k, v in fields.items()}
    first, errors = next(iter(named.items()))
    message = f"{first}: {errors[0]}"
    if len(named) > 1:
        message += f" (and {len(named) - 1} more field errors)"
    return message, {"fields": named}


def _path(name: str) -> str:
    # entries_0__question -> entries[0].question
    parts = name.split("__")
    out = []
    for part in parts:
        head, _, index = part.rpartition("_")
        out.append(f"{head}[{index}]" if index.isdigit() and head else part)
    return ".".join(out)


@dataclass
class Bad:
    method: str
    path: str
    status: int
    code: str
    message: str
    details: dict = field(default_factory=dict)
    json: Any = None  # a body sent as JSON
    raw: str | bytes | None = None  # or a raw body, with content_type
    content_type: str = "application/json"
    multipart: Callable[[], dict] | None = None  # or a multipart form
    auth: str | None = "key"  # "key" (the tenant's), None (no header), or a literal Authorization header
    settings: dict = field(default_factory=dict)


def _entries(*entries: dict, collection_id: str = "handbook") -> dict:
    return {"collection_id": collection_id, "entries": list(entries)}


def _documents(*documents: dict) -> dict:
    return {"documents": list(documents)}


def _nul_in(body: dict) -> Bad:
    """NUL anywhere in a JSON body (PostgreSQL cannot store it) is refused at its line and column."""
    sent = JSONRenderer().render(body).decode()  # exactly what the test client sends
    column = sent.index("\\u0000") + 1
    return Bad(
        "post",
        DOCS,
        400,
        "invalid-json",
        f"NUL character at line 1, column {column}: not allowed.",
        {"line": 1, "column": column},
        json=body,
    )


def _nested(path: str, head: str, depth: int, tail: str) -> Bad:
    """A body with arrays `depth` deep at the end of `head`: deeper than 100 is refused at the bracket that
    passes the limit (at 900, under Python's recursion limit, it used to parse, then break a serializer)."""
    column = len(head) + 1 + (100 - head.count("[") - head.count("{"))
    message = f"Malformed JSON at line 1, column {column}: arrays and objects nested more than 100 deep."
    raw = head + "[" * depth + "]" * depth + tail
    return Bad("post", path, 400, "invalid-json", message, {"line": 1, "column": column}, raw=raw)


NOT_A_DICT = "Invalid data. Expected a dictionary, but got list."
BAD_DATE = "Expected an ISO 8601 date or datetime, got {!r}."
NO_CREDENTIALS = "Authentication credentials were not provided."
BAD_SCHEME = "Authorization header must be 'Bearer <api key>'."

CASES = {
    # --- the transport: JSON, sizes, content types ----------------------------------------------------------
    "malformed-json": Bad(
        "post",
        GS,
        400,
        "invalid-json",
        "Malformed JSON at line 3, column 15: Expecting value.",
        {"line": 3, "column": 15},
        raw='{\n  "collection_id": "handbook",\n  "entries": [}\n}',
    ),
    "json-nan": Bad(
        "post",
        GS,
        400,
        "invalid-json",
        "Malformed JSON at line 1, column 14: NaN is not valid JSON.",
        {"line": 1, "column": 14},
        raw='{"entries": [NaN]}',
    ),
    "json-not-utf8": Bad(
        "post",
        GS,
        400,
        "invalid-json",
        "Request body is not UTF-8 (byte 19).",
        raw=b'{"collection_id": "\xff"}',
    ),
    "json-empty-body": Bad(
        "post", DOCS, 400, "invalid-json", "Request body is empty; a JSON object was expected.", raw=" \n"
    ),
    "json-nested-too-deeply": Bad(
        "post",
        GS,
        400,
        "invalid-json",
        "Malformed JSON at line 1, column 112: arrays and objects nested more than 100 deep.",
        {"line": 1, "column": 112},
        raw='{"entries": ' + "[" * 50_000 + "]" * 50_000 + "}",
    ),
    "json-nested-101-deep": _nested(GS, '{"entries": ', 101, "}"),
    "json-metadata-nested-900-deep": _nested(
        DOCS, '{"documents": [{"id": "deep", "text": "x", "metadata": {"k": ', 900, "}}]}"
    ),
    "json-grades-nested-900-deep": _nested(
        GS, '{"collection_id": "handbook", "entries": [{"question": "Q?", "grades": {"refunds": ', 900, "}}]}"
    ),
    "json-array-golden-set": Bad(
        "post",
        GS,
        400,
        "validation-error",
        *invalid(non_field_errors=[NOT_A_DICT]),
        json=[{"question": "Q?"}],
    ),
    "json-array-documents": Bad(
        "post", DOCS, 400, "validation-error", *invalid(non_field_errors=[NOT_A_DICT]), json=[{"id": "a"}]
    ),
    "json-array-collections": Bad(
        "post", "collections", 400, "validation-error", *invalid(non_field_errors=[NOT_A_DICT]), json=["x"]
    ),
    "json-array-patch": Bad(
        "patch", ENTRY, 400, "validation-error", *invalid(non_field_errors=[NOT_A_DICT]), json=[]
    ),
    "text-plain": Bad(
        "post",
        GS,
        415,
        "unsupported-media-type",
        'Unsupported media type "text/plain" in request.',
        raw="collection_id=handbook",
        content_type="text/plain",
    ),
    "json-to-an-upload": Bad(
        "post",
        UPLOADS,
        415,
        "unsupported-media-type",
        'Unsupported media type "application/json" in request.',
        json={"file": "corpus.jsonl"},
    ),
    "payload-too-large": Bad(
        "post",
        GS,
        413,
        "payload-too-large",
        "Request body of 3057 bytes exceeds the limit of 2048 bytes.",
        {"limit_bytes": 2048, "content_length": 3057},
        json=_entries({"question": "Q" * 3000 + "?"}),
        settings={"EVALSITE_MAX_REQUEST_BYTES": 2048},
    ),
    "upload-too-large": Bad(
        "post",
        UPLOADS,
        413,
        "payload-too-large",
        "Request body of 3133 bytes exceeds the limit of 2048 bytes.",
        {"limit_bytes": 2048, "content_length": 3133},
        multipart=lambda: {"file": uploaded("big.txt", "x " * 1500)},
        settings={"EVALSITE_MAX_REQUEST_BYTES": 2048},
    ),
    "too-many-entries": Bad(
        "post",
        GS,
        400,
        "too-many-entries",
        "entries: 3 in one call; the limit is 2.",
        {"field": "entries", "count": 3, "limit": 2},
        json=_entries({"question": "A?"}, {"question": "B?"}, {"question": "C?"}),
        settings={"EVALSITE_MAX_ENTRIES_PER_CALL": 2},
    ),
    "too-many-documents": Bad(
        "post",
        DOCS,
        400,
        "too-many-documents",
        "documents: 2 in one call; the limit is 1.",
        {"field": "documents", "count": 2, "limit": 1},
        json=_documents({"id": "a", "text": "A."}, {"id": "b", "text": "B."}),
        settings={"EVALSITE_MAX_DOCUMENTS_PER_CALL": 1},
    ),
    # --- routing -------------------------------------------------------------------------------------------
    "unknown-path": Bad(
        "get", "no-such-endpoint", 404, "not-found", "No API endpoint at /lmkit/v1/no-such-endpoint."
    ),
    "unknown-sub-path": Bad(
        "post",
        "collections/handbook/nothing",
        404,
        "not-found",
        "No API endpoint at /lmkit/v1/collections/handbook/nothing.",
        json={},
    ),
    "put-collections": Bad(
        "put", "collections", 405, "method-not-allowed", 'Method "PUT" not allowed.', json={}
    ),
    "patch-collection": Bad(
        "patch", "collections/handbook", 405, "method-not-allowed", 'Method "PATCH" not allowed.', json={}
    ),
    "delete-golden-set": Bad("delete", GS, 405, "method-not-allowed", 'Method "DELETE" not allowed.'),
    "post-document": Bad(
        "post", f"{DOCS}/refunds", 405, "method-not-allowed", 'Method "POST" not allowed.', json={}
    ),
    "get-cancel": Bad("get", "jobs/abc/cancel", 405, "method-not-allowed", 'Method "GET" not allowed.'),
    "get-upload": Bad("get", UPLOADS, 405, "method-not-allowed", 'Method "GET" not allowed.'),
    # --- authentication ------------------------------------------------------------------------------------
    "no-authorization": Bad(
        "post", GS, 401, "unauthenticated", NO_CREDENTIALS, json=_entries({"question": "Q?"}), auth=None
    ),
    "no-authorization-get": Bad("get", "collections", 401, "unauthenticated", NO_CREDENTIALS, auth=None),
    "token-scheme": Bad("get", GS, 401, "unauthenticated", BAD_SCHEME, auth="Token {key}"),
    "basic-scheme": Bad(
        "delete", "collections/handbook", 401, "unauthenticated", BAD_SCHEME, auth="Basic dXNlcjpwYXNz"
    ),
    "bearer-without-key": Bad("get", GS, 401, "unauthenticated", BAD_SCHEME, auth="Bearer   "),
    "unknown-key": Bad(
        "post",
        DOCS,
        401,
        "unauthenticated",
        "Unknown API key.",
        json=_documents({"id": "x"}),
        auth="Bearer esk_nope",
    ),
    "revoked-key": Bad(
        "delete",
        "collections/handbook",
        401,
        "unauthenticated",
        "This API key has been revoked.",
        auth="revoked",
    ),
    # --- golden-set entries --------------------------------------------------------------------------------
    "unknown-collection": Bad(
        "post",
        GS,
        404,
        "not-found",
        "Collection nope not found.",
        {"resource": "Collection", "id": "nope"},
        json=_entries({"question": "Q?"}, collection_id="nope"),
    ),
    "collection-id-missing": Bad(
        "post",
        GS,
        400,
        "validation-error",
        *invalid(collection_id=["This field is required."]),
        json={"entries": [{"question": "Q?"}]},
    ),
    "entries-not-a-list": Bad(
        "post",
        GS,
        400,
        "validation-error",
        *invalid(entries=['Expected a list of items but got type "str".']),
        json={"collection_id": "handbook", "entries": "How long is the refund window?"},
    ),
    "entries-empty": Bad(
        "post",
        GS,
        400,
        "validation-error",
        *invalid(entries=["This list may not be empty."]),
        json=_entries(),
    ),
    "entry-not-an-object": Bad(
        "post",
        GS,
        400,
        "validation-error",
        *invalid(entries_1=['Expected a dictionary of items but got type "str".']),
        json=_entries({"question": "Q?"}, "How long is the refund window?"),
    ),
    "question-a-number": Bad(
        "post",
        GS,
        400,
        "validation-error",
        *invalid(entries_0__question=["Not a valid string."]),
        json=_entries({"question": 42}),
    ),
    "question-missing": Bad(
        "post",
        GS,
        400,
        "validation-error",
        *invalid(entries_0__question=["This field is required."]),
        json=_entries({"expected_document_ids": ["refunds"]}),
    ),
    "expected-ids-a-dict": Bad(
        "post",
        GS,
        400,
        "validation-error",
        *invalid(entries_0__expected_document_ids=['Expected a list of items but got type "dict".']),
        json=_entries({"question": "Q?", "expected_document_ids": {"refunds": 1}}),
    ),
    "expected-id-null": Bad(
        "post",
        GS,
        400,
        "validation-error",
        *invalid(entries_0__expected_document_ids_1=["This field may not be null."]),
        json=_entries({"question": "Q?", "expected_document_ids": ["refunds", None]}),
    ),
    "answerable-maybe": Bad(
        "post",
        GS,
        400,
        "validation-error",
        *invalid(entries_1__answerable=["Must be a valid boolean."]),
        json=_entries({"question": "A?"}, {"question": "B?", "answerable": "maybe"}),
    ),
    "several-bad-fields": Bad(
        "post",
        GS,
        400,
        "validation-error",
        *invalid(
            entries_0__question=["Not a valid string."],
            entries_0__answerable=["Must be a valid boolean."],
            entries_2__tags=['Expected a list of items but got type "dict".'],
        ),
        json=_entries(
            {"question": 1.5, "answerable": "maybe"}, {"question": "Fine?"}, {"question": "T?", "tags": {}}
        ),
    ),
    "grade-not-a-number": Bad(
        "post",
        GS,
        400,
        "validation-error",
        *invalid(entries_0__grades__refunds=["A valid integer is required."]),
        json=_entries(
            {"question": "Q?", "expected_document_ids": ["refunds"], "grades": {"refunds": "high"}}
        ),
    ),
    "unknown-document-ids": Bad(
        "post",
        GS,
        400,
        "unknown-documents",
        "entries[1].expected_document_ids: 2 unknown in collection handbook: ghost, phantom",
        {"index": 1, "field": "expected_document_ids", "unknown_document_ids": ["ghost", "phantom"]},
        json=_entries(
            {"question": "A?", "expected_document_ids": ["refunds"]},
            {"question": "B?", "expected_document_ids": ["ghost", "refunds", "phantom"]},
        ),
    ),
    "rival-document-id": Bad(
        "post",
        GS,
        400,
        "unknown-documents",
        "entries[0].expected_document_ids: 1 unknown in collection handbook: rival-only",
        {"index": 0, "field": "expected_document_ids", "unknown_document_ids": ["rival-only"]},
        json=_entries({"question": "A?", "expected_document_ids": ["rival-only"]}),
    ),
    "empty-question": Bad(
        "post",
        GS,
        400,
        "empty-question",
        "entries[1].question: the question is empty.",
        {"index": 1, "field": "question"},
        json=_entries({"question": "Fine?"}, {"question": " \n\t "}),
    ),
    "duplicate-of-existing-question": Bad(
        "post",
        GS,
        409,
        "duplicate-question",
        "entries[0]: the question already exists in collection handbook (entry {entry}).",
        {"index": 0, "question": "refund WINDOW?", "existing_entry_id": "{entry}"},
        json=_entries({"question": "refund WINDOW?"}),
    ),
    "cluster-id-a-number": Bad(
        "post",
        DOCS,
        400,
        "validation-error",
        *invalid(cluster_id=["Not a valid string."]),
        json={"cluster_id": 7, **_documents({"id": "a", "text": "A."})},
    ),
    # --- golden-set list, export, patch --------------------------------------------------------------------
    "origin-nope": Bad(
        "get",
        f"{GS}?origin=Nope",
        400,
        "validation-error",
        *invalid(origin=['"Nope" is not a valid choice.']),
    ),
    "reviewed-maybe": Bad(
        "get",
        f"{GS}?reviewed=maybe",
        400,
        "validation-error",
        *invalid(reviewed=["Must be a valid boolean."]),
    ),
    "answerable-perhaps": Bad(
        "get",
        f"{GS}?answerable=perhaps&reviewed=true",
        400,
        "validation-error",
        *invalid(answerable=["Must be a valid boolean."]),
    ),
    "golden-set-page-999": Bad("get", f"{GS}?page=999", 404, "not-found", "Invalid page."),
    "documents-page-999": Bad("get", f"{DOCS}?page=999", 404, "not-found", "Invalid page."),
    "collections-page-999": Bad("get", "collections?page=999", 404, "not-found", "Invalid page."),
    "list-unknown-collection": Bad(
        "get",
        f"{GS}?collection_id=nope",
        404,
        "not-found",
        "Collection nope not found.",
        {"resource": "Collection", "id": "nope"},
    ),
    "export-without-collection": Bad(
        "get",
        f"{GS}/export",
        400,
        "validation-error",
        "collection_id: this parameter is required.",
        {"field": "collection_id"},
    ),
    "patch-answerable-maybe": Bad(
        "patch",
        ENTRY,
        400,
        "validation-error",
        *invalid(answerable=["Must be a valid boolean."]),
        json={"answerable": "maybe"},
    ),
    "patch-question-a-number": Bad(
        "patch",
        ENTRY,
        400,
        "validation-error",
        *invalid(question=["Not a valid string."]),
        json={"question": 7},
    ),
    "patch-empty-question": Bad(
        "patch",
        ENTRY,
        400,
        "empty-question",
        "entries[0].question: the question is empty.",
        {"index": 0, "field": "question"},
        json={"question": ""},
    ),
    "patch-unknown-document": Bad(
        "patch",
        ENTRY,
        400,
        "unknown-documents",
        "entries[0].expected_document_ids: 1 unknown in collection handbook: ghost",
        {"index": 0, "field": "expected_document_ids", "unknown_document_ids": ["ghost"]},
        json={"expected_document_ids": ["ghost"]},
    ),
    "patch-unknown-entry": Bad(
        "patch",
        f"{GS}/not-a-uuid",
        404,
        "not-found",
        "Golden entry not-a-uuid not found.",
        {"resource": "Golden entry", "id": "not-a-uuid"},
        json={"question": "Q?"},
    ),
    # --- golden-set upload ---------------------------------------------------------------------------------
    "golden-upload-without-file": Bad(
        "post",
        GOLDEN_UPLOAD,
        400,
        "validation-error",
        *invalid(file=["This field may not be null."]),
        multipart=lambda: {"collection_id": "handbook"},
    ),
    "golden-upload-malformed": Bad(
        "post",
        GOLDEN_UPLOAD,
        400,
        "golden-invalid",
        "golden.json line 2, column 1: Expecting value",
        {"line": 2, "column": 1},
        multipart=lambda: {
            "collection_id": "handbook",
            "file": uploaded("golden.json", '[{"question": "A?"},\n]'),
        },
    ),
    # --- documents -----------------------------------------------------------------------------------------
    "documents-unknown-collection": Bad(
        "post",
        "collections/nope/documents",
        404,
        "not-found",
        "Collection nope not found.",
        {"resource": "Collection", "id": "nope"},
        json=_documents({"id": "a", "text": "A."}),
    ),
    "documents-not-a-list": Bad(
        "post",
        DOCS,
        400,
        "validation-error",
        *invalid(documents=['Expected a list of items but got type "dict".']),
        json={"documents": {"id": "a"}},
    ),
    "documents-empty": Bad(
        "post",
        DOCS,
        400,
        "validation-error",
        *invalid(documents=["This list may not be empty."]),
        json=_documents(),
    ),
    "document-without-id": Bad(
        "post",
        DOCS,
        400,
        "validation-error",
        *invalid(documents_1__id=["This field is required."]),
        json=_documents({"id": "a", "text": "A."}, {"text": "No id."}),
    ),
    "document-invalid-date": Bad(
        "post",
        DOCS,
        400,
        "validation-error",
        *invalid(documents_0__valid_until=[BAD_DATE.format("2024-13-45")]),
        json=_documents({"id": "a", "text": "A.", "valid_until": "2024-13-45"}),
    ),
    "document-impossible-datetime": Bad(
        "post",
        DOCS,
        400,
        "validation-error",
        *invalid(documents_0__valid_until=[BAD_DATE.format("2024-02-30T10:00:00Z")]),
        json=_documents({"id": "a", "text": "A.", "valid_until": "2024-02-30T10:00:00Z"}),
    ),
    "document-date-a-number": Bad(
        "post",
        DOCS,
        400,
        "validation-error",
        *invalid(documents_0__valid_from=["Expected an ISO 8601 date or datetime, got 20240101."]),
        json=_documents({"id": "a", "text": "A.", "valid_from": 20240101}),
    ),
    "document-until-before-from": Bad(
        "post",
        DOCS,
        400,
        "validation-error",
        *invalid(documents_1__valid_until=["valid_until is before valid_from."]),
        json=_documents(
            {"id": "a", "text": "A."},
            {"id": "b", "text": "B.", "valid_from": "2024-06-02", "valid_until": "2024-06-01"},
        ),
    ),
    "document-text-and-pages": Bad(
        "post",
        DOCS,
        400,
        "validation-error",
        *invalid(documents_0=['Send either "text" or "pages", not both.']),
        json=_documents({"id": "a", "text": "A.", "pages": ["A."]}),
    ),
    "document-page-not-text": Bad(
        "post",
        DOCS,
        400,
        "validation-error",
        *invalid(documents_0__pages_1=['A page must be a string or an object with a "text" string.']),
        json=_documents({"id": "a", "pages": ["Fine.", {"body": "wrong key"}]}),
    ),
    "document-text-with-nul": _nul_in(_documents({"id": "a", "text": "A\x00B."})),
    "document-page-with-nul": _nul_in(_documents({"id": "a", "pages": ["A\x00B."]})),
    "document-metadata-with-nul": _nul_in(_documents({"id": "a", "text": "x", "metadata": {"k": "\x00"}})),
    "document-metadata-a-list": Bad(
        "post",
        DOCS,
        400,
        "validation-error",
        *invalid(documents_0__metadata=['Expected a dictionary of items but got type "list".']),
        json=_documents({"id": "a", "text": "A.", "metadata": ["x"]}),
    ),
    # --- collections ---------------------------------------------------------------------------------------
    "collection-id-blank": Bad(
        "post",
        "collections",
        400,
        "validation-error",
        *invalid(collection_id=["This field may not be blank."]),
        json={"collection_id": "   "},
    ),
    "collection-id-with-slash": Bad(
        "post",
        "collections",
        400,
        "validation-error",
        *invalid(collection_id=['A collection id may not contain "/".']),
        json={"collection_id": "team/handbook"},
    ),
    "collection-exists": Bad(
        "post",
        "collections",
        409,
        "collection-exists",
        "Collection handbook already exists.",
        {"collection_id": "handbook"},
        json={"collection_id": "handbook"},
    ),
    # --- document uploads ----------------------------------------------------------------------------------
    "upload-without-file": Bad(
        "post",
        UPLOADS,
        400,
        "validation-error",
        *invalid(file=["This list may not be empty."]),
        multipart=lambda: {"cluster_id": "acme"},
    ),
    "upload-unsupported-file": Bad(
        "post",
        UPLOADS,
        415,
        "unsupported-file",
        "notes: unsupported file type (none); upload .jsonl (BEIR corpus rows), .md or .txt.",
        {"file": "notes"},
        multipart=lambda: {"file": uploaded("notes", "Plain.")},
    ),
    "upload-jsonl-bad-line": Bad(
        "post",
        UPLOADS,
        400,
        "beir-invalid",
        "corpus.jsonl line 3, column 13: Expecting ',' delimiter",
        {"file": "corpus.jsonl", "line": 3, "column": 13},
        multipart=lambda: {"file": uploaded("corpus.jsonl", '{"_id": "a"}\n\n{"_id": "b" "text": "x"}\n')},
    ),
    "upload-jsonl-row-not-an-object": Bad(
        "post",
        UPLOADS,
        400,
        "beir-invalid",
        "corpus.jsonl line 2: expected a JSON object",
        {"file": "corpus.jsonl", "line": 2},
        multipart=lambda: {"file": uploaded("corpus.jsonl", '{"_id": "a"}\n["b"]\n')},
    ),
    "upload-jsonl-without-id": Bad(
        "post",
        UPLOADS,
        400,
        "beir-invalid",
        'corpus.jsonl line 1: field "_id" must be a non-empty string',
        {"file": "corpus.jsonl", "line": 1},
        multipart=lambda: {"file": uploaded("corpus.jsonl", '{"title": "No id", "text": "x"}\n')},
    ),
    "upload-markdown-not-utf8": Bad(
        "post",
        UPLOADS,
        400,
        "invalid-file",
        "guide.md: not UTF-8 (byte 2).",
        {"file": "guide.md", "byte": 2},
        multipart=lambda: {"file": uploaded("guide.md", b"# \xff\xfe")},
    ),
    "upload-without-documents": Bad(
        "post",
        UPLOADS,
        400,
        "empty-file",
        "corpus.jsonl: the file is empty.",
        {"file": "corpus.jsonl"},
        multipart=lambda: {"file": uploaded("corpus.jsonl", "\n\n")},
    ),
}


@pytest.fixture
def entry(world) -> GoldenEntry:
    (created,) = add_entries(world.collection, "Refund window?", expected_document_ids=["refunds"])
    rival = world.other_tenant.collections.get()
    services.documents_upsert(
        collection=rival, documents=[services.DocumentInput(id="rival-only", pages=["R."])], actor="test"
    )
    return created


def _client(world, auth: str | None):
    if auth == "key":
        return world.client
    if auth == "revoked":
        key, secret = api_key_create(tenant=world.tenant, role="admin", name="old", actor="test")
        api_key_revoke(key=key, actor="test")
        assert ApiKey.objects.get(pk=key.pk).revoked_at is not None
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        return client
    client = APIClient()
    if auth is not None:
        client.credentials(HTTP_AUTHORIZATION=auth.format(key=world.key))
    return client


def _send(client, bad: Bad, path: str):
    url = f"{API}/{path}"
    if bad.multipart is not None:
        return getattr(client, bad.method)(url, bad.multipart(), format="multipart")
    if bad.raw is not None:
        return getattr(client, bad.method)(url, bad.raw, content_type=bad.content_type)
    if bad.json is not None:
        return getattr(client, bad.method)(url, bad.json, format="json")
    return getattr(client, bad.method)(url)


@pytest.mark.parametrize("case", CASES)
def test_it_rejects_bad_input_with_the_envelope_and_changes_nothing(world, entry, case):
    bad = CASES[case]
    client = _client(world, bad.auth)
    path = bad.path.format(entry=entry.pk)
    before = db_state()
    with override_settings(**bad.settings):
        response = _send(client, bad, path)

    assert response.status_code != 500
    assert response.status_code == bad.status, response.content
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert body.keys() == {"error"} and body["error"].keys() == {"code", "message", "details"}
    details = json.loads(json.dumps(bad.details).replace("{entry}", str(entry.pk)))
    message = bad.message.replace("{entry}", str(entry.pk))
    assert body == envelope(bad.code, message, details)
    if bad.status == 401:
        assert response["WWW-Authenticate"] == 'Bearer realm="lmkit"'
    assert db_state() == before


def test_a_payload_just_under_the_limit_is_accepted(world):
    body = json.dumps(_entries({"question": "Q?"}))
    with override_settings(EVALSITE_MAX_REQUEST_BYTES=len(body.encode())):
        response = world.client.post(f"{API}/{GS}", body, content_type="application/json")
    assert response.status_code == 201, response.json()
    assert GoldenEntry.objects.filter(question="Q?").count() == 1


def test_a_body_nested_100_deep_is_accepted_and_stored(world):
    # The body's object, documents, a document, its metadata (4 levels), then 96 arrays: 100 in all.
    deep = "[" * 96 + '"bottom"' + "]" * 96
    body = '{"documents": [{"id": "deep", "text": "x", "metadata": {"k": ' + deep + "}}]}"
    response = world.client.post(f"{API}/{DOCS}", body, content_type="application/json")
    assert response.status_code == 200, response.json()
    assert json.dumps(world.client.get(f"{API}/{DOCS}/deep").json()["metadata"]["k"]) == deep


def test_entries_at_the_limit_are_accepted(world):
    with override_settings(EVALSITE_MAX_ENTRIES_PER_CALL=2):
        response = world.client.post(
            f"{API}/{GS}", _entries({"question": "A?"}, {"question": "B?"}), format="json"
        )
    assert response.status_code == 201, response.json()
    assert GoldenEntry.objects.filter(collection=world.collection).count() == 2
