"""Golden sets as JSON rows: okfsmith's golden.json, Ragas dataset rows, DeepEval goldens, Phoenix dataset
examples. A file is a JSON array of objects, or JSONL (one object a line); errors name the line (JSONL) or the
record (an array, from 0). Fields of a row that belong to a run (a response, retrieved contexts) are ignored;
any other field the reader does not know (what a newer release adds: DeepEval's `token_cost`, Phoenix's
`node_id`) is left out and named in the import's warnings (Entry.ignored). A missing or ill-typed field the
reader needs is an error naming it.

- Ragas (SingleTurnSample): `user_input` -> question, `reference` -> reference answer, `reference_context_ids`
  -> expected documents, `reference_contexts` -> reference passages by text. Ragas has no key, tags, grades
  or answerable flag: evalsite writes them in an `evalsite` object of the row (Ragas ignores fields it does not
  know) and reads them back from it.
- DeepEval (Golden): `input` -> question, `expected_output` -> reference answer, `context` -> reference
  passages by text; key, expected documents, grades, tags and answerable go in `additional_metadata`.
- Phoenix (dataset examples): `input.question`, `output.answer` and `output.expected_document_ids`,
  `metadata` {key, tags, answerable, grades}.
- okfsmith: goldenset.golden_files (no grades, no reference passages: named in the export's warnings).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from evalsite.bounded_json import JsonValueError, json_value
from goldenset.formats import (
    Entry,
    FormatError,
    Problems,
    Written,
    fail,
    file_grades,
    string_list,
    tool_cells,
)
from goldenset.golden_files import GoldenRecord, dump_golden, parse_golden

RAGAS_RUN_FIELDS = {"retrieved_contexts", "retrieved_context_ids", "response", "multi_responses", "rubrics",
                    "persona_name", "query_style", "query_length"}  # fmt: skip
DEEPEVAL_RUN_FIELDS = {"actual_output", "retrieval_context", "tools_called", "expected_tools", "comments",
                       "source_file", "name", "custom_column_key_values"}  # fmt: skip
# What Ragas 0.1's TestsetGenerator writes about a generated question besides it (how it was evolved, the source
# documents' metadata): read and ignored.
RAGAS01_TESTSET_FIELDS = {"evolution_type", "metadata", "episode_done"}
# What the tools write about a record that is not the golden set's: read and ignored, never a warning.
PHOENIX_EXAMPLE_FIELDS = {"node_id", "updated_at", "source", "splits", "example_id"}
DEEPEVAL_RUN_FIELDS |= {"token_cost", "input_token_count", "output_token_count", "expectations"}
EXTRA_FIELDS = ("key", "expected_document_ids", "grades", "tags", "answerable")


def json_records(text: str, *, first: int = 0) -> list[tuple[str, Any]]:
    """(where, value) of each row of a JSON array ("record N", counted from `first`) or a JSONL file ("line N");
    a line that is not JSON has its FormatError as its value, so every bad line is reported."""
    if not text.strip():
        raise fail("line 1", "the file is empty.", line=1)
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            values = json_value(text)
        except JsonValueError as exc:
            raise fail(
                f"line {exc.line}", f"not JSON ({exc.message} at column {exc.column}).", line=exc.line
            ) from None
        return [(f"record {i}", value) for i, value in enumerate(values, start=first)]
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((f"line {number}", json_value(line)))
        except JsonValueError as exc:  # kept as the row's problem: every bad line is reported
            problem = fail(f"line {number}", f"not JSON ({exc.message} at column {exc.column}).", line=number)
            rows.append((f"line {number}", problem))
    return rows


def tool_records(text: str) -> list[tuple[str, Any]]:
    """A tool's file as (where, row): a JSON array or JSONL (json_records), Phoenix's REST answer of examples or
    DeepEval's test run (tool_cells.wrapped_records), or the tool's CSV (tool_cells.csv_records) when the text
    opens with neither "[" nor "{"."""
    wrapped = tool_cells.wrapped_records(text)
    if wrapped is not None:
        return wrapped
    if text.strip() and not text.lstrip().startswith(("[", "{")):
        return tool_cells.csv_records(text)
    return json_records(text)


def _object(value: Any, where: str) -> dict[str, Any]:
    if isinstance(value, FormatError):  # a JSONL line that is not JSON
        raise value
    if not isinstance(value, dict):
        raise fail(where, "expected an object.")
    return value


def _str(value: Any, where: str, name: str, *, required: bool = False) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise fail(where, f"{name}: expected {'a non-empty' if required else 'a'} string.")
    return value


def _texts(value: Any, where: str, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise fail(where, f"{name}: expected a list of texts.")
    return tuple(value)


def _extras(value: Any, where: str, name: str) -> dict[str, Any]:
    """evalsite's fields carried in a format's free-form object (key, expected ids, grades, tags, answerable)."""
    if value is None:
        return {}
    extras = _object(value, f"{where}: {name}")
    out: dict[str, Any] = {}
    if "key" in extras:
        out["key"] = (
            str(extras["key"])
            if isinstance(extras["key"], str | int)
            else _str(extras["key"], where, f"{name}.key")
        )
    if "expected_document_ids" in extras:
        out["expected_document_ids"] = string_list(
            extras["expected_document_ids"], where, f"{name}.expected_document_ids"
        )
    if "tags" in extras:
        out["tags"] = string_list(extras["tags"], where, f"{name}.tags")
    if "answerable" in extras:
        if not isinstance(extras["answerable"], bool):
            raise fail(where, f"{name}.answerable: expected true or false.")
        out["answerable"] = extras["answerable"]
    if "grades" in extras:
        out["grades"] = file_grades(extras["grades"], where, f"{name}.grades")
    return out


def _unknown(row: Mapping[str, Any], known: set[str]) -> tuple[str, ...]:
    """The row's fields this reader does not know (a newer release's `token_cost`, Phoenix's `node_id`): left
    out and named in the import's warnings (Entry.ignored), never a refusal."""
    return tuple(str(name) for name in row if name not in known)


# --- Ragas -----------------------------------------------------------------------------------------------------


def read_ragas(text: str) -> list[Entry]:
    entries = []
    problems = Problems()
    for where, value in tool_records(text):
        with problems.row():
            row = _ragas_row(_object(value, where))
            ignored = _unknown(row, {"user_input", "reference", "reference_contexts", "reference_context_ids",
                                     "evalsite", *RAGAS_RUN_FIELDS, *RAGAS01_TESTSET_FIELDS})  # fmt: skip
            extras = _extras(row.get("evalsite"), where, "evalsite")
            extras.pop("expected_document_ids", None)
            expected = string_list(row.get("reference_context_ids"), where, "reference_context_ids")
            carried = {*extras, *(["reference_answer"] if "reference" in row else [])}
            if "reference_context_ids" in row or "reference_contexts" in row:
                carried.add("expected_document_ids")
            entries.append(
                Entry(
                    question=_str(row.get("user_input"), where, "user_input", required=True),
                    reference_answer=_str(row.get("reference"), where, "reference"),
                    expected_document_ids=expected,
                    contexts=_texts(row.get("reference_contexts"), where, "reference_contexts"),
                    where=where,
                    carried=frozenset(carried),
                    ignored=ignored,
                    **extras,
                )
            )
    problems.check()
    return entries


def _ragas_row(row: dict[str, Any]) -> dict[str, Any]:
    """A Ragas row in today's names, its lists read from the texts a CSV holds. Ragas 0.1's columns are renamed:
    `question` -> user_input, `ground_truth` -> reference, and `contexts` by what the row is. In a testset row
    (what 0.1's TestsetGenerator writes: no `answer`) they are the passages the question was written from, the
    gold passages: reference_contexts, matched to pages. Beside an `answer` (an evaluation row) they are what the
    system retrieved to answer with: a run's, ignored as retrieved_contexts are."""
    if "user_input" not in row and "question" in row:
        contexts = "retrieved_contexts" if "answer" in row else "reference_contexts"
        renamed = {"question": "user_input", "ground_truth": "reference", "contexts": contexts,
                   "answer": "response"}  # fmt: skip
        row = {renamed.get(name, name): value for name, value in row.items()}
    for name in (
        "reference_contexts",
        "reference_context_ids",
        "retrieved_contexts",
        "retrieved_context_ids",
    ):
        if name in row:
            row[name] = tool_cells.text_list(row[name])
    if "evalsite" in row:
        row["evalsite"] = _extras_cells(tool_cells.text_object(row["evalsite"]))
    return row


def _extras_cells(value: Any) -> Any:
    """evalsite's fields in a tool's free-form object as a CSV (or a DataFrame upload) wrote them: lists and
    objects as their texts, true / false as words."""
    if not isinstance(value, dict):
        return value
    out = dict(value)
    for name in ("expected_document_ids", "tags"):
        if name in out:
            out[name] = tool_cells.text_list(out[name])
    if "grades" in out:
        out["grades"] = tool_cells.text_object(out["grades"])
    if "answerable" in out:
        out["answerable"] = tool_cells.boolean(out["answerable"])
    return out


def write_ragas(entries: Sequence[Entry], name: str) -> Written:
    rows = []
    for e in entries:
        row: dict[str, Any] = {"user_input": e.question, "reference": e.reference_answer}
        if e.expected_document_ids:
            row["reference_context_ids"] = list(e.expected_document_ids)
        if e.contexts:
            row["reference_contexts"] = list(e.contexts)
        row["evalsite"] = _extra_object(e, with_expected=False)
        rows.append(row)
    return Written({f"{name}.ragas.jsonl": _jsonl(rows)}, [])


# --- DeepEval -------------------------------------------------------------------------------------------------


def read_deepeval(text: str) -> list[Entry]:
    entries = []
    problems = Problems()
    for where, value in tool_records(text):
        with problems.row():
            row = _object(value, where)
            ignored = _unknown(
                row, {"input", "expected_output", "context", "additional_metadata", *DEEPEVAL_RUN_FIELDS}
            )
            metadata = _extras_cells(tool_cells.text_object(row.get("additional_metadata")))
            extras = _extras(metadata, where, "additional_metadata")
            # its CSV and JSONL join the passages with "|" (DeepEval's own delimiter when it reads them back)
            row["context"] = tool_cells.text_list(row.get("context"), joined="|")
            carried = {*extras, *(["reference_answer"] if "expected_output" in row else [])}
            if row["context"] is not None:
                carried.add("expected_document_ids")
            entries.append(
                Entry(
                    question=_str(row.get("input"), where, "input", required=True),
                    reference_answer=_str(row.get("expected_output"), where, "expected_output"),
                    contexts=_texts(row.get("context"), where, "context"),
                    where=where,
                    carried=frozenset(carried),
                    ignored=ignored,
                    **extras,
                )
            )
    problems.check()
    return entries


def write_deepeval(entries: Sequence[Entry], name: str) -> Written:
    rows = []
    for e in entries:
        row: dict[str, Any] = {"input": e.question, "expected_output": e.reference_answer}
        if e.contexts:
            row["context"] = list(e.contexts)
        row["additional_metadata"] = _extra_object(e, with_expected=True)
        rows.append(row)
    return Written({f"{name}.deepeval.json": json.dumps(rows, indent=2, ensure_ascii=False) + "\n"}, [])


# --- Phoenix --------------------------------------------------------------------------------------------------


def read_phoenix(text: str) -> list[Entry]:
    entries = []
    problems = Problems()
    for where, value in tool_records(text):
        with problems.row():
            row = _object(value, where)
            ignored = _unknown(row, {"id", "input", "output", "metadata", *PHOENIX_EXAMPLE_FIELDS})
            given = _object(row.get("input"), f"{where}: input")
            question = next((given[k] for k in ("question", "query", "input") if k in given), None)
            output = _object(row.get("output") or {}, f"{where}: output")
            answer = next((output[k] for k in ("answer", "reference_answer", "output") if k in output), None)
            extras = _extras(_extras_cells(tool_cells.text_object(row.get("metadata"))), where, "metadata")
            if "expected_document_ids" in output:
                extras["expected_document_ids"] = string_list(
                    tool_cells.text_list(output["expected_document_ids"]),
                    where,
                    "output.expected_document_ids",
                )
            contexts = _texts(tool_cells.text_list(output.get("contexts")), where, "output.contexts")
            carried = {*extras, *(["reference_answer"] if answer is not None else [])}
            if contexts:
                carried.add("expected_document_ids")
            entries.append(
                Entry(
                    question=_str(question, where, "input.question", required=True),
                    reference_answer=_str(answer, where, "output.answer"),
                    contexts=contexts,
                    where=where,
                    carried=frozenset(carried),
                    ignored=ignored,
                    **extras,
                )
            )
    problems.check()
    return entries


def write_phoenix(entries: Sequence[Entry], name: str) -> Written:
    rows = []
    for e in entries:
        metadata = _extra_object(e, with_expected=False)
        output: dict[str, Any] = {
            "answer": e.reference_answer,
            "expected_document_ids": list(e.expected_document_ids),
        }
        if e.contexts:
            output["contexts"] = list(e.contexts)
        rows.append({"input": {"question": e.question}, "output": output, "metadata": metadata})
    return Written({f"{name}.phoenix.jsonl": _jsonl(rows)}, [])


# --- okfsmith -------------------------------------------------------------------------------------------------


def read_okfsmith(text: str | bytes) -> list[Entry]:
    return [
        Entry(
            question=r.question,
            key=r.id or "",
            expected_document_ids=r.must_cite,
            reference_answer=r.expected_answer,
            tags=r.tags,
            answerable=r.answerable,
            where=f'record {i} (id "{r.id}")' if r.id else f"record {i}",
        )
        for i, r in enumerate(parse_golden(text))
    ]


def write_okfsmith(entries: Sequence[Entry], name: str) -> Written:
    text = dump_golden(
        GoldenRecord(
            id=e.key or None,
            question=e.question,
            expected_answer=e.reference_answer,
            must_cite=e.expected_document_ids,
            tags=e.tags,
            answerable=e.answerable,
        )
        for e in entries
    )
    warnings = []
    graded = sum(1 for e in entries if e.grades and any(g != 1 for g in e.grades.values()))
    if graded:
        warnings.append(f"{graded} entries' grades have no field in okfsmith's golden.json: left out.")
    return Written({f"{name}.json": text}, warnings + _context_warning(entries, "okfsmith"))


# --- shared ---------------------------------------------------------------------------------------------------


def _extra_object(e: Entry, *, with_expected: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"key": e.key} if e.key else {}
    if with_expected:
        out["expected_document_ids"] = list(e.expected_document_ids)
    if e.grades:
        out["grades"] = dict(e.grades)
    out["tags"] = list(e.tags)
    out["answerable"] = e.answerable
    return out


def _context_warning(entries: Sequence[Entry], fmt: str) -> list[str]:
    count = sum(1 for e in entries if e.contexts)
    return [f"{count} entries' reference passages (texts) have no field in {fmt}: left out."] if count else []


def _jsonl(rows: Sequence[Any]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
