"""Run files an offline pipeline wrote, read strictly. Plain Python: no Django.

Two forms, told apart by their first non-blank character (`{` is JSONL):
- TREC (trec_eval's input): `qid Q0 docid rank score tag` per line, whitespace-separated; the rank column is
  read and ignored, as trec_eval ignores it (it orders by score, ties by document id);
- JSONL: one object per line, `{"query_id": ..., "document_id": ..., "score": ...}`, with an optional `"tag"`
  (default "run").
Blank lines are skipped. A line of the wrong shape, a score that is not a finite number, an id or tag longer
than its limit, or a document listed twice for one query and tag refuses the whole file (`run-file-invalid`,
the line number named): nothing is evaluated from a file that may have been cut or mangled.

Limits: a tag names a run (EvaluationRun.label, MAX_TAG_CHARS); a query id is a golden entry's key or id and a
document id a document's, none longer than MAX_ID_CHARS, so a longer one can match nothing.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from evalsite.bounded_json import JsonValueError, json_value
from evalsite.errors import EvalsiteError
from evaluation.configs import MAX_LABEL_CHARS
from goldenset.formats import shown
from goldenset.text import MAX_ID_CHARS

MAX_TAGS = 20  # runs one file may hold (as configurations per evaluation)
MAX_TAG_CHARS = MAX_LABEL_CHARS  # a tag is its run's label


@dataclass
class RunFile:
    """tag -> query id -> document id -> score, tags and queries in the order first met."""

    runs: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    lines: int = 0
    form: str = "trec"


def _fail(line: int, message: str, **details) -> EvalsiteError:
    return EvalsiteError("run-file-invalid", f"line {line}: {message}", details={"line": line, **details})


def _bounded(line: int, query: str, document: str, tag: str) -> None:
    for name, value, limit in (
        ("query_id", query, MAX_ID_CHARS),
        ("document_id", document, MAX_ID_CHARS),
        ("tag", tag, MAX_TAG_CHARS),
    ):
        if len(value) > limit:
            raise _fail(
                line,
                f"{name}: {len(value):,} characters; the limit is {limit}.",
                field=name,
                limit=limit,
            )


def _score(text: Any, line: int) -> float:
    if isinstance(text, bool | list | dict):
        raise _fail(line, f"score {shown(text)} is not a number.")
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise _fail(line, f"score {shown(text)} is not a number.") from None
    if not math.isfinite(value):
        raise _fail(line, f"score {shown(text)} is not a finite number.")
    return value


def parse_run_file(data: bytes) -> RunFile:
    """The runs in a TREC or JSONL run file (see the module docstring), or EvalsiteError naming the line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EvalsiteError(
            "run-file-invalid", f"the file is not UTF-8 (byte {exc.start}).", details={"byte": exc.start}
        ) from None
    if "\x00" in text:
        raise EvalsiteError("run-file-invalid", "the file holds NUL characters.", details={})
    jsonl = text.lstrip().startswith("{")
    out = RunFile(form="jsonl" if jsonl else "trec")
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        out.lines += 1
        if jsonl:
            query, document, score, tag = _jsonl_line(raw, number)
        else:
            parts = raw.split()
            if len(parts) != 6:
                raise _fail(number, f"expected 6 columns (qid Q0 docid rank score tag), found {len(parts)}.")
            query, _, document, _, score_text, tag = parts
            score = _score(score_text, number)
        _bounded(number, query, document, tag)
        per_query = out.runs.setdefault(tag, {}).setdefault(query, {})
        if document in per_query:
            raise _fail(
                number,
                f"document {shown(document)} is listed twice for query {shown(query)} in run {shown(tag)}.",
            )
        per_query[document] = score
        if len(out.runs) > MAX_TAGS:
            raise _fail(number, f"more than {MAX_TAGS} runs (tags) in one file.")
    if not out.runs:
        raise EvalsiteError("empty-file", "the run file holds no lines.", details={})
    return out


def _jsonl_line(raw: str, number: int) -> tuple[str, str, float, str]:
    try:
        row = json_value(raw)
    except JsonValueError as exc:
        raise _fail(number, f"not JSON ({exc.message} at column {exc.column}).") from None
    if not isinstance(row, dict):
        raise _fail(number, "expected an object with query_id, document_id and score.")
    for key in ("query_id", "document_id", "score"):
        if key not in row:
            raise _fail(number, f"{key} is missing.")
    query, document, tag = row["query_id"], row["document_id"], row.get("tag", "run")
    for key, value in (("query_id", query), ("document_id", document), ("tag", tag)):
        if isinstance(value, bool) or not isinstance(value, str | int) or not str(value).strip():
            got = shown(value, json.dumps)
            raise _fail(number, f"{key} must be a non-empty string or integer, got {got}.")
    return str(query), str(document), _score(row["score"], number), str(tag)
