"""Readers for the BEIR layout: corpus.jsonl, queries.jsonl and qrels (TSV). Plain Python: no Django import.

Every malformed row raises EvalsiteError("beir-invalid") naming the file and line, so an import of a
broken folder stops with one readable line and loads nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Set
from dataclasses import dataclass, field
from pathlib import Path

from goldenset.errors import EvalsiteError
from goldenset.text import find_nul


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
        if (nul := find_nul(raw)) is not None:
            raise EvalsiteError(
                "beir-invalid",
                f"{name} line {number}, column {nul[1]}: NUL characters are not allowed",
                details={"file": name, "line": number, "column": nul[1]},
            )
        try:
            row = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise EvalsiteError(
                "beir-invalid",
                f"{name} line {number}, column {exc.colno}: {exc.msg}",
                details={"file": name, "line": number, "column": exc.colno},
            ) from None
        if not isinstance(row, dict):
            raise _error(name, number, "expected a JSON object")
        yield number, row


def _id(row: dict, name: str, number: int) -> str:
    value = row.get("_id", row.get("id"))
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise _error(name, number, 'field "_id" must be a non-empty string')
    return value.strip()


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
    for number, row in _json_lines(lines, name):
        metadata = {k: v for k, v in row.items() if k not in _CORPUS_KEYS}
        yield CorpusRow(
            id=_id(row, name, number),
            title=_str(row, "title", name, number),
            text=_str(row, "text", name, number),
            metadata=metadata.pop("metadata", None) or metadata,
        )


def read_queries(lines: Iterable[str | bytes], name: str = "queries.jsonl") -> Iterator[QueryRow]:
    for number, row in _json_lines(lines, name):
        text = _str(row, "text", name, number)
        if not text.strip():
            raise _error(name, number, 'field "text" (the question) is empty')
        answerable = row.get("answerable", True)
        if not isinstance(answerable, bool):
            raise _error(name, number, 'field "answerable" must be true or false')
        metadata = {k: v for k, v in row.items() if k not in _QUERY_KEYS}
        yield QueryRow(
            id=_id(row, name, number),
            text=text,
            answerable=answerable,
            reference_answer=_str(row, "reference_answer", name, number),
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
