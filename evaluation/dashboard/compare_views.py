"""The Compare page: every metric across the selected runs with intervals, and significance per pair."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from evalsite.errors import EvalsiteError
from evalsite.tenancy.models import Tenant
from evaluation.dashboard.common_views import (
    tenant_page,
)
from evaluation.dashboard.compare_reads import compare_runs, comparison, latest_batch, series_names
from evaluation.dashboard.slices_reads import compare_slices
from evaluation.models import RunKind


@require_GET
@tenant_page
def compare(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    """Every metric across the selected runs with 95% bootstrap intervals, and a paired randomization test
    for each pair over the questions they share."""
    run_ids = request.GET.getlist("run")
    batch = request.GET.get("batch")
    context: dict[str, Any] = {"tenant": tenant}
    if not run_ids and not batch:
        latest = latest_batch(tenant=tenant)
        context["latest_batch"] = latest
        return render(request, "dashboard/compare.html", context)
    try:
        runs = compare_runs(tenant=tenant, run_ids=run_ids, batch_id=batch)
    except EvalsiteError as exc:
        if exc.status_code == 404:
            raise Http404(exc.message) from None
        context["problem"] = exc.message
        context["problem_code"] = exc.code
        return render(request, "dashboard/compare.html", context, status=400)
    context.update(comparison(runs))
    context["batch"] = batch
    context["slices"] = compare_slices(runs, series_names(runs), request.GET.get("slice_metric"))
    # The metric picker keeps the selection (run=... or batch=...) it was opened with.
    context["selection"] = [(k, v) for k in ("run", "batch") for v in request.GET.getlist(k)]
    context["pool_collection"] = pool_collection(runs)
    return render(request, "dashboard/compare.html", context)


def pool_collection(runs) -> str | None:
    """The one collection whose documents these runs rank, when a pool can be made of them (retrieval runs of
    one collection alone: compare_runs holds them to one set of collections), else None."""
    if any(run.kind != RunKind.RETRIEVAL for run in runs) or len(runs[0].collection_ids) != 1:
        return None
    return runs[0].collection_ids[0]
