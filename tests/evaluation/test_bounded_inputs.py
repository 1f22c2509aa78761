"""Labels and run files are read within limits (issue 24): a CSV cell's length, the body's shape, and every
free-text id that lands in a bounded column (or can match nothing past its length) checked before anything is
saved, the same on SQLite (which does not enforce a column's max_length) and PostgreSQL (which refused a 1 MiB
run tag with a 500). Each refusal names the row or line and the limit, and stores nothing."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evaluation.models import EvaluationRun
from evaluation.retrieval.run_files import MAX_TAG_CHARS
from goldenset.formats import MAX_CSV_FIELD_CHARS
from goldenset.text import MAX_ID_CHARS
from tests.support import db_state, handbook_entries, refused

LABELS = "/lmkit/v1/search/evaluate/labels"
RUN_FILE = "/lmkit/v1/search/evaluate/run-file"
THRESHOLDS = "/lmkit/v1/search/evaluate/calibration/thresholds"
MIB = 1024 * 1024
PASSAGES = [{"document_id": "refunds", "title": "Refunds", "text": "A full refund within 30 days."}]
ROW = {"question_id": "q1", "rater": "ann", "metric": "faithfulness", "label": "pass",
       "answer": "A full refund within 30 days.", "passages": PASSAGES}  # fmt: skip


@pytest.fixture
def golden(world):
    handbook_entries(world.collection)
    return world


def labels_file(client, name: str, content: str, **fields):
    upload = SimpleUploadedFile(name, content.encode())
    body = {"collection_id": "handbook", "file": upload, **fields}
    return client.post(LABELS, body, format="multipart")


# --- labels: CSV cells -----------------------------------------------------------------------------------------

CSV_HEADER = "question_id,rater,metric,label,answer,passages\n"
CSV_PASSAGES = '"' + json.dumps(PASSAGES).replace('"', '""') + '"'


def test_a_labels_csv_cell_of_15_mib_is_refused_naming_its_line_and_the_limit(golden):
    good = f"q1,ann,faithfulness,pass,A full refund within 30 days.,{CSV_PASSAGES}\n"
    text = CSV_HEADER + good + f"q2,ann,faithfulness,pass,{'x' * 15 * MIB},{CSV_PASSAGES}\n"
    before = db_state()
    error = refused(labels_file(golden.client, "labels.csv", text), 400, "import-invalid")
    assert error == {
        "code": "import-invalid",
        "message": "line 3: a cell is longer than 1,000,000 characters, the limit.",
        "details": {"where": "line 3", "line": 3, "limit": MAX_CSV_FIELD_CHARS},
    }
    assert db_state() == before


def test_a_labels_csv_cell_at_the_limit_reaches_its_fields_own_limit(golden):
    text = CSV_HEADER + f"q1,ann,faithfulness,pass,{'x' * MAX_CSV_FIELD_CHARS},{CSV_PASSAGES}\n"
    before = db_state()
    error = refused(labels_file(golden.client, "labels.csv", text), 400, "import-invalid")
    assert error["message"] == "line 2: answer: longer than 20000 characters."
    assert db_state() == before


def test_a_labels_csv_row_with_more_cells_than_the_header_is_refused_naming_its_line(golden):
    text = CSV_HEADER + f"q1,ann,faithfulness,pass,An answer.,{CSV_PASSAGES},extra\n"
    error = refused(labels_file(golden.client, "labels.csv", text), 400, "import-invalid")
    assert error["message"] == "line 2: expected 6 cells, found 7."


# --- labels: the body's shape ----------------------------------------------------------------------------------

NOT_AN_OBJECT = "Invalid data. Expected a dictionary, but got {}."


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ("[null, null]", {"non_field_errors": [NOT_AN_OBJECT.format("list")]}),
        ('"labels"', {"non_field_errors": [NOT_AN_OBJECT.format("str")]}),
        ("5", {"non_field_errors": [NOT_AN_OBJECT.format("int")]}),
        ('[["collection_id", "handbook"]]', {"non_field_errors": [NOT_AN_OBJECT.format("list")]}),
        (
            '{"collection_id": "handbook", "labels": [null, null]}',
            {"labels[0]": ["This field may not be null."], "labels[1]": ["This field may not be null."]},
        ),
        (
            '{"collection_id": "handbook", "labels": [1, ["q1"]]}',
            {
                "labels[0]": ['Expected a dictionary of items but got type "int".'],
                "labels[1]": ['Expected a dictionary of items but got type "list".'],
            },
        ),
    ],
    ids=["nulls", "string", "number", "pairs", "null-rows", "non-object-rows"],
)
def test_a_labels_body_of_the_wrong_shape_is_a_validation_error_naming_the_record(golden, body, fields):
    before = db_state()
    response = golden.client.post(LABELS, body, content_type="application/json")
    error = refused(response, 400, "validation-error")
    first, messages = next(iter(fields.items()))
    more = f" (and {len(fields) - 1} more field errors)" if len(fields) > 1 else ""
    assert error == {
        "code": "validation-error",
        "message": f"{first}: {messages[0]}{more}",
        "details": {"fields": fields},
    }
    assert db_state() == before


@pytest.mark.parametrize(
    ("content", "wheres"),
    [("[null, 5]", ["record 1", "record 2"]), ('null\n["q1"]\n', ["line 1", "line 2"])],
    ids=["json", "jsonl"],
)
def test_a_labels_file_whose_rows_are_no_objects_names_each(golden, content, wheres):
    before = db_state()
    response = labels_file(golden.client, "labels.json", content, format="json")
    error = refused(response, 400, "import-invalid")
    assert [e["where"] for e in error["details"]["errors"]] == wheres
    assert error["details"]["errors"][0]["message"] == f"{wheres[0]}: expected an object of label fields."
    assert db_state() == before


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"label": json.loads("[" * 90 + "]" * 90)}, "label: a list is not one of pass or fail."),
        ({"label": {"verdict": "pass"}}, "label: an object is not one of pass or fail."),
        ({"label": "x" * MIB}, f"label: '{'x' * 56}... is not one of pass or fail."),
        ({"label": None, "score": ["0.5"]}, "score: a list is not a number in 0..1."),
    ],
    ids=["nested-list", "object", "long-text", "list-score"],
)
def test_a_label_or_score_of_the_wrong_shape_is_named_not_echoed(golden, row, message):
    before = db_state()
    response = golden.client.post(
        LABELS, {"collection_id": "handbook", "labels": [{**ROW, **row}]}, format="json"
    )
    error = refused(response, 400, "import-invalid")
    assert error["message"] == f"labels[0]: {message}"
    assert db_state() == before


# --- labels: ids and names in bounded columns ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "limit"),
    [
        ("question_id", "q" * MIB, 300),  # HumanLabel.entry_key
        ("rater", "r" * MIB, 100),  # HumanLabel.rater
        ("rater", "r" * 101, 100),
        ("run_id", "u" * MIB, 300),
        ("metric", "m" * MIB, 300),
        ("passages", [{**PASSAGES[0], "document_id": "d" * 301}], 300),
        ("passages", [{**PASSAGES[0], "title": "t" * 1001}], 1000),
    ],
    ids=["question_id", "rater-1mib", "rater-101", "run_id", "metric", "document_id", "title"],
)
def test_a_label_id_or_name_past_its_columns_length_is_refused_naming_the_field_and_limit(
    golden, field, value, limit
):
    before = db_state()
    row = {**ROW, field: value}
    if field == "run_id":
        row = {k: v for k, v in row.items() if k not in ("answer", "passages")}
    response = golden.client.post(LABELS, {"collection_id": "handbook", "labels": [row]}, format="json")
    error = refused(response, 400, "import-invalid")
    name = {"passages": "passages[0].document_id" if limit == 300 else "passages[0].title"}.get(field, field)
    assert error["message"] == f"labels[0]: {name}: longer than {limit} characters."
    assert db_state() == before


def test_a_rater_of_100_characters_is_stored(golden):
    response = golden.client.post(
        LABELS, {"collection_id": "handbook", "labels": [{**ROW, "rater": "r" * 100}]}, format="json"
    )
    assert response.status_code == 201, response.json()
    assert response.json()["raters"] == ["r" * 100]


def test_a_threshold_judge_past_its_columns_length_is_refused(golden):
    body = {"collection_id": "handbook", "metric": "faithfulness", "judge": "j" * 301, "value": 0.5}
    error = refused(golden.client.post(THRESHOLDS, body, format="json"), 400, "validation-error")
    assert error["message"] == "judge: Ensure this field has no more than 300 characters."


# --- run files -------------------------------------------------------------------------------------------------


def run_file(client, name: str, content: str):
    upload = SimpleUploadedFile(name, content.encode())
    return client.post(RUN_FILE, {"collection_id": "handbook", "file": upload})


def trec(tag: str = "bm25", query: str = "q1", document: str = "refunds") -> str:
    return f"q2 Q0 shipping 1 1.0 bm25\n{query} Q0 {document} 1 2.0 {tag}\n"


def jsonl(tag: object = "bm25", query: object = "q1", document: object = "refunds") -> str:
    line = {"query_id": query, "document_id": document, "score": 2.0, "tag": tag}
    first = {"query_id": "q2", "document_id": "shipping", "score": 1.0, "tag": "bm25"}
    return json.dumps(first) + "\n" + json.dumps(line) + "\n"


@pytest.mark.parametrize("form", [trec, jsonl], ids=["trec", "jsonl"])
@pytest.mark.parametrize(
    ("field", "value", "limit"),
    [
        ("tag", "t" * MIB, MAX_TAG_CHARS),  # EvaluationRun.label: PostgreSQL refused it with a 500
        ("tag", "t" * 201, MAX_TAG_CHARS),
        ("query_id", "q" * 301, MAX_ID_CHARS),  # no golden key is longer
        ("document_id", "d" * 301, MAX_ID_CHARS),  # no document id is longer
    ],
    ids=["tag-1mib", "tag-201", "query_id", "document_id"],
)
def test_a_run_file_id_or_tag_past_its_limit_is_refused_naming_the_line_and_limit(
    golden, form, field, value, limit
):
    content = form(**{{"query_id": "query", "document_id": "document"}.get(field, field): value})
    before = db_state()
    error = refused(run_file(golden.client, f"run.{form.__name__}", content), 400, "run-file-invalid")
    assert error == {
        "code": "run-file-invalid",
        "message": f"line 2: {field}: {len(value):,} characters; the limit is {limit}.",
        "details": {"line": 2, "field": field, "limit": limit},
    }
    assert db_state() == before


@pytest.mark.parametrize("form", [trec, jsonl], ids=["trec", "jsonl"])
def test_a_run_tag_of_200_characters_is_stored_as_the_runs_label(golden, form):
    response = run_file(golden.client, f"run.{form.__name__}", form(tag="t" * 200))
    assert response.status_code == 200, response.json()
    assert sorted(EvaluationRun.objects.values_list("label", flat=True)) == ["bm25", "t" * 200]


@pytest.mark.parametrize(
    ("tag", "got"),
    [
        (json.loads("[" * 90 + "]" * 90), "a list"),
        ({"name": "bm25"}, "an object"),
        (" " * MIB, f'"{" " * 56}...'),
    ],
    ids=["nested-list", "object", "blank-text"],
)
def test_a_jsonl_tag_of_the_wrong_shape_is_named_not_echoed(golden, tag, got):
    error = refused(run_file(golden.client, "run.jsonl", jsonl(tag=tag)), 400, "run-file-invalid")
    assert error["message"] == f"line 2: tag must be a non-empty string or integer, got {got}."


# --- JSON in label rows and cells, and run files ---------------------------------------------------------------


def test_a_labels_file_row_with_a_nul_escape_is_refused_at_its_line(golden):
    row = json.dumps({**ROW, "answer": "A full refund.\u0000"})  # a 500 on PostgreSQL before
    before = db_state()
    error = refused(labels_file(golden.client, "labels.jsonl", row + "\n"), 400, "import-invalid")
    column = row.index("\\u0000") + 1
    assert error["message"] == f"line 1: not JSON (NUL characters are not allowed at column {column})."
    assert db_state() == before


def test_a_labels_csv_passages_cell_nested_100_000_deep_is_refused_naming_the_limit(golden):
    cell = "[" * 100_000 + "]" * 100_000  # a RecursionError, a 500, before
    text = CSV_HEADER + f"q1,ann,faithfulness,pass,An answer.,{cell}\n"
    before = db_state()
    error = refused(labels_file(golden.client, "labels.csv", text), 400, "import-invalid")
    assert error["message"] == "line 2: passages: not JSON (arrays and objects nested more than 100 deep)."
    assert db_state() == before


def test_a_run_file_tag_with_a_nul_escape_is_refused_at_its_line(golden):
    content = jsonl(tag="bm25\u0000")  # stored as a run's label: a 500 on PostgreSQL before
    column = content.splitlines()[1].index("\\u0000") + 1
    before = db_state()
    error = refused(run_file(golden.client, "run.jsonl", content), 400, "run-file-invalid")
    assert error["message"] == f"line 2: not JSON (NUL characters are not allowed at column {column})."
    assert db_state() == before
