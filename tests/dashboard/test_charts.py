"""evaluation.dashboard.charts: the Compare and Trends figures, their colours, and the HTML fragment the pages embed.

No database: figures are built from plain dataclasses.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import plotly.graph_objects as go
import pytest

from evaluation.dashboard.charts import (
    PALETTE,
    CompareSeries,
    TrendPoint,
    compare_figure,
    figure_html,
    label_color,
    recolor_by_label,
    trends_figure,
)

METRICS = ["recall@10", "mrr@10", "ndcg@10"]
LABELS = ["bm25", "vector", "hybrid-rrf"]


def make_series() -> list[CompareSeries]:
    series = []
    for offset, label in enumerate(LABELS):
        means = {metric: 0.5 + 0.1 * offset + 0.01 * i for i, metric in enumerate(METRICS)}
        ci = {metric: (mean - 0.04, mean + 0.06) for metric, mean in means.items()}
        series.append(CompareSeries(label=label, means=means, ci=ci, questions=50))
    return series


def make_points() -> list[TrendPoint]:
    start = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
    points = []
    for offset, label in enumerate(LABELS):
        for day in (2, 0, 1):  # out of date order on purpose
            run_id = offset * 10 + day
            points.append(
                TrendPoint(label, start + timedelta(days=day), 0.4 + 0.1 * offset, run_id, f"/runs/{run_id}/")
            )
    return points


def clashing_labels() -> tuple[str, str]:
    """Two labels that hash to the same palette colour (there are only len(PALETTE) colours)."""
    first_by_color: dict[str, str] = {}
    for i in range(1000):
        label = f"config-{i}"
        color = label_color(label)
        if color in first_by_color:
            return first_by_color[color], label
        first_by_color[color] = label
    raise AssertionError("no clash found")


# --- colours ---------------------------------------------------------------------------------------------------


def test_label_color_is_a_stable_palette_colour() -> None:
    assert len(set(PALETTE)) == len(PALETTE) >= 8
    assert all(re.fullmatch(r"#[0-9A-F]{6}", color) for color in PALETTE)
    for label in [*LABELS, "", "é-ü unicode", "x" * 500]:
        assert label_color(label) in PALETTE
        assert label_color(label) == label_color(label)
    assert len({label_color(f"config-{i}") for i in range(200)}) == len(PALETTE)  # the hash spreads labels


def test_label_color_is_pinned_across_releases() -> None:
    """sha256-based, so fixed forever: a change here would recolour every configuration on every page."""
    assert label_color("bm25") == "#999933"
    assert label_color("vector-minilm") == "#CC6677"
    assert label_color("hybrid-rrf") == "#88CCEE"


def test_label_color_is_the_same_in_another_process() -> None:
    """hash() of a str changes per process (PYTHONHASHSEED); label_color must not."""
    code = "from evaluation.dashboard.charts import label_color; print(label_color('hybrid-rrf'), label_color('bm25'))"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    root = Path(__file__).resolve().parents[2]
    output = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env, cwd=root
    ).stdout.split()
    assert output == [label_color("hybrid-rrf"), label_color("bm25")]


def test_same_label_has_the_same_colour_in_both_figures() -> None:
    compare = compare_figure(make_series(), METRICS)
    trends = trends_figure(make_points(), "ndcg@10")
    bar_colors = {trace.name: trace.marker.color for trace in compare.data}
    line_colors = {trace.name: trace.line.color for trace in trends.data}
    marker_colors = {trace.name: trace.marker.color for trace in trends.data}
    expected = {label: label_color(label) for label in LABELS}
    assert bar_colors == line_colors == marker_colors == expected
    again = compare_figure(list(reversed(make_series())), METRICS)  # order of series does not change colours
    assert {trace.name: trace.marker.color for trace in again.data} == expected


def test_labels_sharing_a_colour_are_told_apart_by_pattern_and_dash() -> None:
    first, second = clashing_labels()
    series = [
        CompareSeries(label, {"ndcg@10": 0.5}, {"ndcg@10": (0.4, 0.6)}, 10)
        for label in ("other", first, second)
    ]
    bars = {trace.name: trace for trace in compare_figure(series, ["ndcg@10"]).data}
    assert bars[first].marker.color == bars[second].marker.color == label_color(first)
    assert bars[first].marker.pattern.shape == "" and bars[second].marker.pattern.shape != ""
    points = [TrendPoint(label, datetime(2025, 1, 1), 0.5, 1, "/runs/1/") for label in (first, second)]
    lines = {trace.name: trace for trace in trends_figure(points, "ndcg@10").data}
    assert lines[first].line.dash == "solid" and lines[second].line.dash != "solid"


def test_recolor_by_label_colours_series_by_their_runs_label() -> None:
    """Compare names repeated labels with a date; each bar still takes its label's colour, and bars of one
    colour are told apart by pattern."""
    first, second = clashing_labels()
    names = ["bm25 (2025-01-01 10:00, a1b2c3)", "bm25 (2025-01-02 10:00, d4e5f6)", first, second]
    labels = ["bm25", "bm25", first, second]
    series = [CompareSeries(name, {"mrr": 0.5}, {"mrr": (0.4, 0.6)}, 10) for name in names]
    fig = compare_figure(series, ["mrr"])
    recolor_by_label(fig, labels)
    assert [trace.marker.color for trace in fig.data] == [label_color(label) for label in labels]
    shapes = [trace.marker.pattern.shape for trace in fig.data]
    assert shapes[0] == "" and shapes[1] != "" and shapes[2] == "" and shapes[3] != ""
    with pytest.raises(ValueError):
        recolor_by_label(fig, labels[:2])  # one label per trace


def test_figures_carry_their_template_resolved_for_plotly_js() -> None:
    """Figures are not validated by plotly, which would turn a template's name into its properties:
    plotly.js knows no names, so the figure must carry the properties themselves."""
    for fig in (compare_figure(make_series(), METRICS), trends_figure(make_points(), "mrr")):
        template = fig.to_dict()["layout"]["template"]
        assert isinstance(template, dict) and template["layout"]["plot_bgcolor"] == "white"
        assert fig.layout.title.font.size == 16 and fig.layout.title.pad.t == 10


# --- compare ---------------------------------------------------------------------------------------------------


def test_compare_figure_has_one_grouped_bar_trace_per_configuration() -> None:
    series = make_series()
    fig = compare_figure(series, METRICS)
    assert isinstance(fig, go.Figure)
    assert len(fig.data) == len(LABELS)
    assert [trace.name for trace in fig.data] == LABELS
    assert all(trace.type == "bar" for trace in fig.data)
    assert fig.layout.barmode == "group"
    for trace, item in zip(fig.data, series, strict=True):
        assert list(trace.x) == METRICS
        assert list(trace.y) == pytest.approx([item.means[m] for m in METRICS])


def test_compare_error_bars_are_the_asymmetric_cis() -> None:
    series = make_series()
    fig = compare_figure(series, METRICS)
    for trace, item in zip(fig.data, series, strict=True):
        assert trace.error_y.symmetric is False and trace.error_y.visible is True
        for i, metric in enumerate(METRICS):
            low, high = item.ci[metric]
            mean = item.means[metric]
            assert trace.error_y.array[i] == pytest.approx(high - mean)
            assert trace.error_y.arrayminus[i] == pytest.approx(mean - low)
            assert mean + trace.error_y.array[i] == pytest.approx(high)
            assert mean - trace.error_y.arrayminus[i] == pytest.approx(low)


def test_compare_hover_shows_mean_ci_and_question_count() -> None:
    fig = compare_figure(make_series(), METRICS)
    hover = fig.data[0].hovertext[0]
    assert "bm25" in hover and "recall@10" in hover
    assert "0.500" in hover and "[0.460, 0.560]" in hover and "50 questions" in hover
    assert "95% CI" in hover


def test_compare_titles_axes_and_responsive_layout() -> None:
    fig = compare_figure(make_series(), METRICS)
    assert fig.layout.title.text == "Metrics by configuration (95% bootstrap CI over 50 questions)"
    assert fig.layout.yaxis.title.text == "score (0–1)"
    assert tuple(fig.layout.yaxis.range) == (0, 1.05)
    assert fig.layout.xaxis.title.text == "metric"
    assert fig.layout.autosize is True
    assert fig.layout.width is None  # the width follows the container


def test_compare_missing_metric_is_a_gap_not_a_zero() -> None:
    series = [CompareSeries("bm25", {"mrr@10": 0.4}, {"mrr@10": (0.3, 0.5)}, 12)]
    (trace,) = compare_figure(series, ["recall@10", "mrr@10"]).data
    assert trace.y[0] is None and trace.y[1] == pytest.approx(0.4)
    assert list(trace.error_y.array) == pytest.approx([0.0, 0.1])


def test_compare_title_names_the_range_when_question_counts_differ_and_handles_no_series() -> None:
    series = make_series()
    series[1] = CompareSeries(series[1].label, series[1].means, series[1].ci, 40)
    assert "over 40–50 questions" in compare_figure(series, METRICS).layout.title.text
    empty = compare_figure([], METRICS)
    assert len(empty.data) == 0
    assert "No runs to compare" in empty.layout.annotations[0].text


# --- trends ----------------------------------------------------------------------------------------------------


def test_trends_figure_has_one_line_per_label_with_run_urls() -> None:
    fig = trends_figure(make_points(), "ndcg@10")
    assert len(fig.data) == len(LABELS)
    assert [trace.name for trace in fig.data] == LABELS
    for offset, trace in enumerate(fig.data):
        assert trace.mode == "lines+markers"
        assert list(trace.customdata) == [f"/runs/{offset * 10 + day}/" for day in (0, 1, 2)]  # date order
        assert list(trace.x) == sorted(trace.x)
        assert all(value == pytest.approx(0.4 + 0.1 * offset) for value in trace.y)


def test_trends_dates_are_utc_for_plotly() -> None:
    paris = timezone(timedelta(hours=1))
    points = [TrendPoint("bm25", datetime(2025, 3, 1, 13, 30, tzinfo=paris), 0.5, 7, "/runs/7/")]
    (trace,) = trends_figure(points, "mrr@10").data
    assert trace.x[0] == datetime(
        2025, 3, 1, 12, 30
    )  # converted to UTC, offset dropped (plotly.js ignores it)
    assert "2025-03-01 12:30 UTC" in trace.hovertext[0]
    assert "run 7" in trace.hovertext[0] and "0.500" in trace.hovertext[0]


def test_trends_titles_and_axes() -> None:
    fig = trends_figure(make_points(), "ndcg@10")
    assert fig.layout.title.text == "ndcg@10 over time"
    assert fig.layout.xaxis.title.text == "run date (UTC)"
    assert fig.layout.yaxis.title.text == "ndcg@10 (0–1)"
    assert fig.layout.xaxis.type == "date"
    assert fig.layout.autosize is True


def test_trends_without_points_says_so() -> None:
    fig = trends_figure([], "ndcg@10")
    assert len(fig.data) == 0
    assert fig.layout.annotations[0].text == "No runs in this range"


# --- HTML ------------------------------------------------------------------------------------------------------


def test_figure_html_is_a_fragment_without_plotly_js() -> None:
    fragment = figure_html(compare_figure(make_series(), METRICS), "compare-chart")
    assert 'id="compare-chart"' in fragment
    assert "<script src=" not in fragment
    assert "cdn" not in fragment.lower()
    assert "<html" not in fragment.lower()
    assert '"displaylogo": false' in fragment and '"responsive": true' in fragment
    assert len(fragment) < 100_000  # the 4.8 MB plotly.js bundle is not inlined


def test_figure_html_for_trends_carries_the_run_urls() -> None:
    fragment = figure_html(trends_figure(make_points(), "ndcg@10"), "trend-chart")
    assert 'id="trend-chart"' in fragment
    assert "\\u002fruns\\u002f10\\u002f" in fragment  # plotly escapes "/" inside the inline JSON


def test_labels_are_escaped_for_display_and_cannot_break_out_of_the_script() -> None:
    label = "</script><script>alert(1)</script>"
    series = [CompareSeries(label, {"mrr@10": 0.5}, {"mrr@10": (0.4, 0.6)}, 3)]
    fig = compare_figure(series, ["mrr@10"])
    assert fig.data[0].name == "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;"
    assert fig.data[0].marker.color == label_color(label)  # the colour is from the raw label
    assert "<script>alert" not in figure_html(fig, "evil")
