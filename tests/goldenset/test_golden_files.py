"""Unit tests for goldenset.golden_files: pure Python, no database, no Django."""

from __future__ import annotations

import json

import pytest

from goldenset.golden_files import GoldenFileError, GoldenRecord, dump_golden, parse_golden

REFUND = {
    "id": "refund-window",
    "question": "How long do customers have to request a refund?",
    "expected_answer": "Customers get a full refund within 30 days.",
    "must_cite": ["policies/refunds"],
    "tags": ["policy"],
}
REFUND_RECORD = GoldenRecord(
    id="refund-window",
    question="How long do customers have to request a refund?",
    expected_answer="Customers get a full refund within 30 days.",
    must_cite=("policies/refunds",),
    tags=("policy",),
)
CEO_RECORD = GoldenRecord(question="Who is the CEO of Mars?", answerable=False)


def _list_file(*records: dict) -> str:
    """One record per line starting on line 2, so record i starts on line i + 2."""
    return "[\n" + ",\n".join(json.dumps(r) for r in records) + "\n]\n"


# ---------------------------------------------------------------- valid files


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(
            json.dumps([REFUND, {"question": "Who is the CEO of Mars?", "answerable": False}], indent=2),
            [REFUND_RECORD, CEO_RECORD],
            id="list",
        ),
        pytest.param(
            json.dumps({"questions": [REFUND, {"question": "Who is the CEO of Mars?", "answerable": False}]}),
            [REFUND_RECORD, CEO_RECORD],
            id="questions-object",
        ),
        pytest.param(
            json.dumps([{"id": 42, "question": "Q?"}]),
            [GoldenRecord(id="42", question="Q?")],
            id="integer-id",
        ),
        pytest.param(
            b"\xef\xbb\xbf" + json.dumps([REFUND]).encode(),
            [REFUND_RECORD],
            id="bom-bytes",
        ),
        pytest.param("\ufeff" + json.dumps([REFUND]), [REFUND_RECORD], id="bom-str"),
        pytest.param(
            json.dumps([{"question": "Q?", "must_cite": []}]),
            [GoldenRecord(question="Q?")],
            id="empty-must-cite",
        ),
        pytest.param(
            json.dumps([{"question": "Où est la politique de remboursement ?"}], ensure_ascii=False).encode(),
            [GoldenRecord(question="Où est la politique de remboursement ?")],
            id="utf8-bytes",
        ),
        pytest.param("[]", [], id="empty-list"),
        pytest.param('{"questions": []}', [], id="empty-questions"),
        pytest.param(
            '{"questions": [{"question": "Old?"}], "questions": [{"question": "New?"}]}',
            [GoldenRecord(question="New?")],
            id="last-questions-key-wins",
        ),
    ],
)
def test_parse_valid(data, expected):
    assert parse_golden(data) == expected


def test_round_trip():
    records = [
        REFUND_RECORD,
        CEO_RECORD,
        GoldenRecord(id="7", question="Ünïcödé “quotes”?", tags=("a", "b"), must_cite=("x", "y/z")),
    ]
    text = dump_golden(records)
    assert parse_golden(text) == records
    assert parse_golden(text.encode()) == records


def test_dump_layout():
    text = dump_golden([REFUND_RECORD, CEO_RECORD])
    assert text.endswith("]\n")
    assert text.startswith('[\n  {\n    "id": "refund-window",\n')
    first, second = json.loads(text)
    assert list(first) == ["id", "question", "expected_answer", "must_cite", "tags"]
    assert list(second) == ["question", "expected_answer", "must_cite", "tags", "answerable"]
    assert second["answerable"] is False


def test_reported_line_is_exact_on_multiline_file():
    text = (
        "{\n"  # 1
        '  "questions": [\n'  # 2
        "    {\n"  # 3
        '      "id": "a",\n'  # 4
        '      "question": "First?"\n'  # 5
        "    },\n"  # 6
        '    {"id": "b", "question": "Second?"}\n'  # 7
        "    ,\n"  # 8
        '    {"id": "c", "question": "Third?", "must_site": ["x"]}\n'  # 9
        "  ]\n"  # 10
        "}\n"
    )
    with pytest.raises(GoldenFileError) as info:
        parse_golden(text)
    assert info.value.code == "golden-schema"
    assert info.value.details == {"index": 2, "id": "c", "field": "must_site", "line": 9}
    assert "line 9" in info.value.message
    assert info.value.status_code == 400


def test_record_starting_mid_line_after_multiline_string_escapes():
    # Brackets, commas and escaped quotes inside strings must not confuse the record walk.
    text = '[{"question": "a, b ] \\" [ c"},\n\n  {"question": "ok?", "tags": [""]}]'
    with pytest.raises(GoldenFileError) as info:
        parse_golden(text)
    assert info.value.details == {"index": 1, "id": None, "field": "tags", "line": 3}


# ---------------------------------------------------------------- errors


def _record_error(index, field, line, record_id=None, **extra):
    return "golden-schema", {"index": index, "id": record_id, "field": field, "line": line, **extra}


OK = {"question": "Fine?"}

ERROR_CASES = [
    # --- not UTF-8 / not JSON
    pytest.param(
        b'[\n  {"question": "caf\xe9"}]', "golden-invalid", {"line": 2, "column": 20}, id="not-utf8"
    ),
    pytest.param(b"", "empty-file", {"file": "golden.json"}, id="empty-bytes"),
    pytest.param("", "empty-file", {"file": "golden.json"}, id="empty-str"),
    pytest.param("  \n\n", "empty-file", {"file": "golden.json"}, id="whitespace-only-file"),
    pytest.param(
        '[\n  {"question": "a"},\n  {"question" "b"}\n]',
        "golden-invalid",
        {"line": 3, "column": 15},
        id="missing-colon",
    ),
    pytest.param(
        '[\n  {"question": "a"}\n  {"question": "b"}\n]',
        "golden-invalid",
        {"line": 3, "column": 3},
        id="missing-comma",
    ),
    pytest.param('[{"question": "a"}] x', "golden-invalid", {"line": 1, "column": 21}, id="extra-data"),
    pytest.param('[{"question": "a"},]', "golden-invalid", {"line": 1, "column": 20}, id="trailing-comma"),
    pytest.param(
        '[\n  {"question": "NaN", "tags": [NaN]}]',
        "golden-invalid",
        {"line": 2, "column": 32},
        id="nan",
    ),
    pytest.param("[\n -Infinity]", "golden-invalid", {"line": 2, "column": 2}, id="minus-infinity"),
    pytest.param('{"a": Infinity}', "golden-invalid", {"line": 1, "column": 7}, id="infinity"),
    # --- top-level shape
    pytest.param('"questions"', "golden-schema", {"field": "(root)"}, id="root-string"),
    pytest.param("null", "golden-schema", {"field": "(root)"}, id="root-null"),
    pytest.param('{"question": []}', "golden-schema", {"field": "questions"}, id="object-without-questions"),
    pytest.param('{"questions": {}}', "golden-schema", {"field": "questions"}, id="questions-not-list"),
    # --- bad records (record i is on line i + 2 in _list_file)
    pytest.param(_list_file(OK, "just a string"), *_record_error(1, "(record)", 3), id="record-not-object"),
    pytest.param(_list_file(OK, {"id": "x"}), *_record_error(1, "question", 3, "x"), id="question-missing"),
    pytest.param(_list_file({"question": "   \t"}), *_record_error(0, "question", 2), id="question-blank"),
    pytest.param(_list_file({"question": 5}), *_record_error(0, "question", 2), id="question-not-string"),
    pytest.param(_list_file(OK, {"id": "", "question": "Q?"}), *_record_error(1, "id", 3), id="id-empty"),
    pytest.param(_list_file({"id": True, "question": "Q?"}), *_record_error(0, "id", 2), id="id-bool"),
    pytest.param(_list_file({"id": 1.5, "question": "Q?"}), *_record_error(0, "id", 2), id="id-float"),
    pytest.param(
        _list_file(OK, {"id": "r", "question": "Q?", "expected_answer": None}),
        *_record_error(1, "expected_answer", 3, "r"),
        id="expected-answer-null",
    ),
    pytest.param(
        _list_file(OK, OK | {"question": "Q2?"}, {"id": "refund-window", "question": "Q?", "must_cite": "x"}),
        *_record_error(2, "must_cite", 4, "refund-window"),
        id="must-cite-string",
    ),
    pytest.param(
        _list_file({"question": "Q?", "must_cite": ["ok", 3]}),
        *_record_error(0, "must_cite", 2),
        id="must-cite-number-item",
    ),
    pytest.param(
        _list_file({"question": "Q?", "tags": ["ok", " "]}),
        *_record_error(0, "tags", 2),
        id="tags-blank-item",
    ),
    pytest.param(
        _list_file({"question": "Q?", "answerable": "no"}),
        *_record_error(0, "answerable", 2),
        id="answerable-string",
    ),
    pytest.param(
        _list_file({"id": 9, "question": "Q?", "must_site": ["x"]}),
        *_record_error(0, "must_site", 2, "9"),
        id="unknown-field",
    ),
    pytest.param(
        _list_file({"must_site": [], "id": {}}),
        *_record_error(0, "must_site", 2),
        id="first-field-problem-wins",
    ),
    pytest.param(
        _list_file({"id": "a", "question": "One?"}, OK, {"id": "a", "question": "Two?"}),
        *_record_error(2, "id", 4, "a", first_index=0),
        id="duplicate-id",
    ),
    pytest.param(
        _list_file({"id": 1, "question": "One?"}, {"id": "1", "question": "Two?"}),
        *_record_error(1, "id", 3, "1", first_index=0),
        id="duplicate-id-int-and-string",
    ),
    pytest.param(
        _list_file(
            {"question": "How  do I\treset my Password?"},
            OK,
            {"id": "d", "question": " how do i reset MY password? "},
        ),
        *_record_error(2, "question", 4, "d", first_index=0),
        id="duplicate-question-normalised",
    ),
    pytest.param(
        _list_file({"question": "Q?", "tags": 1}, {"question": "Q?"}),
        *_record_error(0, "tags", 2),
        id="first-error-in-file-order",
    ),
    pytest.param(
        '{"questions": [\n  {"question": "a"},\n  7\n]}',
        *_record_error(1, "(record)", 3),
        id="questions-object-record",
    ),
]


@pytest.mark.parametrize(("data", "code", "details"), ERROR_CASES)
def test_parse_errors(data, code, details):
    with pytest.raises(GoldenFileError) as info:
        parse_golden(data)
    error = info.value
    assert error.code == code
    assert error.details == details
    assert error.status_code == 400
    if "line" in details:
        assert f"line {details['line']}" in error.message
    if "column" in details:
        assert f"column {details['column']}" in error.message
    if "index" in details:
        assert error.message.startswith(f"record {details['index']}")
    if details.get("id") is not None:
        assert f'id "{details["id"]}"' in error.message


def test_error_messages_read_well():
    with pytest.raises(GoldenFileError) as info:
        parse_golden('[\n  {"question": "a"}\n  {"question": "b"}\n]')
    assert info.value.message == "golden.json line 3, column 3: Expecting ',' delimiter"

    with pytest.raises(GoldenFileError) as info:
        parse_golden(b"[\xff]")
    assert "not UTF-8" in info.value.message
    assert info.value.details == {"line": 1, "column": 2}

    text = _list_file(
        OK, OK | {"question": "Q2?"}, {"id": "refund-window", "question": "Q?", "must_cite": "x"}
    )
    with pytest.raises(GoldenFileError) as info:
        parse_golden(text)
    assert info.value.message.startswith(
        'record 2 (id "refund-window"), line 4: field "must_cite" must be a list'
    )

    with pytest.raises(GoldenFileError) as info:
        parse_golden(_list_file({"id": "a", "question": "One?"}, {"id": "a", "question": "Two?"}))
    assert 'duplicate id "a"' in info.value.message and "record 0" in info.value.message

    with pytest.raises(GoldenFileError) as info:
        parse_golden(_list_file({"question": "Q?", "must_site": []}))
    assert '"must_site"' in info.value.message


def test_deep_nesting_is_a_golden_error_not_a_crash():
    with pytest.raises(GoldenFileError) as info:
        parse_golden("[" * 100_000 + "]" * 100_000)
    assert info.value.code == "golden-invalid"


def test_a_nul_character_is_invalid_with_its_position():
    with pytest.raises(GoldenFileError) as caught:
        parse_golden('[\n  {"question": "Why\\u0000?"}\n]')
    assert caught.value.code == "golden-invalid"
    assert caught.value.details == {"line": 2, "column": 20}


def test_every_bad_record_is_named_in_one_error_as_the_other_formats_do():
    data = _list_file(
        {"question": "Fine?"},
        {"question": "Tags?", "tags": 1},
        {"question": "Fine?"},
        {"qestion": "Typo?"},
    )
    with pytest.raises(GoldenFileError) as info:
        parse_golden(data)
    error = info.value
    assert error.code == "golden-schema"
    assert error.message.startswith("3 problems: record 1, line 3: ")
    assert [(e["index"], e["field"], e["line"]) for e in error.details["errors"]] == [
        (1, "tags", 3),
        (2, "question", 4),
        (3, "qestion", 5),
    ]
    assert error.details["index"] == 1  # the first problem's details, as a single problem gives them
    assert "duplicate question (same as record 0, line 2)" in error.details["errors"][1]["message"]


def test_a_file_of_many_bad_records_stops_at_the_problems_limit():
    data = _list_file(*({"question": f"Q{i}?", "tags": 1} for i in range(80)))
    with pytest.raises(GoldenFileError) as info:
        parse_golden(data)
    assert info.value.message.startswith("50+ problems")
    assert len(info.value.details["errors"]) == 50
