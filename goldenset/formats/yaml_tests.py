"""promptfoo test cases (a YAML list of tests, or a config with a `tests:` list).

A test's `vars.question` (or `vars.query`, `vars.input`) is the question; the reference answer is its
`factuality` assertion's value (the assertion promptfoo grades an output against a reference with), or a
`similar` one's; `description` is the key; `metadata` carries evalsite's expected documents, grades, tags and
answerable flag (`metadata.expected_document_ids`, ...). Other assertions and vars are left as they are on
import (they configure promptfoo, not the golden set).

Parsed with PyYAML's safe loader (no tags, no code), bounded before anything is built from the file: at most
MAX_YAML_BYTES, nested at most MAX_YAML_DEPTH deep, and aliases (`*name`) repeating at most
MAX_YAML_ALIAS_WEIGHT of what their anchors hold. Aliases are allowed, not refused: promptfoo configs use anchors
to share assertions and vars between tests. But an alias stands for its anchor's whole value, so ten aliases of
ten aliases of ... (a "billion laughs" of a few hundred bytes) would stand for gigabytes once walked, turned into
a string or stored: the composer adds up what each alias stands for, text included, and refuses the alias that
passes the budget, naming its line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import yaml

from evalsite.bounded_json import find_lone_surrogate, find_nul
from goldenset.formats import Entry, FormatError, Problems, Written, fail, file_grades, shown, string_list

QUESTION_VARS = ("question", "query", "input")
REFERENCE_ASSERTIONS = ("factuality", "similar")

MAX_YAML_BYTES = 2 * 1024 * 1024  # PyYAML's pure-Python loader reads about 0.2 MB a second here
MAX_YAML_DEPTH = 50  # lists and mappings inside one another (a test nests 4 deep, in a config 5)
# What aliases may stand for in all: each value counts 1, and a text also its length. A shared list of
# assertions aliased in each of thousands of tests stays well below.
MAX_YAML_ALIAS_WEIGHT = 1_000_000


class BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader whose composer refuses nesting deeper than MAX_YAML_DEPTH, an alias inside the
    value it names, and aliases standing for more than MAX_YAML_ALIAS_WEIGHT in all: each a FormatError
    naming the line. Nothing is constructed before the whole document is composed within those limits."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._open: set[str] = set()  # anchors whose value is being composed
        self._weights: dict[int, int] = {}  # id(node) -> its weight, the aliases in it expanded
        self._repeated = 0  # what the aliases met so far stand for

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        event = self.peek_event()
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
            if event.anchor in self._open:
                raise fail(f"line {line}", f"alias *{event.anchor} is inside the value it names.", line=line)
            # The anchor's node (an undefined one is a YAMLError); PyYAML composes a node for every event.
            node = cast(yaml.Node, super().compose_node(parent, index))
            self._repeated += self._weights[id(node)]
            if self._repeated > MAX_YAML_ALIAS_WEIGHT:
                raise fail(
                    f"line {line}",
                    f"aliases stand for more than {MAX_YAML_ALIAS_WEIGHT:,} values and characters in all, the "
                    f"limit (*{event.anchor} passes it).",
                    line=line,
                    limit=MAX_YAML_ALIAS_WEIGHT,
                )
            return node
        collection = isinstance(event, yaml.CollectionStartEvent)  # a list or a mapping
        self._depth += collection
        if self._depth > MAX_YAML_DEPTH:
            raise fail(
                f"line {line}",
                f"lists and mappings nested more than {MAX_YAML_DEPTH} deep, the limit.",
                line=line,
                limit=MAX_YAML_DEPTH,
            )
        anchor = event.anchor
        if anchor is not None:
            self._open.add(anchor)
        node = cast(yaml.Node, super().compose_node(parent, index))
        if anchor is not None:
            self._open.remove(anchor)
        self._depth -= collection
        if isinstance(node, yaml.ScalarNode):  # an escape ("\0", "\ud800") makes what no database stores
            for found, problem in (
                (find_nul(node.value, json_escapes=False), "NUL characters are not allowed."),
                (
                    find_lone_surrogate(node.value, json_escapes=False),
                    "lone surrogates are not valid Unicode.",
                ),
            ):
                if found is not None:
                    raise fail(f"line {line}", problem, line=line)
        self._weights[id(node)] = 1 + (
            len(node.value)
            if isinstance(node, yaml.ScalarNode)
            else sum(self._weights[id(child)] for child in _children(node))
        )
        return node


def _children(node: yaml.Node) -> list[yaml.Node]:
    """A sequence's items, or a mapping's keys and values."""
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return list(node.value)


def _load(text: str) -> tuple[yaml.Node | None, Any]:
    """The document's root node and its value, read within the limits (BoundedLoader), or FormatError."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) > MAX_YAML_BYTES:
        line = data.count(b"\n", 0, MAX_YAML_BYTES) + 1
        raise fail(
            f"line {line}",
            f"the file has {len(data):,} bytes; a promptfoo file may have at most {MAX_YAML_BYTES:,} "
            f"({MAX_YAML_BYTES // 1024 // 1024} MiB), the limit (passed on this line).",
            line=line,
            limit=MAX_YAML_BYTES,
        )
    try:
        loader = BoundedLoader(text)
    except yaml.reader.ReaderError as exc:  # PyYAML's reader refuses control characters before any parsing
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        character = exc.character if isinstance(exc.character, int) else ord(exc.character)
        raise fail(
            f"line {line}",
            f"not YAML (the character U+{character:04X} at column {column}: {exc.reason}).",
            line=line,
            column=column,
        ) from None
    try:
        root = loader.get_single_node()
        return root, (loader.construct_document(root) if root is not None else None)
    except yaml.YAMLError as exc:
        raise _not_yaml(exc, text) from None
    finally:
        loader.dispose()


def _not_yaml(exc: yaml.YAMLError, text: str) -> FormatError:
    """The parser's error on the line it names: where it found the problem, or, when that is the end of the
    file (a quote or a bracket never closed), where the unfinished part begins ("while scanning a quoted
    scalar" on line 2)."""
    mark = getattr(exc, "problem_mark", None)
    context = getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    line = mark.line + 1 if mark is not None else 1
    if context is not None and mark is not None and not text[mark.index :].strip():
        opened = context.line + 1
        return fail(
            f"line {opened}",
            f"not YAML ({getattr(exc, 'context', None) or 'what begins here'} on line {opened}: {problem}).",
            line=opened,
        )
    return fail(f"line {line}", f"not YAML ({problem}).", line=line)


def _no_file_reference(value: Any, where: str, name: str) -> None:
    """promptfoo's `file://` references (tests: file://tests.yaml, vars.question: file://q.txt) name files an
    upload does not carry: refused naming the reference, never stored as the text."""
    if isinstance(value, str) and value.strip().lower().startswith("file://"):
        raise fail(
            where,
            f"{name}: {shown(value.strip())} refers to another file, which an upload does not carry: put its "
            "content in this file (or upload that file itself when it holds the tests).",
        )


def read(text: str) -> list[Entry]:
    root, data = _load(text)
    if root is None:
        raise fail("line 1", "the file is empty.", line=1)
    node = root
    if isinstance(data, dict):
        tests = data.get("tests")
        found = next((value for key, value in root.value if key.value == "tests"), None)
        if found is not None and not isinstance(tests, list):
            _no_file_reference(tests, f"line {found.start_mark.line + 1}", "tests")
        if not isinstance(tests, list):
            raise fail(
                "line 1", "expected a list of tests, or a promptfoo config with a tests: list.", line=1
            )
        node, data = cast(yaml.Node, found), tests
    if not isinstance(data, list):
        raise fail("line 1", "expected a list of tests, or a promptfoo config with a tests: list.", line=1)
    entries = []
    problems = Problems()
    for index, (test, item) in enumerate(zip(data, node.value, strict=True)):
        where = f"tests[{index}] (line {item.start_mark.line + 1})"
        with problems.row():
            _no_file_reference(test, where, "the test")
            entries.append(_entry(test, where))
    problems.check()
    return entries


def _entry(test: Any, where: str) -> Entry:
    if not isinstance(test, dict):
        raise fail(where, "expected a test: an object with vars.")
    variables = test.get("vars")
    if not isinstance(variables, dict):
        raise fail(where, "vars: expected an object holding the question.")
    name, question = next(((k, variables[k]) for k in QUESTION_VARS if k in variables), ("", None))
    _no_file_reference(question, where, f"vars.{name}")
    if not isinstance(question, str) or not question.strip():
        raise fail(where, f"vars: expected a question in one of {', '.join(QUESTION_VARS)}.")
    reference = ""
    asserts = test.get("assert") or []
    if not isinstance(asserts, list):
        raise fail(where, "assert: expected a list of assertions.")
    for index, assertion in enumerate(asserts):
        if isinstance(assertion, dict) and assertion.get("type") in REFERENCE_ASSERTIONS:
            value = assertion.get("value")
            _no_file_reference(value, where, f"assert[{index}].value")
            if _collection(value):
                raise fail(where, f"assert[{index}].value: expected the reference answer, a text.")
            reference = str(value or "")
            break
    metadata = test.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise fail(where, "metadata: expected an object.")
    expected = string_list(metadata.get("expected_document_ids"), where, "metadata.expected_document_ids")
    grades = metadata.get("grades")
    if grades is not None:
        grades = file_grades(grades, where, "metadata.grades")
    answerable = metadata.get("answerable", True)
    if not isinstance(answerable, bool):
        raise fail(where, "metadata.answerable: expected true or false.")
    description = test.get("description")
    if _collection(description):
        raise fail(where, "description: expected a text (the entry's key).")
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


def _collection(value: Any) -> bool:
    """A list, a mapping or a set: where a text belongs, refused (its text would be Python's repr of it, as
    large as what its aliases stand for); a number or a date reads as its text."""
    return isinstance(value, list | dict | set)


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
