"""Run reports CI systems read: JUnit XML (a test suite per run, a test case per question, and the gate's
case) and a markdown summary a CI job can post as a comment or a job summary, and the per-slice table the CLI
prints. Plain Python (xml.etree): no Django import.

The JUnit rule, here and nowhere else (`question_case`, `gate_case`): only the gate fails. A configuration's
suite holds a case `gate: <what it checks>` (`gate: recall@10 >= 0.8`) when the run was gated; it fails with
the metric, its value and the bar, and passes otherwise. A question's case never fails: it passes when its
diagnosis is `pass` and is skipped otherwise (retrieval: partial, miss, error; answers: retrieval, generation,
error), the message its diagnosis and what that means, the text the question and what is missing, the way
pytest writes an expected failure. Every question's case carries its diagnosis as a property. So a JUnit
reporter is red exactly when the command exits 1, and the questions behind a low metric are listed as skipped.
A question's diagnosis is decided elsewhere (evaluation.reports.diagnosis, evaluation.answers.verdicts).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evaluation.answers.verdicts import PASS
from evaluation.reports.gate import Check, Gate
from evaluation.runs.slices import slice_metric_names
from goldenset.vocabulary.metric_names import ANSWER_SCORE

OUTCOMES = ("pass", "fail", "skipped")


@dataclass(frozen=True)
class Case:
    """A JUnit test case: its outcome (pass, fail, skipped), the message, the detail and the question's
    diagnosis (a property; none for the gate's case)."""

    name: str
    outcome: str
    message: str = ""
    detail: str = ""
    seconds: float | None = None
    diagnosis: str = ""


@dataclass(frozen=True)
class Suite:
    """One run: its label, its cases and a few properties (metrics, config) for the report's readers."""

    name: str
    cases: list[Case]
    properties: dict[str, str]
    seconds: float = 0.0


def question_case(
    name: str, diagnosis: str, meaning: str, detail: str = "", seconds: float | None = None
) -> Case:
    """A question as a test case: passed when its diagnosis is pass, else skipped (never failed: see above)."""
    if diagnosis == PASS:
        return Case(name, "pass", seconds=seconds, diagnosis=diagnosis)
    return Case(name, "skipped", f"{diagnosis}: {meaning}"[:500], detail, seconds, diagnosis)


def gate_case(gate: Gate, check: Check) -> Case | None:
    """A configuration's gate as a test case (None: the gate checks nothing, an answer run without a bar)."""
    if gate.name is None:
        return None
    message = gate.case_message(check)
    if gate.passes(check):
        return Case(f"gate: {gate.name}", "pass", detail=f"{check.label}: {message}")
    return Case(f"gate: {gate.name}", "fail", message, f"{check.label}: {message}")


def _count(cases: Sequence[Case], outcome: str) -> str:
    return str(sum(1 for c in cases if c.outcome == outcome))


def junit_xml(suites: Sequence[Suite]) -> str:
    """JUnit XML (the schema Jenkins, GitLab and GitHub test reporters read): <testsuites> of <testsuite>."""
    every = [c for s in suites for c in s.cases]
    root = ET.Element(
        "testsuites",
        name="evalsite",
        tests=str(len(every)),
        failures=_count(every, "fail"),
        errors="0",
        skipped=_count(every, "skipped"),
    )
    for suite in suites:
        node = ET.SubElement(
            root,
            "testsuite",
            name=suite.name,
            tests=str(len(suite.cases)),
            failures=_count(suite.cases, "fail"),
            errors="0",
            skipped=_count(suite.cases, "skipped"),
            time=f"{suite.seconds:.3f}",
        )
        properties = ET.SubElement(node, "properties")
        for key, value in suite.properties.items():
            ET.SubElement(properties, "property", name=key, value=value)
        for case in suite.cases:
            _testcase(node, suite.name, case)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _testcase(parent: ET.Element, classname: str, case: Case) -> None:
    if case.outcome not in OUTCOMES:
        raise ValueError(f"outcome: expected one of {', '.join(OUTCOMES)}, got {case.outcome!r}")
    element = ET.SubElement(parent, "testcase", classname=classname, name=case.name)
    if case.seconds is not None:
        element.set("time", f"{case.seconds:.3f}")
    if case.diagnosis:
        properties = ET.SubElement(element, "properties")
        ET.SubElement(properties, "property", name="diagnosis", value=case.diagnosis)
    if case.outcome == "fail":
        ET.SubElement(element, "failure", message=case.message).text = case.detail or case.message
    elif case.outcome == "skipped":
        ET.SubElement(element, "skipped", message=case.message).text = case.detail or case.message
    elif case.detail:
        ET.SubElement(element, "system-out").text = case.detail


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured markdown table; "|" in a cell is escaped."""

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in cells) + " |"

    return "\n".join([line(header), "|" + "---|" * len(header), *(line(r) for r in rows)])


def slice_table(
    runs: Sequence[tuple[str, Mapping[str, Mapping[str, Mapping]]]], places: int = 4
) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the runs' per-slice breakdowns (evaluation.runs.slices.breakdown): a row per run and slice,
    `tag:faq`, `origin:Manual`, `answerable:false`, with the slice's n and every metric ("-": no question of the
    slice had it). An answer run's score (0-100) has one decimal, the other metrics `places`."""
    names = list(dict.fromkeys(n for _, slices in runs for n in slice_metric_names(slices)))

    def cell(name: str, value) -> str:
        if value is None:
            return "-"
        return f"{value:.1f}" if name == ANSWER_SCORE else f"{value:.{places}f}"

    rows = [
        [label, f"{kind}:{name}", str(figures.get("n", 0)), *(cell(n, figures.get(n)) for n in names)]
        for label, slices in runs
        for kind, by_name in slices.items()
        for name, figures in by_name.items()
    ]
    return ["configuration", "slice", "n", *names], rows


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Lines of a plain-text table: the first two columns left-aligned, the figures right-aligned."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return [
        "  ".join(
            cell.ljust(width) if i < 2 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in [header, *rows]
    ]
