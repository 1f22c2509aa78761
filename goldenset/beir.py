"""Readers for the BEIR layout: corpus.jsonl, queries.jsonl and qrels (TSV). Plain Python: no Django import.

Every malformed row raises EvalsiteError("beir-invalid") naming the file and line, so an import of a
broken folder stops with one readable line and loads nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Set
from dataclasses import dataclass, field
from pathlib import Path

from evalsite.bounded_json import JsonValueError, find_lone_surrogate, find_nul, json_loads
from evalsite.errors import EvalsiteError
from goldenset.text import document_id_problem, key_problem, question_problem, reference_answer_problem


@dataclass(frozen=True)
class CorpusRow:
    id: str
    title: str
    text: str
    metadata: dict = field(default_factory=dict)


@dataclass(frozen=True)
class QueryRow:
    id: str
    text: str
    answerable: bool = True
    reference_answer: str = ""
    metadata: dict = field(default_factory=dict)


def _error(name: str, line: int, message: str) -> EvalsiteError:
    return EvalsiteError(
        "beir-invalid", f"{name} line {line}: {message}", details={"file": name, "line": line}
    )


def _at(name: str, line: int, column: int, message: str) -> EvalsiteError:
    return EvalsiteError(
        "beir-invalid",
        f"{name} line {line}, column {column}: {message}",
        details={"file": name, "line": line, "column": column},
    )


def _json_lines(lines: Iterable[str | bytes], name: str) -> Iterator[tuple[int, dict]]:
    for number, raw in enumerate(lines, start=1):
        if isinstance(raw, bytes):
            try:
                raw = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise _error(name, number, "not UTF-8") from None
        if number == 1:
            raw = raw.lstrip("\ufeff")
        if not raw.strip():
            continue
        for found, problem in (
            (find_nul(raw), "NUL characters are not allowed"),
            (find_lone_surrogate(raw), "lone surrogates are not valid Unicode"),
        ):
            if found is not None:
                raise _at(name, number, found[1], problem)
        try:
            row = json_loads(raw)
        except json.JSONDecodeError as exc:
            raise _at(name, number, exc.colno, exc.msg) from None
        except JsonValueError as exc:
            raise _at(name, number, exc.column, exc.message) from None
        if not isinstance(row, dict):
            raise _error(name, number, "expected a JSON object")
        yield number, row


def _id(row: dict, name: str, number: int, problem_of: Callable[[str], str | None]) -> str:
    value = row.get("_id", row.get("id"))
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise _error(name, number, 'field "_id" must be a non-empty string')
    value = value.strip()
    if problem := problem_of(value):
        error = _error(name, number, f'field "_id" {problem}')
        error.details["field"] = "_id"
        raise error
    return value


def _str(row: dict, key: str, name: str, number: int) -> str:
    value = row.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _error(name, number, f'field "{key}" must be a string')
    return value


_CORPUS_KEYS = {"_id", "id", "title", "text"}
_QUERY_KEYS = {"_id", "id", "text", "answerable", "reference_answer"}


def read_corpus(lines: Iterable[str | bytes], name: str = "corpus.jsonl") -> Iterator[CorpusRow]:
    """Corpus rows; a row's "metadata" object, or else its fields beyond id, title and text, is its metadata."""
    for number, row in _json_lines(lines, name):
        row_id = _id(row, name, number, document_id_problem)
        metadata = {k: v for k, v in row.items() if k not in _CORPUS_KEYS}
        nested = metadata.pop("metadata", None)
        if nested is not None and not isinstance(nested, dict):
            error = _error(name, number, f'field "metadata" must be an object, not {_json_type(nested)}')
            error.details["field"] = "metadata"
            raise error
        yield CorpusRow(
            id=row_id,
            title=_str(row, "title", name, number),
            text=_str(row, "text", name, number),
            metadata=nested or metadata,
        )


def _json_type(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else type(value).__name__


def read_queries(lines: Iterable[str | bytes], name: str = "queries.jsonl") -> Iterator[QueryRow]:
    for number, row in _json_lines(lines, name):
        text = _str(row, "text", name, number)
        if not text.strip():
            raise _error(name, number, 'field "text" (the question) is empty')
        answerable = row.get("answerable", True)
        if not isinstance(answerable, bool):
            raise _error(name, number, 'field "answerable" must be true or false')
        reference_answer = _str(row, "reference_answer", name, number)
        for key, problem in (
            ("text", question_problem(text)),
            ("reference_answer", reference_answer_problem(reference_answer)),
        ):
            if problem:
                error = _error(name, number, f'field "{key}" {problem}')
                error.details["field"] = key
                raise error
        metadata = {k: v for k, v in row.items() if k not in _QUERY_KEYS}
        yield QueryRow(
            id=_id(row, name, number, key_problem),
            text=text,
            answerable=answerable,
            reference_answer=reference_answer,
            metadata=metadata,
        )


def read_qrels(
    lines: Iterable[str | bytes], name: str = "qrels.tsv", known_documents: Set[str] | None = None
) -> dict[str, dict[str, int]]:
    """{query_id: {doc_id: grade}}; a header row (query-id, corpus-id, score) is skipped.

    Accepts BEIR's three columns and TREC's four (query, iteration, doc, grade). With known_documents (the
    corpus ids), a row judging any other document is refused at its line.
    """
    qrels: dict[str, dict[str, int]] = {}
    for number, raw in enumerate(lines, start=1):
        if isinstance(raw, bytes):
            try:
                raw = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise _error(name, number, "not UTF-8") from None
        line = raw.strip("\r\n").lstrip("\ufeff")
        if "\x00" in line:
            raise _error(name, number, "NUL characters are not allowed")
        if find_lone_surrogate(line, json_escapes=False) is not None:  # only a str line can hold one
            raise _error(name, number, "lone surrogates are not valid Unicode")
        if not line.strip():
            continue
        cols = line.split("\t") if "\t" in line else line.split()
        if number == 1 and cols[-1].strip().lower() in {"score", "relevance", "grade"}:
            continue
        if len(cols) == 4:
            cols = [cols[0], cols[2], cols[3]]
        if len(cols) != 3:
            raise _error(name, number, f"expected 3 tab-separated columns, got {len(cols)}")
        query_id, doc_id, grade_text = (c.strip() for c in cols)
        try:
            grade = int(grade_text)
        except ValueError:
            raise _error(name, number, f"grade {grade_text!r} is not an integer") from None
        if not query_id or not doc_id:
            raise _error(name, number, "empty query or document id")
        if known_documents is not None and doc_id not in known_documents:
            error = _error(
                name, number, f"query {query_id} judges document {doc_id}, which is not in corpus.jsonl"
            )
            error.details.update(query_id=query_id, document_id=doc_id)
            raise error
        qrels.setdefault(query_id, {})[doc_id] = grade
    return qrels


def open_lines(path: Path) -> Iterator[bytes]:
    with path.open("rb") as handle:
        yield from handle
