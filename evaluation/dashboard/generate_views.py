"""Generating questions for a collection (the form, then the job's page) and the review queue of generated
entries: accept, edit or reject each beside its source page."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evalsite.audit.services import actor_user
from evalsite.errors import EvalsiteError, NotFound
from evalsite.jobs.models import Job
from evalsite.tenancy.models import Tenant
from evalsite.tenancy.roles import Perm
from evaluation.dashboard.common_views import (
    collection_for,
    paginate,
    query_without_page,
    safe_next,
    tenant_page,
)
from evaluation.dashboard.forms import (
    GenerateForm,
)
from evaluation.dashboard.golden_reads import (
    GenerateBackend,
    collection_entry,
    generate_backend_info,
    review_pending_count,
    review_queue,
    review_rows,
)
from goldenset import selectors as golden_selectors
from goldenset import services
from goldenset.models import Collection, GoldenJobKind
from goldenset.services.generate import generate_job_create

REVIEW_PER_PAGE = 20  # each with its page's text


def generate_form(data, backend: GenerateBackend, initial: dict[str, Any] | None = None) -> GenerateForm:
    return GenerateForm(
        data,
        initial=initial,
        max_count=settings.EVALSITE_GENERATE_MAX_COUNT,
        model_placeholder=backend.placeholder,
    )


@require_http_methods(["GET", "POST"])
@tenant_page(Perm.CURATE)
def golden_generate(request: HttpRequest, tenant: Tenant, slug: str) -> HttpResponse:
    """Generate questions from the collection's pages: a Generate job, whose page follows it and reports what
    the quality gate kept. GET shows the form (prefilled from the query, e.g. to run a seed again)."""
    collection = collection_for(tenant, slug)
    backend = generate_backend_info()
    if request.method == "POST":
        form = generate_form(request.POST, backend)
        if form.is_valid():
            data = form.cleaned_data
            try:
                job = generate_job_create(
                    tenant=tenant,
                    collection=collection,
                    count=data["count"],
                    model=data["model"].strip() or None,
                    seed=data["seed"],
                    actor=actor_user(request.user),
                )
            except EvalsiteError as exc:
                form.add_service_error(exc.code, exc.message, exc.details.get("field"))
            else:
                return redirect("dashboard:job", job_id=job.pk)
    else:
        initial = {k: v for k, v in request.GET.items() if k in ("count", "model", "seed")}
        form = generate_form(None, backend, initial)
    return render(
        request,
        "dashboard/golden_generate.html",
        {
            "tenant": tenant,
            "collection": collection,
            "generate_form": form,
            "generate_backend": backend,
            "document_count": collection.documents.count(),
        },
        status=400 if form.is_bound and form.errors else 200,
    )


def _review_job(tenant: Tenant, collection: Collection, job_id: str | None) -> Job | None:
    """The Generate job `?job=` names: the tenant's, of this collection (else a 404)."""
    if not job_id:
        return None
    job = golden_selectors.job_get(tenant=tenant, job_id=job_id)
    if job.kind != GoldenJobKind.GENERATE or job.collection_id != collection.pk:
        raise NotFound("Job", job_id)
    return job


@require_GET
@tenant_page(Perm.VIEW)
def golden_review(request: HttpRequest, tenant: Tenant, slug: str) -> HttpResponse:
    """Generated entries nobody has reviewed yet, each with its page: accept, edit or reject them."""
    collection = collection_for(tenant, slug)
    job = _review_job(tenant, collection, request.GET.get("job"))
    page = paginate(request, review_queue(tenant=tenant, collection=collection, job=job), REVIEW_PER_PAGE)
    return render(
        request,
        "dashboard/golden_review.html",
        {
            "tenant": tenant,
            "collection": collection,
            "job": job,
            "page": page,
            "rows": review_rows(collection=collection, entries=list(page.object_list)),
            # Unfiltered, the queue is every pending entry: its paginator counted them already.
            "pending": page.paginator.count if job is None else review_pending_count(collection=collection),
            "query": query_without_page(request),
            "here": request.get_full_path(),
        },
    )


@require_POST
@tenant_page(Perm.CURATE)
def golden_review_action(request: HttpRequest, tenant: Tenant, slug: str) -> HttpResponse:
    """Accept (mark reviewed) or reject (delete, after the same confirmation page as the golden set's delete)
    one entry of the review queue, audited; back to the queue."""
    collection = collection_for(tenant, slug)
    back = safe_next(request, reverse("dashboard:golden-review", args=[collection.slug]))
    entry = collection_entry(tenant, collection, request.POST.get("entry", ""))
    action = request.POST.get("action", "")
    question = entry.question[:80]
    if action == "accept":
        services.golden_entries_mark_reviewed(entries=[entry], reviewed=True, actor=actor_user(request.user))
        messages.success(request, f"Accepted “{question}”.")
    elif action == "reject":
        return render(
            request,
            "dashboard/golden_delete.html",
            {
                "tenant": tenant,
                "collection": collection,
                "entries": [entry],
                "rejects": int(services.is_rejection(entry)),
                "back": back,
                "verb": "Reject",
                "confirm_url": reverse("dashboard:golden-review-action", args=[collection.slug]),
                "confirm_action": "reject-confirmed",
            },
        )
    elif action == "reject-confirmed":
        services.golden_entries_delete(entries=[entry], actor=actor_user(request.user))
        messages.success(request, f"Rejected “{question}”: deleted from the golden set.")
    else:
        messages.error(request, "Unknown action.")
    return redirect(back)
