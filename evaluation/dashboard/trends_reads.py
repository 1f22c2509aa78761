"""The Trends page: one metric of a collection's runs over time, a line per configuration label."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from django.db.models import F, FloatField, QuerySet, Window
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast, RowNumber
from django.utils import timezone

from evalsite.tenancy.models import Tenant
from evaluation.dashboard import charts
from evaluation.dashboard.common_reads import (
    Memo,
    day_start,
    default_metric,
    metric_scale,
    ordered_metrics,
)
from evaluation.dashboard.label_colors import tenant_label_colors
from evaluation.models import EvaluationRun, RunKind
from goldenset.models import Collection
from goldenset.vocabulary.metric_names import ANSWER_METRICS

TREND_DAYS = 90
TREND_POINTS_PER_LABEL = 500  # the latest runs of each label within the range


def trend_window(date_from: date | None, date_to: date | None) -> tuple[date, date]:
    today = timezone.localdate()
    date_to = date_to or today
    date_from = date_from or (date_to - timedelta(days=TREND_DAYS))
    return date_from, date_to


def latest_run_collection(*, tenant: Tenant, among: Sequence[str]) -> str:
    """The collection of the tenant's latest run (the trends page's default), else the first collection."""
    latest = (
        EvaluationRun.objects.filter(tenant=tenant)
        .order_by("-created_at", "-id")
        .values_list("collection_ids", flat=True)
        .first()
    )
    for slug in latest or []:
        if slug in among:
            return slug
    return among[0]


@dataclass
class TrendLabel:
    label: str
    color: str
    points: int
    latest_value: float | None
    latest_run: uuid.UUID | None
    capped: bool


# Runs never change once written, so a trend over the same points is the same chart (a figure of 2,500 points
# is ~700 kB of HTML): a repeat view skips building it.
_TREND_CHARTS = Memo(16)


def _trend_chart(points: list[charts.TrendPoint], metric: str, colors: Mapping[str, str]) -> str:
    used = sorted({(p.label, colors[p.label]) for p in points})
    digest = hashlib.sha256(
        repr(
            (metric, used, [(p.run_id, p.label, p.value, p.created_at.isoformat(), p.url) for p in points])
        ).encode()
    ).hexdigest()
    html: str | None = _TREND_CHARTS.get(digest)
    if html is None:
        html = charts.figure_html(
            charts.trends_figure(points, metric, scale=metric_scale(metric), colors=colors), "trends-chart"
        )
        _TREND_CHARTS.put(digest, html)
    return html


METRIC_NAMES_FROM = 200  # the metric choices come from the latest runs in the range


def _in_range(
    *, tenant: Tenant, collection: Collection, date_from: date, date_to: date
) -> QuerySet[EvaluationRun]:
    return EvaluationRun.objects.filter(
        tenant=tenant,
        collections=collection,
        created_at__gte=day_start(date_from),
        created_at__lt=day_start(date_to + timedelta(days=1)),
    )


def trend_metric_names(
    *, tenant: Tenant, collection: Collection, date_from: date, date_to: date
) -> list[str]:
    """The metrics the latest runs of the range carry (retrieval and answer runs carry different ones)."""
    latest = (
        _in_range(tenant=tenant, collection=collection, date_from=date_from, date_to=date_to)
        .order_by("-created_at", "-id")
        .values_list("metrics", flat=True)[:METRIC_NAMES_FROM]
    )
    return ordered_metrics(name for metrics in latest for name in metrics)


def trend_rows(
    *,
    tenant: Tenant,
    collection: Collection,
    date_from: date,
    date_to: date,
    metric: str,
    per_label: int = TREND_POINTS_PER_LABEL,
) -> list[tuple[uuid.UUID, str, datetime, float | None]]:
    """(run id, label, created, value of `metric` or None) of the collection's runs in the range, the latest
    `per_label` of each label, oldest first. One query: a window function ranks each label's runs, and only
    the one metric is read out of each run's JSON. (A label's runs carry the same metrics: its configuration.)"""
    rows = (
        _in_range(tenant=tenant, collection=collection, date_from=date_from, date_to=date_to)
        .annotate(value=Cast(KeyTextTransform(metric, "metrics"), FloatField()))
        .annotate(
            newest=Window(
                RowNumber(), partition_by=[F("label")], order_by=[F("created_at").desc(), F("id").desc()]
            )
        )
        .filter(newest__lte=per_label)
        .order_by("created_at", "id")
        .values_list("pk", "label", "created_at", "value")
    )
    return list(rows)


def trend_report(
    *,
    tenant: Tenant,
    collection: Collection,
    date_from: date,
    date_to: date,
    metric: str | None,
    run_url: Callable[[uuid.UUID], str],
) -> dict[str, Any]:
    """The Trends page's metric choices, its lines' labels and the chart (named trend_report, not trends: that
    is this module's name)."""
    names = trend_metric_names(tenant=tenant, collection=collection, date_from=date_from, date_to=date_to)
    chosen = metric if metric in names else default_metric(names)
    rows = (
        trend_rows(tenant=tenant, collection=collection, date_from=date_from, date_to=date_to, metric=chosen)
        if chosen
        else []
    )
    points = []
    labels: dict[str, TrendLabel] = {}
    colors = tenant_label_colors(tenant)
    for pk, label, created_at, value in rows:
        summary = labels.setdefault(label, TrendLabel(label, colors[label], 0, None, None, False))
        summary.points += 1
        if value is not None:
            summary.latest_value, summary.latest_run = value, pk
        points.append(charts.TrendPoint(label, created_at, value, str(pk), run_url(pk)))
    # A label none of whose runs has the metric (runs of the other kind) draws no line; within a line, a run
    # without the metric is a gap, never a zero.
    drawn = {label for label, summary in labels.items() if summary.latest_run is not None}
    points = [p for p in points if p.label in drawn]
    for summary in labels.values():
        summary.capped = summary.points >= TREND_POINTS_PER_LABEL
    return {
        "metric_names": names,
        "metric_groups": [
            (kind, group)
            for kind, group in (
                (RunKind.RETRIEVAL, [n for n in names if n not in ANSWER_METRICS]),
                (RunKind.ANSWERS, [n for n in names if n in ANSWER_METRICS]),
            )
            if group
        ],
        "metric": chosen,
        "scale": metric_scale(chosen) if chosen else 1.0,
        "points": sum(1 for p in points if p.value is not None),
        "labels": sorted(labels.values(), key=lambda s: s.label),
        "chart": _trend_chart(points, chosen, colors) if drawn and chosen else "",
        "cap": TREND_POINTS_PER_LABEL,
    }
