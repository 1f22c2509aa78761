"""promptfoo test cases (a YAML list of tests, or a config with a `tests:` list).

A test's `vars.question` (or `vars.query`, `vars.input`) is the question; the reference answer is its
`factuality` assertion's value (the assertion promptfoo grades an output against a reference with), or a
`similar` one's; `description` is the key; `metadata` carries evalsite's expected documents, grades, tags and
answerable flag (`metadata.expected_document_ids`, ...). Other assertions and vars are left as they are on
import (they configure promptfoo, not the golden set). Parsed with PyYAML's safe loader: no tags, no code.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

from goldenset.formats import Entry, Problems, Written, fail, string_list

QUESTION_VARS = ("question", "query", "input")
REFERENCE_ASSERTIONS = ("factuality", "similar")


def read(text: str) -> list[Entry]:
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = getattr(exc, "problem", None) or str(exc)
        raise fail(f"line {line}", f"not YAML ({problem}).", line=line) from None
    if root is None:
        raise fail("line 1", "the file is empty.", line=1)
    node = root
    if isinstance(data, dict):
        if not isinstance(data.get("tests"), list):
            raise fail(
                "line 1", "expected a list of tests, or a promptfoo config with a tests: list.", line=1
            )
        node = next(value for key, value in root.value if key.value == "tests")
        data = data["tests"]
    if not isinstance(data, list):
        raise fail("line 1", "expected a list of tests, or a promptfoo config with a tests: list.", line=1)
    entries = []
    problems = Problems()
    for index, (test, item) in enumerate(zip(data, node.value, strict=True)):
        where = f"tests[{index}] (line {item.start_mark.line + 1})"
        with problems.row():
            entries.append(_entry(test, where))
    problems.check()
    return entries


def _entry(test: Any, where: str) -> Entry:
    if not isinstance(test, dict):
        raise fail(where, "expected a test: an object with vars.")
    variables = test.get("vars")
    if not isinstance(variables, dict):
        raise fail(where, "vars: expected an object holding the question.")
    question = next((variables[k] for k in QUESTION_VARS if k in variables), None)
    if not isinstance(question, str) or not question.strip():
        raise fail(where, f"vars: expected a question in one of {', '.join(QUESTION_VARS)}.")
    reference = ""
    asserts = test.get("assert") or []
    if not isinstance(asserts, list):
        raise fail(where, "assert: expected a list of assertions.")
    for assertion in asserts:
        if isinstance(assertion, dict) and assertion.get("type") in REFERENCE_ASSERTIONS:
            reference = str(assertion.get("value") or "")
            break
    metadata = test.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise fail(where, "metadata: expected an object.")
    expected = string_list(metadata.get("expected_document_ids"), where, "metadata.expected_document_ids")
    grades = metadata.get("grades")
    if grades is not None and not isinstance(grades, dict):
        raise fail(where, "metadata.grades: expected an object of document id -> grade.")
    answerable = metadata.get("answerable", True)
    if not isinstance(answerable, bool):
        raise fail(where, "metadata.answerable: expected true or false.")
    description = test.get("description")
    carried = {name for name in ("expected_document_ids", "grades", "tags", "answerable") if name in metadata}
    carried |= {"key"} if description is not None else set()
    carried |= {"reference_answer"} if reference else set()
    return Entry(
        question=question,
        key=str(description) if description is not None else "",
        expected_document_ids=expected,
        grades=grades if grades is not None else None,
        reference_answer=reference,
        tags=string_list(metadata.get("tags"), where, "metadata.tags"),
        answerable=answerable,
        where=where,
        carried=frozenset(carried),
    )


def write(entries: Sequence[Entry], name: str) -> Written:
    tests = []
    for e in entries:
        test: dict[str, Any] = {}
        if e.key:
            test["description"] = e.key
        test["vars"] = {"question": e.question}
        if e.reference_answer:
            test["assert"] = [{"type": "factuality", "value": e.reference_answer}]
        metadata: dict[str, Any] = {"expected_document_ids": list(e.expected_document_ids)}
        if e.grades:
            metadata["grades"] = dict(e.grades)
        metadata["tags"] = list(e.tags)
        metadata["answerable"] = e.answerable
        test["metadata"] = metadata
        tests.append(test)
    text = yaml.safe_dump(tests, sort_keys=False, allow_unicode=True, width=120)
    count = sum(1 for e in entries if e.contexts)
    warnings = (
        [f"{count} entries' reference passages (texts) have no field in promptfoo tests: left out."]
        if count
        else []
    )
    return Written({f"{name}.promptfoo.yaml": text}, warnings)
