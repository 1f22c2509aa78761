"""Golden-set files are read within limits (issue 24): a promptfoo YAML file's size, nesting and aliases, and
a CSV or TSV cell's length. Each refusal is a 400 `import-invalid` naming the line and the limit, through the
upload API, and stores nothing; a file at the limits imports."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from goldenset import services
from goldenset.formats import MAX_CSV_FIELD_CHARS
from goldenset.formats.yaml_tests import MAX_YAML_ALIAS_WEIGHT, MAX_YAML_BYTES, MAX_YAML_DEPTH
from goldenset.models import GoldenEntry
from tests.goldenset.conftest import GOLDEN_UPLOAD
from tests.support import db_state, refused, uploaded

ROOT = Path(__file__).resolve().parents[2]


def upload(world, name: str, content: str | bytes, fmt: str):
    return world.client.post(
        GOLDEN_UPLOAD,
        {"collection_id": "handbook", "format": fmt, "file": uploaded(name, content)},
        format="multipart",
    )


def import_invalid(response, where: str, message: str, **details) -> None:
    error = refused(response, 400, "import-invalid")
    assert error == {
        "code": "import-invalid",
        "message": f"{where}: {message}",
        "details": {"where": where, **details},
    }


# --- promptfoo YAML --------------------------------------------------------------------------------------------

# The drill's "billion laughs": ten aliases of ten aliases ... nine deep stand for 10^9 "lol"s. Expanded, used as
# a test's description and turned into its key, it held a web worker for 37 s and 2 GB, then answered 500.
BOMB = (
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    + "".join(
        f"{name}: &{name} [{','.join([f'*{previous}'] * 10)}]\n"
        for previous, name in zip("abcdefgh", "bcdefghi", strict=True)
    )
    + "tests:\n  - description: *i\n    vars:\n      question: What is the refund window?\n"
)
# *a stands for 41 (the list, ten values and thirty characters), *b for 411, *c for 4,111, *d for 41,111, *e for
# 411,111: the lines before line 6 repeat 456,740 in all, and its second *e takes the sum past 1,000,000.
BOMB_MESSAGE = "aliases stand for more than 1,000,000 values and characters in all, the limit (*e passes it)."

# Run in a child process first, capped at 1 GiB and 20 s: were aliases expanded again, this test would fail there
# in seconds instead of holding the test process for half a minute and gigabytes.
READ_IN_A_CHILD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))
from goldenset.formats import FormatError, read_entries
try:
    read_entries("promptfoo", sys.stdin.read())
except FormatError as exc:
    print(exc.message)
"""


def test_a_billion_laughs_is_refused_at_the_alias_that_passes_the_budget_in_well_under_a_second(world):
    assert len(BOMB.encode()) < 500 and MAX_YAML_ALIAS_WEIGHT == 1_000_000
    child = subprocess.run(
        [sys.executable, "-c", READ_IN_A_CHILD],
        input=BOMB,
        capture_output=True,
        text=True,
        timeout=20,
        cwd=ROOT,
    )
    assert (child.returncode, child.stdout) == (0, f"line 6: {BOMB_MESSAGE}\n"), child.stderr[-2000:]
    before = db_state()
    started = time.perf_counter()
    response = upload(world, "bomb.yaml", BOMB, "promptfoo")
    elapsed = time.perf_counter() - started
    import_invalid(response, "line 6", BOMB_MESSAGE, line=6, limit=MAX_YAML_ALIAS_WEIGHT)
    assert elapsed < 0.5, elapsed
    assert db_state() == before


def test_aliases_within_the_budget_share_assertions_between_tests(world):
    shared = (
        "defaults: &asserts\n"
        "  - type: factuality\n"
        "    value: Customers get a full refund within 30 days.\n"
        "  - type: contains\n"
        "    value: refund\n"
        "tests:\n"
        "  - description: q1\n"
        "    vars: {question: How long is the refund window}\n"
        "    assert: *asserts\n"
        "  - description: q2\n"
        "    vars: {question: Can I get my money back}\n"
        "    assert: *asserts\n"
    )
    response = upload(world, "tests.yaml", shared, "promptfoo")
    assert response.status_code == 201, response.json()
    assert sorted(GoldenEntry.objects.values_list("key", "reference_answer")) == [
        ("q1", "Customers get a full refund within 30 days."),
        ("q2", "Customers get a full refund within 30 days."),
    ]


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("- &loop [*loop]\n", "line 1", "alias *loop is inside the value it names."),
        (
            "tests:\n  - &test\n    vars: {question: Q}\n    metadata: {again: *test}\n",
            "line 4",
            "alias *test is inside the value it names.",
        ),
    ],
    ids=["list", "mapping"],
)
def test_an_alias_inside_the_value_it_names_is_refused_at_its_line(world, text, where, message):
    before = db_state()
    import_invalid(upload(world, "tests.yaml", text, "promptfoo"), where, message, line=int(where[5:]))
    assert db_state() == before


def _nested(levels: int) -> str:
    """A list of one test whose extra var nests lists so that the file nests `levels` deep in all (the tests
    list, the test, its vars and the var's lists)."""
    var = "[" * (levels - 3) + "x" + "]" * (levels - 3)
    return f"- vars:\n    question: How long is the refund window?\n    deep: {var}\n"


def test_yaml_nested_100_000_deep_is_refused_naming_the_line_and_the_limit(world):
    before = db_state()
    started = time.perf_counter()
    response = upload(world, "deep.yaml", "[" * 100_000 + "]" * 100_000, "promptfoo")
    message = "lists and mappings nested more than 50 deep, the limit."
    import_invalid(response, "line 1", message, line=1, limit=MAX_YAML_DEPTH)
    assert time.perf_counter() - started < 5
    import_invalid(upload(world, "deep.yaml", _nested(51), "promptfoo"), "line 3", message, line=3, limit=50)
    assert db_state() == before


def test_yaml_nested_50_deep_imports(world):
    response = upload(world, "deep.yaml", _nested(MAX_YAML_DEPTH), "promptfoo")
    assert response.status_code == 201, response.json()
    assert GoldenEntry.objects.get().question == "How long is the refund window?"


def test_a_yaml_file_over_2_mib_is_refused_before_it_is_parsed_naming_the_line_the_limit_is_passed_on(world):
    line = "- vars: {question: How long is the refund window}\n"  # 50 bytes
    text = line * (MAX_YAML_BYTES // len(line) + 1)
    passed_on = MAX_YAML_BYTES // len(line) + 1
    before = db_state()
    started = time.perf_counter()
    response = upload(world, "big.yaml", text, "promptfoo")
    import_invalid(
        response,
        f"line {passed_on}",
        f"the file has {len(text):,} bytes; a promptfoo file may have at most 2,097,152 (2 MiB), the limit "
        "(passed on this line).",
        line=passed_on,
        limit=MAX_YAML_BYTES,
    )
    assert time.perf_counter() - started < 2  # parsed, it would take about ten seconds
    assert db_state() == before


@pytest.mark.parametrize(
    ("test", "message"),
    [
        ("  description: [a, b]\n", "description: expected a text (the entry's key)."),
        (
            "  assert: [{type: factuality, value: {text: x}}]\n",
            "assert[0].value: expected the reference answer, a text.",
        ),
    ],
    ids=["description", "reference"],
)
def test_a_list_or_mapping_where_a_text_belongs_is_refused_naming_the_test(world, test, message):
    text = "- vars: {question: Fine}\n- vars: {question: Refund window}\n" + test
    before = db_state()
    import_invalid(upload(world, "tests.yaml", text, "promptfoo"), "tests[1] (line 2)", message)
    assert db_state() == before


# --- CSV and TSV cells -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("fmt", "sep"), [("csv", ","), ("tsv", "\t")])
def test_a_cell_over_the_limit_is_refused_naming_its_line_and_the_limit(world, fmt, sep):
    text = f"question{sep}origin\nFine?{sep}x\nToo big?{sep}{'x' * (MAX_CSV_FIELD_CHARS + 1)}\n"
    before = db_state()
    response = upload(world, f"golden.{fmt}", text, fmt)
    message = "a cell is longer than 1,000,000 characters, the limit."
    import_invalid(response, "line 3", message, line=3, limit=MAX_CSV_FIELD_CHARS)
    assert db_state() == before


def test_a_cell_at_the_limit_is_read(world):
    # origin: the dashboard export's column, read and ignored
    text = f"question,origin\nFine?,{'x' * MAX_CSV_FIELD_CHARS}\n"
    response = upload(world, "golden.csv", text, "csv")
    assert response.status_code == 201, response.json()
    assert GoldenEntry.objects.get().question == "Fine?"


def test_expected_documents_past_the_csv_modules_own_limit_import(world):
    """500 document ids of 300 characters: a cell of 150,499 characters, which the csv module's default limit
    (131,072) refused."""
    ids = [f"{i:03d}-" + "d" * 296 for i in range(500)]
    services.documents_upsert(
        collection=world.collection,
        documents=[services.DocumentInput(id=i, pages=["P."]) for i in ids],
        actor="test",
    )
    cell = "|".join(ids)
    assert len(cell) > 131_072
    response = upload(world, "golden.csv", f"question,expected_document_ids\nMany?,{cell}\n", "csv")
    assert response.status_code == 201, response.json()
    assert GoldenEntry.objects.get().expected_document_ids == ids


def test_a_long_cell_in_an_error_is_cut_not_echoed_whole(world):
    column = "c" * 500_000
    error = refused(upload(world, "golden.csv", f"question,{column}\nQ,x\n", "csv"), 400, "import-invalid")
    assert error["message"] == (
        f"line 1: unknown column '{'c' * 56}...; the columns are key, question, expected_document_ids, grades, "
        "reference_answer, tags, answerable."
    )


# --- JSON in golden-set rows and cells -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ('{"user_input": "Refund\\u0000window?"}', "NUL characters are not allowed at column 23"),
        ('{"user_input": "Refund \\ud800 window?"}', "lone surrogates are not valid Unicode at column 24"),
        (
            '{"user_input": "Q?", "response": ' + "[" * 100 + "]" * 100 + "}",
            "arrays and objects nested more than 100 deep at column 133",
        ),
    ],
    ids=["nul", "lone-surrogate", "101-deep"],
)
def test_a_json_row_the_database_cannot_hold_is_refused_at_its_line_and_column(world, row, message):
    """NUL and a lone surrogate were stored, then a 500 on PostgreSQL; the nesting limit is the API body's."""
    before = db_state()
    response = upload(world, "golden.jsonl", '{"user_input": "Fine?"}\n' + row + "\n", "ragas")
    import_invalid(response, "line 2", f"not JSON ({message}).", line=2)
    assert db_state() == before


def test_a_csv_json_cell_nested_100_000_deep_is_refused_naming_its_line(world):
    cell = "[" * 100_000 + "]" * 100_000  # a RecursionError, a 500, before
    before = db_state()
    response = upload(world, "golden.csv", f"question,tags\nFine?,\nDeep?,{cell}\n", "csv")
    import_invalid(response, "line 3", "tags: a cell starting with [ must be a JSON array of strings.")
    assert db_state() == before


@pytest.mark.parametrize(
    ("test", "line", "message"),
    [
        ('- vars: {question: "Refund\\0window"}\n', 2, "NUL characters are not allowed."),
        ('- vars: {question: "Refund \\ud800 window"}\n', 2, "lone surrogates are not valid Unicode."),
        ('- vars: {question: Q}\n  description: "q\\x00"\n', 3, "NUL characters are not allowed."),
        (
            '- vars: {question: Q}\n  metadata:\n    tags:\n      - "a\\u0000"\n',
            5,
            "NUL characters are not allowed.",
        ),
    ],
    ids=["question-nul", "question-surrogate", "key-nul", "tag-nul"],
)
def test_a_yaml_escape_the_database_cannot_hold_is_refused_at_its_line(world, test, line, message):
    """YAML's escapes make NUL and lone surrogates: stored, then a 500 on PostgreSQL."""
    before = db_state()
    response = upload(world, "tests.yaml", "- vars: {question: Fine}\n" + test, "promptfoo")
    import_invalid(response, f"line {line}", message, line=line)
    assert db_state() == before


def test_a_number_or_date_description_reads_as_its_text(world):
    text = "- vars: {question: Refund window}\n  description: 2024-01-31\n- vars: {question: Shipping}\n  description: 7\n"
    response = upload(world, "tests.yaml", text, "promptfoo")
    assert response.status_code == 201, response.json()
    assert sorted(GoldenEntry.objects.values_list("key", flat=True)) == ["2024-01-31", "7"]


@pytest.mark.parametrize(
    ("text", "line", "column", "character"),
    [
        ("\x07", 1, 1, "0007"),  # the fuzzer's file (tests/evalsite/test_fuzz_schema.py): a 500 before
        ("- vars: {question: Fine}\n- vars: {question: a\x01b}\n", 2, 21, "0001"),
        ("- vars: {question: Fine}\n- vars: {question: \x1b[31mred}\n", 2, 20, "001B"),
    ],
    ids=["bel-alone", "soh-in-a-question", "escape-in-a-question"],
)
def test_a_control_character_yaml_does_not_allow_is_refused_at_its_line_and_column(
    world, text, line, column, character
):
    before = db_state()
    response = upload(world, "tests.yaml", text, "promptfoo")
    message = (
        f"not YAML (the character U+{character} at column {column}: special characters are not allowed)."
    )
    import_invalid(response, f"line {line}", message, line=line, column=column)
    assert db_state() == before
