"""Collection ids, document ids, golden keys and tags (fuzzing findings 3, 8, 11 and 13): one set of rules for
the API, the uploads and the importers; what would break a header or a URL is refused, what stays reachable is
kept."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.utils.http import content_disposition_header

from evalsite.errors import EvalsiteError
from goldenset import importers
from goldenset.beir import read_corpus
from goldenset.beir_import import beir_import
from goldenset.models import Collection, GoldenEntry
from goldenset.text import (
    collection_id_problem,
    document_id_problem,
    key_problem,
    tag_problem,
)
from tests.goldenset.conftest import API, DOCS, GS, golden_upload, upload
from tests.support import add_entries, db_state, refused

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
    error = refused(response, 400, "validation-error")
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
    error = refused(response, 400, "validation-error")
    assert error["details"] == {"fields": {"documents[0].id": [f"A document id {problem}."]}}
    row = json.dumps({"_id": document_id, "text": "T."})
    error = refused(
        upload(world, "corpus.jsonl", '{"_id": "ok", "text": "x"}\n' + row + "\n"), 400, "beir-invalid"
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
    error = refused(upload(world, "...md", "# Dots"), 400, "invalid-file")
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
    assert "entries[0].key" in refused(response, 400, "validation-error")["details"]["fields"]
    golden = json.dumps([{"id": key, "question": "Q?"}])
    error = refused(golden_upload(world, golden), 400, "golden-schema")
    assert error["details"]["field"] == "id"
    assert "control characters" in error["message"]
    assert db_state() == before


def test_the_service_refuses_bad_keys_and_tags_from_any_writer(world):
    with pytest.raises(EvalsiteError) as raised:
        add_entries(world.collection, "Q?", key="a\tb")
    assert raised.value.details == {"index": 0, "field": "key"}
    with pytest.raises(EvalsiteError) as raised:
        add_entries(world.collection, "Q?", tags=["ok", "a|b"])
    assert raised.value.message == 'entries[0].tags[1]: may not contain "|".'
    assert not GoldenEntry.objects.exists()


# --- 8. lengths the API enforces, enforced by the importers too --------------------------------------------------


def test_an_over_long_jsonl_id_is_beir_invalid_at_its_line(world):
    before = db_state()
    corpus = '{"_id": "a", "text": "A."}\n' + json.dumps({"_id": "d" * 301, "text": "x"}) + "\n"
    error = refused(upload(world, "corpus.jsonl", corpus), 400, "beir-invalid")
    assert error["message"] == 'corpus.jsonl line 2: field "_id" may have at most 300 characters (it has 301)'
    assert db_state() == before
    assert [row.id for row in read_corpus(['{"_id": "' + "d" * 300 + '"}'])] == ["d" * 300]


def test_import_beir_refuses_over_long_ids_and_collection_ids(world, tmp_path):
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "text": "One."}\n')
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q" * 301, "text": "Q?"}) + "\n")
    (tmp_path / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n")
    before = db_state()
    with pytest.raises(EvalsiteError) as raised:
        beir_import(folder=tmp_path, tenant=world.tenant, collection_id="new", actor="t")
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
            beir_import(folder=tmp_path, tenant=world.tenant, collection_id=collection_id, actor="t")
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
    error = refused(golden_upload(world, golden), 400, "golden-schema")
    assert error["details"]["field"] == field
    assert error["details"]["index"] == 1
    assert error["message"].endswith(f"line 5: {problem}"), error["message"]
    assert db_state() == before


def test_golden_json_ids_and_tags_at_the_limits_are_accepted(world):
    golden = json.dumps([{"id": "k" * 300, "question": "Q?", "tags": ["t" * 100]}])
    assert golden_upload(world, golden).status_code == 201
    assert GoldenEntry.objects.get(key="k" * 300).tags == ["t" * 100]


# --- 13. "|" in tags ----------------------------------------------------------------------------------------------


def test_a_tag_with_a_pipe_is_refused_by_post_and_patch(world):
    (entry,) = add_entries(world.collection, "Q?", tags=["a"])
    before = db_state()
    body = {"collection_id": "handbook", "entries": [{"question": "Other?", "tags": ["ok", "a|b"]}]}
    error = refused(world.client.post(GS, body, format="json"), 400, "validation-error")
    assert error["details"] == {"fields": {"entries[0].tags[1]": ['A tag may not contain "|".']}}
    error = refused(
        world.client.patch(f"{GS}/{entry.pk}", {"tags": "|"}, format="json"), 400, "validation-error"
    )
    assert error["details"] == {"fields": {"tags[0]": ['A tag may not contain "|".']}}
    assert db_state() == before


# --- the pure rules ----------------------------------------------------------------------------------------------


def test_the_identifier_rules():
    assert collection_id_problem("handbook") is None
    assert collection_id_problem("a/b") == 'may not contain "/"'
    assert document_id_problem("a/b/c.txt") is None
    assert document_id_problem("d" * 301) == "may have at most 300 characters (it has 301)"
    assert key_problem("q-1") is None and key_problem("q\x00") is not None
    assert tag_problem("billing") is None and tag_problem("a|b") == 'may not contain "|"'
