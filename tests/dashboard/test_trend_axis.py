"""Trends' time axis: runs made seconds apart (a fresh install) get an axis of at least a day around them, never
one of milliseconds; runs spread wider keep plotly's own range."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from evaluation.dashboard.charts import MIN_TREND_SPAN, TrendPoint, trends_figure

START = datetime(2026, 12, 1, 15, 41, 48, 650000, tzinfo=UTC)


def points(*offsets: timedelta) -> list[TrendPoint]:
    return [
        TrendPoint(f"config {i}", START + offset, 0.5 + i / 100, i, f"/runs/{i}/")
        for i, offset in enumerate(offsets)
    ]


def x_range(figure) -> tuple[datetime, datetime] | None:
    shown = figure.layout.xaxis.range
    return None if shown is None else (datetime.fromisoformat(shown[0]), datetime.fromisoformat(shown[1]))


def test_runs_seconds_apart_sit_in_the_middle_of_a_day():
    figure = trends_figure(points(*(timedelta(milliseconds=75 * i) for i in range(5))), "ndcg@10")
    low, high = x_range(figure)
    assert high - low == MIN_TREND_SPAN == timedelta(days=1)
    first, last = START.replace(tzinfo=None), (START + timedelta(milliseconds=300)).replace(tzinfo=None)
    assert low < first and last < high
    assert abs((first - low) - (high - last)) < timedelta(milliseconds=1)  # centred


def test_one_run_alone_gets_a_day_too():
    low, high = x_range(trends_figure(points(timedelta(0)), "mrr"))
    assert high - low == timedelta(days=1) and low + timedelta(hours=12) == START.replace(tzinfo=None)


def test_runs_a_few_hours_apart_are_padded_to_a_day():
    low, high = x_range(trends_figure(points(timedelta(0), timedelta(hours=5)), "mrr"))
    assert high - low == timedelta(days=1)
    assert low == START.replace(tzinfo=None) - timedelta(hours=9, minutes=30)


def test_runs_spread_over_days_keep_the_automatic_range():
    assert x_range(trends_figure(points(timedelta(0), timedelta(days=3)), "mrr")) is None


def test_no_runs_no_range():
    figure = trends_figure([], "mrr")
    assert x_range(figure) is None and figure.layout.annotations[0].text == "No runs in this range"
