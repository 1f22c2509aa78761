"""Read and write okfsmith's golden file (golden.json). Plain Python: no Django import.

The file is a JSON list of question records, or {"questions": [...]}. Validation is strict (unknown fields
are errors, so a typo like "must_site" cannot silently drop citations). A file that is not JSON stops at its
first bad character; otherwise every bad record is named (its first problem, with its line), as every
other format's reader names every bad row (goldenset.formats.Problems), so a broken file loads nothing and the
user can fix it in one pass.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from evalsite.bounded_json import JsonValueError, find_lone_surrogate, find_nul, json_loads
from evalsite.errors import EvalsiteError
from goldenset.formats import Problems
from goldenset.text import (
    expected_documents_problem,
    key_problem,
    normalize_question,
    question_problem,
    reference_answer_problem,
    tag_problem,
    tags_problem,
)
from goldenset.vocabulary.golden_fields import GOLDEN_FILE_FIELDS

_WS = " \t\n\r"
_FIELDS = GOLDEN_FILE_FIELDS


@dataclass(frozen=True)
class GoldenRecord:
    question: str
    id: str | None = None
    expected_answer: str = ""
    must_cite: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    answerable: bool = True


class GoldenFileError(EvalsiteError):
    """A golden.json that cannot be loaded: code "golden-invalid" (not JSON) or "golden-schema"."""

    status_code = 400


def parse_golden(data: str | bytes) -> list[GoldenRecord]:
    """Parse golden.json text or bytes into records; a GoldenFileError names the first problem of the text, or
    every bad record (one error listing each in `details["errors"]`)."""
    text = _decode(data)
    root = _load(text)
    start = _skip(text, 0, _WS)
    if isinstance(root, dict) and isinstance(root.get("questions"), list):
        items, offsets = root["questions"], _array_offsets(text, _questions_offset(text, start))
    elif isinstance(root, list):
        items, offsets = root, _array_offsets(text, start)
    elif isinstance(root, dict):
        raise GoldenFileError(
            "golden-schema",
            'golden.json: "questions" must be a list of records',
            details={"field": "questions"},
        )
    else:
        raise GoldenFileError(
            "golden-schema",
            'golden.json: expected a list of records or an object with a "questions" list',
            details={"field": "(root)"},
        )
    records: list[GoldenRecord] = []
    seen_ids: dict[str, int] = {}
    seen_questions: dict[str, int] = {}
    lines = _line_numbers(text, offsets)
    problems = Problems(GoldenFileError, "golden-schema")
    for index, (item, line) in enumerate(zip(items, lines, strict=True)):
        with problems.row():
            records.append(_checked(item, index, line, lines, seen_ids, seen_questions))
    problems.check()
    return records


def _checked(
    item: Any,
    index: int,
    line: int,
    lines: list[int],
    seen_ids: dict[str, int],
    seen_questions: dict[str, int],
) -> GoldenRecord:
    """One record, valid and not a repeat of an earlier one's id or question."""
    record = _record(item, index, line)
    if record.id is not None and record.id in seen_ids:
        first = seen_ids[record.id]
        raise _schema(
            index,
            record.id,
            "id",
            line,
            f'duplicate id "{record.id}" (first used by record {first}, line {lines[first]})',
            first_index=first,
        )
    key = normalize_question(record.question)
    if key in seen_questions:
        first = seen_questions[key]
        raise _schema(
            index,
            record.id,
            "question",
            line,
            f"duplicate question (same as record {first}, line {lines[first]})",
            first_index=first,
        )
    if record.id is not None:
        seen_ids[record.id] = index
    seen_questions[key] = index
    return record


def dump_golden(records: Iterable[GoldenRecord]) -> str:
    """Serialise records as a golden.json list that parse_golden reads back to equal records."""
    out = []
    for record in records:
        item: dict[str, Any] = {} if record.id is None else {"id": record.id}
        item.update(
            question=record.question,
            expected_answer=record.expected_answer,
            must_cite=list(record.must_cite),
            tags=list(record.tags),
        )
        if not record.answerable:
            item["answerable"] = False
        out.append(item)
    return json.dumps(out, indent=2, ensure_ascii=False) + "\n"


def _decode(data: str | bytes) -> str:
    """Bytes to text; a non-UTF-8 byte is reported where it is, so the user can find it in an editor."""
    if isinstance(data, str):
        return data.removeprefix("\ufeff")
    if not isinstance(data, bytes | bytearray):
        raise TypeError(f"parse_golden expects str or bytes, not {type(data).__name__}")
    data = bytes(data).removeprefix(codecs.BOM_UTF8)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        column = len(data[line_start : exc.start].decode("utf-8")) + 1
        raise _invalid(line, column, f"not UTF-8 (byte 0x{data[exc.start]:02x})") from None


def _load(text: str) -> Any:
    """Whole-document JSON parse: syntax errors, NUL, lone surrogates, NaN/Infinity, numbers out of range
    and absurd nesting become golden-invalid."""
    if not text.strip():
        raise GoldenFileError(
            "empty-file", "golden.json: the file is empty.", details={"file": "golden.json"}
        )
    if (nul := find_nul(text)) is not None:
        raise _invalid(*nul, "NUL characters are not allowed")
    if (surrogate := find_lone_surrogate(text)) is not None:
        raise _invalid(*surrogate, "lone surrogates are not valid Unicode")
    try:
        return json_loads(text)
    except json.JSONDecodeError as exc:
        raise _invalid(exc.lineno, exc.colno, exc.msg) from None
    except JsonValueError as exc:
        raise _invalid(exc.line, exc.column, exc.message) from None


def _skip(text: str, pos: int, chars: str) -> int:
    while pos < len(text) and text[pos] in chars:
        pos += 1
    return pos


def _array_offsets(text: str, pos: int) -> list[int]:
    """Start offset of each element of the (already validated) array whose "[" is at pos."""
    decoder, offsets = json.JSONDecoder(), []
    pos = _skip(text, pos + 1, _WS)
    while text[pos] != "]":
        offsets.append(pos)
        pos = _skip(text, decoder.raw_decode(text, pos)[1], _WS + ",")
    return offsets


def _questions_offset(text: str, pos: int) -> int:
    """Offset of the value of "questions" in the (already validated) object whose "{" is at pos.

    The last occurrence wins, as it does in json.loads.
    """
    decoder, found = json.JSONDecoder(), pos
    pos = _skip(text, pos + 1, _WS)
    while text[pos] != "}":
        key, pos = decoder.raw_decode(text, pos)
        pos = _skip(text, pos, _WS + ":")
        if key == "questions":
            found = pos
        pos = _skip(text, decoder.raw_decode(text, pos)[1], _WS + ",")
    return found


def _line_numbers(text: str, offsets: list[int]) -> list[int]:
    """1-based line of each (ascending) offset, counted incrementally so big files stay linear."""
    lines, line, last = [], 1, 0
    for offset in offsets:
        line, last = line + text.count("\n", last, offset), offset
        lines.append(line)
    return lines


def _record(item: Any, index: int, line: int) -> GoldenRecord:
    """Validate one record, checking fields in the order they appear so the first problem is reported."""
    if not isinstance(item, dict):
        raise _schema(index, None, "(record)", line, f"must be an object, not {type(item).__name__}")
    raw_id = item.get("id")
    if isinstance(raw_id, int) and not isinstance(raw_id, bool):
        raw_id = str(raw_id)
    record_id = raw_id if isinstance(raw_id, str) and raw_id.strip() else None
    values: dict[str, Any] = {}
    for name, value in item.items():
        problem = None
        if name not in _FIELDS:
            problem = "is not a golden-file field (expected one of: " + ", ".join(_FIELDS) + ")"
        elif name == "id":
            problem = (
                "must be a non-empty string or an integer" if record_id is None else key_problem(record_id)
            )
            value = record_id
        elif name == "question":
            if isinstance(value, str) and value.strip():
                problem = question_problem(value)
            else:
                problem = "must be a non-empty string"
        elif name == "expected_answer":
            problem = reference_answer_problem(value) if isinstance(value, str) else "must be a string"
        elif name in ("must_cite", "tags"):
            ok = isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value)
            problem = None if ok else "must be a list of non-empty strings"
            if ok and name == "must_cite":
                problem = expected_documents_problem(value)
            if ok and name == "tags":
                problem = tags_problem(value) or next(
                    (f"item {i} {p}" for i, v in enumerate(value) if (p := tag_problem(v))), None
                )
            value = tuple(value) if ok else value
        elif name == "answerable":
            problem = None if isinstance(value, bool) else "must be true or false"
        if problem:
            raise _schema(index, record_id, name, line, f'field "{name}" {problem}')
        values[name] = value
    if "question" not in values:
        raise _schema(index, record_id, "question", line, 'field "question" is required')
    return GoldenRecord(**values)


def _invalid(line: int, column: int, message: str) -> GoldenFileError:
    return GoldenFileError(
        "golden-invalid",
        f"golden.json line {line}, column {column}: {message}",
        details={"line": line, "column": column},
    )


def _schema(
    index: int, record_id: str | None, field: str, line: int, message: str, **extra: Any
) -> GoldenFileError:
    where = f'record {index} (id "{record_id}")' if record_id is not None else f"record {index}"
    return GoldenFileError(
        "golden-schema",
        f"{where}, line {line}: {message}",
        details={"index": index, "id": record_id, "field": field, "line": line, **extra},
    )
