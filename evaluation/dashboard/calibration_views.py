"""The collection's Calibration tab: human labels uploaded, the raters' agreement, each judge's agreement with
them (ROC and reliability charts, the verdict at the threshold in force) and a calibrated threshold applied."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from evalsite.audit.services import actor_user
from evalsite.errors import EvalsiteError
from evalsite.tenancy.models import Tenant
from evalsite.tenancy.roles import Perm
from evaluation.answers import judge
from evaluation.answers.verdicts import DEFAULT_THRESHOLDS
from evaluation.dashboard import charts
from evaluation.dashboard.common_views import collection_for, tenant_page
from evaluation.judgments import calibration
from evaluation.judgments.assessor_report import assessors_against_people
from evaluation.judgments.label_import import labels_import
from evaluation.judgments.labels import read_labels
from evaluation.models import LabelLevel

MAX_UPLOAD_ERRORS_SHOWN = 10


@require_http_methods(["GET", "POST"])
@tenant_page(Perm.VIEW, post=Perm.CURATE)
def collection_calibration(request: HttpRequest, tenant: Tenant, slug: str) -> HttpResponse:
    collection = collection_for(tenant, slug)
    upload_errors: list[dict[str, str]] = []
    if request.method == "POST":
        upload = request.FILES.get("file")
        if upload is None:
            messages.error(request, "Choose a label file (CSV or JSON) to upload.")
        else:
            try:
                result = labels_import(
                    tenant=tenant, collection=collection, rows=read_labels(upload.read()),
                    actor=actor_user(request.user),
                )  # fmt: skip
            except EvalsiteError as exc:
                upload_errors = exc.details.get("errors") or [
                    {"where": exc.details.get("where", ""), "message": exc.message}
                ]
                messages.error(request, f"Nothing was imported from {upload.name}: {exc.message}")
            else:
                messages.success(
                    request,
                    f"Imported {upload.name}: {result['created']} labels created, {result['updated']} updated "
                    f"(raters: {', '.join(result['raters'])}).",
                )
                return redirect("dashboard:collection-calibration", slug=collection.slug)
    report = calibration.calibration_report(collection=collection)
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in report["judges"]:  # copies: the report is the process's cached one, shared with the API
        groups[(row["metric"], row["level"])].append(dict(row))
    applied = {(t["judge"], t["metric"]): t for t in calibration.thresholds_list(collection)}
    sections = []
    for (metric, level), rows in groups.items():
        div = f"{metric}-{level}"
        for row in rows:
            row["can_apply"] = (
                level == LabelLevel.QUESTION and metric in DEFAULT_THRESHOLDS and row["best_threshold"]
            )
            row["applied"] = applied.get((row["judge"], metric))
        sections.append(
            {
                "metric": metric,
                "level": level,
                "rows": rows,
                "apply_note": apply_note(metric, level, rows),
                "roc": charts.figure_html(charts.roc_figure(rows), f"roc-{div}"),
                "reliability": charts.figure_html(charts.reliability_figure(rows), f"reliability-{div}"),
            }
        )
    context = {
        "tenant": tenant,
        "collection": collection,
        "tab": "calibration",
        "report": report,
        "sections": sections,
        "assessors": assessors_against_people(collection),
        "support_min": judge.SUPPORT_MIN,
        "support_min_chosen_on": judge.SUPPORT_MIN_CHOSEN_ON,
        "upload_errors": upload_errors[:MAX_UPLOAD_ERRORS_SHOWN],
        "more_errors": max(0, len(upload_errors) - MAX_UPLOAD_ERRORS_SHOWN),
    }
    return render(request, "dashboard/calibration.html", context, status=400 if upload_errors else 200)


def apply_note(metric: str, level: str, rows: list[dict[str, Any]]) -> str:
    """Why a section offers no Apply button ("" when one of its judges has one, or a threshold is applied)."""
    if any(row["can_apply"] or row["applied"] for row in rows):
        return ""
    if level != LabelLevel.QUESTION:
        return (
            f"No threshold to apply: these labels judge single statements, so they measure the judge's "
            f"statement cut (a statement is supported at {judge.SUPPORT_MIN:g}), which is part of the judge and "
            "the same in every collection. Apply sets a collection's pass threshold of a metric, and takes "
            f"labels of whole answers (level “question”) of {', '.join(sorted(DEFAULT_THRESHOLDS))}."
        )
    if metric not in DEFAULT_THRESHOLDS:
        return (
            f"No threshold to apply: the pass rule does not threshold {metric} (it thresholds "
            f"{', '.join(sorted(DEFAULT_THRESHOLDS))}), so there is nothing to set for it."
        )
    return (
        "No threshold to apply yet: people passed all or none of these answers, so no threshold separates "
        "them. Label answers of both kinds and upload them again."
    )


@require_POST
@tenant_page(Perm.CURATE)
def calibration_threshold(request: HttpRequest, tenant: Tenant, slug: str) -> HttpResponse:
    """Apply the best threshold of a judge's metric to the collection, or reset it (`reset`)."""
    collection = collection_for(tenant, slug)
    metric, judge_key = request.POST.get("metric", ""), request.POST.get("judge", calibration.HEURISTIC)
    actor = actor_user(request.user)
    try:
        if request.POST.get("reset"):
            calibration.threshold_reset(
                collection=collection, metric=metric, judge_key=judge_key, actor=actor
            )
            messages.success(request, f"{metric} ({judge_key}) is back to its default threshold.")
        else:
            found = calibration.threshold_apply(
                collection=collection, metric=metric, judge_key=judge_key, actor=actor
            )
            messages.success(
                request,
                f"{metric} judged by {judge_key} now passes at {found.value:.3g} in {collection.slug}'s answer "
                "evaluations (recorded in each run's config).",
            )
    except EvalsiteError as exc:
        messages.error(request, exc.message)
    return redirect("dashboard:collection-calibration", slug=collection.slug)
