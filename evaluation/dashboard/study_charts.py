"""Plotly figures of a study's page: the best value so far by trial, the trials across the varied fields (parallel
coordinates), the best value over two fields (a heatmap) and each field's importance. No Django: the study's
page embeds them, and its poll sends them again (as plain dicts, without their template) as trials arrive.

Trials are the study's stored dicts (evaluation.studies.search.TrialResult.as_dict). A trial "counts" for the
landscape (parallel coordinates, heatmap) when it was scored on every tuning question (evaluation.studies.importance
.complete); the best so far also leaves out trials slower than the study's latency limit, which cannot win.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evaluation.dashboard.charts import PALETTE, base_layout, empty_note, figure_html
from evaluation.studies.importance import complete
from evaluation.studies.space import Dimension

__all__ = [
    "figure_div",
    "heatmap_axes",
    "heatmap_figure",
    "history_figure",
    "importance_figure",
    "parallel_figure",
    "value_text",
]

BINS = 8  # a continuous range's cells on a heatmap axis
MAX_POINTS = 12  # a stepped range with more points than this is binned
_HEIGHT = 420
_SCALE = "Viridis"


def value_text(value: Any) -> str:
    """A field's value as a person reads it: true / false, numbers without float noise."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _layout(title: str, x_title: str, y_title: str, height: int = _HEIGHT) -> dict[str, Any]:
    layout = base_layout(title, x_title, y_title)
    layout["height"] = height
    layout["showlegend"] = False
    layout["yaxis"].pop("range", None)
    return layout


def history_figure(trials: Sequence[Mapping[str, Any]], metric: str) -> dict[str, Any]:
    """Each trial's value by its number (complete, pruned and too-slow trials marked apart) and the best value so
    far as a step line over the complete trials within the latency limit."""
    name = html.escape(metric)
    kinds: dict[str, list[Mapping[str, Any]]] = {"complete": [], "pruned": [], "too slow": []}
    for trial in trials:
        if trial.get("value") is None or trial.get("error"):
            continue
        kind = "pruned" if trial.get("pruned") else "too slow" if trial.get("infeasible") else "complete"
        kinds[kind].append(trial)
    marks = {
        "complete": {"color": PALETTE[0], "size": 8, "symbol": "circle"},
        "pruned": {"color": "#94a3b8", "size": 8, "symbol": "circle-open"},
        "too slow": {"color": PALETTE[6], "size": 9, "symbol": "x"},
    }
    traces: list[dict[str, Any]] = []
    for kind, group in kinds.items():
        traces.append(
            {
                "type": "scatter", "mode": "markers", "name": f"{kind} trial",
                "x": [t["number"] for t in group], "y": [t["value"] for t in group], "marker": marks[kind],
                "hovertext": [_trial_hover(t, name, kind) for t in group],
                "hovertemplate": "%{hovertext}<extra></extra>",
            }
        )  # fmt: skip
    best_x, best_y, best = [], [], -math.inf
    for trial in sorted(kinds["complete"], key=lambda t: t["number"]):
        best = max(best, float(trial["value"]))
        best_x.append(trial["number"])
        best_y.append(best)
    if best_x and trials:  # the line runs on to the last trial so far
        last = max(t["number"] for t in trials)
        if last > best_x[-1]:
            best_x.append(last)
            best_y.append(best)
    traces.append(
        {
            "type": "scatter", "mode": "lines", "name": "best so far", "x": best_x, "y": best_y,
            "line": {"color": PALETTE[3], "width": 2.5, "shape": "hv"},
            "hovertemplate": "best so far: %{y:.4f}<br>after trial %{x}<extra></extra>",
        }
    )  # fmt: skip
    layout = _layout(f"{name} by trial, and the best so far", "trial", f"{name} (tuning questions)")
    layout["showlegend"] = True
    layout["legend"]["title"] = {"text": ""}
    layout["margin"]["b"] = 70
    layout["xaxis"].update(rangemode="tozero", tickformat="d")
    if not any(kinds.values()):
        empty_note(layout, "No trial has ended yet")
    return {"data": traces, "layout": layout}


def _trial_hover(trial: Mapping[str, Any], metric: str, kind: str) -> str:
    values = "<br>".join(
        f"{html.escape(k)} = {html.escape(value_text(v))}" for k, v in (trial.get("values") or {}).items()
    )
    note = {
        "pruned": f" (pruned after {trial.get('questions')} questions)",
        "too slow": f" (p95 {trial.get('p95_ms')} ms: too slow to win)",
    }.get(kind, "")
    return f"<b>trial {trial['number']}</b>{note}<br>{metric}: {float(trial['value']):.4f}<br>{values}"


@dataclass(frozen=True)
class _Axis:
    """How a field's values are laid on a chart's axis: labels of its ticks (or cells) and where a value falls."""

    labels: list[str]
    place: Callable[[Any], int | None]
    values: list[float] | None = None  # tick positions, for parallel coordinates


def _choice_axis(dimension: Dimension) -> _Axis:
    choices = list(dimension.choices or ())

    def place(value: Any) -> int | None:
        for i, choice in enumerate(choices):
            if isinstance(choice, bool) == isinstance(value, bool) and choice == value:
                return i
        return None

    return _Axis([value_text(c) for c in choices], place)


def _numeric_points(dimension: Dimension) -> list[float] | None:
    """The values a stepped or whole-number range can take, when few enough to be a cell each."""
    if dimension.step is None and not dimension.integer:
        return None
    step = dimension.step or 1
    count = int(math.floor((dimension.high - dimension.low) / step + 1e-9)) + 1
    if count > MAX_POINTS:
        return None
    return [dimension.low + i * step for i in range(count)]


def cell_axis(dimension: Dimension) -> _Axis:
    """A heatmap axis: a cell per choice, per point of a short stepped range, else BINS equal bins (on a log
    scale for a log range)."""
    if dimension.choices is not None:
        return _choice_axis(dimension)
    points = _numeric_points(dimension)
    if points is not None:
        step = dimension.step or 1
        low = dimension.low

        def place_point(value: Any) -> int | None:
            index = round((float(value) - low) / step)
            return index if 0 <= index < len(points) else None

        return _Axis([value_text(int(p) if dimension.integer else round(p, 10)) for p in points], place_point)
    scale: Callable[[float], float] = math.log10 if dimension.log else (lambda v: v)
    low, high = scale(dimension.low), scale(dimension.high)
    width = (high - low) / BINS
    edges = [low + i * width for i in range(BINS + 1)]
    unscale: Callable[[float], float] = (lambda v: 10**v) if dimension.log else (lambda v: v)
    labels = [f"{unscale(edges[i]):.2g}–{unscale(edges[i + 1]):.2g}" for i in range(BINS)]

    def place_bin(value: Any) -> int | None:
        position = scale(float(value)) if float(value) > 0 or not dimension.log else None
        if position is None:
            return None
        return min(BINS - 1, max(0, int((position - low) / width)))

    return _Axis(labels, place_bin)


def heatmap_axes(
    dimensions: Sequence[Dimension], wanted: tuple[str | None, str | None], importance: Sequence[str] = ()
) -> tuple[str, str] | None:
    """The two fields a heatmap shows: those asked when both are varied and differ, else the two most important,
    else the first two of the space. None with fewer than two fields varied."""
    names = [d.name for d in dimensions]
    if len(names) < 2:
        return None
    x, y = wanted
    if x in names and y in names and x != y:
        return x, y
    ranked = [name for name in importance if name in names] + [n for n in names if n not in importance]
    return ranked[0], ranked[1]


def heatmap_figure(
    dimensions: Sequence[Dimension], trials: Sequence[Mapping[str, Any]], x: str, y: str, metric: str
) -> dict[str, Any]:
    """The best value of the complete trials in each cell of two fields (x across, y up); a cell no trial fell in
    stays empty. Every hover says how many trials the cell holds."""
    by_name = {d.name: d for d in dimensions}
    across, up = cell_axis(by_name[x]), cell_axis(by_name[y])
    best: list[list[float | None]] = [[None] * len(across.labels) for _ in up.labels]
    counts = [[0] * len(across.labels) for _ in up.labels]
    for trial in complete(trials):
        values = trial.get("values") or {}
        if x not in values or y not in values:
            continue
        i, j = up.place(values[y]), across.place(values[x])
        if i is None or j is None:
            continue
        counts[i][j] += 1
        value = float(trial["value"])
        current = best[i][j]
        best[i][j] = value if current is None else max(current, value)
    name = html.escape(metric)
    trace = {
        "type": "heatmap",
        "x": [html.escape(label) for label in across.labels],
        "y": [html.escape(label) for label in up.labels],
        "z": best,
        "customdata": counts,
        "colorscale": _SCALE,
        "colorbar": {"title": {"text": name, "side": "right"}, "thickness": 14, "tickformat": ".3f"},
        "hoverongaps": False,
        "xgap": 2,
        "ygap": 2,
        "hovertemplate": f"{html.escape(x)} %{{x}}<br>{html.escape(y)} %{{y}}<br>best {name}: %{{z:.4f}}"
        "<br>%{customdata} trial(s)<extra></extra>",
    }
    layout = _layout(f"Best {name} by {html.escape(x)} and {html.escape(y)}", html.escape(x), html.escape(y))
    for axis in ("xaxis", "yaxis"):
        layout[axis].update(type="category", showgrid=False)
    if not any(any(row) for row in counts):
        empty_note(layout, "No trial scored on every tuning question yet")
    return {"data": [trace], "layout": layout}


def _parallel_dimension(dimension: Dimension, values: list[Any]) -> dict[str, Any]:
    label = html.escape(dimension.name)
    if dimension.choices is not None:
        axis = _choice_axis(dimension)
        return {
            "label": label, "values": [axis.place(v) for v in values],
            "tickvals": list(range(len(axis.labels))), "ticktext": [html.escape(t) for t in axis.labels],
            "range": [-0.25, len(axis.labels) - 0.75],
        }  # fmt: skip
    if dimension.log:
        low, high = math.log10(dimension.low), math.log10(dimension.high)
        ticks = [low + (high - low) * i / 4 for i in range(5)]
        return {
            "label": f"{label} (log)", "values": [math.log10(float(v)) for v in values], "range": [low, high],
            "tickvals": ticks, "ticktext": [f"{10**t:.3g}" for t in ticks],
        }  # fmt: skip
    return {
        "label": label, "values": [float(v) for v in values], "range": [dimension.low, dimension.high],
        "tickformat": "d" if dimension.integer else ".3~g",
    }  # fmt: skip


def parallel_figure(
    dimensions: Sequence[Dimension], trials: Sequence[Mapping[str, Any]], metric: str
) -> dict[str, Any]:
    """One line per complete trial across the varied fields, ending at its value, coloured by it."""
    done = [t for t in complete(trials) if all(d.name in (t.get("values") or {}) for d in dimensions)]
    name = html.escape(metric)
    layout = _layout(f"Complete trials across the varied fields, coloured by {name}", "", "", height=460)
    layout["margin"] = {"l": 70, "r": 70, "t": 110, "b": 30}
    if not done:
        empty_note(layout, "No trial scored on every tuning question yet")
        layout["yaxis"].update(showticklabels=False, showgrid=False, zeroline=False)
        return {"data": [], "layout": layout}
    values = [float(t["value"]) for t in done]
    columns = [_parallel_dimension(d, [t["values"][d.name] for t in done]) for d in dimensions]
    low, high = min(values), max(values)
    columns.append(
        {"label": f"<b>{name}</b>", "values": values, "range": [low, high if high > low else low + 1e-9]}
    )
    trace = {
        "type": "parcoords",
        "dimensions": columns,
        "line": {
            "color": values,
            "colorscale": _SCALE,
            "showscale": True,
            "colorbar": {"title": {"text": name, "side": "right"}, "thickness": 14, "tickformat": ".3f"},
        },  # fmt: skip
        "labelangle": -20 if len(columns) > 5 else 0,
        "labelside": "top",
    }
    return {"data": [trace], "layout": layout}


def importance_figure(shares: Mapping[str, float], trials: int, of: int = 0) -> dict[str, Any]:
    """Horizontal bars: each varied field's importance (PED-ANOVA over `trials` complete trials,
    a sample `of` more when that is given), the largest on top."""
    ordered = sorted(shares.items(), key=lambda item: item[1])
    trace = {
        "type": "bar", "orientation": "h",
        "x": [share for _, share in ordered], "y": [html.escape(field) for field, _ in ordered],
        "text": [f"{share:.0%}" for _, share in ordered], "textposition": "outside", "cliponaxis": False,
        "marker": {"color": PALETTE[2]},
        "hovertemplate": "%{y}: %{x:.1%} of the variance explained<extra></extra>",
    }  # fmt: skip
    layout = _layout(
        f"What mattered: each field's importance (PED-ANOVA over {trials} complete trials)",
        "share of the variance",
        "",
    )
    layout["height"] = 130 + 34 * len(ordered)
    layout["xaxis"].update(range=[0, 1.12], tickformat=".0%")
    layout["margin"] = {"l": 20, "r": 30, "t": 50, "b": 50}
    return {"data": [trace], "layout": layout}


def figure_div(figure: Mapping[str, Any], div_id: str, *, table_id: str | None = None) -> str:
    """A figure of this module as the HTML fragment the page embeds (plotly.js is the page's, served locally);
    ``table_id``: the page's table that holds its figures (chart_html.figure_html)."""
    return figure_html(figure, div_id, table_id=table_id)
