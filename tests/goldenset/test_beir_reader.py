"""Unit tests for goldenset.beir, the BEIR readers: pure Python, no database."""

from __future__ import annotations

import json

import pytest

from evalsite.errors import EvalsiteError
from goldenset.beir import CorpusRow, QueryRow, read_corpus, read_qrels, read_queries


def _jsonl(*rows) -> list[str]:
    return [(r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows]


def _error(call) -> EvalsiteError:
    with pytest.raises(EvalsiteError) as info:
        call()
    assert info.value.code == "beir-invalid"
    return info.value


# ---------------------------------------------------------------- corpus


def test_read_corpus_reads_rows_with_their_extra_fields_as_metadata():
    lines = _jsonl(
        {"_id": "d1", "title": "Refunds", "text": "Full refund within 30 days.", "lang": "en"},
        {"_id": 2, "text": "No title here."},
        {"id": "d3", "title": None, "text": "Plain id key.", "metadata": {"url": "https://x"}},
    )
    assert list(read_corpus(lines)) == [
        CorpusRow(id="d1", title="Refunds", text="Full refund within 30 days.", metadata={"lang": "en"}),
        CorpusRow(id="2", title="", text="No title here.", metadata={}),
        CorpusRow(id="d3", title="", text="Plain id key.", metadata={"url": "https://x"}),
    ]


def test_read_corpus_accepts_bytes_a_bom_and_blank_lines():
    lines = [
        "\ufeff".encode() + b'{"_id": "a", "text": "caf\xc3\xa9"}\n',
        b"\n",
        b"   \n",
        b'{"_id": "b", "text": "two"}',
    ]
    assert [(r.id, r.text) for r in read_corpus(lines)] == [("a", "café"), ("b", "two")]


def test_a_malformed_json_line_names_the_file_line_and_column():
    lines = _jsonl({"_id": "a", "text": "ok"}, "", '{"_id": "b", "text": }')
    error = _error(lambda: list(read_corpus(lines, name="corpus.jsonl")))
    assert error.message == "corpus.jsonl line 3, column 22: Expecting value"
    assert error.details == {"file": "corpus.jsonl", "line": 3, "column": 22}


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ('["not", "an", "object"]', "expected a JSON object"),
        ('"just a string"', "expected a JSON object"),
        ({"title": "no id", "text": "x"}, 'field "_id" must be a non-empty string'),
        ({"_id": "  ", "text": "x"}, 'field "_id" must be a non-empty string'),
        ({"_id": True, "text": "x"}, 'field "_id" must be a non-empty string'),
        ({"_id": "a", "text": 42}, 'field "text" must be a string'),
        ({"_id": "a", "title": ["t"], "text": "x"}, 'field "title" must be a string'),
    ],
)
def test_a_bad_corpus_row_names_the_file_and_line(row, message):
    lines = _jsonl({"_id": "ok", "text": "fine"}, row)
    error = _error(lambda: list(read_corpus(lines, name="my/corpus.jsonl")))
    assert error.message == f"my/corpus.jsonl line 2: {message}"
    assert error.details == {"file": "my/corpus.jsonl", "line": 2}


def test_a_non_utf8_corpus_line_names_the_file_and_line():
    error = _error(lambda: list(read_corpus([b'{"_id": "a"}\n', b'{"_id": "\xff"}\n'])))
    assert error.message == "corpus.jsonl line 2: not UTF-8"


# ---------------------------------------------------------------- queries


def test_read_queries_reads_answerable_and_reference_answer():
    lines = _jsonl(
        {
            "_id": "q1",
            "text": "How long is the refund window?",
            "answerable": True,
            "reference_answer": "30 days.",
        },
        {"_id": "q2", "text": "Who is the CEO of Mars?", "answerable": False, "distractor_ids": ["p9"]},
        {"_id": 3, "text": "Plain question"},
    )
    assert list(read_queries(lines)) == [
        QueryRow(
            id="q1", text="How long is the refund window?", answerable=True, reference_answer="30 days."
        ),
        QueryRow(
            id="q2",
            text="Who is the CEO of Mars?",
            answerable=False,
            reference_answer="",
            metadata={"distractor_ids": ["p9"]},
        ),
        QueryRow(id="3", text="Plain question"),
    ]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"_id": "q", "text": "   "}, 'field "text" (the question) is empty'),
        ({"_id": "q"}, 'field "text" (the question) is empty'),
        ({"text": "no id?"}, 'field "_id" must be a non-empty string'),
        ({"_id": "q", "text": "ok?", "answerable": "yes"}, 'field "answerable" must be true or false'),
        ({"_id": "q", "text": "ok?", "reference_answer": 1}, 'field "reference_answer" must be a string'),
        ("[1]", "expected a JSON object"),
    ],
)
def test_a_bad_query_row_names_the_file_and_line(row, message):
    lines = _jsonl({"_id": "q0", "text": "fine?"}, {"_id": "q1", "text": "also fine?"}, row)
    error = _error(lambda: list(read_queries(lines)))
    assert error.message == f"queries.jsonl line 3: {message}"
    assert error.details == {"file": "queries.jsonl", "line": 3}


def test_a_malformed_query_line_names_the_file_line_and_column():
    error = _error(lambda: list(read_queries(['{"_id": "q1" "text": "missing comma?"}\n'])))
    assert error.message == "queries.jsonl line 1, column 14: Expecting ',' delimiter"
    assert error.details == {"file": "queries.jsonl", "line": 1, "column": 14}


# ---------------------------------------------------------------- qrels


def test_read_qrels_skips_the_header_and_reads_three_columns():
    lines = ["query-id\tcorpus-id\tscore\n", "q1\td1\t1\n", "q1\td2\t0\n", "\n", "q2\td1\t2\r\n"]
    assert read_qrels(lines) == {"q1": {"d1": 1, "d2": 0}, "q2": {"d1": 2}}


def test_read_qrels_reads_trec_four_column_rows_separated_by_spaces_or_tabs():
    lines = [b"1 0 184 3\n", b"1 0 29 -1\n", b"2\t0\t12\t1\n"]
    assert read_qrels(lines) == {"1": {"184": 3, "29": -1}, "2": {"12": 1}}


def test_a_first_row_that_is_data_is_not_taken_for_a_header():
    assert read_qrels(["q1\td1\t1\n", "q1\td2\t2\n"]) == {"q1": {"d1": 1, "d2": 2}}


def test_a_header_after_a_bom_is_skipped():
    assert read_qrels(["\ufeffquery-id\tcorpus-id\tscore\n", "q\td\t1\n"]) == {"q": {"d": 1}}


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("q1\td1\tyes\n", "grade 'yes' is not an integer"),
        ("q1\td1\t1.5\n", "grade '1.5' is not an integer"),
        ("q1\td1\n", "expected 3 tab-separated columns, got 2"),
        ("q1\t0\td1\t1\textra\n", "expected 3 tab-separated columns, got 5"),
        ("q1\t\t1\n", "empty query or document id"),
    ],
)
def test_a_bad_qrels_row_names_the_file_and_line(row, message):
    lines = ["query-id\tcorpus-id\tscore\n", "q0\td0\t1\n", row]
    error = _error(lambda: read_qrels(lines, name="qrels/test.tsv"))
    assert error.message == f"qrels/test.tsv line 3: {message}"
    assert error.details == {"file": "qrels/test.tsv", "line": 3}


def test_a_non_utf8_qrels_line_names_the_file_and_line():
    error = _error(lambda: read_qrels([b"q0\td0\t1\n", b"q1\td\xff\t1\n"]))
    assert error.message == "qrels.tsv line 2: not UTF-8"
    assert error.details == {"file": "qrels.tsv", "line": 2}


def test_unknown_documents_are_refused_at_their_row_when_the_corpus_ids_are_given():
    lines = ["query-id\tcorpus-id\tscore\n", "q1\td1\t1\n", "q1\tghost\t1\n"]
    assert read_qrels(lines[:2], known_documents={"d1"}) == {"q1": {"d1": 1}}
    error = _error(lambda: read_qrels(lines, known_documents={"d1"}))
    assert error.message == "qrels.tsv line 3: query q1 judges document ghost, which is not in corpus.jsonl"
    assert error.details == {"file": "qrels.tsv", "line": 3, "query_id": "q1", "document_id": "ghost"}


def test_a_nul_character_in_a_corpus_row_is_refused_with_its_line_and_column():
    with pytest.raises(EvalsiteError) as caught:
        list(read_corpus(['{"_id": "a", "text": "ok"}\n', '{"_id": "b", "text": "x\\u0000"}\n']))
    assert caught.value.code == "beir-invalid"
    assert caught.value.details == {"file": "corpus.jsonl", "line": 2, "column": 24}


def test_a_nul_character_in_qrels_is_refused_with_its_line():
    with pytest.raises(EvalsiteError) as caught:
        read_qrels(["q1\td\x001\t1\n"])
    assert caught.value.details == {"file": "qrels.tsv", "line": 1}
