"""The home page and a collection's pages: its golden set (filter, edit, add, review, delete, export, import) and
its documents and activity. Question generation and the review queue: generate_views."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import quote

from django.contrib import messages
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.text import slugify
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evalsite.audit.services import actor_user
from evalsite.errors import EvalsiteError
from evalsite.tenancy.models import Tenant
from evalsite.tenancy.roles import Perm
from evaluation.dashboard.common_views import (
    collection_for,
    paginate,
    query_without_page,
    safe_next,
    tenant_page,
    url_maker,
)
from evaluation.dashboard.forms import (
    DocumentSearchForm,
    GoldenEntryForm,
    GoldenFilterForm,
    GoldenImportForm,
    yes_no,
)
from evaluation.dashboard.generate_views import generate_form
from evaluation.dashboard.golden_reads import (
    audit_summary,
    audit_trail,
    collection_entry,
    generate_backend_info,
    golden_csv,
    golden_tags,
    home_collections,
)
from goldenset import exporters, importers, services
from goldenset import selectors as golden_selectors
from goldenset.formats import detect_format
from goldenset.models import Collection, GoldenEntry, Origin
from goldenset.services.uploads import upload_stage, upload_take

GOLDEN_PER_PAGE = 50
DOCUMENTS_PER_PAGE = 50
REVIEW_PER_PAGE = 20  # each with its page's text
RECENT_ACTIVITY = 10  # on the collection page; all of it on its activity page
ACTIVITY_PER_PAGE = 50


def _actor(request: HttpRequest) -> str:
    return actor_user(request.user)


# --- home --------------------------------------------------------------------------------------------------


@require_GET
@tenant_page(Perm.VIEW)
def home(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    summaries = home_collections(tenant=tenant)
    return render(request, "dashboard/home.html", {"tenant": tenant, "summaries": summaries})


# --- a collection: its golden set and documents ------------------------------------------------------------


def _golden_entries(request: HttpRequest, tenant: Tenant, collection: Collection):
    form = GoldenFilterForm(request.GET or None, tags=golden_tags(collection=collection))
    filters = form.cleaned_data if form.is_bound and form.is_valid() else {}
    entries = golden_selectors.golden_entries_list(
        tenant=tenant,
        collection=collection,
        tag=filters.get("tag") or None,
        origin=filters.get("origin") or None,
        reviewed=yes_no(filters.get("reviewed")),
        text=(filters.get("q") or "").strip() or None,
    )
    return form, entries, bool(filters and any(filters.values()))


@require_GET
@tenant_page(Perm.VIEW)
def collection_detail(request: HttpRequest, tenant: Tenant, slug: str) -> HttpResponse:
    collection = collection_for(tenant, slug)
    form, entries, filtered = _golden_entries(request, tenant, collection)
    page = paginate(request, entries, GOLDEN_PER_PAGE)
    counts = collection.golden_entries.aggregate(
        total=Count("pk"),
        # Before "reviewed": an aggregate's alias hides the field of that name from the filters after it.
        review_pending=Count("pk", filter=Q(origin=Origin.GENERATED, reviewed=False)),
        reviewed=Count("pk", filter=Q(reviewed=True)),
    )
    review_pending = counts.pop("review_pending")  # generated entries awaiting review
    entry_url = url_maker("dashboard:golden-entry", collection.slug)
    document_url = url_maker("dashboard:document", collection.slug)
    rows = [
        {
            "entry": e,
            "url": entry_url(e.pk),
            "documents": [(d, document_url(d)) for d in e.expected_document_ids[:5]],
            "expected_text": "\n".join(e.expected_document_ids),
            "tags_text": ", ".join(e.tags),
        }
        for e in page.object_list
    ]
    # One more than shown, in the same query: whether to link to the rest.
    activity = list(
        golden_selectors.audit_events_list(tenant=tenant, collection=collection)[: RECENT_ACTIVITY + 1]
    )
    changes = [{"event": e, "summary": e.summary()} for e in activity[:RECENT_ACTIVITY]]
    backend = generate_backend_info()
    return render(
        request,
        "dashboard/collection.html",
        {
            "tenant": tenant,
            "collection": collection,
            "form": form,
            "page": page,
            "rows": rows,
            "counts": counts,
            "document_count": collection.documents.count(),
            "filtered": filtered,
            "query": query_without_page(request),
            "changes": changes,
            "changes_more": len(activity) > RECENT_ACTIVITY,
            "here": request.get_full_path(),
            "here_quoted": quote(request.get_full_path(), safe="/"),  # as the urlencode filter
            "review_pending": review_pending,
            "generate_form": generate_form(None, backend),
            "generate_backend": backend,
        },
    )


@require_GET
@tenant_page(Perm.VIEW)
def golden_export(request: HttpRequest, tenant: Tenant, slug: str, fmt: str) -> HttpResponse:
    """The golden set (as filtered on the page) as CSV, or as an okfsmith golden.json."""
    collection = collection_for(tenant, slug)
    _, entries, _ = _golden_entries(request, tenant, collection)
    name = slugify(collection.slug) or "collection"
    if fmt == "json":
        response = HttpResponse(
            exporters.golden_entries_dump(entries), content_type="application/json; charset=utf-8"
        )
        response["Content-Disposition"] = f'attachment; filename="{name}-golden.json"'
    else:
        response = HttpResponse(golden_csv(entries), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{name}-golden.csv"'
    return response


def _entry_initial(entry: GoldenEntry) -> dict[str, Any]:
    return {name: getattr(entry, name) for name in GoldenEntryForm.FIELDS}


@require_http_methods(["GET", "POST"])
@tenant_page(Perm.VIEW, post=Perm.CURATE)
def golden_entry(request: HttpRequest, tenant: Tenant, slug: str, entry_id: str) -> HttpResponse:
    """One entry: its form (saved through the audited service) and its audit trail."""
    collection = collection_for(tenant, slug)
    entry = collection_entry(tenant, collection, entry_id)
    back = safe_next(request, reverse("dashboard:collection", args=[collection.slug]))
    if request.method == "POST":
        data = request.POST.copy()
        if data.get("mark_reviewed"):  # "Save and mark reviewed" (a reviewer's edit of an unreviewed entry)
            data["reviewed"] = "on"
        # The collection page's inline editor has no grades box: an edit from there keeps them (and a refusal
        # because of them shows them on this page, to fix).
        data.setdefault("grades", GoldenEntryForm.base_fields["grades"].prepare_value(entry.grades))
        form = GoldenEntryForm(data, initial=_entry_initial(entry))
        if form.is_valid():
            changes = {
                name: form.cleaned_data[name]
                for name in GoldenEntryForm.FIELDS
                if form.cleaned_data[name] != getattr(entry, name)
            }
            if not changes:
                messages.info(request, "Nothing changed.")
                return redirect(back)
            try:
                services.golden_entry_update(entry=entry, changes=changes, actor=_actor(request))
            except EvalsiteError as exc:
                form.add_service_error(exc.code, exc.message, exc.details.get("field"))
            else:
                messages.success(request, f"Saved “{entry.question[:80]}”.")
                return redirect(back)
    else:
        form = GoldenEntryForm(initial=_entry_initial(entry))
    trail = [{"event": e, "summary": audit_summary(e)} for e in audit_trail(tenant=tenant, entry_id=entry.pk)]
    return render(
        request,
        "dashboard/golden_entry.html",
        {
            "tenant": tenant,
            "collection": collection,
            "entry": entry,
            "form": form,
            "trail": trail,
            "back": back,
        },
        status=400 if form.is_bound and form.errors else 200,
    )


@require_http_methods(["GET", "POST"])
@tenant_page(Perm.CURATE)
def golden_new(request: HttpRequest, tenant: Tenant, slug: str) -> HttpResponse:
    """Add one entry by hand (origin Manual), validated and audited as every other writer's."""
    collection = collection_for(tenant, slug)
    back = reverse("dashboard:collection", args=[collection.slug])
    form = GoldenEntryForm(request.POST or None, initial={"answerable": True})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            created, _ = services.golden_entries_add(
                collection=collection,
                entries=[
                    services.EntryInput(
                        question=data["question"],
                        expected_document_ids=data["expected_document_ids"],
                        reference_answer=data["reference_answer"],
                        key=data["key"].strip(),
                        tags=data["tags"],
                        answerable=data["answerable"],
                        grades=data["grades"],
                    )
                ],
                actor=_actor(request),
                reviewed=data["reviewed"],  # "add and mark reviewed": one transaction, one audited create
            )
        except EvalsiteError as exc:
            form.add_service_error(exc.code, exc.message, exc.details.get("field"))
        else:
            entry = created[0]
            messages.success(request, f"Added “{entry.question[:80]}”.")
            return redirect(back)
    return render(
        request,
        "dashboard/golden_entry.html",
        {"tenant": tenant, "collection": collection, "entry": None, "form": form, "trail": [], "back": back},
        status=400 if form.is_bound and form.errors else 200,
    )


@require_POST
@tenant_page(Perm.CURATE)
def golden_action(request: HttpRequest, tenant: Tenant, slug: str) -> HttpResponse:
    """Mark selected entries reviewed or unreviewed, or delete them (after a confirmation page)."""
    collection = collection_for(tenant, slug)
    back = safe_next(request, reverse("dashboard:collection", args=[collection.slug]))
    # A row's own button sends "single" = "<entry id>:<action>"; the toolbar's send "action" and the ticked ids.
    single = request.POST.get("single", "")
    if single:
        value, _, action = single.partition(":")
        values = [value]
    else:
        action = request.POST.get("action", "")
        values = request.POST.getlist("entry")
    ids = []
    for value in values:
        try:
            ids.append(uuid.UUID(value))
        except ValueError:
            continue
    entries = golden_selectors.golden_entries_list(tenant=tenant, collection=collection).filter(pk__in=ids)
    if not ids:
        messages.warning(request, "Select one or more entries first.")
        return redirect(back)
    actor = _actor(request)
    if action in ("reviewed", "unreviewed"):
        count = services.golden_entries_mark_reviewed(
            entries=entries, reviewed=action == "reviewed", actor=actor
        )
        messages.success(request, f"Marked {count} {'entry' if count == 1 else 'entries'} {action}.")
        return redirect(back)
    if action == "delete":
        listed = list(entries)
        return render(
            request,
            "dashboard/golden_delete.html",
            {
                "tenant": tenant,
                "collection": collection,
                "entries": listed,
                "rejects": sum(map(services.is_rejection, listed)),
                "back": back,
            },
        )
    if action == "delete-confirmed":
        count = services.golden_entries_delete(entries=entries, actor=actor)
        messages.success(request, f"Deleted {count} {'entry' if count == 1 else 'entries'}.")
        return redirect(back)
    messages.error(request, "Unknown action.")
    return redirect(back)


@require_GET
@tenant_page(Perm.VIEW)
def documents(request: HttpRequest, tenant: Tenant, slug: str) -> HttpResponse:
    collection = collection_for(tenant, slug)
    form = DocumentSearchForm(request.GET or None)
    text = form.cleaned_data.get("q", "").strip() if form.is_bound and form.is_valid() else ""
    page = paginate(
        request, golden_selectors.documents_list(collection=collection, text=text or None), DOCUMENTS_PER_PAGE
    )
    return render(
        request,
        "dashboard/documents.html",
        {
            "tenant": tenant,
            "collection": collection,
            "form": form,
            "page": page,
            "text": text,
            "query": query_without_page(request),
        },
    )


@require_GET
@tenant_page(Perm.VIEW)
def document_detail(request: HttpRequest, tenant: Tenant, slug: str, document_id: str) -> HttpResponse:
    collection = collection_for(tenant, slug)
    document = golden_selectors.document_get(collection=collection, document_id=document_id)
    return render(
        request,
        "dashboard/document.html",
        {
            "tenant": tenant,
            "collection": collection,
            "document": document,
            "pages": list(document.pages.order_by("number")),
        },
    )


@require_GET
@tenant_page(Perm.VIEW)
def collection_activity(request: HttpRequest, tenant: Tenant, slug: str) -> HttpResponse:
    """The collection's audit trail, newest first: every write to it, its documents and its golden set."""
    collection = collection_for(tenant, slug)
    page = paginate(
        request, golden_selectors.audit_events_list(tenant=tenant, collection=collection), ACTIVITY_PER_PAGE
    )
    return render(
        request,
        "dashboard/collection_activity.html",
        {
            "tenant": tenant,
            "collection": collection,
            "page": page,
            "changes": [{"event": e, "summary": e.summary()} for e in page.object_list],
            "query": query_without_page(request),
        },
    )


# --- importing a golden-set file: preview, then all or nothing ------------------------------------------------

_UPLOADS_SESSION = "golden_uploads"  # the tokens of the files this session previewed


@require_http_methods(["GET", "POST"])
@tenant_page(Perm.CURATE)
def golden_import(request: HttpRequest, tenant: Tenant, slug: str) -> HttpResponse:
    """Upload a golden-set file in any format: the preview parses it and counts what would be created, updated
    and left unchanged (a dry run: nothing written), or names the bad line; Import then loads it whole."""
    collection = collection_for(tenant, slug)
    back = reverse("dashboard:collection", args=[collection.slug])
    uploads: list[str] = list(request.session.get(_UPLOADS_SESSION, []))
    token = request.POST.get("token", "")
    if request.method == "POST" and token:  # the import of a previewed file
        staged = None
        if token in uploads:  # only this session's previews
            uploads.remove(token)
            request.session[_UPLOADS_SESSION] = uploads
            staged = upload_take(collection=collection, token=token)
        if staged is None:
            messages.error(request, "That preview has expired: upload the file again.")
            return redirect("dashboard:golden-import", slug=collection.slug)
        try:
            result = importers.golden_import(
                collection=collection,
                fmt=staged.options["format"],
                data=bytes(staged.data),
                qrels=None if staged.qrels is None else bytes(staged.qrels),
                create_documents=staged.options["create_documents"],
                actor=_actor(request),
            )
        except EvalsiteError as exc:  # the collection changed since the preview (a document deleted, ...)
            messages.error(request, f"Nothing was imported: {exc.message}")
            return redirect("dashboard:golden-import", slug=collection.slug)
        messages.success(
            request,
            f"Imported {staged.name}: {result['created']} created, {result['updated']} updated, "
            f"{result['unchanged']} unchanged.",
        )
        return redirect(back)
    form = GoldenImportForm(request.POST or None, request.FILES or None)
    preview = None
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        data = upload.read()
        qrels = form.cleaned_data.get("qrels")
        qrels_data = qrels.read() if qrels else None
        fmt = form.cleaned_data["format"] or detect_format(upload.name or "", data)
        try:
            preview = importers.golden_import(
                collection=collection,
                fmt=fmt,
                data=data,
                qrels=qrels_data,
                create_documents=form.cleaned_data["create_documents"],
                dry_run=True,
                actor=_actor(request),
            )
        except EvalsiteError as exc:
            errors = [item["message"] for item in exc.details.get("errors", [])]
            if errors:  # every bad line or record, one by one
                for message in errors:
                    form.add_service_error(exc.code, message, None)
            else:
                form.add_service_error(exc.code, exc.message, None)
        else:
            token = upload_stage(
                collection=collection,
                name=upload.name or "",
                data=data,
                qrels=qrels_data,
                options={"format": fmt, "create_documents": form.cleaned_data["create_documents"]},
            )
            request.session[_UPLOADS_SESSION] = [*uploads, token][-20:]
            preview = {**preview, "token": token, "name": upload.name}
    return render(
        request,
        "dashboard/golden_import.html",
        {"tenant": tenant, "collection": collection, "form": form, "preview": preview, "back": back},
        status=400 if form.is_bound and form.errors else 200,
    )
