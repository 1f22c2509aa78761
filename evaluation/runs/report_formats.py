"""Run reports CI systems read: JUnit XML (a test suite per run, a test case per question) and a markdown
summary a CI job can post as a comment or a job summary, and the per-slice table the CLI prints. Plain Python
(xml.etree): no Django import.

A question's case passes, fails or is an error by its diagnosis, which is decided elsewhere
(evaluation.retrieval.diagnosis for retrieval questions, evaluation.answers.verdicts for answer questions) and
given here with its meaning.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evaluation.runs.slices import slice_metric_names
from goldenset.vocabulary.metric_names import ANSWER_SCORE


@dataclass(frozen=True)
class Case:
    """One question of a run as a test case: its outcome (pass, fail, error), the message and the detail."""

    name: str
    outcome: str
    message: str = ""
    detail: str = ""
    seconds: float | None = None


@dataclass(frozen=True)
class Suite:
    """One run: its label, its cases and a few properties (metrics, config) for the report's readers."""

    name: str
    cases: list[Case]
    properties: dict[str, str]
    seconds: float = 0.0


def junit_xml(suites: Sequence[Suite]) -> str:
    """JUnit XML (the schema Jenkins, GitLab and GitHub test reporters read): <testsuites> of <testsuite>."""
    root = ET.Element(
        "testsuites",
        name="evalsite",
        tests=str(sum(len(s.cases) for s in suites)),
        failures=str(sum(1 for s in suites for c in s.cases if c.outcome == "fail")),
        errors=str(sum(1 for s in suites for c in s.cases if c.outcome == "error")),
    )
    for suite in suites:
        node = ET.SubElement(
            root,
            "testsuite",
            name=suite.name,
            tests=str(len(suite.cases)),
            failures=str(sum(1 for c in suite.cases if c.outcome == "fail")),
            errors=str(sum(1 for c in suite.cases if c.outcome == "error")),
            time=f"{suite.seconds:.3f}",
        )
        properties = ET.SubElement(node, "properties")
        for key, value in suite.properties.items():
            ET.SubElement(properties, "property", name=key, value=value)
        for case in suite.cases:
            element = ET.SubElement(node, "testcase", classname=suite.name, name=case.name)
            if case.seconds is not None:
                element.set("time", f"{case.seconds:.3f}")
            if case.outcome in ("fail", "error"):
                child = ET.SubElement(
                    element, "failure" if case.outcome == "fail" else "error", message=case.message
                )
                child.text = case.detail or case.message
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


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
