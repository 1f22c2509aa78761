"""Stored runs as reports: JUnit XML (every run), Ragas evaluation rows (answer runs). The shapes are built by
the pure evaluation.reports; this module reads the runs."""

from __future__ import annotations

import json
from collections.abc import Sequence

from evaluation.judge import METRICS as ANSWER_METRICS
from evaluation.models import EvaluationRun, QuestionResult, RunKind
from evaluation.reports import DIAGNOSES, Case, Suite, junit_xml, retrieval_diagnosis
from goldenset.models import GoldenEntry


def _case(run: EvaluationRun, result: QuestionResult) -> Case:
    name = result.entry_key or f"#{result.position + 1} {result.question[:80]}"
    seconds = None if result.latency_ms is None else result.latency_ms / 1000
    if run.kind == RunKind.ANSWERS:
        if result.passed is None:
            reason = "; ".join(result.warnings) or result.error or "the answer could not be judged"
            return Case(name, "error", f"{result.diagnosis}: {reason}"[:500], result.question, seconds)
        if result.passed:
            return Case(name, "pass", seconds=seconds)
        why = DIAGNOSES.get(result.diagnosis, result.diagnosis)
        detail = "\n".join([result.question, *result.warnings])
        return Case(name, "fail", f"{result.diagnosis}: {why}", detail, seconds)
    diagnosis = retrieval_diagnosis(
        result.diagnosis, result.first_relevant_rank, result.missing_document_ids, result.error
    )
    if diagnosis == "pass":
        return Case(name, "pass", seconds=seconds)
    if diagnosis == "error":
        return Case(name, "error", f"error: {result.error}", result.question, seconds)
    detail = f"{result.question}\nmissing: {', '.join(result.missing_document_ids)}"
    return Case(name, "fail", f"{diagnosis}: {DIAGNOSES[diagnosis]}", detail, seconds)


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
            "reference_context_ids": sorted(r.expected),
            **{name: r.metrics.get(name) for name in ANSWER_METRICS},
        }
        rows.append(json.dumps(row, ensure_ascii=False))
    return "\n".join(rows) + ("\n" if rows else "")
