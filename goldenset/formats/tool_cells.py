"""The tools' own CSV files and the shapes their JSON takes, as rows the JSON readers (json_rows) read. Plain
Python: no Django import.

DeepEval (`save_as('csv')`), Phoenix (a dataset's CSV download) and Ragas (`to_csv`) write one row per record with
a header; what JSON would nest or list, each writes its own way (tests/fixtures/tools/README.md, from the tools
themselves):
- Phoenix: dotted columns (`input.question`, `metadata.key`), lists as JSON (`["p1"]`), booleans `True`/`False`,
  or, for a dataset uploaded as a DataFrame, Python's repr (`['p1']`) even in its JSON;
- DeepEval: passages joined by `|` (`context`, also in its JSONL), `additional_metadata` as a JSON text;
- Ragas: list columns as Python's repr (`['a', "b's"]`), read with ast.literal_eval (literals only, never code).
`csv_records` gives each row as a dict (dotted names nested, empty cells left out) and `text_list`, `text_object`
and `boolean` read a cell that may be a text or already a value. Phoenix's examples as its REST API returns them
(`{"data": {"examples": [...]}}`) and DeepEval's test run (`{"testCases": [...]}`, camelCase) are unwrapped by
`wrapped_records`.
"""

from __future__ import annotations

import ast
from typing import Any

from evalsite.bounded_json import JsonValueError, json_value
from goldenset.formats import FormatError, csv_rows, fail

MAX_LITERAL_CHARS = 1_000_000  # a Python-repr cell is parsed only up to this size (ast builds a tree of it)


def csv_records(text: str) -> list[tuple[str, Any]]:
    """(where, row) of each row of a tool's CSV: a dict of its non-empty cells, `a.b` columns nested as
    {"a": {"b": ...}}; a row the csv module cannot read (or with too few or too many cells) as its FormatError."""
    rows = csv_rows(text)
    _, header = next(rows, (1, None))
    if isinstance(header, FormatError):
        raise header
    if not header or not any(cell.strip() for cell in header):
        raise fail("line 1", "expected a header row naming the columns.", line=1)
    names = [cell.strip() for cell in header]
    out: list[tuple[str, Any]] = []
    for line, cells in rows:
        where = f"line {line}"
        if isinstance(cells, FormatError):
            out.append((where, cells))
            continue
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) != len(names):
            out.append((where, fail(where, f"expected {len(names)} cells, found {len(cells)}.", line=line)))
            continue
        row: dict[str, Any] = {}
        for name, cell in zip(names, cells, strict=True):
            if cell == "":
                continue
            *parents, last = name.split(".")
            holder = row
            for part in parents:
                holder = holder.setdefault(part, {}) if isinstance(holder.get(part, {}), dict) else {}
            holder[last] = cell
        out.append((where, row))
    return out


def _literal(text: str) -> Any:
    """A JSON text's value, else a Python literal's (Ragas' and pandas' repr of a list), else None."""
    try:
        return json_value(text)
    except JsonValueError:
        pass
    if len(text) > MAX_LITERAL_CHARS:
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def text_list(value: Any, *, joined: str | None = None) -> Any:
    """A list of texts as a tool wrote it: a list as is; a text holding a JSON or Python list, that list; with
    `joined` (DeepEval's `|`), any other text split on it. Anything else is returned for the reader to refuse."""
    if not isinstance(value, str):
        return value
    stripped = value.strip()
    if stripped.startswith("[") and isinstance(found := _literal(stripped), list):
        return found
    if joined is not None:
        return [part for part in value.split(joined) if part.strip()]
    return value


def text_object(value: Any) -> Any:
    """An object written as a JSON (or Python) text in a cell, or as is; anything else for the reader to refuse."""
    if isinstance(value, str) and value.strip().startswith("{"):
        found = _literal(value.strip())
        return found if isinstance(found, dict) else value
    return value


def boolean(value: Any) -> Any:
    """true / false in any of the tools' spellings ("True", "false"), or the value as is."""
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return value


# DeepEval's test run names a test case's fields in camelCase; its golden's names, as read.
_DEEPEVAL_TEST_CASE = {"expectedOutput": "expected_output", "actualOutput": "actual_output",
                       "retrievalContext": "retrieval_context", "metadata": "additional_metadata"}  # fmt: skip
# The rest of a test case: the run's outcome, not the golden set's (read and ignored).
_DEEPEVAL_OUTCOME = {"flaky", "success", "metricsData", "runDuration", "order", "evaluationCost", "name"}


def wrapped_records(text: str) -> list[tuple[str, Any]] | None:
    """The records inside a tool's JSON answer, as (where, record), or None when the text is not one:
    Phoenix's examples (`GET /v1/datasets/{id}/examples`: {"data": {"examples": [...]}}) and DeepEval's test run
    (the file `evaluate()` writes: {"testCases": [...]}, each case renamed to a golden's fields)."""
    opening = text[:100_000]
    if not text.lstrip().startswith("{") or ('"examples"' not in opening and '"testCases"' not in opening):
        return None
    try:
        value = json_value(text)
    except JsonValueError:
        return None  # JSONL, read line by line
    if not isinstance(value, dict):
        return None
    data = value.get("data")
    examples = data.get("examples") if isinstance(data, dict) else None
    if isinstance(examples, list):
        return [(f"examples[{i}]", example) for i, example in enumerate(examples)]
    cases = value.get("testCases")
    if isinstance(cases, list):
        return [(f"testCases[{i}]", _test_case(case)) for i, case in enumerate(cases)]
    return None


def _test_case(case: Any) -> Any:
    if not isinstance(case, dict):
        return case
    return {_DEEPEVAL_TEST_CASE.get(k, k): v for k, v in case.items() if k not in _DEEPEVAL_OUTCOME}
