"""A run's per-slice breakdown on its page, and the runs' breakdowns side by side on Compare.

Both read the breakdown each run stored when it was written (EvaluationRun.slices, evaluation.runs.slices.breakdown):
nothing here reads question results, so a page costs the same however many questions the runs asked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evaluation.dashboard import charts
from evaluation.dashboard.common_reads import config_value, default_metric, metric_scale, ordered_metrics
from evaluation.models import EvaluationRun
from evaluation.runs.slices import ANSWERABLE, ORIGIN, TAG, Subset, slice_metric_names
from goldenset.vocabulary.metric_names import ANSWER_SCORE

KINDS = (TAG, ORIGIN, ANSWERABLE)  # the order slices are shown in


def figure_text(metric: str, value: float | None) -> str:
    """A slice's mean as the tables show it: "—" for none, an answer run's score with one decimal (0-100),
    any other metric with three."""
    if value is None:
        return "—"
    return f"{value:.1f}" if metric == ANSWER_SCORE else f"{value:.3f}"


@dataclass(frozen=True)
class SliceLine:
    """One slice of one run: its kind (tag, origin, answerable), name, questions and every metric's mean."""

    kind: str
    name: str
    n: int
    values: list[str]


@dataclass(frozen=True)
class SliceTable:
    metric_names: list[str]
    lines: list[SliceLine]


def run_slices(run: EvaluationRun) -> SliceTable | None:
    """The run's slices as its page's table; None for a run without any (failed, or stored before slices)."""
    slices: Mapping[str, Mapping[str, Mapping]] = run.slices or {}
    names = ordered_metrics(slice_metric_names(slices))
    # In KINDS order and by name: a JSON column's key order is the database's (PostgreSQL's jsonb sorts keys
    # by length), never the order the breakdown was written in.
    kinds = dict.fromkeys([*KINDS, *slices])
    lines = [
        SliceLine(kind, name, int(figures.get("n", 0)), [figure_text(m, figures.get(m)) for m in names])
        for kind in kinds
        for name, figures in sorted((slices.get(kind) or {}).items())
    ]
    return SliceTable(names, lines) if lines else None


def subset_text(config: Mapping) -> str:
    """A run's subset in words for its configuration table ("" when it asked every golden entry)."""
    stored = config.get("subset")
    if not isinstance(stored, Mapping):
        return ""
    subset = Subset(
        tags=tuple(stored.get("tags") or ()),
        origins=tuple(stored.get("origin") or ()),
        reviewed_only=bool(stored.get("reviewed_only")),
        skip_unreviewed_generated=bool(stored.get("skip_unreviewed_generated")),
    )
    return subset.describe() if subset else ""


def config_rows(config: Mapping) -> list[tuple[str, object]]:
    """A run's configuration as (field, value) rows for its page, each value as a reader says it (config_value),
    the subset in words."""
    rows: list[tuple[str, object]] = [
        (k, config_value(k, v)) for k, v in config.items() if k not in ("label", "subset")
    ]
    if subset_text(config):
        rows.append(("subset", subset_text(config)))
    return sorted(rows)


# --- compare ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CompareSliceLine:
    """One slice across the runs: per run (the metric's mean, the slice's n), None where the run has no such
    slice; `shown` is the same as the table writes it."""

    kind: str
    name: str
    cells: list[tuple[float | None, int] | None]
    shown: list[tuple[str, int] | None]


@dataclass(frozen=True)
class CompareSlices:
    metric: str
    metric_names: list[str]
    lines: list[CompareSliceLine]
    chart: str


def compare_slices(
    runs: Sequence[EvaluationRun],
    names: Sequence[str],
    metric: str | None = None,
    *,
    label_colors: Mapping[str, str],
) -> CompareSlices | None:
    """One metric per slice across the runs (`names`: the runs' series names), with a grouped bar chart; None
    when no run has slices. `metric`: the one asked for, if the slices have it, else the page's default.
    `label_colors`: the tenant's (evaluation.dashboard.label_colors)."""
    stored = [run.slices or {} for run in runs]
    metric_names = ordered_metrics(n for slices in stored for n in slice_metric_names(slices))
    if not metric_names:
        return None
    chosen = metric if metric in metric_names else default_metric(metric_names) or metric_names[0]
    kinds = dict.fromkeys([*KINDS, *(kind for slices in stored for kind in slices)])
    keys = [
        (kind, name)
        for kind in kinds
        for name in sorted({name for slices in stored for name in slices.get(kind, {})})
    ]
    lines = []
    for kind, name in keys:
        cells: list[tuple[float | None, int] | None] = []
        for slices in stored:
            figures = slices.get(kind, {}).get(name)
            cells.append(None if figures is None else (figures.get(chosen), int(figures.get("n", 0))))
        shown = [None if c is None else (figure_text(chosen, c[0]), c[1]) for c in cells]
        lines.append(CompareSliceLine(kind, name, cells, shown))
    figure = charts.slices_figure(
        [
            (label, [None if c is None else c[0] for c in line_cells])
            for label, line_cells in _by_run(names, lines)
        ],
        [f"{line.kind}:{line.name}" for line in lines],
        chosen,
        top=metric_scale(chosen),
        colors={name: label_colors[run.label] for run, name in zip(runs, names, strict=True)},
    )
    return CompareSlices(
        chosen, metric_names, lines, charts.figure_html(figure, "slices-chart", table_id="compare-slices")
    )


def _by_run(names: Sequence[str], lines: Sequence[CompareSliceLine]) -> list[tuple[str, list]]:
    """The table's columns as (run name, its cell per slice)."""
    return [(name, [line.cells[i] for line in lines]) for i, name in enumerate(names)]
