"""The Compare page: every metric across the selected runs with intervals, and significance per pair."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from evalsite.errors import EvalsiteError
from evalsite.tenancy.models import Tenant
from evalsite.tenancy.roles import Perm
from evaluation.dashboard import charts, count_charts
from evaluation.dashboard.common_views import (
    tenant_page,
)
from evaluation.dashboard.compare_reads import compare_runs, comparison, latest_batch, series_names
from evaluation.dashboard.label_colors import tenant_label_colors
from evaluation.dashboard.rankings_reads import ranking_pairs, summary
from evaluation.dashboard.slices_reads import compare_slices
from evaluation.models import RunKind

MOST_CHANGED = 20  # the least alike questions listed


@require_GET
@tenant_page(Perm.VIEW)
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
    colors = tenant_label_colors(tenant)
    context.update(comparison(runs, colors))
    context["batch"] = batch
    context["slices"] = compare_slices(
        runs, series_names(runs), request.GET.get("slice_metric"), label_colors=colors
    )
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


@require_GET
@tenant_page(Perm.VIEW)
def compare_rankings(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    """Two retrieval runs question by question: how alike their top k are (overlap, Jaccard, rank-biased
    overlap; no judgment needed), least alike first, and which questions got better or worse on a metric."""
    first_id, second_id = request.GET.get("a", ""), request.GET.get("b", "")
    try:
        runs = compare_runs(tenant=tenant, run_ids=[first_id, second_id])
    except EvalsiteError as exc:
        if exc.status_code == 404:
            raise Http404(exc.message) from None
        return render(request, "dashboard/compare_rankings.html", {"problem": exc.message}, status=400)
    first, second = sorted(runs, key=lambda run: str(run.pk) != first_id)  # in the order asked
    if first.kind != RunKind.RETRIEVAL:
        message = "Rankings side by side compare retrieval runs."
        return render(request, "dashboard/compare_rankings.html", {"problem": message}, status=400)
    k = (
        int(request.GET["k"])
        if request.GET.get("k", "").isdigit() and 0 < int(request.GET["k"]) <= 100
        else 10
    )
    metric = f"ndcg@{k}" if f"ndcg@{k}" in (first.metrics or {}) else next(iter(first.metrics or {}), "")
    pairs = ranking_pairs(first, second, k, metric)
    names = series_names([first, second])
    context = {
        "tenant": tenant,
        "first": first,
        "second": second,
        "names": names,
        "k": k,
        "metric": metric,
        "summary": summary(pairs),
        "least_alike": pairs[:MOST_CHANGED],
        "better": sorted((p for p in pairs if (p.delta or 0) > 0), key=lambda p: -(p.delta or 0)),
        "worse": sorted((p for p in pairs if (p.delta or 0) < 0), key=lambda p: p.delta or 0),
        "chart": charts.figure_html(
            count_charts.similarity_figure([p.rbo for p in pairs], *names), "rbo-chart"
        ),
    }
    return render(request, "dashboard/compare_rankings.html", context)
