"""Stored runs as reports: JUnit XML (every run), Ragas evaluation rows (answer runs), the CLI's markdown summaries
(with the per-slice breakdown). The shapes are built by the pure evaluation.runs.report_formats; this module reads the runs."""

from __future__ import annotations

import json
from collections.abc import Sequence

from evaluation.answers.verdicts import DIAGNOSIS_MEANING, ERROR, PASS
from evaluation.models import EvaluationRun, QuestionResult, RunKind, RunStatus
from evaluation.retrieval.diagnosis import RETRIEVAL_DIAGNOSIS_MEANING, retrieval_diagnosis
from evaluation.runs.report_formats import Case, Suite, junit_xml, markdown_table, slice_table
from goldenset.models import GoldenEntry
from goldenset.vocabulary.metric_names import JUDGED_METRICS


def _case(run: EvaluationRun, result: QuestionResult) -> Case:
    name = result.entry_key or f"#{result.position + 1} {result.question[:80]}"
    seconds = None if result.latency_ms is None else result.latency_ms / 1000
    if run.kind == RunKind.ANSWERS:
        if result.passed is None:
            reason = (
                "; ".join([*result.reasons, *result.warnings])
                or result.error
                or "the answer could not be judged"
            )
            return Case(name, "error", f"{result.diagnosis}: {reason}"[:500], result.question, seconds)
        if result.passed:
            return Case(name, "pass", seconds=seconds)
        why = DIAGNOSIS_MEANING.get(result.diagnosis, result.diagnosis)
        detail = "\n".join([result.question, *result.reasons, *result.warnings])
        return Case(name, "fail", f"{result.diagnosis}: {why}", detail, seconds)
    diagnosis = retrieval_diagnosis(
        result.diagnosis, result.first_relevant_rank, result.missing_document_ids, result.error
    )
    if diagnosis == PASS:
        return Case(name, "pass", seconds=seconds)
    if diagnosis == ERROR:
        return Case(name, "error", f"error: {result.error}", result.question, seconds)
    detail = f"{result.question}\nmissing: {', '.join(result.missing_document_ids)}"
    return Case(name, "fail", f"{diagnosis}: {RETRIEVAL_DIAGNOSIS_MEANING[diagnosis]}", detail, seconds)


def run_suite(run: EvaluationRun) -> Suite:
    properties = {name: f"{value:.6f}" for name, value in (run.metrics or {}).items() if value is not None}
    properties.update(
        kind=run.kind, status=run.status, config=json.dumps(run.config, sort_keys=True), run_id=str(run.pk)
    )
    cases = [_case(run, r) for r in run.results.order_by("position")]
    return Suite(run.label, cases, properties, (run.duration_ms or 0) / 1000)


def runs_junit(runs: Sequence[EvaluationRun]) -> str:
    return junit_xml([run_suite(run) for run in runs])


def ragas_rows(run: EvaluationRun) -> str:
    """An answer run as Ragas evaluation rows (JSONL): user_input, response, retrieved_contexts (and their
    ids), reference (the golden entry's reference answer as it is now, when the entry still exists: a run
    stores the question, not the reference), reference_context_ids, and one column per judged metric (null:
    not scored)."""
    results = list(run.results.order_by("position"))
    references = dict(
        GoldenEntry.objects.filter(pk__in=[r.entry_id for r in results]).values_list("pk", "reference_answer")
    )
    rows = []
    for r in results:
        row = {
            "user_input": r.question,
            "response": r.answer,
            "retrieved_contexts": [p.get("text", "") for p in r.context],
            "retrieved_context_ids": [p.get("document_id", "") for p in r.context],
            "reference": references.get(r.entry_id, ""),
            "reference_context_ids": r.relevant_ids,
            **{name: r.metrics.get(name) for name in JUDGED_METRICS},
        }
        rows.append(json.dumps(row, ensure_ascii=False))
    return "\n".join(rows) + ("\n" if rows else "")


# --- markdown summaries (manage.py evaluate --format markdown) ---------------------------------------------------


def retrieval_markdown(runs: Sequence[EvaluationRun], metric: str, bar: float | None, failing) -> str:
    """The gate as a markdown summary: a row per configuration, the verdict in the heading, the warnings."""
    names = list(dict.fromkeys(name for run in runs for name in run.metrics))
    rows = [
        [
            run.label,
            *(f"{run.metrics[n]:.4f}" if n in run.metrics else "-" for n in names),
            str(run.question_count),
            run.status,
            ("FAIL" if run in failing else "PASS")
            if bar is not None or run.status == RunStatus.FAILED
            else "-",
        ]
        for run in runs
    ]
    verdict = "FAIL" if failing else "PASS" if bar is not None else "report only"
    heading = (
        f"### evalsite: {metric} >= {number(bar)}: {verdict}"
        if bar is not None
        else f"### evalsite: {metric}"
    )
    table = markdown_table(["configuration", *names, "questions", "status", "gate"], rows)
    warnings = [f"- {w}" for w in dict.fromkeys(w for run in runs for w in run.warnings)]
    return "\n".join(
        [heading, "", table, *slices_markdown([(r.label, r.slices) for r in runs], 4)]
        + (["", "Warnings:", *warnings] if warnings else [])
    )


def slices_markdown(runs, places: int) -> list[str]:
    """The per-slice breakdown as markdown lines (none when no run has a slice)."""
    header, rows = slice_table(runs, places)
    return ["", "Per slice:", "", markdown_table(header, rows)] if rows else []


def answer_cells(summary: dict) -> list[str]:
    """An answer run's label, score, judged metrics and refusal pair, as the text report and markdown show them."""

    def cell(value) -> str:
        return "-" if value is None else f"{value:.3f}"

    refusal = summary["refusal"] or {}
    return [
        summary["label"],
        "-" if summary["score"] is None else f"{summary['score']:.1f}",
        *(cell(summary["metrics"].get(n)) for n in JUDGED_METRICS),
        cell(refusal.get("refusal_recall")),
        cell(refusal.get("false_refusal_rate")),
    ]


def answer_markdown(summaries: list[dict], bar: float | None, failing: list[dict]) -> str:
    names = list(JUDGED_METRICS)
    rows = [
        [
            *answer_cells(s),
            f"{s['passed']} / {s['failed']}",
            ("FAIL" if s in failing else "PASS") if bar is not None else "-",
        ]
        for s in summaries
    ]
    verdict = "FAIL" if failing else "PASS"
    heading = (
        f"### evalsite: score >= {number(bar)}: {verdict}" if bar is not None else "### evalsite: answers"
    )
    header = ["configuration", "score", *names, "refusal recall", "false refusal", "passed / failed", "gate"]
    warnings = [f"- {w}" for w in dict.fromkeys(w for s in summaries for w in s["warnings"])]
    return "\n".join(
        [
            heading,
            "",
            markdown_table(header, rows),
            *slices_markdown([(s["label"], s["slices"]) for s in summaries], 3),
        ]
        + (["", "Warnings:", *warnings] if warnings else [])
    )


def number(value: float) -> str:
    """A bar as typed: 0.7, not 0.700000 or 0.69999999999999996."""
    short = f"{value:g}"
    return short if float(short) == value else repr(value)
