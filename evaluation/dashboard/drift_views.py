"""A collection's drift page: the golden entries whose expected documents were deleted, changed since the entry
was last reviewed, or whose validity ended (goldenset.services.drift), each with its reasons; a curator marks
one reviewed again from here, which makes it remember its documents as they are."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from evalsite.audit.services import actor_user
from evalsite.tenancy.models import Tenant
from evalsite.tenancy.roles import Perm
from evaluation.dashboard.common_views import collection_for, paginate, query_without_page, tenant_page
from goldenset import services
from goldenset.models import GoldenEntry
from goldenset.services.drift import drifted_entries

DRIFT_PER_PAGE = 50


@require_http_methods(["GET", "POST"])
@tenant_page(Perm.VIEW, post=Perm.CURATE)
def collection_drift(request: HttpRequest, tenant: Tenant, slug: str) -> HttpResponse:
    collection = collection_for(tenant, slug)
    if request.method == "POST":
        return _mark_reviewed(request, collection)
    page = paginate(request, drifted_entries(collection), DRIFT_PER_PAGE)
    return render(
        request,
        "dashboard/collection_drift.html",
        {
            "tenant": tenant,
            "collection": collection,
            "page": page,
            "rows": page.object_list,
            "query": query_without_page(request),
        },
    )


def _mark_reviewed(request: HttpRequest, collection) -> HttpResponse:
    """Mark one entry reviewed (again): goldenset's service, which refreshes the hashes it remembers."""
    back = reverse("dashboard:collection-drift", args=[collection.slug])
    try:
        entry_id = uuid.UUID(request.POST.get("entry", ""))
    except ValueError:
        messages.warning(request, "Choose an entry to mark reviewed.")
        return redirect(back)
    entries = list(
        GoldenEntry.objects.filter(collection=collection, pk=entry_id).select_related("collection")
    )
    if not entries:
        messages.warning(request, "That entry is no longer in this collection.")
        return redirect(back)
    services.golden_entries_mark_reviewed(entries=entries, reviewed=True, actor=actor_user(request.user))
    messages.success(
        request, f"Marked “{entries[0].question[:80]}” reviewed: it remembers its documents as they are now."
    )
    return redirect(back)
