"""promptfoo files as their users write them (issue 28, items 10 and 15): a YAML error names the line the parser
names (where an unclosed quote or bracket begins, not the end of the file), and `file://` references, which an
upload does not carry, are refused naming the reference, never stored as the question's text."""

from __future__ import annotations

import pytest

from goldenset.formats import FormatError, read_entries


def refused(text: str) -> str:
    with pytest.raises(FormatError) as caught:
        read_entries("promptfoo", text)
    return caught.value.message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '- vars:\n    question: "What is the refund window?\n  assert: []\n\n\n',
            "line 2: not YAML (while scanning a quoted scalar on line 2: found unexpected end of stream).",
        ),
        ("- vars: {question: ok}\n- vars: {question: [a, b}\n", "line 2: not YAML"),
        ("- vars:\n  question: x\n - bad: indent\n", "line 3: not YAML (expected <block end>"),
    ],
)
def test_a_yaml_error_names_the_line_the_parser_names(text, message):
    assert refused(text).startswith(message)


REFERENCE = "refers to another file, which an upload does not carry"


def test_file_references_are_refused_naming_the_reference():
    config = "prompts: ['Answer: {{question}}']\nproviders: [echo]\ntests: file://tests.yaml\n"
    assert refused(config) == f"line 3: tests: 'file://tests.yaml' {REFERENCE}: put its content in this file " \
        "(or upload that file itself when it holds the tests)."  # fmt: skip
    listed = "tests:\n  - vars: {question: Fine}\n  - file://more.yaml\n"
    assert refused(listed).startswith(f"tests[1] (line 3): the test: 'file://more.yaml' {REFERENCE}")
    question = "- vars:\n    question: file://q.txt\n"
    assert refused(question).startswith(f"tests[0] (line 1): vars.question: 'file://q.txt' {REFERENCE}")
    reference = "- vars: {query: Fine}\n  assert:\n    - type: factuality\n      value: file://answer.txt\n"
    assert refused(reference).startswith(
        f"tests[0] (line 1): assert[0].value: 'file://answer.txt' {REFERENCE}"
    )


def test_a_question_that_merely_mentions_a_file_url_is_read():
    (entry,) = read_entries("promptfoo", "- vars:\n    question: What does file://q.txt hold?\n")
    assert entry.question == "What does file://q.txt hold?"
