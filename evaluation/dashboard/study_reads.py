"""A study's pages: its state said in words, its trials as table rows, its figures (study_charts) and its result;
the studies list's rows. Everything is read from the study as evaluation.studies.services stores it, as the API
gives it (study_detail), so the page, its poll and GET studies/{id} agree."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evalsite.jobs.models import Job, JobStatus
from evaluation.dashboard import study_charts
from evaluation.dashboard.chart_html import page_figure
from evaluation.dashboard.launch_reads import job_error_message
from evaluation.models import ConfigPreset, EvaluationRun, Study
from evaluation.studies import reads
from evaluation.studies.importance import Importance
from evaluation.studies.reads import dimensions_of
from evaluation.studies.services import study_detail
from evaluation.studies.space import Dimension, grid

FIGURES = ("history", "parallel", "heatmap", "importance")


def status_of(study: Study) -> str:
    job = study.job
    if job is not None:
        return str(job.status)
    return "Completed" if study.finished_at else "Running"


def finished(study: Study) -> bool:
    return status_of(study) in Job.FINISHED


def trials_asked(study: Study) -> int:
    """The most trials the study can run: its budget's, or a grid's points when fewer."""
    asked = int((study.request.get("budget") or {}).get("trials") or 0)
    if study.request.get("sampler") == "grid":  # its request was refused unless the grid could be made
        asked = min(asked, len(grid(dimensions_of(study))))
    return asked


def count_text(study: Study) -> str:
    """The line under the study's bar: where it is, said from its trials and its job."""
    status = status_of(study)
    trials = study.trials
    budget = study.request.get("budget") or {}
    asked = trials_asked(study)
    seconds = f" or {budget['seconds']:g} s" if budget.get("seconds") else ""
    if status == JobStatus.QUEUED:
        return "Waiting for a worker to start it."
    if not trials and status == JobStatus.RUNNING:
        return "Started: splitting the golden set and scoring the first trial."
    pruned = sum(1 for t in trials if t.get("pruned"))
    failed = sum(1 for t in trials if t.get("error"))
    slow = sum(1 for t in trials if t.get("infeasible"))
    parts = [f"{len(trials)} of at most {asked} trials{seconds}"]
    parts += [f"{n} {word}" for n, word in ((pruned, "pruned"), (slow, "too slow"), (failed, "failed")) if n]
    text = ", ".join(parts)
    if status == JobStatus.RUNNING and study.best is None and study.split and len(trials) >= asked:
        text += ". Trials done: confirming the winner on the held-out questions."
    if status == JobStatus.CANCELLED:
        text += ". Cancelled: no confirmation."
    return text


def progress_of(study: Study) -> float:
    if finished(study):
        return 1.0
    asked = trials_asked(study) or 1
    return round(min(1.0, len(study.trials) / asked) * 0.95, 4)  # the confirmation is the last 5%


def error_of(study: Study) -> str | None:
    job = study.job
    return job_error_message(job) if job is not None and job.status == JobStatus.FAILED else None


def study_importance(study: Study, dimensions: Sequence[Dimension]) -> Importance:
    """PED-ANOVA over the complete trials, as the API gives it (evaluation.studies.reads: at milestones while the
    study runs, withheld below its minimum)."""
    return reads.study_importance(study, dimensions, finished=finished(study))


def figures(
    study: Study, dimensions: Sequence[Dimension], importance: Importance, axes: tuple[str, str] | None
) -> dict[str, dict[str, Any] | None]:
    """The page's figures as plotly.js reads them: None where there is nothing to draw (a heatmap with one field
    varied, importance not known yet: the page says why instead)."""
    trials, metric = study.trials, study.metric
    return {
        "history": study_charts.history_figure(trials, metric),
        "parallel": study_charts.parallel_figure(dimensions, trials, metric),
        "heatmap": study_charts.heatmap_figure(dimensions, trials, *axes, metric) if axes else None,
        "importance": (
            study_charts.importance_figure(importance.shares, importance.trials, importance.complete)
            if importance.shares
            else None
        ),
    }


def trial_rows(study: Study, dimensions: Sequence[Dimension]) -> list[dict[str, Any]]:
    """The trials table, by number: each varied field's value (text and sort key), the value and its state."""
    best = (study.best or {}).get("number")
    rows = []
    for trial in sorted(study.trials, key=lambda t: t["number"]):
        values = trial.get("values") or {}
        cells = []
        for d in dimensions:
            value = values.get(d.name)
            sort: Any = value
            if d.choices is not None:
                sort = next((i for i, c in enumerate(d.choices) if c == value), "")
            cells.append((study_charts.value_text(value) if d.name in values else "—", sort))
        state = (
            "failed" if trial.get("error") else "pruned" if trial.get("pruned")
            else "too slow" if trial.get("infeasible") else "complete"
        )  # fmt: skip
        rows.append({**trial, "cells": cells, "state": state, "best": trial["number"] == best})
    return rows


def result(study: Study) -> dict[str, Any] | None:
    """The best trial on the tuning part and the confirmation, with the two runs (when still there) and the
    presets the winner was saved as."""
    if not study.best:
        return None
    confirmation = study.confirmation or {}
    ids = [confirmation[k]["run_id"] for k in ("baseline", "winner") if k in confirmation]
    runs = {str(r.pk): r for r in EvaluationRun.objects.filter(tenant=study.tenant_id, pk__in=ids)}
    sides = [
        {"name": name, **confirmation[name], "run": runs.get(confirmation[name]["run_id"])}
        for name in ("baseline", "winner")
        if name in confirmation
    ]
    return {
        "best": study.best,
        "best_values": [(k, study_charts.value_text(v)) for k, v in study.best["values"].items()],
        "confirmation": study.confirmation,
        "sides": sides,
        "both_runs": len(runs) == 2,
        "presets": list(ConfigPreset.objects.filter(study=study).values_list("name", flat=True)),
    }


def state(study: Study) -> dict[str, Any]:
    """What the status line shows (the page and its poll alike)."""
    return {
        "status": status_of(study),
        "finished": finished(study),
        "count_text": count_text(study),
        "progress": progress_of(study),
        "error": error_of(study),
        "trials": len(study.trials),
    }


def config_text(config: Mapping[str, Any]) -> str:
    """A configuration in one line, `search_type=FullText, bm25_k1=1.2`: what is set (a field left to its default,
    None or off, is not said)."""
    quiet = {"label", "as_of", "include_superseded"}
    return ", ".join(
        f"{k}={study_charts.value_text(v)}"
        for k, v in config.items()
        if v is not None and not (k in quiet and not v) and k != "label"
    )


def space_text(study: Study) -> list[tuple[str, str]]:
    """Each varied field with its values or range, as asked."""
    out = []
    for name, values in study.request["space"].items():
        if isinstance(values, list):
            out.append((name, ", ".join(study_charts.value_text(v) for v in values)))
        else:
            step = f" by {values['step']:g}" if values.get("step") is not None else ""
            log = " (log scale)" if values.get("log") else ""
            out.append((name, f"{values['low']:g} to {values['high']:g}{step}{log}"))
    return out


def progress_json(study: Study, axes: tuple[str, str] | None) -> dict[str, Any]:
    """The study page's poll: its state, its trials as the API gives them, and the figures again."""
    dimensions = dimensions_of(study)
    importance = study_importance(study, dimensions)
    detail = study_detail(study)
    return {
        **state(study),
        "study": detail,
        "figures": {
            name: _without_template(figure)
            for name, figure in figures(study, dimensions, importance, axes).items()
        },
        "importance_note": importance.reason,
    }


def _without_template(figure: dict[str, Any] | None) -> dict[str, Any] | None:
    """A figure as the page draws it (its title apart, for the caption) without its template's properties (the
    page's charts have them already: the poll stays small)."""
    if figure is None:
        return None
    title, drawn = page_figure(figure)  # as the page draws it: the title goes in the figure's caption
    layout = {k: v for k, v in drawn["layout"].items() if k != "template"}
    return {"title": title, "data": drawn["data"], "layout": layout}


def verdict_word(row: Mapping[str, Any]) -> str:
    """A studies list's verdict: better, not shown better, or the state it is in."""
    confirmation = row.get("confirmation")
    if confirmation:
        return "better" if confirmation.get("significant") else "not shown better"
    return ""
