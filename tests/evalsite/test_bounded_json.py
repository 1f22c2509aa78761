"""JSON values the database cannot hold (fuzzing findings 2, 4, 5, 6 and 6b): metadata that is not an object,
lone surrogates, non-finite or overflowing numbers, datetimes outside years 1..9999 in UTC and rows nested too
deeply are refused at their line and position in bodies, .jsonl rows and golden files, and change nothing."""

from __future__ import annotations

import pytest

from evalsite.bounded_json import JsonValueError, find_lone_surrogate, json_loads
from evalsite.errors import EvalsiteError
from goldenset.beir import read_qrels, read_queries
from goldenset.golden_files import GoldenFileError, parse_golden
from tests.goldenset.conftest import DOCS, GS, golden_upload, upload
from tests.support import db_state, refused

# --- 2. a .jsonl row whose metadata is not an object ----------------------------------------------------------


@pytest.mark.parametrize(
    ("metadata", "kind"),
    [('"draft"', "a string"), ('["a", "b"]', "a list"), ("7", "a number"), ("true", "a boolean")],
)
def test_a_jsonl_row_whose_metadata_is_not_an_object_is_refused_at_its_line(world, metadata, kind):
    corpus = '{"_id": "a", "text": "A."}\n{"_id": "b", "text": "B.", "metadata": ' + metadata + "}\n"
    before = db_state()
    error = refused(upload(world, "corpus.jsonl", corpus), 400, "beir-invalid")
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
    assert upload(world, "corpus.jsonl", corpus).status_code == 200
    assert world.client.get(f"{DOCS}/m1").json()["metadata"] == {"lang": "en"}
    assert world.client.get(f"{DOCS}/m2").json()["metadata"] == {"lang": "de"}
    assert world.client.get(DOCS).status_code == 200


# --- 4. lone surrogates ----------------------------------------------------------------------------------------


def test_a_lone_surrogate_in_a_json_body_is_refused_at_its_line_and_column(world):
    before = db_state()
    body = '{"documents": [\n  {"id": "a", "text": "x", "metadata": {"k": "ok \\ud800"}}]}'
    response = world.client.post(DOCS, body, content_type="application/json")
    error = refused(response, 400, "invalid-json")
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
        refused(world.client.post(GS, body, content_type="application/json"), 400, "invalid-json")
    assert db_state() == before


def test_a_surrogate_pair_is_one_character_and_accepted(world):
    body = '{"documents": [{"id": "emoji", "text": "x", "metadata": {"k": "\\ud83d\\ude00 \\\\ud800"}}]}'
    assert world.client.post(DOCS, body, content_type="application/json").status_code == 200
    assert world.client.get(f"{DOCS}/emoji").json()["metadata"] == {"k": "\U0001f600 \\ud800"}


def test_a_lone_surrogate_in_golden_json_is_golden_invalid_at_its_position(world):
    before = db_state()
    golden = '[\n  {"question": "Refund \\ud83d window?"}\n]'
    error = refused(golden_upload(world, golden), 400, "golden-invalid")
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
    error = refused(upload(world, "corpus.jsonl", corpus), 400, "beir-invalid")
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
    error = refused(upload(world, name, b"# Title\n\xed\xa0\x80"), 400, "invalid-file")
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
    error = refused(world.client.post(DOCS, body, content_type="application/json"), 400, "invalid-json")
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
    error = refused(upload(world, "corpus.jsonl", corpus), 400, "beir-invalid")
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
    error = refused(response, 400, "validation-error")
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
    error = refused(
        upload(world, "corpus.jsonl", '{"_id": "a", "text": "A."}\n' + row + "\n"), 400, "beir-invalid"
    )
    assert error == {
        "code": "beir-invalid",
        "message": "corpus.jsonl line 2, column 134: arrays and objects nested more than 100 deep",
        "details": {"file": "corpus.jsonl", "line": 2, "column": 134},
    }
    assert db_state() == before
