"""evaluation.dashboard.charts: the Compare and Trends figures, their colours, and the HTML fragment the pages embed.

No database: figures are built from plain dataclasses.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import plotly.graph_objects as go
import pytest

from evaluation.dashboard.charts import (
    PALETTE,
    CompareSeries,
    LabelColors,
    TrendPoint,
    color_at,
    compare_figure,
    figure_html,
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


# --- colours ---------------------------------------------------------------------------------------------------


def test_label_colors_give_each_label_its_own_colour_in_the_order_given() -> None:
    assert len(set(PALETTE)) == len(PALETTE) >= 8
    assert all(re.fullmatch(r"#[0-9A-F]{6}", color) for color in PALETTE)
    labels = [f"config-{i}" for i in range(60)]
    colors = LabelColors(labels)
    assert [colors[label] for label in labels[: len(PALETTE)]] == list(PALETTE)  # the palette first
    assert len(set(colors.values())) == len(labels)  # then generated colours, none repeated
    assert all(re.fullmatch(r"#[0-9A-F]{6}", colors[label]) for label in labels)
    assert LabelColors(labels) == colors  # the same order, the same colours
    assert colors["a label not given"] not in [colors[label] for label in labels]  # the next free one
    assert color_at(len(PALETTE)) not in PALETTE


def test_same_label_has_the_same_colour_in_both_figures() -> None:
    colors = LabelColors(["hybrid-rrf", "bm25", "vector"])
    compare = compare_figure(make_series(), METRICS, colors=colors)
    trends = trends_figure(make_points(), "ndcg@10", colors=colors)
    bar_colors = {trace.name: trace.marker.color for trace in compare.data}
    line_colors = {trace.name: trace.line.color for trace in trends.data}
    marker_colors = {trace.name: trace.marker.color for trace in trends.data}
    expected = {label: colors[label] for label in LABELS}
    assert bar_colors == line_colors == marker_colors == expected
    again = compare_figure(
        list(reversed(make_series())), METRICS, colors=colors
    )  # the series' order: no matter
    assert {trace.name: trace.marker.color for trace in again.data} == expected
    alone = compare_figure(
        make_series(), METRICS
    )  # without the page's mapping: distinct, in the series' order
    assert [trace.marker.color for trace in alone.data] == list(PALETTE[:3])


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
    assert '"config":{"displaylogo":false,"responsive":true}' in fragment
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
    assert fig.data[0].marker.color == PALETTE[0]
    assert "<script>alert" not in figure_html(fig, "evil")
