"""The Trends page: one metric over time, a line per configuration label."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from evalsite.tenancy.models import Tenant
from evalsite.tenancy.roles import Perm
from evaluation.dashboard.common_reads import collection_slugs
from evaluation.dashboard.common_views import (
    collection_for,
    tenant_page,
)
from evaluation.dashboard.forms import TrendsForm
from evaluation.dashboard.trends_reads import TREND_DAYS, latest_run_collection, trend_report, trend_window


@require_GET
@tenant_page(Perm.VIEW)
def trends(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    """One metric over time, a line per configuration label, within a date range (the last 90 days)."""
    slugs = collection_slugs(tenant=tenant)
    context: dict[str, Any] = {"tenant": tenant, "days": TREND_DAYS}
    if not slugs:
        return render(request, "dashboard/trends.html", context)
    data = request.GET.copy()
    if not data.get("collection"):
        data["collection"] = latest_run_collection(tenant=tenant, among=slugs)
    date_from, date_to = trend_window(None, None)
    data.setdefault("date_from", date_from.isoformat())
    data.setdefault("date_to", date_to.isoformat())
    form = TrendsForm(data, collections=slugs)
    context["form"] = form
    if not form.is_valid():
        return render(request, "dashboard/trends.html", context, status=400)
    collection = collection_for(tenant, form.cleaned_data["collection"])
    date_from, date_to = trend_window(form.cleaned_data.get("date_from"), form.cleaned_data.get("date_to"))
    context.update(
        trend_report(
            tenant=tenant,
            collection=collection,
            date_from=date_from,
            date_to=date_to,
            metric=form.cleaned_data.get("metric") or None,
            run_url=_run_url_maker(),
        )
    )
    context.update({"collection": collection, "date_from": date_from, "date_to": date_to})
    return render(request, "dashboard/trends.html", context)


def _run_url_maker() -> Callable[[uuid.UUID], str]:
    """A run's URL without a reverse() per point (a trend may draw thousands)."""
    placeholder = str(uuid.UUID(int=0))
    template = reverse("dashboard:run", args=[placeholder])
    return lambda pk: template.replace(placeholder, str(pk))
