"""Human labels of answer judgements, read from a file. Plain Python: no Django import.

A label is one rater's verdict on one judged item: a question's metric (pass/fail or a 0-1 score) or one
statement of an answer (supported / partially / not supported). Files are CSV (a header line) or JSON (a list of
objects, or one object a line); every row has:

question_id  the golden entry: its key, or its id when it has none (required)
rater        who labelled (required): raters are kept apart, their agreement is reported
metric       one of the judged metrics (required)
label        pass | fail (also true/false, yes/no, 1/0), or for a statement supported | partially | not supported
score        instead of label: a number in 0..1 (passes at 0.5 and above)
statement    makes the row a statement label (faithfulness, context_recall, citation_precision)
run_id       the stored answer run whose answer for this question was labelled; or, without it,
answer       the answer text that was labelled, and
passages     the passages it was judged against: a list of {document_id, title, text} (a JSON list in a CSV cell)

"partially" counts as not passing in the calibration (a partly supported statement is not faithful), and keeps
its own value (0.5) for the raters' agreement. Every bad row is named ("line 4: label: ..."), up to 50 at once,
and a file with one bad row stores nothing (goldenset.formats.Problems).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any

from evalsite.bounded_json import JsonValueError, json_value
from goldenset.formats import FormatError, Problems, csv_dicts, decode, fail, shown
from goldenset.formats.json_rows import json_records
from goldenset.vocabulary.metric_names import JUDGED_METRICS

QUESTION, STATEMENT = "question", "statement"
STATEMENT_METRICS = ("faithfulness", "context_recall", "citation_precision")
# Question-level metrics judged from the answer itself (the others read the reference and the passages).
ANSWER_LABEL_METRICS = ("faithfulness", "answer_relevancy", "citation_precision")
FIELDS = ("question_id", "rater", "metric", "label", "score", "statement", "run_id", "answer", "passages")

_PASS = {"pass": 1.0, "passed": 1.0, "true": 1.0, "yes": 1.0, "1": 1.0}
_FAIL = {"fail": 0.0, "failed": 0.0, "false": 0.0, "no": 0.0, "0": 0.0}
_SUPPORT = {
    "supported": 1.0,
    "partially": 0.5,
    "partial": 0.5,
    "partially supported": 0.5,
    "not supported": 0.0,
    "not_supported": 0.0,
    "unsupported": 0.0,
}
MAX_TEXT = 20_000


@dataclass(frozen=True)
class PassageText:
    document_id: str
    title: str
    text: str


@dataclass(frozen=True)
class LabelRow:
    question_id: str
    rater: str
    metric: str
    value: float  # 1 pass / supported, 0.5 partially, 0 fail / not supported, or the given score
    passed: bool  # the binary verdict the calibration uses
    verdict: str  # the label as given, normalised ("pass", "partially", "0.7", ...)
    statement: str = ""
    run_id: str = ""
    answer: str = ""
    passages: tuple[PassageText, ...] = ()
    where: str = ""

    @property
    def level(self) -> str:
        return STATEMENT if self.statement else QUESTION

    def item_key(self, entry_id: str) -> str:
        """What the label is about, whoever rated it: entry, answer (run or text and passages), metric and
        statement. Two raters' labels of one item share it; a rater's second label of it replaces the first."""
        answer = (
            self.run_id
            or hashlib.sha256(
                json.dumps([self.answer, [[p.document_id, p.text] for p in self.passages]]).encode()
            ).hexdigest()
        )
        statement = " ".join(self.statement.lower().split())
        raw = json.dumps([entry_id, answer, self.metric, statement])
        return hashlib.sha256(raw.encode()).hexdigest()


def _text(value: Any, where: str, name: str, *, required: bool = False, limit: int = 300) -> str:
    if value is None or value == "":
        if required:
            raise fail(where, f"{name}: required.", field=name)
        return ""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise fail(where, f"{name}: expected a string.", field=name)
    text = str(value).strip()
    if len(text) > limit:
        raise fail(where, f"{name}: longer than {limit} characters.", field=name)
    return text


def _verdict(row: dict[str, Any], where: str, statement: bool) -> tuple[float, bool, str]:
    label, score = row.get("label"), row.get("score")
    if (label in (None, "")) == (score in (None, "")):
        raise fail(where, "label: give a label or a score (one of them).", field="label")
    if score not in (None, ""):
        try:
            value = float(score) if not isinstance(score, list | dict) else math.nan
        except (TypeError, ValueError):
            raise fail(where, f"score: {shown(score)} is not a number.", field="score") from None
        if isinstance(score, bool) or not math.isfinite(value) or not 0.0 <= value <= 1.0:
            raise fail(where, f"score: {shown(score)} is not a number in 0..1.", field="score")
        return value, value >= 0.5, f"{value:g}"
    allowed = "supported, partially, not supported, pass or fail" if statement else "pass or fail"
    if not isinstance(label, str | int):  # a bool is an int
        raise fail(where, f"label: {shown(label)} is not one of {allowed}.", field="label")
    word = " ".join(str(label).strip().lower().replace("-", " ").split())
    if isinstance(label, bool):
        word = "true" if label else "false"
    known = {**_PASS, **_FAIL, **(_SUPPORT if statement else {})}
    if word not in known:
        raise fail(where, f"label: {shown(label)} is not one of {allowed}.", field="label")
    value = known[word]
    return value, value == 1.0, word


def _passages(value: Any, where: str) -> tuple[PassageText, ...]:
    if value in (None, ""):
        return ()
    if isinstance(value, str):
        try:
            value = json_value(value)
        except JsonValueError as exc:
            raise fail(where, f"passages: not JSON ({exc.message}).", field="passages") from None
    if not isinstance(value, list) or not all(isinstance(p, dict | str) for p in value):
        raise fail(where, "passages: expected a list of {document_id, title, text}.", field="passages")
    out = []
    for i, item in enumerate(value):
        item = {"text": item} if isinstance(item, str) else item
        name = f"passages[{i}]"
        text = _text(item.get("text"), where, f"{name}.text", required=True, limit=MAX_TEXT)
        out.append(
            PassageText(
                _text(item.get("document_id"), where, f"{name}.document_id"),
                _text(item.get("title"), where, f"{name}.title", limit=1000),
                text,
            )
        )
    return tuple(out)


def read_row(row: dict[str, Any], where: str) -> LabelRow:
    """One label from a parsed row, or FormatError naming where and the field."""
    unknown = sorted(k for k in row if k not in FIELDS and k not in ("id", "source", "question"))
    if unknown:
        raise fail(where, f"{unknown[0]}: unknown field.", field=unknown[0])
    metric = _text(row.get("metric"), where, "metric", required=True)
    if metric not in JUDGED_METRICS:
        raise fail(
            where, f"metric: {shown(metric)} is not one of {', '.join(JUDGED_METRICS)}.", field="metric"
        )
    statement = _text(row.get("statement"), where, "statement", limit=MAX_TEXT)
    if statement and metric not in STATEMENT_METRICS:
        raise fail(
            where,
            f"statement: {metric} is judged per question, not per statement "
            f"(statements: {', '.join(STATEMENT_METRICS)}).",
            field="statement",
        )
    value, passed, verdict = _verdict(row, where, bool(statement))
    run_id = _text(row.get("run_id"), where, "run_id")
    answer = _text(row.get("answer"), where, "answer", limit=MAX_TEXT)
    passages = _passages(row.get("passages"), where)
    if run_id and (answer or passages):
        raise fail(where, "run_id: give a run_id or an answer with its passages, not both.", field="run_id")
    if not run_id:
        if not passages:
            raise fail(where, "passages: required without a run_id (what was the answer judged against?).",
                       field="passages")  # fmt: skip
        if not answer and not statement and metric in ANSWER_LABEL_METRICS:
            raise fail(where, f"answer: required for a {metric} label without a run_id.", field="answer")
    return LabelRow(
        question_id=_text(row.get("question_id"), where, "question_id", required=True),
        rater=_text(row.get("rater"), where, "rater", required=True, limit=100),
        metric=metric,
        value=value,
        passed=passed,
        verdict=verdict,
        statement=statement,
        run_id=run_id,
        answer=answer,
        passages=passages,
        where=where,
    )


def read_labels(data: bytes | str, *, fmt: str | None = None) -> list[LabelRow]:
    """Every label of a file (CSV with a header, a JSON list, or JSON lines; `fmt` "csv" | "json", else told
    apart by the first character), or one FormatError naming every bad row (up to 50)."""
    text = decode(data)
    if fmt not in (None, "csv", "json"):
        raise FormatError(
            "validation-error", f"format: {fmt!r} is not csv or json.", details={"field": "format"}
        )
    is_json = fmt == "json" or (fmt is None and text.lstrip()[:1] in ("[", "{"))
    return read_rows(json_records(text, first=1) if is_json else _csv_records(text))


def _csv_records(text: str) -> list[tuple[str, Any]]:
    """(where, row as a dict by the header's names) of each row of a CSV file with a header; a row the csv
    module cannot read, or with more cells than the header names, has its FormatError as its value."""
    header, rows = csv_dicts(text)
    if "question_id" not in header:
        raise fail("line 1", "the header must name question_id, rater, metric and label (or score).")
    return [(f"line {line}", row) for line, row in rows]


def read_rows(records: list[tuple[str, Any]]) -> list[LabelRow]:
    """Labels from (where, parsed row) pairs: the REST body's JSON rows and a file's, read the same way."""
    if not records:
        raise fail("line 1", "no labels.")
    problems, rows = Problems(), []
    for where, record in records:
        with problems.row():
            if isinstance(record, FormatError):  # a line that is not JSON
                raise record
            if not isinstance(record, dict):
                raise fail(where, "expected an object of label fields.")
            rows.append(read_row(record, where))
    problems.check()
    return rows
