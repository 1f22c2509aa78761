"""A collection's grade scale (goldenset.vocabulary.grade_scales) in the dashboard: shown to whoever reads the
collection's pages, changed by a curator after a preview of how many stored grades the change converts
(goldenset.services.scales)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from evalsite.audit.services import actor_user
from evalsite.errors import EvalsiteError
from evalsite.tenancy.models import Tenant
from evalsite.tenancy.roles import Perm
from evaluation.dashboard.common_views import collection_for, tenant_page
from goldenset.services.scales import ScaleChange, collection_scale, scale_change, scale_change_preview
from goldenset.vocabulary.grade_scales import SCALES


@require_http_methods(["GET", "POST"])
@tenant_page(Perm.CURATE)
def collection_scale_page(request: HttpRequest, tenant: Tenant, slug: str) -> HttpResponse:
    """GET: the scale and its meanings; with ?grade_scale= another one, what changing to it converts. POST: the
    change, written only when the preview's count of changed grades still holds."""
    collection = collection_for(tenant, slug)
    if request.method == "POST":
        target = request.POST.get("grade_scale", "")
        try:
            previewed = scale_change_preview(collection=collection, grade_scale=target)
            if request.POST.get("grades", "") != str(previewed.grades):
                messages.error(
                    request, "The golden set's grades changed since the preview: nothing was converted."
                )
                return redirect(f"{request.path}?grade_scale={previewed.target}")
            done = scale_change(collection=collection, grade_scale=target, actor=actor_user(request.user))
        except EvalsiteError as exc:
            messages.error(request, f"The scale was not changed: {exc.message}")
            return redirect(request.path)
        messages.success(
            request,
            f"{collection.slug} grades on the {done.target} scale now: {done.grades} grades converted in "
            f"{done.entries} golden entries.",
        )
        return redirect(request.path)
    preview: ScaleChange | None = None
    wanted = request.GET.get("grade_scale", "")
    if wanted and wanted != collection.grade_scale:
        try:
            preview = scale_change_preview(collection=collection, grade_scale=wanted)
        except EvalsiteError as exc:
            messages.error(request, exc.message)
    context = {
        "tenant": tenant,
        "collection": collection,
        "scale": collection_scale(collection),
        "scales": list(SCALES.values()),
        "preview": preview,
    }
    return render(request, "dashboard/grade_scale.html", context)
