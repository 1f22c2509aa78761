"""goldenset.formats: each format read from a real-looking sample (written from the formats' public
documentation), written and read back to the same entries (the fields the format carries; the rest named in
the warnings), and malformed files refused naming their line or record."""

from __future__ import annotations

import dataclasses
import json

import pytest

from evalsite.errors import EvalsiteError
from goldenset.formats import FORMATS, Entry, FormatError, detect_format, read_entries, write_entries

ENTRIES = [
    Entry(
        question="How long is the refund window?",
        key="q-refund",
        expected_document_ids=("refunds", "policy/returns|v2"),
        grades={"refunds": 2, "policy/returns|v2": 1},
        reference_answer='Customers get a full refund within 30 days, "no questions asked".',
        tags=("policy", "money"),
        contexts=("Customers get a full refund within 30 days of purchase.",),
    ),
    Entry(
        question="When does express shipping arrive?",
        key="q-ship",
        expected_document_ids=("shipping",),
        grades={"shipping": 1, "warranty": 0},  # warranty: judged not relevant, carried wherever grades are
        tags=("shipping",),
    ),  # fmt: skip
    Entry(question="Who is the chief executive?", key="q-ceo", grades={}, answerable=False),
]
# What each format carries (the others are named in the export's warnings).
CARRIED = {
    "okfsmith": ("question", "key", "expected_document_ids", "reference_answer", "tags", "answerable"),
    "csv": ("question", "key", "expected_document_ids", "grades", "reference_answer", "tags", "answerable"),
    "tsv": ("question", "key", "expected_document_ids", "grades", "reference_answer", "tags", "answerable"),
    "trec": ("question", "key", "expected_document_ids", "grades"),
    "ragas": (
        "question",
        "key",
        "expected_document_ids",
        "grades",
        "reference_answer",
        "tags",
        "answerable",
        "contexts",
    ),  # fmt: skip
    "deepeval": (
        "question",
        "key",
        "expected_document_ids",
        "grades",
        "reference_answer",
        "tags",
        "answerable",
        "contexts",
    ),  # fmt: skip
    "phoenix": (
        "question",
        "key",
        "expected_document_ids",
        "grades",
        "reference_answer",
        "tags",
        "answerable",
        "contexts",
    ),
    "promptfoo": (
        "question",
        "key",
        "expected_document_ids",
        "grades",
        "reference_answer",
        "tags",
        "answerable",
    ),
}


def carried(entry: Entry, fmt: str) -> dict:
    data = {name: getattr(entry, name) for name in CARRIED[fmt]}
    if "grades" in data:  # an expected document's grade is 1 unless said otherwise
        data["grades"] = {d: g for d, g in (data["grades"] or {}).items() if g != 1}
    return data


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_round_trips_what_it_carries_and_names_what_it_cannot(fmt):
    written = write_entries(fmt, ENTRIES, name="handbook")
    files = list(written.files.values())
    if fmt == "trec":
        back = read_entries(fmt, files[0], qrels=files[1])
    else:
        (text,) = files
        assert detect_format(next(iter(written.files)), text.encode()) == fmt
        back = read_entries(fmt, text.encode())
    assert [carried(e, fmt) for e in back] == [carried(e, fmt) for e in ENTRIES]
    lost = {"grades", "reference_answer", "tags", "answerable", "contexts"} - set(CARRIED[fmt])
    if fmt != "trec" and "contexts" in lost:
        assert any("reference passages" in w or "reference contexts" in w for w in written.warnings), (
            written.warnings
        )
    if fmt == "trec":
        assert any("reference answers" in w and "tags" in w for w in written.warnings)
    if fmt == "okfsmith":
        assert any("grades" in w for w in written.warnings)


def test_real_looking_samples_of_each_format_are_read():
    ragas = [
        {"user_input": "What is the refund window?", "reference": "30 days.", "reference_contexts": ["Refunds ..."],
         "retrieved_contexts": ["ignored: a run's"], "response": "ignored"},
    ]  # fmt: skip
    (entry,) = read_entries("ragas", json.dumps(ragas))
    assert (
        entry.question == "What is the refund window?"
        and entry.contexts == ("Refunds ...",)
        and not entry.key
    )
    deepeval = [
        {
            "input": "Q?",
            "expected_output": "A.",
            "context": ["c"],
            "actual_output": "x",
            "retrieval_context": [],
        }
    ]
    assert read_entries("deepeval", json.dumps(deepeval))[0].reference_answer == "A."
    phoenix = (
        '{"id": "ex1", "input": {"query": "Q?"}, "output": {"answer": "A."}, "metadata": {"tags": ["t"]}}\n'
    )
    assert read_entries("phoenix", phoenix)[0].tags == ("t",)
    promptfoo = (
        "description: golden\nprompts: [file://prompt.txt]\ntests:\n"
        "  - description: q1\n    vars:\n      query: What is 2 + 2?\n    assert:\n"
        "      - type: contains\n        value: '4'\n      - type: factuality\n        value: It is 4.\n"
    )
    (entry,) = read_entries("promptfoo", promptfoo)
    assert (entry.key, entry.question, entry.reference_answer) == ("q1", "What is 2 + 2?", "It is 4.")
    topics = (
        "<top>\n<num> Number: 401\n<title> foreign minorities, Germany\n<desc> Description:\nWhat language ...\n"
        "<narr> Narrative:\nA relevant document ...\n</top>\n\n<top>\n<num> Number: 402\n<title> behavioral genetics\n</top>\n"
    )
    entries = read_entries(
        "trec", topics, qrels="401 0 FBIS3-10082 1\n401 0 FBIS3-10169 0\n402 0 LA010189-0001 2\n"
    )
    assert [(e.key, e.question, e.expected_document_ids, e.grades) for e in entries] == [
        # grade 1 is the default; grade 0 is a judgment kept: judged not relevant, never expected
        ("401", "foreign minorities, Germany", ("FBIS3-10082",), {"FBIS3-10169": 0}),
        ("402", "behavioral genetics", ("LA010189-0001",), {"LA010189-0001": 2}),
    ]
    csv_text = "question,expected_document_ids,answerable\nHow long?,refunds|shipping,\nWho?,,false\n"
    entries = read_entries("csv", csv_text)
    assert entries[0].expected_document_ids == ("refunds", "shipping") and entries[1].answerable is False
    assert entries[0].grades is None  # no grades column: a replaced entry keeps its own


@pytest.mark.parametrize(
    ("fmt", "text", "qrels", "where", "message"),
    [
        ("csv", "question,colour\nQ,red\n", None, "line 1", "unknown column 'colour'"),
        ("csv", "key,question\nk1,Q1\nk2\n", None, "line 3", "expected 2 cells, found 1"),
        ("csv", 'question,grades\nQ,"refunds=two"\n', None, "line 2", "grades: expected document=grade"),
        ("tsv", "question\tanswerable\nQ\tmaybe\n", None, "line 2", "answerable: expected true or false"),
        (
            "ragas",
            '{"user_input": "Q"}\n{"user_input": 7, "colour": 1}\n',
            None,
            "line 2",
            "user_input: expected a non-empty string",
        ),
        (
            "ragas",
            '[{"user_input": "Q"}, {"reference": "A"}]',
            None,
            "record 1",
            "user_input: expected a non-empty string",
        ),
        (
            "deepeval",
            '[{"input": "Q", "context": 7}]',
            None,
            "record 0",
            "context: expected a list of texts",
        ),
        ("phoenix", '{"input": {"question": "Q"}}\n{"input": "Q"\n', None, "line 2", "not JSON"),
        (
            "promptfoo",
            "- vars: {question: Q}\n- vars: {nothing: 1}\n",
            None,
            "tests[1] (line 2)",
            "vars: expected a question",
        ),
        ("promptfoo", "- vars: [unclosed\n", None, "line 1", "not YAML"),
        ("trec", "401\tQ\n", "401 0 d1\n", "qrels line 1", "expected 4 columns"),
        ("trec", "401\tQ\n", "402 0 d1 1\n", "qrels line 1", "topic '402' is not in the topics file"),
        ("trec", "401\tQ\n401\tR\n", "", "topics line 2", "topic '401' is listed twice"),
        ("csv", b"question\nQ\xff\n", None, "line 2", "not UTF-8"),
    ],
)
def test_a_malformed_file_is_refused_naming_its_line_or_record(fmt, text, qrels, where, message):
    with pytest.raises(EvalsiteError) as caught:
        read_entries(fmt, text, qrels=qrels)
    error = caught.value
    assert error.code == "import-invalid" and error.details["where"] == where, error.message
    assert error.message.startswith(f"{where}: ") and message in error.message, error.message


def test_unknown_formats_and_trec_without_qrels_are_refused():
    with pytest.raises(EvalsiteError, match="format: expected one of okfsmith, csv"):
        read_entries("xml", "x")
    with pytest.raises(EvalsiteError, match="the qrels file is required"):
        read_entries("trec", "401\tQ\n")
    assert (
        dataclasses.replace(ENTRIES[0], where="line 9") == ENTRIES[0]
    )  # where is not part of an entry's value


def test_the_shipped_samples_read_in_every_format():
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "demo" / "formats"
    seen = {}
    for fmt in FORMATS:
        if fmt == "trec":
            entries = read_entries(
                fmt,
                (folder / "clapnq-sample.topics.tsv").read_bytes(),
                qrels=(folder / "clapnq-sample.qrels").read_bytes(),
            )
        else:
            files = [p for p in folder.glob("clapnq-sample*") if not p.name.endswith(".qrels")]
            (path,) = [p for p in files if detect_format(p.name, p.read_bytes()) == fmt]
            entries = read_entries(fmt, path.read_bytes())
        seen[fmt] = [(e.key, e.question, e.expected_document_ids) for e in entries]
    assert len({tuple(v) for v in seen.values()}) == 1 and len(seen["csv"]) == 3


def test_every_bad_row_is_listed_not_only_the_first():
    text = "question,answerable\nQ1,maybe\nQ2,true\nQ3,perhaps\nQ4\n"
    with pytest.raises(EvalsiteError) as caught:
        read_entries("csv", text)
    error = caught.value
    assert error.message.startswith("3 problems: line 2: answerable") and error.details["where"] == "line 2"
    assert [e["where"] for e in error.details["errors"]] == ["line 2", "line 4", "line 5"]
    jsonl = '{"user_input": "Q"}\nnot json\n{"user_input": ""}\n'
    with pytest.raises(EvalsiteError) as caught:
        read_entries("ragas", jsonl)
    assert [e["where"] for e in caught.value.details["errors"]] == ["line 2", "line 3"]
    with pytest.raises(EvalsiteError) as caught:
        read_entries("trec", "1\tQ\n", qrels="1 0 d x\n2 0 d 1\n")
    assert [e["where"] for e in caught.value.details["errors"]] == ["qrels line 1", "qrels line 2"]
    many = "question,answerable\n" + "".join(f"Q{i},bad\n" for i in range(80))
    with pytest.raises(EvalsiteError) as caught:
        read_entries("csv", many)
    assert caught.value.message.startswith("50+ problems") and len(caught.value.details["errors"]) == 50


def test_every_unknown_column_is_named_at_once():
    with pytest.raises(FormatError) as raised:
        read_entries("csv", "question,colour,size,expected_ids\nQ,red,L,p1\n")
    assert raised.value.message == (
        "line 1: unknown columns 'colour', 'size', 'expected_ids'; the columns are key, question, "
        "expected_document_ids, grades, reference_answer, tags, answerable."
    )
    assert raised.value.details["columns"] == ["colour", "size", "expected_ids"]
    header = ",".join(["question", *(f"c{i}" for i in range(12))])
    with pytest.raises(FormatError) as raised:
        read_entries("csv", f"{header}\nQ{',x' * 12}\n")
    assert "unknown columns 'c0', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7', 'c8', 'c9' and 2 more;" in (
        raised.value.message
    )


def test_a_files_grades_are_whole_numbers_however_written_and_grade_0_stays():
    from goldenset.formats import file_grades

    written = {"a": 2, "b": 2.0, "c": "3.0", "d": " 1 ", "e": 0.0, "f": "0", "g": "", "h": None, "i": 2.5,
               "j": "two", "k": True}  # fmt: skip
    assert file_grades(written, "line 2", "grades") == {
        "a": 2, "b": 2, "c": 3, "d": 1, "e": 0, "f": 0,  # whole numbers, 0 kept
        "i": 2.5, "j": "two", "k": True,  # left for the entry's checks to name
    }  # fmt: skip
    with pytest.raises(FormatError, match="line 2: grades: expected an object"):
        file_grades([1], "line 2", "grades")


def test_a_csv_grades_cell_takes_whole_floats_and_names_a_fraction():
    (entry,) = read_entries("csv", "question,expected_document_ids,grades\nQ,a|b,a=2.0|b=0.0|c=0\n")
    assert entry.grades == {"a": 2, "b": 0, "c": 0}
    with pytest.raises(
        FormatError, match=r"line 2: grades: expected document=grade \(a whole number\), got 'a=2.5'"
    ):
        read_entries("csv", "question,expected_document_ids,grades\nQ,a,a=2.5\n")
