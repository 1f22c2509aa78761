"""Plotly figures for the dashboard's Compare, Trends, calibration and slices pages (bar charts of counts are in
count_charts). No Django: views build the inputs
and embed the HTML.

A configuration label keeps one colour everywhere: ``LabelColors`` gives the tenant's labels, in the order they
were first run, PALETTE's colours and then generated ones, so no two labels of a tenant share one; every page reads
the same mapping (evaluation.dashboard.label_colors), and figures take it as ``colors``. Labels are HTML-escaped
before plotly renders them.
plotly.js is served locally; ``figure_html`` (chart_html) embeds a figure with its title and its text alternative.

Figures are built from plain dicts, as plotly.js reads them, without plotly's per-property validation: it cost
~100 ms for the 2,500 points of a Trends page and ~20 ms for any figure's template. So the properties here are
spelt out in full (no ``title_font_size`` shorthands) and the template is resolved to its properties.
"""

from __future__ import annotations

import colorsys
import html
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio

from evaluation.dashboard.chart_html import figure_html

__all__ = [
    "CompareSeries",
    "LabelColors",
    "MIN_TREND_SPAN",
    "PALETTE",
    "TrendPoint",
    "color_at",
    "compare_figure",
    "figure_html",
    "slices_figure",
    "trends_figure",
]

# Paul Tol's "muted" qualitative scheme, designed to stay distinct under colour-blindness, plus his dark grey.
PALETTE: tuple[str, ...] = (
    "#332288",
    "#88CCEE",
    "#44AA99",
    "#117733",
    "#999933",
    "#DDCC77",
    "#CC6677",
    "#882255",
    "#AA4499",
    "#555555",
)
_HEIGHT = 480  # px; the width follows the container (autosize + responsive)
# The narrowest time axis Trends draws: runs made seconds apart (a fresh install, one batch) sit near the middle of
# a day instead of spreading over an axis of milliseconds.
MIN_TREND_SPAN = timedelta(days=1)
_TEMPLATE = "plotly_white"


@dataclass(frozen=True)
class CompareSeries:
    """One configuration on the Compare page: mean and (low, high) 95% CI per metric, over ``questions``."""

    label: str
    means: dict[str, float]
    ci: dict[str, tuple[float, float]]
    questions: int


@dataclass(frozen=True)
class TrendPoint:
    """One run's value of a metric; ``url`` opens the run (carried in the marker's ``customdata``). A value of
    None is a run without the metric (an answer run no question could be scored on): a gap in its line."""

    label: str
    created_at: datetime
    value: float | None
    run_id: int | str
    url: str
    questions: int | None = None  # the questions the run scored
    change: str = ""  # what changed since the line's previous run (its configuration, the content, the judge)


@dataclass(frozen=True)
class TrendAlert:
    """An alert a schedule of the collection fired: a marker at the top of the chart, at the moment it fired."""

    fired_at: datetime
    text: str


def color_at(index: int) -> str:
    """The index-th colour of a list of labels: PALETTE's, then generated ones (hues a golden angle apart, in three
    lightnesses), none of them a PALETTE colour or an earlier generated one."""
    if index < len(PALETTE):
        return PALETTE[index]
    n = index - len(PALETTE)
    hue = (n * 0.381966 + 0.07) % 1.0
    lightness = (0.38, 0.55, 0.70)[n % 3]
    red, green, blue = colorsys.hls_to_rgb(hue, lightness, 0.55)
    return f"#{round(red * 255):02X}{round(green * 255):02X}{round(blue * 255):02X}"


class LabelColors(Mapping[str, str]):
    """A colour per label, given in a stable order (the tenant's labels by their first run): the n-th label gets
    ``color_at(n)``, so no two share a colour. A label not given (a run written since the mapping was read) gets
    the next free colour, so it still differs from every other."""

    def __init__(self, labels: Iterable[str] = ()) -> None:
        self._colors: dict[str, str] = {}
        for label in labels:
            self[label]

    def __getitem__(self, label: str) -> str:
        if label not in self._colors:
            self._colors[label] = color_at(len(self._colors))
        return self._colors[label]

    def __iter__(self) -> Iterator[str]:
        return iter(self._colors)

    def __len__(self) -> int:
        return len(self._colors)


def base_layout(title: str, x_title: str, y_title: str) -> dict[str, Any]:
    """The layout both figures share."""
    return {
        "title": {
            "text": title,
            "x": 0,
            "xanchor": "left",
            "y": 1,
            "yref": "container",
            "yanchor": "top",
            "pad": {"t": 10, "l": 8},
            "font": {"size": 16},
        },
        "xaxis": {"title": {"text": x_title}, "automargin": True},
        "yaxis": {"title": {"text": y_title}, "range": [0, 1.05], "automargin": True},
        # At the foot of the figure, under the axis title: it wraps onto more rows on a narrow screen.
        "legend": {
            "title": {"text": "configuration"},
            "orientation": "h",
            "yref": "container",
            "yanchor": "bottom",
            "y": 0,
            "x": 0,
        },
        "autosize": True,
        "height": _HEIGHT,
        "margin": {"l": 60, "r": 20, "t": 60, "b": 40},
        # plotly.js knows no template names: the figure carries the template's properties (a fresh copy).
        "template": pio.templates[_TEMPLATE].to_plotly_json(),
        "hoverlabel": {"align": "left"},
    }


def empty_note(layout: dict[str, Any], text: str) -> None:
    """Say why a figure has no data, instead of showing bare axes with invented ticks."""
    layout["annotations"] = [
        {"text": text, "showarrow": False, "xref": "paper", "yref": "paper", "x": 0.5, "y": 0.5}
    ]
    layout["xaxis"].update(showticklabels=False, showgrid=False)


def compare_figure(
    series: Sequence[CompareSeries],
    metrics: Sequence[str],
    *,
    colors: Mapping[str, str] | None = None,
    paired: Mapping[str, int] | None = None,
) -> go.Figure:
    """Grouped bars: x = metric (in the given order), one trace per configuration, 95% bootstrap CI error bars.

    A metric missing from a series leaves a gap (no bar), never a zero. ``paired`` (metric -> questions) says
    how many questions each metric was computed over, when that differs by metric (answer runs); otherwise each
    series' ``questions`` does. ``colors``: the page's LabelColors (by default, the series' own order).
    """
    colors = colors if colors is not None else LabelColors(s.label for s in series)
    traces = []
    for item in series:
        name = html.escape(item.label)
        means = [item.means.get(metric) for metric in metrics]
        intervals = [item.ci.get(metric) for metric in metrics]
        above, below, hover = [], [], []
        for metric, mean, ci in zip(metrics, means, intervals, strict=True):
            if mean is None:
                above.append(0.0)
                below.append(0.0)
                hover.append(f"{name}<br>{html.escape(metric)}: no score")
                continue
            low, high = ci if ci is not None else (mean, mean)
            above.append(max(0.0, high - mean))
            below.append(max(0.0, mean - low))
            over = paired.get(metric, item.questions) if paired is not None else item.questions
            hover.append(
                f"<b>{name}</b><br>{html.escape(metric)}: {mean:.3f}<br>"
                f"95% CI [{low:.3f}, {high:.3f}]<br>{over} questions"
            )
        traces.append(
            {
                "type": "bar",
                "x": list(metrics),
                "y": means,
                "name": name,
                "marker": {"color": colors[item.label]},
                "error_y": {
                    "type": "data",
                    "symmetric": False,
                    "array": above,
                    "arrayminus": below,
                    "visible": True,
                },
                "hovertext": hover,
                "hovertemplate": "%{hovertext}<extra></extra>",
            }
        )
    counts = (
        sorted({paired[m] for m in metrics if m in paired})
        if paired is not None
        else sorted({s.questions for s in series})
    )
    questions = str(counts[0]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}" if counts else "0"
    layout = base_layout(
        f"Metrics by configuration (95% bootstrap CI over {questions} questions)", "metric", "score (0–1)"
    )
    layout["barmode"] = "group"
    layout["xaxis"]["type"] = "category"
    if not series:
        empty_note(layout, "No runs to compare")
    return go.Figure({"data": traces, "layout": layout}, _validate=False)


def latency_figure(
    points: Sequence[tuple[str, float, float]], metric: str, *, colors: Mapping[str, str] | None = None
) -> go.Figure:
    """Quality beside speed: one marker per configuration at (p95 latency of its searches or target calls in
    ms, its mean `metric`). ``points``: (label, metric mean, p95 ms)."""
    colors = colors if colors is not None else LabelColors(label for label, _, _ in points)
    traces = [
        {
            "type": "scatter",
            "mode": "markers+text",
            "x": [p95],
            "y": [value],
            "name": html.escape(label),
            "text": [html.escape(label)],
            "textposition": "top center",
            "marker": {"color": colors[label], "size": 12},
            "hovertemplate": f"<b>{html.escape(label)}</b><br>{html.escape(metric)}: %{{y:.3f}}<br>"
            "p95 latency: %{x:.1f} ms<extra></extra>",
        }
        for label, value, p95 in points
    ]
    layout = base_layout(f"{metric} against p95 latency per question", "p95 latency (ms, log scale)", metric)
    layout["xaxis"]["type"] = "log"
    layout["yaxis"]["range"] = [0, 1.12]  # room for the label above a marker at 1
    if points:  # room for half a label either side of the outermost markers (a log axis: powers of ten)
        lows, highs = min(p95 for _, _, p95 in points), max(p95 for _, _, p95 in points)
        layout["xaxis"]["range"] = [math.log10(max(lows, 1e-3)) - 0.3, math.log10(max(highs, 1e-3)) + 0.3]
    else:
        empty_note(layout, "No run here recorded its latency")
    return go.Figure({"data": traces, "layout": layout}, _validate=False)


def _diagonal(name: str) -> dict[str, Any]:
    """The reference line from (0, 0) to (1, 1): chance on a ROC plot, a calibrated judge on a reliability one."""
    return {
        "type": "scatter",
        "mode": "lines",
        "x": [0, 1],
        "y": [0, 1],
        "name": name,
        "line": {"dash": "dot", "color": "#999"},
        "hoverinfo": "skip",
    }


def roc_figure(rows: Sequence[Mapping[str, Any]]) -> go.Figure:
    """One ROC curve per judge of a metric and level (rows of the calibration report), beside chance."""
    traces: list[dict[str, Any]] = [_diagonal("chance")]
    colors = LabelColors(row["judge"] for row in rows)  # judges, not configurations: their own order
    for row in rows:
        name = html.escape(
            f"{row['judge']} (AUC {row['auc']:.2f})" if row["auc"] is not None else row["judge"]
        )
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "x": [p[0] for p in row["roc"]],
                "y": [p[1] for p in row["roc"]],
                "name": name,
                "line": {"color": colors[row["judge"]], "shape": "hv"},
                "hovertemplate": f"<b>{name}</b><br>false positive rate %{{x:.2f}}<br>true positive rate "
                "%{y:.2f}<extra></extra>",
            }
        )
    layout = base_layout("ROC against the raters' majority", "false positive rate", "true positive rate")
    layout["xaxis"]["range"] = [0, 1.02]
    layout["legend"]["title"] = {"text": "judge"}
    if not any(row["roc"] for row in rows):
        empty_note(layout, "People passed all or none of these items: no curve")
    return go.Figure({"data": traces, "layout": layout}, _validate=False)


def reliability_figure(rows: Sequence[Mapping[str, Any]]) -> go.Figure:
    """Binned judge score against the share of the bin's items people passed; the diagonal is a judge whose
    score means what it says."""
    traces: list[dict[str, Any]] = [_diagonal("calibrated")]
    colors = LabelColors(row["judge"] for row in rows)
    for row in rows:
        bins = [b for b in row["reliability"] if b["count"]]
        name = html.escape(row["judge"])
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "x": [b["mean_score"] for b in bins],
                "y": [b["pass_rate"] for b in bins],
                "text": [f"{b['count']} items" for b in bins],
                "name": name,
                "marker": {
                    "color": colors[row["judge"]],
                    "size": [6 + min(b["count"], 40) / 3 for b in bins],
                },
                "hovertemplate": f"<b>{name}</b><br>mean score %{{x:.2f}}<br>people passed %{{y:.0%}}<br>"
                "%{text}<extra></extra>",
            }
        )
    layout = base_layout(
        "Reliability: score against the human pass rate", "judge score (bin mean)", "people passed"
    )
    layout["xaxis"]["range"] = [0, 1.02]
    layout["legend"]["title"] = {"text": "judge"}
    return go.Figure({"data": traces, "layout": layout}, _validate=False)


def _utc_naive(moment: datetime) -> datetime:
    """plotly.js reads dates without an offset: convert an aware datetime to UTC; a naive one is taken as UTC."""
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo is not None else moment


def _alerts_trace(alerts: Sequence[TrendAlert], scale: float) -> dict[str, Any]:
    """A schedule's alerts as red triangles along the top of a trends chart, at the moment each fired."""
    return {
        "type": "scatter",
        "x": [_utc_naive(a.fired_at) for a in alerts],
        "y": [scale * 1.02] * len(alerts),
        "mode": "markers",
        "name": "alerts",
        "marker": {"color": "#b91c1c", "size": 12, "symbol": "triangle-down"},
        "hovertext": [
            f"<b>alert</b> {_utc_naive(a.fired_at):%Y-%m-%d %H:%M} UTC<br>{html.escape(a.text)}"
            for a in alerts
        ],
        "hovertemplate": "%{hovertext}<extra></extra>",
    }


def trends_figure(
    points: Sequence[TrendPoint],
    metric: str,
    *,
    scale: float = 1.0,
    colors: Mapping[str, str] | None = None,
    alerts: Sequence[TrendAlert] = (),
) -> go.Figure:
    """Lines + markers: one trace per configuration label (first-seen order), points in date order.

    A point where something changed since the line's previous run (``change``: its configuration, the
    collection's content, the judge) is drawn larger, as a diamond, and says what in its hover; each point says
    how many questions its run scored. ``alerts`` are red triangles along the top, at the moment each fired.

    Each marker's ``customdata`` is its run URL, so the page can open the run on click (``plotly_click``). A
    point without a value breaks its line (a gap, never a zero). ``scale`` is the top of the metric's range:
    1 for the 0–1 metrics, 100 for an answer run's score.
    """
    by_label: dict[str, list[TrendPoint]] = {}
    for point in points:
        by_label.setdefault(point.label, []).append(point)
    traces = []
    colors = colors if colors is not None else LabelColors(by_label)
    for label, group in by_label.items():
        group = sorted(group, key=lambda p: _utc_naive(p.created_at))
        name = html.escape(label)
        traces.append(
            {
                "type": "scatter",
                "x": [_utc_naive(p.created_at) for p in group],
                "y": [p.value for p in group],
                "mode": "lines+markers",
                "name": name,
                "line": {"color": colors[label]},
                "marker": {
                    "color": colors[label],
                    "size": [13 if p.change else 8 for p in group],
                    "symbol": ["diamond" if p.change else "circle" for p in group],
                },
                "customdata": [p.url for p in group],
                "connectgaps": False,
                "hovertext": [
                    f"<b>{name}</b><br>{_utc_naive(p.created_at):%Y-%m-%d %H:%M} UTC<br>"
                    f"{html.escape(metric)}: "
                    + ("no value" if p.value is None else f"{p.value:.{1 if scale > 1 else 3}f}")
                    + (f"<br>{p.questions} questions" if p.questions is not None else "")
                    + (f"<br><b>{html.escape(p.change)}</b>" if p.change else "")
                    + f"<br>run {html.escape(str(p.run_id))}"
                    for p in group
                ],
                "hovertemplate": "%{hovertext}<extra></extra>",
            }
        )
    if alerts:
        traces.append(_alerts_trace(alerts, scale))
    layout = base_layout(
        f"{html.escape(metric)} over time", "run date (UTC)", f"{html.escape(metric)} (0–{scale:g})"
    )
    layout["yaxis"]["range"] = [0, scale * 1.05]
    layout["xaxis"]["type"] = "date"
    layout["hovermode"] = "closest"
    if points:
        moments = [_utc_naive(p.created_at) for p in points]
        first, last = min(moments), max(moments)
        if last - first < MIN_TREND_SPAN:
            pad = (MIN_TREND_SPAN - (last - first)) / 2
            layout["xaxis"]["range"] = [(first - pad).isoformat(sep=" "), (last + pad).isoformat(sep=" ")]
    else:
        empty_note(layout, "No runs in this range")
    return go.Figure({"data": traces, "layout": layout}, _validate=False)


def slices_figure(
    series: Sequence[tuple[str, Sequence[float | None]]],
    slices: Sequence[str],
    metric: str,
    *,
    top: float = 1.0,
    colors: Mapping[str, str] | None = None,
) -> go.Figure:
    """Grouped bars: x = slice (`tag:faq`, `origin:Manual`, ...), one trace per configuration, y = its mean
    `metric` over the slice's questions. ``series``: (label, a value per slice, None where the run has no such
    slice or no value): a gap, never a zero. ``top``: the metric's scale (100 for an answer run's score)."""
    colors = colors if colors is not None else LabelColors(label for label, _ in series)
    traces = [
        {
            "type": "bar",
            "x": list(slices),
            "y": list(values),
            "name": html.escape(label),
            "marker": {"color": colors[label]},
            "hovertemplate": f"<b>{html.escape(label)}</b><br>%{{x}}: %{{y:.3f}}<extra></extra>",
        }
        for label, values in series
    ]
    layout = base_layout(f"{metric} per slice", "slice", metric)
    layout["barmode"] = "group"
    layout["xaxis"]["type"] = "category"
    layout["yaxis"]["range"] = [0, top * 1.05]
    if not slices:
        empty_note(layout, "No slices")
    return go.Figure({"data": traces, "layout": layout}, _validate=False)
