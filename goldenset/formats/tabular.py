"""CSV and TSV golden sets: a header row, then one entry a row.

Columns (only `question` is required; any order; an unknown column is an error naming it):
`key`, `question`, `expected_document_ids`, `grades`, `reference_answer`, `tags`, `answerable` (the dashboard's
export also has `id`, `origin`, `reviewed`, `created_at`, `updated_at`: read and ignored).
A key is text: one that readers would take for a number or a missing value (6412345678901234567, NA) is written
as a JSON string, in double quotes (goldenset.formats.text_cell), and a key cell starting with `"` is read as one.
A list cell (`expected_document_ids`, `tags`) is `|`-separated (`refunds|shipping`), or a JSON array when an id
holds `|`; `grades` is `refunds=2|shipping=1` or a JSON object; `answerable` is true/false (blank: true). An
empty `grades` cell means "no grades"; its column left out keeps a replaced entry's grades.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

from evalsite.bounded_json import json_value
from goldenset.formats import (
    Entry,
    FormatError,
    Problems,
    Written,
    csv_rows,
    fail,
    file_grades,
    read_text_cell,
    shown,
    text_cell,
    whole_grade,
)

COLUMNS = ("key", "question", "expected_document_ids", "grades", "reference_answer", "tags", "answerable")
# What the dashboard's CSV export adds about each entry (goldenset.vocabulary.golden_fields.GOLDEN_CSV_COLUMNS):
# read and ignored, so that export imports back.
INFORMATIONAL = ("id", "origin", "reviewed", "created_at", "updated_at")
_TRUE, _FALSE = {"true", "1", "yes", ""}, {"false", "0", "no"}
UNKNOWN_SHOWN = 10  # unknown columns an error names (a header may have any number, of any length)


def read(text: str, delimiter: str) -> list[Entry]:
    rows = csv_rows(text, delimiter)
    _, header = next(rows, (1, None))
    if isinstance(header, FormatError):
        raise header
    if header is None or not any(cell.strip() for cell in header):
        raise fail("line 1", f"expected a header row naming the columns ({', '.join(COLUMNS)}).", line=1)
    names = [cell.strip().lower() for cell in header]
    unknown = [name for name in names if name not in COLUMNS and name not in INFORMATIONAL]
    if unknown:
        named = ", ".join(shown(name) for name in unknown[:UNKNOWN_SHOWN])
        more = f" and {len(unknown) - UNKNOWN_SHOWN} more" if len(unknown) > UNKNOWN_SHOWN else ""
        raise fail(
            "line 1",
            f"unknown column{'s' if len(unknown) > 1 else ''} {named}{more}; the columns are {', '.join(COLUMNS)}.",
            line=1,
            columns=[name[:60] for name in unknown[:UNKNOWN_SHOWN]],
        )
    if "question" not in names:
        raise fail("line 1", "the header has no question column.", line=1)
    if len(set(names)) != len(names):
        raise fail("line 1", "a column is named twice.", line=1)
    entries = []
    problems = Problems()
    carried = frozenset(names) - set(INFORMATIONAL)
    for line, row in rows:
        with problems.row():
            if isinstance(row, FormatError):
                raise row
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(names):
                raise fail(f"line {line}", f"expected {len(names)} cells, found {len(row)}.", line=line)
            cells = dict(zip(names, row, strict=True))
            entries.append(_entry(cells, f"line {line}", "grades" in names, carried))
    problems.check()
    return entries


def _entry(cells: dict[str, str], where: str, has_grades: bool, carried: frozenset[str]) -> Entry:
    expected = _list(cells.get("expected_document_ids", ""), where, "expected_document_ids")
    answerable = cells.get("answerable", "").strip().lower()
    if answerable not in _TRUE | _FALSE:
        raise fail(where, f"answerable: expected true or false, got {shown(cells['answerable'])}.")
    key = read_text_cell(cells.get("key", ""))
    if key is None:
        raise fail(where, 'key: a cell starting with " must be a JSON string ("6412345678901234567").')
    return Entry(
        question=cells["question"],
        key=key,
        expected_document_ids=tuple(expected),
        grades=_grades(cells.get("grades", ""), where) if has_grades else None,
        reference_answer=cells.get("reference_answer", ""),
        tags=tuple(_list(cells.get("tags", ""), where, "tags")),
        answerable=answerable in _TRUE,
        where=where,
        carried=carried,
    )


def _list(cell: str, where: str, column: str) -> list[str]:
    cell = cell.strip()
    if not cell:
        return []
    if cell.startswith("["):
        try:
            values = json_value(cell)
        except ValueError:
            values = None
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise fail(where, f"{column}: a cell starting with [ must be a JSON array of strings.")
        return values
    return [part.strip() for part in cell.split("|") if part.strip()]


def _grades(cell: str, where: str) -> dict[str, int]:
    cell = cell.strip()
    if not cell:
        return {}
    if cell.startswith("{"):
        try:
            grades = json_value(cell)
        except ValueError:
            grades = None
        if not isinstance(grades, dict):
            raise fail(where, "grades: a cell starting with { must be a JSON object of document id -> grade.")
        return file_grades(grades, where, "grades")
    out: dict[str, int] = {}
    for part in cell.split("|"):
        document, sep, grade = part.rpartition("=")
        value = whole_grade(grade)
        if not sep or not document.strip() or isinstance(value, bool) or not isinstance(value, int):
            raise fail(where, f"grades: expected document=grade (a whole number), got {shown(part)}.")
        out[document.strip()] = value
    return out


def write(entries: Sequence[Entry], name: str, delimiter: str) -> Written:
    buffer = io.StringIO(newline="")
    out = csv.writer(buffer, delimiter=delimiter, lineterminator="\n")
    out.writerow(COLUMNS)
    for e in entries:
        out.writerow(
            [
                text_cell(e.key),
                e.question,
                _joined(e.expected_document_ids),
                _joined([f"{d}={g}" for d, g in (e.grades or {}).items()])
                if _plain(e.grades)
                else json.dumps(e.grades),
                e.reference_answer,
                _joined(e.tags),
                "true" if e.answerable else "false",
            ]
        )
    warnings = []
    contexts = sum(1 for e in entries if e.contexts)
    if contexts:
        warnings.append(
            f"{contexts} entries' reference contexts (texts) have no column in {_name(delimiter)}: left out."
        )
    return Written({f"{name}.{'csv' if delimiter == ',' else 'tsv'}": buffer.getvalue()}, warnings)


def _plain(grades: dict[str, int] | None) -> bool:
    return not grades or not any("|" in d or "=" in d for d in grades)


def _joined(values: Sequence[str]) -> str:
    values = list(values)
    return (
        json.dumps(values, ensure_ascii=False)
        if any("|" in v or v.startswith("[") for v in values)
        else "|".join(values)
    )


def _name(delimiter: str) -> str:
    return "CSV" if delimiter == "," else "TSV"
