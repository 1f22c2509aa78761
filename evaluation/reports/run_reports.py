"""Stored runs as reports: JUnit XML (every run; with the CI gate's cases when gated), Ragas evaluation rows
(answer runs), the CLI's markdown summaries (with the per-slice breakdown). The shapes are built by the pure
evaluation.reports.report_formats; this module reads the runs."""

from __future__ import annotations

import json
from collections.abc import Sequence

from evaluation.answers.verdicts import DIAGNOSIS_MEANING, ERROR, PASS
from evaluation.models import EvaluationRun, QuestionResult, RunKind, RunStatus
from evaluation.reports.diagnosis import RETRIEVAL_DIAGNOSIS_MEANING, retrieval_diagnosis
from evaluation.reports.gate import Check, Gate
from evaluation.reports.report_formats import (
    Case,
    Suite,
    gate_case,
    junit_xml,
    markdown_table,
    question_case,
    slice_table,
)
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
            return question_case(name, result.diagnosis or ERROR, reason, result.question, seconds)
        if result.passed:
            return question_case(name, PASS, "", seconds=seconds)
        why = DIAGNOSIS_MEANING.get(result.diagnosis, result.diagnosis)
        detail = "\n".join([result.question, *result.reasons, *result.warnings])
        return question_case(name, result.diagnosis, why, detail, seconds)
    diagnosis = retrieval_diagnosis(
        result.diagnosis, result.first_relevant_rank, result.missing_document_ids, result.error
    )
    if diagnosis == ERROR:
        return question_case(name, ERROR, result.error, result.question, seconds)
    detail = f"{result.question}\nmissing: {', '.join(result.missing_document_ids)}"
    return question_case(name, diagnosis, RETRIEVAL_DIAGNOSIS_MEANING[diagnosis], detail, seconds)


def run_suite(run: EvaluationRun, gate: Gate | None = None, check: Check | None = None) -> Suite:
    """The run as a test suite: its gate case first (when gated), then a case per question."""
    properties = {name: f"{value:.6f}" for name, value in (run.metrics or {}).items() if value is not None}
    properties.update(
        kind=run.kind, status=run.status, config=json.dumps(run.config, sort_keys=True), run_id=str(run.pk)
    )
    gated = gate_case(gate, check) if gate is not None and check is not None else None
    cases = [_case(run, r) for r in run.results.order_by("position")]
    return Suite(run.label, [gated, *cases] if gated else cases, properties, (run.duration_ms or 0) / 1000)


def runs_junit(runs: Sequence[EvaluationRun], gate: Gate | None = None) -> str:
    """The runs as JUnit XML; with the gate they ran through (its checks in the runs' order), its cases too."""
    checks: Sequence[Check | None] = gate.checks if gate is not None else [None] * len(runs)
    return junit_xml([run_suite(run, gate, check) for run, check in zip(runs, checks, strict=True)])


def retrieval_gate(runs: Sequence[EvaluationRun], metric: str, bar: float | None) -> Gate:
    """The retrieval gate of a batch: every run complete and, with a bar, its metric at or above it."""
    checks = [
        Check(run.label, (run.metrics or {}).get(metric), run.status == RunStatus.FAILED) for run in runs
    ]
    return Gate(metric, bar, checks)


def answer_gate(summaries: Sequence[dict], bar: float | None) -> Gate:
    """The answer gate of a batch (run summaries): with a bar, every run's score (0-100) at or above it."""
    checks = [Check(s["label"], s["score"]) for s in summaries]
    return Gate("score", bar, checks, places=1, requires_complete=False)


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


def retrieval_markdown(runs: Sequence[EvaluationRun], gate: Gate) -> str:
    """The gate as a markdown summary: a row per configuration, the verdict in the heading, the warnings."""
    names = list(dict.fromkeys(name for run in runs for name in run.metrics))
    rows = [
        [
            run.label,
            *(f"{run.metrics[n]:.4f}" if n in run.metrics else "-" for n in names),
            str(run.question_count),
            run.status,
            _gate_cell(gate, check),
        ]
        for run, check in zip(runs, gate.checks, strict=True)
    ]
    table = markdown_table(["configuration", *names, "questions", "status", "gate"], rows)
    warnings = [f"- {w}" for w in dict.fromkeys(w for run in runs for w in run.warnings)]
    return "\n".join(
        [_heading(gate, gate.metric), "", table, *slices_markdown([(r.label, r.slices) for r in runs], 4)]
        + (["", "Warnings:", *warnings] if warnings else [])
    )


def _heading(gate: Gate, report_only: str) -> str:
    """`### evalsite: ndcg@10 >= 0.7: PASS`; `### evalsite: <report_only>` when nothing was gated and failed."""
    if gate.bar is None and gate.passed:
        return f"### evalsite: {report_only}"
    return f"### evalsite: {gate.name}: {'PASS' if gate.passed else 'FAIL'}"


def _gate_cell(gate: Gate, check: Check) -> str:
    if gate.bar is None and gate.passes(check):
        return "-"
    return "PASS" if gate.passes(check) else "FAIL"


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


def answer_markdown(summaries: list[dict], gate: Gate) -> str:
    names = list(JUDGED_METRICS)
    rows = [
        [*answer_cells(s), f"{s['passed']} / {s['failed']}", _gate_cell(gate, check)]
        for s, check in zip(summaries, gate.checks, strict=True)
    ]
    heading = _heading(gate, "answers")
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
