"""The Trends page: one metric of a collection's runs over time, a line per configuration label (a line per question
set when a label's runs scored several, never joined), each point with its question count and what changed since
the line's previous run, and the collection's alerts along the top."""

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
from evaluation.models import Alert, EvaluationRun, RunKind
from goldenset.models import Collection
from goldenset.vocabulary.chunks import chunks
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


def _trend_chart(
    points: list[charts.TrendPoint], metric: str, colors: Mapping[str, str], alerts: list[charts.TrendAlert]
) -> str:
    used = sorted({(p.label, colors[p.label]) for p in points})
    digest = hashlib.sha256(repr((metric, used, points, alerts)).encode()).hexdigest()
    html: str | None = _TREND_CHARTS.get(digest)
    if html is None:
        figure = charts.trends_figure(
            points, metric, scale=metric_scale(metric), colors=colors, alerts=alerts
        )
        html = charts.figure_html(figure, "trends-chart")
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


@dataclass(frozen=True)
class RunContext:
    """What a trend point says besides its value: the questions it scored, the question set (fingerprint), and
    what a change is told by: its configuration (label aside), the content versions it saw, the metric's method."""

    questions: int
    golden: str
    config: dict
    content: dict
    method: str


def run_contexts(run_ids: Sequence[uuid.UUID], metric: str) -> dict[uuid.UUID, RunContext]:
    found: dict[uuid.UUID, RunContext] = {}
    fields = ("pk", "question_count", "golden_fingerprint", "config", "index_info", "metric_methods")
    for chunk in chunks(list(run_ids)):
        for pk, questions, golden, config, index, methods in EvaluationRun.objects.filter(
            pk__in=chunk
        ).values_list(*fields):
            config = {k: v for k, v in (config or {}).items() if k != "label"}
            content = (index or {}).get("content_versions") or {}
            found[pk] = RunContext(questions, golden, config, content, (methods or {}).get(metric, ""))
    return found


def _change(before: RunContext | None, now: RunContext) -> str:
    """What changed between a line's two consecutive runs, said in a few words ("" when nothing did)."""
    if before is None:
        return ""
    said = []
    if before.config != now.config:
        said.append("configuration changed")
    if before.content and now.content and before.content != now.content:
        said.append("collection content changed")
    if before.method and now.method and before.method != now.method:
        said.append(f"judge changed ({before.method} → {now.method})")
    return "; ".join(said)


def _series(label: str, context: RunContext | None, sets: dict[str, set[str]]) -> str:
    """A label's line, or one line per question set when its runs scored several: never joined into one line."""
    if context is None or not context.golden or len(sets.get(label, ())) < 2:
        return label  # one question set (or a run that recorded none): one line
    return f"{label} · {context.questions} questions · set {context.golden[:6]}"


def trend_alerts(
    *, tenant: Tenant, collection: Collection, date_from: date, date_to: date
) -> list[charts.TrendAlert]:
    fired = Alert.objects.filter(
        tenant=tenant, collection=collection, fired_at__gte=day_start(date_from),
        fired_at__lt=day_start(date_to + timedelta(days=1)),
    ).select_related("schedule").order_by("fired_at")[:200]  # fmt: skip
    return [
        charts.TrendAlert(a.fired_at, f"{a.schedule.name}: " + "; ".join(r["message"] for r in a.reasons))
        for a in fired
    ]


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
    alerts = trend_alerts(tenant=tenant, collection=collection, date_from=date_from, date_to=date_to)
    chosen = metric if metric in names else default_metric(names)
    rows = (
        trend_rows(tenant=tenant, collection=collection, date_from=date_from, date_to=date_to, metric=chosen)
        if chosen
        else []
    )
    points = []
    labels: dict[str, TrendLabel] = {}
    colors = tenant_label_colors(tenant)
    contexts = run_contexts([pk for pk, *_ in rows], chosen) if chosen else {}
    sets: dict[str, set[str]] = {}
    for pk, label, _, _ in rows:
        if pk in contexts and contexts[pk].golden:
            sets.setdefault(label, set()).add(contexts[pk].golden)
    previous: dict[str, RunContext] = {}
    for pk, label, created_at, value in rows:
        context = contexts.get(pk)
        series = _series(label, context, sets)
        summary = labels.setdefault(series, TrendLabel(series, colors[series], 0, None, None, False))
        summary.points += 1
        if value is not None:
            summary.latest_value, summary.latest_run = value, pk
        change = _change(previous.get(series), context) if context is not None else ""
        if context is not None:
            previous[series] = context
        points.append(
            charts.TrendPoint(series, created_at, value, str(pk), run_url(pk),
                              context.questions if context else None, change)
        )  # fmt: skip
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
        "chart": _trend_chart(points, chosen, colors, alerts) if drawn and chosen else "",
        "cap": TREND_POINTS_PER_LABEL,
    }
