"""evaluation.judgments.labels: human label files read strictly, every bad row named."""

from __future__ import annotations

import csv
import io
import json

import pytest

from evaluation.judgments.labels import QUESTION, STATEMENT, read_labels
from goldenset.formats import FormatError

PASSAGES = json.dumps([{"document_id": "refunds", "title": "Refunds", "text": "Refunds within 30 days."}])


def csv_text(*rows: str) -> str:
    """A label CSV of rows given as "q,rater,metric,label,score,statement,answer" (the passages added)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["question_id", "rater", "metric", "label", "score", "statement", "answer", "passages"])
    for row in rows:
        cells = row.split(",")
        writer.writerow([*cells, PASSAGES if cells[-1] != "NOPASSAGES" else ""][:8])
    return out.getvalue()


def test_it_reads_question_and_statement_labels_with_their_values():
    rows = read_labels(
        csv_text(
            "q1,ann,faithfulness,Pass,,,Refunds within 30 days.",
            "q1,bob,faithfulness,,0.4,,Refunds within 30 days.",
            "q1,ann,faithfulness,partially,,Refunds within 30 days.,",
            "q1,ann,context_recall,not supported,,Refunds go to the card.,",
        )
    )
    assert [(r.level, r.value, r.passed, r.verdict) for r in rows] == [
        (QUESTION, 1.0, True, "pass"),
        (QUESTION, 0.4, False, "0.4"),
        (STATEMENT, 0.5, False, "partially"),  # a partly supported statement does not pass
        (STATEMENT, 0.0, False, "not supported"),
    ]
    assert rows[0].passages[0].document_id == "refunds" and rows[0].where == "line 2"


def test_two_raters_of_one_item_share_its_key_and_another_statement_does_not():
    rows = read_labels(
        json.dumps(
            [
                {
                    "question_id": "q1",
                    "rater": r,
                    "metric": "faithfulness",
                    "label": "supported",
                    "statement": s,
                    "passages": [{"text": "Refunds within 30 days."}],
                }
                for r, s in (
                    ("ann", "Refunds within 30 days."),
                    ("bob", "refunds  within 30 DAYS."),
                    ("ann", "Other."),
                )
            ]  # fmt: skip
        )
    )
    keys = [r.item_key("entry-1") for r in rows]
    assert keys[0] == keys[1] != keys[2]
    assert rows[0].item_key("entry-2") != keys[0]


def test_every_bad_row_is_named_and_nothing_is_read():
    with pytest.raises(FormatError) as caught:
        read_labels(
            csv_text(
                "q1,ann,faithfulness,maybe,,,An answer.",
                "q2,ann,recall,pass,,,An answer.",
                "q3,,faithfulness,pass,,,An answer.",
                "q4,ann,faithfulness,pass,,,NOPASSAGES",
                "q5,ann,answer_relevancy,pass,,A statement.,An answer.",
                "q6,ann,faithfulness,,1.5,,An answer.",
            )
        )
    errors = [(e["where"], e["message"].split(":")[1].strip()) for e in caught.value.details["errors"]]
    assert errors == [
        ("line 2", "label"),
        ("line 3", "metric"),
        ("line 4", "rater"),
        ("line 5", "passages"),
        ("line 6", "statement"),
        ("line 7", "score"),
    ]
    assert caught.value.code == "import-invalid"


@pytest.mark.parametrize(
    "row, field",
    [
        ({"run_id": "r", "answer": "A."}, "run_id"),
        ({"label": "pass", "score": 1}, "label"),
        ({"passages": "[not json"}, "passages"),
        ({"passages": [{"title": "no text"}]}, "passages[0].text"),
        ({"colour": "red"}, "colour"),
        ({"answer": None}, "answer"),
    ],
)
def test_a_bad_field_is_named(row, field):
    base = {"question_id": "q", "rater": "ann", "metric": "faithfulness", "label": "pass", "answer": "A.",
            "passages": [{"text": "A."}]}  # fmt: skip
    with pytest.raises(FormatError) as caught:
        read_labels(json.dumps([{**base, **row}]))
    assert caught.value.details["field"] == field, caught.value.message
    assert caught.value.message.startswith(f"record 1: {field}:")


def test_json_lines_and_an_empty_file():
    line = {"question_id": "q", "rater": "ann", "metric": "context_relevancy", "label": "fail",
            "passages": [{"text": "A."}]}  # fmt: skip
    rows = read_labels(json.dumps(line) + "\n\n" + json.dumps({**line, "rater": "bob"}) + "\n")
    assert [(r.rater, r.where, r.passed) for r in rows] == [
        ("ann", "line 1", False),
        ("bob", "line 3", False),
    ]
    with pytest.raises(FormatError, match="no labels"):
        read_labels("[]")
    with pytest.raises(FormatError, match="line 2: not JSON"):
        read_labels(json.dumps(line) + "\n{oops\n")
